// HostSpeed: samples in (source, time), a verdict with its expiry out; the one threshold; samples that cannot be a
// round trip rejected. An injected clock throughout.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ACCELERATE_FAST_LINKS_KEY, HostSpeed, STEP_ASIDE_BELOW_RTT_MS, contradicted, helperSample, rejectReason, thresholdFromSettings, type SpeedSample,
} from "../../../extension/src/intercept/host-speed.js";
import { CdpNetworkLog } from "../../../extension/src/timings/cdp-network-log.js";

const connect = (url: string, ms: number): SpeedSample => ({ url, ms, source: "helper_connect" });

function clocked(options = { maxOrigins: 10, maxAgeMs: 1000, samples: 4 }): { speed: HostSpeed; at: (ms: number) => void } {
  let now = 0;
  return { speed: new HostSpeed(options, () => now), at: (ms) => void (now = ms) };
}

test("the rule: below the threshold fast; at it slow; unknown without samples; threshold off: every host slow", () => {
  const { speed } = clocked();
  speed.observe(connect("http://a.test", STEP_ASIDE_BELOW_RTT_MS - 0.1));
  speed.observe(connect("http://b.test", STEP_ASIDE_BELOW_RTT_MS));
  assert.equal(speed.verdict("http://a.test/x").state, "fast");
  assert.equal(speed.verdict("http://b.test/x").state, "slow");
  assert.equal(speed.verdict("http://c.test/x").state, "unknown");
  speed.setThreshold(null);
  assert.deepEqual(["a", "b", "c"].map((h) => speed.verdict(`http://${h}.test/`).state), ["slow", "slow", "slow"], "nothing to learn");
  speed.setThreshold(STEP_ASIDE_BELOW_RTT_MS + 1);
  assert.equal(speed.verdict("http://b.test/").state, "fast");
  assert.equal(thresholdFromSettings({}), STEP_ASIDE_BELOW_RTT_MS);
  assert.equal(thresholdFromSettings({ [ACCELERATE_FAST_LINKS_KEY]: true }), null, "the tests' flag: take fast links too");
});

test("by host (any scheme or port); the pass's detail names the host and its RTT", () => {
  const { speed } = clocked();
  speed.observe(connect("http://lan.test:8080", 0.42));
  speed.observe(connect("http://far.test", 161));
  assert.equal(speed.stepAsideDetail("http://lan.test:8080/a.png?x"), "round trip to lan.test ~0.4 ms");
  assert.equal(speed.stepAsideDetail("https://lan.test:9443/b.png"), "round trip to lan.test ~0.4 ms", "another port");
  assert.equal(speed.verdict("lan.test").rttMs, 0.42, "a bare host name");
  assert.equal(speed.stepAsideDetail("http://far.test/a.png"), null);
  assert.equal(speed.stepAsideDetail("http://new.test/a.png"), null, "unknown RTT");
  assert.equal(speed.stepAsideDetail("not a url"), null);
  speed.setThreshold(null);
  assert.equal(speed.stepAsideDetail("http://lan.test:8080/a.png"), null, "rule off");
});

test("a host's RTT is the smallest recent sample; only the newest few per origin count; samples age out", () => {
  const { speed, at } = clocked({ maxOrigins: 10, maxAgeMs: 1000, samples: 3 });
  for (const ms of [40, 12, 90]) speed.observe(connect("http://a.test", ms)); // queueing only ever adds
  assert.equal(speed.verdict("http://a.test").rttMs, 12);
  // The network changed (LAN → mobile): the old fast sample goes with the newest three.
  for (const ms of [200, 410]) speed.observe(connect("http://a.test", ms));
  assert.equal(speed.verdict("http://a.test").rttMs, 90);
  at(2000);
  assert.equal(speed.verdict("http://a.test").state, "unknown", "all samples older than maxAgeMs");
});

test("samples that cannot be a round trip of the network are rejected, and nobody hears of them", () => {
  const { speed } = clocked();
  const heard: string[] = [];
  speed.onVerdict((host) => heard.push(host));
  const bad: SpeedSample[] = [
    connect("http://a.test", -1), connect("http://a.test", Number.NaN), connect("http://a.test", Number.POSITIVE_INFINITY),
    connect("", 1), connect("about:blank", 1),
    { url: "http://a.test/", ms: 1, source: "browser_first_byte", document: true, local: true },
    { url: "http://a.test/i.png", ms: 1, source: "browser_first_byte", document: false },
  ];
  for (const sample of bad) assert.equal(speed.observe(sample), false, JSON.stringify(sample));
  assert.deepEqual(bad.map(rejectReason), [
    "not a duration", "not a duration", "not a duration", "no origin", "no origin", "answered without the network", "not a document",
  ]);
  assert.equal(speed.verdict("http://a.test").state, "unknown");
  assert.deepEqual(heard, []);
  assert.equal(speed.observe({ url: "http://a.test/", ms: 3, source: "browser_first_byte", document: true }), true);
  assert.deepEqual(heard, ["a.test"]);
});

