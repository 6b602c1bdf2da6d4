// The Chromium tab policy while a tab is being attached: what changed meanwhile (the helper, the rules) is not lost
// when the attach ends.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JUST_ENABLED_MS } from "../../../extension/src/sites/just-enabled.js";
import { INITIAL_POLICY, attachedButLeft, reduce, type PolicyState, type TabCommand, type TabEvent } from "../../../extension/src/intercept/tab-policy.js";

const SITE = { scope: "domain" as const, name: "lan.example" };
const RULES: TabEvent = { type: "rules", active: [SITE], enabled: [{ ...SITE, added: 0 }], now: JUST_ENABLED_MS };
const LAN = "http://lan.example/a";
const NO_GATE: TabCommand = { kind: "gate", rules: [], openTabs: [], allowHosts: [] };
const gate = (openTabs: number[] = [], allowHosts: string[] = []): TabCommand => ({ kind: "gate", rules: [SITE], openTabs, allowHosts });

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

const on: Step = [RULES, [NO_GATE]];
const up: Step = [{ type: "helper", up: true }, [gate()]];
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
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }, NO_GATE, { kind: "navigate", tabId: 1, url: LAN }]]]);
  assert.equal(state.tabs.get(1)?.attached, false);
});

test("the site was turned off while a tab attached from its navigation's start: released once attached", () => {
  const state = play([on, up,
    [{ type: "navigation_started", tabId: 1, url: LAN, speed: "slow" }, [{ kind: "preconnect", url: LAN, tabId: 1 }, { kind: "attach", tabId: 1 }]],
    [{ type: "rules", active: [], enabled: [], now: 0 }, [NO_GATE]],
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }, NO_GATE]]]);
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
    [{ type: "attached", tabId: 1, ok: true }, [{ kind: "detach", tabId: 1 }, gate()]]]);
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
