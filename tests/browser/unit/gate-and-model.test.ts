import { test } from "node:test";
import assert from "node:assert/strict";
import { gateRules, NavigationGate } from "../../../extension/src/intercept/navigation-gate.js";
import { estimateSavedMs } from "../../../extension/src/timings/time-saved-model.js";

test("gate: one blocking main-frame GET rule per site, attached tabs excluded", () => {
  const rules = gateRules([{ scope: "domain", name: "a.test" }, { scope: "host", name: "www.b.test" }], [4, 7]);
  assert.equal(rules.length, 2);
  assert.deepEqual(rules[0], {
    id: 1, priority: 1, action: { type: "block" },
    condition: { resourceTypes: ["main_frame"], requestMethods: ["get"], excludedTabIds: [4, 7], requestDomains: ["a.test"] },
  });
  const regex = new RegExp(rules[1]?.condition.regexFilter ?? "^$");
  assert.ok(regex.test("http://www.b.test:8080/page"));
  assert.ok(regex.test("https://www.b.test/"));
  assert.ok(!regex.test("http://x.www.b.test/"));
  assert.ok(!regex.test("http://wwwxb.test/"));
  assert.equal(gateRules([], []).length, 0);
  assert.equal(gateRules([{ scope: "domain", name: "a.test" }], [])[0]?.condition.excludedTabIds, undefined);
});

test("gate: a fast host gets an allow rule above the blocks, exact to the host (any port), ids after the blocks", () => {
  const rules = gateRules([{ scope: "domain", name: "a.test" }], [], ["fast.a.test", "10.0.0.2", "[::1]"]);
  assert.deepEqual(rules.map((r) => [r.id, r.priority, r.action.type]), [[1, 1, "block"], [2, 2, "allow"], [3, 2, "allow"], [4, 2, "allow"]]);
  const allow = new RegExp(rules[1]?.condition.regexFilter ?? "^$");
  assert.ok(allow.test("http://fast.a.test:8080/x") && allow.test("https://fast.a.test/"));
  assert.ok(!allow.test("http://slow.fast.a.test/") && !allow.test("http://fast.a.test.evil/"), "not its subdomains or look-alikes");
  assert.ok(new RegExp(rules[2]?.condition.regexFilter ?? "^$").test("http://10.0.0.2/") && !new RegExp(rules[2]?.condition.regexFilter ?? "^$").test("http://10.0.0.23/"));
  assert.ok(new RegExp(rules[3]?.condition.regexFilter ?? "^$").test("http://[::1]:8080/"));
  assert.deepEqual(rules[1]?.condition.resourceTypes, ["main_frame"]);
  assert.equal(gateRules([], [], Array.from({ length: 500 }, (_, i) => `h${i}.test`)).length, 200, "bounded");
});

const t = (queued: number, sent: number, first: number, last: number, connect: [number, number] | null = null) => ({
  timing: { queued, connect_start: connect?.[0] ?? null, connect_end: connect?.[1] ?? null, sent, first_byte: first, last_byte: last },
});

test("time saved: 12 pipelined requests on a 200 ms link save about one round trip", () => {
  // One connection (200 ms setup), 12 requests pipelined: all answered ~one round trip after sending.
  const records = Array.from({ length: 12 }, (_, i) => t(0, 200, 400 + i, 401 + i, i === 0 ? [0, 200] : null));
  // Baseline: 200 setup + ceil(12/6)=2 × 200 + 1 transfer = 601; real: 412.
  assert.equal(Math.round(estimateSavedMs(records)), 601 - 412);
});

test("time saved is never negative and ignores failed requests", () => {
  assert.equal(estimateSavedMs([t(0, 0, 50, 2000)]), 0);
  assert.equal(estimateSavedMs([{ timing: { queued: 0, connect_start: null, connect_end: null, sent: null, first_byte: null, last_byte: null } }]), 0);
  assert.equal(estimateSavedMs([]), 0);
});

test("gate: writes run in their tabs' queues out of decision order, and the newest state decided is what stays", async () => {
  let rules: { id: number; action: { type: string }; condition: { excludedTabIds?: number[] } }[] = [];
  const g = globalThis as { chrome?: unknown };
  const saved = g.chrome;
  g.chrome = { declarativeNetRequest: {
    getSessionRules: () => Promise.resolve(rules),
    updateSessionRules: (u: { removeRuleIds: number[]; addRules: typeof rules }) => {
      rules = [...rules.filter((r) => !u.removeRuleIds.includes(r.id)), ...u.addRules];
      return Promise.resolve();
    },
  } };
  try {
    const gate = new NavigationGate();
    const site = [{ scope: "domain" as const, name: "a.test" }];
    gate.want(site, []); // decided first (tab 1's event), its write waits behind tab 1's detach
    gate.want(site, [2]); // decided next: tab 2 attached, let through by the gate
    await gate.write(); // tab 2's queue writes first
    assert.deepEqual(rules.map((r) => r.condition.excludedTabIds), [[2]]);
    await gate.write(); // tab 1's write comes last: it must not block tab 2 again
    assert.deepEqual(rules.map((r) => r.condition.excludedTabIds), [[2]], "the older state must not land last");
  } finally {
    g.chrome = saved;
  }
});
