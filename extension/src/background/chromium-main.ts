// The Chromium background service worker: wires the site store, the navigation gate, debugger sessions, the
// accelerator (batch → helper → deliver) and the popup API together. Listeners are registered synchronously.
import type { Protocol } from "devtools-protocol";
import { HelperClient } from "../bridge/helper-client.js";
import { DEFAULT_CONNECTION, HelperConnection } from "../bridge/helper-connection.js";
import { connectChromeNative } from "../bridge/chrome-native-port.js";
import type { FetchResponder } from "../deliver/fetch-responder.js";
import { ATTACH_DURATIONS_KEY, attachEstimate, racesAttach, storedAttaches, tooLateToRenavigate, withAttach } from "../intercept/attach-race.js";
import { DebuggerSessions } from "../intercept/debugger-sessions.js";
import { CacheBypassLoads, withBypassFields } from "../intercept/cache-bypass.js";
import type { PausedSource } from "../intercept/embedded-frames.js";
import { FrameDocuments, plainHttpHosts } from "../intercept/plain-http.js";
import { ACCELERATE_FAST_LINKS_KEY, HostSpeed, thresholdFromSettings } from "../intercept/host-speed.js";
import { BLOCKED_BY_GATE, NavigationGate } from "../intercept/navigation-gate.js";
import { PROBE_WAIT_MS, SpeedProbe } from "../intercept/speed-probe.js";
import { INITIAL_POLICY, attachedButLeft, leftToBrowser, reduce, type Speed, type TabCommand, type TabEvent } from "../intercept/tab-policy.js";
import { fromRequestPaused, type PausedRequest } from "../intercept/paused-request.js";
import { OffscreenFieldsProbe } from "../intercept/offscreen-fields-probe.js";
import { NO_PAGE, RequestLoaders, requestPage, samePage, type LoaderSignal, type PausedFrom, type TabPages } from "../intercept/request-page.js";
import { addressSpaceOfUrl } from "../sites/address-space.js";
import { SiteStore } from "../sites/site-store.js";
import { matchingRule, ruleKey, schemefulSite, type SiteRule } from "../sites/site-rule.js";
import { TabCounters } from "../timings/tab-counters.js";
import { TIME_SAVED_MODEL } from "../timings/time-saved-model.js";
import { TimingStore } from "../timings/timing-store.js";
import { CdpNetworkLog } from "../timings/cdp-network-log.js";
import { BrowserMultiplexed } from "../intercept/browser-multiplexed.js";
import { BrowserWarmConnection, WARM_SPAN_RTTS } from "../intercept/browser-warm-connection.js";
import { DocumentArrival } from "../intercept/document-arrival.js";
import { DocumentStreams } from "../intercept/document-stream.js";
import { atMost, NavigationProtocols, NAVIGATION_ENTRY_EXPRESSION, WAIT_AT_MOST_MS } from "../intercept/navigation-protocol.js";
import { answerInterfacesRequest } from "../lanes/interfaces-api.js";
import { SPLIT_LARGE_KEY } from "../lanes/split-rule.js";
import { Accelerator, type HeldRequest, type PageInfo } from "./accelerator.js";
import { BrowserTabRecords } from "./browser-tab-records.js";
import { showBadge } from "./badge.js";
import { ProxyPolicy, watchProxy } from "./proxy-policy.js";
import { CANCELLED_BAR, problemAfterCommit, problemShown } from "./tab-problem.js";
import { answerTimingRequest, isCacheRequest, isPopupRequest, type CacheReply, type StatusReply } from "./popup-api.js";
import { setNewest } from "../bounded-map.js";
import { learned, treatedPrivate, type Incognito } from "../tab-privacy.js";

interface TabInfo {
  url: string;
  /** Whether the tab is a private window's; null until the browser told (tab-privacy.ts: unknown counts as private). */
  incognito: Incognito;
  problem: string | null;
  /** Commits heard (webNavigation.onCommitted, or the URL found at start-up). */
  commits: number;
  /** The loader of the committed page's document, when its commit was the newest load's URL (request-page.ts). */
  committedLoader: string | null;
}

