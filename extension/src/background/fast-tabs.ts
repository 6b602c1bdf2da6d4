// Chromium: accelerated tabs whose top-level origin is known fast are left to the browser (tab-mode.ts says why and
// when); this runs the switches on the tab's debugger session and lists the requests the browser then fetches
// without lanefetch seeing them paused: from CDP Network events while Network is still on (the page that was loading
// when the origin turned out fast), from chrome.webRequest events of that tab after.
import type { DebuggerSessions } from "../intercept/debugger-sessions.js";
import { hostOf, type OriginLatency } from "../intercept/origin-latency.js";
import { stepsAside } from "../intercept/step-aside.js";
import { TabModes, type TabCommand } from "../intercept/tab-mode.js";
import type { BrowserTiming } from "../timings/browser-timing.js";
import { BrowserFetchedRecords } from "../timings/browser-fetched.js";
import type { SeenRequest } from "../timings/cdp-network-log.js";
import type { TabCounters } from "../timings/tab-counters.js";
import type { TimingStore } from "../timings/timing-store.js";

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
  /** Requests of the tab CDP Network saw start and not finish. */
  networkPending(tabId: number): number;
}

/** Waiting for the helper to answer a tab's requests before leaving the tab to the browser: at most 10 s. */
const IDLE_POLL_MS = 10;
const IDLE_POLLS = 1000;
/** Before Network goes off, the requests it saw start may finish: at most 5 s. */
const NETWORK_POLLS = 500;

interface Watcher {
  before: (d: chrome.webRequest.OnBeforeRequestDetails) => undefined;
  started: (d: chrome.webRequest.OnResponseStartedDetails) => void;
  completed: (d: chrome.webRequest.OnCompletedDetails) => void;
  failed: (d: chrome.webRequest.OnErrorOccurredDetails) => void;
}

export class FastTabs {
  private readonly modes = new TabModes();
  private readonly records: BrowserFetchedRecords;
  private readonly watchers = new Map<number, Watcher>();
  /** Per tab, the switches still being sent (one at a time, in order). */
  private readonly queues = new Map<number, Promise<void>>();
  private unpaused = 0;

  constructor(private readonly ctx: FastTabsContext) {
    this.records = new BrowserFetchedRecords(ctx.counters, ctx.timings, "wr");
  }

  /** The tab's session was attached (Fetch and Network on). */
  attached(tabId: number, url: string): void {
    this.modes.attached(tabId, url);
  }

  forget(tabId: number): void {
    this.modes.forget(tabId);
    this.unwatch(tabId);
  }

  isBrowser(tabId: number): boolean {
    return this.modes.isBrowser(tabId);
  }

  /** A top-level navigation of an attached tab to a page of an active site starts (webNavigation.onBeforeNavigate). */
  navigating(tabId: number, url: string): Promise<void> {
    const commands = this.modes.navigating(tabId, url, this.isFast(url));
    // The document may already be on its way unpaused: the page load begins now (its paused document joins it).
    if (commands.includes("fetch_on")) this.ctx.startPage(tabId, url, `nav:${url}`);
    return this.run(tabId, commands);
  }

  /** An origin's RTT was observed: tabs showing it go to the browser if it is fast, once the helper answered what
   * it already took of them (Fetch.disable would hand those to the browser a second time). */
  async learned(origin: string): Promise<void> {
    const host = hostOf(origin);
    if (!stepsAside(this.ctx.latency.hostRttMs(host), this.ctx.threshold())) return;
    await Promise.all(this.modes.tabsOf(host).map(async (tabId) => {
      for (let i = 0; i < IDLE_POLLS && this.ctx.helperBusy(tabId); i++) await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
      if (this.modes.host(tabId) === host) await this.run(tabId, this.modes.originFast(tabId));
    }));
  }

  /** The tab's top-level page finished loading (webNavigation.onCompleted). */
  loaded(tabId: number): Promise<void> {
    return this.run(tabId, this.modes.loaded(tabId));
  }

