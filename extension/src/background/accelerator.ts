// The path of one held request: decide (take or pass) → batch per tab and origin → helper → deliver, while
// keeping the tab's counters and the timing records. Browser-neutral: the caller supplies how to answer.
import { Batcher, DEFAULT_BATCHING, type BatcherOptions } from "../batch/batcher.js";
import type { HelperClient, RequestSink } from "../bridge/helper-client.js";
import type { HelperState } from "../bridge/helper-state.js";
import type { Batch, Page } from "../generated/protocol.js";
import { BodyBudget } from "../deliver/body-budget.js";
import type { FetchResponder } from "../deliver/fetch-responder.js";
import { DEFAULT_LIMITS, RequestDelivery, type DeliveryLimits, type DeliveryResult } from "../deliver/request-delivery.js";
import type { BrowserMultiplexed } from "../intercept/browser-multiplexed.js";
import { FINISHING_WAIT_MS, type BrowserWarmConnection } from "../intercept/browser-warm-connection.js";
import { helperSample, type HostSpeed } from "../intercept/host-speed.js";
import { decide } from "../intercept/pass-through-policy.js";
import type { PassReason } from "../intercept/pass-reason.js";
import { handshakeFor, HeldHandshakes } from "../intercept/preconnect-handshake.js";
import { withoutFragment } from "../intercept/origin-of.js";
import { toHelperRequest, type PausedRequest } from "../intercept/paused-request.js";
import { invalidatedUrls, isUnsafe, UnsafeRequests } from "../intercept/unsafe-request.js";
import { likelyLarge, SPLIT_MAX_BODY_BYTES } from "../lanes/split-rule.js";
import type { AddressSpace } from "../sites/address-space.js";
import { NOT_COUNTED, type TabCounters } from "../timings/tab-counters.js";
import { estimateSavedMs } from "../timings/time-saved-model.js";
import type { TimingStore } from "../timings/timing-store.js";
import { setNewest } from "../bounded-map.js";

export interface PageInfo {
  url: string;
  /** scheme://registrable-domain of the top-level page. */
  topSite: string;
  siteActive: boolean;
  addressSpace: AddressSpace;
  /** Hosts the browser reached over plain http for this page and frame (intercept/plain-http.ts). */
  plainHttpHosts: readonly string[];
  privateBrowsing: boolean;
  /** Set for a request of a frame cross-site to the top-level page, or inside one: that frame's site (the helper
   * keeps its state apart, as the browser keys its cache: intercept/embedded-frames.ts). */
  frameSite?: string;
  /** Set for a request of a service worker or shared worker (its script URL): no tab's page's, whichever tab's
   * session paused it (debugger-sessions.ts). It names no page URL to the helper (which learns no page from it), is
   * batched apart from the tab's page, and is counted and listed in no tab's page (the worker serves them all). */
  worker?: string;
}

export interface HeldRequest {
  tabId: number;
  paused: PausedRequest;
  responder: FetchResponder;
  page: PageInfo;
}

export interface AcceleratorOptions {
  batching: BatcherOptions;
  limits: DeliveryLimits;
  /** What all the bodies the helper is answering may hold at once (deliver/body-budget.ts); 64 MiB by default. */
  bodyBudget?: BodyBudget;
}

interface Item {
  id: string;
  held: HeldRequest;
  /** Its origin is the browser's over a warm h2/h3 connection (why, BrowserMultiplexed.detail): the helper answers
   * it only from what it holds (its page's prefetch flight, its cache) and declines the rest to the browser. */
  multiplexed?: string;
  /** The tab's page when it was asked for (TabCounters.page): counted for that page only. */
  counted: number;
}

function unavailableReason(state: HelperState): PassReason {
  if (state.status === "not_installed") return "helper_missing";
  if (state.status === "incompatible") return "helper_incompatible";
  return "helper_unavailable";
}

function pageField(page: PageInfo): Page {
  const field: Page = { url: page.url, top_site: page.topSite, address_space: page.addressSpace, private_browsing: page.privateBrowsing };
  if (page.frameSite !== undefined) field.frame_site = page.frameSite;
  if (page.worker !== undefined) delete field.url;
  return field;
}

