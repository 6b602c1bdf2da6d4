// Chromium: the records of tabs left to the browser (tab-policy.ts says which and when): the requests the browser
// fetches without lanefetch seeing them paused, listed from CDP Network events while Network is still on, and from
// the page's own Resource Timing once it loaded (resource-timing.ts), merged into the records of that page load.
import type { DebuggerSessions } from "../intercept/debugger-sessions.js";
import { hostOf, type HostSpeed } from "../intercept/host-speed.js";
import type { BrowserTiming } from "../timings/browser-timing.js";
import type { SeenRequest } from "../timings/cdp-network-log.js";
import { browserTimingOf, readResourceTiming, resourceTypeOf, type ResourceEntry } from "../timings/resource-timing.js";
import type { TabCounters } from "../timings/tab-counters.js";
import type { RequestRecord, TimingStore } from "../timings/timing-store.js";

export interface BrowserTabContext {
  sessions: DebuggerSessions;
  speed: HostSpeed;
  counters: TabCounters;
  timings: TimingStore;
  /** The URL of the tab's top-level page. */
  pageUrl(tabId: number): string;
  /** A top-level page load begins (the same `key` twice: the same load). */
  startPage(tabId: number, url: string, key: string): void;
  /** The tab is attached but the browser fetches its requests itself (interception off). */
  attachedButLeft(tabId: number): boolean;
}

export class BrowserTabRecords {
  private unpaused = 0;
  private listed = 0;

  constructor(private readonly ctx: BrowserTabContext) {}

  /** A CDP Network event of an attached tab: in a browser tab, a top-level document request starts its page load. */
  networkEvent(tabId: number, sessionId: string | undefined, method: string, params: unknown): void {
    if (sessionId !== undefined || method !== "Network.requestWillBeSent" || !this.ctx.attachedButLeft(tabId)) return;
    const e = params as { requestId: string; loaderId: string; frameId?: string; type?: string; request: { url: string } };
    if (e.type === "Document" && e.requestId === e.loaderId && e.frameId === this.ctx.sessions.mainFrameId(tabId)) {
      this.ctx.startPage(tabId, e.request.url, e.requestId);
    }
  }

  /** A request the browser finished that no record joined (it was never paused): listed if the tab is a browser tab,
   * under the load whose document made it. A request of a load the tab has left (it finished after a reload or a
   * navigation to the same URL began) is that load's, not counted in the current page's counters; one whose
   * loader is no kept load's document (a frame's, or the new load's document not recorded yet) is the current load's. */
  unpausedFinished(networkId: string, url: string, timing: BrowserTiming, request: SeenRequest): void {
    const tabId = request.tabId;
    if (!this.ctx.attachedButLeft(tabId)) return;
    this.unpaused += 1;
    const own = request.loaderId === null ? undefined : this.ctx.timings.loadWithDocument(tabId, request.loaderId);
    const earlier = own !== undefined && own.id !== this.ctx.timings.currentLoadId(tabId) ? own : undefined;
    this.ctx.timings.add({
      id: `nb${this.unpaused}`, tabId, pageUrl: earlier?.url ?? this.ctx.pageUrl(tabId), url, method: request.method,
      resourceType: request.type, priority: request.priority, networkId, requestHeaders: request.headers, batchId: null,
      pausedAt: timing.start, answeredAt: timing.start, outcome: "passed", reason: "low_latency", detail: this.detail(tabId),
      status: timing.status, bodyBytes: 0, timing: null,
    }, earlier?.id);
    if (earlier === undefined) this.ctx.counters.passed(tabId, "low_latency");
  }

  private detail(tabId: number, fromPage = false): string {
    const host = hostOf(this.ctx.pageUrl(tabId));
    const rtt = this.ctx.speed.verdict(host).rttMs;
    // What the panel cannot show for these, said where the record is read.
    const precision = fromPage ? "; timing from the page's Resource Timing (method not known; a cross-origin request without Timing-Allow-Origin shows no phases or status)" : "";
    return `tab left to the browser, its page's host is fast${rtt === null ? "" : ` (round trip to ${host} ~${rtt.toFixed(1)} ms)`}${precision}`;
  }

  /** The loaded page's Resource Timing (every frame) into the records of its page load: a request already recorded
   * (paused, or seen by CDP Network) gets the browser's timing if it has none, the others are added as passed. */
  async list(tabId: number): Promise<void> {
    // The load that ended, named before the read: the page may go on meanwhile (a reload, a link), and the entries
    // read are this load's, never the next one's (nor counted in the next page's counters).
    const pageUrl = this.ctx.pageUrl(tabId);
    const newest = this.ctx.timings.pageLoads(tabId)[0];
    if (!newest || newest.url.split("#")[0] !== pageUrl.split("#")[0]) return;
    const detail = this.detail(tabId, true);
    let frames: chrome.scripting.InjectionResult<ResourceEntry[]>[];
    try {
      frames = await chrome.scripting.executeScript({ target: { tabId, allFrames: true }, func: readResourceTiming });
    } catch {
      return; // the tab closed or shows a page no extension may read
    }
    const load = this.ctx.timings.pageLoad(newest.id);
    if (!load) return;
    const current = this.ctx.timings.pageLoads(tabId)[0]?.id === newest.id;
    const byUrl = new Map<string, RequestRecord[]>();
    for (const r of load.records) {
      const same = byUrl.get(r.url);
      if (same) same.push(r);
      else byUrl.set(r.url, [r]);
    }
    for (const frame of frames) {
      for (const e of frame.result ?? []) {
        // A frame's own document is its parent's "iframe" entry; only the top document comes from "navigation".
        if (e.entryType === "navigation" && frame.frameId !== 0) continue;
        const known = byUrl.get(e.url)?.shift();
        const timing = browserTimingOf(e);
        if (known) {
          if (known.browser === null) this.ctx.timings.update(known.id, { browser: timing, status: known.status ?? timing.status });
          continue;
        }
        this.listed += 1;
        const id = `rt${this.listed}`;
        this.ctx.timings.add({
          id, tabId, pageUrl, url: e.url, method: "GET", resourceType: resourceTypeOf(e), priority: "Medium", batchId: null,
          pausedAt: e.start, answeredAt: e.start, outcome: "passed", reason: "low_latency", detail,
          status: timing.status, bodyBytes: 0, timing: null,
        }, newest.id);
        this.ctx.timings.update(id, { browser: timing });
        if (current) this.ctx.counters.passed(tabId, "low_latency");
      }
    }
  }
}
