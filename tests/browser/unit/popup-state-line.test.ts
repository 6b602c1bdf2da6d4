// The popup's first line in every state a person can meet, worded for someone who never heard of pipelining.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HelperState } from "../../../extension/src/bridge/helper-state.js";
import { emptyCounts, type TabCounts } from "../../../extension/src/timings/tab-counters.js";
import { reasonLines, stateLine, type StateInput } from "../../../extension/src/ui/popup/state-line.js";

const CONNECTED: HelperState = { status: "connected", version: "0.1.0", capabilities: [] };

function input(change: Partial<StateInput> = {}, counts: Partial<TabCounts> = {}): StateInput {
  return {
    helper: CONNECTED, webPage: true, siteOn: true, sessionOff: false, problem: null,
    counts: { ...emptyCounts("http://shop.example/"), ...counts }, ...change,
  };
}

test("accelerated requests: the share through lanefetch, the time saved only when it is worth saying", () => {
  const some = stateLine(input({}, { accelerated: 23, passed: { low_latency: 2 }, savedMs: 1234 }));
  assert.deepEqual(some, { headline: "Faster: 23 of 25 requests through lanefetch", detail: "About 1.2 s saved (estimate)", tone: "good" });
  const all = stateLine(input({}, { accelerated: 5, savedMs: 0 }));
  assert.equal(all.headline, "Faster: all 5 requests through lanefetch");
  assert.equal(all.detail, null, "no \"0 ms saved\"");
  assert.equal(stateLine(input({}, { accelerated: 1, savedMs: 40 })).detail, null, "40 ms is noise: not shown");
  assert.equal(stateLine(input({}, { accelerated: 1 })).headline, "Faster: the one request through lanefetch");
});

test("everything left to the browser on a fast connection: not needed here, in plain words", () => {
  const s = stateLine(input({}, { passed: { low_latency: 14 } }));
  assert.equal(s.headline, "Not needed here: this connection is already fast");
  assert.equal(s.tone, "quiet");
  assert.doesNotMatch(`${s.headline} ${s.detail ?? ""}`, /pipelin|latency|RTT|origin/i);
});

test("left to the browser for another reason: the main reason in plain words", () => {
  const s = stateLine(input({}, { passed: { local_document: 3, low_latency: 1 } }));
  assert.equal(s.headline, "All 4 requests left to the browser");
  assert.equal(s.detail, "Mostly because the page is on this computer or the local network.");
  assert.equal(stateLine(input({}, { passed: { helper_unavailable: 2 } })).tone, "bad");
});

test("helper missing, outdated or stopped; site off; not a web page; nothing counted yet", () => {
  const missing = stateLine(input({ helper: { status: "not_installed", message: "not found" } }, { passed: { helper_missing: 4 } }));
  assert.equal(missing.headline, "Helper not installed — run `lanefetch install`");
  assert.equal(missing.tone, "bad");
  // Without a usable helper nothing is paused: the popup says the page was left to the browser, and why.
  assert.equal(missing.detail, "Until then pages are left to the browser, which loads them as it would without lanefetch.");
  assert.equal(stateLine(input({ helper: { status: "incompatible", message: "Update the helper." } })).detail, "Update the helper. Until then pages are left to the browser.");
  const stopped = stateLine(input({ helper: { status: "disconnected", message: "exit 1" } }));
  assert.deepEqual([stopped.headline, stopped.detail], ["The helper stopped — this page was left to the browser", "It starts again by itself; the next page load goes through it."]);
  assert.equal(stateLine(input({ helper: { status: "connecting" } })).headline, "The helper is starting — this page was left to the browser");
  assert.equal(stateLine(input({ siteOn: false })).headline, "Off for this site");
  assert.equal(stateLine(input({ webPage: false })).headline, "lanefetch works on web pages only");
  assert.equal(stateLine(input({ sessionOff: true })).headline, "Off until the browser restarts");
  assert.equal(stateLine(input({ problem: "The browser is set to use a proxy" })).tone, "bad");
  assert.equal(stateLine(input()).headline, "On — reload the page to load it through lanefetch");
});

test("the breakdown: one plain line per reason, most first", () => {
  assert.deepEqual(reasonLines({ method: 1, low_latency: 14 }).map((l) => l.text), [
    "14 because the connection to this site is already fast",
    "1 because it sends data to the site (lanefetch only speeds up downloads)",
  ]);
});
