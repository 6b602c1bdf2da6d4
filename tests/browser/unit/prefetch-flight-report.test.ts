// The page's prefetch flight in the timing records: requests answered from it (timing cache "prefetch") are counted
// and listed apart, and the helper's page_report (which comes when the load ended) is filed under the load of its
// first request and shown with the bytes never asked for.
import assert from "node:assert/strict";
import { test } from "node:test";
import { asToExtension } from "../../../extension/src/bridge/messages.js";
import type { PageReport, Timing } from "../../../extension/src/generated/protocol.js";
import { flightWords, summarize, summaryText } from "../../../extension/src/timings/page-summary.js";
import { flightOf, TimingStore, type NewRecord } from "../../../extension/src/timings/timing-store.js";
import { buildWaterfall, PREFETCH_FLIGHT } from "../../../extension/src/ui/panel/waterfall-model.js";

const PAGE = "http://shop.example/";
const T0 = 1_700_000_000_000;

function timing(id: string, cache: Timing["cache"]): Timing {
  return {
    type: "timing", id, retries: 0, cache, connection: null,
    timing: { queued: T0, dns_start: null, dns_end: null, connect_start: null, connect_end: null, tls_end: null, sent: null, first_byte: T0 + 1, last_byte: T0 + 2 },
  };
}

function record(id: string, change: Partial<NewRecord>): NewRecord {
  return {
    id, tabId: 7, pageUrl: PAGE, url: `${PAGE}${id}.png`, method: "GET", resourceType: "image", priority: "Medium", batchId: "b1",
    pausedAt: T0, answeredAt: T0 + 2, outcome: "fulfilled", reason: null, detail: null, status: 200, bodyBytes: 10, timing: null,
    ...change,
  };
}

const REPORT: PageReport = {
  type: "page_report", page: PAGE, top_site: "http://shop.example", request: "doc", recorded: 3, flight: true, planned: 3, sent: 3,
  answered: 2, refused_by_budget: 0, cancelled_by_budget: 0, refused_by_fidelity: { "header:accept": 1 }, claimed_bytes: 20, wasted_bytes: 2048,
};

test("answered from the flight: counted, listed apart; the load's report names what was never asked for", () => {
  const store = new TimingStore();
  store.newPage(7, PAGE, T0);
  store.add(record("doc", { url: PAGE, resourceType: "Document", networkId: "N1", timing: timing("doc", "none") }));
  store.add(record("a", { timing: timing("a", "prefetch") }));
  store.add(record("b", { timing: timing("b", "prefetch") }));
  store.add(record("c", { timing: timing("c", "none") }));
  const [load] = store.pageLoads(7);
  assert.ok(load);
  const before = summarize(store.pageLoad(load.id) ?? assert.fail("no load"));
  assert.equal(before.fromFlight, 2);
  assert.equal(before.flight, null);
  assert.equal(flightWords(before), "2 answered (report when the page's load ends)");

  assert.equal(store.flightReport("nobody", flightOf(REPORT) ?? assert.fail("a flight")), false);
  assert.equal(store.pageReport({ ...REPORT, request: "nobody" }), false, "no load has that request");
  assert.equal(store.pageReport({ ...REPORT, flight: false, request: "doc" }), false, "a load without a flight");
  assert.equal(store.pageReport({ ...REPORT, request: "doc" }), true, "filed under the load of its first request");
  const data = store.pageLoad(load.id) ?? assert.fail("no load");
  const after = summarize(data);
  assert.deepEqual(after.flight, { sent: 3, answered: 2, claimedBytes: 20, wastedBytes: 2048 });
  assert.equal(flightWords(after), "2 answered; 3 prefetched, 2.0 KiB never asked for");
  assert.match(summaryText(after, "0.1.0"), /from the page's prefetch flight: 2 answered; 3 prefetched, 2\.0 KiB never asked for/);
  assert.ok(data.load.version > load.version, "viewers re-render");

  const groups = buildWaterfall(data, "connection").groups.map((g) => [g.key, g.rows.map((r) => r.record.id)]);
  assert.deepEqual(groups.find(([key]) => key === PREFETCH_FLIGHT), [PREFETCH_FLIGHT, ["a", "b"]]);
});

test("the helper's page_report reaches the dispatch", () => {
  assert.deepEqual(asToExtension(REPORT), REPORT);
  assert.equal(asToExtension({ ...REPORT, flight: "yes" }), null);
});

test("a report without a flight files nothing", () => {
  assert.equal(flightOf({ type: "page_report", page: PAGE, top_site: "http://shop.example", recorded: 4, flight: false }), null);
  assert.equal(flightWords({ fromFlight: 0, flight: null }), "none");
});
