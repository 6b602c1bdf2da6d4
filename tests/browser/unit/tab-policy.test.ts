// The Chromium tab policy, table-driven: each case is a sequence of events, each with the commands it must give.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JUST_ENABLED_MS } from "../../../extension/src/sites/just-enabled.js";
import { MAX_FAST_HOSTS } from "../../../extension/src/intercept/navigation-gate.js";
import { INITIAL_POLICY, attachedButLeft, leftToBrowser, reduce, type PolicyState, type TabCommand, type TabEvent } from "../../../extension/src/intercept/tab-policy.js";

const SITE = { scope: "domain" as const, name: "lan.example" };
const RULES: TabEvent = { type: "rules", active: [SITE], enabled: [{ ...SITE, added: 0 }], now: JUST_ENABLED_MS };
const LAN = "http://lan.example/a";
const FAR = "http://far.lan.example/b";
const gate = (openTabs: number[] = [], allowHosts: string[] = []): TabCommand => ({ kind: "gate", rules: [SITE], openTabs, allowHosts });

const LOCAL_SITE = { scope: "domain" as const, name: "10.0.0.5" };
const LOCAL = "http://10.0.0.5/docs/";
const gateLocal = (openTabs: number[] = [], allowHosts: string[] = []): TabCommand => ({ kind: "gate", rules: [LOCAL_SITE], openTabs, allowHosts });

type Step = [TabEvent, TabCommand[]];

function play(steps: Step[], start: PolicyState = INITIAL_POLICY): PolicyState {
  let state = start;
  for (const [i, [event, expected]] of steps.entries()) {
    const out = reduce(state, event);
    assert.deepEqual(out.commands, expected, `step ${i}: ${JSON.stringify(event)}`);
    state = out.state;
  }
  return state;
}

// Without the helper the gate blocks nothing: no tab is attached, no request paused for a helper that cannot take it.
const NO_GATE: TabCommand = { kind: "gate", rules: [], openTabs: [], allowHosts: [] };
const on: Step = [RULES, [NO_GATE]];
const up: Step = [{ type: "helper", up: true }, [gate()]];
const upLocal: Step = [{ type: "helper", up: true }, [gateLocal()]];
/** A navigation to a host that races the attach: its page load begins, the helper is asked for its flight, attach. */
const racingStart = (tabId: number, url: string): Step => [{ type: "navigation_started", tabId, url, speed: "slow" },
  [{ kind: "page_start", tabId, url }, { kind: "preconnect", url, tabId, askFlight: true }, { kind: "attach", tabId, loading: true }]];

