// Chromium: which tab is intercepted, and when it is left to the browser. A reducer: (state, event) → (state,
// commands); no chrome.* here — chromium-main.ts turns browser events into TabEvents and runs the TabCommands.
//
// Theory of operation. Tabs showing an enabled ("active") site are intercepted through a debugger session; the DNR
// main-frame gate (navigation-gate.ts) blocks a top-level navigation in a tab not attached yet, and the block is the
// cue to attach and navigate again, so not even the first subresource escapes. A host known fast (host-speed.ts) is
// where lanefetch cannot win, and a debugger session with Fetch or Network enabled costs such a page more than
// lanefetch could save (`npm run bench -- chromium-debugger-cost`), whereas an unattached tab costs nothing. So:
// - a blocked navigation to a fast host is navigated again unattached, and an allow rule above the block (one per
//   fast host of an active site) lets that host's later navigations through while its verdict holds; a fast host
//   beyond the gate's room for allow rules (MAX_FAST_HOSTS) would be blocked again, so is attached like a slow one
//   (and its page left to the browser, below);
// - a blocked navigation to a host of unknown speed, with the helper up, waits for a probe (speed-probe.ts) first;
//   a slow host (or no answer in time, or no helper) gets the debugger attached, then the navigation again;
// - an attached tab is never detached for speed (the debugging bar would flicker): while its top-level host is fast
//   it stays attached with Fetch (in its child sessions too: debugger-sessions.ts) and Network off ("intercept off"),
//   switched off once the helper answered what it already took of the tab (Fetch.disable would hand those to the
//   browser a second time), and on again from the start of a navigation to a host not known fast (before the new
//   page asks for subresources);
// - a page the browser fetched alone (attached with interception off, or unattached behind the allow rule) is listed
//   from its Resource Timing once loaded ("list"), and its page load begins at navigation ("page_start").
// - a host so slow that its document cannot be back before an attach ends (attach-race.ts) is not blocked at all:
//   its navigation goes on while the tab is attached from its start (an allow rule, like a fast host's), so the
//   attach costs nothing; its document is the browser's (a page load begun at navigation), its subresources ours.
// A site enabled in the last minute (the user's action) has the hosts of its open tabs, else its own name, probed
// once, so the reload after enabling is not stopped by the gate when the host is fast.
// No round trip of our own: as soon as a navigation that will be intercepted starts (a blocked one about to be
// attached, an attached tab's next page) the helper is asked to connect ("preconnect") to the document's origin
// and, from what the site's earlier loads taught it, to the site's other origins, so the first subresource batch
// finds its connections open while the debugger attaches and the document loads.
// Never slower without the helper: while it is not connected (not installed, incompatible, starting, crashed) the
// gate blocks nothing and no tab is attached or intercepted, so not one request is paused for a helper that cannot
// take it (a paused request passed on costs a detour: 0.85× on `lte` in issue 17). A navigation blocked just before
// is let through unattached; intercepted tabs turn Fetch and Network off when the helper goes; when it is back the
// gate blocks again and the next navigation is intercepted as usual (tabs found at start-up are attached then).
// A block is only known as ERR_BLOCKED_BY_CLIENT, which another extension's rules give too: a navigation let through
// unattached (the gate rewritten first) and blocked again is left on its error page, not navigated again in a loop.
// Which *request* of an intercepted tab goes to the helper is the accelerator's (background/accelerator.ts).
import { addressSpaceOfUrl } from "../sites/address-space.js";
import { justEnabled, probeUrl } from "../sites/just-enabled.js";
import { matchingRule, ruleKey, type SiteRule } from "../sites/site-rule.js";
import type { EnabledSite } from "../sites/site-store.js";
import { hostOf, type Verdict } from "./host-speed.js";
import { MAX_FAST_HOSTS } from "./navigation-gate.js";

export type Speed = Verdict["state"];

export type { EnabledSite } from "../sites/site-store.js";

