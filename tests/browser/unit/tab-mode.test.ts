// When an accelerated tab's debugger session listens (Fetch, Network) and when the browser is left alone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { OriginLatency } from "../../../extension/src/intercept/origin-latency.js";
import { TabModes } from "../../../extension/src/intercept/tab-mode.js";

test("a fast host: Fetch and Network off at once, each loaded page listed from its Resource Timing", () => {
  const m = new TabModes();
  m.attached(1, "http://lan.test/a");
  assert.deepEqual(m.navigating(1, "http://lan.test/a", false), [], "unknown RTT: intercepted as attached");
  assert.deepEqual(m.tabsOf("lan.test"), [1], "by host: a round trip belongs to the host, any port");
  assert.deepEqual(m.originFast(1), ["fetch_off", "network_off"]);
  assert.equal(m.isBrowser(1), true);
  assert.deepEqual(m.originFast(1), [], "once");
  assert.deepEqual(m.loaded(1), ["list"]);
  assert.deepEqual(m.navigating(1, "http://lan.test/b", true), [], "another fast page: nothing to switch");
  assert.deepEqual(m.loaded(1), ["list"], "every page of a browser tab");
});

test("a navigation to a host not known fast turns Fetch on first, then Network; an intercepted tab stays so", () => {
  const m = new TabModes();
  m.attached(1, "http://lan.test/");
  m.originFast(1);
  m.loaded(1);
  assert.deepEqual(m.navigating(1, "http://far.test/", false), ["fetch_on", "network_on"]);
  assert.equal(m.isBrowser(1), false);
  assert.equal(m.host(1), "far.test");
  assert.deepEqual(m.loaded(1), [], "intercepted: Network stays on");
  assert.deepEqual(m.navigating(1, "http://far.test/next", false), []);
  assert.deepEqual(m.navigating(1, "http://lan.test/", true), ["fetch_off", "network_off"]);
  assert.deepEqual(m.navigating(1, "http://far.test/", false), ["fetch_on", "network_on"]);
});

test("unknown tabs and forgotten ones get no commands", () => {
  const m = new TabModes();
  assert.deepEqual(m.navigating(5, "http://a.test/", true), []);
  m.attached(5, "not a url");
  assert.equal(m.host(5), "");
  m.forget(5);
  assert.deepEqual(m.originFast(5), []);
  assert.deepEqual(m.loaded(5), []);
});

test("a host's round trip: the best of its origins (any scheme or port), fresh samples only", () => {
  let now = 0;
  const latency = new OriginLatency({ maxOrigins: 10, maxAgeMs: 1000, samples: 4 }, () => now);
  latency.observe("http://lan.test", 3);
  latency.observe("https://lan.test:8443", 0.5);
  latency.observe("http://far.test", 80);
  assert.equal(latency.hostRttMs("lan.test"), 0.5);
  assert.equal(latency.hostRttMs("far.test"), 80);
  assert.equal(latency.hostRttMs("other.test"), null);
  now = 2000;
  assert.equal(latency.hostRttMs("lan.test"), null, "aged out");
});
