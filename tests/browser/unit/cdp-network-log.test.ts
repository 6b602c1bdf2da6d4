// The browser's own request timing from CDP Network events: monotonic seconds → epoch ms, phases, redirects.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { BrowserTiming } from "../../../extension/src/timings/browser-timing.js";
import { rejectReason } from "../../../extension/src/intercept/host-speed.js";
import { CdpNetworkLog } from "../../../extension/src/timings/cdp-network-log.js";

const WALL = 1_767_000_000; // s since the epoch at monotonic 100 s

function timing(requestTime: number, offsets: Partial<Record<string, number>>): Record<string, number> {
  const none = -1;
  return {
    requestTime, proxyStart: none, proxyEnd: none, dnsStart: none, dnsEnd: none, connectStart: none, connectEnd: none,
    sslStart: none, sslEnd: none, workerStart: none, workerReady: none, workerFetchStart: none, workerRespondWithSettled: none,
    sendStart: none, sendEnd: none, pushStart: 0, pushEnd: 0, receiveHeadersStart: none, receiveHeadersEnd: none, ...offsets,
  };
}

test("a redirect and its target: one timing per hop, phases on the epoch clock, bytes and connection", () => {
  const done: [string, string, BrowserTiming][] = [];
  const log = new CdpNetworkLog((id, url, t) => done.push([id, url, t]));
  log.handle("Network.requestWillBeSent", { requestId: "7", timestamp: 100, wallTime: WALL, request: { url: "http://a.test/r" } });
  log.handle("Network.requestWillBeSent", {
    requestId: "7", timestamp: 100.05, wallTime: WALL + 0.05, request: { url: "http://a.test/img.png" },
    redirectResponse: {
      url: "http://a.test/r", status: 302, statusText: "Found", headers: { Location: "/img.png" }, mimeType: "", connectionId: 5,
      remoteIPAddress: "127.0.0.1", remotePort: 8080, encodedDataLength: 120, protocol: "http/1.1",
      timing: timing(100.001, { dnsStart: 1, dnsEnd: 2, connectStart: 2, connectEnd: 10, sendStart: 11, sendEnd: 12, receiveHeadersEnd: 40 }),
    },
  });
  log.handle("Network.responseReceived", {
    requestId: "7", timestamp: 100.09,
    response: {
      url: "http://a.test/img.png", status: 200, statusText: "OK", headers: { "Set-Cookie": "a=1\nb=2" }, mimeType: "image/png",
      connectionId: 5, remoteIPAddress: "::1", remotePort: 8443, encodedDataLength: 90, protocol: "http/1.1", fromDiskCache: false,
      timing: timing(100.06, { sendStart: 0.5, sendEnd: 1, receiveHeadersEnd: 30 }),
    },
  });
  log.handle("Network.dataReceived", { requestId: "7", timestamp: 100.095, dataLength: 600, encodedDataLength: 610 });
  log.handle("Network.loadingFinished", { requestId: "7", timestamp: 100.1, encodedDataLength: 700 });
  log.handle("Network.loadingFinished", { requestId: "unknown", timestamp: 1, encodedDataLength: 1 });
  assert.equal(done.length, 2);
  const first = done[0]?.[2];
  const second = done[1]?.[2];
  if (!first || !second) throw new Error("two timings expected");
  assert.deepEqual(done.map(([id, url]) => [id, url]), [["7", "http://a.test/r"], ["7", "http://a.test/img.png"]]);
  const ms = (s: number): number => Math.round((WALL + s - 100) * 1000 * 1000) / 1000;
  const near = (a: number | null | undefined, b: number): void => assert.ok(a !== null && a !== undefined && Math.abs(a - b) < 0.01, `${a} ≈ ${b}`);
  near(first.start, ms(100));
  near(first.dnsStart, ms(100.002));
  near(first.connectEnd, ms(100.011));
  near(first.headersEnd, ms(100.041));
  near(first.end, ms(100.05));
  assert.equal(first.status, 302);
  assert.equal(first.connectionId, "5");
  assert.equal(first.remoteAddress, "127.0.0.1:8080");
  assert.equal(first.encodedBytes, 120);
  assert.equal(second.dnsStart, null, "reused connection: no DNS");
  near(second.sendStart, ms(100.0605));
  near(second.end, ms(100.1));
  assert.equal(second.remoteAddress, "[::1]:8443");
  assert.deepEqual(second.responseHeaders, [["Set-Cookie", "a=1"], ["Set-Cookie", "b=2"]]);
  assert.equal(second.bodyBytes, 600);
  assert.equal(second.encodedBytes, 700);
  assert.equal(log.size, 0);
});

