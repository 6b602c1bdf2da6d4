// What the debugger session of an accelerated tab listens to. A session with CDP Fetch enabled makes Chromium hand
// every request of the page through the interception path, and Network.enable sends ~6 events per request to this
// worker; on a fast link both cost more than lanefetch can save (measured in `npm run bench --
// chromium-debugger-cost`: on `lan` Fetch or Network each make a page up to ~1.5× slower; an idle session costs
// nothing measurable). So while the tab's top-level host is known fast (step-aside.ts), the tab stays attached (no
// flicker of the debugging bar) but "browser": Fetch and Network off at once, and each page's requests are listed
// from the page's own Resource Timing once it loaded (resource-timing.ts). A navigation to a host not known fast
// turns both back on before the new page asks for its subresources. Pure: the caller runs the commands.

import { hostOf } from "./origin-latency.js";

/** "list": read the loaded page's Resource Timing into the tab's records. */
export type TabCommand = "fetch_on" | "fetch_off" | "network_on" | "network_off" | "list";

interface TabState {
  /** The host of the top-level page the tab shows or navigates to (a round trip belongs to a host, not a port). */
  host: string;
  /** The browser fetches the tab's requests itself: Fetch and Network are off (on otherwise). */
  browser: boolean;
}


export class TabModes {
  private readonly tabs = new Map<number, TabState>();

  /** The session was attached with Fetch and Network on (DebuggerSessions.attach). */
  attached(tabId: number, url: string): void {
    this.tabs.set(tabId, { host: hostOf(url), browser: false });
  }

  forget(tabId: number): void {
    this.tabs.delete(tabId);
  }

  /** True while the browser fetches the tab's requests itself (nothing is paused). */
  isBrowser(tabId: number): boolean {
    return this.tabs.get(tabId)?.browser === true;
  }

  host(tabId: number): string | undefined {
    return this.tabs.get(tabId)?.host;
  }

  /** Attached tabs that show a page of `host`. */
  tabsOf(host: string): number[] {
    return [...this.tabs].filter(([, s]) => s.host === host).map(([id]) => id);
  }

  /** The tab starts a top-level navigation to `url`; `fast`: its host is known fast. */
  navigating(tabId: number, url: string, fast: boolean): TabCommand[] {
    const s = this.tabs.get(tabId);
    if (!s) return [];
    s.host = hostOf(url);
    return fast ? this.toBrowser(s) : this.toIntercepting(s);
  }

  /** The host the tab shows was just measured fast (its document's timing, the helper's preconnect). */
  originFast(tabId: number): TabCommand[] {
    const s = this.tabs.get(tabId);
    return s ? this.toBrowser(s) : [];
  }

  /** The tab's top-level page finished loading: a browser tab's page is listed from its Resource Timing. */
  loaded(tabId: number): TabCommand[] {
    return this.tabs.get(tabId)?.browser === true ? ["list"] : [];
  }

  private toBrowser(s: TabState): TabCommand[] {
    if (s.browser) return [];
    s.browser = true;
    return ["fetch_off", "network_off"];
  }

  private toIntercepting(s: TabState): TabCommand[] {
    if (!s.browser) return [];
    s.browser = false;
    // Fetch first: the new page's subresources must find it on (Network.enable took ~0.25 s under load).
    return ["fetch_on", "network_on"];
  }
}
