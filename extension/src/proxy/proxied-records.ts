// The helper's reports on proxied requests (proxied → error? → timing) as the tab's counters and timing records,
// the same records the Chromium build keeps, so the popup and the timing panel work unchanged.
//
// Which page load a report is filed under: the tab's load current when Firefox routed the request to the helper
// (proxy.onRequest), pinned then (`pin`), not the one current when the report arrives. The report trails the routing
// by Firefox's queue for the proxy's connections and the native port: a navigation in between began a new load, and
// the old page's requests are the old load's (counted in no page's counters but their own load's, when current).
// A report is matched to its routing by tab and URL, in routing order (Firefox sends a URL's requests on in that
// order); a routed request Firefox dropped before the helper read it (webRequest.onErrorOccurred) unpins its entry,
// so the next report of that URL does not take it; one Firefox completed without the helper (its proxy failed over
// to a direct connection) is dropped once its report is EARLY_MS late. A report without a pin (the page's own document, whose routing
// begins its load) is the current load's.
import type { ToExtension } from "../generated/protocol.js";
import type { PassReason } from "../intercept/pass-reason.js";
import { BrowserFetchedRecords, webRequestResourceType, type BrowserRequest, type WebRequestEvent } from "../timings/browser-fetched.js";
import type { TabCounters } from "../timings/tab-counters.js";
import type { TimingStore } from "../timings/timing-store.js";
import type { PageContext } from "./proxy-router.js";
import { setNewest } from "../bounded-map.js";

/** Statuses Firefox reported before the helper's `proxied` report of the request arrived (bounded). */
const EARLY_LIMIT = 500;
/** How long such a status waits for its report. The report is sent when the helper reads the request, so it trails
 * Firefox's completion only by the native port's delay; a completion no report follows (Firefox answered from its
 * own cache, or fetched it itself) must not be taken by a later request of that URL: its status and time are another
 * response's. */
const EARLY_MS = 5000;
/** Routed requests awaiting their report: URLs remembered per tab (bounded), requests per URL. */
const PINNED_URLS = 2000;
const PINS_PER_URL = 16;
/** Firefox's request ids of reported requests, for its completion to find the record (bounded). */
const REQUEST_IDS = 2000;
/** What Firefox's webRequest events tell of a request it fetched itself (no connection phases: it has none). */
export type FirefoxResponse = WebRequestEvent;

/** A request routed to the helper: Firefox's id of it and the page load current then. */
interface Pin {
  requestId: string;
  loadId: string;
  /** When Firefox completed it, while its report had not come (ms, this.now()). */
  completedAt?: number;
}

export class ProxiedRecords {
  private readonly early = new Map<string, { status: number; at: number | null; heardAt: number }>();
  /** Routed requests not reported yet, by `${tabId} ${url}`, oldest first. */
  private readonly pins = new Map<string, Pin[]>();
  /** The record of each reported request, by Firefox's request id. */
  private readonly recordOfRequest = new Map<string, string>();
  /** Requests passed to Firefox (stepped aside), until it completed them. */
  private readonly direct: BrowserFetchedRecords;

  constructor(
    private readonly contextById: (contextId: string) => PageContext | undefined,
    private readonly counters: TabCounters,
    private readonly timings: TimingStore,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.direct = new BrowserFetchedRecords(counters, timings, "ff", now);
  }

