// The native port to the helper: opened when first needed, hello exchanged, reopened after a crash; its absence
// is a state, never an exception.
import type { ProtocolVersion, ToExtension, ToHost } from "../generated/protocol.js";
import { asToExtension } from "./messages.js";
import type { ConnectNative, NativePort } from "./native-port.js";
import { INSTALL_COMMAND, isNotInstalledError, type HelperState } from "./helper-state.js";

// Typed by the schema's const: a protocol bump in shared/ fails tsc until this follows.
export const PROTOCOL_VERSION: ProtocolVersion = 1;

export interface ConnectionOptions {
  extensionVersion: string;
  browser: "chromium" | "firefox";
  helloTimeoutMs: number;
  /** After "not installed" or "incompatible", wait this long before trying again. */
  retryMissingMs: number;
  /** After a crash or failed start, wait this long before trying again. */
  retryCrashMs: number;
}

export const DEFAULT_CONNECTION: Omit<ConnectionOptions, "extensionVersion" | "browser"> = {
  // A Python process starting on a busy machine (the browser starting at the same time) can take seconds.
  helloTimeoutMs: 10000,
  retryMissingMs: 5000,
  retryCrashMs: 500,
};

export class HelperConnection {
  private current: HelperState = { status: "idle" };
  private port: NativePort | null = null;
  private pending: Promise<boolean> | null = null;
  /** While the hello is awaited: ends that wait (close()), or ready() would never resolve and never try again. */
  private abandonOpen: (() => void) | null = null;
  private failedAt = -Infinity;
  private secret: string | null = null;
  private readonly messageListeners: ((message: ToExtension) => void)[] = [];
  private readonly lostListeners: (() => void)[] = [];
  private readonly stateListeners: ((state: HelperState) => void)[] = [];

  constructor(
    private readonly connectNative: ConnectNative,
    private readonly options: ConnectionOptions,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get state(): HelperState {
    return this.current;
  }

  /** Proxy mode (Firefox): the session secret the connected helper's proxy listeners require, if it offers them. */
  get proxySecret(): string | null {
    return this.current.status === "connected" ? this.secret : null;
  }

  onMessage(listener: (message: ToExtension) => void): void {
    this.messageListeners.push(listener);
  }

  /** The port closed after hello succeeded: every request in flight is lost. */
  onLost(listener: () => void): void {
    this.lostListeners.push(listener);
  }

  onStateChange(listener: (state: HelperState) => void): void {
    this.stateListeners.push(listener);
  }

  /** Resolves true once the helper answered hello compatibly; false (quickly) when it cannot be used now. */
  ready(): Promise<boolean> {
    if (this.current.status === "connected") return Promise.resolve(true);
    if (this.pending) return this.pending;
    const wait = this.current.status === "not_installed" || this.current.status === "incompatible"
      ? this.options.retryMissingMs
      : this.options.retryCrashMs;
    if (this.now() - this.failedAt < wait) return Promise.resolve(false);
    this.pending = this.open().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  send(message: ToHost): boolean {
    if (this.current.status !== "connected" || !this.port) return false;
    try {
      this.port.postMessage(message);
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    const port = this.port;
    this.port = null;
    port?.disconnect();
    this.setState({ status: "idle" });
    this.abandonOpen?.();
    for (const l of this.lostListeners) l();
  }

  private setState(state: HelperState): void {
    this.current = state;
    for (const l of this.stateListeners) l(state);
  }

  private open(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let settled = false;
      // Declared before settle can run (connectNative may throw before the hello timer is set).
      let timer: ReturnType<typeof setTimeout> | undefined = undefined;
      // `failed`: the helper could not be used (the retry waits); not so when close() abandons the attempt.
      const settle = (ok: boolean, failed = !ok): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (this.abandonOpen === abandon) this.abandonOpen = null;
        if (failed) this.failedAt = this.now();
        resolve(ok);
      };
      const abandon = (): void => settle(false, false);
      this.abandonOpen = abandon;
      this.setState({ status: "connecting" });
      let port: NativePort;
      try {
        port = this.connectNative();
      } catch (e) {
        this.setState({ status: "not_installed", message: `${String(e)}; run \`${INSTALL_COMMAND}\`` });
        settle(false);
        return;
      }
      this.port = port;
      timer = setTimeout(() => {
        if (this.port !== port) return;
        this.port = null;
        port.disconnect();
        this.setState({ status: "disconnected", message: "the helper did not answer hello in time" });
        settle(false);
      }, this.options.helloTimeoutMs);

      port.onMessage((raw) => {
        if (this.port !== port) return;
        const message = asToExtension(raw);
        if (!message) return;
        if (this.current.status === "connecting") {
          if (message.type !== "hello") return;
          // Typed by the schema as ours; a helper of another protocol says otherwise, whatever its `compatible`.
          const protocol: number = message.protocol;
          if (!message.compatible || protocol !== PROTOCOL_VERSION) {
            this.port = null;
            port.disconnect();
            this.setState({
              status: "incompatible",
              message: protocol !== PROTOCOL_VERSION
                ? `helper ${message.helper_version} speaks protocol ${protocol}; this extension speaks protocol ${PROTOCOL_VERSION}`
                : message.message ?? `helper ${message.helper_version} speaks protocol ${protocol}`,
            });
            settle(false);
            return;
          }
          this.secret = message.proxy_secret ?? null;
          this.setState({
            status: "connected", version: message.helper_version, capabilities: [...message.capabilities],
            ...(message.system_proxy !== undefined ? { systemProxy: message.system_proxy } : {}),
            ...(message.wpad !== undefined ? { wpad: message.wpad } : {}),
          });
          settle(true);
          return;
        }
        for (const l of this.messageListeners) l(message);
      });

      port.onDisconnect((error) => {
        if (this.port !== port) return;
        this.port = null;
        const wasConnected = this.current.status === "connected";
        if (isNotInstalledError(error)) {
          this.setState({ status: "not_installed", message: `${error ?? "helper not found"}; run \`${INSTALL_COMMAND}\`` });
        } else {
          this.setState({ status: "disconnected", message: error ?? "the helper exited" });
        }
        if (wasConnected) this.failedAt = this.now();
        settle(false);
        if (wasConnected) for (const l of this.lostListeners) l();
      });

      try {
        port.postMessage({
          type: "hello",
          protocol: PROTOCOL_VERSION,
          extension_version: this.options.extensionVersion,
          browser: this.options.browser,
        } satisfies ToHost);
      } catch (e) {
        this.port = null;
        this.setState({ status: "disconnected", message: String(e) });
        settle(false);
      }
    });
  }
}