const store = new SiteStore(chrome.storage.local, chrome.storage.session);
const connection = new HelperConnection(() => connectChromeNative(__LANEFETCH_NATIVE_HOST__), {
  ...DEFAULT_CONNECTION,
  extensionVersion: chrome.runtime.getManifest().version,
  browser: "chromium",
});
const client = new HelperClient(connection);
const counters = new TabCounters();
const timings = new TimingStore();
// What a page's prefetch flight did comes when the helper ended that load: filed under the load of its first request.
client.onPageReport((report) => void timings.pageReport(report));
const speed = new HostSpeed();
const accelerator = new Accelerator(speed, client, () => connection.state, counters, timings);
const multiplexed = new BrowserMultiplexed();
accelerator.multiplexed = multiplexed;
const warmConnections = new BrowserWarmConnection();
accelerator.warmConnection = warmConnections;
// Keep the helper: after a crash it comes back at once while a site is on (not with the next page).
connection.onLost(() => {
  setTimeout(() => {
    if (activeRules.length > 0) void connection.ready();
  }, DEFAULT_CONNECTION.retryCrashMs + 50);
});
const gate = new NavigationGate();
const tabs = new Map<number, TabInfo>();
let activeRules: SiteRule[] = [];
let sessionOffRules: SiteRule[] = [];
/** Enabled (and not session-off) rules, whether or not a proxy keeps them inactive. */
let enabledRules: SiteRule[] = [];
const proxy = new ProxyPolicy((blocked) => {
  // At once (a helper's hello can turn it on while requests wait for that hello): nothing more goes to the helper.
  accelerator.blockedBy = blocked ? "proxy_configured" : null;
  if (blocked) activeRules = [];
  void refreshRules().then(() => updateBadges());
});
proxy.follow(connection);
const ready = watchProxy((mode) => proxy.browserMode(mode))
  .catch((e: unknown) => console.warn("lanefetch: cannot read the proxy settings", e))
  .then(() => refreshRules())
  .then(() => startUp());

const networkLog = new CdpNetworkLog(
  (networkId, url, timing, request) => {
    warmConnections.finished(url, timing);
    accelerator.browserFinished(networkId, url, timing.status, timing.responseHeaders);
    if (!timings.browserTiming(networkId, url, timing, request.tabId)) browserTabs.unpausedFinished(networkId, url, timing, request);
  },
  (sample) => void speed.observe(sample),
  (url, protocol) => {
    multiplexed.observe(url, protocol);
    accelerator.browserAnswered(url, protocol);
  },
  (url, timing) => warmConnections.progress(url, timing),
);
// A tab whose attach raced its navigation has no Network events until its page loaded: its document's arrival, which
// may leave the browser's connection warm, comes from webRequest (main frames only: a few events per navigation, where
// listeners on every request cost a page of many small requests ~11 % on a fast link, PERMISSIONS.md).
const documents = new DocumentArrival();
// What its document came over, asked of a racing tab's page (navigation-protocol.ts): h2/h3 leaves the origin's
// requests to the browser's connection, HTTP/1.1 lets the helper's held handshake go on.
const protocols = new NavigationProtocols(async (tabId) => {
  const params: Protocol.Runtime.EvaluateRequest = { expression: NAVIGATION_ENTRY_EXPRESSION, returnByValue: true, silent: true };
  const reply = (await chrome.debugger.sendCommand({ tabId }, "Runtime.evaluate", params)) as Protocol.Runtime.EvaluateResponse;
  return reply.result.value as unknown;
});
const MAIN_FRAMES: chrome.webRequest.RequestFilter = { urls: ["<all_urls>"], types: ["main_frame"] };
chrome.webRequest.onResponseStarted.addListener((d) => {
  if (d.tabId < 0 || !sessions.networkDeferred(d.tabId)) return;
  documents.responseStarted(d);
  void protocols.ask(d.tabId, d.url).then((protocol) => {
    traced(`protocol: ${protocol ?? "unknown"} (asked of the page)`);
    if (protocol === null) return;
    multiplexed.observe(d.url, protocol);
    accelerator.browserAnswered(d.url, protocol);
  });
  const rttMs = speed.verdict(d.url).rttMs;
  if (rttMs === null) return;
  setTimeout(() => {
    const arriving = documents.arriving(d.requestId, Date.now(), rttMs);
    if (arriving !== null) warmConnections.progress(arriving.url, arriving.timing);
  }, WARM_SPAN_RTTS * rttMs);
}, MAIN_FRAMES);
chrome.webRequest.onCompleted.addListener((d) => {
  const done = documents.completed(d, speed.verdict(d.url).rttMs);
  if (done !== null) warmConnections.finished(done.url, done.timing);
}, MAIN_FRAMES);
chrome.webRequest.onErrorOccurred.addListener((d) => {
  const done = documents.failed(d.requestId, d.timeStamp, d.error);
  if (done !== null) warmConnections.finished(done.url, done.timing);
}, MAIN_FRAMES);
// A document the browser loads itself (a page on a private address) is read by the helper as it streams in.
const documentStreams = new DocumentStreams(
  (tabId, method, params) => chrome.debugger.sendCommand({ tabId }, method, params),
  (message) => connection.send(message),
  (id, end, bytes, why) => traced(`document stream ${id}: ${end} after ${bytes} B${why ? ` (${why})` : ""}`),
);
accelerator.streamDocument = (id, held, page, tell) =>
  // The tab's own session's document, whose Network events come (not a tab whose attach raced its navigation)
  held.paused.networkId !== undefined && held.paused.frameId === sessions.mainFrameId(held.tabId) &&
  !sessions.networkDeferred(held.tabId) && documentStreams.start(held.tabId, held.paused.networkId, id, held.paused.url, page, tell);
