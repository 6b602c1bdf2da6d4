// The Chromium background service worker: wires the site store, the navigation gate, debugger sessions, the
// accelerator (batch → helper → deliver) and the popup API together. Listeners are registered synchronously.
import type { Protocol } from "devtools-protocol";
import { HelperClient } from "../bridge/helper-client.js";
import { DEFAULT_CONNECTION, HelperConnection } from "../bridge/helper-connection.js";
import { connectChromeNative } from "../bridge/chrome-native-port.js";
import { debuggerResponder } from "../deliver/debugger-responder.js";
import type { FetchResponder } from "../deliver/fetch-responder.js";
import { DebuggerSessions } from "../intercept/debugger-sessions.js";
import { ACCELERATE_FAST_LINKS_KEY, stepAsideThreshold } from "../intercept/step-aside.js";
import { hostOf } from "../intercept/origin-latency.js";
import { BLOCKED_BY_GATE, NavigationGate } from "../intercept/navigation-gate.js";
import { fromRequestPaused } from "../intercept/paused-request.js";
import { addressSpaceOfUrl } from "../sites/address-space.js";
import { SiteStore } from "../sites/site-store.js";
import { matchingRule, ruleKey, registrableDomain, httpHost, type SiteRule } from "../sites/site-rule.js";
import { TabCounters } from "../timings/tab-counters.js";
import { TIME_SAVED_MODEL } from "../timings/time-saved-model.js";
import { TimingStore } from "../timings/timing-store.js";
import { CdpNetworkLog } from "../timings/cdp-network-log.js";
import { answerInterfacesRequest } from "../lanes/interfaces-api.js";
import { SPLIT_LARGE_KEY } from "../lanes/split-rule.js";
import { Accelerator, type PageInfo } from "./accelerator.js";
import { FastTabs } from "./fast-tabs.js";
import { showBadge } from "./badge.js";
import { PROXY_NOTICE, watchProxy } from "./proxy-policy.js";
import { answerTimingRequest, isCacheRequest, isPopupRequest, type CacheReply, type StatusReply } from "./popup-api.js";

