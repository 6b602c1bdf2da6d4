// The record path of Firefox proxy mode: the helper's proxied / error / timing reports and Firefox's completed
// responses become the timing store's records and the tab's counters (what the popup and the timing panel read).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ToExtension } from "../../../extension/src/generated/protocol.js";
import { ProxiedRecords } from "../../../extension/src/proxy/proxied-records.js";
import type { PageContext } from "../../../extension/src/proxy/proxy-router.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { harEntry } from "../../../extension/src/timings/har.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";

const PAGE = "http://shop.example/";
const CONTEXT: PageContext = {
  contextId: "t7-1", tabId: 7, pageUrl: PAGE, port: 41000, splitPort: null, opening: null, routedTypes: new Map(),
  page: { address_space: "public", top_site: "http://shop.example", private_browsing: false },
};

function setup() {
  const counters = new TabCounters();
  const timings = new TimingStore();
  timings.newPage(7, PAGE);
  counters.newPage(7, PAGE);
  const records = new ProxiedRecords((id) => (id === CONTEXT.contextId ? CONTEXT : undefined), counters, timings, () => 1000);
  return { counters, timings, records };
}

function proxied(id: string, url: string, contextId = CONTEXT.contextId): ToExtension {
  return { type: "proxied", id, context_id: contextId, method: "GET", url, resource_type: "image", priority: "Low" };
}

function timing(id: string): ToExtension {
  return {
    type: "timing", id, retries: 0, wire_bytes: 2100, connection: null,
    timing: { queued: 1000, dns_start: null, dns_end: null, connect_start: null, connect_end: null, tls_end: null, sent: 1001, first_byte: 1050, last_byte: 1060 },
  };
}

test("proxied then timing: a fulfilled record of the page load, counted as accelerated; Firefox's status joins it", () => {
  const { counters, timings, records } = setup();
  records.handle(proxied("r1", `${PAGE}a.png`));
  assert.equal(timings.get("r1")?.outcome, "pending");
  records.handle(timing("r1"));
  assert.equal(timings.get("r1")?.answeredAt, 1060, "answered at the helper's last byte, not when the report arrived (now: 1000)");
  records.completed(7, `${PAGE}a.png`, 200, 1063);
  const r = timings.get("r1");
  assert.deepEqual([r?.outcome, r?.status, r?.bodyBytes, r?.batchId, r?.answeredAt], ["fulfilled", 200, 2100, null, 1063],
    "Firefox's own completion time is when the page had it");
  assert.equal(timings.pageLoads(7)[0]?.requests, 1);
  assert.deepEqual([counters.get(7).accelerated, counters.get(7).bytes], [1, 2100]);
  records.handle(proxied("r9", `${PAGE}late.png`));
  records.handle({ ...timing("r9"), timing: { ...(timing("r9") as { timing: object }).timing, queued: 990 } } as ToExtension);
  assert.equal(timings.get("r9")?.pausedAt, 990, "seen when the helper queued it, before its report arrived (1000)");
});

test("Firefox's status may come before the helper's report of the request", () => {
  const { timings, records } = setup();
  records.completed(7, `${PAGE}b.png`, 404, 1070);
  records.completed(8, `${PAGE}c.png`, 200); // another tab: not this record's
  records.handle(proxied("r2", `${PAGE}b.png`));
  records.handle(proxied("r3", `${PAGE}c.png`));
  assert.equal(timings.get("r2")?.status, 404);
  records.handle(timing("r2"));
  assert.equal(timings.get("r2")?.answeredAt, 1070, "Firefox's completion time kept");
  assert.equal(timings.get("r3")?.status, null);
});

test("an error before the timing: passed through (Firefox loaded it directly), counted with its reason", () => {
  const { counters, timings, records } = setup();
  records.handle(proxied("r4", `${PAGE}d.png`));
  records.handle({ type: "error", id: "r4", code: "blocked_address", message: "private address" });
  records.handle(timing("r4"));
  const r = timings.get("r4");
  assert.deepEqual([r?.outcome, r?.reason, r?.detail], ["passed", "blocked_address", "private address"]);
  assert.deepEqual(counters.get(7).passed, { blocked_address: 1 });
  assert.equal(counters.get(7).accelerated, 0);
  records.handle(proxied("r6", `${PAGE}e.png`, "unknown"));
  assert.equal(timings.get("r6"), undefined, "a context the router no longer knows: no record");
});