/** Each frame's newest paused document, whose plain-http host the frame's requests may use (plain-http.ts). */
const frameDocuments = new FrameDocuments();
/** Which document made each request of a tab's own session (Network.requestWillBeSent's loaderId): request-page.ts. */
const loaders = new RequestLoaders();
/** Which loads bypass the cache (a hard reload), from the tab's Page events: intercept/cache-bypass.ts. */
const bypassLoads = new CacheBypassLoads();
const sessions = new DebuggerSessions({
  paused: (tabId, source, event) => onPaused(tabId, source, event),
  navigating: (tabId, event) => bypassLoads.navigationStarted(tabId, event.loaderId, event.navigationType),
  network: (tabId, method, params, sessionId) => {
    if (sessionId === undefined && method === "Network.requestWillBeSent") {
      const e = params as { requestId: string; loaderId?: string };
      loaders.heard(tabId, e.requestId, e.loaderId ?? "");
    }
    browserTabs.networkEvent(tabId, sessionId, method, params);
    // A shared worker's requests are no tab's (debugger-sessions.ts): what the browser fetched for one teaches the
    // host's speed and connections as any, but is listed and counted under no tab left to the browser.
    networkLog.handle(method, params, sessions.workerOf(sessionId) === null ? tabId : chrome.tabs.TAB_ID_NONE);
    if (sessionId === undefined) documentStreams.handle(tabId, method, params);
  },
  detached: (tabId, reason) => void onDetached(tabId, reason),
});
/** Top-level page loads begun, per tab: the key (network request id) and URL of the newest, so that two sources
 * start it once. A load begun at navigation start ("nav:" key, no request id known) is the document's if URLs match.
 * With it, what request-page.ts asks of it: its document's network request id (the loaderId of that document's
 * requests; null when not known) and the tab's commits heard when it began. */
const pageKeys = new Map<number, { key: string; url: string; loader: string | null; commitsBefore: number }>();
function startPage(tabId: number, url: string, key: string, loader: string | null = key.startsWith("nav:") ? null : key): void {
  const current = pageKeys.get(tabId);
  if (current !== undefined && (current.key === key || (samePage(current.url, url) && current.key.startsWith("nav:")))) {
    pageKeys.set(tabId, { key, url, loader, commitsBefore: current.commitsBefore });
    return;
  }
  pageKeys.set(tabId, { key, url, loader, commitsBefore: tabInfo(tabId).commits });
  if (tabInfo(tabId).incognito === null) askPrivacy(tabId);
  timings.newPage(tabId, url, Date.now(), treatedPrivate(tabInfo(tabId).incognito));
}
const browserTabs = new BrowserTabRecords({
  sessions, speed, counters, timings, pageUrl: (tabId) => tabInfo(tabId).url, startPage,
  attachedButLeft: (tabId) => attachedButLeft(policy, tabId),
});

// The tab policy (intercept/tab-policy.ts) decides; what follows turns browser events into its events and runs its
// commands: per tab in order, each awaited (the gate is rewritten before the navigation it lets through); the
// commands that ask for something (attach, probe, await_idle) answer with an event and hold no queue. A page load's
// start is only bookkeeping and runs at once: the document's own network events must find it begun.
let policy = INITIAL_POLICY;
const queues = new Map<number, Promise<void>>();
const GLOBAL_QUEUE = -1;
/** The newest tab events and commands with their epoch ms (a bounded ring): where a gated navigation's time goes.
 * Read by the benchmarks' Chromium driver from the worker (`globalThis.lanefetchTabTrace`), and by a real-browser test
 * to say what happened when a page was not intercepted as it expects; nothing else. */