/** Pages whose flight answer is kept (a tab's navigation asks again). */
const MAX_FLIGHTS_KNOWN = 64;

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** The batch a request joins, every rule that keeps batches apart decided here (callers add nothing to the key):
 * - one batch names one page (protocol Batch.page, which the helper fetches, keys and learns it under), so requests
 *   of two pages never share one, even in one tab and origin (a page being left and the next, both asking at once);
 *   a fragment does not make another page;
 * - an embedded frame's requests (frameSite, and the address space a frame's own document may give them:
 *   embedded-frames.ts) go apart from the page's own;
 * - a service or shared worker's requests (PageInfo.worker) go apart from its tab's page: their batch names no page;
 * - a request the helper is to answer only from what it holds (`helperHoldsOnly`: its origin is the browser's over a
 *   warm h2/h3 connection, it is marked browser_warm and declined to the browser otherwise) goes in a batch of its
 *   own, never with requests the helper fetches.
 * The tab comes first ("tabId|": batchOfTab), the page URL last, so a "|" in it cannot read as another field. */
export function batchKey(held: HeldRequest, helperHoldsOnly: boolean): string {
  const { page } = held;
  const kind = `${helperHoldsOnly ? "held" : "fetched"}|${page.worker !== undefined ? "worker" : "page"}`;
  return `${held.tabId}|${originOf(held.paused.url)}|${page.frameSite ?? ""}|${page.addressSpace}|${kind}|${withoutFragment(page.url)}`;
}

/** Whether the batch of `key` (batchKey) is one of `tabId`'s: tabGone and busyFor find a tab's batches by it. */
export function batchOfTab(key: string, tabId: number): boolean {
  return key.startsWith(`${tabId}|`);
}

export class Accelerator {
  private counter = 0;
  private readonly batcher: Batcher<Item>;
  private readonly deliveries = new Map<string, { tabId: number; delivery: RequestDelivery }>();
  /** One for every delivery: the bodies held across all tabs. */
  readonly bodyBudget: BodyBudget;
  /** When set (e.g. the browser uses a proxy the helper cannot honour), every request is passed with this reason. */
  blockedBy: PassReason | null = null;
  /** The user's "split large downloads": likely large requests go to the helper with split (lanes/split-rule.ts). */
  splitLarge = false;
  /** Batches waiting for the helper to start: each is told when its host is learned fast (see sendBatch). */
  private readonly waitingForHelper = new Set<{ url: string; fast: (detail: string) => void }>();
  private readonly idleListeners: ((tabId: number) => void)[] = [];
  /** Requests waiting to be handled (handleWhen), by tab. */
  private readonly awaitingPage = new Set<{ tabId: number }>();
  /** Chromium: origins the browser reaches over its own warm h2/h3 connection; their requests go to it. */
  multiplexed: BrowserMultiplexed | null = null;
  /** Chromium: origins whose browser HTTP/1.1 connection is warm and idle; one render-blocking request at a time is
   * marked `browser_warm` for them (the helper answers it from what it holds or declines it to the browser). */
  warmConnection: BrowserWarmConnection | null = null;
  private readonly heldHandshakes = new HeldHandshakes<PageInfo>();
  private readonly unsafeRequests = new UnsafeRequests();
  /** Chromium: whether each page (URL, no fragment; the newest few) has a learned prefetch flight, as the helper
   * answered its navigation's preconnect; absent until it answered. */
  private readonly flights = new Map<string, boolean>();
  /** Chromium: a page's document the browser loads itself (`local_document`) is streamed to the helper where this
   * says it can be (intercept/document-stream.ts: its tab's Network events are on); called while the request is still
   * paused, with the id its request is told to the helper under and `tell`, which tells it (browser_fetched) and is
   * called only if the document will be streamed. */
  streamDocument: ((id: string, held: HeldRequest, page: Page, tell: () => boolean) => boolean) | null = null;

