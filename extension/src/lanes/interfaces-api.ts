// The options page asks the background for the helper's interfaces (lanes) and sets one interface's policy; the
// background passes it on to the helper (the same in Chromium and Firefox).
import type { HelperClient } from "../bridge/helper-client.js";
import type { HelperState } from "../bridge/helper-state.js";
import type { InterfacesState } from "../generated/protocol.js";
import type { PolicyChange } from "./policy-form.js";

export type InterfacesRequest = { type: "lanefetch/interfaces" } | { type: "lanefetch/interfaces"; name: string; policy: PolicyChange };

export interface InterfacesReply {
  /** The helper's answer, or null when it could not be asked (then `helper` says why). */
  state: InterfacesState | null;
  helper: HelperState;
}

export function isInterfacesRequest(message: unknown): message is InterfacesRequest {
  if (message === null || typeof message !== "object") return false;
  const m = message as Record<string, unknown>;
  if (m.type !== "lanefetch/interfaces") return false;
  return m.name === undefined || (typeof m.name === "string" && typeof m.policy === "object" && m.policy !== null);
}

/** Answers an interfaces request (true: the answer comes asynchronously); false when the message is another. */
export function answerInterfacesRequest(message: unknown, client: HelperClient, helper: () => HelperState, sendResponse: (reply: InterfacesReply) => void): boolean {
  if (!isInterfacesRequest(message)) return false;
  const command = "name" in message ? { action: "set" as const, name: message.name, policy: message.policy } : { action: "list" as const };
  void client.interfaces(command).then((state) => sendResponse({ state, helper: helper() }));
  return true;
}
