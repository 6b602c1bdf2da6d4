// Collects one response from the helper (head, body pieces, end) and decides whether it can be fulfilled:
// identity body, within the size limit, and whole: a body that ended shorter than its Content-Length is refused
// (fulfilled, Chromium would take the truncated resource as complete), unless the response has no body whatever
// the field says (the answer to HEAD, a 204, a 304; nor is a 204's or 304's field held to the size limit).
import type { Head } from "../generated/protocol.js";
import type { PassReason } from "../intercept/pass-reason.js";
import { headerValue } from "../intercept/paused-request.js";
import { base64ByteLength, concatBase64 } from "./base64-concat.js";

/** One fulfill of 10 MB costs ~0.4 s in Chromium (no streaming fulfill): larger bodies go to the browser. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

export type Assembled =
  | { kind: "complete"; head: Head; bodyBase64: string; bodyBytes: number }
  | { kind: "refused"; reason: PassReason; detail: string };

export class ResponseAssembler {
  private head: Head | null = null;
  private readonly pieces: string[] = [];
  private bytes = 0;
  /** The body's length as the head announced it (Content-Length of a body delivered as the server coded it). */
  private announced: number | null = null;
  private refusal: Assembled | null = null;

  /** `method`: the request's (the answer to HEAD has no body, its Content-Length is the GET's). */
  constructor(private readonly maxBodyBytes: number = DEFAULT_MAX_BODY_BYTES, private readonly method = "GET") {}

  get started(): boolean {
    return this.head !== null;
  }

  get bodyBytes(): number {
    return this.bytes;
  }

  /** Returns a refusal when the response cannot be fulfilled (the caller cancels it at the helper). */
  addHead(head: Head): Assembled | null {
    if (this.refusal) return this.refusal;
    // One response per request (head, body*, end): another head, or one after body pieces, would mix two bodies.
    if (this.head !== null) return this.refuse("helper_error", "a second response head");
    if (this.pieces.length > 0) return this.refuse("helper_error", "body before the response head");
    this.head = head;
    const encoding = headerValue(head.headers, "content-encoding");
    // A 204 or 304 has no body: the helper decodes nothing and leaves the field (fulfillParams drops it)
    const bodiless = head.status === 204 || head.status === 304;
    if (!bodiless && encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
      return this.refuse("helper_error", `body still ${encoding}-encoded (the browser would not decode a fulfilled body)`);
    }
    const length = Number(headerValue(head.headers, "content-length") ?? NaN);
    // A 304's field may give the size of the representation it validates (RFC 9110 §8.6): no body comes to hold.
    if (!bodiless && Number.isFinite(length) && length > this.maxBodyBytes) {
      return this.refuse("too_large", `Content-Length ${length} above ${this.maxBodyBytes}`);
    }
    // A decoded body's length is not the field's (the helper then removes it).
    if (Number.isFinite(length) && !head.decoded) this.announced = length;
    return null;
  }

  addBody(data: string): Assembled | null {
    if (this.refusal) return this.refusal;
    this.bytes += base64ByteLength(data);
    if (this.bytes > this.maxBodyBytes) {
      this.pieces.length = 0;
      return this.refuse("too_large", `body above ${this.maxBodyBytes} bytes`);
    }
    if (this.announced !== null && this.bytes > this.announced) {
      this.pieces.length = 0;
      return this.refuse("helper_error", `body longer than its Content-Length ${this.announced}`);
    }
    this.pieces.push(data);
    return null;
  }

  finish(): Assembled {
    if (this.refusal) return this.refusal;
    if (!this.head) return { kind: "refused", reason: "helper_error", detail: "end without head" };
    const bodiless = this.method.toUpperCase() === "HEAD" || this.head.status === 204 || this.head.status === 304;
    if (!bodiless && this.announced !== null && this.bytes < this.announced) {
      return this.refuse("helper_error", `body of ${this.bytes} bytes shorter than its Content-Length ${this.announced}`);
    }
    return { kind: "complete", head: this.head, bodyBase64: concatBase64(this.pieces), bodyBytes: this.bytes };
  }

  private refuse(reason: PassReason, detail: string): Assembled {
    this.refusal = { kind: "refused", reason, detail };
    return this.refusal;
  }
}