const cases: { name: string; steps: Step[]; check?: (s: PolicyState) => void }[] = [
  {
    name: "a blocked navigation to a slow host: the helper connects to it at once, attach, open the gate for the tab, navigate again",
    steps: [on, up,
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1]), { kind: "navigate", tabId: 1, url: LAN }]],
      // The navigation that will be intercepted starts: the helper connects (again: it answers with what it has open).
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }]],
      [{ type: "navigation_committed", tabId: 1, url: LAN, speed: "slow" }, []],
      [{ type: "page_loaded", tabId: 1, url: LAN, speed: "slow" }, []]],
    check: (s) => assert.equal(attachedButLeft(s, 1), false),
  },
  {
    name: "a navigation to a slow host starts in an unattached tab: attach at once; its block, heard while attaching, is navigated again once attached",
    steps: [on, up,
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1]), { kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }]],
      // a stale block of it now is not ours
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []]],
  },
  {
    name: "attached before the block was heard: the block is navigated again at once, once; a later one is stale",
    steps: [on, up,
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []]],
  },
  {
    name: "attached from the start of a navigation that was never blocked (a POST): nothing navigates; the next block of that URL is stale",
    steps: [on, up,
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "navigation_committed", tabId: 1, url: LAN, speed: "slow" }, []],
      [{ type: "navigation_started", tabId: 1, url: FAR, speed: "slow" }, [{ kind: "preconnect", url: FAR, tabId: 1 }]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []]],
  },
  {
    name: "no attach from a navigation's start where its host is not known slow, the helper is down or the site is off",
    steps: [on,
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, []],
      up,
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "unknown" }, []],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, []],
      [{ type: "navigation_started", tabId: 1, url: "http://other.test/", speed: "slow" }, []]],
  },
  {
    name: "attaching fails: the gate still lets the tab through (it loads unaccelerated)",
    steps: [on, up,
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: false }, [gate([1]), { kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, []]],
  },
  {
    name: "unknown speed with the helper up: probe first; fast → unattached behind an allow rule, listed once loaded",
    steps: [on, up,
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
      [{ type: "verdict", host: "lan.example", speed: "fast", racesAttach: false }, [gate([], ["lan.example"])]],
      [{ type: "probe_ended", tabId: 1, url: LAN, speed: "fast" }, [gate([], ["lan.example"]), { kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, []],
      [{ type: "navigation_committed", tabId: 1, url: LAN, speed: "fast" }, [{ kind: "page_start", tabId: 1, url: LAN }]],
      [{ type: "page_loaded", tabId: 1, url: LAN, speed: "fast" }, [{ kind: "list", tabId: 1 }]]],
    check: (s) => assert.equal(leftToBrowser(s, 1, LAN, "fast"), true),
  },
  {
    name: "no answer in time: the probe ends unknown and the tab is attached; a stale probe's end is ignored",
    steps: [on, up,
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
      [{ type: "navigation_blocked", tabId: 1, url: FAR, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: FAR }]],
      [{ type: "probe_ended", tabId: 1, url: LAN, speed: "unknown" }, []],
      [{ type: "probe_ended", tabId: 1, url: FAR, speed: "unknown" }, [{ kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1]), { kind: "navigate", tabId: 1, url: FAR }]]],
  },
  {
    name: "helper not up (missing, starting, crashed): nothing blocked, attached or paused; attached tabs stop intercepting",
    steps: [on,
      // Blocked just before the gate was emptied: let through unattached, whatever the host's speed.
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [NO_GATE, { kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_blocked", tabId: 3, url: LAN, speed: "slow" }, [NO_GATE, { kind: "navigate", tabId: 3, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, []],
      // A tab found at start-up waits for the helper to be attached.
      [{ type: "tab_found", tabId: 2, url: LAN }, []],
      [{ type: "helper", up: true }, [gate(), { kind: "attach", tabId: 2 }]],
      [{ type: "attached", tabId: 2, ok: true }, [gate([2])]],
      [{ type: "navigation_started", tabId: 2, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 2 }]],
      // The helper crashed: the gate opens and the attached tab's requests are the browser's at once.
      [{ type: "helper", up: false }, [NO_GATE, { kind: "intercept", tabId: 2, on: false }]],
      [{ type: "helper", up: false }, []],
      [{ type: "navigation_started", tabId: 2, url: FAR, speed: "slow" }, [{ kind: "page_start", tabId: 2, url: FAR }]],
      [{ type: "probe_ended", tabId: 4, url: LAN, speed: "slow" }, []]],
    check: (s) => assert.equal(attachedButLeft(s, 2), true),
  },
  {
    name: "a probe that ends after the helper went: the browser's, unattached",
    steps: [on, up,
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
      [{ type: "helper", up: false }, [NO_GATE]],
      [{ type: "probe_ended", tabId: 1, url: LAN, speed: "unknown" }, [NO_GATE, { kind: "navigate", tabId: 1, url: LAN }]]],
  },
  {
    name: "blocked navigations of tabs already let through, or off the active sites, are not ours",
    steps: [on, up,
      [{ type: "navigation_blocked", tabId: 1, url: "http://other.test/", speed: "slow" }, []],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1]), { kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []]],
  },
  {
    name: "an intercepted tab's host learned fast: off once the helper answered what it holds, unless it navigated away",
    steps: [on, up,
      [{ type: "tab_found", tabId: 1, url: LAN }, [{ kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "verdict", host: "lan.example", speed: "fast", racesAttach: false }, [gate([1], ["lan.example"]), { kind: "await_idle", tabId: 1 }]],
      [{ type: "verdict", host: "lan.example", speed: "fast", racesAttach: false }, []],
      [{ type: "helper_idle", tabId: 1 }, [{ kind: "intercept", tabId: 1, on: false }]],
      [{ type: "helper_idle", tabId: 1 }, []],
      [{ type: "page_loaded", tabId: 1, url: LAN, speed: "fast" }, [{ kind: "list", tabId: 1 }]],
      // A navigation to a host not known fast: Fetch and Network on before the new page asks for subresources.
      [{ type: "navigation_started", tabId: 1, url: FAR, speed: "unknown" },
        [{ kind: "intercept", tabId: 1, on: true }, { kind: "page_start", tabId: 1, url: FAR }, { kind: "preconnect", url: FAR, tabId: 1 }]],
      [{ type: "navigation_started", tabId: 1, url: FAR, speed: "unknown" }, [{ kind: "preconnect", url: FAR, tabId: 1 }]],
      [{ type: "verdict", host: "far.lan.example", speed: "fast", racesAttach: false }, [gate([1], ["far.lan.example", "lan.example"]), { kind: "await_idle", tabId: 1 }]],
      [{ type: "navigation_started", tabId: 1, url: "http://slow.lan.example/", speed: "slow" }, [{ kind: "preconnect", url: "http://slow.lan.example/", tabId: 1 }]],
      [{ type: "helper_idle", tabId: 1 }, []]],
    check: (s) => assert.equal(attachedButLeft(s, 1), false),
  },
  {
    name: "an attached tab navigating to a known-fast host is left to the browser at once, its page load begun",
    steps: [on, up,
      [{ type: "tab_found", tabId: 1, url: FAR }, [{ kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, [{ kind: "intercept", tabId: 1, on: false }, { kind: "page_start", tabId: 1, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, [{ kind: "page_start", tabId: 1, url: LAN }]]],
    check: (s) => assert.equal(attachedButLeft(s, 1), true),
  },
  {
    name: "a fast verdict that ends drops the allow rule; other sites' fast hosts never get one",
    steps: [on, up,
      [{ type: "verdict", host: "lan.example", speed: "fast", racesAttach: false }, [gate([], ["lan.example"])]],
      [{ type: "verdict", host: "elsewhere.test", speed: "fast", racesAttach: false }, []],
      [{ type: "verdict", host: "lan.example", speed: "unknown", racesAttach: false }, [gate()]],
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: false }, []]],
  },
  {
    name: "a host slow enough to race the attach is let through by the gate: attach and preconnect at the navigation's start, its page load begun then (the document is the browser's), no navigation again",
    steps: [on, up,
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [gate([], ["lan.example"])]],
      racingStart(1, LAN),
      [{ type: "attached", tabId: 1, ok: true }, [gate([1], ["lan.example"])]],
      // the helper has a flight for the page: nothing more to do
      [{ type: "flight_plan", url: LAN, flight: true, late: false }, []],
      [{ type: "navigation_committed", tabId: 1, url: LAN, speed: "slow" }, []],
      // the tab's next page: intercepted as any attached tab's
      [{ type: "navigation_started", tabId: 1, url: `${LAN}/next`, speed: "slow" }, [{ kind: "preconnect", url: `${LAN}/next`, tabId: 1 }]]],
    check: (s) => assert.deepEqual([s.tabs.get(1)?.attached, s.tabs.get(1)?.intercepting, s.tabs.get(1)?.renavigate], [true, true, null]),
  },
  {
    name: "a racing page with no flight is navigated again once attached (its document then comes through the helper); an answer too late, or for another URL, changes nothing",
    steps: [on, up,
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [gate([], ["lan.example"])]],
      racingStart(1, LAN),
      [{ type: "flight_plan", url: `${LAN}/other`, flight: false, late: false }, []],
      [{ type: "flight_plan", url: LAN, flight: false, late: false }, []],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1], ["lan.example"]), { kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }]],
      // a second answer for the same URL (a stale one) does not navigate again
      [{ type: "flight_plan", url: LAN, flight: false, late: false }, []],
      // tab 2 goes to a host not racing yet: attached as before; tab 3 races, and its answer is too late: left as it is
      [{ type: "navigation_started", tabId: 2, url: FAR, speed: "slow" }, [{ kind: "preconnect", url: FAR, tabId: 2 }, { kind: "attach", tabId: 2 }]],
      [{ type: "verdict", host: "far.lan.example", speed: "slow", racesAttach: true }, [gate([1], ["far.lan.example", "lan.example"])]],
      racingStart(3, FAR),
      [{ type: "attached", tabId: 3, ok: true }, [gate([1, 3], ["far.lan.example", "lan.example"])]],
      [{ type: "flight_plan", url: FAR, flight: false, late: true }, []]],
    check: (s) => assert.equal(s.tabs.get(3)?.racing, null),
  },
  {
    name: "a racing tab attached when the answer comes is navigated again at once; a new navigation drops the question",
    steps: [on, up,
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [gate([], ["lan.example"])]],
      racingStart(1, LAN),
      [{ type: "attached", tabId: 1, ok: true }, [gate([1], ["lan.example"])]],
      [{ type: "flight_plan", url: LAN, flight: false, late: false }, [{ kind: "navigate", tabId: 1, url: LAN }]],
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }]],
      racingStart(2, LAN),
      [{ type: "navigation_started", tabId: 2, url: FAR, speed: "unknown" }, []],
      [{ type: "flight_plan", url: LAN, flight: false, late: false }, []]],
  },
  {
    name: "a racing local page (a private or loopback address) with no flight is not navigated again: its document never comes through the helper",
    steps: [[{ ...RULES, active: [LOCAL_SITE], enabled: [{ ...LOCAL_SITE, added: 0 }] }, [NO_GATE]], upLocal,
      [{ type: "verdict", host: "10.0.0.5", speed: "slow", racesAttach: true }, [gateLocal([], ["10.0.0.5"])]],
      racingStart(1, LOCAL),
      [{ type: "attached", tabId: 1, ok: true }, [gateLocal([1], ["10.0.0.5"])]],
      [{ type: "flight_plan", url: LOCAL, flight: false, late: false }, []]],
    check: (s) => assert.equal(s.tabs.get(1)?.racing, null),
  },
  {
    name: "a race verdict that ends (or an attach grown slower) drops its allow rule: the gate blocks that host again",
    steps: [on, up,
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [gate([], ["lan.example"])]],
      [{ type: "verdict", host: "far.lan.example", speed: "fast", racesAttach: false }, [gate([], ["far.lan.example", "lan.example"])]],
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, []],
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: false }, [gate([], ["far.lan.example"])]],
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [gate([], ["far.lan.example", "lan.example"])]],
      // a verdict that is not slow never races (an unknown host is probed first)
      [{ type: "verdict", host: "lan.example", speed: "unknown", racesAttach: true }, [gate([], ["far.lan.example"])]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]]],
  },
  {
    name: "a race host's navigation blocked all the same (the gate was not rewritten yet): navigated again once attached",
    steps: [on, up,
      [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [gate([], ["lan.example"])]],
      [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1], ["lan.example"]), { kind: "navigate", tabId: 1, url: LAN }]]],
  },
  {
    name: "without the helper a race host gets no allow rule either: the gate is empty",
    steps: [on,
      [{ type: "verdict", host: "lan.example", speed: "slow", racesAttach: true }, [NO_GATE]],
      [{ type: "helper", up: true }, [gate([], ["lan.example"])]],
      [{ type: "helper", up: false }, [NO_GATE]]],
  },
  {
    name: "a tab that commits another site is released; an unattached tab's open gate closes at its next commit",
    steps: [on, up,
      [{ type: "tab_found", tabId: 1, url: LAN }, [{ kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "navigation_committed", tabId: 1, url: "http://other.test/", speed: "unknown" }, [{ kind: "detach", tabId: 1 }, gate()]],
      [{ type: "navigation_blocked", tabId: 2, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 2 }, { kind: "attach", tabId: 2 }]],
      [{ type: "attached", tabId: 2, ok: false }, [gate([2]), { kind: "navigate", tabId: 2, url: LAN }]],
      [{ type: "navigation_committed", tabId: 2, url: LAN, speed: "slow" }, [gate()]]],
  },
  {
    name: "rules turned off: attached tabs off the active sites are released; a removed tab leaves the gate",
    steps: [on, up,
      [{ type: "tab_found", tabId: 1, url: LAN }, [{ kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "tab_found", tabId: 2, url: LAN }, [{ kind: "attach", tabId: 2 }]],
      [{ type: "attached", tabId: 2, ok: true }, [gate([1, 2])]],
      [{ type: "tab_removed", tabId: 2 }, [gate([1])]],
      [{ type: "rules", active: [], enabled: [], now: 0 },
        [{ kind: "gate", rules: [], openTabs: [1], allowHosts: [] }, { kind: "detach", tabId: 1 }, { kind: "gate", rules: [], openTabs: [], allowHosts: [] }]]],
  },
  {
    name: "the user cancelled the debugging bar: the tab is detached and no longer let through",
    steps: [on, up,
      [{ type: "tab_found", tabId: 1, url: LAN }, [{ kind: "attach", tabId: 1 }]],
      [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
      [{ type: "detached", tabId: 1 }, []],
      [RULES, [gate()]]],
    check: (s) => assert.equal(s.tabs.get(1)?.attached, false),
  },
  {
    name: "a site enabled in the last minute: its open tabs' hosts (else its name) are asked for, once per enabling",
    steps: [[{ type: "helper", up: true }, [NO_GATE]],
      [{ type: "tab_found", tabId: 3, url: "http://www.lan.example/p" }, []],
      [{ type: "rules", active: [SITE], enabled: [{ ...SITE, added: 1000 }], now: 2000 },
        [gate(), { kind: "preconnect", url: "http://www.lan.example/p", tabId: 3 }]],
      [{ type: "rules", active: [SITE], enabled: [{ ...SITE, added: 1000 }], now: 3000 }, [gate()]],
      [{ type: "tab_removed", tabId: 3 }, []],
      [{ type: "rules", active: [SITE], enabled: [{ ...SITE, added: 5000 }], now: 6000 }, [gate(), { kind: "preconnect", url: "http://lan.example/", tabId: null }]],
      [{ type: "rules", active: [SITE], enabled: [{ ...SITE, added: 7000 }], now: 7000 + JUST_ENABLED_MS }, [gate()]]],
  },
];

for (const c of cases) {
  test(c.name, () => {
    const state = play(c.steps);
    c.check?.(state);
  });
}

test("pure: the state given is never changed", () => {
  const before = reduce(INITIAL_POLICY, RULES).state;
  const snapshot = JSON.stringify([...before.tabs]);
  reduce(before, { type: "tab_found", tabId: 1, url: LAN });
  reduce(before, { type: "verdict", host: "lan.example", speed: "fast", racesAttach: false });
  assert.equal(JSON.stringify([...before.tabs]), snapshot);
  assert.deepEqual(before.fastHosts, []);
});

// While a tab is being attached: what changed meanwhile (the helper, the rules) is not lost when the attach ends.
const blocked: Step = [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]];