test("a fast verdict expires when its last fast sample ages out; nextExpiry is the earliest end among the hosts asked", () => {
  const { speed, at } = clocked();
  at(100);
  speed.observe(connect("http://a.test", 2));
  at(300);
  speed.observe(connect("https://a.test", 140)); // a slow sample of the same host does not extend the fast verdict
  speed.observe(connect("http://b.test", 1));
  speed.observe(connect("http://far.test", 180));
  assert.deepEqual(speed.verdict("http://a.test"), { host: "a.test", state: "fast", rttMs: 2, expiresAt: 1100 });
  assert.equal(speed.verdict("http://far.test").state, "slow");
  assert.deepEqual(speed.knownHosts(), ["far.test", "b.test", "a.test"], "most recently observed first");
  assert.equal(speed.verdict("http://b.test").state, "fast");
  assert.equal(speed.nextExpiry(["b.test", "a.test"]), 1100);
  assert.equal(speed.nextExpiry(["far.test"]), 1300, "a slow verdict ends when its oldest fresh sample ages out");
  assert.equal(speed.nextExpiry(["unknown.test"]), null);
  at(1101);
  assert.deepEqual(speed.verdict("http://a.test"), { host: "a.test", state: "slow", rttMs: 140, expiresAt: 1300 });
  assert.equal(speed.verdict("http://b.test").state, "fast");
  assert.equal(speed.nextExpiry(["b.test"]), 1300, "b.test's");
  at(1301);
  assert.equal(speed.nextExpiry(["a.test", "b.test", "far.test"]), null);
  assert.deepEqual(speed.knownHosts(), []);
});

test("listeners hear the host of each sample, and every known host when the threshold changes, until they stop", () => {
  const { speed } = clocked();
  const heard: string[] = [];
  const stop = speed.onVerdict((host) => heard.push(host));
  speed.observe(connect("http://a.test", 1));
  speed.observe(connect("https://a.test:8443", 2));
  speed.observe(connect("http://b.test", 30));
  speed.setThreshold(STEP_ASIDE_BELOW_RTT_MS); // unchanged: nothing to tell
  speed.setThreshold(null);
  assert.deepEqual(heard, ["a.test", "a.test", "b.test", "a.test", "b.test"], "oldest first, so the newest is heard last");
  stop();
  speed.observe(connect("http://d.test", 5));
  assert.equal(heard.length, 5);
});

test("bounded: the least recently observed origin goes first", () => {
  const { speed } = clocked({ maxOrigins: 2, maxAgeMs: 1000, samples: 2 });
  speed.observe(connect("http://a.test", 1));
  speed.observe(connect("http://b.test", 2));
  speed.observe(connect("http://a.test", 3));
  speed.observe(connect("http://c.test", 4));
  assert.equal(speed.verdict("http://b.test").state, "unknown");
  assert.equal(speed.verdict("http://a.test").rttMs, 1);
  assert.equal(speed.verdict("http://c.test").rttMs, 4);
});

