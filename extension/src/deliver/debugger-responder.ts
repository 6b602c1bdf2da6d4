// FetchResponder over chrome.debugger.sendCommand for one debuggee (a tab or one of its child sessions).
import type { Protocol } from "devtools-protocol";
import { isGoneError, type FetchResponder } from "./fetch-responder.js";

export function debuggerResponder(target: chrome.debugger.DebuggerSession): FetchResponder {
  const pass = async (interceptionId: string): Promise<void> => {
    try {
      await chrome.debugger.sendCommand(target, "Fetch.continueRequest", { requestId: interceptionId });
    } catch (e) {
      if (!isGoneError(e)) console.warn("lanefetch: continueRequest failed", e);
    }
  };
  return {
    pass,
    async fulfill(params: Protocol.Fetch.FulfillRequestRequest): Promise<boolean> {
      try {
        await chrome.debugger.sendCommand(target, "Fetch.fulfillRequest", params);
        return true;
      } catch (e) {
        if (isGoneError(e)) return false;
        console.warn("lanefetch: fulfillRequest failed, continuing instead", e);
        await pass(params.requestId);
        return false;
      }
    },
  };
}
