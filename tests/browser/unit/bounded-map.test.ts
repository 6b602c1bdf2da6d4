import { test } from "node:test";
import assert from "node:assert/strict";
import { setNewest } from "../../../extension/src/bounded-map.js";

test("setNewest keeps the newest entries, a key set again counting as new", () => {
  const m = new Map<string, number>();
  for (const [k, v] of [["a", 1], ["b", 2], ["c", 3]] as const) setNewest(m, k, v, 3);
  setNewest(m, "a", 10, 3); // a is the newest now: b goes first
  setNewest(m, "d", 4, 3);
  assert.deepEqual([...m], [["c", 3], ["a", 10], ["d", 4]]);
  setNewest(m, "e", 5, 1);
  assert.deepEqual([...m], [["e", 5]]);
});
