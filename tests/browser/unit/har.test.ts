// The HAR builder against the HAR 1.2 schema, the phase split, the page summary and the no-pipelining estimate.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Timing } from "../../../extension/src/generated/protocol.js";
import type { BrowserTiming } from "../../../extension/src/timings/browser-timing.js";
import { bareAddress, buildHar, harEntry } from "../../../extension/src/timings/har.js";
import { estimateWithoutPipelining, summarize, summaryText } from "../../../extension/src/timings/page-summary.js";
import { timelineOf } from "../../../extension/src/timings/phases.js";
import { TimingStore, type NewRecord, type PageLoadData, type RequestRecord } from "../../../extension/src/timings/timing-store.js";
import { harErrors } from "../support/har-validator.js";

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);

function helperTiming(id: string, points: Partial<Timing["timing"]>, connection: Partial<NonNullable<Timing["connection"]>> | null, extra: Partial<Timing> = {}): Timing {
  return {
    type: "timing", id, retries: 0, wire_bytes: 1200, cache: "none",
    timing: {
      queued: T0 + 5, dns_start: null, dns_end: null, connect_start: null, connect_end: null, tls_end: null,
      sent: null, first_byte: null, last_byte: null, ...points,
    },
    connection: connection === null ? null : {
      id: 1, reused: false, pipeline_position: 1, pipeline_depth: 1, interface: null, local_address: "127.0.0.1:40000",
      remote_address: "127.0.0.1:8080", ...connection,
    },
    ...extra,
  };
}

function browserTiming(change: Partial<BrowserTiming>): BrowserTiming {
  return {
    start: T0 + 2, dnsStart: null, dnsEnd: null, connectStart: null, connectEnd: null, sslStart: null, sslEnd: null,
    sendStart: null, sendEnd: null, headersEnd: null, end: null, status: 200, statusText: "OK", protocol: "http/1.1",
    mimeType: "text/html", responseHeaders: [["Content-Type", "text/html"], ["Set-Cookie", "s=1"]], remoteAddress: "[::1]:8443",
    connectionId: "77", encodedBytes: 900, bodyBytes: 700, fromCache: null, error: null, ...change,
  };
}

function base(id: string, change: Partial<RequestRecord> = {}): RequestRecord {
  return {
    id, tabId: 3, pageLoadId: "p1", pageUrl: "http://a.test/", url: `http://a.test/${id}.png?x=1`, method: "GET",
    resourceType: "Image", priority: "Low", networkId: `n-${id}`, requestHeaders: [["Accept", "*/*"], ["Cookie", "secret=1"]],
    batchId: "b1", pausedAt: T0, answeredAt: null, outcome: "pending", reason: null, detail: null, status: null, bodyBytes: 0,
    timing: null, browser: null, ...change,
  };
}

/** A page: a new connection with DNS/TCP/TLS, two requests pipelined behind it, a helper-cache hit, a request the
 *  browser fetched itself (preflight) with its own timing, one passed without any timing, and one still pending. */
