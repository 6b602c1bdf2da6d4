// Per-request records of recent page loads (what lanefetch did, the helper's timing, and what the browser itself saw
// of each request), kept small and in memory; the timing panel reads them. Bounded: the newest page loads only. A
// tab of a private window keeps its loads only while it is open (the browser forgets its pages when it closes; its
// records hold URLs and header fields, cookies among them).
import type { PageReport, Timing } from "../generated/protocol.js";
import type { PassReason } from "../intercept/pass-reason.js";
import { withoutFragment } from "../intercept/origin-of.js";
import type { BrowserTiming } from "./browser-timing.js";
import { setNewest } from "../bounded-map.js";

export interface RequestRecord {
  id: string;
  tabId: number;
  /** The page load this request belongs to (the tab's newest when it was seen). */
  pageLoadId: string;
  pageUrl: string;
  url: string;
  method: string;
  resourceType: string;
  priority: string;
  /** The browser's own id of the request (CDP Network requestId), to join what the browser saw. */
  networkId: string | null;
  requestHeaders: [string, string][];
  batchId: string | null;
  /** When lanefetch saw the request (ms since the epoch). */
  pausedAt: number;
  /** When the browser got its answer. */
  answeredAt: number | null;
  outcome: "pending" | "fulfilled" | "passed";
  reason: PassReason | null;
  detail: string | null;
  status: number | null;
  bodyBytes: number;
  /** The helper's timing message, when it took the request. */
  timing: Timing | null;
  /** The browser's own view of the request, when known. */
  browser: BrowserTiming | null;
}

export type NewRecord = Omit<RequestRecord, "pageLoadId" | "browser" | "networkId" | "requestHeaders"> &
  Partial<Pick<RequestRecord, "networkId" | "requestHeaders">> & {
    /** The request is a private window's: its tab's loads are forgotten when it closes, also where this request
     * begins the tab's first load (no navigation was seen: the site turned on after the page loaded, the
     * background started again). */
    privateBrowsing?: boolean;
  };

/**
 * One page load of a tab: what the timing pages list as one entry. Its identity is explicit: the top-level document
 * request that began it (`documentRequest`, the browser's own id of it) and when it began. A later top-level
 * document of the tab is another load even where the background did not say a new page started (its navigation
 * bookkeeping merges a navigation with the document request it expects, by URL): one with another request id, or
 * one asked for after this load's load event. Two loads of one URL, one left to the browser and one through the
 * helper 3 s later, are two entries, never one.
 */
export interface PageLoad {
  id: string;
  tabId: number;
  /** The page's URL: its top-level document's, after that document's redirects. */
  url: string;
  title: string;
  startedAt: number;
  /** The browser's id of the top-level document request (CDP requestId, webRequest requestId) once recorded. */
  documentRequest: string | null;
  /** DOMContentLoaded and load of the top-level document (ms since the epoch), once they happened. */
  contentLoadedAt: number | null;
  loadedAt: number | null;
  requests: number;
  /** What the helper's prefetch flight did for this load (its page_report, which comes when the load ended); null
   *  until then, and for a load the helper had no flight for. */
  flight: PageFlight | null;
  /** Grows with every change of the load or its records: viewers re-render only when it moved. */
  version: number;
}

/** A page's prefetch flight as the helper reported it (docs/prefetch.md). */
export interface PageFlight {
  sent: number;
  answered: number;
  claimedBytes: number;
  /** Prefetched bytes no request of the page took: never asked for. */
  wastedBytes: number;
}

/** The flight of a helper's page_report; null when the load had none. */
export function flightOf(report: PageReport): PageFlight | null {
  if (!report.flight) return null;
  return { sent: report.sent ?? 0, answered: report.answered ?? 0, claimedBytes: report.claimed_bytes ?? 0, wastedBytes: report.wasted_bytes ?? 0 };
}

export interface PageLoadData {
  load: PageLoad;
  records: RequestRecord[];
}

interface Bucket {
  load: PageLoad;
  records: Map<string, RequestRecord>;
}

export interface StoreLimits {
  pageLoads: number;
  recordsPerLoad: number;
}

export const DEFAULT_STORE_LIMITS: StoreLimits = { pageLoads: 30, recordsPerLoad: 3000 };

/** The request of the page's own top-level document (not a frame's, not a fetch of the page's URL). */
export function isTopDocument(r: Pick<NewRecord, "resourceType" | "url" | "pageUrl">): boolean {
  return r.resourceType.toLowerCase() === "document" && withoutFragment(r.url) === withoutFragment(r.pageUrl);
}

/** Whether this record's top-level document is another navigation than the one `load` is of (see PageLoad). */
export function beginsAnotherLoad(load: PageLoad, fresh: NewRecord): boolean {
  if (!isTopDocument(fresh)) return false;
  // The same request id is the same navigation (a redirect keeps it); another id is another navigation.
  if (load.documentRequest !== null && fresh.networkId) return load.documentRequest !== fresh.networkId;
  // Without ids to compare: a document asked for after the load event is the next load (the page's own entries,
  // listed after its load, began before it).
  return load.loadedAt !== null && fresh.pausedAt > load.loadedAt;
}