test("failed and memory-cache loads", () => {
  const done: BrowserTiming[] = [];
  const log = new CdpNetworkLog((_id, _url, t) => done.push(t));
  log.handle("Network.requestWillBeSent", { requestId: "1", timestamp: 100, wallTime: WALL, request: { url: "http://a.test/x" } });
  log.handle("Network.loadingFailed", { requestId: "1", timestamp: 100.2, errorText: "net::ERR_ABORTED", canceled: true });
  log.handle("Network.requestWillBeSent", { requestId: "2", timestamp: 100, wallTime: WALL, request: { url: "http://a.test/y" } });
  log.handle("Network.requestServedFromCache", { requestId: "2" });
  log.handle("Network.loadingFinished", { requestId: "2", timestamp: 100.001, encodedDataLength: 0 });
  assert.equal(done[0]?.error, "net::ERR_ABORTED (cancelled)");
  assert.equal(done[1]?.fromCache, "memory");
});

test("round trips: a new connection's TCP connect, and a document's request sent → first head byte; what was sent", () => {
  const rtts: [string, number][] = [];
  const seen: [string, string, number, string][] = [];
  const log = new CdpNetworkLog((_id, url, _t, r) => seen.push([url, r.type, r.tabId, r.method]), (sample) => {
    // What HostSpeed keeps of what the log reports.
    if (rejectReason(sample) === null) rtts.push([sample.url, Math.round(sample.ms * 10) / 10]);
  });
  log.handle("Network.requestWillBeSent", {
    requestId: "d", timestamp: 100, wallTime: WALL, type: "Document", request: { url: "http://a.test/", method: "GET", headers: {}, initialPriority: "VeryHigh" },
  }, 4);
  log.handle("Network.responseReceived", {
    requestId: "d", timestamp: 100.01,
    response: { url: "http://a.test/", status: 200, headers: {}, remoteIPAddress: "192.0.2.1", timing: timing(100.001, { connectStart: 1, connectEnd: 1.4, sendStart: 1.5, sendEnd: 1.6, receiveHeadersStart: 2.5, receiveHeadersEnd: 2.6 }) },
  });
  log.handle("Network.requestWillBeSent", { requestId: "p", timestamp: 100, wallTime: WALL, type: "Document", request: { url: "http://b.test/", method: "GET", headers: {} } }, 4);
  log.handle("Network.requestWillBeSent", { requestId: "i", timestamp: 100, wallTime: WALL, type: "Image", request: { url: "http://b.test/i.png" } }, 4);
  log.handle("Network.responseReceived", {
    requestId: "i", timestamp: 100.05, response: { url: "http://b.test/i.png", status: 200, headers: {}, remoteIPAddress: "192.0.2.2", timing: timing(100.001, { sendStart: 0.2, sendEnd: 0.3, receiveHeadersEnd: 300 }) },
  });
  log.handle("Network.responseReceived", {
    requestId: "p", timestamp: 100.05, response: { url: "http://b.test/", status: 200, headers: {}, remoteIPAddress: "192.0.2.2", timing: timing(100.001, { sendStart: 0.2, sendEnd: 0.3, receiveHeadersEnd: 40.3 }) },
  });
  log.handle("Network.requestWillBeSent", { requestId: "w", timestamp: 100, wallTime: WALL, type: "Document", request: { url: "http://far.test/" } }, 4);
  log.handle("Network.responseReceived", {
    requestId: "w", timestamp: 100.002, response: { url: "http://far.test/", status: 200, headers: {}, remoteIPAddress: "192.0.2.3", fromServiceWorker: true, timing: timing(100.001, { sendStart: 0.1, sendEnd: 0.2, receiveHeadersEnd: 1 }) },
  });
  // A document lanefetch fulfilled (Fetch.fulfillRequest): no remote address, and Chromium's timing of it is the
  // detour's, a few ms on a 400 ms link (the field report). It tells nothing of the link, connect or first byte.
  log.handle("Network.requestWillBeSent", { requestId: "f", timestamp: 100, wallTime: WALL, type: "Document", request: { url: "http://sat.test/" } }, 4);
  log.handle("Network.responseReceived", {
    requestId: "f", timestamp: 100.01, response: { url: "http://sat.test/", status: 200, headers: {}, timing: timing(100.001, { connectStart: 0.1, connectEnd: 0.2, sendStart: 0.3, sendEnd: 0.4, receiveHeadersEnd: 4.4 }) },
  });
  log.handle("Network.loadingFinished", { requestId: "d", timestamp: 100.02, encodedDataLength: 10 });
  assert.deepEqual(rtts, [["http://a.test/", 0.4], ["http://a.test/", 0.9], ["http://b.test/", 40]], "an image's queueing, a service worker's answer and a fulfilled document tell nothing");
  assert.deepEqual(seen, [["http://a.test/", "Document", 4, "GET"]]);
});
