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
    sessions: { mainFrameId: () => "MAIN" } as unknown as BrowserTabContext["sessions"], speed: { verdict: () => ({ rttMs: 0.4 }) } as unknown as BrowserTabContext["speed"],
    counters, timings, pageUrl: () => PAGE, startPage: (tabId, url, key) => void timings.newPage(tabId, url, T0, false, key), attachedButLeft: () => true,
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

/** CDP Network.requestWillBeSent of a document: the top one (frame "MAIN") or a frame's; `sessionId`: a child
 * session's (an out-of-process frame). */
function documentAsked(records: BrowserTabRecords, requestId: string, url: string, frameId: string, sessionId?: string): void {
  records.networkEvent(5, sessionId, "Network.requestWillBeSent", { requestId, loaderId: requestId, frameId, type: "Document", request: { url } });
}

test("a frame's requests finishing after the tab navigated are filed under the load the frame was part of", () => {
  const timings = new TimingStore();
  const counters = new TabCounters();
  const records = new BrowserTabRecords(context(timings, counters));
  documentAsked(records, "D1", PAGE, "MAIN");
  const first = timings.currentLoadId(5);
  // Two frames of the first page: one in the page's process, one out of process (its child session).
  documentAsked(records, "F1", "http://lan.test/frame.html", "FRAME-1");
  documentAsked(records, "F2", "http://ads.test/frame.html", "FRAME-2", "child-session");
  // The user follows a link: the next page's load begins before the first page's frames are done.
  documentAsked(records, "D2", `${PAGE}next`, "MAIN");
  const next = timings.currentLoadId(5);
  assert.notEqual(next, first);
  counters.newPage(5, `${PAGE}next`);
  // The first frame's document heard again (a redirect, its request id again): still the first load's.
  documentAsked(records, "F1", "http://lan.test/frame2.html", "FRAME-1");
  records.unpausedFinished("F1", "http://lan.test/frame2.html", finishedTiming(T0 + 30), seen("Document", "F1"));
  records.unpausedFinished("S1", "http://lan.test/frame.js", finishedTiming(T0 + 40), seen("Script", "F1"));
  records.unpausedFinished("S2", "http://ads.test/ad.png", finishedTiming(T0 + 50), seen("Image", "F2"));
  assert.deepEqual(timings.pageLoad(first ?? "")?.records.map((r) => r.url),
    ["http://lan.test/frame2.html", "http://lan.test/frame.js", "http://ads.test/ad.png"], "the first load keeps its frames' requests");
  assert.deepEqual(timings.pageLoad(next ?? "")?.records.map((r) => r.url), [], "nothing of the first page's frames in the next");
  assert.deepEqual(counters.get(5).passed, {}, "nor in the next page's counters");
  // A frame of the new page: its requests are the new load's, counted.
  documentAsked(records, "F3", "http://lan.test/frame3.html", "FRAME-3");
  records.unpausedFinished("S3", "http://lan.test/f3.css", finishedTiming(T0 + 60), seen("Stylesheet", "F3"));
  assert.deepEqual(timings.pageLoad(next ?? "")?.records.map((r) => r.url), ["http://lan.test/f3.css"]);
  assert.deepEqual(counters.get(5).passed, { low_latency: 1 });
});

test("a frame's request whose load is no longer kept is dropped, not filed under the current load", () => {
  const timings = new TimingStore({ pageLoads: 1, recordsPerLoad: 100 });
  const counters = new TabCounters();
  const records = new BrowserTabRecords(context(timings, counters));
  documentAsked(records, "D1", PAGE, "MAIN");
  documentAsked(records, "F1", "http://lan.test/frame.html", "FRAME-1");
  documentAsked(records, "D2", `${PAGE}next`, "MAIN"); // the first load is dropped (one kept)
  records.unpausedFinished("S1", "http://lan.test/frame.js", finishedTiming(T0 + 40), seen("Script", "F1"));
  assert.deepEqual(timings.pageLoad(timings.currentLoadId(5) ?? "")?.records, []);
  assert.deepEqual(counters.get(5).passed, {});
});