test("Firefox cancelled the request (say, a CORS failure): not a pass; the helper's timing settles it", () => {
  const { counters, timings, records } = setup();
  records.handle(proxied("r7", `${PAGE}font.ttf`));
  records.handle({ type: "error", id: "r7", code: "cancelled", message: "cancelled by the caller" });
  records.handle(timing("r7"));
  const r = timings.get("r7");
  assert.deepEqual([r?.outcome, r?.reason, r?.detail], ["fulfilled", null, "cancelled by Firefox"]);
  assert.deepEqual([counters.get(7).accelerated, counters.get(7).passed], [1, {}]);
});

test("a request the router sent direct (step-aside): a passed record with Firefox's own start, first byte, end and status", async () => {
  const { counters, timings, records } = setup();
  const { timelineOf } = await import("../../../extension/src/timings/phases.js");
  const request = { requestId: "91", url: `${PAGE}d.css`, method: "GET", type: "stylesheet" };
  records.passed(7, PAGE, request, "low_latency", "round trip to http://shop.example ~0.4 ms");
  records.passed(7, PAGE, request, "low_latency", "asked again after a redirect"); // one record per Firefox request
  assert.equal(records.firefoxEvent("started", { requestId: "91", url: request.url, timeStamp: 1004 }), true);
  assert.equal(records.firefoxEvent("completed", { requestId: "91", url: request.url, timeStamp: 1009, statusCode: 200, statusLine: "HTTP/1.1 200 OK", ip: "10.0.0.2" }), true);
  assert.equal(records.firefoxEvent("completed", { requestId: "92", url: `${PAGE}e.png`, timeStamp: 1009, statusCode: 200 }), false, "not one it fetched itself");
  const r = timings.get("ff91");
  assert.deepEqual([r?.outcome, r?.reason, r?.status, r?.resourceType, r?.networkId], ["passed", "low_latency", 200, "stylesheet", "91"]);
  assert.deepEqual([r?.browser?.start, r?.browser?.headersEnd, r?.browser?.end, r?.browser?.statusText, r?.browser?.remoteAddress], [1000, 1004, 1009, "OK", "10.0.0.2"]);
  assert.equal(r?.browser?.connectStart, null, "no connection phases: Firefox's webRequest has none");
  assert.deepEqual(counters.get(7).passed, { low_latency: 1 });
  assert.ok(r);
  const timeline = timelineOf(r);
  assert.deepEqual(timeline.segments.map((s) => [s.phase, s.from, s.to]), [["wait", 1000, 1004], ["receive", 1004, 1009]]);
  assert.equal(timeline.source, "browser");

  records.passed(7, PAGE, { ...request, requestId: "93", url: `${PAGE}gone.png`, type: "image" }, "low_latency", "");
  records.firefoxEvent("failed", { requestId: "93", url: `${PAGE}gone.png`, timeStamp: 1003, error: "NS_ERROR_CONNECTION_REFUSED" });
  assert.equal(timings.get("ff93")?.browser?.error, "NS_ERROR_CONNECTION_REFUSED");
});

test("a Firefox record has what Chromium's has: Firefox's type, both heads, the MIME type, decoded vs wire size (panel and HAR)", () => {
  const { timings, records } = setup();
  const url = `${PAGE}app.js`;
  // The router saw Firefox call it a script; the helper, without Sec-Fetch-Dest (http://), could only say "other".
  CONTEXT.routedTypes.set(url, "script");
  CONTEXT.routedTypes.set(`${PAGE}data`, "xmlhttprequest");
  try {
    records.handle({ ...proxied("s1", url), resource_type: "other", request_headers: [["Host", "shop.example"], ["Accept", "*/*"]] } as ToExtension);
    records.handle({ ...proxied("s2", `${PAGE}data`), resource_type: "other" } as ToExtension);
    records.handle({
      ...(timing("s1") as object), wire_bytes: 1432,
      response: { status: 200, headers: [["Content-Type", "text/javascript; charset=utf-8"], ["Content-Encoding", "gzip"]], body_bytes: 1195, decoded_body_bytes: 4210 },
    } as ToExtension);
    const r = timings.get("s1");
    assert.ok(r);
    assert.equal(r.resourceType, "script");
    assert.equal(timings.get("s2")?.resourceType, "fetch", "xmlhttprequest: fetch() or XHR");
    assert.deepEqual(r.requestHeaders, [["Host", "shop.example"], ["Accept", "*/*"]]);
    assert.equal(r.bodyBytes, 4210, "the body as the page has it, decoded");
    assert.equal(r.status, 200, "the status the helper wrote, before Firefox's completion says it");
    const entry = harEntry(r);
    assert.deepEqual(entry.request.headers, [{ name: "Host", value: "shop.example" }, { name: "Accept", value: "*/*" }]);
    assert.deepEqual(entry.response.headers.map((h) => h.name), ["Content-Type", "Content-Encoding"]);
    assert.deepEqual(entry.response.content, { size: 4210, mimeType: "text/javascript; charset=utf-8" });
    assert.deepEqual([entry.response.bodySize, entry.response._transferSize], [1195, 1432], "coded body; head and body on the wire");
    assert.equal((entry as unknown as { _resourceType: string })._resourceType, "script");
  } finally {
    CONTEXT.routedTypes.clear();
  }
});

