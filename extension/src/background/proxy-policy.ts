// Never around the user's network policy: when the browser is set to use a proxy (fixed servers or a PAC script),
// the helper would fetch around it, so lanefetch stays off and the popup says why. The browsers' default setting,
// "system", follows the system's proxy settings: the helper, which connects directly and honours no proxy, says in
// its hello whether one is set where it runs (the environment it shares with the browser that started it, GNOME's or
// KDE's settings, macOS's or Windows'; native-host/lanefetch/bridge/system_proxy.py), and "system" with one set
// keeps lanefetch off just the same. Any system proxy counts, whatever hosts it excludes, and so does a system's
// automatic configuration: a PAC script (the helper cannot tell what it picks without fetching it), or auto-detection
// alone (WPAD) where the helper found a WPAD server (the host `wpad` resolves: Windows turns auto-detection on by
// default, and most networks have none). The browser's own auto-detection setting (Chromium "auto_detect", Firefox
// "autoDetect") blocks likewise only where a WPAD server is found: the extension tells the helper (auto_detect)
// while the browser is set so, and the helper then looks `wpad` up and says what it found (wpad). "direct" leaves
// lanefetch on.
//
// Until a helper has said (none has answered hello yet), nothing is known of the system's proxy and nothing is
// blocked: nothing can reach a helper before its hello either. What the helper said last stays known while it is
// away: its environment is the browser's, and the next hello says it again. The helper reads the system's settings
// again every 10 s (GNOME's, macOS's, Windows' change under a running browser) and says when they changed.

import type { HelperState } from "../bridge/helper-state.js";
import type { ToExtension, ToHost } from "../generated/protocol.js";

export const PROXY_NOTICE =
  "The browser is set to use a proxy: lanefetch stays off, because its helper would fetch around the proxy.";

/** The popup's words when the browser follows the system's proxy settings and the helper found a proxy there. */
export function systemProxyNotice(systemProxy: string): string {
  return `This system is set to use a proxy (${systemProxy}), which the browser follows: lanefetch stays off, because its helper would fetch around the proxy.`;
}

/** The popup's words when a WPAD server found is why: the system's auto-detection (`by` "system") or the browser's. */
export function wpadNotice(wpad: string, by: "system" | "browser"): string {
  const who = by === "system" ? "This system is set to detect a proxy automatically, which the browser follows" : "The browser is set to detect a proxy automatically";
  const found = `automatic proxy detection found a WPAD server at ${wpad}`; // as the README and doctor say it
  return `${who}, and ${found}: lanefetch stays off, because its helper would fetch around the proxy it may pick.`;
}

/** The browser's own proxy setting is automatic detection (WPAD): Chromium's `auto_detect`, Firefox's `autoDetect`. */
export function autoDetects(mode: string | undefined): boolean {
  return mode === "auto_detect" || mode === "autoDetect";
}

/** Firefox fires proxy.settings.onChange only for extensions' changes, not for a proxy the user sets in its settings
 * (a preference, as in about:config): the setting is read again this often. */
export const FIREFOX_PROXY_RECHECK_MS = 3000;

/** Whether the browser's own proxy setting (Chromium's `mode`, Firefox's `proxyType`) sends its requests through
 * a proxy the helper would fetch around; with `systemProxy` (the helper's hello), "system" does too, and with `wpad`
 * (a WPAD server the helper found), the browser's auto-detection. */
export function proxyBlocks(mode: string | undefined, systemProxy?: string, wpad?: string): boolean {
  if (mode === "system" && systemProxy !== undefined) return true;
  if (autoDetects(mode) && wpad !== undefined) return true;
  return mode === "fixed_servers" || mode === "pac_script" || mode === "manual" || mode === "autoConfig";
}

function modeOf(value: unknown): string | undefined {
  const v = value as { mode?: string; proxyType?: string } | undefined;
  return v?.mode ?? v?.proxyType;
}

/** The browser's proxy setting and the system's proxy the helper reported: whether lanefetch must stay off, and the
 * popup's words for why. `changed` is called (synchronously) each time `blocked` flips. */
export class ProxyPolicy {
  private mode: string | undefined = undefined;
  private system: string | undefined = undefined;
  private wpad: string | undefined = undefined;
  private send: ((message: ToHost) => boolean) | undefined = undefined;

  constructor(private readonly changed: (blocked: boolean) => void) {}

  get blocked(): boolean {
    return proxyBlocks(this.mode, this.system, this.wpad);
  }

  /** Null when nothing blocks lanefetch. */
  get notice(): string | null {
    if (!this.blocked) return null;
    if (this.mode === "system" && this.system !== undefined) {
      // The helper names a WPAD server alongside a system proxy only where auto-detection alone is that proxy
      return this.wpad !== undefined ? wpadNotice(this.wpad, "system") : systemProxyNotice(this.system);
    }
    return autoDetects(this.mode) && this.wpad !== undefined ? wpadNotice(this.wpad, "browser") : PROXY_NOTICE;
  }

  /** Follows what each helper says: in its hello, and (system_proxy) when the system's settings change while it
   * runs. The state listener runs as the hello is taken, before anything waiting for the helper goes on
   * (HelperConnection resolves ready() after it): `changed` can stop it in time. Tells each helper, after its hello
   * and at each change, whether the browser itself auto-detects (auto_detect): it then looks for a WPAD server. */
  follow(connection: {
    onStateChange(listener: (state: HelperState) => void): void;
    onMessage(listener: (message: ToExtension) => void): void;
    send(message: ToHost): boolean;
  }): void {
    this.send = (message) => connection.send(message);
    connection.onStateChange((state) => {
      if (state.status !== "connected") return;
      this.helperSaid(state.systemProxy, state.wpad);
      if (autoDetects(this.mode)) connection.send({ type: "auto_detect", on: true }); // a new helper assumes off
    });
    connection.onMessage((message) => {
      if (message.type === "system_proxy") this.helperSaid(message.system_proxy, message.wpad);
    });
  }

  /** The browser's setting, as read or announced. */
  browserMode(mode: string | undefined): void {
    const was = autoDetects(this.mode);
    this.set(() => (this.mode = mode));
    // Not connected: nothing sent; the next hello's listener tells it
    if (autoDetects(mode) !== was) this.send?.({ type: "auto_detect", on: autoDetects(mode) });
  }

  /** What a helper's hello said of the system's proxy (undefined: none set) and the WPAD server it found. */
  helperSaid(systemProxy: string | undefined, wpad?: string): void {
    this.set(() => {
      this.system = systemProxy;
      this.wpad = wpad;
    });
  }

  private set(change: () => void): void {
    const was = this.blocked;
    change();
    if (this.blocked !== was) this.changed(this.blocked);
  }
}

/** Watches chrome.proxy settings; calls `changed` with the browser's proxy mode, now and on every change (and, with
 * `recheckMs`, on every read of them that often: changes the browser does not announce). */
export function watchProxy(changed: (mode: string | undefined) => void, recheckMs?: number): Promise<void> {
  const read = async (): Promise<void> => {
    const setting = await chrome.proxy.settings.get({ incognito: false });
    changed(modeOf(setting.value));
  };
  chrome.proxy.settings.onChange.addListener((details) => {
    changed(modeOf(details.value));
  });
  if (recheckMs !== undefined) {
    setInterval(() => void read().catch((e: unknown) => console.warn("lanefetch: cannot read the proxy settings", e)), recheckMs);
  }
  return read();
}