function joinKey(networkId: string, url: string): string {
  return `${networkId} ${withoutFragment(url)}`;
}

export class TimingStore {
  private readonly loads = new Map<string, Bucket>();
  private readonly current = new Map<number, string>();
  private readonly loadOfRecord = new Map<string, string>();
  private readonly recordOfNetwork = new Map<string, string>();
  /** Browser timings that arrived before their record (bounded), with the tab whose session reported them. */
  private readonly early = new Map<string, { tabId: number; timing: BrowserTiming }>();
  private loadCounter = 0;
  /** Tabs of private windows (incognito) with loads here, until they close. */
  private readonly privateTabs = new Set<number>();

  constructor(private readonly limits: StoreLimits = DEFAULT_STORE_LIMITS) {}

  /** A new top-level page started loading in the tab (`privateBrowsing`: the tab is a private window's). */
  /** A page load of the tab begins, its document's request named by `documentRequest` where the caller knows it
   * (Firefox's requestId): that request heard again at another URL is its redirect, the same load (of the page it
   * ends at), not a new one. */
  newPage(tabId: number, url: string, at: number = Date.now(), privateBrowsing = false, documentRequest: string | null = null): PageLoad {
    const current = this.currentBucket(tabId)?.load;
    if (documentRequest !== null && current?.documentRequest === documentRequest) {
      current.url = url;
      current.version += 1;
      return current;
    }
    if (privateBrowsing) this.privateTabs.add(tabId);
    this.loadCounter += 1;
    const load: PageLoad = {
      id: `p${this.loadCounter}`, tabId, url, title: "", startedAt: at, documentRequest, contentLoadedAt: null, loadedAt: null,
      requests: 0, flight: null, version: 0,
    };
    this.loads.set(load.id, { load, records: new Map() });
    this.current.set(tabId, load.id);
    while (this.loads.size > this.limits.pageLoads) {
      const oldest = this.loads.keys().next().value;
      if (oldest === undefined) break;
      this.dropLoad(oldest);
    }
    return load;
  }

  /** The tab's top-level document reached DOMContentLoaded / load (only for the tab's newest load of that URL).
   * webNavigation names the committed URL with its fragment, which a load begun from CDP Network's URL lacks. */
  pageEvent(tabId: number, url: string, event: "contentLoaded" | "loaded", at: number, title?: string): void {
    const current = this.currentBucket(tabId)?.load;
    if (!current || withoutFragment(current.url) !== withoutFragment(url)) return;
    // The event heard again with the title read for it (chrome.tabs.get answers later): where an earlier load of the
    // tab already has it at that very time, it is that load's, and the current one began meanwhile (a page that
    // reloads itself from its load handler); its time would put the current load's load event before its start.
    const field = event === "contentLoaded" ? "contentLoadedAt" : "loadedAt";
    const load = this.earlierLoadWith(current, field, at) ?? current;
    load[field] = at;
    if (title !== undefined) load.title = title;
    load.version += 1;
  }

  /** A request of the tab's current page load; `into`: of that load instead (one the tab may have left since: a
   * listing read while the page went on), kept only while that load is. */
  add(added: NewRecord, into?: string): RequestRecord {
    const { privateBrowsing = false, ...fresh } = added;
    if (privateBrowsing) this.privateTabs.add(fresh.tabId);
    let bucket = into === undefined ? this.currentBucket(fresh.tabId) : this.loads.get(into);
    if (into === undefined && (!bucket || beginsAnotherLoad(bucket.load, fresh))) {
      bucket = this.loads.get(this.newPage(fresh.tabId, fresh.pageUrl, fresh.pausedAt).id);
    }
    if (!bucket) {
      if (into === undefined) throw new Error("page load vanished");
      return { ...fresh, pageLoadId: into, networkId: fresh.networkId ?? null, requestHeaders: fresh.requestHeaders ?? [], browser: null };
    }
    if (isTopDocument(fresh) && bucket.load.documentRequest === null && fresh.networkId) bucket.load.documentRequest = fresh.networkId;
    // The load's own document redirected (the same request id at another URL): the load is of the page it ends at,
    // which is the URL its DOMContentLoaded and load events name.
    if (isTopDocument(fresh) && fresh.networkId && fresh.networkId === bucket.load.documentRequest) bucket.load.url = fresh.url;
    const record: RequestRecord = {
      ...fresh, pageLoadId: bucket.load.id, networkId: fresh.networkId ?? null, requestHeaders: fresh.requestHeaders ?? [], browser: null,
    };
    if (bucket.records.size >= this.limits.recordsPerLoad) return record;
    bucket.records.set(record.id, record);
    bucket.load.requests = bucket.records.size;
    bucket.load.version += 1;
    this.loadOfRecord.set(record.id, bucket.load.id);
    if (record.networkId !== null) {
      const key = joinKey(record.networkId, record.url);
      this.recordOfNetwork.set(key, record.id);
      const early = this.early.get(key);
      if (early) {
        record.browser = early.timing;
        this.early.delete(key);
      }
    }
    return record;
  }

