// Sends batches to the helper and routes its answers (head, body, end, error, timing, batch_done) by request id.
import type {
  Batch, BatchDone, Body, BrowserFields, CacheCommand, CacheStats, End, Error as HelperError, Head, InterfacesCommand, InterfacesState, Invalidate, Page, PageReport,
  Ping, Pong, Preconnect, Request,
  Timing,
} from "../generated/protocol.js";
import { setNewest } from "../bounded-map.js";
import type { HelperConnection } from "./helper-connection.js";

export interface RequestSink {
  head(message: Head): void;
  body(message: Body): void;
  end(message: End): void;
  /** The request failed: from the helper, or locally ("connection_lost") when the port went away. */
  error(code: HelperError["code"], message: string): void;
  timing(message: Timing): void;
  /** The helper is still working on this request's batch (a `working` message): its timers start afresh. */
  working(): void;
}

type Answer = CacheStats | InterfacesState | Pong;

interface Entry {
  sink: RequestSink;
  batchId: string;
}

/** Answered requests (end or error) whose timing may still come. The helper sends none for a request it refused
 * unread (a frame it could not read, a batch refused whole: an error per id, and no batch_done either), so they
 * are forgotten at their batch's batch_done or, past this many, oldest first: a batch has at most 2000 requests. */
const AWAITING_TIMING_LIMIT = 4000;
/** Batches whose batch_done is awaited: a batch refused whole gets none, so the oldest are forgotten past this. */
const AWAITING_DONE_LIMIT = 1000;

export interface PreconnectOptions {
  /** "tcp" holds the TLS handshake until needed (preconnect-handshake.ts); default "full". */
  handshake?: NonNullable<Preconnect["handshake"]>;
  /** Tell whether the page has a learned flight (onFlightPlan). */
  askFlight?: boolean;
  /** Firefox: the page context whose tab navigates to url (its later requests are the page's load). */
  contextId?: string;
  /** With contextId: the document went to the network itself (nothing connected, no page's load). */
  direct?: boolean;
}

export class HelperClient {
  /** Requests sent and not answered yet (no end or error). */
  private readonly entries = new Map<string, Entry>();
  private readonly awaitingTiming = new Map<string, Entry>();
  private readonly batchDone = new Map<string, (message: BatchDone) => void>();
  private batchCounter = 0;
  /** Commands answered by one message with the same nonce (cache, interfaces, ping), waiting for it. */
  private readonly answers = new Map<string, (message: Answer | null) => void>();
  private nonceCounter = 0;
  private readonly rttListeners: ((origin: string, rttMs: number, remembered: boolean) => void)[] = [];
  private readonly pageReportListeners: ((report: PageReport) => void)[] = [];
  private readonly flightPlanListeners: ((url: string, flight: boolean) => void)[] = [];

  constructor(private readonly connection: HelperConnection) {
    connection.onMessage((message) => {
      switch (message.type) {
        case "head":
          this.entries.get(message.id)?.sink.head(message);
          break;
        case "body":
          this.entries.get(message.id)?.sink.body(message);
          break;
        case "end":
          this.finish(message.id)?.end(message);
          break;
        case "error":
          if (message.id !== undefined) this.finish(message.id)?.error(message.code, message.message);
          break;
        case "timing": {
          const entry = this.awaitingTiming.get(message.id) ?? this.entries.get(message.id);
          if (entry) {
            this.awaitingTiming.delete(message.id);
            this.entries.delete(message.id);
            entry.sink.timing(message);
          }
          break;
        }
        case "cache_stats":
        case "interfaces_state":
        case "pong": {
          const answer = this.answers.get(message.nonce ?? "");
          this.answers.delete(message.nonce ?? "");
          answer?.(message);
          break;
        }
        case "origin_rtt":
          for (const l of this.rttListeners) l(message.origin, message.rtt_ms, message.remembered === true);
          break;
        case "page_report":
          for (const l of this.pageReportListeners) l(message);
          break;
        case "flight_plan":
          for (const l of this.flightPlanListeners) l(message.url, message.flight);
          break;
        case "working":
          for (const entry of this.entries.values()) {
            if (entry.batchId === message.batch_id) entry.sink.working();
          }
          break;
        case "batch_done": {
          // Every timing of the batch came before it: whatever still waits for one gets none.
          for (const [id, entry] of this.awaitingTiming) if (entry.batchId === message.batch_id) this.awaitingTiming.delete(id);
          const done = this.batchDone.get(message.batch_id);
          this.batchDone.delete(message.batch_id);
          done?.(message);
          break;
        }
        default:
          break;
      }
    });
    connection.onLost(() => this.failAll("connection_lost", "the helper's port closed"));
  }

  /** The helper opened a connection to `origin` and its TCP connect took `rttMs` (one round trip). */
  onOriginRtt(listener: (origin: string, rttMs: number, remembered: boolean) => void): void {
    this.rttListeners.push(listener);
  }

  /** A page load ended: what the helper's prefetch flight did for it (answered, bytes never asked for). */
  onPageReport(listener: (report: PageReport) => void): void {
    this.pageReportListeners.push(listener);
  }

  /** Whether a navigation's page has a learned prefetch flight (the answer to preconnect's askFlight). */
  onFlightPlan(listener: (url: string, flight: boolean) => void): void {
    this.flightPlanListeners.push(listener);
  }

  /** Ask the helper to open a connection to url's origin now (a page starts); false (nothing asked) if it is not
   * connected. See PreconnectOptions. */
  preconnect(url: string, page: Page, options: PreconnectOptions = {}): boolean {
    const { handshake = "full", askFlight = false, contextId, direct = false } = options;
    const message: Preconnect = handshake === "full" ? { type: "preconnect", url, page } : { type: "preconnect", url, page, handshake };
    if (askFlight) message.ask_flight = true;
    if (contextId !== undefined) message.context_id = contextId;
    if (contextId !== undefined && direct) message.direct = true;
    return this.connection.state.status === "connected" && this.connection.send(message);
  }

