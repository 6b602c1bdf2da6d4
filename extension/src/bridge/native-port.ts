// The native messaging port as the bridge sees it; one adapter per browser (and one over a child process in tests).
export interface NativePort {
  postMessage(message: unknown): void;
  onMessage(listener: (message: unknown) => void): void;
  /** `error` is the browser's reason (e.g. "Specified native messaging host not found."), if any. */
  onDisconnect(listener: (error: string | undefined) => void): void;
  disconnect(): void;
}

export type ConnectNative = () => NativePort;