test("an identity body: the same size in the panel as in Chromium (not the wire's head and body)", () => {
  const { timings, records } = setup();
  records.handle(proxied("i1", `${PAGE}favicon.ico`));
  records.handle({
    ...(timing("i1") as object), wire_bytes: 432,
    response: { status: 200, headers: [["Content-Type", "image/x-icon"], ["Content-Length", "195"]], body_bytes: 195, decoded_body_bytes: 195 },
  } as ToExtension);
  assert.equal(timings.get("i1")?.bodyBytes, 195);
});

test("a completion Firefox served from its own cache is no later proxied request's: its status and time stay off it", () => {
  const timings = new TimingStore();
  timings.newPage(7, PAGE, 1000);
  let now = 1000;
  const records = new ProxiedRecords((id) => (id === CONTEXT.contextId ? CONTEXT : undefined), new TabCounters(), timings, () => now);
  const logo = `${PAGE}logo.png`;
  records.handle(proxied("a1", logo));
  records.handle(timing("a1"));
  records.completed(7, logo, 200, 1063);
  // The next page of the site: Firefox answers the logo from its cache, never asking the proxy (no report follows).
  now = 20_000;
  records.completed(7, logo, 200, 20_000);
  // A minute later a reload that bypasses the cache sends it through the helper; the server now says 404.
  now = 80_000;
  records.handle(proxied("a2", logo));
  const fresh = timings.get("a2");
  assert.deepEqual([fresh?.status, fresh?.answeredAt], [null, null], "not the cached answer's status and time of a minute ago");
  records.completed(7, logo, 404, 80_050);
  assert.deepEqual([timings.get("a2")?.status, timings.get("a2")?.answeredAt], [404, 80_050]);
  // The race the early statuses are for still holds: Firefox's completion just before the report.
  records.completed(7, `${PAGE}raced.png`, 200, 80_060);
  now = 80_070;
  records.handle(proxied("a3", `${PAGE}raced.png`));
  assert.deepEqual([timings.get("a3")?.status, timings.get("a3")?.answeredAt], [200, 80_060]);
});

test("Firefox's status of a reloaded page's request is that request's, not the one the previous load left unanswered", () => {
  const { timings, records } = setup();
  const url = `${PAGE}slow.png`;
  // Reloaded while loading: the first load's request never completes in Firefox (no status).
  records.handle(proxied("u1", url));
  timings.newPage(7, PAGE, 2000);
  // The reload's request completes before the helper's report of it arrives.
  records.completed(7, url, 200, 2100);
  records.handle(proxied("u2", url));
  assert.deepEqual([timings.get("u2")?.status, timings.get("u2")?.answeredAt], [200, 2100]);
  assert.deepEqual([timings.get("u1")?.status, timings.get("u1")?.answeredAt], [null, null], "the first load's stays unanswered");
});

test("a private window's proxied request with no page load begun: its records go when its tab closes", () => {
  // The document went direct (the site was turned on after it loaded): the page's next request begins the load.
  const counters = new TabCounters();
  const timings = new TimingStore();
  const secret: PageContext = { ...CONTEXT, page: { ...CONTEXT.page, private_browsing: true } };
  const records = new ProxiedRecords((id) => (id === secret.contextId ? secret : undefined), counters, timings, () => 1000);
  records.handle({ ...proxied("r1", `${PAGE}api`), request_headers: [["Cookie", "session=private"]] } as ToExtension);
  assert.equal(timings.pageLoads(7).length, 1);
  timings.tabClosed(7);
  assert.deepEqual(timings.pageLoads(7), [], "nothing of the private tab is kept");
  assert.equal(timings.get("r1"), undefined);
  // Nor one Firefox fetched itself (stepped aside), begun the same way.
  records.passed(9, PAGE, { requestId: "f1", url: `${PAGE}b.png`, method: "GET", type: "image", incognito: true }, "low_latency", "fast");
  assert.equal(timings.pageLoads(9).length, 1);
  timings.tabClosed(9);
  assert.deepEqual(timings.pageLoads(9), []);
});