const tabTrace: [string, number][] = [];
(globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace = tabTrace;
function traced(label: string): void {
  tabTrace.push([label, Date.now()]);
  if (tabTrace.length > 200) tabTrace.splice(0, tabTrace.length - 200);
}
function dispatch(event: TabEvent): Promise<void> {
  traced(`event ${event.type}`);
  const { state, commands } = reduce(policy, event);
  policy = state;
  for (const c of commands) {
    if (c.kind === "page_start") startPage(c.tabId, c.url, `nav:${c.url}`);
    // Noted now, in decision order; written when the tab's queue reaches it (navigation-gate.ts says why).
    if (c.kind === "gate") gate.want(c.rules, c.openTabs, c.allowHosts);
  }
  const key = "tabId" in event ? event.tabId : GLOBAL_QUEUE;
  const next = (queues.get(key) ?? Promise.resolve()).then(async () => {
    for (const command of commands) {
      try {
        traced(`start ${command.kind}`);
        await execute(command);
        traced(`end ${command.kind}`);
      } catch (e) {
        console.warn("lanefetch: tab command failed", command, e);
      }
    }
  });
  queues.set(key, next);
  return next;
}
function speedOf(url: string): Speed {
  return speed.verdict(url).state;
}

// Every sample (and threshold change) of a host: the policy hears its verdict; the end of a verdict the gate lets
// through on (fast, or slow enough to race the attach) is told too.
let expiryTimer: ReturnType<typeof setTimeout> | undefined;
/** The newest attach durations (ms), kept in storage: a browser started again races with what it measured. */
let attachDurations: number[] = [];
function verdictEvent(host: string): TabEvent {
  const v = speed.verdict(host);
  return { type: "verdict", host, speed: v.state, racesAttach: racesAttach(v.rttMs, attachDurations) };
}
speed.onVerdict((host) => {
  void dispatch(verdictEvent(host));
  armExpiry();
});
function armExpiry(): void {
  clearTimeout(expiryTimer);
  const at = speed.nextExpiry([...policy.fastHosts, ...policy.raceHosts]);
  if (at === null) return;
  expiryTimer = setTimeout(() => {
    for (const host of [...policy.fastHosts, ...policy.raceHosts]) void dispatch(verdictEvent(host));
    armExpiry();
  }, Math.max(0, at - Date.now()) + 1);
}
/** An attach had Fetch on after `ms`: kept, and where that moved the estimate every known host's race is decided again. */
function attachTook(ms: number): void {
  const before = attachEstimate(attachDurations);
  attachDurations = withAttach(attachDurations, ms);
  void chrome.storage.local.set({ [ATTACH_DURATIONS_KEY]: attachDurations });
  if (attachEstimate(attachDurations) !== before) decideRaces();
}
function decideRaces(): void {
  for (const host of speed.knownHosts()) void dispatch(verdictEvent(host));
  armExpiry();
}
connection.onStateChange((state) => void dispatch({ type: "helper", up: state.status === "connected" }));

/** How long the fields probe waits for its requests (it needs no network: they are failed as they are paused). */
const FIELDS_PROBE_MS = 5000;
const fieldsProbe = new OffscreenFieldsProbe();
/** Runs of the fields probe for the connected helper: done once one sent its message (a helper that starts keeps
 * nothing); at most FIELDS_PROBE_RUNS that sent nothing. */
let probeRuns = { sent: false, runs: 0 };
const FIELDS_PROBE_RUNS = 3;
connection.onStateChange((state) => {
  if (state.status !== "connected") probeRuns = { sent: false, runs: 0 };
});
/** A helper that just connected knows none of this Chromium's fields until a page's requests teach them, and a first
 * page's first batch comes only after its whole document: its Accept per kind now, when a tab is attached for a
 * navigation (the debugging bar shows then anyway) or an attached tab navigates, so what that document names can
 * fly. */
function probeFields(): void {
  const state = connection.state;
  if (probeRuns.sent || probeRuns.runs >= FIELDS_PROBE_RUNS) return;
  if (state.status !== "connected" || !state.capabilities.includes("browser_fields")) return;
  const runs = probeRuns;
  runs.runs += 1;
  void fieldsProbe.run(crypto.randomUUID(), FIELDS_PROBE_MS).then((fields) => {
    const sent = fields !== null && runs === probeRuns && client.browserFields(fields);
    runs.sent ||= sent;
    // What the probe sent (the real-browser tests wait for it)
    (globalThis as { lanefetchFieldsProbe?: unknown }).lanefetchFieldsProbe = { sent, kinds: fields?.accept.map((a) => a.destination) ?? [] };
  });
}

/** When each racing navigation's flight question was asked (by URL; the newest few). */
const raceStarts = new Map<string, number>();
client.onFlightPlan((url, flight) => {
  const began = raceStarts.get(url);
  raceStarts.delete(url);
  const late = began === undefined || tooLateToRenavigate(Date.now() - began, speed.verdict(url).rttMs);
  void dispatch({ type: "flight_plan", url, flight, late });
});
const probe = new SpeedProbe<PageInfo>(speed, (_url, page) => accelerator.pageStarted(page), PROBE_WAIT_MS.chromium, () => client.acknowledged());
/** Waiting for the helper to answer a tab's requests before leaving the tab to the browser: at most this long. */
const IDLE_WAIT_MS = 10_000;

async function execute(command: TabCommand): Promise<void> {
  switch (command.kind) {
    case "gate":
      return gate.write();
    case "attach":
      return void attachTab(command.tabId, command.loading === true);
    case "detach":
      return releaseTab(command.tabId);
    case "intercept":
      // Fetch first: the new page's subresources must find it on (Network.enable took ~0.25 s under load).
      await sessions.setFetch(command.tabId, command.on);
      // Without Network events a document's stream would never end: cut now
      if (!command.on) documentStreams.tabGone(command.tabId);
      return sessions.setNetwork(command.tabId, command.on);
    case "probe": {
      const { tabId, url } = command;
      // Whether the tab is private (which connections the helper may share), as seen since the worker started; a tab
      // not seen counts as private (asking the browser here takes 10–25 ms).
      const waiting = probe.probe(url, pageInfo(url, tabs.get(tabId)?.incognito ?? null));
      void (waiting ?? Promise.resolve()).then(() => dispatch({ type: "probe_ended", tabId, url, speed: speedOf(url) }));
      return;
    }
    case "preconnect": {
      // Starts the helper if need be (0.5–1.5 s): the queue does not wait for that.
      const { url, tabId } = command;
      if (command.askFlight) {
        setNewest(raceStarts, url, Date.now(), 32);
      }
      void connection.ready().then((up) => {
        if (up && tabId !== null && sessions.isAttached(tabId)) probeFields();
        // tabId null: a site just turned on with no tab showing it, a connection ahead of any page (not a navigation).
        if (up) accelerator.pageStarted(pageInfo(url, tabId === null ? false : tabInfo(tabId).incognito), tabId !== null, command.askFlight === true);
      });
      return;
    }
    case "navigate":
      await chrome.tabs.update(command.tabId, { url: command.url });
      return;
    case "await_idle":
      return void helperIdle(command.tabId).then(() => dispatch({ type: "helper_idle", tabId: command.tabId }));
    case "page_start":
      return; // done in dispatch
    case "list":
      return browserTabs.list(command.tabId);
  }
}

const idleWaiters: { tabId: number; done: () => void }[] = [];
/** Resolves once the helper answered every request it holds of the tab (at most IDLE_WAIT_MS). */
function helperIdle(tabId: number): Promise<void> {
  if (!accelerator.busyFor(tabId)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, IDLE_WAIT_MS);
    idleWaiters.push({ tabId, done: () => (clearTimeout(timer), resolve()) });
  });
}
accelerator.onIdle((tabId) => {
  for (const w of idleWaiters.filter((x) => x.tabId === tabId)) {
    idleWaiters.splice(idleWaiters.indexOf(w), 1);
    w.done();
  }
});
function tabInfo(tabId: number): TabInfo {
  let info = tabs.get(tabId);
  if (!info) {
    info = { url: "", incognito: null, problem: null, commits: 0, committedLoader: null };
    tabs.set(tabId, info);
  }
  return info;
}

