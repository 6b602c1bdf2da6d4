// Sites just turned on (sites/just-enabled.ts): which get a connection ahead of any page, once per enable.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JUST_ENABLED_MS, justEnabled, probeUrl } from "../../../extension/src/sites/just-enabled.js";

const A = { scope: "host" as const, name: "a.test" };
const B = { scope: "domain" as const, name: "b.test" };

test("a site enabled within the window and active is taken once", () => {
  const first = justEnabled([{ ...A, added: 1000 }], [A], [], 1000 + JUST_ENABLED_MS - 1);
  assert.deepEqual(first.sites.map((s) => s.name), ["a.test"]);
  const again = justEnabled([{ ...A, added: 1000 }], [A], first.taken, 1000 + 10);
  assert.deepEqual(again.sites, [], "the rules were read again (another storage change): not taken twice");
  assert.deepEqual(again.taken, first.taken);
});

test("too old, or enabled but not active (switched off for the session), is not taken", () => {
  assert.deepEqual(justEnabled([{ ...A, added: 0 }], [A], [], JUST_ENABLED_MS).sites, [], "a browser start, not the user's action");
  assert.deepEqual(justEnabled([{ ...A, added: 0 }], [B], [], 5).sites, []);
});

test("turned off and on again: a new enable time, taken again", () => {
  const first = justEnabled([{ ...A, added: 1000 }, { ...B, added: 1000 }], [A, B], [], 2000);
  assert.equal(first.sites.length, 2);
  const later = justEnabled([{ ...A, added: 5000 }, { ...B, added: 1000 }], [A, B], first.taken, 6000);
  assert.deepEqual(later.sites.map((s) => [s.name, s.added]), [["a.test", 5000]]);
});

test("the keys taken stay bounded", () => {
  let taken: string[] = [];
  for (let i = 0; i < 1000; i++) taken = justEnabled([{ ...A, added: i }], [A], taken, i + 1).taken;
  assert.equal(taken.length, 256);
  assert.ok(taken.includes("host:a.test@999"), "the newest is kept");
});

test("a site's probe connects to its name over http", () => {
  assert.equal(probeUrl(B), "http://b.test/");
});