export type TabEvent =
  /** The active rules changed (or were read): `enabled` with their enable times, `now` the clock. */
  | { type: "rules"; active: readonly SiteRule[]; enabled: readonly EnabledSite[]; now: number }
  /** A tab that was open before this worker started. */
  | { type: "tab_found"; tabId: number; url: string }
  /** The gate blocked a top-level navigation (ERR_BLOCKED_BY_CLIENT). */
  | { type: "navigation_blocked"; tabId: number; url: string; speed: Speed }
  /** A probe asked for by a "probe" command ended (the host's speed now). */
  | { type: "probe_ended"; tabId: number; url: string; speed: Speed }
  /** A top-level navigation starts (webNavigation.onBeforeNavigate). */
  | { type: "navigation_started"; tabId: number; url: string; speed: Speed }
  | { type: "navigation_committed"; tabId: number; url: string; speed: Speed }
  | { type: "page_loaded"; tabId: number; url: string; speed: Speed }
  /** A host's verdict (after each sample of it, on a threshold change, when a fast verdict expired, after an attach);
   * racesAttach: slow enough for its navigation to go on while the tab is attached (attach-race.ts). */
  | { type: "verdict"; host: string; speed: Speed; racesAttach: boolean }
  /** An "attach" command finished: ok, or the tab loads unaccelerated. */
  | { type: "attached"; tabId: number; ok: boolean }
  /** The browser detached the session (the user cancelled the debugging bar, the tab crashed). */
  | { type: "detached"; tabId: number }
  | { type: "tab_removed"; tabId: number }
  /** The helper's answer to a racing navigation's preconnect: does its page have a learned flight; late: it came
   * too late to navigate again (attach-race.ts). */
  | { type: "flight_plan"; url: string; flight: boolean; late: boolean }
  /** The helper answered every request of the tab it had (after an "await_idle"). */
  | { type: "helper_idle"; tabId: number }
  | { type: "helper"; up: boolean };

export type TabCommand =
  /** loading: the tab's navigation goes on meanwhile (a race: its Network domain waits for the page's load). */
  | { kind: "attach"; tabId: number; loading?: true }
  | { kind: "detach"; tabId: number }
  /** Fetch and Network on (Fetch first: the new page's subresources must find it) or off, on the tab's session. */
  | { kind: "intercept"; tabId: number; on: boolean }
  /** Ask the helper to connect to url's origin and wait briefly for the host's speed; then a "probe_ended". */
  | { kind: "probe"; tabId: number; url: string }
  /** Ask the helper to connect to url's origin and its site's known ones (a just-enabled site's host of unknown speed,
   * a navigation about to be intercepted), nothing to wait for. */
  | { kind: "preconnect"; url: string; tabId: number | null; askFlight?: true }
  | { kind: "navigate"; tabId: number; url: string }
  /** Rewrite the gate: block active sites in tabs not `openTabs`, allow `allowHosts` (fast hosts, most recent first,
   * then the hosts whose navigation races the attach). */
  | { kind: "gate"; rules: readonly SiteRule[]; openTabs: number[]; allowHosts: string[] }
  /** Tell "helper_idle" once the helper answered what it holds of the tab. */
  | { kind: "await_idle"; tabId: number }
  /** A page load the browser fetches alone begins (its document is not paused). */
  | { kind: "page_start"; tabId: number; url: string }
  /** List the loaded page's requests from its Resource Timing. */
  | { kind: "list"; tabId: number };

export interface TabState {
  /** The top-level page the tab shows or navigates to. */
  url: string;
  /** A debugger session is attached. */
  attached: boolean;
  /** Attached with Fetch and Network on; false while attached but left to the browser. */
  intercepting: boolean;
  /** The gate lets the tab through: attached, or attaching failed (it loads unaccelerated). */
  gateOpen: boolean;
  /** Navigate here once the session is attached or the probe ended (the gate blocked it). */
  renavigate: string | null;
  /** An attach command went out and its "attached" has not come yet. */
  attaching: boolean;
  /** Attached from a navigation's start (this URL) before the gate's block of it was heard: the block, if it comes
   * after all, is navigated again. */
  mayBeBlocked: string | null;
  probing: string | null;
  /** Racing the attach (this URL) until the helper said whether its page has a flight. */
  racing: string | null;
  /** Going to the browser (fast host) once the helper answered what it holds of the tab: that host. */
  awaitingIdle: string | null;
  /** Found on an active site while the helper was not up: attached once it is (unless it navigated meanwhile). */
  attachWhenUp: boolean;
  /** Navigated again unattached to this URL once the gate was rewritten to let it through: a block of that URL heard
   * before the tab commits or goes elsewhere is not the gate's (another extension blocks it too), and is left as it
   * is, once; navigating again would make a loop of it. */
  letThrough: string | null;
}