interface TabInfo {
  url: string;
  incognito: boolean;
  problem: string | null;
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
const accelerator = new Accelerator(client, () => connection.state, counters, timings);
// Keep the helper: after a crash it comes back at once while a site is on (not with the next page).
connection.onLost(() => {
  setTimeout(() => {
    if (activeRules.length > 0) void connection.ready();
  }, DEFAULT_CONNECTION.retryCrashMs + 50);
});
const gate = new NavigationGate();
const tabs = new Map<number, TabInfo>();
/** Tabs the gate lets through: attached ones, and ones where attaching failed (they load unaccelerated). */
const gateOpen = new Set<number>();
const responders = new Map<string, FetchResponder>();
let activeRules: SiteRule[] = [];
let sessionOffRules: SiteRule[] = [];
let proxyBlocked = false;
/** Enabled (and not session-off) rules, whether or not a proxy keeps them inactive. */
let enabledRules: SiteRule[] = [];
const ready = watchProxy((blocked) => {
  if (blocked === proxyBlocked) return;
  proxyBlocked = blocked;
  void refreshRules().then(() => reconcile());
})
  .catch((e: unknown) => console.warn("lanefetch: cannot read the proxy settings", e))
  .then(() => refreshRules())
  .then(() => startUp());

const networkLog = new CdpNetworkLog(
  (networkId, url, timing, request) => {
    if (!timings.browserTiming(networkId, url, timing)) fastTabs.unpausedFinished(networkId, url, timing, request);
  },
  (url, connectMs) => {
    try {
      const origin = new URL(url).origin;
      accelerator.latency.observe(origin, connectMs);
      void fastTabs.learned(origin);
    } catch {
      // not a URL: nothing to learn
    }
  },
);
const sessions = new DebuggerSessions({
  paused: (tabId, source, event) => onPaused(tabId, source, event),
  network: (tabId, method, params, sessionId) => {
    fastTabs.networkEvent(tabId, sessionId, method, params);
    networkLog.handle(method, params, tabId);
  },
  detached: (tabId, reason) => void onDetached(tabId, reason),
});
/** Top-level page loads begun, per tab: the key (network request id) and URL of the newest, so that two sources
 * start it once. A load begun at navigation start ("nav:" key, no request id known) is the document's if URLs match. */
const pageKeys = new Map<number, { key: string; url: string }>();
function startPage(tabId: number, url: string, key: string): void {
  const current = pageKeys.get(tabId);
  const sameUrl = current?.url.split("#")[0] === url.split("#")[0];
  if (current?.key === key || (sameUrl && current?.key.startsWith("nav:"))) {
    pageKeys.set(tabId, { key, url });
    return;
  }
  pageKeys.set(tabId, { key, url });
  timings.newPage(tabId, url);
}
let stepAsideBelowRttMs: number | null = null;
const fastTabs = new FastTabs({
  sessions, latency: accelerator.latency, threshold: () => stepAsideBelowRttMs, counters, timings,
  pageUrl: (tabId) => tabInfo(tabId).url, startPage, helperBusy: (tabId) => accelerator.busyFor(tabId),
});
// The helper measured a new connection (its preconnect to a page's origin comes before the page's subresources).
client.onOriginRtt((origin) => void fastTabs.learned(origin));

function tabInfo(tabId: number): TabInfo {
  let info = tabs.get(tabId);
  if (!info) {
    info = { url: "", incognito: false, problem: null };
    tabs.set(tabId, info);
  }
  return info;
}

function pageInfo(url: string, incognito: boolean): PageInfo {
  const host = httpHost(url);
  return {
    url,
    topSite: host ? `${new URL(url).protocol}//${registrableDomain(host)}` : "",
    siteActive: matchingRule(activeRules, url) !== null,
    addressSpace: addressSpaceOfUrl(url) ?? "public",
    privateBrowsing: incognito,
  };
}

function responderFor(source: chrome.debugger.DebuggerSession): FetchResponder {
  const key = `${source.tabId ?? ""}/${source.sessionId ?? ""}`;
  let responder = responders.get(key);
  if (!responder) {
    responder = debuggerResponder(source.sessionId ? { tabId: source.tabId, sessionId: source.sessionId } : { tabId: source.tabId });
    responders.set(key, responder);
  }
  return responder;
}

function onPaused(tabId: number, source: chrome.debugger.DebuggerSession, event: Protocol.Fetch.RequestPausedEvent): void {
  const info = tabInfo(tabId);
  const paused = fromRequestPaused(event);
  const isTopDocument =
    source.sessionId === undefined && event.resourceType === "Document" && event.frameId === sessions.mainFrameId(tabId);
  const pageUrl = isTopDocument || info.url === "" ? paused.url : info.url;
  const page = pageInfo(pageUrl, info.incognito);
  if (isTopDocument) {
    counters.newPage(tabId, paused.url);
    startPage(tabId, paused.url, paused.networkId ?? paused.interceptionId);
    accelerator.pageStarted(page);
  }
  accelerator.handle({ tabId, paused, responder: responderFor(source), page });
}

async function refreshRules(): Promise<void> {
  const [active, off, settings] = await Promise.all([
    store.activeRules(), store.sessionOff(), chrome.storage.local.get([ACCELERATE_FAST_LINKS_KEY, SPLIT_LARGE_KEY]),
  ]);
  accelerator.stepAsideBelowRttMs = stepAsideThreshold(settings);
  accelerator.splitLarge = settings[SPLIT_LARGE_KEY] === true;
  stepAsideBelowRttMs = accelerator.stepAsideBelowRttMs;
  // With a proxy in force no site is active: no gate, no debugger, nothing taken.
  activeRules = proxyBlocked ? [] : active;
  sessionOffRules = off;
  enabledRules = active;
  await updateGate();
  void probeEnabled();
  // With any site on, the helper starts now (a Python process takes ~0.5–1.5 s to start and answer hello), not when
  // the first page needs it; the open port keeps it (and this worker) running.
  if (activeRules.length > 0) void connection.ready();
}

/** Hosts of active sites known fast now: the gate lets their pages through to the browser, unattached. */
function fastHosts(): string[] {
  if (stepAsideBelowRttMs === null || activeRules.length === 0) return [];
  return accelerator.latency.hosts().filter((h) => fastTabs.isFast(`http://${h}/`) && matchingRule(activeRules, `http://${h}/`) !== null);
}

let gateHosts = "";
let gateRecheck: ReturnType<typeof setTimeout> | undefined;
/** Rewrite the gate's rules; while it lets fast hosts through, look again every minute (RTT samples age out). */
function updateGate(): Promise<void> {
  const hosts = fastHosts();
  gateHosts = hosts.join(" ");
  clearTimeout(gateRecheck);
  gateRecheck = hosts.length ? setTimeout(() => void updateGate(), 60_000) : undefined;
  return gate.update(activeRules, [...gateOpen], hosts);
}

// A host of an active site learned fast (or no longer): the gate follows.
accelerator.latency.onObserved(() => {
  if (fastHosts().join(" ") !== gateHosts) void updateGate();
});

/** How long the gate waits for the helper's connect time: ~10–20 ms on an idle machine, more right after the helper's
 * start or under load. Waiting costs a slow link nothing: the probe is the page's preconnect, sent before the attach
 * instead of after it, and the first answer (however slow the RTT) ends the wait. */
const PROBE_BUDGET_MS = 150;
/**
 * A navigation the gate stopped: whether its host is fast, so the tab is left to the browser without attaching.
 * Unknown yet and the helper running: the helper connects to the page's origin (the preconnect the page would get
 * anyway) and this waits for its connect time, at most PROBE_BUDGET_MS (no answer by then: the tab is attached, as
 * on a slow link).
 */
async function fastBeforeAttach(tabId: number, url: string): Promise<boolean> {
  const latency = accelerator.latency;
  if (stepAsideBelowRttMs === null) return false;
  const host = hostOf(url);
  if (latency.hostRttMs(host) !== null || connection.state.status !== "connected") return fastTabs.isFast(url);
  let stop = (): void => undefined;
  const learned = new Promise<void>((resolve) => {
    stop = latency.onObserved((origin) => {
      if (hostOf(origin) === host) resolve();
    });
  });
  // Whether the tab is private (which connections the helper may share), as seen since the worker started; a tab
  // not seen counts as private (asking the browser here takes 10–25 ms).
  accelerator.pageStarted(pageInfo(url, tabs.get(tabId)?.incognito ?? true));
  await Promise.race([learned, new Promise((r) => setTimeout(r, PROBE_BUDGET_MS))]);
  stop();
  return fastTabs.isFast(url);
}

/** A tab showing an active site's page without the debugger because its host is fast (the gate let it through). */
function leftToBrowser(tabId: number, url: string): boolean {
  return !sessions.isAttached(tabId) && !gateOpen.has(tabId) && matchingRule(activeRules, url) !== null && fastTabs.isFast(url);
}

async function updateBadge(tabId: number): Promise<void> {
  const url = tabs.get(tabId)?.url ?? "";
  const state = matchingRule(activeRules, url) ? "on" : matchingRule(sessionOffRules, url) ? "session_off" : "off";
  await showBadge(tabId, state);
}

async function attachTab(tabId: number): Promise<boolean> {
  // Whether the tab is incognito decides which helper cache its pages use (memory only): ask the browser rather
  // than trust what was seen of the tab before (the worker may have started after the tab was created);
  // unknown counts as private.
  tabInfo(tabId).incognito = await chrome.tabs.get(tabId).then((tab) => tab.incognito, () => true);
  const result = await sessions.attach(tabId);
  if (result.ok) fastTabs.attached(tabId, tabInfo(tabId).url);
  tabInfo(tabId).problem = result.ok ? null : `could not intercept this tab: ${result.error ?? "unknown error"}`;
  gateOpen.add(tabId);
  await updateGate();
  if (result.ok) void connection.ready();
  return result.ok;
}

async function releaseTab(tabId: number): Promise<void> {
  fastTabs.forget(tabId);
  await sessions.detach(tabId);
  accelerator.tabGone(tabId);
  for (const key of [...responders.keys()]) if (key.startsWith(`${tabId}/`)) responders.delete(key);
  if (gateOpen.delete(tabId)) await updateGate();
}

async function onDetached(tabId: number, reason: string): Promise<void> {
  fastTabs.forget(tabId);
  accelerator.tabGone(tabId);
  gateOpen.delete(tabId);
  if (reason === "canceled_by_user") {
    const rule = matchingRule(activeRules, tabInfo(tabId).url);
    tabInfo(tabId).problem = "You cancelled the debugging bar: lanefetch is off for this site until you turn it on again.";
    if (rule) await store.switchOffForSession(rule);
  }
  await refreshRules();
  await updateBadge(tabId);
}

/** Bring attached tabs in line with the rules: attach tabs showing active sites, release the others. */
async function reconcile(): Promise<void> {
  for (const tabId of sessions.tabIds) {
    if (!matchingRule(activeRules, tabInfo(tabId).url)) await releaseTab(tabId);
  }
  for (const tabId of tabs.keys()) void updateBadge(tabId);
}

async function startUp(): Promise<void> {
  await sessions.detachLeftovers();
  const all = await chrome.tabs.query({});
  for (const tab of all) {
    if (tab.id === undefined) continue;
    const info = tabInfo(tab.id);
    info.url = tab.url ?? "";
    info.incognito = tab.incognito;
    if (tab.url && matchingRule(activeRules, tab.url)) await attachTab(tab.id);
    void updateBadge(tab.id);
  }
}

chrome.webNavigation.onErrorOccurred.addListener((details) => {
  if (details.frameId !== 0 || details.error !== BLOCKED_BY_GATE) return;
  void (async () => {
    await ready;
    if (gateOpen.has(details.tabId) || !matchingRule(activeRules, details.url)) return;
    if (await fastBeforeAttach(details.tabId, details.url)) await updateGate();
    else await attachTab(details.tabId);
    await chrome.tabs.update(details.tabId, { url: details.url });
  })();
});

// Before the new page asks for subresources: a tab left to the browser is intercepted again for an origin not known
// fast, and an intercepted tab going to a known-fast origin is left to the browser.
chrome.webNavigation.onBeforeNavigate.addListener((details) => {
  if (details.frameId !== 0 || !sessions.isAttached(details.tabId) || !matchingRule(activeRules, details.url)) return;
  void fastTabs.navigating(details.tabId, details.url);
});

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  void (async () => {
    await ready;
    const info = tabInfo(details.tabId);
    info.url = details.url;
    if (!sessions.isAttached(details.tabId) || counters.get(details.tabId).pageUrl !== details.url) {
      counters.newPage(details.tabId, details.url);
    }
    const onSite = matchingRule(activeRules, details.url) !== null;
    if (sessions.isAttached(details.tabId) && !onSite) await releaseTab(details.tabId);
    else if (!sessions.isAttached(details.tabId) && gateOpen.delete(details.tabId)) await updateGate();
    if (onSite) info.problem = sessions.isAttached(details.tabId) ? null : info.problem;
    // Its requests are listed from the page's Resource Timing once it loaded (fast-tabs.ts).
    if (leftToBrowser(details.tabId, details.url)) {
      info.problem = null;
      startPage(details.tabId, details.url, `nav:${details.url}`);
    }
    await updateBadge(details.tabId);
  })();
});

