// The Firefox background (proxy mode): the site store, the native port kept open (so the MV3 event page never
// suspends mid-load), the proxy router behind proxy.onRequest, the helper's 407 answered with the session secret,
// and the same popup API, badge and timing records as in Chromium. Listeners are registered synchronously.
import { DEFAULT_CONNECTION, HelperConnection } from "../bridge/helper-connection.js";
import { connectChromeNative } from "../bridge/chrome-native-port.js";
import { HelperClient } from "../bridge/helper-client.js";
import type { Page } from "../generated/protocol.js";
import { answerInterfacesRequest } from "../lanes/interfaces-api.js";
import { SPLIT_LARGE_KEY } from "../lanes/split-rule.js";
import { firefoxBrowser } from "../proxy/firefox-proxy-api.js";
import { HelperProxyPorts } from "../proxy/helper-proxy-ports.js";
import { FIREFOX_PROBE_KINDS, FieldsProbe, documentLoads } from "../intercept/browser-fields-probe.js";
import { HTTPS_SITES_KEY, HttpsSites, readHttpsSites } from "../proxy/https-sites.js";
import { ProxiedRecords } from "../proxy/proxied-records.js";
import { DIRECT, ProxyRouter, pageOf } from "../proxy/proxy-router.js";
import { ACCELERATE_FAST_LINKS_KEY, HostSpeed, helperSample, thresholdFromSettings } from "../intercept/host-speed.js";
import { PROBE_WAIT_MS, SpeedProbe } from "../intercept/speed-probe.js";
import { justEnabled, probeUrl } from "../sites/just-enabled.js";
import { SiteStore, type EnabledSite } from "../sites/site-store.js";
import { matchingRule, ruleKey, type SiteRule } from "../sites/site-rule.js";
import { TabCounters } from "../timings/tab-counters.js";
import { TIME_SAVED_MODEL } from "../timings/time-saved-model.js";
import { TimingStore } from "../timings/timing-store.js";
import { showBadge } from "./badge.js";
import { FIREFOX_PROXY_RECHECK_MS, ProxyPolicy, watchProxy } from "./proxy-policy.js";
import { answerTimingRequest, isPopupRequest, type StatusReply } from "./popup-api.js";
import { treatedPrivate } from "../tab-privacy.js";

export const HTTPS_NOTICE = "HTTPS pages of this site are not accelerated unless you turn on \"Accelerate HTTPS on this site\".";
export const HTTPS_RESTART_NOTICE = "Restart Firefox to start accelerating HTTPS on this site: Firefox reads new certificate authorities when it starts.";
/** While sites are enabled and the helper is down, try to reconnect this often. */
const RECONNECT_MS = 2000;

const browser = firefoxBrowser();
const store = new SiteStore(chrome.storage.local, chrome.storage.session);
const connection = new HelperConnection(() => connectChromeNative(__LANEFETCH_NATIVE_HOST__), {
  ...DEFAULT_CONNECTION,
  extensionVersion: chrome.runtime.getManifest().version,
  browser: "firefox",
});
const counters = new TabCounters();
const timings = new TimingStore();
const tabUrls = new Map<number, string>();
let activeRules: SiteRule[] = [];
let enabledRules: SiteRule[] = [];
let sessionOffRules: SiteRule[] = [];
let httpsOptedIn: SiteRule[] = [];
/** Each host's speed from the helper's new upstream connections (origin_rtt), and the step-aside threshold. */
const speed = new HostSpeed();
const client = new HelperClient(connection);
client.onOriginRtt((origin, rttMs, remembered) => void speed.observe(helperSample(origin, rttMs, remembered)));
// What a page's prefetch flight did comes when the helper ended that load: filed under the load of its first request.
client.onPageReport((report) => void timings.pageReport(report));