  constructor(
    /** Hosts' speed: requests to fast ones go to the browser. The helper's connect times (origin_rtt) are fed here;
     * the browser's by the caller. */
    readonly speed: HostSpeed,
    private readonly client: HelperClient,
    private readonly helperState: () => HelperState,
    private readonly counters: TabCounters,
    private readonly store: TimingStore,
    private readonly options: AcceleratorOptions = { batching: DEFAULT_BATCHING, limits: DEFAULT_LIMITS },
  ) {
    this.bodyBudget = options.bodyBudget ?? new BodyBudget();
    this.batcher = new Batcher<Item>((key, items) => void this.sendBatch(items), options.batching);
    client.onOriginRtt((origin, rttMs, remembered) => void speed.observe(helperSample(origin, rttMs, remembered)));
    client.onFlightPlan((url, flight) => {
      setNewest(this.flights, withoutFragment(url), flight, MAX_FLIGHTS_KNOWN);
    });
    speed.onVerdict(() => {
      for (const waiter of [...this.waitingForHelper]) {
        const detail = speed.stepAsideDetail(waiter.url);
        if (detail !== null) waiter.fast(detail);
      }
    });
  }

  /**
   * A page of an enabled site starts loading (its document was requested): the helper connects to its origin
   * while the browser fetches the document, so the page's first batch finds a connection (a round trip saved) and
   * the origin's RTT is known before its subresources come. False: nothing was asked (not an active site's http
   * page, its host known fast, or the helper not connected). `navigation`: the page is being opened (the helper
   * begins its page load and may fetch what it learned of it); false for a connection made ahead of any page (a
   * site just turned on with no tab showing it): the message then names no page URL, so nothing is fetched for one.
   */
  pageStarted(page: PageInfo, navigation = true, askFlight = false): boolean {
    if (!page.siteActive || this.blockedBy) return false;
    const origin = originOf(page.url);
    if (!origin.startsWith("http") || this.speed.isFast(page.url)) return false;
    const field = pageField(page);
    if (!navigation) delete field.url;
    const handshake = handshakeFor(page.url, navigation, this.multiplexed !== null);
    if (handshake === "tcp") this.heldHandshakes.hold(page.url, page);
    // Chromium asks every navigation whether its page has a flight (an h2 origin's requests are offered to the
    // helper only if it has one); unknown until the answer, as the last load's answer may have changed.
    const asks = navigation && (askFlight || this.multiplexed !== null);
    if (asks) this.flights.delete(withoutFragment(page.url));
    return this.client.preconnect(page.url, field, { handshake, askFlight: asks });
  }

  /** A response to the browser's own request came from the network over `protocol` (Chromium): an origin whose
   * preconnect held its TLS handshake and which the browser reached over HTTP/1.1 gets the helper's connections
   * now, before the page's first batch (preconnect-handshake.ts). Names no page URL: the page's load has begun. */
  browserAnswered(url: string, protocol: string): void {
    const page = this.heldHandshakes.answered(url, protocol);
    if (page === null || this.blockedBy) return;
    const field = pageField(page);
    delete field.url;
    this.client.preconnect(url, field);
  }

  /** A request of an unsafe method the browser sends itself: the helper forgets what it holds for its URL before
   * the request goes on, and again at its response (browserFinished; intercept/unsafe-request.ts). */
  private unsafeToBrowser(held: HeldRequest): void {
    const { paused } = held;
    if (!isUnsafe(paused.method) || !this.helperTakes("invalidate")) return;
    const page = pageField(held.page);
    const urls = invalidatedUrls(paused.url, 200, []);
    if (urls.length === 0) return;
    this.client.invalidate(page, urls);
    if (paused.networkId !== undefined) this.unsafeRequests.remember(paused.networkId, page);
  }

  /** The browser's own request of `networkId` finished (CDP Network events): if it was an unsafe one passed here,
   * the helper forgets its URL again, with the Location and Content-Location of a non-error response. */
  browserFinished(networkId: string, url: string, status: number | null, headers: readonly (readonly [string, string])[]): void {
    const told = this.unsafeRequests.answered(networkId, url, status, headers);
    if (told !== null) this.client.invalidate(told.page, told.urls);
  }