test("the helper went while the tab attached: the session comes up with interception off, then the blocked navigation goes on", () => {
  const state = play([on, up, blocked,
    [{ type: "helper", up: false }, [NO_GATE]],
    [{ type: "attached", tabId: 1, ok: true }, [NO_GATE, { kind: "intercept", tabId: 1, on: false }, { kind: "navigate", tabId: 1, url: LAN }]]]);
  assert.equal(attachedButLeft(state, 1), true);
});

test("the site was turned off while the tab attached: the session is released, then the blocked navigation goes on", () => {
  const state = play([on, up, blocked,
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }, { kind: "navigate", tabId: 1, url: LAN }]]]);
  assert.equal(state.tabs.get(1)?.attached, false);
});

test("the site was turned off while a tab attached from its navigation's start: released once attached", () => {
  const state = play([on, up,
    [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }]]]);
  assert.equal(state.tabs.get(1)?.attached, false);
});

const NEXT = "http://lan.example/next";
const startedA: Step = [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]];

test("a navigation begun while the tab attaches, and blocked only after the attach ended, is navigated again", () => {
  play([on, up, startedA,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []],
    [{ type: "navigation_started", tabId: 1, url: NEXT, speed: "slow" }, []],
    // the newer navigation, not the one it replaced
    [{ type: "attached", tabId: 1, ok: true }, [gate([1])]],
    [{ type: "navigation_blocked", tabId: 1, url: NEXT, speed: "slow" }, [{ kind: "navigate", tabId: 1, url: NEXT }]],
    [{ type: "navigation_blocked", tabId: 1, url: NEXT, speed: "slow" }, []]]);
});