  /** Tell the helper of requests of `page` the browser fetches itself (passed at once), so that the page is learned;
   * false (nothing sent) if it is not connected. Nothing is answered. */
  browserFetched(page: Page, requests: Request[]): boolean {
    const [head, ...rest] = requests;
    if (head === undefined || this.connection.state.status !== "connected") return false;
    return this.connection.send({ type: "browser_fetched", page, requests: [head, ...rest] });
  }

  /** Tell the helper to forget what it holds for `urls` in `page`'s partition: the page sent a request of an unsafe
   * method there, which the browser sends itself (intercept/unsafe-request.ts); false (nothing sent) if it is not
   * connected. Nothing is answered. */
  invalidate(page: Page, urls: string[]): boolean {
    const [a, b, c] = urls;  // at most three: the request's URL, its Location and Content-Location
    if (a === undefined || this.connection.state.status !== "connected") return false;
    const named: Invalidate["urls"] = b === undefined ? [a] : c === undefined ? [a, b] : [a, b, c];
    return this.connection.send({ type: "invalidate", page, urls: named });
  }

  /** Tell the helper the Accept fields this browser sends per kind (intercept/browser-fields-probe.ts); false
   * (nothing sent) if it is not connected. Nothing is answered. */
  browserFields(message: BrowserFields): boolean {
    return this.connection.state.status === "connected" && this.connection.send(message);
  }

  /** Resolves true once the helper answers a ping sent now: it handles messages in order, so it has taken every
   * message sent before (a preconnect: its connect has started). False: not connected, or no answer in `timeoutMs`. */
  async acknowledged(timeoutMs = 1000): Promise<boolean> {
    return (await this.ask((nonce) => ({ type: "ping", nonce }), timeoutMs))?.type === "pong";
  }

  nextBatchId(): string {
    this.batchCounter += 1;
    return `b${this.batchCounter}`;
  }

  /** Whether the helper is (or came) up; starts it if it is not running. */
  ready(): Promise<boolean> {
    return this.connection.ready();
  }

  /**
   * Sends `batch` once the helper is ready. Resolves false (and calls no sink) when the helper cannot take it:
   * the caller then lets the browser fetch the requests itself.
   */
  async send(batch: Batch, sinks: ReadonlyMap<string, RequestSink>, onDone?: (message: BatchDone) => void): Promise<boolean> {
    if (!(await this.connection.ready())) return false;
    for (const request of batch.requests) {
      const sink = sinks.get(request.id);
      if (!sink) throw new Error(`no sink for request ${request.id}`);
      this.entries.set(request.id, { sink, batchId: batch.batch_id });
    }
    if (onDone) setNewest(this.batchDone, batch.batch_id, onDone, AWAITING_DONE_LIMIT);
    if (!this.connection.send(batch)) {
      for (const request of batch.requests) this.entries.delete(request.id);
      this.batchDone.delete(batch.batch_id);
      return false;
    }
    return true;
  }

  /**
   * The helper's HTTP cache (options page): its size, or empty it first. Resolves null when the helper cannot be
   * asked now or does not answer within `timeoutMs`.
   */
  async cache(action: CacheCommand["action"], timeoutMs = 10000): Promise<CacheStats | null> {
    const answer = await this.ask((nonce) => ({ type: "cache", action, nonce }), timeoutMs);
    return answer?.type === "cache_stats" ? answer : null;
  }

  /**
   * The network interfaces for lanes with their policy, or set one interface's policy first (options page).
   * Resolves null when the helper cannot be asked now or does not answer within `timeoutMs`.
   */
  async interfaces(command: Omit<InterfacesCommand, "type" | "nonce">, timeoutMs = 10000): Promise<InterfacesState | null> {
    const answer = await this.ask((nonce) => ({ ...command, type: "interfaces", nonce }), timeoutMs);
    return answer?.type === "interfaces_state" ? answer : null;
  }

  private async ask(message: (nonce: string) => CacheCommand | InterfacesCommand | Ping, timeoutMs: number): Promise<Answer | null> {
    if (!(await this.connection.ready())) return null;
    this.nonceCounter += 1;
    const nonce = `q${this.nonceCounter}`;
    return new Promise<Answer | null>((resolve) => {
      const timer = setTimeout(() => settle(null), timeoutMs);
      const settle = (answer: Answer | null): void => {
        clearTimeout(timer);
        this.answers.delete(nonce);
        resolve(answer);
      };
      this.answers.set(nonce, settle);
      if (!this.connection.send(message(nonce))) settle(null);
    });
  }

  /** Ask the helper to stop these requests; their sinks hear nothing more (the caller already decided). */
  cancel(ids: readonly string[]): void {
    const live = ids.filter((id) => this.entries.has(id));
    for (const id of live) this.entries.delete(id);
    for (const id of ids) this.awaitingTiming.delete(id);
    if (live.length) this.connection.send({ type: "cancel", ids: live });
  }

  /** Requests sent and not answered yet. */
  get inFlight(): number {
    return this.entries.size;
  }

  private finish(id: string): RequestSink | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    setNewest(this.awaitingTiming, id, entry, AWAITING_TIMING_LIMIT);
    return entry.sink;
  }

  private failAll(code: HelperError["code"], message: string): void {
    const entries = [...this.entries.values()];
    this.entries.clear();
    this.awaitingTiming.clear();
    this.batchDone.clear();
    for (const answer of [...this.answers.values()]) answer(null);
    for (const entry of entries) entry.sink.error(code, message);
  }
}
