// RouterPorts over the native port: proxy_open → proxy_ready (or an error naming the context), proxy_close. The
// helper keeps a bounded number of listeners: opening one more closes the oldest, told by an error naming that
// context when nothing waits for it (onClosed).
import type { HelperConnection } from "../bridge/helper-connection.js";
import type { Page, ToExtension } from "../generated/protocol.js";
import type { ContextPorts, RouterPorts } from "./proxy-router.js";

export class HelperProxyPorts implements RouterPorts {
  private readonly waiting = new Map<string, (ports: ContextPorts | null) => void>();
  private readonly closedListeners: ((contextId: string) => void)[] = [];

  constructor(private readonly connection: HelperConnection) {
    connection.onMessage((m) => this.onMessage(m));
    connection.onLost(() => {
      for (const resolve of this.waiting.values()) resolve(null);
      this.waiting.clear();
    });
  }

  open(contextId: string, page: Page): Promise<ContextPorts | null> {
    return new Promise((resolve) => {
      this.waiting.get(contextId)?.(null);
      this.waiting.set(contextId, resolve);
      if (!this.connection.send({ type: "proxy_open", context_id: contextId, page })) this.settle(contextId, null);
    });
  }

  close(contextId: string): void {
    this.connection.send({ type: "proxy_close", context_id: contextId });
  }

  /** The helper closed a context's listener of its own accord (the oldest of too many): its port is not the
   * context's any more (and may become another context's). */
  onClosed(listener: (contextId: string) => void): void {
    this.closedListeners.push(listener);
  }

  private onMessage(m: ToExtension): void {
    if (m.type === "proxy_ready") this.settle(m.context_id, { port: m.port, splitPort: m.split_port ?? null });
    else if (m.type === "error" && m.id !== undefined && this.waiting.has(m.id)) this.settle(m.id, null);
    else if (m.type === "error" && m.id !== undefined && m.code === "cancelled") for (const l of this.closedListeners) l(m.id);
  }

  private settle(contextId: string, ports: ContextPorts | null): void {
    const resolve = this.waiting.get(contextId);
    this.waiting.delete(contextId);
    resolve?.(ports);
  }
}