  handle(m: ToExtension): void {
    if (m.type === "proxied") {
      const ctx = this.contextById(m.context_id);
      if (!ctx) return;
      // Firefox's own type of the request when the router saw it; else the helper's guess from its fields.
      const seen = ctx.routedTypes.get(m.url);
      const resourceType = seen !== undefined && webRequestResourceType(seen) !== "other" ? webRequestResourceType(seen) : m.resource_type;
      const pin = this.unpin(ctx.tabId, m.url);
      const pinned = pin === undefined ? undefined : this.timings.pageLoad(pin.loadId)?.load;
      // Its load is no longer kept (dropped as the oldest, or a private tab's, closed): the record goes with it.
      if (pin !== undefined && pinned === undefined) return;
      const earlier = pinned !== undefined && pinned.id !== this.timings.currentLoadId(ctx.tabId) ? pinned : undefined;
      this.timings.add({
        id: m.id, tabId: ctx.tabId, pageUrl: earlier?.url ?? ctx.pageUrl, url: m.url, method: m.method, resourceType,
        priority: m.priority ?? "Medium", requestHeaders: (m.request_headers ?? []).map(([k, v]) => [k, v]), batchId: null,
        pausedAt: this.now(), answeredAt: null, outcome: "pending", reason: null, detail: null, status: null, bodyBytes: 0, timing: null,
        privateBrowsing: ctx.page.private_browsing === true,
      }, pin?.loadId);
      if (pin !== undefined) setNewest(this.recordOfRequest, pin.requestId, m.id, REQUEST_IDS);
      const early = this.takeEarly(ctx.tabId, m.url);
      if (early) this.timings.update(m.id, { status: early.status, answeredAt: early.at });
    } else if (m.type === "error" && m.id !== undefined) {
      const record = this.timings.get(m.id);
      if (!record || record.outcome !== "pending") return;
      // Firefox itself dropped the request (a CORS failure, the page went away): nothing was passed to it; the
      // helper's timing follows and settles the record, as it does when the response was complete first.
      if (m.code === "cancelled") {
        this.timings.update(m.id, { detail: "cancelled by Firefox" });
        return;
      }
      // The helper closed the proxy connection unanswered: Firefox fetched it directly.
      const reason: PassReason = m.code === "blocked_address" ? "blocked_address" : m.code === "timeout" ? "timeout" : "helper_error";
      this.timings.update(m.id, { outcome: "passed", reason, detail: m.message, answeredAt: this.now() });
      if (this.ofCurrentLoad(record)) this.counters.passed(record.tabId, reason);
    } else if (m.type === "timing") {
      const record = this.timings.get(m.id);
      if (!record) return;
      const fulfilled = record.outcome === "pending";
      // The body as the page has it (decoded, as Chromium's records and HAR's content.size count it); the wire
      // size (head and coded body) stays in the timing. A helper that does not say falls back on the wire size.
      const response = m.response;
      const body = response ? (response.decoded_body_bytes ?? response.body_bytes) : (m.wire_bytes ?? 0);
      this.timings.update(m.id, {
        // Answered when Firefox completed it (onCompleted), else when the helper wrote the last byte to Firefox's
        // connection: not when this report crossed the native port, which is no part of the delivery in proxy mode.
        timing: m, outcome: fulfilled ? "fulfilled" : record.outcome, answeredAt: record.answeredAt ?? m.timing.last_byte ?? this.now(),
        // Seen when the helper queued it: the proxied report crossed the native port after that.
        pausedAt: Math.min(record.pausedAt, m.timing.queued),
        bodyBytes: body,
        ...(record.status === null && response ? { status: response.status } : {}),
      });
      if (fulfilled && this.ofCurrentLoad(record)) this.counters.accelerated(record.tabId, m.wire_bytes ?? 0);
    }
  }

  /** proxy.onRequest is routing a request of the tab (not its top-level document, whose routing begins a load): the
   * load current now is the one its report is filed under. Call the returned function once it is routed to the
   * helper (the route may wait for the context's listener; the load is the one current when it was asked). */
  pin(tabId: number, url: string, requestId: string): () => void {
    const loadId = this.timings.currentLoadId(tabId);
    if (loadId === undefined) return () => undefined;
    return () => {
      const key = `${tabId} ${url}`;
      const pins = this.pins.get(key) ?? [];
      pins.push({ requestId, loadId });
      if (pins.length > PINS_PER_URL) pins.shift();
      setNewest(this.pins, key, pins, PINNED_URLS);
    };
  }

