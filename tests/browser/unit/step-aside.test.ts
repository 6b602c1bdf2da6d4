// Stepping aside where lanefetch cannot win: each origin's RTT from connect times (helper's and browser's), and
// the rule that sends requests to fast origins to the browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { OriginLatency } from "../../../extension/src/intercept/origin-latency.js";
import { ACCELERATE_FAST_LINKS_KEY, STEP_ASIDE_BELOW_RTT_MS, stepAsideDetail, stepAsideThreshold, stepsAside } from "../../../extension/src/intercept/step-aside.js";
import { CdpNetworkLog } from "../../../extension/src/timings/cdp-network-log.js";

test("the rule: below the threshold the browser fetches; unknown RTT or rule off: lanefetch takes it", () => {
  assert.equal(stepsAside(0.4), true);
  assert.equal(stepsAside(STEP_ASIDE_BELOW_RTT_MS - 0.1), true);
  assert.equal(stepsAside(STEP_ASIDE_BELOW_RTT_MS), false);
  assert.equal(stepsAside(60), false);
  assert.equal(stepsAside(null), false);
  assert.equal(stepsAside(0.4, null), false);
  assert.equal(stepsAside(30, 50), true);
});

test("the rule per URL, as both backgrounds apply it: by host (any port), the pass's detail names the host and its RTT", () => {
  const latency = new OriginLatency();
  latency.observe("http://lan.test:8080", 0.42);
  latency.observe("http://far.test", 61);
  assert.equal(stepAsideDetail(latency, "http://lan.test:8080/a.png?x", STEP_ASIDE_BELOW_RTT_MS), "round trip to lan.test ~0.4 ms");
  assert.equal(stepAsideDetail(latency, "https://lan.test:9443/b.png", STEP_ASIDE_BELOW_RTT_MS), "round trip to lan.test ~0.4 ms", "another port");
  assert.equal(stepAsideDetail(latency, "http://far.test/a.png", STEP_ASIDE_BELOW_RTT_MS), null);
  assert.equal(stepAsideDetail(latency, "http://new.test/a.png", STEP_ASIDE_BELOW_RTT_MS), null, "unknown RTT");
  assert.equal(stepAsideDetail(latency, "http://lan.test:8080/a.png", null), null, "rule off");
  assert.equal(stepAsideDetail(latency, "not a url", STEP_ASIDE_BELOW_RTT_MS), null);
  assert.equal(stepAsideThreshold({}), STEP_ASIDE_BELOW_RTT_MS);
  assert.equal(stepAsideThreshold({ [ACCELERATE_FAST_LINKS_KEY]: true }), null, "the tests' flag: take fast links too");
});

test("an origin's RTT is the smallest recent connect time; samples age out; nonsense is ignored", () => {
  let now = 0;
  const latency = new OriginLatency({ maxOrigins: 10, maxAgeMs: 1000, samples: 3 }, () => now);
  assert.equal(latency.rttMs("http://a.test"), null);
  latency.observe("http://a.test", 40);
  latency.observe("http://a.test", 12);
  latency.observe("http://a.test", 90); // queueing only ever adds
  assert.equal(latency.rttMs("http://a.test"), 12);
  for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) latency.observe("http://a.test", bad);
  latency.observe("", 1);
  latency.observe("null", 1);
  assert.equal(latency.rttMs("http://a.test"), 12);
  assert.equal(latency.rttMs("null"), null);
  // Only the newest `samples` count: the network changed (LAN → mobile) and the old fast sample goes.
  latency.observe("http://a.test", 400);
  latency.observe("http://a.test", 410);
  assert.equal(latency.rttMs("http://a.test"), 90);
  now = 2000;
  assert.equal(latency.rttMs("http://a.test"), null, "all samples older than maxAgeMs");
});

test("hosts with a fresh estimate, most recent first, one per host; listeners hear each sample until they stop", () => {
  let now = 0;
  const latency = new OriginLatency({ maxOrigins: 10, maxAgeMs: 1000, samples: 2 }, () => now);
  const heard: string[] = [];
  const stop = latency.onObserved((origin) => heard.push(origin));
  latency.observe("http://a.test", 1);
  latency.observe("https://a.test:8443", 2);
  now = 600;
  latency.observe("http://b.test", 30);
  latency.observe("http://c.test", Number.NaN);
  assert.deepEqual(latency.hosts(), ["b.test", "a.test"]);
  assert.deepEqual(heard, ["http://a.test", "https://a.test:8443", "http://b.test"], "nonsense is not a sample");
  stop();
  latency.observe("http://d.test", 5);
  assert.equal(heard.length, 3);
  now = 1200;
  assert.deepEqual(latency.hosts(), ["d.test", "b.test"], "a.test aged out");
});

test("bounded: the least recently observed origin goes first", () => {
  const latency = new OriginLatency({ maxOrigins: 2, maxAgeMs: 1000, samples: 2 }, () => 0);
  latency.observe("http://a.test", 1);
  latency.observe("http://b.test", 2);
  latency.observe("http://a.test", 3);
  latency.observe("http://c.test", 4);
  assert.equal(latency.rttMs("http://b.test"), null);
  assert.equal(latency.rttMs("http://a.test"), 1);
  assert.equal(latency.rttMs("http://c.test"), 4);
});

test("the browser's own new connections tell the RTT as soon as the response head is in (TLS excluded), a document on a reused one an upper bound", () => {
  const seen: [string, number][] = [];
  const log = new CdpNetworkLog(() => undefined, (url, ms) => seen.push([url, ms]));
  const timing = (o: Record<string, number>): Record<string, number> => ({
    requestTime: 100, proxyStart: -1, proxyEnd: -1, dnsStart: -1, dnsEnd: -1, connectStart: -1, connectEnd: -1,
    sslStart: -1, sslEnd: -1, sendStart: 0, sendEnd: 0, receiveHeadersEnd: 5, ...o,
  });
  const response = (url: string, t: Record<string, number>) => ({
    url, status: 200, statusText: "OK", headers: {}, mimeType: "text/html", connectionId: 1, encodedDataLength: 0,
    protocol: "http/1.1", timing: t,
  });
  for (const [id, url] of [["1", "http://a.test/"], ["2", "https://b.test/"], ["3", "http://a.test/x"]] as const) {
    log.handle("Network.requestWillBeSent", { requestId: id, timestamp: 100, wallTime: 1_767_000_000, type: "Document", request: { url } });
  }
  log.handle("Network.responseReceived", { requestId: "1", timestamp: 100.1, response: response("http://a.test/", timing({ connectStart: 2, connectEnd: 62, sendStart: 62, sendEnd: 63, receiveHeadersEnd: 140 })) });
  log.handle("Network.responseReceived", {
    requestId: "2", timestamp: 100.1, response: response("https://b.test/", timing({ connectStart: 1, sslStart: 9, sslEnd: 30, connectEnd: 30, sendStart: 30, sendEnd: 30, receiveHeadersEnd: 39 })),
  });
  log.handle("Network.responseReceived", { requestId: "3", timestamp: 100.1, response: response("http://a.test/x", timing({})) });
  // Request sent → first head byte: at least one round trip (77 and 9 here), so never below the connect times.
  assert.deepEqual(seen, [["http://a.test/", 60], ["http://a.test/", 77], ["https://b.test/", 8], ["https://b.test/", 9], ["http://a.test/x", 5]]);
});
