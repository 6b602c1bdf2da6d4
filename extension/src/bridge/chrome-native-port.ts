// NativePort over chrome.runtime.connectNative.
import type { NativePort } from "./native-port.js";

export function connectChromeNative(hostName: string): NativePort {
  const port = chrome.runtime.connectNative(hostName);
  return {
    postMessage: (message) => port.postMessage(message),
    onMessage: (listener) => port.onMessage.addListener((message: unknown) => listener(message)),
    onDisconnect: (listener) =>
      // Chromium puts the reason in runtime.lastError, Firefox on the port itself.
      port.onDisconnect.addListener((p) =>
        listener(chrome.runtime.lastError?.message ?? (p as { error?: { message?: string } }).error?.message ?? undefined)),
    disconnect: () => port.disconnect(),
  };
}