test("a request routed before a navigation is filed under the load it was routed in, even when its report comes after", () => {
  const { counters, timings, records } = setup();
  const first = timings.currentLoadId(7);
  // Routed while the first page loads; its report waits in Firefox's queue for the proxy and the native port.
  records.pin(7, `${PAGE}old.png`, "ff-1")();
  // The user follows a link: a new load of the tab (and new counters) begins before the report arrives.
  const next = timings.newPage(7, `${PAGE}next`, 2000);
  counters.newPage(7, `${PAGE}next`);
  records.pin(7, `${PAGE}new.png`, "ff-2")();
  records.handle(proxied("o1", `${PAGE}old.png`));
  records.handle(proxied("n1", `${PAGE}new.png`));
  assert.equal(timings.get("o1")?.pageLoadId, first, "the old page's request stays in the old load");
  assert.equal(timings.get("o1")?.pageUrl, PAGE);
  assert.equal(timings.get("n1")?.pageLoadId, next.id);
  assert.deepEqual(timings.pageLoad(next.id)?.records.map((r) => r.id), ["n1"]);
  records.handle(timing("o1"));
  records.handle(timing("n1"));
  assert.equal(timings.get("o1")?.outcome, "fulfilled");
  assert.equal(counters.get(7).accelerated, 1, "only the new page's request counts in the new page's counters");
  // Firefox completes the old page's request (named by its own id): the status is that record's.
  records.completed(7, `${PAGE}old.png`, 203, 2050, "ff-1");
  assert.deepEqual([timings.get("o1")?.status, timings.get("o1")?.answeredAt], [203, 2050]);
});

test("a routed request Firefox dropped before the helper read it leaves its URL's next report to the load it was routed in", () => {
  const { timings, records } = setup();
  const url = `${PAGE}hero.jpg`;
  records.pin(7, url, "ff-1")();
  const next = timings.newPage(7, PAGE, 2000); // a reload: the first load's request is cancelled unsent
  records.pin(7, url, "ff-2")();
  void records.firefoxEvent("failed", { requestId: "ff-1", url, timeStamp: 2001, error: "NS_BINDING_ABORTED" });
  records.handle(proxied("h2", url));
  assert.equal(timings.get("h2")?.pageLoadId, next.id);
});

test("a report whose routed load is no longer kept is dropped, not filed under the current load", () => {
  const counters = new TabCounters();
  const timings = new TimingStore({ pageLoads: 2, recordsPerLoad: 100 });
  timings.newPage(7, PAGE, 1000);
  const records = new ProxiedRecords((id) => (id === CONTEXT.contextId ? CONTEXT : undefined), counters, timings, () => 1000);
  records.pin(7, `${PAGE}a.png`, "ff-1")();
  timings.newPage(7, `${PAGE}b`, 2000);
  const last = timings.newPage(7, `${PAGE}c`, 3000); // the first load is dropped as the oldest
  records.handle(proxied("a1", `${PAGE}a.png`));
  assert.equal(timings.get("a1"), undefined);
  assert.equal(timings.pageLoad(last.id)?.records.length, 0);
  // A request routed before any load began (nothing to pin to) is the current load's, as before.
  records.pin(8, `${PAGE}x.png`, "ff-3")();
  records.handle(proxied("x1", `${PAGE}a.png`));
  assert.equal(timings.get("x1")?.pageLoadId, last.id);
});

test("a routed request Firefox completed without the helper (failed over direct) leaves the URL's later report to the current load", () => {
  const counters = new TabCounters();
  const timings = new TimingStore();
  timings.newPage(7, PAGE, 1000);
  let now = 1000;
  const records = new ProxiedRecords((id) => (id === CONTEXT.contextId ? CONTEXT : undefined), counters, timings, () => now);
  const url = `${PAGE}logo.png`;
  records.pin(7, url, "ff-1")();
  records.completed(7, url, 200, 1010, "ff-1"); // no report follows: the proxy failed over to a direct connection
  const next = timings.newPage(7, `${PAGE}next`, 9000);
  now = 9000;
  records.handle(proxied("l2", url)); // the next page's request of that URL, not routed here (say, before a restart)
  assert.equal(timings.get("l2")?.pageLoadId, next.id);
  // Within the bound the report may still be on its way, racing Firefox's completion: it takes its pin.
  records.pin(7, url, "ff-2")();
  timings.newPage(7, `${PAGE}third`, 9100);
  records.completed(7, url, 200, 9050, "ff-2");
  now = 9200;
  records.handle(proxied("l3", url));
  assert.equal(timings.get("l3")?.pageLoadId, next.id);
});
