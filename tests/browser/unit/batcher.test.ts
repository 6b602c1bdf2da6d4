import { test } from "node:test";
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { Batcher, type BatcherOptions } from "../../../extension/src/batch/batcher.js";

/** A batcher on mock timers and a clock that move together (no real time): `advance` steps 1 ms at a time. */
function collect(t: TestContext, options: BatcherOptions = { quietMs: 5, maxWaitMs: 40, maxItems: 100 }) {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let now = 0;
  const out: [string, number[]][] = [];
  const sentAt: number[] = [];
  const batcher = new Batcher<number>((key, items) => (out.push([key, items]), sentAt.push(now)), options, () => now);
  const advance = (ms: number): void => {
    for (let i = 0; i < ms; i++) {
      now += 1;
      t.mock.timers.tick(1);
    }
  };
  return { batcher, out, sentAt, advance, now: () => now };
}

test("items arriving together under one key form one batch, keys stay apart", (t) => {
  const { batcher, out, advance } = collect(t);
  for (let i = 0; i < 5; i++) batcher.add("tab1|http://a", i);
  batcher.add("tab1|http://b", 9);
  assert.equal(out.length, 0, "nothing is sent synchronously");
  advance(5);
  assert.deepEqual(out.sort(), [["tab1|http://a", [0, 1, 2, 3, 4]], ["tab1|http://b", [9]]]);
});

test("a quiet page flushes after the quiet time, long before the window ends", (t) => {
  const { batcher, out, advance } = collect(t, { quietMs: 5, maxWaitMs: 1000, maxItems: 100 });
  batcher.add("k", 1);
  advance(4);
  assert.deepEqual(out, []);
  advance(1);
  assert.deepEqual(out, [["k", [1]]]);
});

test("a steady trickle is cut at the maximum wait", (t) => {
  const { batcher, out, sentAt, advance } = collect(t, { quietMs: 20, maxWaitMs: 60, maxItems: 100 });
  for (let i = 0; i < 20; i++) {
    batcher.add("k", i);
    advance(10);
  }
  advance(50);
  assert.deepEqual(out.map(([, items]) => items), [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 16, 17], [18, 19]],
    "each batch 60 ms after its first item (items every 10 ms), the last one after the quiet time");
  assert.deepEqual(sentAt, [60, 120, 180, 210]);
});

test("a full group is sent at once; dropped groups are returned, not sent", (t) => {
  const { batcher, out, advance } = collect(t, { quietMs: 50, maxWaitMs: 100, maxItems: 3 });
  batcher.add("k", 1);
  batcher.add("k", 2);
  batcher.add("k", 3);
  assert.deepEqual(out, [["k", [1, 2, 3]]]);
  batcher.add("1|x", 4);
  batcher.add("2|x", 5);
  assert.deepEqual(batcher.dropWhere((key) => key.startsWith("1|")), [4]);
  assert.equal(batcher.pending, 1);
  advance(50);
  assert.deepEqual(out, [["k", [1, 2, 3]], ["2|x", [5]]]);
});
