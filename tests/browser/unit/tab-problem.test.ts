// What the popup's notice says went wrong on a tab (background/tab-problem.ts): an earlier page's problem is not
// shown on the page the tab went on to.
import { test } from "node:test";
import assert from "node:assert/strict";
import { problemAfterCommit } from "../../../extension/src/background/tab-problem.js";

const CANCELLED = "You cancelled the debugging bar: lanefetch is off for this site until you turn it on again.";

test("a page on no active site drops the tab's earlier problem (the popup would say it on another site's page)", () => {
  assert.equal(problemAfterCommit(CANCELLED, { onActiveSite: false, attached: false, leftToBrowser: false }), null);
  assert.equal(problemAfterCommit("could not intercept this tab: x", { onActiveSite: false, attached: false, leftToBrowser: false }), null);
});

test("an active site's page keeps a problem until it is intercepted or left to the browser", () => {
  const p = "could not intercept this tab: x";
  assert.equal(problemAfterCommit(p, { onActiveSite: true, attached: false, leftToBrowser: false }), p);
  assert.equal(problemAfterCommit(p, { onActiveSite: true, attached: true, leftToBrowser: false }), null);
  assert.equal(problemAfterCommit(p, { onActiveSite: true, attached: false, leftToBrowser: true }), null);
});
