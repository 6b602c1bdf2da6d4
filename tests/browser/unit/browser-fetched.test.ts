// Requests the browser fetched itself, listed from webRequest events, and the claims of a second source (CDP Network
// while it still listens) that must not list them twice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BrowserFetchedRecords } from "../../../extension/src/timings/browser-fetched.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";

function request(id: string, url: string, type = "image") {
  return { requestId: id, url, method: "GET", type };
}

test("a listed request gets the browser's start, first byte, end and status", () => {
  const timings = new TimingStore();
  const records = new BrowserFetchedRecords(new TabCounters(), timings, "wr", () => 1000);
  timings.newPage(1, "http://lan.test/", 990);
  records.passed(1, "http://lan.test/", request("5", "http://lan.test/a.png"), "low_latency", "left", 1001);
  assert.equal(records.event("started", { requestId: "5", url: "http://lan.test/a.png", timeStamp: 1004 }), true);
  assert.equal(records.event("completed", { requestId: "5", url: "http://lan.test/a.png", timeStamp: 1009, statusCode: 200, ip: "10.0.0.1" }), true);
  assert.equal(records.event("completed", { requestId: "6", url: "http://lan.test/b.png", timeStamp: 1009 }), false, "not listed here");
  const r = timings.forTab(1).at(0);
  assert.ok(r?.browser);
  assert.equal(r.outcome, "passed");
  assert.deepEqual([r.browser.start, r.browser.headersEnd, r.browser.end, r.status, r.browser.remoteAddress], [1001, 1004, 1009, 200, "10.0.0.1"]);
});

test("claims: once per listed request of that tab and URL, none after the tab is forgotten", () => {
  const timings = new TimingStore();
  const records = new BrowserFetchedRecords(new TabCounters(), timings, "wr");
  records.passed(1, "http://lan.test/", request("1", "http://lan.test/a.png"), "low_latency", "left");
  records.passed(1, "http://lan.test/", request("2", "http://lan.test/a.png"), "low_latency", "left");
  records.passed(1, "http://lan.test/", request("3", "http://lan.test/b.png"), "low_latency", "left");
  assert.equal(records.claim(2, "http://lan.test/a.png"), false, "another tab");
  assert.equal(records.claim(1, "http://lan.test/a.png"), true);
  assert.equal(records.claim(1, "http://lan.test/a.png"), true, "listed twice");
  assert.equal(records.claim(1, "http://lan.test/a.png"), false, "claimed both");
  assert.equal(records.claim(1, "http://lan.test/c.png"), false, "never listed");
  records.forgetTab(1);
  assert.equal(records.claim(1, "http://lan.test/b.png"), false);
  assert.equal(timings.forTab(1).length, 3, "claims change no record");
});
