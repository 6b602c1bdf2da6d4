// What the extension knows about the helper, as shown in the popup.
export type HelperState =
  | { status: "idle" }
  | { status: "connecting" }
  /** systemProxy: where the helper found a system proxy set (its hello's system_proxy; proxy-policy.ts); wpad: the
   * WPAD server it found (hello's wpad). */
  | { status: "connected"; version: string; capabilities: string[]; systemProxy?: string; wpad?: string }
  | { status: "not_installed"; message: string }
  | { status: "incompatible"; message: string }
  | { status: "disconnected"; message: string };

export const INSTALL_COMMAND = "lanefetch install";

export function isNotInstalledError(error: string | undefined): boolean {
  return error !== undefined && /not found|forbidden|Access to the specified native messaging host|No such native application/i.test(error);
}