function samplePage(): PageLoadData {
  const records: RequestRecord[] = [
    base("first", {
      outcome: "fulfilled", status: 200, bodyBytes: 1000, answeredAt: T0 + 160,
      timing: helperTiming("first", {
        dns_start: T0 + 6, dns_end: T0 + 10, connect_start: T0 + 10, connect_end: T0 + 40, tls_end: T0 + 70,
        sent: T0 + 71, first_byte: T0 + 100, last_byte: T0 + 150,
      }, { interface: "eth0" }),
    }),
    ...[2, 3].map((position) => base(`pipe${position}`, {
      outcome: "fulfilled", status: 200, bodyBytes: 500, answeredAt: T0 + 170 + position,
      timing: helperTiming(`pipe${position}`, { sent: T0 + 71, first_byte: T0 + 150 + position, last_byte: T0 + 160 + position },
        { reused: true, pipeline_position: position, pipeline_depth: position, interface: "eth0" }),
    })),
    base("cached", {
      outcome: "fulfilled", status: 200, bodyBytes: 300, answeredAt: T0 + 20,
      timing: helperTiming("cached", { first_byte: T0 + 8, last_byte: T0 + 9 }, null, { cache: "hit", wire_bytes: 0 }),
    }),
    base("retried", {
      url: "http://b.test/r.js", resourceType: "Script", outcome: "fulfilled", status: 200, bodyBytes: 2000, answeredAt: T0 + 300,
      timing: helperTiming("retried", { connect_start: T0 + 100, connect_end: T0 + 130, sent: T0 + 131, first_byte: T0 + 200, last_byte: T0 + 290 },
        { id: 2, interface: "wlan0" }, { retries: 1, wire_bytes: 2300 }),
    }),
    base("preflight", {
      method: "OPTIONS", resourceType: "Preflight", outcome: "passed", reason: "preflight", answeredAt: T0 + 4,
      browser: browserTiming({
        dnsStart: T0 + 5, dnsEnd: T0 + 6, connectStart: T0 + 6, sslStart: T0 + 9, sslEnd: T0 + 20, connectEnd: T0 + 20,
        sendStart: T0 + 21, sendEnd: T0 + 22, headersEnd: T0 + 60, end: T0 + 61,
      }),
    }),
    base("untimed", { outcome: "passed", reason: "helper_missing", answeredAt: T0 + 3 }),
    base("waiting"),
  ];
  return {
    load: { id: "p1", tabId: 3, url: "http://a.test/", title: "A test", startedAt: T0 - 50, documentRequest: null, contentLoadedAt: T0 + 200, loadedAt: T0 + 320, requests: records.length, flight: null, version: 9 },
    records,
  };
}

test("HAR of a page validates against the HAR 1.2 schema (and time = sum of the phases)", () => {
  const har = buildHar([samplePage()], { version: "0.1.0", browser: { name: "Chromium", version: "156" } });
  assert.deepEqual(harErrors(har), []);
  assert.equal(har.log.entries.length, 8);
  assert.deepEqual(har.log.pages[0]?.pageTimings, { onContentLoad: 250, onLoad: 370 });
  assert.deepEqual(harErrors({ log: { version: "1.2", creator: { name: "x" }, entries: [] } }).length > 0, true, "the validator can fail");
});

test("a new connection: blocked, dns, connect with ssl inside, wait, receive (+ delivery)", () => {
  const e = harEntry(samplePage().records[0] as RequestRecord);
  assert.deepEqual(e.timings, { blocked: 7, dns: 4, connect: 60, ssl: 30, send: 0, wait: 29, receive: 60 });
  assert.equal(e.time, 160);
  assert.equal(e.startedDateTime, new Date(T0).toISOString());
  assert.equal(e.connection, "lanefetch-1");
  assert.equal(e._connectionId, "lanefetch-1");
  assert.equal(e._resourceType, "image");
  assert.equal(e._priority, "Low");
  assert.equal(e.serverIPAddress, "127.0.0.1");
  assert.deepEqual(e.request.queryString, [{ name: "x", value: "1" }]);
  assert.deepEqual(e.request.headers, [{ name: "Accept", value: "*/*" }], "Cookie left out unless asked for");
  assert.equal(e.response.content.size, 1000);
  assert.equal(e.response._transferSize, 1200);
  assert.equal(e._lanefetch.interface, "eth0");
  assert.equal(e._lanefetch.pipelinePosition, 1);
  assert.equal(e._lanefetch.deliverMs, 10);
  assert.equal(e._lanefetch.outcome, "accelerated");
  assert.equal(harEntry(samplePage().records[0] as RequestRecord, true).request.headers.length, 2, "sensitive: keeps Cookie");
});

test("pipelined requests wait behind the one before; a helper-cache hit has no wait; retries are reported", () => {
  const page = samplePage();
  const third = harEntry(page.records[2] as RequestRecord);
  assert.equal(third.timings.dns, -1);
  assert.equal(third.timings.connect, -1);
  assert.equal(third.timings.wait, 82, "first byte 82 ms after sending: behind positions 1 and 2");
  assert.deepEqual([third._lanefetch.pipelinePosition, third._lanefetch.pipelineDepth, third._lanefetch.reusedConnection], [3, 3, true]);
  const hit = harEntry(page.records[3] as RequestRecord);
  assert.equal(hit.timings.wait, 0);
  assert.equal(hit._lanefetch.cache, "hit");
  assert.equal(hit.connection, undefined);
  assert.equal(harEntry(page.records[4] as RequestRecord)._lanefetch.retries, 1);
});