test("a navigation elsewhere begun while the tab attaches is not undone by navigating again to the blocked page", () => {
  play([on, up, startedA,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []],
    [{ type: "navigation_started", tabId: 1, url: "http://other.test/", speed: "unknown" }, []],
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }]]]);
});

test("a navigation elsewhere begun while the blocked one's probe runs is not undone when the probe ends", () => {
  play([on, up,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
    [{ type: "navigation_started", tabId: 1, url: "http://other.test/", speed: "unknown" }, []],
    [{ type: "probe_ended", tabId: 1, url: LAN, speed: "unknown" }, []]]);
  play([on, up,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
    [{ type: "navigation_started", tabId: 1, url: "http://other.test/", speed: "unknown" }, []],
    [{ type: "probe_ended", tabId: 1, url: LAN, speed: "fast" }, []]]);
});

test("a navigation the gate blocked just before the site was turned off is navigated again, not left on the error page", () => {
  play([on, up,
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    // blocked by the rule the gate still held while it was being rewritten
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "navigate", tabId: 1, url: LAN }]],
    // never a site the gate did not block
    [{ type: "navigation_blocked", tabId: 1, url: "http://other.test/", speed: "slow" }, []],
    // once per tab: blocked again, it is not the old gate's (another extension blocks it too), and no loop begins
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "slow" }, []],
    [{ type: "navigation_blocked", tabId: 2, url: LAN, speed: "slow" }, [{ kind: "navigate", tabId: 2, url: LAN }]],
    // a later rewrite: what the gate dropped before it is forgotten
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    [{ type: "navigation_blocked", tabId: 3, url: LAN, speed: "slow" }, []]]);
});