  handle(held: HeldRequest): void {
    this.counter += 1;
    const id = `r${this.counter}`;
    const { paused, tabId } = held;
    const worker = held.page.worker !== undefined;
    if (!worker) this.store.add({
      id, tabId, pageUrl: held.page.url, url: paused.url, method: paused.method, resourceType: paused.cdpResourceType,
      priority: paused.priority, networkId: paused.networkId ?? null, requestHeaders: paused.headers, batchId: null,
      pausedAt: Date.now(), answeredAt: null, outcome: "pending", reason: null, detail: null, status: null, bodyBytes: 0, timing: null,
      privateBrowsing: held.page.privateBrowsing,
    });
    // Counted for the page that asked for it, not for the one the tab shows when its answer comes (a reload of the
    // same URL meanwhile started the counts afresh).
    const counted = worker ? NOT_COUNTED : this.counters.page(tabId);
    const decision = this.blockedBy ? { take: false as const, reason: this.blockedBy } : decide(paused, held.page);
    if (!decision.take) {
      // A document the browser loads itself (a local page; a plain-http one, which HSTS may upgrade) is streamed.
      if (decision.reason === "local_document" || (decision.reason === "plain_http" && paused.cdpResourceType === "Document")) {
        this.documentToBrowser(id, held);
      }
      if (decision.reason === "method") this.unsafeToBrowser(held);
      this.passNow(id, held, decision.reason, "", counted);
      return;
    }
    const fast = this.speed.stepAsideDetail(paused.url);
    if (fast !== null) {
      this.passNow(id, held, "low_latency", fast, counted);
      return;
    }
    const multiplexed = this.multiplexed?.detail(paused.url) ?? null;
    // Its size is unknown until the helper's head: not sent at all while the bodies held leave (nearly) no room, as
    // its answer could only be thrown away; a body that does not fit once its size is known goes then (RequestDelivery).
    const budgetFull = (): boolean => {
      if (this.bodyBudget.roomForNew()) return false;
      const { usedBytes, limitBytes } = this.bodyBudget;
      this.passNow(id, held, "memory_budget", `${usedBytes} of ${limitBytes} body bytes held`, counted);
      return true;
    };
    if (multiplexed !== null) {
      // The browser's own connection carries what the helper does not hold. What it holds (a learned page's flight,
      // which fetched these before the browser asked) answers from here: passed at once, the flight's answers were
      // never claimed (its bytes wasted) and the page's requests never learned. Without the helper up nothing is
      // held, and a flight never holds a document (its detour would delay the whole page for nothing).
      if (!this.helperHolds() || paused.cdpResourceType === "Document") {
        this.passNow(id, held, "browser_multiplexed", multiplexed, counted);
        return;
      }
      // The page has no flight: the helper holds nothing of it (but what its cache kept, which the browser's own cache
      // keeps too), and the detour's milliseconds can lose a race on the server: a stylesheet reaching nginx just after
      // it began writing an image it would otherwise have sent after the stylesheet (flask-tutorial's first load over
      // `sat`, 5 of 5 loads one round trip slower with the detour). Passed at once, told to the helper, which learns it.
      if (this.flights.get(withoutFragment(held.page.url)) === false && this.helperTakes("browser_fetched")) {
        this.passNow(id, held, "browser_multiplexed", multiplexed, counted);
        this.client.browserFetched(pageField(held.page), [toHelperRequest(id, paused)]);
        return;
      }
      if (budgetFull()) return;
      this.batcher.add(batchKey(held, true), { id, held, multiplexed, counted });
      return;
    }
    if (budgetFull()) return;
    this.batcher.add(batchKey(held, false), { id, held, counted });
  }

  /** A request of `tabId` handled once `ready` gives it (Chromium: its page, or where its origin's requests go, is
   * still being learned). Its tab is busy meanwhile: the tab policy turns Fetch off only once it is idle, and
   * Fetch.disable would hand the request to the browser while the helper is asked for it too. A tab released
   * meanwhile (tabGone) has it dropped: the browser no longer holds it, and the helper would fetch it for nothing. */
  handleWhen(tabId: number, ready: Promise<HeldRequest>): void {
    const waiting = { tabId };
    this.awaitingPage.add(waiting);
    void ready.then((held) => {
      if (!this.awaitingPage.delete(waiting)) return;
      this.handle(held);
      // Passed at once (its site off, its host fast): the tab may be idle now
      if (!this.busyFor(tabId)) for (const listener of this.idleListeners) listener(tabId);
    });
  }

  /** The tab closed or stopped being intercepted: drop what waits and stop what the helper is fetching for it. */
  tabGone(tabId: number): void {
    this.batcher.dropWhere((key) => batchOfTab(key, tabId));
    for (const waiting of this.awaitingPage) if (waiting.tabId === tabId) this.awaitingPage.delete(waiting);
    const ids = [...this.deliveries].filter(([, d]) => d.tabId === tabId).map(([id]) => id);
    for (const id of ids) {
      this.deliveries.get(id)?.delivery.drop();
      this.deliveries.delete(id);
    }
    this.client.cancel(ids);
    for (const listener of this.idleListeners) listener(tabId);
  }

