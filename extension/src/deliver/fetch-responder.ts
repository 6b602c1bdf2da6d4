// How a held request is answered: fulfilled with the helper's response, or continued (the browser fetches it).
import type { Protocol } from "devtools-protocol";

export interface FetchResponder {
  /** Resolves false when the browser rejected the fulfil (the request was then continued if still held). */
  fulfill(params: Protocol.Fetch.FulfillRequestRequest): Promise<boolean>;
  pass(interceptionId: string): Promise<void>;
}

/** After navigation or cancellation the held request is gone: answering it fails with this, which is normal. */
export function isGoneError(error: unknown): boolean {
  return /Invalid InterceptionId|No tab with given id|Debugger is not attached|Detached while handling/i.test(
    String(error instanceof Error ? error.message : error),
  );
}
