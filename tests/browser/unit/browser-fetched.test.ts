// Requests Firefox fetched itself (stepped aside), listed from webRequest events.
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

test("response headers, when the listener asked for them, give the record its head and MIME type", () => {
  const timings = new TimingStore();
  const records = new BrowserFetchedRecords(new TabCounters(), timings, "wr", () => 1000);
  timings.newPage(1, "http://lan.test/", 990);
  records.passed(1, "http://lan.test/", request("7", "http://lan.test/app.js", "script"), "low_latency", "left", 1001);
  records.event("completed", {
    requestId: "7", url: "http://lan.test/app.js", timeStamp: 1009, statusCode: 200,
    responseHeaders: [{ name: "Content-Type", value: "text/javascript; charset=utf-8" }, { name: "X-Empty" }],
  });
  const r = timings.forTab(1).at(0);
  assert.ok(r?.browser);
  assert.equal(r.resourceType, "script");
  assert.deepEqual(r.browser.responseHeaders, [["Content-Type", "text/javascript; charset=utf-8"], ["X-Empty", ""]]);
  assert.equal(r.browser.mimeType, "text/javascript");
});

test("a redirect of a listed request is counted once, also when the store kept no record of it (its load full)", () => {
  const counters = new TabCounters();
  const timings = new TimingStore({ pageLoads: 2, recordsPerLoad: 1 });
  const records = new BrowserFetchedRecords(counters, timings, "wr", () => 1000);
  timings.newPage(1, "http://lan.test/", 990);
  records.passed(1, "http://lan.test/", request("1", "http://lan.test/a.png"), "low_latency", "left", 1001);
  // The load holds one record: the next is not kept. Its redirect asks again with the same request id.
  records.passed(1, "http://lan.test/", request("2", "http://lan.test/old.png"), "low_latency", "left", 1002);
  records.passed(1, "http://lan.test/", request("2", "http://lan.test/new.png"), "low_latency", "left", 1003);
  assert.equal(counters.get(1).passed.low_latency, 2);
});

test("a request whose private flag is not given is kept as a private window's: gone when its tab closes", () => {
  const timings = new TimingStore();
  const records = new BrowserFetchedRecords(new TabCounters(), timings, "wr", () => 1000);
  timings.newPage(1, "http://lan.test/", 990);
  timings.newPage(2, "http://lan.test/", 990);
  records.passed(1, "http://lan.test/", request("5", "http://lan.test/a.png"), "low_latency", "left", 1001);
  records.passed(2, "http://lan.test/", { ...request("6", "http://lan.test/a.png"), incognito: false }, "low_latency", "left", 1001);
  timings.tabClosed(1);
  timings.tabClosed(2);
  assert.equal(timings.get("wr5"), undefined, "unknown counts as private: not kept after its tab closed");
  assert.equal(timings.get("wr6")?.outcome, "passed", "a normal window's record is kept");
});