  /** A CDP Network event of an attached tab: in a browser tab, a top-level document request starts its page load
   * (unless webRequest listens already: it starts it then). */
  networkEvent(tabId: number, sessionId: string | undefined, method: string, params: unknown): void {
    if (sessionId !== undefined || method !== "Network.requestWillBeSent" || !this.modes.isBrowser(tabId)) return;
    if (this.watchers.has(tabId)) return;
    const e = params as { requestId: string; loaderId: string; frameId?: string; type?: string; request: { url: string } };
    if (e.type === "Document" && e.requestId === e.loaderId && e.frameId === this.ctx.sessions.mainFrameId(tabId)) {
      this.ctx.startPage(tabId, e.request.url, e.requestId);
    }
  }

  /** A request the browser finished that no record joined (it was never paused): listed if the tab is a browser tab. */
  unpausedFinished(networkId: string, url: string, timing: BrowserTiming, request: SeenRequest): void {
    const tabId = request.tabId;
    if (!this.modes.isBrowser(tabId)) return;
    // While both listen (webRequest on, Network not yet off), webRequest lists what it saw start.
    if (this.watchers.has(tabId) && this.records.claim(tabId, url)) return;
    this.unpaused += 1;
    this.ctx.timings.add({
      id: `nb${this.unpaused}`, tabId, pageUrl: this.ctx.pageUrl(tabId), url, method: request.method, resourceType: request.type,
      priority: request.priority, networkId, requestHeaders: request.headers, batchId: null, pausedAt: timing.start,
      answeredAt: timing.start, outcome: "passed", reason: "low_latency", detail: this.detail(tabId), status: timing.status,
      bodyBytes: 0, timing: null,
    });
    this.ctx.counters.passed(tabId, "low_latency");
  }

  private isFast(url: string): boolean {
    return stepsAside(this.ctx.latency.hostRttMs(hostOf(url)), this.ctx.threshold());
  }

  private detail(tabId: number, webRequest = false): string {
    const host = hostOf(this.ctx.pageUrl(tabId));
    const rtt = this.ctx.latency.hostRttMs(host);
    // What the panel cannot show for these (webRequest has no connection phases), said where the record is read.
    const precision = webRequest ? "; timing from webRequest: start, first byte, end (no DNS/connect/TLS phases)" : "";
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
      case "network_off": {
        // webRequest listens already; what only Network saw start is listed when it finishes.
        for (let i = 0; i < NETWORK_POLLS && this.ctx.networkPending(tabId) > 0; i++) await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
        return sessions.setNetwork(tabId, false);
      }
      case "watch_on": return this.watch(tabId);
      case "watch_off": return this.unwatch(tabId);
    }
  }

  /** webRequest listeners for this tab only (a filter per tab: other tabs' requests never reach this worker). */
  private watch(tabId: number): void {
    if (this.watchers.has(tabId)) return;
    const w: Watcher = {
      before: (d) => {
        if (d.type === "main_frame") this.ctx.startPage(tabId, d.url, `wr${d.requestId}`);
        this.records.passed(tabId, d.type === "main_frame" ? d.url : this.ctx.pageUrl(tabId), d, "low_latency", this.detail(tabId, true), d.timeStamp);
        return undefined;
      },
      started: (d) => void this.records.event("started", d),
      completed: (d) => void this.records.event("completed", d),
      failed: (d) => void this.records.event("failed", d),
    };
    const filter: chrome.webRequest.RequestFilter = { urls: ["<all_urls>"], tabId };
    chrome.webRequest.onBeforeRequest.addListener(w.before, filter);
    chrome.webRequest.onResponseStarted.addListener(w.started, filter);
    chrome.webRequest.onCompleted.addListener(w.completed, filter);
    chrome.webRequest.onErrorOccurred.addListener(w.failed, filter);
    this.watchers.set(tabId, w);
  }

  private unwatch(tabId: number): void {
    const w = this.watchers.get(tabId);
    if (!w) return;
    this.watchers.delete(tabId);
    this.records.forgetTab(tabId);
    chrome.webRequest.onBeforeRequest.removeListener(w.before);
    chrome.webRequest.onResponseStarted.removeListener(w.started);
    chrome.webRequest.onCompleted.removeListener(w.completed);
    chrome.webRequest.onErrorOccurred.removeListener(w.failed);
  }
}