  /** Called when a tab's last request waiting for the helper or with it was answered (or the tab went). */
  onIdle(listener: (tabId: number) => void): void {
    this.idleListeners.push(listener);
  }

  /** Whether requests of this tab wait for their page, in a batch, or are with the helper (not yet answered). */
  busyFor(tabId: number): boolean {
    return this.batcher.hasWhere((key) => batchOfTab(key, tabId)) || [...this.deliveries.values()].some((d) => d.tabId === tabId) ||
      [...this.awaitingPage].some((w) => w.tabId === tabId);
  }

  get inFlight(): number {
    return this.deliveries.size + this.batcher.pending + this.awaitingPage.size;
  }

  /** The browser loads the page's document itself: its request is told to the helper (which learns it as a request of
   * the page, and from it the browser's fields) and its bytes follow as they arrive (browser_document), so that the
   * helper reads what it names. Never for private browsing (the helper learns nothing of it). */
  private documentToBrowser(id: string, held: HeldRequest): void {
    if (this.streamDocument === null || held.page.privateBrowsing || !this.helperTakes("browser_document")) return;
    if (!this.helperTakes("browser_fetched") || held.paused.method !== "GET") return;
    const page = pageField(held.page);
    // Told once it is sure to be streamed, before the stream starts: the helper's load must know the request its
    // bytes belong to (and from the request alone that they will come: it reads the page's stylesheets for it).
    this.streamDocument(id, held, page, () => this.client.browserFetched(page, [toHelperRequest(id, held.paused)]));
  }

  /** Whether the helper is up and can answer a request only from what it holds (`browser_warm`). */
  private helperHolds(): boolean {
    return this.helperTakes("browser_warm");
  }

  private helperTakes(capability: string): boolean {
    const state = this.helperState();
    return state.status === "connected" && state.capabilities.includes(capability);
  }

  private passNow(id: string, held: HeldRequest, reason: PassReason, detail: string, counted: number): void {
    void held.responder.pass(held.paused.interceptionId).then(() =>
      this.finished(id, held.tabId, { outcome: "passed", reason, detail }, counted),
    );
  }

  private finished(id: string, tabId: number, result: DeliveryResult, counted: number): void {
    const wasDelivering = this.deliveries.delete(id);
    if (result.outcome === "fulfilled") {
      this.counters.accelerated(tabId, result.bodyBytes, counted);
      this.store.update(id, { outcome: "fulfilled", status: result.status, bodyBytes: result.bodyBytes, answeredAt: Date.now() });
    } else {
      this.counters.passed(tabId, result.reason, counted);
      this.store.update(id, { outcome: "passed", reason: result.reason, detail: result.detail, answeredAt: Date.now() });
    }
    if (wasDelivering && !this.busyFor(tabId)) for (const listener of this.idleListeners) listener(tabId);
  }

