// A native port standing in for a helper that says hello and then keeps every batch to itself (fetching, never
// answering): for unit tests of what the extension does while requests are with the helper.
import type { NativePort } from "../../../extension/src/bridge/native-port.js";

export class SilentHelper implements NativePort {
  readonly sent: { type: string }[] = [];
  private listener: ((message: unknown) => void) | null = null;

  constructor(private readonly capabilities: string[] = ["pipelining", "decode"]) {}

  postMessage(message: unknown): void {
    const m = message as { type: string };
    this.sent.push(m);
    if (m.type === "hello") {
      queueMicrotask(() => this.listener?.({ type: "hello", protocol: 1, helper_version: "0.1.0", compatible: true, capabilities: this.capabilities }));
    }
  }
  onMessage(listener: (message: unknown) => void): void {
    this.listener = listener;
  }
  onDisconnect(): void {}
  disconnect(): void {}
}