test("passed-through requests: the browser's own phases, connection and reason; none → all blocked", () => {
  const page = samplePage();
  const preflight = harEntry(page.records[5] as RequestRecord);
  assert.deepEqual(preflight.timings, { blocked: 6, dns: 1, connect: 14, ssl: 11, send: 1, wait: 38, receive: 1 });
  assert.equal(preflight.connection, "77");
  assert.equal(preflight.serverIPAddress, "::1");
  assert.equal(preflight.response.status, 200);
  assert.equal(preflight.response.content.size, 700);
  assert.deepEqual(preflight.response.headers, [{ name: "Content-Type", value: "text/html" }]);
  assert.equal(preflight._lanefetch.passReason, "preflight");
  assert.equal(preflight._lanefetch.passReasonText, "it is a permission check the browser makes itself");
  assert.equal(preflight._lanefetch.timingSource, "browser");
  const untimed = harEntry(page.records[6] as RequestRecord);
  assert.deepEqual(untimed.timings, { blocked: 3, dns: -1, connect: -1, ssl: -1, send: 0, wait: 0, receive: 0 });
  assert.equal(untimed._lanefetch.timingSource, "none");
  assert.equal(harEntry(page.records[7] as RequestRecord).time, 0, "pending: no time yet");
});

test("phases are consecutive and clamped when clocks disagree", () => {
  const r = base("skew", {
    answeredAt: T0 + 50, outcome: "fulfilled",
    // The helper's points start before the extension saw the request (clock skew): clamped to the pause.
    timing: helperTiming("skew", { sent: T0 - 5, first_byte: T0 + 10, last_byte: T0 + 60 }, { reused: true }),
  });
  const line = timelineOf(r);
  let at = line.start;
  for (const s of line.segments) {
    assert.equal(s.from, at);
    assert.ok(s.to > s.from);
    at = s.to;
  }
  assert.equal(at, line.end);
  assert.deepEqual(harErrors(buildHar([{ ...samplePage(), records: [r] }], { version: "0" })), []);
});

test("bare server addresses for HAR", () => {
  assert.equal(bareAddress("10.1.2.3:443"), "10.1.2.3");
  assert.equal(bareAddress("[2001:db8::1]:80"), "2001:db8::1");
  assert.equal(bareAddress("example.test:80"), undefined);
  assert.equal(bareAddress(null), undefined);
});

test("page summary: pipelined = sent while another was unanswered (depth above 1), not a later turn on a kept-alive connection", () => {
  const page = samplePage();
  page.records.push(base("keepalive", {
    outcome: "fulfilled", status: 200, bodyBytes: 500, answeredAt: T0 + 200,
    timing: helperTiming("keepalive", { sent: T0 + 170, first_byte: T0 + 190, last_byte: T0 + 195 },
      { reused: true, pipeline_position: 4, pipeline_depth: 1, interface: "eth0" }),
  }));
  assert.equal(summarize(page).pipelined, 2, "the two pipelined behind the first; the 4th request went out alone");
});

test("page summary: counts, bytes per interface, connections, concurrency, text", () => {
  const s = summarize(samplePage());
  assert.equal(s.pageLoadMs, 370);
  assert.equal(s.requests, 8);
  assert.equal(s.accelerated, 5);
  assert.equal(s.passed, 2);
  assert.equal(s.pending, 1);
  assert.deepEqual(s.passedByReason, { preflight: 1, helper_missing: 1 });
  assert.equal(s.fromHelperCache, 1);
  assert.equal(s.retries, 1);
  assert.deepEqual(s.bytesByInterface, [
    { name: "eth0", bytes: 3600 }, { name: "wlan0", bytes: 2300 }, { name: "browser", bytes: 900 }, { name: "default route", bytes: 0 },
  ]);
  assert.equal(s.connections, 2);
  assert.equal(s.browserConnections, 1);
  assert.equal(s.maxConcurrentConnections, 2, "connection 1 (6–163) and 2 (100–290) overlap");
  assert.equal(s.maxPipelineDepth, 3);
  assert.equal(s.pipelined, 2);
  assert.equal(s.acceleratedSpanMs, 300);
  const text = summaryText(s, "0.1.0");
  assert.match(text, /accelerated 5, left to the browser 2, from helper cache 1/);
  assert.match(text, /1 because it is a permission check the browser makes itself \(preflight\)/);
  assert.match(text, /model: Without pipelining/);
});

