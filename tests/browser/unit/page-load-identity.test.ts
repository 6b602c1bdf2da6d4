// Page loads are never merged: a page load's identity is its top-level document request (and, without ids, the
// load event it had), not the tab and URL it is of.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { BrowserTiming } from "../../../extension/src/timings/browser-timing.js";
import { TimingStore, type NewRecord, type PageLoad } from "../../../extension/src/timings/timing-store.js";

const PAGE = "http://shop.example/";
const T0 = 1_700_000_000_000;

function record(id: string, change: Partial<NewRecord>): NewRecord {
  return {
    id, tabId: 7, pageUrl: PAGE, url: `${PAGE}img.png`, method: "GET", resourceType: "image", priority: "Medium", batchId: null,
    pausedAt: T0, answeredAt: null, outcome: "pending", reason: null, detail: null, status: null, bodyBytes: 0, timing: null,
    ...change,
  };
}

function idsByLoad(store: TimingStore): string[][] {
  return store.pageLoads(7).reverse().map((l) => store.pageLoad(l.id)?.records.map((r) => r.id) ?? []);
}

test("a load left to the browser, then an accelerated load of the same URL 3 s later: two entries", () => {
  const store = new TimingStore();
  // The left-to-browser load: begun from its navigation, listed from the page's own Resource Timing after its load.
  store.newPage(7, PAGE, T0);
  store.pageEvent(7, PAGE, "loaded", T0 + 200);
  store.add(record("rt1", { url: PAGE, resourceType: "document", pausedAt: T0 + 5, outcome: "passed", reason: "low_latency" }));
  store.add(record("rt2", { pausedAt: T0 + 50, outcome: "passed", reason: "low_latency" }));
  // 3 s later the same URL through the helper; nobody said a new page started (the navigation was merged by URL).
  store.add(record("r1", { url: PAGE, resourceType: "Document", networkId: "N2", pausedAt: T0 + 3200 }));
  store.add(record("r2", { networkId: "N3", pausedAt: T0 + 3300 }));
  assert.deepEqual(idsByLoad(store), [["rt1", "rt2"], ["r1", "r2"]]);
  const [newest, older] = store.pageLoads(7) as [PageLoad, PageLoad];
  assert.equal(newest.documentRequest, "N2");
  assert.equal(newest.startedAt, T0 + 3200);
  assert.equal(older.loadedAt, T0 + 200, "the first load keeps its own load event");
});

test("another document request id is another load, even before any load event", () => {
  const store = new TimingStore();
  store.newPage(7, PAGE, T0);
  store.add(record("a", { url: PAGE, resourceType: "Document", networkId: "N1" }));
  store.add(record("b", { url: PAGE, resourceType: "Document", networkId: "N9", pausedAt: T0 + 900 }));
  assert.deepEqual(idsByLoad(store), [["a"], ["b"]]);
});

test("one navigation stays one load: its redirect (same request id), frames, the page's own listing after load", () => {
  const store = new TimingStore();
  store.newPage(7, PAGE, T0);
  store.add(record("doc", { url: PAGE, resourceType: "Document", networkId: "N1" }));
  store.add(record("moved", { url: `${PAGE}#top`, pageUrl: `${PAGE}#top`, resourceType: "Document", networkId: "N1", pausedAt: T0 + 10 }));
  store.add(record("frame", { url: "http://ads.example/frame.html", resourceType: "Document", networkId: "N4", pausedAt: T0 + 20 }));
  store.pageEvent(7, PAGE, "loaded", T0 + 300);
  // Listed after the load event, but asked for before it, without an id: the same load.
  store.add(record("late", { url: PAGE, resourceType: "document", pausedAt: T0 + 1 }));
  store.add(record("xhr", { url: PAGE, resourceType: "fetch", pausedAt: T0 + 5000 }));
  assert.deepEqual(idsByLoad(store), [["doc", "moved", "frame", "late", "xhr"]]);
});

test("a redirected page load gets its DOMContentLoaded and load events (named by the URL it ended at)", () => {
  const store = new TimingStore();
  const moved = "http://shop.example/home#top";
  // Chromium: the document paused at the first URL begins the load; its redirect is paused again with the same
  // request id at the new URL (the same load); webNavigation names the events by the committed URL, fragment kept.
  store.newPage(7, PAGE, T0);
  store.add(record("doc", { url: PAGE, resourceType: "Document", networkId: "N1" }));
  store.add(record("hop", { url: moved, pageUrl: moved, resourceType: "Document", networkId: "N1", pausedAt: T0 + 10 }));
  store.pageEvent(7, moved, "contentLoaded", T0 + 200);
  store.pageEvent(7, moved, "loaded", T0 + 300, "Home");
  const [load] = store.pageLoads(7);
  assert.deepEqual([load?.contentLoadedAt, load?.loadedAt, load?.title, load?.url], [T0 + 200, T0 + 300, "Home", moved]);
  assert.deepEqual(idsByLoad(store), [["doc", "hop"]]);
  // Another page's late event still does not land on it.
  store.pageEvent(7, "http://other.example/", "loaded", T0 + 999);
  assert.equal(store.pageLoads(7)[0]?.loadedAt, T0 + 300);
});