const proxyPorts = new HelperProxyPorts(connection);
const router = new ProxyRouter(proxyPorts, (url) => matchingRule(activeRules, url) !== null);
proxyPorts.onClosed((contextId) => router.contextClosed(contextId));
const records = new ProxiedRecords((id) => router.contextById(id), counters, timings);
const httpsSites = new HttpsSites(connection);
router.setHttpsCovered((url) => httpsSites.covers(url));
router.setStepAside((url) => speed.stepAsideDetail(url), (details, pageUrl, detail) => {
  // The document itself may go direct (its origin known fast): the page load begins all the same.
  if (details.type === "main_frame") timings.newPage(details.tabId, details.url, Date.now(), treatedPrivate(details.incognito), details.requestId);
  records.passed(details.tabId, pageUrl, details, "low_latency", detail);
});
const probe = new SpeedProbe<Page>(speed, (url, page) => client.preconnect(url, page), PROBE_WAIT_MS.firefox);
// A document routed to the helper: its context's next requests are that page's load (a helper that learns pages in
// proxy mode says so: capability proxy_pages). The preconnect also connects the site's origins its last loads used.
router.setNavigation((contextId, url, page, direct) => {
  const state = connection.state;
  if (state.status === "connected" && state.capabilities.includes("proxy_pages")) {
    client.preconnect(url, { ...page, url }, { contextId, direct });
  }
});
router.setRttProbe((url, page) => probe.probe(url, page));
connection.onMessage((m) => {
  if (m.type !== "origin_rtt") records.handle(m);
});
/** How long the fields probe waits for its three requests (it needs no network: they are cancelled as they start). */
const FIELDS_PROBE_MS = 5000;
const fieldsProbe = new FieldsProbe(browser.webRequest.onBeforeSendHeaders, new URL(chrome.runtime.getURL("/")).origin, FIREFOX_PROBE_KINDS);
connection.onStateChange((state) => {
  const secret = connection.proxySecret;
  if (state.status === "connected" && secret !== null) {
    router.start(secret);
    httpsSites.send();
    // A helper that just connected knows none of this Firefox's fields until a page's requests teach them: its
    // Accept per kind now, so a new user's first page can have its images and fonts prefetched.
    if (state.capabilities.includes("browser_fields")) {
      void fieldsProbe.run(documentLoads(document), crypto.randomUUID(), FIELDS_PROBE_MS)
        .then((fields) => {
          const sent = fields !== null && client.browserFields(fields);
          // What the probe sent (the real-browser tests wait for it before a first page)
          (globalThis as { lanefetchFieldsProbe?: unknown }).lanefetchFieldsProbe = { sent, kinds: fields?.accept.map((a) => a.destination) ?? [] };
        });
    }
  } else if (state.status !== "connected") {
    router.stop();
    httpsSites.forget();
  }
});
connection.onLost(() => router.stop());

// Registered first thing: Firefox asks for every request, and before the rules are read nothing is routed.
browser.proxy.onRequest.addListener((details) => {
  // Count from the document's request on: its report can arrive before the navigation commits.
  if (details.type === "main_frame" && details.tabId >= 0) counters.newPage(details.tabId, details.url);
  try {
    const route = router.route(details);
    // A page load of an enabled site begins (the timing panel's unit), as in Chromium when the document is paused:
    // routed to the helper here, or sent direct by step-aside (its callback). The route may wait for the RTT probe.
    if (details.type === "main_frame" && route !== DIRECT) {
      void Promise.resolve(route).then((r) => {
        // A redirect of the document (its requestId again) is the same page load, now of the URL it ends at.
        if ((Array.isArray(r) ? r[0] : r)?.type === "http") timings.newPage(details.tabId, details.url, Date.now(), treatedPrivate(details.incognito), details.requestId);
      });
    } else if (route !== DIRECT) {
      // Its report is filed under the load current now, not the one current when the report comes (proxied-records.ts).
      const pinned = records.pin(details.tabId, details.url, details.requestId);
      void Promise.resolve(route).then((r) => {
        if ((Array.isArray(r) ? r[0] : r)?.type === "http") pinned();
      });
    }
    return route;
  } catch (e) {
    console.warn("lanefetch: routing failed, going direct", e);
    return DIRECT;
  }
}, { urls: ["<all_urls>"] });
chrome.webRequest.onCompleted.addListener((d) => {
  if (d.tabId >= 0 && !records.firefoxEvent("completed", d)) records.completed(d.tabId, d.url, d.statusCode, d.timeStamp, d.requestId);
}, { urls: ["http://*/*", "https://*/*"] });
// What Firefox shows of the requests it fetched itself (stepped aside): first byte and failures.
chrome.webRequest.onResponseStarted.addListener((d) => void records.firefoxEvent("started", d), { urls: ["http://*/*", "https://*/*"] });
chrome.webRequest.onErrorOccurred.addListener((d) => void records.firefoxEvent("failed", d), { urls: ["http://*/*", "https://*/*"] });
browser.proxy.onError.addListener((error) => console.warn("lanefetch: proxy error", error.message));
browser.webRequest.onAuthRequired.addListener((details) => {
  if (!details.isProxy || !details.challenger) return {};
  const credentials = router.credentialsFor(details.challenger.host, details.challenger.port);
  return credentials ? { authCredentials: credentials } : {};
}, { urls: ["<all_urls>"] }, ["blocking"]);