test("a tab released once attached (its site turned off meanwhile) rewrites no gate: another tab's block by the old gate is still navigated again", () => {
  const state = play([on, up, blocked,
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    // the gate is as the rules event wrote it (the tab was never let through): detach, then the blocked page
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }, { kind: "navigate", tabId: 1, url: LAN }]],
    // tab 2 was blocked by the gate as it was before the site was dropped: not left on the error page
    [{ type: "navigation_blocked", tabId: 2, url: LAN, speed: "slow" }, [{ kind: "navigate", tabId: 2, url: LAN }]]]);
  assert.deepEqual(state.tabs.get(1), { url: "", attached: false, intercepting: false, gateOpen: false, renavigate: null, attaching: false,
    mayBeBlocked: null, probing: null, racing: null, awaitingIdle: null, attachWhenUp: false, letThrough: null });
});

// Another extension's block (ERR_BLOCKED_BY_CLIENT as well) of a page on an active site must not make a loop: the gate
// was rewritten to let the tab through before it was navigated again, so a block of that navigation is not the gate's.
test("a navigation let through unattached and blocked again (another extension blocks it) is left, not navigated again and again", () => {
  const blockedAgain = (tabId: number, url: string, speed: "fast" | "unknown" | "slow"): Step =>
    [{ type: "navigation_blocked", tabId, url, speed }, []];
  // The helper down: the gate blocks nothing, so no block is the gate's after the first one let through.
  play([on,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [NO_GATE, { kind: "navigate", tabId: 1, url: LAN }]],
    [{ type: "navigation_started", tabId: 1, url: LAN, speed: "unknown" }, []],
    blockedAgain(1, LAN, "unknown"),
    // the user goes elsewhere on the site: that page's block is the gate's again
    [{ type: "navigation_started", tabId: 1, url: FAR, speed: "unknown" }, []],
    [{ type: "navigation_blocked", tabId: 1, url: FAR, speed: "unknown" }, [NO_GATE, { kind: "navigate", tabId: 1, url: FAR }]]]);
  // A fast host behind its allow rule, found fast by a probe.
  play([on, up,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
    [{ type: "verdict", host: "lan.example", speed: "fast", racesAttach: false }, [gate([], ["lan.example"])]],
    [{ type: "probe_ended", tabId: 1, url: LAN, speed: "fast" }, [gate([], ["lan.example"]), { kind: "navigate", tabId: 1, url: LAN }]],
    [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, []],
    blockedAgain(1, LAN, "fast"),
    // once: the user's next try of it, if the gate blocks it then, goes on as before
    [{ type: "navigation_started", tabId: 1, url: LAN, speed: "fast" }, []],
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "fast" }, [gate([], ["lan.example"]), { kind: "navigate", tabId: 1, url: LAN }]],
    // it loaded this time: a later block of it (the allow rule gone meanwhile) is the gate's
    [{ type: "navigation_committed", tabId: 1, url: LAN, speed: "fast" }, [{ kind: "page_start", tabId: 1, url: LAN }]],
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "fast" }, [gate([], ["lan.example"]), { kind: "navigate", tabId: 1, url: LAN }]]]);
});

