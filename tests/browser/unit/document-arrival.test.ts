// The browser's own document as webRequest sees it (intercept/document-arrival.ts): its span in the host's round
// trips, what it says of protocol, address and cache, and what it forgets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DocumentArrival, protocolOf, type WebRequestResponse } from "../../../extension/src/intercept/document-arrival.js";

function event(requestId: string, timeStamp: number, over: Partial<WebRequestResponse> = {}): WebRequestResponse {
  return { requestId, url: "http://a.test/print.html", timeStamp, ip: "10.0.0.2", fromCache: false,
    statusLine: "HTTP/1.1 200 OK", ...over };
}

test("a document's span from first byte to last, in the host's round trips", () => {
  const d = new DocumentArrival();
  d.responseStarted(event("1", 1_000));
  assert.deepEqual(d.arriving("1", 1_900, 600), {
    url: "http://a.test/print.html",
    timing: { protocol: "http/1.1", remoteAddress: "10.0.0.2", fromCache: null, bodyBytes: null, spanRoundTrips: 1.5 },
  });
  assert.deepEqual(d.completed(event("1", 3_400), 600), {
    url: "http://a.test/print.html",
    timing: { protocol: "http/1.1", remoteAddress: "10.0.0.2", fromCache: null, encodedBytes: null, end: 3_400,
      error: null, spanRoundTrips: 4 },
  });
  assert.equal(d.arriving("1", 3_500, 600), null, "ended: no longer arriving");
  assert.equal(d.completed(event("1", 3_600), 600), null, "ended once");
});

test("what it cannot know it does not guess", () => {
  const d = new DocumentArrival();
  assert.equal(d.completed(event("unseen", 5), 600), null, "no start seen");
  d.responseStarted(event("2", 0, { ip: undefined, fromCache: true }));
  assert.equal(d.arriving("2", 900, null), null, "round trip unknown");
  const done = d.completed(event("2", 900, { ip: undefined, fromCache: true }), null);
  assert.ok(done !== null);
  assert.equal(done.timing.spanRoundTrips, null);
  assert.equal(done.timing.remoteAddress, null);
  assert.equal(done.timing.fromCache, "cache");
  d.responseStarted(event("3", 0));
  assert.deepEqual(d.failed("3", 700, "net::ERR_ABORTED")?.timing.error, "net::ERR_ABORTED");
  assert.equal(d.failed("3", 800, "net::ERR_ABORTED"), null);
});

test("status lines name the protocol CDP would", () => {
  assert.equal(protocolOf("HTTP/1.1 200 OK"), "http/1.1");
  assert.equal(protocolOf("HTTP/1.0 200 OK"), "http/1.0");
  assert.equal(protocolOf("HTTP/2 200"), "h2");
  assert.equal(protocolOf("HTTP/3 200"), "h3");
  assert.equal(protocolOf("ICY 200 OK"), null);
  assert.equal(protocolOf(""), null);
});

test("documents started and never ended are forgotten beyond a bound, oldest first", () => {
  const d = new DocumentArrival();
  for (let i = 0; i < 65; i++) d.responseStarted(event(String(i), i));
  assert.equal(d.arriving("0", 100, 10), null, "the oldest went");
  assert.notEqual(d.arriving("1", 100, 10), null);
  assert.notEqual(d.arriving("64", 100, 10), null);
});