test("a page load begun without the fragment its navigation named still gets its load event", () => {
  const store = new TimingStore();
  // CDP Network names a document without its fragment; webNavigation keeps it.
  store.newPage(7, PAGE, T0);
  store.pageEvent(7, `${PAGE}#reviews`, "loaded", T0 + 300);
  assert.equal(store.pageLoads(7)[0]?.loadedAt, T0 + 300);
});

test("the title read after a load event names that load, even when the page reloaded itself meanwhile", () => {
  const store = new TimingStore();
  store.newPage(7, PAGE, T0);
  // webNavigation.onCompleted: the load event at once, then again with the title chrome.tabs.get read for it.
  store.pageEvent(7, PAGE, "loaded", T0 + 300);
  // location.reload() in the page's load handler: the reload's document is paused before tabs.get answered.
  store.newPage(7, PAGE, T0 + 302);
  store.pageEvent(7, PAGE, "loaded", T0 + 300, "Shop");
  const [reload, first] = store.pageLoads(7) as [PageLoad, PageLoad];
  assert.deepEqual([reload.loadedAt, reload.title], [null, ""], "the reload has not loaded yet");
  assert.deepEqual([first.loadedAt, first.title], [T0 + 300, "Shop"]);
  // The reload's own load event still lands on it.
  store.pageEvent(7, PAGE, "loaded", T0 + 650);
  store.pageEvent(7, PAGE, "loaded", T0 + 650, "Shop again");
  assert.deepEqual(store.pageLoads(7).map((l) => [l.loadedAt, l.title]), [[T0 + 650, "Shop again"], [T0 + 300, "Shop"]]);
});

test("a private window's tab: its page loads are forgotten when it closes; another tab's stay listed", () => {
  const store = new TimingStore();
  store.newPage(7, PAGE, T0, true);
  store.add(record("doc", { url: PAGE, resourceType: "Document", networkId: "N1" }));
  store.add(record("secret", { requestHeaders: [["Cookie", "session=private"]] }));
  // A later load of the tab, begun by its own document (not told private): still the private tab's.
  store.add(record("next", { url: "http://shop.example/b", pageUrl: "http://shop.example/b", resourceType: "Document", networkId: "N2", pausedAt: T0 + 50 }));
  store.newPage(8, "http://open.example/", T0 + 100);
  store.add(record("open", { tabId: 8, pageUrl: "http://open.example/", url: "http://open.example/a.png" }));
  assert.equal(store.pageLoads(7).length, 2);
  // What the browser reported of a request of the tab no record took (yet): its head, Set-Cookie and all.
  const seen = { start: T0, end: T0 + 9, responseHeaders: [["Set-Cookie", "session=private"]] } as unknown as BrowserTiming;
  assert.equal(store.browserTiming("N9", "http://shop.example/late.js", seen, 7), false);
  store.tabClosed(7);
  store.tabClosed(8);
  assert.deepEqual(store.pageLoads(7), [], "nothing of the private tab is kept");
  assert.equal(store.get("secret"), undefined);
  assert.equal(store.get("next"), undefined);
  assert.equal(store.size, 1);
  assert.deepEqual(store.pageLoads(8).map((l) => l.url), ["http://open.example/"], "a closed tab's loads stay listed (the last 30)");
  store.newPage(9, PAGE, T0 + 200);
  assert.equal(store.add(record("late", { tabId: 9, url: "http://shop.example/late.js", networkId: "N9" })).browser, null,
    "nor what the browser reported of its requests");
});

test("Firefox: the document's redirect (its request id again at another URL) is the same load, of the URL it ends at", () => {
  const store = new TimingStore();
  const first = store.newPage(7, PAGE, T0, false, "ff-12");
  const hop = store.newPage(7, `${PAGE}home#top`, T0 + 400, false, "ff-12");
  assert.equal(hop.id, first.id, "a redirect hop began a load of its own (the first left empty, never loaded)");
  assert.equal(store.pageLoads(7).length, 1);
  assert.equal(hop.url, `${PAGE}home#top`);
  assert.equal(hop.startedAt, T0, "the load began with the first request");
  store.pageEvent(7, `${PAGE}home#top`, "loaded", T0 + 900);
  assert.equal(store.pageLoads(7)[0]?.loadedAt, T0 + 900);
  // Another request id (a reload of it, a link) is another load.
  const next = store.newPage(7, `${PAGE}home`, T0 + 5000, false, "ff-13");
  assert.notEqual(next.id, first.id);
  assert.equal(store.pageLoads(7).length, 2);
});

test("a private window's request that begins its tab's first load (none was begun) still has the tab forgotten at its close", () => {
  // No navigation was seen (the site was turned on after the page loaded, or the background started again): the
  // page's next request begins the load. It said it is a private window's; the load it begins is kept as such.
  const store = new TimingStore();
  store.add(record("xhr", { resourceType: "fetch", requestHeaders: [["Cookie", "session=private"]], privateBrowsing: true }));
  assert.equal(store.pageLoads(7).length, 1);
  store.tabClosed(7);
  assert.deepEqual(store.pageLoads(7), [], "nothing of the private tab is kept");
  assert.equal(store.get("xhr"), undefined);
});
