// The parts of Firefox's `proxy` and `webRequest` APIs that proxy mode uses (not in @types/chrome).
import type { SendHeadersEvent } from "../intercept/browser-fields-probe.js";

export interface ProxyRequestDetails {
  requestId: string;
  url: string;
  method: string;
  type: string;
  tabId: number;
  incognito?: boolean;
  /** "firefox-default", "firefox-private", or a container's ("firefox-container-2"). */
  cookieStoreId?: string;
  documentUrl?: string;
  frameAncestors?: { url: string; frameId: number }[];
}

export type ProxyInfo =
  | { type: "direct" }
  | { type: "http"; host: string; port: number; failoverTimeout?: number; proxyAuthorizationHeader?: string };

export interface AuthRequiredDetails {
  requestId: string;
  isProxy: boolean;
  challenger?: { host: string; port: number };
}

export interface AuthAnswer {
  authCredentials?: { username: string; password: string };
  cancel?: boolean;
}

interface FirefoxBrowser {
  proxy: {
    onRequest: {
      addListener(
        listener: (details: ProxyRequestDetails) => ProxyInfo | ProxyInfo[] | Promise<ProxyInfo | ProxyInfo[]>,
        filter: { urls: string[] },
      ): void;
    };
    onError: { addListener(listener: (error: Error) => void): void };
  };
  webRequest: {
    onBeforeSendHeaders: SendHeadersEvent;
    onAuthRequired: {
      addListener(listener: (details: AuthRequiredDetails) => AuthAnswer, filter: { urls: string[] }, extra: string[]): void;
    };
  };
}

/** Firefox's `browser` global (only in the Firefox build). */
export function firefoxBrowser(): FirefoxBrowser {
  return (globalThis as unknown as { browser: FirefoxBrowser }).browser;
}
