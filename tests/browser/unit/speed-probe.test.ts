// SpeedProbe: a document of a host with unknown speed waits for the helper's connect time, but never long; nothing
// to wait for when the verdict is known, the threshold off, or the helper cannot be asked; once the helper has
// acknowledged the preconnect, no sample by the threshold (plus the report's way back) ends it: the host is not fast.
// Mock timers and an injected clock: no real time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HostSpeed, STEP_ASIDE_BELOW_RTT_MS } from "../../../extension/src/intercept/host-speed.js";
import { PROBE_SAMPLE_SLACK_MS, SpeedProbe, probeEnd } from "../../../extension/src/intercept/speed-probe.js";

/** Whether the promise settled, after the microtasks queued so far ran. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return done;
}

test("a sample of the host (any port) ends the wait; no sample: the wait's end; the helper asked once per probe", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const speed = new HostSpeed();
  const asked: string[] = [];
  // The probe's clock stands still with the mock timers (the real one moved on a busy CI machine between the probe's
  // start and its re-armed timer, and the 200 ms wait ended a tick early).
  const probe = new SpeedProbe<string>(speed, (url, page) => (asked.push(`${url} for ${page}`), true), 200, undefined, () => 0);
  const lan = probe.probe("http://lan.example/a", "tab 1");
  const other = probe.probe("http://other.example/", "tab 2");
  assert.ok(lan && other);
  speed.observe({ url: "http://unrelated.example", ms: 1, source: "helper_connect" });
  assert.equal(await settled(lan), false, "another host's sample");
  speed.observe({ url: "http://lan.example:8080", ms: 40, source: "helper_connect" });
  assert.equal(await settled(lan), true, "answered by the connect time (slow or not), not the timer");
  t.mock.timers.tick(199);
  assert.equal(await settled(other), false);
  t.mock.timers.tick(1);
  assert.equal(await settled(other), true, "no connect time: the wait's end");
  assert.deepEqual(asked, ["http://lan.example/a for tab 1", "http://other.example/ for tab 2"]);
});

test("nothing to wait for: a known verdict, the threshold off, not a URL, the helper not asked", () => {
  const speed = new HostSpeed();
  let up = true;
  const probe = new SpeedProbe<null>(speed, () => up, 200);
  speed.observe({ url: "http://known.example", ms: 80, source: "helper_connect" });
  assert.equal(probe.probe("http://known.example/", null), null, "known slow");
  assert.equal(probe.probe("not a url", null), null);
  up = false;
  assert.equal(probe.probe("http://down.example/", null), null, "port down");
  up = true;
  speed.setThreshold(null);
  assert.equal(probe.probe("http://new.example/", null), null, "threshold off: nothing would step aside");
});

test("probeEnd: the wait's bound without an acknowledgement; the threshold plus the way back after one, never later", () => {
  assert.equal(probeEnd(1000, null, 150, 100), 1150);
  assert.equal(probeEnd(1000, 1004, 150, 100), 1004 + 100 + PROBE_SAMPLE_SLACK_MS, "acknowledged at once: decided early");
  assert.equal(probeEnd(1000, 1090, 150, 100), 1150, "a late pong never makes the wait longer than the bound");
  // Every acknowledgement time and threshold: within [sent, bound], and never before a fast host's sample can come.
  for (let ack = 1000; ack <= 1200; ack += 7) {
    for (const threshold of [0, 50, 100, 200]) {
      const end = probeEnd(1000, ack, 150, threshold);
      assert.ok(end <= 1150 && end >= 1000);
      assert.ok(end === 1150 || end >= ack + threshold, "a sample below the threshold, sent after the pong, is waited for");
    }
  }
});

test("acknowledged: no sample by the threshold plus the way back ends the wait; unacknowledged: the whole wait", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 5000 });
  const speed = new HostSpeed();
  const acks: ((ok: boolean) => void)[] = [];
  const ack = (): Promise<boolean> => new Promise((resolve) => acks.push(resolve));
  const probe = new SpeedProbe<null>(speed, () => true, 150, ack, () => Date.now());
  const slow = probe.probe("http://slow.example/", null);
  const busy = probe.probe("http://busy.example/", null);
  assert.ok(slow && busy);
  t.mock.timers.tick(3);
  acks[0]?.(true);
  acks[1]?.(false);
  assert.equal(await settled(slow), false);
  const early = 3 + STEP_ASIDE_BELOW_RTT_MS + PROBE_SAMPLE_SLACK_MS;
  t.mock.timers.tick(early - 3 - 1);
  assert.equal(await settled(slow), false, "a fast host's sample could still come");
  t.mock.timers.tick(1);
  assert.equal(await settled(slow), true, "decided not fast: released before the wait's end");
  assert.equal(await settled(busy), false, "no acknowledgement: nothing is known yet");
  t.mock.timers.tick(150 - early);
  assert.equal(await settled(busy), true);
});

test("a fast sample after the acknowledgement still ends the wait at once", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
  const speed = new HostSpeed();
  let ack: (ok: boolean) => void = () => undefined;
  const probe = new SpeedProbe<null>(speed, () => true, 150, () => new Promise((resolve) => (ack = resolve)), () => Date.now());
  const near = probe.probe("http://near.example/", null);
  assert.ok(near);
  t.mock.timers.tick(2);
  ack(true);
  t.mock.timers.tick(20);
  speed.observe({ url: "http://near.example", ms: 18, source: "helper_connect" });
  assert.equal(await settled(near), true);
  assert.equal(speed.verdict("http://near.example/").state, "fast");
});