test("no-pipelining estimate: 12 requests on one origin behind 6 connections take two round trips", () => {
  // Measured: one connection (30 ms setup), 12 requests pipelined, first bytes 100 ms after sending, 1 ms bodies.
  const records = Array.from({ length: 12 }, (_, i) => base(`m${i}`, {
    outcome: "fulfilled", answeredAt: T0 + 140 + i,
    timing: helperTiming(`m${i}`, {
      connect_start: i === 0 ? T0 : null, connect_end: i === 0 ? T0 + 30 : null, sent: T0 + 30, first_byte: T0 + 130 + i, last_byte: T0 + 131 + i,
    }, { reused: i !== 0, pipeline_position: i + 1 }),
  }));
  // 6 new connections at T0 + 30; each request: 100 ms round trip + 1 ms; second wave starts at 131 → ends 232.
  assert.equal(estimateWithoutPipelining(records), T0 + 232);
  assert.equal(summarize({ load: { ...samplePage().load, startedAt: T0 }, records }).withoutPipeliningMs, 232);
  assert.equal(estimateWithoutPipelining([base("x", { outcome: "passed" })]), null);
});

test("store: page loads are bounded, records join the browser's timing by network id and URL", () => {
  const store = new TimingStore({ pageLoads: 2, recordsPerLoad: 2 });
  const fresh = (id: string, tabId = 1): NewRecord => ({
    id, tabId, pageUrl: "http://a.test/", url: `http://a.test/${id}`, method: "GET", resourceType: "Image", priority: "Low",
    networkId: `n${id}`, batchId: null, pausedAt: T0, answeredAt: null, outcome: "pending", reason: null, detail: null,
    status: null, bodyBytes: 0, timing: null,
  });
  store.browserTiming("nr1", "http://a.test/r1", browserTiming({ end: T0 + 1 }));
  store.add(fresh("r1"));
  assert.equal(store.get("r1")?.browser?.end, T0 + 1, "timing that came first is joined");
  store.add(fresh("r2"));
  store.add(fresh("r3"));
  assert.equal(store.get("r3"), undefined, "records per load are capped");
  store.browserTiming("nr2", "http://a.test/r2#frag", browserTiming({ end: T0 + 2 }));
  assert.equal(store.get("r2")?.browser?.end, T0 + 2);
  const first = store.pageLoads()[0]?.id;
  store.newPage(1, "http://a.test/next");
  store.newPage(2, "http://b.test/");
  assert.deepEqual(store.pageLoads().map((l) => l.url), ["http://b.test/", "http://a.test/next"]);
  assert.equal(first !== undefined && store.pageLoad(first), null, "the oldest load and its records are gone");
  assert.equal(store.get("r1"), undefined);
  store.add(fresh("s1", 2));
  store.pageEvent(2, "http://b.test/", "loaded", T0 + 99, "B");
  assert.deepEqual(store.pageLoads(2).map((l) => [l.requests, l.loadedAt, l.title]), [[1, T0 + 99, "B"]]);
});

test("a request the browser fetched itself over HTTP/2 or HTTP/3 says so in its request and response httpVersion", () => {
  const timed = { dnsStart: T0 + 5, dnsEnd: T0 + 6, sendStart: T0 + 7, sendEnd: T0 + 8, headersEnd: T0 + 30, end: T0 + 31 };
  const versions = (protocol: string): [string, string] => {
    const e = harEntry(base("h", { outcome: "passed", reason: "browser_multiplexed", answeredAt: T0 + 3, browser: browserTiming({ ...timed, protocol }) }));
    return [e.request.httpVersion, e.response.httpVersion];
  };
  assert.deepEqual(versions("h2"), ["HTTP/2.0", "HTTP/2.0"]);
  assert.deepEqual(versions("h3"), ["HTTP/3.0", "HTTP/3.0"]);
  assert.deepEqual(versions("http/1.1"), ["HTTP/1.1", "HTTP/1.1"]);
});