chrome.tabs.onCreated.addListener((tab) => {
  if (tab.id !== undefined) tabInfo(tab.id).incognito = tab.incognito;
});

chrome.tabs.onRemoved.addListener((tabId) => {
  fastTabs.forget(tabId);
  pageKeys.delete(tabId);
  accelerator.tabGone(tabId);
  counters.forget(tabId);
  tabs.delete(tabId);
  if (gateOpen.delete(tabId)) void updateGate();
});

chrome.tabs.onActivated.addListener(({ tabId }) => void updateBadge(tabId));

/** A site enabled this recently counts as just enabled (by the user: the popup, the options page). */
const JUST_ENABLED_MS = 60_000;
const probed = new Set<string>();
/**
 * The user just enabled these sites (popup or options): where their round trip is not known, the helper connects to
 * them now — the tabs showing them (the popup's "reload now" follows), else the site's own name over http — so a
 * fast one's next navigation passes the gate without a blocked try (which alone costs a 2-core machine ~0.1 s of
 * page load: an error page, then a renderer for the site). Only sites enabled in the last minute (a user's action),
 * once each: never the sites enabled long ago, at browser start.
 */
async function probeEnabled(): Promise<void> {
  const now = Date.now();
  const active = new Set(activeRules.map(ruleKey));
  // Keyed by when it was enabled: turned off and on again, a site is probed again.
  const rules = (await store.enabledSites()).filter((s) =>
    now - s.added < JUST_ENABLED_MS && active.has(ruleKey(s)) && !probed.has(`${ruleKey(s)}@${s.added}`));
  for (const rule of rules) probed.add(`${ruleKey(rule)}@${rule.added}`);
  if (rules.length === 0 || stepAsideBelowRttMs === null || !(await connection.ready())) return;
  for (const rule of rules) {
    const shown = [...tabs.entries()].filter(([, t]) => matchingRule([rule], t.url) !== null);
    const targets = shown.length ? shown.map(([, t]) => ({ url: t.url, incognito: t.incognito })) : [{ url: `http://${rule.name}/`, incognito: false }];
    for (const { url, incognito } of targets) {
      if (accelerator.latency.hostRttMs(hostOf(url)) === null) accelerator.pageStarted(pageInfo(url, incognito));
    }
  }
}