export interface PolicyState {
  tabs: ReadonlyMap<number, Readonly<TabState>>;
  active: readonly SiteRule[];
  /** Hosts known fast, most recently learned first (all sites: the gate keeps those of active ones). */
  fastHosts: readonly string[];
  /** Slow hosts whose navigations are not blocked but race the attach, most recently learned first. */
  raceHosts: readonly string[];
  /** The hosts the gate was last written to allow (space-separated). */
  gateHosts: string;
  helperUp: boolean;
  /** Just-enabled sites already probed, keyed by rule and enable time (turned off and on again: probed again). */
  probed: readonly string[];
  /** The rules the gate was last written to block. */
  gated: readonly SiteRule[];
  /** Rules the gate blocked before its last rewrite dropped them (the site turned off, the helper gone): a block of
   * theirs heard later came from the gate before the rewrite took effect, and is navigated again, once per tab
   * (`renavigated`): another extension blocking the same URL must not make a loop of it. */
  ungated: readonly SiteRule[];
  /** Tabs navigated again for an ungated rule since the last rewrite. */
  renavigated: readonly number[];
}

export const INITIAL_POLICY: PolicyState = { tabs: new Map(), active: [], fastHosts: [], raceHosts: [], gateHosts: "", helperUp: false, probed: [], gated: [], ungated: [], renavigated: [] };

function newTab(url: string): TabState {
  return { url, attached: false, intercepting: false, gateOpen: false, renavigate: null, attaching: false, mayBeBlocked: null, probing: null, racing: null, awaitingIdle: null, attachWhenUp: false, letThrough: null };
}

/** The tab shows an active site's page without the debugger because its host is fast (the gate let it through). */
export function leftToBrowser(state: PolicyState, tabId: number, url: string, speed: Speed): boolean {
  const tab = state.tabs.get(tabId);
  return !tab?.attached && !tab?.gateOpen && speed === "fast" && matchingRule(state.active, url) !== null;
}

/** The tab is attached but its requests are the browser's (interception off). */
export function attachedButLeft(state: PolicyState, tabId: number): boolean {
  const tab = state.tabs.get(tabId);
  return tab?.attached === true && !tab.intercepting;
}

/** The gate's allow list: fast hosts of active sites, then those racing the attach; as many as it has room for. */
function gateHosts(s: PolicyState): string[] {
  return [...s.fastHosts, ...s.raceHosts].filter((h) => matchingRule(s.active, `http://${h}/`) !== null).slice(0, MAX_FAST_HOSTS);
}