// A new user first sees the options page: the sites list, and whether the helper is installed (and how to install it).
chrome.runtime.onInstalled.addListener((details) => {
  if (details.reason === "install") void chrome.runtime.openOptionsPage();
});

const proxy = new ProxyPolicy((blocked) => {
  // At once (a helper's hello can turn it on while requests wait for that hello): the router checks the site again
  // when a request's wait ends, and sends nothing more to the helper.
  if (blocked) activeRules = [];
  void refreshRules();
});
proxy.follow(connection);
const ready = watchProxy((mode) => proxy.browserMode(mode), FIREFOX_PROXY_RECHECK_MS)
  .catch((e: unknown) => console.warn("lanefetch: cannot read the proxy settings", e))
  .then(() => refreshRules())
  .then(() => startUp());

/** Just-enabled sites already probed (sites/just-enabled.ts). */
let probedSites: string[] = [];

async function refreshRules(): Promise<void> {
  const [active, off, https, settings, enabled] = await Promise.all([
    store.activeRules(), store.sessionOff(), readHttpsSites(chrome.storage.local), chrome.storage.local.get([ACCELERATE_FAST_LINKS_KEY, SPLIT_LARGE_KEY]),
    store.enabledSites(),
  ]);
  speed.setThreshold(thresholdFromSettings(settings));
  router.splitLarge = settings[SPLIT_LARGE_KEY] === true;
  activeRules = proxy.blocked ? [] : active;
  enabledRules = active;
  sessionOffRules = off;
  httpsOptedIn = https;
  httpsSites.setWanted(httpsOptedIn, enabledRules);
  for (const tabId of tabUrls.keys()) void updateBadge(tabId);
  keepConnected();
  const fresh = justEnabled(enabled, activeRules, probedSites, Date.now());
  probedSites = fresh.taken;
  if (fresh.sites.length > 0) void probeAhead(fresh.sites);
}

/** A site just turned on: once the helper is up, it connects (TCP only) to the hosts of the site's open tabs, else
 * to the site's name, so the first page's document is routed at once (its host's speed known) instead of waiting
 * about a round trip for the speed probe (sites/just-enabled.ts). Private tabs are left out. */
async function probeAhead(sites: readonly EnabledSite[]): Promise<void> {
  // Its hello may have said that lanefetch must stay off (a system proxy the browser follows): nothing connected.
  if (!(await connection.ready()) || proxy.blocked) return;
  const tabs = await chrome.tabs.query({}).catch(() => []);
  for (const site of sites) {
    const shown = tabs.filter((t) => !t.incognito && t.url !== undefined && matchingRule([site], t.url) !== null)
      .map((t) => t.url ?? "");
    for (const url of shown.length > 0 ? shown : [probeUrl(site)]) {
      const page = pageOf(url, false);
      if (page !== null) client.preconnect(url, page, { handshake: "tcp" });
    }
  }
}

/** The native port stays open while any site is enabled (it is what keeps the event page alive). */
function keepConnected(): void {
  if (activeRules.length === 0 || connection.state.status === "connected") return;
  void connection.ready().then((ok) => {
    if (!ok) setTimeout(keepConnected, RECONNECT_MS);
  });
}
connection.onLost(() => setTimeout(keepConnected, DEFAULT_CONNECTION.retryCrashMs));

