// One request the helper took: collects its response and answers the browser exactly once — fulfilled when the
// response is complete and acceptable, otherwise continued (the browser fetches it), so nothing is lost or stuck.
// Its body counts against the extension's body budget (body-budget.ts) while it is held: a response that would take
// the budget above its limit is continued (`memory_budget`). Once the request is answered, whichever way, nothing of
// its body is held here any more (the assembler lets it go: the helper client keeps an answered request's sink until
// its timing comes, and the batch's closures keep it too) and its share of the budget is free again (a fulfilled
// body's once the browser took the fulfil).
import type { Error as HelperError, Head, Timing } from "../generated/protocol.js";
import type { RequestSink } from "../bridge/helper-client.js";
import type { PassReason } from "../intercept/pass-reason.js";
import { headerValue, type PausedRequest } from "../intercept/paused-request.js";
import { BodyBudget } from "./body-budget.js";
import { fulfillParams } from "./fulfill-params.js";
import type { FetchResponder } from "./fetch-responder.js";
import { DEFAULT_MAX_BODY_BYTES, ResponseAssembler, type Assembled } from "./response-assembler.js";

export interface DeliveryLimits {
  /** No head from the helper this long after sending: continue instead. */
  headTimeoutMs: number;
  /** No body piece for this long after the previous one: continue instead. */
  stallTimeoutMs: number;
  maxBodyBytes: number;
}

export const DEFAULT_LIMITS: DeliveryLimits = { headTimeoutMs: 20000, stallTimeoutMs: 15000, maxBodyBytes: DEFAULT_MAX_BODY_BYTES };

export type DeliveryResult =
  | { outcome: "fulfilled"; status: number; bodyBytes: number }
  | { outcome: "passed"; reason: PassReason; detail: string };

export interface DeliveryHooks {
  /** Called once, when the browser has been answered. */
  done(result: DeliveryResult): void;
  timing(message: Timing): void;
  /** Tell the helper to stop this request (we answer the browser ourselves). */
  cancel(id: string): void;
}

/** A Map, not an object: the code is the helper's text, unchecked on the way in, and an object's lookup would read
 * inherited keys ("constructor", "__proto__") as reasons. */
const ERROR_REASONS: ReadonlyMap<string, PassReason> = new Map<HelperError["code"], PassReason>([
  ["blocked_address", "blocked_address"],
  ["too_large", "too_large"],
  ["timeout", "timeout"],
  ["connection_lost", "helper_unavailable"],
  ["browser_warm", "browser_warm_connection"],
]);

export class RequestDelivery implements RequestSink {
  private readonly assembler: ResponseAssembler;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private answered = false;

  constructor(
    readonly id: string,
    readonly paused: PausedRequest,
    private readonly responder: FetchResponder,
    private readonly hooks: DeliveryHooks,
    private readonly limits: DeliveryLimits = DEFAULT_LIMITS,
    /** Shared by every delivery of the extension (Accelerator); one of its own by default. */
    private readonly budget: BodyBudget = new BodyBudget(),
  ) {
    this.assembler = new ResponseAssembler(limits.maxBodyBytes, paused.method);
  }

  /** The batch went to the helper: start waiting for the head. */
  sent(): void {
    // Answered (dropped) while the batch waited for the helper: nothing to wait for, and the helper is told to stop.
    if (this.answered) return this.hooks.cancel(this.id);
    this.arm(this.limits.headTimeoutMs, "no response head");
  }

  head(message: Head): void {
    if (this.answered) return;
    // A login asked of a request that carried none: the browser would ask the user, or send the credentials it keeps
    // for the site (which the helper never has), and go on with the answer; lanefetch must not show the 401 instead.
    if (message.status === 401 && headerValue(message.headers, "www-authenticate") !== undefined &&
      headerValue(this.paused.headers, "authorization") === undefined) {
      this.hooks.cancel(this.id);
      return this.pass("login", "401 asking for a login (WWW-Authenticate) to a request without Authorization");
    }
    const refused = this.assembler.addHead(message);
    if (refused) return this.giveUp(refused);
    // An announced body takes its whole share now: later requests see the room gone before its bytes come.
    const announced = this.assembler.announcedBytes ?? 0;
    if (!this.budget.need(this.id, announced)) return this.overBudget(`its Content-Length ${announced}`);
    this.arm(this.limits.stallTimeoutMs, "body stalled");
  }

  body(message: { data: string }): void {
    if (this.answered) return;
    const refused = this.assembler.addBody(message.data);
    if (refused) return this.giveUp(refused);
    if (!this.budget.need(this.id, this.assembler.bodyBytes)) return this.overBudget(`${this.assembler.bodyBytes} body bytes`);
    this.arm(this.limits.stallTimeoutMs, "body stalled");
  }

  end(): void {
    if (this.answered) return;
    const result = this.assembler.finish();
    if (result.kind === "refused") return this.giveUp(result, false);
    this.answered = true;
    this.disarm();
    void this.responder.fulfill(fulfillParams(this.paused.interceptionId, result.head, result.bodyBase64)).then((ok) => {
      this.budget.release(this.id);
      this.hooks.done(
        ok
          ? { outcome: "fulfilled", status: result.head.status, bodyBytes: result.bodyBytes }
          : { outcome: "passed", reason: "helper_error", detail: "the browser refused the fulfilled response" },
      );
    });
  }

  error(code: HelperError["code"], message: string): void {
    this.pass(ERROR_REASONS.get(code) ?? "helper_error", `${code}: ${message}`);
  }

  timing(message: Timing): void {
    this.hooks.timing(message);
  }

  /** The helper says it is still working on this request's batch: wait for it afresh (its answer may be held until
   * its pipelined connection drains, longer than a head takes on a slow link; the helper's own network timeouts
   * end a request that is really stuck). */
  working(): void {
    if (this.answered || this.timer === undefined) return;
    if (this.assembler.started) this.arm(this.limits.stallTimeoutMs, "body stalled");
    else this.arm(this.limits.headTimeoutMs, "no response head");
  }

  /** Answer with continueRequest now (helper unavailable, timeout, refusal). Idempotent. */
  pass(reason: PassReason, detail: string): void {
    if (this.answered) return;
    this.settle();
    void this.responder.pass(this.paused.interceptionId).then(() => this.hooks.done({ outcome: "passed", reason, detail }));
  }

  /** The browser no longer holds the request (its tab or debugger session went): answer nothing, and let no timer
   * answer it later. */
  drop(): void {
    this.settle();
  }

  /** Body bytes held for this request (0 once it was answered, whichever way). */
  get heldBytes(): number {
    return this.assembler.heldBytes;
  }

  /** Answered without a fulfil: nothing of the body is kept, its share of the budget is free. */
  private settle(): void {
    this.answered = true;
    this.disarm();
    this.assembler.release();
    this.budget.release(this.id);
  }

  private overBudget(what: string): void {
    const { usedBytes, limitBytes } = this.budget;
    this.hooks.cancel(this.id);
    this.pass("memory_budget", `${what} would take the bodies held above ${limitBytes} bytes (${usedBytes} held)`);
  }

  private giveUp(refused: Assembled, cancelAtHelper = true): void {
    if (refused.kind !== "refused") return;
    if (cancelAtHelper) this.hooks.cancel(this.id);
    this.pass(refused.reason, refused.detail);
  }

  private arm(ms: number, what: string): void {
    this.disarm();
    this.timer = setTimeout(() => {
      this.hooks.cancel(this.id);
      this.pass("timeout", `${what} after ${ms} ms`);
    }, ms);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
