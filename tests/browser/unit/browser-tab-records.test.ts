// Chromium: a tab left to the browser is listed from its page's own Resource Timing once it loaded
// (background/browser-tab-records.ts), into the records of that page load.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BrowserTabRecords, type BrowserTabContext } from "../../../extension/src/background/browser-tab-records.js";
import type { BrowserTiming } from "../../../extension/src/timings/browser-timing.js";
import type { SeenRequest } from "../../../extension/src/timings/cdp-network-log.js";
import type { ResourceEntry } from "../../../extension/src/timings/resource-timing.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";

const PAGE = "http://lan.test/";
const T0 = 1_700_000_000_000;

function entry(url: string, over: Partial<ResourceEntry> = {}): ResourceEntry {
  return {
    url, initiatorType: "img", entryType: "resource", start: T0 + 20, dnsStart: 0, dnsEnd: 0, connectStart: 0, connectEnd: 0,
    sslStart: 0, requestStart: T0 + 21, responseStart: T0 + 25, end: T0 + 30, status: 200, protocol: "http/1.1",
    transferSize: 500, bodyBytes: 400, cached: false, ...over,
  };
}

/** chrome.scripting.executeScript answering with `frames` after running `meanwhile` (the page going on). */
async function withScripting<T>(frames: { frameId: number; result: ResourceEntry[] }[], meanwhile: () => void, run: () => Promise<T>): Promise<T> {
  const g = globalThis as { chrome?: unknown };
  const before = g.chrome;
  g.chrome = { scripting: { executeScript: () => Promise.resolve().then(() => { meanwhile(); return frames; }) } };
  try {
    return await run();
  } finally {
    g.chrome = before;
  }
}

function context(timings: TimingStore, counters = new TabCounters()): BrowserTabContext {
  return {
    sessions: {} as unknown as BrowserTabContext["sessions"], speed: { verdict: () => ({ rttMs: 0.4 }) } as unknown as BrowserTabContext["speed"],
    counters, timings, pageUrl: () => PAGE, startPage: () => undefined, attachedButLeft: () => true,
  };
}

test("the page reloads while its Resource Timing is read: the entries are the load that ended, not the reload's", async () => {
  const timings = new TimingStore();
  const first = timings.newPage(5, PAGE, T0);
  const counters = new TabCounters();
  const records = new BrowserTabRecords(context(timings, counters));
  const frames = [{ frameId: 0, result: [entry(PAGE, { entryType: "navigation", initiatorType: "navigation", start: T0 }), entry(`${PAGE}a.png`)] }];
  let reload = "";
  await withScripting(frames, () => {
    reload = timings.newPage(5, PAGE, T0 + 400).id;
    counters.newPage(5, PAGE);
  }, () => records.list(5));
  assert.deepEqual(timings.pageLoad(reload)?.records.map((r) => r.url), [], "nothing of the first load in the reload");
  assert.deepEqual(counters.get(5).passed, {}, "nor in the reloaded page's counters");
  assert.deepEqual(timings.pageLoad(first.id)?.records.map((r) => r.url), [PAGE, `${PAGE}a.png`], "the first load keeps its listing");
});

test("a loaded page's entries become its load's records, with the browser's timing", async () => {
  const timings = new TimingStore();
  const load = timings.newPage(5, PAGE, T0);
  const counters = new TabCounters();
  const records = new BrowserTabRecords(context(timings, counters));
  await withScripting([{ frameId: 0, result: [entry(`${PAGE}b.png`)] }], () => undefined, () => records.list(5));
  const [r] = timings.pageLoad(load.id)?.records ?? [];
  assert.deepEqual([r?.url, r?.outcome, r?.reason, r?.status, r?.browser?.headersEnd], [`${PAGE}b.png`, "passed", "low_latency", 200, T0 + 25]);
  assert.deepEqual(counters.get(5).passed, { low_latency: 1 });
});

function finishedTiming(start: number): BrowserTiming {
  return {
    start, dnsStart: null, dnsEnd: null, connectStart: null, connectEnd: null, sslStart: null, sslEnd: null, sendStart: null,
    sendEnd: null, headersEnd: start + 5, end: start + 10, status: 200, statusText: "OK", protocol: "http/1.1", mimeType: null,
    responseHeaders: [], remoteAddress: null, connectionId: null, encodedBytes: 100, bodyBytes: 100, fromCache: null, error: null,
  };
}

function seen(type: string, loaderId: string | null): SeenRequest {
  return { tabId: 5, method: "GET", type, priority: "Low", headers: [], loaderId };
}

test("a request of a load finishing after the tab reloaded the same URL stays with its own load, uncounted", () => {
  const timings = new TimingStore();
  const first = timings.newPage(5, PAGE, T0);
  const counters = new TabCounters();
  const records = new BrowserTabRecords(context(timings, counters));
  // CDP Network: the document's requestId is the loaderId of its own requests.
  records.unpausedFinished("D1", PAGE, finishedTiming(T0), seen("Document", "D1"));
  const reload = timings.newPage(5, PAGE, T0 + 400);
  counters.newPage(5, PAGE);
  records.unpausedFinished("S1", `${PAGE}slow.png`, finishedTiming(T0 + 50), seen("Image", "D1"));
  assert.deepEqual(timings.pageLoad(first.id)?.records.map((r) => r.url), [PAGE, `${PAGE}slow.png`], "the first load keeps it");
  assert.deepEqual(timings.pageLoad(reload.id)?.records.map((r) => r.url), [], "nothing of the first load in the reload");
  assert.deepEqual(counters.get(5).passed, {}, "nor in the reloaded page's counters");
  // The reload's own requests (its document not recorded yet: its loader is no load's) are the reload's.
  records.unpausedFinished("S2", `${PAGE}a.png`, finishedTiming(T0 + 450), seen("Image", "D2"));
  assert.deepEqual(timings.pageLoad(reload.id)?.records.map((r) => r.url), [`${PAGE}a.png`]);
  assert.deepEqual(counters.get(5).passed, { low_latency: 1 });
});
