// The timing view's choice of the load it shows (ui/panel/load-choice.ts): the user's pick while it is kept, else the
// newest (the tab's current one in DevTools), and an emptied view, never stale rows, once nothing is kept.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chooseLoad, emptyText } from "../../../extension/src/ui/panel/load-choice.js";

const p1 = { id: "p1", version: 4 };
const p2 = { id: "p2", version: 9 };

test("the view follows the newest load until the user picks one, and renders again only when the load changed", () => {
  assert.deepEqual(chooseLoad([], null, null), { kind: "empty", chosen: null, gone: false }, "nothing recorded yet");
  assert.deepEqual(chooseLoad([p1], null, null), { kind: "load", id: "p1", chosen: null });
  assert.deepEqual(chooseLoad([p1], null, p1), { kind: "same", id: "p1", chosen: null });
  assert.deepEqual(chooseLoad([{ ...p1, version: 5 }], null, p1), { kind: "load", id: "p1", chosen: null }, "it grew: again");
  assert.deepEqual(chooseLoad([p2, p1], null, p1), { kind: "load", id: "p2", chosen: null }, "the tab navigated: its new load");
  assert.deepEqual(chooseLoad([p2, p1], "p1", p2), { kind: "load", id: "p1", chosen: "p1" }, "the user's pick");
  assert.deepEqual(chooseLoad([p2, p1], "p1", p1), { kind: "same", id: "p1", chosen: "p1" }, "and it stays picked");
});

test("a shown load that is no longer kept gives way to the current load, and the pick is forgotten", () => {
  // The picked load was pushed out of the store (or its private tab closed): the newest is shown, and followed.
  assert.deepEqual(chooseLoad([p2], "p1", p1), { kind: "load", id: "p2", chosen: null });
  // A pick named by the page's address (?load=) that is not kept: the newest, as if none was given.
  assert.deepEqual(chooseLoad([p2], "p7", null), { kind: "load", id: "p2", chosen: null });
});

test("with no load left the view is emptied, saying the shown one is gone", () => {
  // The inspected private tab closed: its loads went with it; the view must not go on showing their rows.
  assert.deepEqual(chooseLoad([], "p1", p1), { kind: "empty", chosen: null, gone: true });
  assert.deepEqual(chooseLoad([], null, p1), { kind: "empty", chosen: null, gone: true });
  assert.match(emptyText(true, true), /no longer kept/);
  assert.match(emptyText(true, true), /next page load/);
  assert.doesNotMatch(emptyText(true, false), /next page load/);
  assert.match(emptyText(false, false), /No page loads recorded yet/);
});