chrome.storage.onChanged.addListener((changes) => {
  if (!(SiteStore.storageKeys.sites in changes) && !(SiteStore.storageKeys.sessionOff in changes) &&
      !(ACCELERATE_FAST_LINKS_KEY in changes) && !(SPLIT_LARGE_KEY in changes)) return;
  void (async () => {
    await ready;
    await refreshRules();
    await reconcile();
  })();
});

chrome.webNavigation.onDOMContentLoaded.addListener((details) => {
  if (details.frameId === 0) timings.pageEvent(details.tabId, details.url, "contentLoaded", details.timeStamp);
});

chrome.webNavigation.onCompleted.addListener((details) => {
  if (details.frameId !== 0) return;
  void fastTabs.loaded(details.tabId);
  if (leftToBrowser(details.tabId, details.url)) void fastTabs.listUnattached(details.tabId);
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
    if (connection.state.status === "idle") await Promise.race([connection.ready(), new Promise((r) => setTimeout(r, 1500))]);
    const info = tabs.get(message.tabId) ?? { url: (await chrome.tabs.get(message.tabId)).url ?? "", incognito: false, problem: null };
    const rule = matchingRule(enabledRules, info.url) ?? matchingRule(sessionOffRules, info.url);
    const reply: StatusReply = {
      helper: connection.state,
      tab: {
        tabId: message.tabId,
        url: info.url,
        rule,
        sessionOff: rule !== null && sessionOffRules.some((r) => ruleKey(r) === ruleKey(rule)),
        intercepting: sessions.isAttached(message.tabId),
        problem: proxyBlocked ? PROXY_NOTICE : info.problem,
      },
      counts: counters.get(message.tabId),
      timeSavedModel: TIME_SAVED_MODEL,
    };
    sendResponse(reply);
  })();
  return true;
});
