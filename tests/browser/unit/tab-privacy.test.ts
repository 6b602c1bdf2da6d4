// A tab whose private flag the browser has not told yet (Chromium) or a request without it (Firefox) counts as private for everything that writes or
// learns (tab-privacy.ts); an answer fills it in, a failed lookup leaves it unknown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { learned, treatedPrivate, type Incognito } from "../../../extension/src/tab-privacy.js";

test("unknown counts as private; only a tab known normal is not", () => {
  assert.equal(treatedPrivate(null), true);
  assert.equal(treatedPrivate(true), true);
  assert.equal(treatedPrivate(false), false);
  assert.equal(treatedPrivate(undefined), true, "Firefox: details without the field");
});

test("the browser's answer is taken; a failed lookup keeps what was known (unknown stays unknown, i.e. private)", () => {
  const states: Incognito[] = [null, true, false];
  for (const current of states) {
    assert.equal(learned(current, true), true);
    assert.equal(learned(current, false), false);
    assert.equal(learned(current, undefined), current);
    assert.equal(treatedPrivate(learned(current, undefined)), current !== false);
  }
});