// A closed tab's session events can come after its removal (chrome.debugger.onDetach and tabs.onRemoved have no order):
// they leave nothing behind, or every later rewrite of the gate would still name the closed tab.
test("a tab closed while it attached, or before its detach was heard, leaves no state and no gate exception", () => {
  const state = play([on, up, blocked,
    [{ type: "tab_removed", tabId: 1 }, []],
    // the attach failed (no tab): nothing to let through, nothing to navigate
    [{ type: "attached", tabId: 1, ok: false }, []],
    [{ type: "tab_found", tabId: 2, url: LAN }, [{ kind: "attach", tabId: 2 }]],
    [{ type: "attached", tabId: 2, ok: true }, [gate([2])]],
    [{ type: "tab_removed", tabId: 2 }, [gate()]],
    [{ type: "detached", tabId: 2 }, []],
    [{ type: "navigation_blocked", tabId: 3, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 3 }, { kind: "attach", tabId: 3 }]],
    [{ type: "tab_removed", tabId: 3 }, []],
    // attached just before it closed: the session is let go
    [{ type: "attached", tabId: 3, ok: true }, [{ kind: "detach", tabId: 3 }]],
    [{ type: "navigation_blocked", tabId: 4, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 4, url: LAN }]],
    [{ type: "tab_removed", tabId: 4 }, []],
    [{ type: "probe_ended", tabId: 4, url: LAN, speed: "slow" }, []],
    [RULES, [gate()]]]);
  assert.deepEqual([...state.tabs.keys()], []);
});