async function updateBadge(tabId: number): Promise<void> {
  const url = tabUrls.get(tabId) ?? "";
  const state = matchingRule(activeRules, url) ? "on" : matchingRule(sessionOffRules, url) ? "session_off" : "off";
  await showBadge(tabId, state);
}

async function startUp(): Promise<void> {
  for (const tab of await chrome.tabs.query({})) {
    if (tab.id === undefined) continue;
    tabUrls.set(tab.id, tab.url ?? "");
    void updateBadge(tab.id);
  }
}

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  tabUrls.set(details.tabId, details.url);
  if (counters.get(details.tabId).pageUrl !== details.url) counters.newPage(details.tabId, details.url);
  router.tabChanged(details.tabId, details.url);
  void ready.then(() => updateBadge(details.tabId));
});

chrome.webNavigation.onDOMContentLoaded.addListener((details) => {
  if (details.frameId === 0) timings.pageEvent(details.tabId, details.url, "contentLoaded", details.timeStamp);
});

chrome.webNavigation.onCompleted.addListener((details) => {
  if (details.frameId !== 0) return;
  // At once, then with the title once read (as in Chromium): the store knows the repeat as this load's even where
  // the page's next load began meanwhile.
  timings.pageEvent(details.tabId, details.url, "loaded", details.timeStamp);
  void chrome.tabs.get(details.tabId).then(
    (tab) => timings.pageEvent(details.tabId, details.url, "loaded", details.timeStamp, tab.title ?? ""),
    () => undefined,
  );
});

chrome.tabs.onRemoved.addListener((tabId) => {
  timings.tabClosed(tabId);
  router.tabChanged(tabId, null);
  counters.forget(tabId);
  tabUrls.delete(tabId);
});

chrome.tabs.onActivated.addListener(({ tabId }) => void updateBadge(tabId));

chrome.storage.onChanged.addListener((changes) => {
  if (!(SiteStore.storageKeys.sites in changes) && !(SiteStore.storageKeys.sessionOff in changes) && !(HTTPS_SITES_KEY in changes) &&
      !(ACCELERATE_FAST_LINKS_KEY in changes) && !(SPLIT_LARGE_KEY in changes)) return;
  void ready.then(() => refreshRules());
});

function problemFor(url: string, rule: SiteRule | null): string | null {
  const notice = proxy.notice;
  if (notice !== null) return notice;
  if (rule === null || !url.startsWith("https://") || httpsSites.covers(url)) return null;
  return httpsSites.statusFor(rule, httpsOptedIn).state === "restart_needed" ? HTTPS_RESTART_NOTICE : HTTPS_NOTICE;
}

// The options page's interfaces for lanes (the helper's policy: the lanes of split requests, proxied or not).
chrome.runtime.onMessage.addListener((message: unknown, _sender, sendResponse) =>
  answerInterfacesRequest(message, client, () => connection.state, sendResponse));

chrome.runtime.onMessage.addListener((message: unknown, _sender, sendResponse) => {
  if (answerTimingRequest(message, timings, sendResponse)) return false;
  if (!isPopupRequest(message)) return false;
  void (async () => {
    await ready;
    if (connection.state.status !== "connected") await Promise.race([connection.ready(), new Promise((r) => setTimeout(r, 1500))]);
    const url = tabUrls.get(message.tabId) ?? (await chrome.tabs.get(message.tabId).catch(() => undefined))?.url ?? "";
    const rule = matchingRule(enabledRules, url) ?? matchingRule(sessionOffRules, url);
    const reply: StatusReply = {
      helper: connection.state,
      tab: {
        tabId: message.tabId,
        url,
        rule,
        sessionOff: rule !== null && sessionOffRules.some((r) => ruleKey(r) === ruleKey(rule)),
        intercepting: router.routing && (url.startsWith("http://") || httpsSites.covers(url)) && matchingRule(activeRules, url) !== null,
        problem: problemFor(url, rule),
        https: url.startsWith("https://") ? httpsSites.statusFor(rule, httpsOptedIn) : undefined,
      },
      counts: counters.get(message.tabId),
      timeSavedModel: TIME_SAVED_MODEL,
    };
    sendResponse(reply);
  })();
  return true;
});