/** `incognito` null (not known yet): the page is a private window's (tab-privacy.ts). */
function pageInfo(url: string, incognito: Incognito): PageInfo {
  return {
    url,
    topSite: schemefulSite(url) ?? "",
    siteActive: matchingRule(activeRules, url) !== null,
    addressSpace: addressSpaceOfUrl(url) ?? "public",
    plainHttpHosts: [],
    privateBrowsing: treatedPrivate(incognito),
  };
}

/** Tabs whose private flag is being asked of the browser. */
const askingPrivacy = new Set<number>();
/** A tab's flag found unknown where a page load or a request needed it: asked once (they go on as private, unslowed). */
function askPrivacy(tabId: number): void {
  if (askingPrivacy.has(tabId)) return;
  askingPrivacy.add(tabId);
  traced("privacy: not known where a page or request needed it, asked");
  void chrome.tabs.get(tabId).then((tab) => tab.incognito, () => undefined).then((answer) => {
    askingPrivacy.delete(tabId);
    const info = tabs.get(tabId);
    if (info) info.incognito = learned(info.incognito, answer);
  });
}

/** How long a request of a tab that shows no web page yet waits for its document's loaderId (request-page.ts):
 * Network.requestWillBeSent came ~2 ms after the pause where it came after. */
const LOADER_WAIT_MS = 100;

/** What request-page.ts is told of a tab's pages (a snapshot: a request waiting for its loader is judged by it). */
function tabPages(tabId: number): TabPages {
  const info = tabInfo(tabId);
  return { committedUrl: info.url, committedLoader: info.committedLoader, commits: info.commits, newest: pageKeys.get(tabId) };
}

function loaderSignal(tabId: number, source: chrome.debugger.DebuggerSession, networkId: string | undefined): LoaderSignal {
  if (source.sessionId !== undefined || networkId === undefined || sessions.networkDeferred(tabId)) return { kind: "none" };
  const loaderId = loaders.loaderOf(tabId, networkId);
  return loaderId === undefined ? { kind: "pending" } : { kind: "heard", loaderId };
}

/** `paused` as it goes to the helper: a hard reload's with the fields Chromium sends it with (cache-bypass.ts). */
function asSent(tabId: number, paused: PausedRequest, from: PausedFrom, tab: TabPages): PausedRequest {
  const query = { topDocument: from.topDocument, networkId: paused.networkId, mainFrame: from.mainFrame, loader: from.loader };
  return bypassLoads.requestBypasses(tabId, query, tab.newest?.loader) ? { ...paused, headers: withBypassFields(paused.headers) } : paused;
}