  /** The router sent a request of an enabled site's page direct (step-aside): a passed record, counted. */
  passed(tabId: number, pageUrl: string, request: BrowserRequest, reason: PassReason, detail: string): void {
    this.direct.passed(tabId, pageUrl, request, reason, detail);
  }

  /** webRequest.onResponseStarted / onCompleted / onErrorOccurred of any request: the browser's own view of the
   * ones Firefox fetched itself (start, first byte, end, status, address); true if it was one of them. */
  firefoxEvent(event: "started" | "completed" | "failed", e: FirefoxResponse): boolean {
    // A routed request Firefox dropped unreported (the page went away first) takes its pin with it.
    if (event === "failed") this.dropPin(e.requestId);
    return this.direct.event(event, e);
  }

  /** Firefox completed a response (webRequest.onCompleted, at `at` ms since the epoch): the status of the tab's
   * newest record of that URL still without one (the helper's reports carry no status; the browser saw it either
   * way), and for one the helper answered, when Firefox had all of it. Only the tab's current page load's: a request
   * an earlier load left unanswered (the page reloaded while loading) is not the one that completed. */
  completed(tabId: number, url: string, status: number, at: number | null = null, requestId?: string): void {
    const pin = requestId === undefined ? undefined : this.pins.get(`${tabId} ${url}`)?.find((p) => p.requestId === requestId);
    if (pin !== undefined) pin.completedAt = this.now();
    // A request whose report named Firefox's id of it: its own record, whichever load it is filed under.
    const own = requestId === undefined ? undefined : this.recordOfRequest.get(requestId);
    const record = own === undefined ? undefined : this.timings.get(own);
    if (record !== undefined && requestId !== undefined) {
      this.recordOfRequest.delete(requestId);
      if (record.url === url && record.status === null) {
        this.timings.update(record.id, record.outcome === "passed" || at === null ? { status } : { status, answeredAt: at });
        return;
      }
    }
    const current = this.timings.pageLoads(tabId)[0];
    const records = current === undefined ? [] : (this.timings.pageLoad(current.id)?.records ?? []);
    for (let i = records.length - 1; i >= 0; i--) {
      const r = records[i];
      if (r && r.url === url && r.status === null) {
        this.timings.update(r.id, r.outcome === "passed" || at === null ? { status } : { status, answeredAt: at });
        return;
      }
    }
    // The native port and Firefox's events race: the report may still be on its way.
    setNewest(this.early, `${tabId} ${url}`, { status, at, heardAt: this.now() }, EARLY_LIMIT);
  }

  /** Whether the record is of its tab's current load (only those count in the tab's counters: the popup's page). */
  private ofCurrentLoad(record: { tabId: number; pageLoadId: string }): boolean {
    return record.pageLoadId === this.timings.currentLoadId(record.tabId);
  }

  private unpin(tabId: number, url: string): Pin | undefined {
    const key = `${tabId} ${url}`;
    const pins = this.pins.get(key);
    // Completed long ago with no report: Firefox fetched it directly (failover), its pin is no later report's.
    while (pins?.[0]?.completedAt !== undefined && this.now() - pins[0].completedAt > EARLY_MS) pins.shift();
    const pin = pins?.shift();
    if (pins?.length === 0) this.pins.delete(key);
    return pin;
  }

  private dropPin(requestId: string): void {
    for (const [key, pins] of this.pins) {
      const at = pins.findIndex((p) => p.requestId === requestId);
      if (at === -1) continue;
      pins.splice(at, 1);
      if (pins.length === 0) this.pins.delete(key);
      return;
    }
  }

  private takeEarly(tabId: number, url: string): { status: number; at: number | null } | null {
    const key = `${tabId} ${url}`;
    const early = this.early.get(key);
    if (early === undefined) return null;
    this.early.delete(key);
    return this.now() - early.heardAt <= EARLY_MS ? early : null;
  }
}