export function reduce(state: PolicyState, event: TabEvent): { state: PolicyState; commands: TabCommand[] } {
  const s: PolicyState = { ...state, tabs: new Map(state.tabs) };
  const tabs = s.tabs as Map<number, TabState>;
  const commands: TabCommand[] = [];
  /** A mutable copy of the tab (created if unknown). */
  const tab = (tabId: number): TabState => {
    const copy = { ...(tabs.get(tabId) ?? newTab("")) };
    tabs.set(tabId, copy);
    return copy;
  };
  const gate = (): void => {
    const allowHosts = gateHosts(s);
    s.gateHosts = allowHosts.join(" ");
    const openTabs = [...tabs].filter(([, t]) => t.gateOpen).map(([id]) => id);
    const written = s.helperUp ? s.active : [];
    const keys = new Set(written.map(ruleKey));
    // Only the latest rewrite's drops: a block heard after a later rewrite is not the old gate's
    s.ungated = s.gated.filter((r) => !keys.has(ruleKey(r)));
    s.gated = written;
    s.renavigated = [];
    // No helper: nothing is blocked, so nothing is attached and no request paused.
    commands.push(s.helperUp ? { kind: "gate", rules: s.active, openTabs, allowHosts } : { kind: "gate", rules: [], openTabs: [], allowHosts: [] });
  };
  const onSite = (url: string): boolean => matchingRule(s.active, url) !== null;
  /** A fast host the gate lets through: one beyond its room for allow rules would be blocked again, so is attached. */
  const letsThrough = (url: string, speed: Speed): boolean => speed === "fast" && gateHosts(s).includes(hostOf(url));
  const attach = (tabId: number, t: TabState, renavigate: string | null, loading = false): void => {
    t.renavigate = renavigate;
    t.attaching = true;
    commands.push(loading ? { kind: "attach", tabId, loading } : { kind: "attach", tabId });
  };
  const letThrough = (tabId: number, url: string): void => {
    gate();
    tab(tabId).letThrough = url;
    commands.push({ kind: "navigate", tabId, url });
  };
  /** Detach the tab (attached, or its attach just ended) and forget what concerned its session; the gate is rewritten
   * only if it let the tab through: a needless rewrite would forget the rules the last real one dropped (`ungated`),
   * and another tab's block by the old gate, heard after it, would be left on the error page. Returns the tab's copy. */
  const release = (tabId: number): TabState => {
    const t = tab(tabId);
    const wasOpen = t.gateOpen;
    Object.assign(t, { attached: false, intercepting: false, gateOpen: false, awaitingIdle: null, mayBeBlocked: null, racing: null });
    commands.push({ kind: "detach", tabId });
    if (wasOpen) gate();
    return t;
  };

  switch (event.type) {
    case "rules": {
      s.active = [...event.active];
      gate();
      for (const [tabId, t] of tabs) {
        if (t.attached && !onSite(t.url)) release(tabId);
      }
      const fresh = justEnabled(event.enabled, s.active, s.probed, event.now);
      s.probed = fresh.taken;
      for (const site of fresh.sites) {
        const shown = [...tabs].filter(([, t]) => matchingRule([site], t.url) !== null);
        if (shown.length === 0) commands.push({ kind: "preconnect", url: probeUrl(site), tabId: null });
        for (const [tabId, t] of shown) commands.push({ kind: "preconnect", url: t.url, tabId });
      }
      break;
    }
    case "tab_found": {
      const t = tab(event.tabId);
      t.url = event.url;
      if (onSite(event.url) && s.helperUp) attach(event.tabId, t, null);
      else t.attachWhenUp = onSite(event.url);
      break;
    }
    case "navigation_blocked": {
      if (!onSite(event.url)) {
        // Blocked by the gate as it was before the site was dropped from it: the browser's now.
        if (matchingRule(s.ungated, event.url) !== null && !s.renavigated.includes(event.tabId)) {
          s.renavigated = [...s.renavigated, event.tabId];
          commands.push({ kind: "navigate", tabId: event.tabId, url: event.url });
        }
        break;
      }
      const t = tab(event.tabId);
      // Blocked before the gate's rewrite for the tab took effect (an attach begun at the navigation's start came
      // first): the gate lets it through now. Any other block of a tab the gate lets through is stale: not ours.
      if (t.gateOpen) {
        if (t.mayBeBlocked === event.url) commands.push({ kind: "navigate", tabId: event.tabId, url: event.url });
        t.mayBeBlocked = null;
        break;
      }
      // Being attached since the navigation started: navigated again once attached.
      if (t.attaching) {
        t.renavigate = event.url;
        t.mayBeBlocked = null;
        break;
      }
      // Let through already, and blocked all the same: not the gate's block.
      if (t.letThrough === event.url) {
        t.letThrough = null;
        break;
      }
      // A second blocked navigation while the first one's probe runs supersedes it (probe_ended checks the URL).
      // Blocked just before the helper went (or before the gate heard): the browser's, unattached.
      if (letsThrough(event.url, event.speed) || !s.helperUp) letThrough(event.tabId, event.url);
      else if (event.speed === "unknown") {
        t.probing = event.url;
        commands.push({ kind: "probe", tabId: event.tabId, url: event.url });
      } else {
        commands.push({ kind: "preconnect", url: event.url, tabId: event.tabId });
        attach(event.tabId, t, event.url);
      }
      break;
    }
    case "probe_ended": {
      if (tabs.get(event.tabId)?.probing !== event.url) break;
      const t = tab(event.tabId);
      t.probing = null;
      // The site was turned off meanwhile: the gate no longer blocks the page, and no debugger is attached for it.
      if (!onSite(event.url)) commands.push({ kind: "navigate", tabId: event.tabId, url: event.url });
      else if (letsThrough(event.url, event.speed) || !s.helperUp) letThrough(event.tabId, event.url);
      else attach(event.tabId, t, event.url);
      break;
    }
    case "attached": {
      // Closed while it attached: nothing to let through or navigate (a session attached just before is let go).
      if (!tabs.has(event.tabId)) {
        if (event.ok) commands.push({ kind: "detach", tabId: event.tabId });
        break;
      }
      const t = tab(event.tabId);
      t.attaching = false;
      // The site was turned off while the tab attached (the "rules" event passed it by, not attached yet): released.
      // Detached before the navigation goes on, which must not be intercepted.
      if (event.ok && !onSite(t.renavigate ?? t.url)) {
        const renavigate = t.renavigate;
        release(event.tabId).renavigate = null;
        if (renavigate !== null) commands.push({ kind: "navigate", tabId: event.tabId, url: renavigate });
        break;
      }
      t.attached = event.ok;
      t.intercepting = event.ok;
      t.gateOpen = true;
      gate();
      // The helper went while the tab attached (the "helper" event passed it by): nothing is paused for it.
      if (event.ok && !s.helperUp) {
        t.intercepting = false;
        commands.push({ kind: "intercept", tabId: event.tabId, on: false });
      }
      if (t.renavigate !== null) commands.push({ kind: "navigate", tabId: event.tabId, url: t.renavigate });
      t.renavigate = null;
      break;
    }
    case "navigation_started": {
      const t = tabs.get(event.tabId);
      if (t?.mayBeBlocked) tab(event.tabId).mayBeBlocked = null;
      if (t?.racing) tab(event.tabId).racing = null;
      if (t?.letThrough != null && t.letThrough !== event.url) tab(event.tabId).letThrough = null;
      // A navigation begun while a blocked one's probe runs replaces it: the probe's end navigates nowhere.
      if (t?.probing != null && t.probing !== event.url) tab(event.tabId).probing = null;
      if (t?.attaching && !t.attached) {
        // A navigation begun while the tab attaches replaces the one it attaches for: the tab goes there (not to the
        // page blocked before), and its block, if the gate's rewrite for the tab comes first, is navigated again.
        const next = tab(event.tabId);
        next.url = event.url;
        if (next.renavigate !== event.url) next.renavigate = null;
        next.mayBeBlocked = onSite(event.url) && !next.gateOpen ? event.url : null;
        break;
      }
      if (!t?.attached && onSite(event.url) && s.helperUp && event.speed === "slow") {
        // The gate will block it (~50 ms to its error): attach from now, not from the block, so that its second try
        // finds the session ready or nearly (the attach is most of a gated navigation's cost). A POST navigation,
        // which the gate lets through, is then intercepted from whenever the session is up.
        const next = tab(event.tabId);
        if (!next.gateOpen && !next.attaching && next.probing === null) {
          next.url = event.url;
          next.mayBeBlocked = event.url;
          // Let through (it races the attach): its document goes unpaused, so its page load begins now.
          const races = s.raceHosts.includes(hostOf(event.url));
          if (races) {
            commands.push({ kind: "page_start", tabId: event.tabId, url: event.url });
            commands.push({ kind: "preconnect", url: event.url, tabId: event.tabId, askFlight: true });
            next.racing = event.url;
          } else {
            commands.push({ kind: "preconnect", url: event.url, tabId: event.tabId });
          }
          attach(event.tabId, next, null, races);
        }
        break;
      }
      if (!t?.attached || !onSite(event.url)) break;
      const next = tab(event.tabId);
      next.url = event.url;
      next.awaitingIdle = null;
      const toBrowser = event.speed === "fast" || !s.helperUp;
      if (toBrowser === next.intercepting) {
        next.intercepting = !toBrowser;
        commands.push({ kind: "intercept", tabId: event.tabId, on: !toBrowser });
      }
      // The document may already be on its way unpaused: its page load begins now (a paused document joins it).
      if (toBrowser || commands.length > 0) commands.push({ kind: "page_start", tabId: event.tabId, url: event.url });
      if (!toBrowser && s.helperUp) commands.push({ kind: "preconnect", url: event.url, tabId: event.tabId });
      break;
    }
    case "navigation_committed": {
      const t = tab(event.tabId);
      t.url = event.url;
      t.attachWhenUp = false; // a page loaded without the helper stays the browser's; the next one is gated
      t.letThrough = null;
      if (t.attached && !onSite(event.url)) release(event.tabId);
      else if (!t.attached && t.gateOpen) {
        t.gateOpen = false;
        gate();
      }
      if (leftToBrowser(s, event.tabId, event.url, event.speed)) commands.push({ kind: "page_start", tabId: event.tabId, url: event.url });
      break;
    }
    case "page_loaded": {
      if (attachedButLeft(s, event.tabId) || leftToBrowser(s, event.tabId, event.url, event.speed)) {
        commands.push({ kind: "list", tabId: event.tabId });
      }
      break;
    }
    case "verdict": {
      const others = s.fastHosts.filter((h) => h !== event.host);
      s.fastHosts = event.speed === "fast" ? [event.host, ...others] : others;
      const racing = s.raceHosts.filter((h) => h !== event.host);
      s.raceHosts = event.speed === "slow" && event.racesAttach ? [event.host, ...racing] : racing;
      if (gateHosts(s).join(" ") !== s.gateHosts) gate();
      if (event.speed !== "fast") break;
      for (const [tabId, t] of tabs) {
        if (!t.attached || !t.intercepting || hostOf(t.url) !== event.host || t.awaitingIdle === event.host) continue;
        tab(tabId).awaitingIdle = event.host;
        commands.push({ kind: "await_idle", tabId });
      }
      break;
    }
    case "flight_plan": {
      for (const [tabId, t] of tabs) {
        if (t.racing !== event.url) continue;
        const next = tab(tabId);
        next.racing = null;
        if (event.flight || event.late) continue;
        // No flight: the document comes through the helper (what it names is fetched as it streams), as after a block;
        // a local page's document never does (pass-through-policy.ts: local_document), so navigating again would only
        // start its load over.
        if (addressSpaceOfUrl(event.url) !== "public") continue;
        if (next.attaching) next.renavigate = event.url;
        else if (next.attached) commands.push({ kind: "navigate", tabId, url: event.url });
      }
      break;
    }
    case "helper_idle": {
      const t = tabs.get(event.tabId);
      if (!t || t.awaitingIdle === null) break;
      const next = tab(event.tabId);
      next.awaitingIdle = null;
      // Still on the host that was learned fast (not navigated elsewhere meanwhile).
      if (next.attached && next.intercepting && hostOf(next.url) === t.awaitingIdle) {
        next.intercepting = false;
        commands.push({ kind: "intercept", tabId: event.tabId, on: false });
      }
      break;
    }
    case "detached": {
      // Heard after the tab's removal (the two events have no order): nothing is left of it.
      if (!tabs.has(event.tabId)) break;
      const t = tab(event.tabId);
      Object.assign(t, { attached: false, intercepting: false, gateOpen: false, awaitingIdle: null });
      break;
    }
    case "tab_removed": {
      const wasOpen = tabs.get(event.tabId)?.gateOpen === true;
      tabs.delete(event.tabId);
      if (wasOpen) gate();
      break;
    }
    case "helper": {
      if (event.up === s.helperUp) break;
      s.helperUp = event.up;
      gate();
      for (const [tabId, t] of tabs) {
        if (event.up && t.attachWhenUp && !t.attached && onSite(t.url)) {
          tab(tabId).attachWhenUp = false;
          attach(tabId, tab(tabId), null);
        } else if (!event.up && t.attached && t.intercepting) {
          // What the helper held was given back to the browser when its port closed: nothing more is paused.
          Object.assign(tab(tabId), { intercepting: false, awaitingIdle: null });
          commands.push({ kind: "intercept", tabId, on: false });
        }
      }
      break;
    }
  }
  return { state: s, commands };
}