function onPaused(tabId: number, source: chrome.debugger.DebuggerSession, event: Protocol.Fetch.RequestPausedEvent): void {
  const paused = fromRequestPaused(event);
  // Taken now, while its session is attached: one asked for after a wait could outlive its session's end.
  const responder = sessions.responderFor(source);
  const frameSource: PausedSource = { sessionId: source.sessionId, frameId: event.frameId, resourceType: event.resourceType, url: paused.url };
  sessions.frames.paused(frameSource, sessions.mainFrameId(tabId));
  frameDocuments.paused(event.frameId, event.resourceType, paused.url, sessions.mainFrameId(tabId));
  const worker = sessions.workerOf(source.sessionId);
  if (worker !== null) {
    // A service worker's (or shared worker's) request: no tab's page's, whichever tab's session paused it
    // (debugger-sessions.ts). Its page is the worker's own; answered in the session that paused it, as any request.
    accelerator.handle(workerRequest(tabId, responder, paused, frameSource, worker));
    return;
  }
  const mainFrame = source.sessionId === undefined && event.frameId === sessions.mainFrameId(tabId);
  const isTopDocument = mainFrame && event.resourceType === "Document";
  // Not the tab's URL alone: commits are not ordered against the network's events (request-page.ts).
  const from: PausedFrom = { url: paused.url, topDocument: isTopDocument, mainFrame, loader: loaderSignal(tabId, source, paused.networkId) };
  const tab = tabPages(tabId);
  const siteOn = (url: string): boolean => matchingRule(activeRules, url) !== null;
  const attributed = requestPage(from, tab, siteOn);
  if ("page" in attributed) {
    const held = handlePaused(tabId, responder, asSent(tabId, paused, from, tab), isTopDocument, attributed.page, frameSource);
    if (held instanceof Promise) accelerator.handleWhen(tabId, held);
    else accelerator.handle(held);
    return;
  }
  // Handed over now, handled once its page is known: a tab released meanwhile drops it (the browser no longer holds it)
  accelerator.handleWhen(tabId, loaders.when(tabId, paused.networkId ?? "", LOADER_WAIT_MS).then((loaderId) => {
    const heard: PausedFrom = { ...from, loader: loaderId === undefined ? { kind: "unheard" } : { kind: "heard", loaderId } };
    const again = requestPage(heard, tab, siteOn);
    traced(`loader ${loaderId === undefined ? "not heard" : "heard"} after the pause`);
    return handlePaused(tabId, responder, asSent(tabId, paused, heard, tab), isTopDocument, "page" in again ? again.page : NO_PAGE, frameSource);
  }));
}

/** A shared worker's request (`worker`: its script URL): the page it carries is the worker's. Its site on or off, and
 * the address space its requests may reach, are its own origin's; its top-level site (which partitions the helper's
 * state, as the browser partitions the worker's) and privacy are its tab's: every tab of a worker shows that site
 * (an embedded worker's frame site is kept too) in the same profile. */
function workerRequest(tabId: number, responder: FetchResponder, paused: PausedRequest, frameSource: PausedSource, worker: string): HeldRequest {
  const info = tabInfo(tabId);
  if (info.incognito === null) askPrivacy(tabId);
  const own = pageInfo(worker, info.incognito);
  const topSite = schemefulSite(info.url) ?? own.topSite;
  const page: PageInfo = { ...own, url: "", topSite, worker };
  const frameSite = sessions.frames.frameSite(frameSource, sessions.mainFrameId(tabId), topSite);
  if (frameSite !== null) page.frameSite = frameSite;
  return { tabId, paused, responder, page };
}

/** The request as the accelerator takes it, or a promise of it where it waits first. */
function handlePaused(tabId: number, responder: FetchResponder, paused: PausedRequest, isTopDocument: boolean, pageUrl: string,
  frameSource: PausedSource): HeldRequest | Promise<HeldRequest> {
  const info = tabInfo(tabId);
  if (info.incognito === null) askPrivacy(tabId);
  const page = pageInfo(pageUrl, info.incognito);
  const frameSite = sessions.frames.frameSite(frameSource, sessions.mainFrameId(tabId), page.topSite);
  if (frameSite !== null) page.frameSite = frameSite;
  // A frame is judged by its own document's space where that is more public (a public frame in a loopback page).
  page.addressSpace = sessions.frames.addressSpace(frameSource, sessions.mainFrameId(tabId), page.addressSpace);
  // The documents the browser loaded for this request (HSTS evidence: plain-http.ts). Not the request itself: a
  // document (or a request judged by its own URL, in a tab not seen yet) is no evidence for its own host.
  const documents = paused.cdpResourceType === "Document" ? [pageUrl] : [pageUrl, frameDocuments.documentOf(paused.frameId)];
  page.plainHttpHosts = plainHttpHosts(documents.filter((url) => url !== undefined && !samePage(url, paused.url)));
  if (isTopDocument) {
    counters.newPage(tabId, paused.url);
    protocols.forget(tabId);
    startPage(tabId, paused.url, paused.networkId ?? paused.interceptionId, paused.networkId ?? null);
    accelerator.pageStarted(page);
  }
  const held = { tabId, paused, responder, page };
  // A racing tab's page is being asked what its document came over: its origin's requests wait for the answer.
  const answer = isTopDocument ? null : protocols.pending(tabId, paused.url);
  return answer === null ? held : atMost(answer, WAIT_AT_MOST_MS).then(() => held);
}

