// Collects one response from the helper (head, body pieces, end) and decides whether it can be fulfilled:
// identity body, within the size limit, and whole: a body that ended shorter than its Content-Length is refused
// (fulfilled, Chromium would take the truncated resource as complete), unless the response has no body whatever
// its fields say: the answer to HEAD (its Content-Length and Content-Encoding are the GET's), a 204, a 304 (its
// Content-Length may be the size of the representation it validates, RFC 9110 §8.6): such a response is neither
// held to the size limit nor refused for a coding, there being no body to decode.
//
// The body's pieces are joined as they come (Base64Joiner: the whole body's base64 is never decoded or encoded again)
// and held only until the request is answered: finish() hands the joined body over and keeps nothing of it, and
// release() forgets what a refused or abandoned response held, so no answered request keeps its bytes alive
// (heldBytes says what is still held).
import type { Head } from "../generated/protocol.js";
import type { PassReason } from "../intercept/pass-reason.js";
import { headerValue } from "../intercept/paused-request.js";
import { Base64Joiner, base64ByteLength, isBase64 } from "./base64-concat.js";
import { passedThrough } from "./fulfill-params.js";

/** One fulfill of 10 MB costs ~0.4 s in Chromium (no streaming fulfill): larger bodies go to the browser. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

export type Assembled =
  | { kind: "complete"; head: Head; bodyBase64: string; bodyBytes: number }
  | { kind: "refused"; reason: PassReason; detail: string };

export class ResponseAssembler {
  private head: Head | null = null;
  private readonly body = new Base64Joiner();
  /** Body bytes received (kept after the pieces are let go: the delivery's record says how large it was). */
  private bytes = 0;
  private pieces = 0;
  /** The body's length as the head announced it (Content-Length of a body delivered as the server coded it). */
  private announced: number | null = null;
  private refusal: Assembled | null = null;
  private bodiless = false;

  /** `method`: the request's (the answer to HEAD has no body, its Content-Length is the GET's). */
  constructor(private readonly maxBodyBytes: number = DEFAULT_MAX_BODY_BYTES, private readonly method = "GET") {}

  get started(): boolean {
    return this.head !== null;
  }

  get bodyBytes(): number {
    return this.bytes;
  }

  /** Body bytes still held (0 once the response was handed over, refused or released). */
  get heldBytes(): number {
    return this.body.bytes;
  }

  /** The body's length as announced by a head, 0 for a response without body; null if unknown (yet). */
  get announcedBytes(): number | null {
    if (this.head === null) return null;
    return this.bodiless ? 0 : this.announced;
  }

  /** Returns a refusal when the response cannot be fulfilled (the caller cancels it at the helper). */
  addHead(head: Head): Assembled | null {
    if (this.refusal) return this.refusal;
    // One response per request (head, body*, end): another head, or one after body pieces, would mix two bodies.
    if (this.head !== null) return this.refuse("helper_error", "a second response head");
    if (this.pieces > 0) return this.refuse("helper_error", "body before the response head");
    this.head = head;
    this.bodiless = this.method.toUpperCase() === "HEAD" || head.status === 204 || head.status === 304;
    // Without a body the helper decodes nothing and leaves the field (fulfillParams drops it).
    if (this.bodiless) return null;
    // A Content-Encoding the helper left on a body it calls decoded names a coding Chromium does not undo: the body
    // is as Chromium shows it (passedThrough), its Content-Length the body's.
    const encoding = headerValue(head.headers, "content-encoding");
    const passed = passedThrough(head);
    if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity" && !passed) {
      return this.refuse("helper_error", `body still ${encoding}-encoded (the browser would not decode a fulfilled body)`);
    }
    const length = Number(headerValue(head.headers, "content-length") ?? NaN);
    if (Number.isFinite(length) && length > this.maxBodyBytes) {
      return this.refuse("too_large", `Content-Length ${length} above ${this.maxBodyBytes}`);
    }
    // A decoded body's length is not the field's (the helper then removes it).
    if (Number.isFinite(length) && length >= 0 && (!head.decoded || passed)) this.announced = length;
    return null;
  }

  addBody(data: string): Assembled | null {
    if (this.refusal) return this.refusal;
    if (!isBase64(data)) return this.refuse("helper_error", "a body piece that is not base64");
    this.pieces += 1;
    this.bytes += base64ByteLength(data);
    if (this.bytes > this.maxBodyBytes) return this.refuse("too_large", `body above ${this.maxBodyBytes} bytes`);
    if (this.announced !== null && this.bytes > this.announced) {
      return this.refuse("helper_error", `body longer than its Content-Length ${this.announced}`);
    }
    this.body.push(data);
    return null;
  }

  /** The response, whole; its body is handed over and no longer held here. */
  finish(): Assembled {
    if (this.refusal) return this.refusal;
    if (!this.head) return this.refuse("helper_error", "end without head");
    if (!this.bodiless && this.announced !== null && this.bytes < this.announced) {
      return this.refuse("helper_error", `body of ${this.bytes} bytes shorter than its Content-Length ${this.announced}`);
    }
    const bodyBase64 = this.body.join();
    this.body.clear();
    return { kind: "complete", head: this.head, bodyBase64, bodyBytes: this.bytes };
  }

  /** Forgets the body held (the request was answered another way); later pieces are refused, not held. */
  release(): void {
    this.body.clear();
    if (!this.refusal) this.refusal = { kind: "refused", reason: "helper_error", detail: "the request was already answered" };
  }

  private refuse(reason: PassReason, detail: string): Assembled {
    this.body.clear();
    this.refusal = { kind: "refused", reason, detail };
    return this.refusal;
  }
}
