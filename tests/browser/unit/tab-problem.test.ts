// What the popup's notice says went wrong on a tab (background/tab-problem.ts): an earlier page's problem is not
// shown on the page the tab went on to.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CANCELLED_BAR, problemAfterCommit, problemShown } from "../../../extension/src/background/tab-problem.js";

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

test("the cancelled debugging bar is the tab's problem only while its site stays off: turned on again, it is not said", () => {
  assert.equal(problemShown(CANCELLED_BAR, { sessionOff: true }), CANCELLED_BAR);
  assert.equal(problemShown(CANCELLED_BAR, { sessionOff: false }), null, "the popup said 'off until you turn it on' of a site turned on");
  assert.equal(problemShown("could not intercept this tab: x", { sessionOff: false }), "could not intercept this tab: x");
  assert.equal(problemShown(null, { sessionOff: true }), null);
  assert.equal(CANCELLED_BAR, CANCELLED);
});