async function refreshRules(): Promise<void> {
  const [active, off, settings, enabled] = await Promise.all([
    store.activeRules(), store.sessionOff(), chrome.storage.local.get([ACCELERATE_FAST_LINKS_KEY, SPLIT_LARGE_KEY, ATTACH_DURATIONS_KEY]),
    store.enabledSites(),
  ]);
  if (attachDurations.length === 0) {
    attachDurations = storedAttaches(settings[ATTACH_DURATIONS_KEY]);
    if (attachDurations.length > 0) decideRaces();
  }
  speed.setThreshold(thresholdFromSettings(settings));
  accelerator.splitLarge = settings[SPLIT_LARGE_KEY] === true;
  // With a proxy in force no site is active: no gate, no debugger, nothing taken.
  activeRules = proxy.blocked ? [] : active;
  sessionOffRules = off;
  enabledRules = active;
  await dispatch({ type: "rules", active: activeRules, enabled, now: Date.now() });
  // With any site on, the helper starts now (a Python process takes ~0.5–1.5 s to start and answer hello), not when
  // the first page needs it; the open port keeps it (and this worker) running.
  if (activeRules.length > 0) void connection.ready();
}

/** Every tab's badge (after the rules changed: the policy released the tabs no longer on an active site). */
function updateBadges(): void {
  for (const tabId of tabs.keys()) void updateBadge(tabId);
}

async function updateBadge(tabId: number): Promise<void> {
  const url = tabs.get(tabId)?.url ?? "";
  const state = matchingRule(activeRules, url) ? "on" : matchingRule(sessionOffRules, url) ? "session_off" : "off";
  await showBadge(tabId, state);
}

async function attachTab(tabId: number, loading: boolean): Promise<void> {
  // Whether the tab is incognito decides which helper cache its pages use (memory only): ask the browser rather
  // than trust what was seen of the tab before (the worker may have started after the tab was created);
  // unknown counts as private (tab-privacy.ts).
  // (Asked while the debugger attaches: the gated navigation waits for both.)
  const [incognito, result] = await Promise.all([chrome.tabs.get(tabId).then((tab) => tab.incognito, () => undefined), sessions.attach(tabId, { loading })]);
  tabInfo(tabId).incognito = learned(tabInfo(tabId).incognito, incognito);
  traced("attach: session ready");
  if (result.fetchOnMs !== undefined) attachTook(result.fetchOnMs);
  tabInfo(tabId).problem = result.ok ? null : `could not intercept this tab: ${result.error ?? "unknown error"}`;
  await dispatch({ type: "attached", tabId, ok: result.ok });
  if (result.ok) void connection.ready().then((up) => up && probeFields());
}

async function releaseTab(tabId: number): Promise<void> {
  await sessions.detach(tabId);
  accelerator.tabGone(tabId);
  documentStreams.tabGone(tabId);
  protocols.forget(tabId);
}

async function onDetached(tabId: number, reason: string): Promise<void> {
  accelerator.tabGone(tabId);
  documentStreams.tabGone(tabId);
  protocols.forget(tabId);
  void dispatch({ type: "detached", tabId });
  if (reason === "canceled_by_user") {
    const rule = matchingRule(activeRules, tabInfo(tabId).url);
    tabInfo(tabId).problem = CANCELLED_BAR;
    if (rule) await store.switchOffForSession(rule);
  }
  await refreshRules();
  await updateBadge(tabId);
}

async function startUp(): Promise<void> {
  await sessions.detachLeftovers();
  const all = await chrome.tabs.query({});
  for (const tab of all) {
    if (tab.id === undefined) continue;
    const info = tabInfo(tab.id);
    info.url = tab.url ?? "";
    info.commits += 1;
    info.incognito = tab.incognito;
    await dispatch({ type: "tab_found", tabId: tab.id, url: info.url });
    void updateBadge(tab.id);
  }
}

chrome.webNavigation.onErrorOccurred.addListener((details) => {
  if (details.frameId !== 0 || details.error !== BLOCKED_BY_GATE) return;
  void ready.then(() => dispatch({ type: "navigation_blocked", tabId: details.tabId, url: details.url, speed: speedOf(details.url) }));
});

