// Chromium: the records of tabs left to the browser (tab-policy.ts says which and when): the requests the browser
// fetches without lanefetch seeing them paused, listed from CDP Network events while Network is still on, and from
// the page's own Resource Timing once it loaded (resource-timing.ts), merged into the records of that page load.
// A request's load is its document's: CDP names that document by loaderId (a document's own request id). The top
// document's is a page load's `documentRequest`; a frame's document is remembered here with the page load current
// when the frame asked for it, so a frame's requests finishing after the tab moved on stay with the load their frame
// was part of (they were filed under the top document's current load, the next page's, and counted in its counters).
import type { DebuggerSessions } from "../intercept/debugger-sessions.js";
import { hostOf, type HostSpeed } from "../intercept/host-speed.js";
import type { BrowserTiming } from "../timings/browser-timing.js";
import type { SeenRequest } from "../timings/cdp-network-log.js";
import { browserTimingOf, readResourceTiming, resourceTypeOf, type ResourceEntry } from "../timings/resource-timing.js";
import type { TabCounters } from "../timings/tab-counters.js";
import type { RequestRecord, TimingStore } from "../timings/timing-store.js";
import { setNewest } from "../bounded-map.js";

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

/** Frame documents remembered (the newest), with their page loads: enough for the frames of the kept loads. */
const FRAME_DOCUMENTS = 2000;

export class BrowserTabRecords {
  private unpaused = 0;
  private listed = 0;
  /** The page load of each frame document, by `${tabId} ${loaderId}` (the document's own request id). */
  private readonly frameLoads = new Map<string, string>();

  constructor(private readonly ctx: BrowserTabContext) {}

  /** A CDP Network event of an attached tab: in a browser tab, a top-level document request starts its page load,
   * and a frame's document request (any session's: an out-of-process frame's too) is of the load current now. */
  networkEvent(tabId: number, sessionId: string | undefined, method: string, params: unknown): void {
    if (method !== "Network.requestWillBeSent" || !this.ctx.attachedButLeft(tabId)) return;
    const e = params as { requestId: string; loaderId: string; frameId?: string; type?: string; request: { url: string } };
    const main = this.ctx.sessions.mainFrameId(tabId);
    // Without the main frame's id, a frame cannot be told from the top document (whose requests would go to the load
    // before the one it begins).
    if (e.type !== "Document" || e.requestId !== e.loaderId || e.frameId === undefined || main === undefined) return;
    if (e.frameId === main) {
      if (sessionId === undefined) this.ctx.startPage(tabId, e.request.url, e.requestId);
      return;
    }
    const key = `${tabId} ${e.requestId}`;
    const load = this.ctx.timings.currentLoadId(tabId);
    // A redirect of the frame's document is heard with its request id again: still the load it was asked in.
    if (load !== undefined && !this.frameLoads.has(key)) setNewest(this.frameLoads, key, load, FRAME_DOCUMENTS);
  }

  /** A request the browser finished that no record joined (it was never paused): listed if the tab is a browser tab,
   * under the load whose document made it (the top document's, or a frame document's load). A request of a load the
   * tab has left (it finished after a reload or a navigation began) is that load's, not counted in the current
   * page's counters; one of a frame whose load is no longer kept is dropped with it; one whose loader is no known
   * document (the new load's document not recorded yet, a frame asked for before the tab was watched) is the
   * current load's. */
  unpausedFinished(networkId: string, url: string, timing: BrowserTiming, request: SeenRequest): void {
    const tabId = request.tabId;
    if (!this.ctx.attachedButLeft(tabId)) return;
    this.unpaused += 1;
    const frameLoad = request.loaderId === null ? undefined : this.frameLoads.get(`${tabId} ${request.loaderId}`);
    const ofFrame = frameLoad === undefined ? undefined : this.ctx.timings.pageLoad(frameLoad)?.load;
    if (frameLoad !== undefined && ofFrame === undefined) return;
    const own = ofFrame ?? (request.loaderId === null ? undefined : this.ctx.timings.loadWithDocument(tabId, request.loaderId));
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
