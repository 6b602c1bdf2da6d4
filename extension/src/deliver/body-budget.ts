// How many body bytes the extension holds at once, across every request the helper is answering (Chromium: a body is
// held whole until Fetch.fulfillRequest takes it, and the fulfil's base64 text is held until the browser took it).
//
// Theory of operation: each request holds a share of one total (64 MiB). Its share is what it is known to need: a
// response whose head announces the length of its body (Content-Length of a body the helper passes on as the server
// coded it) takes that length at once, so later requests see the room as gone before the bytes come; a body of
// unknown length (chunked, or decoded by the helper) takes its bytes as they come. A request whose share would take
// the total above the limit is not taken from this point: the caller gives it to the browser (pass reason
// `memory_budget`), which fetches it itself; no share already taken is ever cut to make room, so nothing already
// taken is lost. The request is still paused at its request stage (Fetch.enable asks for the Request stage only) when
// that happens, head or body come: Fetch.continueRequest is accepted then and the browser sends it as if lanefetch had
// never held it (only GET and HEAD are taken, which may be asked again). Before a request goes to the helper its
// length is unknown: it is taken only while some room is left (`roomForNew`), so the helper is not asked for bodies
// that could only be thrown away. A share is released when its request is answered (fulfil resolved, passed, dropped).
// Pure: no timers, no I/O.

export const DEFAULT_BODY_BUDGET_BYTES = 64 * 1024 * 1024;
/** Free room below which a request of unknown size is not sent to the helper (most subresources are far smaller). */
export const DEFAULT_NEW_REQUEST_ROOM_BYTES = 1024 * 1024;

export class BodyBudget {
  private readonly shares = new Map<string, number>();
  private total = 0;

  constructor(
    readonly limitBytes: number = DEFAULT_BODY_BUDGET_BYTES,
    private readonly newRequestRoomBytes: number = Math.min(DEFAULT_NEW_REQUEST_ROOM_BYTES, limitBytes),
  ) {}

  /** Bytes held across every request. */
  get usedBytes(): number {
    return this.total;
  }

  /** Requests holding a share. */
  get holders(): number {
    return this.shares.size;
  }

  /** Whether a request whose size is not known yet may be sent to the helper. */
  roomForNew(): boolean {
    return this.limitBytes - this.total >= this.newRequestRoomBytes;
  }

  /** `id` needs `bytes` in all (its share only grows: a body already announced needs no more as it comes). False, and
   * nothing changed, if that would take the total above the limit. */
  need(id: string, bytes: number): boolean {
    if (!Number.isFinite(bytes) || bytes < 0) return false;
    const share = this.shares.get(id) ?? 0;
    if (bytes <= share) return true;
    if (this.total - share + bytes > this.limitBytes) return false;
    this.total += bytes - share;
    this.shares.set(id, bytes);
    return true;
  }

  /** `id` was answered: its share is free again. Idempotent. */
  release(id: string): void {
    const share = this.shares.get(id);
    if (share === undefined) return;
    this.total -= share;
    this.shares.delete(id);
  }
}
