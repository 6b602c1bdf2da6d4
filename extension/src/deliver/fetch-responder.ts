// How a held request is answered: fulfilled with the helper's response, or continued (the browser fetches it).
import type { Protocol } from "devtools-protocol";

export interface FetchResponder {
  /** Resolves false when the browser rejected the fulfil (the request was then continued if still held). */
  fulfill(params: Protocol.Fetch.FulfillRequestRequest): Promise<boolean>;
  pass(interceptionId: string): Promise<void>;
}

/** After navigation or cancellation the held request is gone: answering it fails with this, which is normal. So is
 * the end of its session or of its interception: a child session (an iframe, a worker) that went away answers
 * "Session with given id not found.", and one whose Fetch domain was disabled meanwhile (Fetch.disable hands what it
 * held to the browser) "Fetch domain is not enabled". None of these is to be retried: nothing is left to answer. */
export function isGoneError(error: unknown): boolean {
  return /Invalid InterceptionId|No tab with given id|Debugger is not attached|Detached while handling|Session with given id not found|Fetch domain is not enabled/i.test(
    String(error instanceof Error ? error.message : error),
  );
}