// Before the new page asks for subresources: a tab left to the browser is intercepted again for a host not known
// fast, and an intercepted tab going to a known-fast host is left to the browser.
chrome.webNavigation.onBeforeNavigate.addListener((details) => {
  if (details.frameId !== 0) return;
  void dispatch({ type: "navigation_started", tabId: details.tabId, url: details.url, speed: speedOf(details.url) });
});

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  void (async () => {
    await ready;
    const info = tabInfo(details.tabId);
    info.url = details.url;
    info.commits += 1;
    const load = pageKeys.get(details.tabId);
    info.committedLoader = load !== undefined && samePage(load.url, details.url) ? load.loader : null;
    if (!sessions.isAttached(details.tabId) || counters.get(details.tabId).pageUrl !== details.url) {
      counters.newPage(details.tabId, details.url);
    }
    const verdict = speedOf(details.url);
    await dispatch({ type: "navigation_committed", tabId: details.tabId, url: details.url, speed: verdict });
    // (A page left to the browser: its requests are listed from its Resource Timing once it loaded, browser-tab-records.ts.)
    info.problem = problemAfterCommit(info.problem, {
      onActiveSite: matchingRule(activeRules, details.url) !== null,
      attached: sessions.isAttached(details.tabId),
      leftToBrowser: leftToBrowser(policy, details.tabId, details.url, verdict),
    });
    await updateBadge(details.tabId);
  })();
});

chrome.tabs.onCreated.addListener((tab) => {
  if (tab.id !== undefined) tabInfo(tab.id).incognito = tab.incognito;
});

chrome.tabs.onRemoved.addListener((tabId) => {
  timings.tabClosed(tabId);
  pageKeys.delete(tabId);
  loaders.forgetTab(tabId);
  bypassLoads.forgetTab(tabId);
  accelerator.tabGone(tabId);
  protocols.forget(tabId);
  counters.forget(tabId);
  tabs.delete(tabId);
  void dispatch({ type: "tab_removed", tabId });
});

chrome.tabs.onActivated.addListener(({ tabId }) => void updateBadge(tabId));

chrome.storage.onChanged.addListener((changes) => {
  if (!(SiteStore.storageKeys.sites in changes) && !(SiteStore.storageKeys.sessionOff in changes) &&
      !(ACCELERATE_FAST_LINKS_KEY in changes) && !(SPLIT_LARGE_KEY in changes)) return;
  void (async () => {
    await ready;
    await refreshRules();
    updateBadges();
  })();
});

chrome.webNavigation.onDOMContentLoaded.addListener((details) => {
  if (details.frameId === 0) timings.pageEvent(details.tabId, details.url, "contentLoaded", details.timeStamp);
});

chrome.webNavigation.onCompleted.addListener((details) => {
  if (details.frameId !== 0) return;
  void sessions.networkAfterLoad(details.tabId).then((enabled) => enabled && traced("network: on after the load"));
  void dispatch({ type: "page_loaded", tabId: details.tabId, url: details.url, speed: speedOf(details.url) });
  timings.pageEvent(details.tabId, details.url, "loaded", details.timeStamp);
  void chrome.tabs.get(details.tabId).then(
    (tab) => timings.pageEvent(details.tabId, details.url, "loaded", details.timeStamp, tab.title ?? ""),
    () => undefined,
  );
});

chrome.runtime.onMessage.addListener((message: unknown, _sender, sendResponse) =>
  answerInterfacesRequest(message, client, () => connection.state, sendResponse));

chrome.runtime.onMessage.addListener((message: unknown, _sender, sendResponse) => {
  if (!isCacheRequest(message)) return false;
  void client.cache(message.action).then((stats) => sendResponse({ stats, helper: connection.state } satisfies CacheReply));
  return true;
});

chrome.runtime.onMessage.addListener((message: unknown, _sender, sendResponse) => {
  if (answerTimingRequest(message, timings, sendResponse)) return false;
  if (!isPopupRequest(message)) return false;
  void (async () => {
    await ready;
    // Not only a helper never asked for: one missing or stopped is asked again too (ready() waits between tries), so
    // a helper installed or back while the popup is open shows there without a page load to start it.
    if (connection.state.status !== "connected") await Promise.race([connection.ready(), new Promise((r) => setTimeout(r, 1500))]);
    // (Read for its URL and problem only: nothing here writes or learns.)
    const info = tabs.get(message.tabId) ?? { url: (await chrome.tabs.get(message.tabId)).url ?? "", problem: null };
    const rule = matchingRule(enabledRules, info.url) ?? matchingRule(sessionOffRules, info.url);
    const sessionOff = rule !== null && sessionOffRules.some((r) => ruleKey(r) === ruleKey(rule));
    const reply: StatusReply = {
      helper: connection.state,
      tab: {
        tabId: message.tabId,
        url: info.url,
        rule,
        sessionOff,
        intercepting: sessions.isAttached(message.tabId),
        problem: proxy.notice ?? problemShown(info.problem, { sessionOff }),
      },
      counts: counters.get(message.tabId),
      timeSavedModel: TIME_SAVED_MODEL,
    };
    sendResponse(reply);
  })();
  return true;
});