  /** Until the browser's large response arriving on `origin` ended, FINISHING_WAIT_MS at most (the browser reports
   * a document's end a little after the parser asked for what its last bytes name). */
  private untilFinished(warm: BrowserWarmConnection, origin: string): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        off();
        resolve();
      };
      const timer = setTimeout(done, FINISHING_WAIT_MS);
      const off = warm.onFinished((o) => {
        if (o === origin) done();
      });
    });
  }

  /** Null once the helper is up (or failed to start: send says so); why to step aside if the host of `url` is
   * learned fast first. */
  private helperOrFast(url: string): Promise<string | null> {
    return new Promise((resolve) => {
      const waiter = { url, fast: (detail: string) => done(detail) };
      const done = (result: string | null): void => {
        if (!this.waitingForHelper.delete(waiter)) return;
        resolve(result);
      };
      this.waitingForHelper.add(waiter);
      const known = this.speed.stepAsideDetail(url);
      if (known !== null) done(known);
      void this.client.ready().then(() => done(null));
    });
  }

  private async sendBatch(items: Item[]): Promise<void> {
    const first = items[items.length - 1];
    if (!first) return;
    const { page, tabId } = first.held;
    const batchId = this.client.nextBatchId();
    const canSplit = this.splitLarge && this.helperTakes("split");
    const requests = items.map((item) => toHelperRequest(item.id, item.held.paused));
    // What the helper holds for a multiplexed origin is whole: never split (a split asks the network in pieces)
    const heldOnly = (i: number): boolean => items[i]?.multiplexed !== undefined;
    for (const [i, r] of requests.entries()) {
      if (canSplit && !heldOnly(i) && r.resource_type && likelyLarge(r.url, r.resource_type)) r.split = true;
    }
    const warmClaimed = new Set<number>();
    const sinks = new Map<string, RequestSink>();
    const deliveries: RequestDelivery[] = [];
    for (const [i, item] of items.entries()) {
      const { limits: base } = this.options;
      const limits = requests[i]?.split ? { ...base, maxBodyBytes: Math.max(base.maxBodyBytes, SPLIT_MAX_BODY_BYTES) } : base;
      const delivery = new RequestDelivery(item.id, item.held.paused, item.held.responder, {
        done: (result) => {
          // Answered by the helper after all (its flight or cache): the browser's warm connection was not used.
          if (warmClaimed.has(i) && result.outcome === "fulfilled") this.warmConnection?.release(item.held.paused.url);
          // Declined: it goes to the browser's multiplexed connection, as it would have without asking.
          const declined = item.multiplexed !== undefined && result.outcome === "passed" && result.reason === "browser_warm_connection";
          this.finished(item.id, item.held.tabId, declined ? { outcome: "passed", reason: "browser_multiplexed", detail: item.multiplexed ?? "" } : result,
            item.counted);
        },
        timing: (message) => this.store.update(item.id, { timing: message }),
        cancel: (id) => this.client.cancel([id]),
      }, limits, this.bodyBudget);
      this.deliveries.set(item.id, { tabId: item.held.tabId, delivery });
      this.store.update(item.id, { batchId });
      sinks.set(item.id, delivery);
      deliveries.push(delivery);
    }
    // Registered before any wait: the tab is busy meanwhile, and a tab released meanwhile (tabGone) drops them.
    const dropped = (): boolean => items.some((item, i) => this.deliveries.get(item.id)?.delivery !== deliveries[i]);
    const canWarm = this.helperHolds();
    const warm = this.warmConnection;
    if (canWarm && warm && items.some((it) => warm.finishing(it.held.paused.url, it.held.paused.cdpResourceType))) {
      await this.untilFinished(warm, originOf(first.held.paused.url));
      if (dropped()) return;
    }
    for (const [i, r] of requests.entries()) {
      if (heldOnly(i)) {
        r.browser_warm = true;
        continue;
      }
      const paused = items[i]?.held.paused;
      if (canWarm && warm && !r.split && paused && warm.claim(paused.url, paused.cdpResourceType)) {
        r.browser_warm = true;
        warmClaimed.add(i);
      }
    }
    const [head, ...rest] = requests;
    if (!head) return;
    const batch: Batch = { type: "batch", batch_id: batchId, page: pageField(page), requests: [head, ...rest] };
    // A starting helper takes 0.5–1.5 s (a Python process). Meanwhile the page's own document often tells that its
    // host is fast (CDP connect time): the batch then goes to the browser at once instead of waiting for the helper
    // only to learn that lanefetch should have stepped aside.
    if (this.helperState().status !== "connected") {
      const fast = await this.helperOrFast(first.held.paused.url);
      if (fast !== null) {
        for (const d of deliveries) d.pass("low_latency", fast);
        return;
      }
      // Its hello may have said that lanefetch must stay off (a system proxy the browser follows: proxy-policy.ts).
      if (this.blockedBy) {
        for (const d of deliveries) d.pass(this.blockedBy, "lanefetch is off");
        return;
      }
    }
    const sent = await this.client.send(batch, sinks, () => {
      const timings = this.store.forBatch(batchId).flatMap((r) => (r.timing ? [r.timing] : []));
      this.counters.saved(tabId, estimateSavedMs(timings), first.counted);
    });
    if (!sent) {
      const reason = unavailableReason(this.helperState());
      for (const d of deliveries) d.pass(reason, "helper not available");
      return;
    }
    for (const d of deliveries) d.sent();
  }
}
