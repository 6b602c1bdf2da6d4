// A page's Resource Timing entries as the timing panel's browser timing: phases that happened, unknowns as null.
import { test } from "node:test";
import assert from "node:assert/strict";
import { browserTimingOf, resourceTypeOf, type ResourceEntry } from "../../../extension/src/timings/resource-timing.js";

function entry(over: Partial<ResourceEntry>): ResourceEntry {
  return {
    url: "http://lan.test/a.png", initiatorType: "img", entryType: "resource", start: 1000, dnsStart: 0, dnsEnd: 0,
    connectStart: 0, connectEnd: 0, sslStart: 0, requestStart: 0, responseStart: 0, end: 0, status: 0, protocol: "",
    transferSize: 0, bodyBytes: 0, cached: false, ...over,
  };
}

test("a same-origin request on a new connection: DNS, connect, TLS, request, first byte, end, status, bytes", () => {
  const t = browserTimingOf(entry({
    dnsStart: 1001, dnsEnd: 1003, connectStart: 1003, connectEnd: 1010, sslStart: 1005, requestStart: 1011,
    responseStart: 1020, end: 1025, status: 200, protocol: "http/1.1", transferSize: 1500, bodyBytes: 1200,
  }));
  assert.deepEqual(
    [t.start, t.dnsStart, t.dnsEnd, t.connectStart, t.connectEnd, t.sslStart, t.sslEnd, t.sendStart, t.headersEnd, t.end],
    [1000, 1001, 1003, 1003, 1010, 1005, 1010, 1011, 1020, 1025],
  );
  assert.deepEqual([t.status, t.protocol, t.encodedBytes, t.bodyBytes, t.fromCache], [200, "http/1.1", 1500, 1200, null]);
});

test("a reused connection has no DNS or connect phase; plain http has no TLS", () => {
  const t = browserTimingOf(entry({ dnsStart: 1000, dnsEnd: 1000, connectStart: 1000, connectEnd: 1000, requestStart: 1001, responseStart: 1002, end: 1003 }));
  assert.deepEqual([t.dnsStart, t.connectStart, t.sslStart, t.sslEnd, t.sendStart], [null, null, null, null, 1001]);
});

test("cross-origin without Timing-Allow-Origin: start and end only, status unknown; a cached response", () => {
  const t = browserTimingOf(entry({ end: 1040 }));
  assert.deepEqual([t.sendStart, t.headersEnd, t.status, t.end, t.encodedBytes], [null, null, null, 1040, null]);
  assert.equal(browserTimingOf(entry({ end: 999 })).end, 1000, "never before its start");
  assert.equal(browserTimingOf(entry({ cached: true, bodyBytes: 10, end: 1001 })).fromCache, "disk");
});

test("resource types from the initiator; fonts by their URL; the document from its navigation entry", () => {
  assert.equal(resourceTypeOf(entry({})), "image");
  assert.equal(resourceTypeOf(entry({ initiatorType: "link", url: "http://lan.test/s.css" })), "stylesheet");
  assert.equal(resourceTypeOf(entry({ initiatorType: "css", url: "http://lan.test/f.woff2?v=1" })), "font");
  assert.equal(resourceTypeOf(entry({ initiatorType: "xmlhttprequest" })), "fetch");
  assert.equal(resourceTypeOf(entry({ initiatorType: "navigation", entryType: "navigation" })), "document");
  assert.equal(resourceTypeOf(entry({ initiatorType: "other" })), "other");
});
