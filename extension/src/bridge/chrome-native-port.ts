// NativePort over chrome.runtime.connectNative.
import type { NativePort } from "./native-port.js";

export function connectChromeNative(hostName: string): NativePort {
  const port = chrome.runtime.connectNative(hostName);
  return {
    postMessage: (message) => port.postMessage(message),
    onMessage: (listener) => port.onMessage.addListener((message: unknown) => listener(message)),
    onDisconnect: (listener) =>
      port.onDisconnect.addListener(() => listener(chrome.runtime.lastError?.message ?? undefined)),
    disconnect: () => port.disconnect(),
  };
}
