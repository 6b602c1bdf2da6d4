import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Batcher } from "../../../extension/src/batch/batcher.js";

function collect(options = { quietMs: 5, maxWaitMs: 40, maxItems: 100 }): { batcher: Batcher<number>; out: [string, number[]][] } {
  const out: [string, number[]][] = [];
  return { batcher: new Batcher<number>((key, items) => out.push([key, items]), options), out };
}

test("items arriving together under one key form one batch, keys stay apart", async () => {
  const { batcher, out } = collect();
  for (let i = 0; i < 5; i++) batcher.add("tab1|http://a", i);
  batcher.add("tab1|http://b", 9);
  assert.equal(out.length, 0, "nothing is sent synchronously");
  await sleep(30);
  assert.deepEqual(out.sort(), [["tab1|http://a", [0, 1, 2, 3, 4]], ["tab1|http://b", [9]]]);
});

test("a quiet page flushes early, long before the window ends", async () => {
  const { batcher, out } = collect({ quietMs: 5, maxWaitMs: 1000, maxItems: 100 });
  const start = performance.now();
  batcher.add("k", 1);
  while (out.length === 0) await sleep(1);
  assert.ok(performance.now() - start < 200, `flushed after ${performance.now() - start} ms`);
});

test("a steady trickle is cut at the maximum wait", async () => {
  const { batcher, out } = collect({ quietMs: 20, maxWaitMs: 60, maxItems: 100 });
  for (let i = 0; i < 20; i++) {
    batcher.add("k", i);
    await sleep(10);
  }
  await sleep(50);
  assert.ok(out.length >= 2, `expected the trickle to be cut, got ${out.length} batch(es)`);
  assert.deepEqual(out.flatMap(([, items]) => items), [...Array(20).keys()], "in order, none lost");
});

test("a full group is sent at once; dropped groups are returned, not sent", async () => {
  const { batcher, out } = collect({ quietMs: 50, maxWaitMs: 100, maxItems: 3 });
  batcher.add("k", 1);
  batcher.add("k", 2);
  batcher.add("k", 3);
  assert.deepEqual(out, [["k", [1, 2, 3]]]);
  batcher.add("1|x", 4);
  batcher.add("2|x", 5);
  assert.deepEqual(batcher.dropWhere((key) => key.startsWith("1|")), [4]);
  assert.equal(batcher.pending, 1);
  await sleep(80);
  assert.deepEqual(out, [["k", [1, 2, 3]], ["2|x", [5]]]);
});