test("the browser's timing: new connections' connect (TLS excluded), a document's sent → first byte on a reused one", () => {
  const { speed } = clocked();
  const kept: [string, number][] = [];
  const log = new CdpNetworkLog(() => undefined, (sample) => {
    if (speed.observe(sample)) kept.push([sample.url, sample.ms]);
  });
  const timing = (o: Record<string, number>): Record<string, number> => ({
    requestTime: 100, proxyStart: -1, proxyEnd: -1, dnsStart: -1, dnsEnd: -1, connectStart: -1, connectEnd: -1,
    sslStart: -1, sslEnd: -1, sendStart: 0, sendEnd: 0, receiveHeadersEnd: 5, ...o,
  });
  const response = (url: string, t: Record<string, number>) => ({
    url, status: 200, statusText: "OK", headers: {}, mimeType: "text/html", connectionId: 1, encodedDataLength: 0,
    protocol: "http/1.1", remoteIPAddress: "192.0.2.1", timing: t,
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
  assert.deepEqual(kept, [["http://a.test/", 60], ["http://a.test/", 77], ["https://b.test/", 8], ["https://b.test/", 9], ["http://a.test/x", 5]]);
  assert.equal(speed.verdict("http://a.test/").rttMs, 5);
});

// Untrustworthy samples are never trusted: [samples in order of arrival, the verdict, the RTT estimate].
const firstByte = (url: string, ms: number): SpeedSample => ({ url, ms, source: "browser_first_byte", document: true });
const browserConnect = (url: string, ms: number): SpeedSample => ({ url, ms, source: "browser_connect" });
const outlierCases: [string, SpeedSample[], "fast" | "slow" | "unknown", number][] = [
  ["the field report: a 4 ms sample after consistent 400 ms ones", [connect("http://s.test", 400), browserConnect("https://s.test", 410), connect("http://s.test", 4)], "slow", 400],
  ["... and before them: the slow ones, when they come, outweigh it", [connect("http://s.test", 0.3), connect("http://s.test", 395), connect("http://s.test", 402)], "slow", 395],
  ["3G: 20 ms against 300-odd ms", [connect("http://l.test", 302), connect("http://l.test", 20), browserConnect("http://l.test", 310)], "slow", 302],
  ["one slow sample alone does not outweigh a fast one (a queue can inflate a connect)", [connect("http://n.test", 0.4), connect("http://n.test", 300)], "fast", 0.4],
  ["a LAN host's samples scatter but stand together", [connect("http://n.test", 0.2), browserConnect("http://n.test", 4.5), connect("http://n.test", 1.1), browserConnect("http://n.test", 30)], "fast", 0.2],
  ["first-byte times are upper bounds: large ones contradict no connect time", [connect("http://n.test", 0.5), firstByte("http://n.test", 300), firstByte("http://n.test", 280)], "fast", 0.5],
  ["a first-byte time below consistent connect times is impossible", [connect("http://s.test", 600), connect("http://s.test", 610), firstByte("http://s.test", 3)], "slow", 600],
  ["a lone sample is all there is", [connect("http://n.test", 4)], "fast", 4],
];
for (const [name, samples, state, rttMs] of outlierCases) {
  test(`outliers: ${name}`, () => {
    const { speed } = clocked();
    for (const sample of samples) assert.equal(speed.observe(sample), true);
    const verdict = speed.verdict(samples[0]?.url ?? "");
    assert.deepEqual([verdict.state, verdict.rttMs], [state, rttMs]);
  });
}

test("contradicted: at least two round trips far above, none near; first-byte times only as the judged one", () => {
  const rtt = (ms: number) => ({ ms, kind: "rtt" as const });
  const upper = (ms: number) => ({ ms, kind: "upper" as const });
  assert.equal(contradicted({ ms: 4 }, [rtt(400), rtt(410)]), true);
  assert.equal(contradicted({ ms: 4 }, [rtt(400)]), false, "one against one: not consistent");
  assert.equal(contradicted({ ms: 4 }, [rtt(400), rtt(410), rtt(20)]), false, "20 ≤ 4 × 4 + 5 keeps it company");
  assert.equal(contradicted({ ms: 4 }, [upper(400), upper(410)]), false);
  assert.equal(contradicted({ ms: 100 }, [rtt(400), rtt(410)]), false, "within the factor");
});

test("a remembered round trip decides while nothing is measured; the first measured sample replaces it", () => {
  const { speed, at } = clocked();
  const heard: string[] = [];
  speed.onVerdict((host) => heard.push(host));
  assert.deepEqual(helperSample("https://far.test", 598, true), { url: "https://far.test", ms: 598, source: "helper_memory" });
  assert.deepEqual(helperSample("https://far.test", 598, false).source, "helper_connect");
  speed.observe(helperSample("https://far.test", 598, true));
  assert.deepEqual(heard, ["far.test"], "the probe hears at once");
  assert.equal(speed.verdict("https://far.test/").state, "slow");
  // The network changed since (a LAN now): the measured connect decides, however far the remembered one lies.
  at(10);
  speed.observe(connect("https://far.test", 0.6));
  assert.equal(speed.verdict("https://far.test/").state, "fast");
  assert.equal(speed.verdict("https://far.test/").rttMs, 0.6);
  // A remembered one after a measured one changes nothing, on any origin of the host.
  speed.observe(helperSample("http://far.test:8080", 598, true));
  assert.equal(speed.verdict("https://far.test/").rttMs, 0.6);
  // Remembered fast, measured slow (a laptop now on a tether): the measured stands, the remembered is gone.
  speed.observe(helperSample("https://near.test", 2, true));
  assert.equal(speed.verdict("https://near.test/").state, "fast");
  speed.observe(connect("https://near.test", 410));
  assert.deepEqual([speed.verdict("https://near.test/").state, speed.verdict("https://near.test/").rttMs], ["slow", 410]);
  // It contradicts nothing: one measured sample far below two remembered ones stands.
  speed.observe(helperSample("https://x.test", 400, true));
  speed.observe(helperSample("https://x.test:444", 410, true));
  speed.observe(connect("https://x.test:8443", 4));
  assert.equal(speed.verdict("https://x.test/").rttMs, 4);
});
