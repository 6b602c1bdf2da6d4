// Chromium: accelerated tabs whose top-level host is known fast are left to the browser (tab-mode.ts says why and
// when); this runs the switches on the tab's debugger session and lists the requests the browser then fetches
// without lanefetch seeing them paused: from CDP Network events while Network is still on, and from the page's own
// Resource Timing once it loaded (resource-timing.ts), merged into the records of that page load.
import type { DebuggerSessions } from "../intercept/debugger-sessions.js";
import { hostOf, type OriginLatency } from "../intercept/origin-latency.js";
import { stepAsideDetail } from "../intercept/step-aside.js";
import { TabModes, type TabCommand } from "../intercept/tab-mode.js";
import type { BrowserTiming } from "../timings/browser-timing.js";
import type { SeenRequest } from "../timings/cdp-network-log.js";
import { browserTimingOf, readResourceTiming, resourceTypeOf, type ResourceEntry } from "../timings/resource-timing.js";
import type { TabCounters } from "../timings/tab-counters.js";
import type { RequestRecord, TimingStore } from "../timings/timing-store.js";

export interface FastTabsContext {
  sessions: DebuggerSessions;
  latency: OriginLatency;
  /** The step-aside threshold in force (null: never step aside). */
  threshold(): number | null;
  counters: TabCounters;
  timings: TimingStore;
  /** The URL of the tab's top-level page. */
  pageUrl(tabId: number): string;
  /** A top-level page load begins (the same `key` twice: the same load). */
  startPage(tabId: number, url: string, key: string): void;
  /** Requests of the tab wait for the helper or are with it. */
  helperBusy(tabId: number): boolean;
}

/** Waiting for the helper to answer a tab's requests before leaving the tab to the browser: at most 10 s. */
const IDLE_POLL_MS = 10;
const IDLE_POLLS = 1000;

export class FastTabs {
  private readonly modes = new TabModes();
  /** Per tab, the switches still being sent (one at a time, in order). */
  private readonly queues = new Map<number, Promise<void>>();
  private unpaused = 0;
  private listed = 0;

  constructor(private readonly ctx: FastTabsContext) {}

  /** The tab's session was attached (Fetch and Network on). */
  attached(tabId: number, url: string): void {
    this.modes.attached(tabId, url);
  }

  forget(tabId: number): void {
    this.modes.forget(tabId);
  }

  isBrowser(tabId: number): boolean {
    return this.modes.isBrowser(tabId);
  }

  /** A top-level navigation of an attached tab to a page of an active site starts (webNavigation.onBeforeNavigate). */
  navigating(tabId: number, url: string): Promise<void> {
    const commands = this.modes.navigating(tabId, url, this.isFast(url));
    // The document may already be on its way unpaused: the page load begins now (its paused document joins it).
    if (commands.length > 0 || this.modes.isBrowser(tabId)) this.ctx.startPage(tabId, url, `nav:${url}`);
    return this.run(tabId, commands);
  }

  /** An origin's RTT was observed: tabs showing it go to the browser if it is fast, once the helper answered what
   * it already took of them (Fetch.disable would hand those to the browser a second time). */
  async learned(origin: string): Promise<void> {
    if (!this.isFast(origin)) return;
    const host = hostOf(origin);
    await Promise.all(this.modes.tabsOf(host).map(async (tabId) => {
      for (let i = 0; i < IDLE_POLLS && this.ctx.helperBusy(tabId); i++) await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
      if (this.modes.host(tabId) === host) await this.run(tabId, this.modes.originFast(tabId));
    }));
  }

  /** The tab's top-level page finished loading (webNavigation.onCompleted). */
  loaded(tabId: number): Promise<void> {
    return this.run(tabId, this.modes.loaded(tabId));
  }

  /** A tab the gate let through without the debugger (its host is fast) finished loading: its requests are listed
   * from the page's Resource Timing, as for an attached tab left to the browser. */
  listUnattached(tabId: number): Promise<void> {
    return this.list(tabId);
  }