test("the site turned off while a blocked navigation's probe ran: the page goes on unattached, no debugger for a site the user turned off", () => {
  play([on, up,
    [{ type: "navigation_blocked", tabId: 1, url: LAN, speed: "unknown" }, [{ kind: "probe", tabId: 1, url: LAN }]],
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    [{ type: "probe_ended", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "navigate", tabId: 1, url: LAN }]]]);
});

test("a fast host beyond the gate's room for allow rules is attached (then left to the browser), not let through into the block again", () => {
  let state = play([on, up]);
  // MAX_FAST_HOSTS + 1 fast hosts of the site, the first learned the oldest
  for (let i = 0; i <= MAX_FAST_HOSTS; i++) state = reduce(state, { type: "verdict", host: `h${i}.lan.example`, speed: "fast", racesAttach: false }).state;
  const OLDEST = "http://h0.lan.example/";
  const NEWEST = `http://h${MAX_FAST_HOSTS}.lan.example/`;
  const out = reduce(state, { type: "navigation_blocked", tabId: 1, url: OLDEST, speed: "fast" });
  assert.deepEqual(out.commands, [{ kind: "preconnect", url: OLDEST, tabId: 1 }, { kind: "attach", tabId: 1 }]);
  // a host with its allow rule is let through as before
  const newest = reduce(state, { type: "navigation_blocked", tabId: 2, url: NEWEST, speed: "fast" });
  assert.deepEqual(newest.commands.map((c) => c.kind), ["gate", "navigate"]);
});