  update(id: string, change: Partial<Omit<RequestRecord, "id">>): RequestRecord | undefined {
    const bucket = this.bucketOf(id);
    const record = bucket?.records.get(id);
    if (!bucket || !record) return undefined;
    Object.assign(record, change);
    bucket.load.version += 1;
    return record;
  }

  /** What the browser saw of a request (joined by its network id and URL); false if no record has it (yet).
   * `tabId`: the tab whose session reported it. */
  browserTiming(networkId: string, url: string, timing: BrowserTiming, tabId = -1): boolean {
    const key = joinKey(networkId, url);
    const id = this.recordOfNetwork.get(key);
    if (id !== undefined && this.update(id, { browser: timing })) return true;
    setNewest(this.early, key, { tabId, timing }, 1000);
    return false;
  }

  /** A helper's page_report (sent when it ended a page load): its flight, if it had one, filed under the load of
   * the load's first request; false where there is nothing to file or no load has that request. */
  pageReport(report: PageReport): boolean {
    const flight = flightOf(report);
    return flight !== null && report.request !== undefined && this.flightReport(report.request, flight);
  }

  /** The helper's report of a load's flight, filed under the load of its first request; false if no load has it. */
  flightReport(requestId: string, flight: PageFlight): boolean {
    const bucket = this.bucketOf(requestId);
    if (!bucket) return false;
    bucket.load.flight = { ...flight };
    bucket.load.version += 1;
    return true;
  }

  /** The tab's load whose top-level document is the browser's request `documentRequest` (in Chromium also the
   * loaderId of that document's requests), if one is kept. */
  loadWithDocument(tabId: number, documentRequest: string): PageLoad | undefined {
    for (const { load } of this.loads.values()) if (load.tabId === tabId && load.documentRequest === documentRequest) return { ...load };
    return undefined;
  }

  /** The id of the tab's current (newest) page load. */
  currentLoadId(tabId: number): string | undefined {
    return this.current.get(tabId);
  }

  get(id: string): RequestRecord | undefined {
    return this.bucketOf(id)?.records.get(id);
  }

  forTab(tabId: number, pageUrl?: string): RequestRecord[] {
    const out: RequestRecord[] = [];
    for (const { load, records } of this.loads.values()) {
      if (load.tabId !== tabId) continue;
      for (const r of records.values()) if (pageUrl === undefined || r.pageUrl === pageUrl) out.push(r);
    }
    return out;
  }

  forBatch(batchId: string): RequestRecord[] {
    const out: RequestRecord[] = [];
    for (const { records } of this.loads.values()) for (const r of records.values()) if (r.batchId === batchId) out.push(r);
    return out;
  }

  /** Recent page loads, newest first (optionally of one tab). */
  pageLoads(tabId?: number): PageLoad[] {
    return [...this.loads.values()].map((b) => ({ ...b.load })).filter((l) => tabId === undefined || l.tabId === tabId).reverse();
  }

  pageLoad(id: string): PageLoadData | null {
    const bucket = this.loads.get(id);
    return bucket ? { load: { ...bucket.load }, records: [...bucket.records.values()] } : null;
  }

  /** The tab closed: a private window's tab's loads are forgotten with it; another tab's stay among the recent. */
  tabClosed(tabId: number): void {
    if (!this.privateTabs.delete(tabId)) return;
    for (const { load } of [...this.loads.values()]) if (load.tabId === tabId) this.dropLoad(load.id);
    for (const [key, early] of [...this.early]) if (early.tabId === tabId) this.early.delete(key);
  }

  get size(): number {
    return this.loadOfRecord.size;
  }

  /** An earlier load of `current`'s tab and page whose `field` is `at` exactly. */
  private earlierLoadWith(current: PageLoad, field: "contentLoadedAt" | "loadedAt", at: number): PageLoad | undefined {
    for (const { load } of this.loads.values()) {
      if (load !== current && load.tabId === current.tabId && load[field] === at && withoutFragment(load.url) === withoutFragment(current.url)) {
        return load;
      }
    }
    return undefined;
  }

  private currentBucket(tabId: number): Bucket | undefined {
    const id = this.current.get(tabId);
    return id === undefined ? undefined : this.loads.get(id);
  }

  private bucketOf(recordId: string): Bucket | undefined {
    const loadId = this.loadOfRecord.get(recordId);
    return loadId === undefined ? undefined : this.loads.get(loadId);
  }

  private dropLoad(id: string): void {
    const bucket = this.loads.get(id);
    if (!bucket) return;
    this.loads.delete(id);
    for (const r of bucket.records.values()) {
      this.loadOfRecord.delete(r.id);
      if (r.networkId !== null) this.recordOfNetwork.delete(joinKey(r.networkId, r.url));
    }
    if (this.current.get(bucket.load.tabId) === id) this.current.delete(bucket.load.tabId);
  }
}