  /** A CDP Network event of an attached tab: in a browser tab, a top-level document request starts its page load. */
  networkEvent(tabId: number, sessionId: string | undefined, method: string, params: unknown): void {
    if (sessionId !== undefined || method !== "Network.requestWillBeSent" || !this.modes.isBrowser(tabId)) return;
    const e = params as { requestId: string; loaderId: string; frameId?: string; type?: string; request: { url: string } };
    if (e.type === "Document" && e.requestId === e.loaderId && e.frameId === this.ctx.sessions.mainFrameId(tabId)) {
      this.ctx.startPage(tabId, e.request.url, e.requestId);
    }
  }

  /** A request the browser finished that no record joined (it was never paused): listed if the tab is a browser tab. */
  unpausedFinished(networkId: string, url: string, timing: BrowserTiming, request: SeenRequest): void {
    const tabId = request.tabId;
    if (!this.modes.isBrowser(tabId)) return;
    this.unpaused += 1;
    this.ctx.timings.add({
      id: `nb${this.unpaused}`, tabId, pageUrl: this.ctx.pageUrl(tabId), url, method: request.method, resourceType: request.type,
      priority: request.priority, networkId, requestHeaders: request.headers, batchId: null, pausedAt: timing.start,
      answeredAt: timing.start, outcome: "passed", reason: "low_latency", detail: this.detail(tabId), status: timing.status,
      bodyBytes: 0, timing: null,
    });
    this.ctx.counters.passed(tabId, "low_latency");
  }

  /** Whether requests to url's host step aside (its round trip is known and below the threshold in force). */
  isFast(url: string): boolean {
    return stepAsideDetail(this.ctx.latency, url, this.ctx.threshold()) !== null;
  }

  private detail(tabId: number, fromPage = false): string {
    const host = hostOf(this.ctx.pageUrl(tabId));
    const rtt = this.ctx.latency.hostRttMs(host);
    // What the panel cannot show for these, said where the record is read.
    const precision = fromPage ? "; timing from the page's Resource Timing (method not known; a cross-origin request without Timing-Allow-Origin shows no phases or status)" : "";
    return `tab left to the browser, its page's host is fast${rtt === null ? "" : ` (round trip to ${host} ~${rtt.toFixed(1)} ms)`}${precision}`;
  }

  private run(tabId: number, commands: TabCommand[]): Promise<void> {
    if (commands.length === 0) return this.queues.get(tabId) ?? Promise.resolve();
    const next = (this.queues.get(tabId) ?? Promise.resolve()).then(async () => {
      for (const c of commands) await this.apply(tabId, c);
    });
    this.queues.set(tabId, next);
    return next;
  }

  private async apply(tabId: number, command: TabCommand): Promise<void> {
    const { sessions } = this.ctx;
    switch (command) {
      case "fetch_on": return sessions.setFetch(tabId, true);
      case "fetch_off": return sessions.setFetch(tabId, false);
      case "network_on": return sessions.setNetwork(tabId, true);
      case "network_off": return sessions.setNetwork(tabId, false);
      case "list": return this.list(tabId);
    }
  }

  /** The loaded page's Resource Timing (every frame) into the records of its page load: a request already recorded
   * (paused, or seen by CDP Network) gets the browser's timing if it has none, the others are added as passed. */
  private async list(tabId: number): Promise<void> {
    let frames: chrome.scripting.InjectionResult<ResourceEntry[]>[];
    try {
      frames = await chrome.scripting.executeScript({ target: { tabId, allFrames: true }, func: readResourceTiming });
    } catch {
      return; // the tab closed or shows a page no extension may read
    }
    const pageUrl = this.ctx.pageUrl(tabId);
    const newest = this.ctx.timings.pageLoads(tabId)[0];
    const load = newest && newest.url.split("#")[0] === pageUrl.split("#")[0] ? this.ctx.timings.pageLoad(newest.id) : null;
    if (!load) return;
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
          pausedAt: e.start, answeredAt: e.start, outcome: "passed", reason: "low_latency", detail: this.detail(tabId, true),
          status: timing.status, bodyBytes: 0, timing: null,
        });
        this.ctx.timings.update(id, { browser: timing });
        this.ctx.counters.passed(tabId, "low_latency");
      }
    }
  }
}
