// SpeedProbe: a document of a host with unknown speed waits for the helper's connect time, but never long; nothing
// to wait for when the verdict is known, the threshold off, or the helper cannot be asked. Mock timers: no real time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import { SpeedProbe } from "../../../extension/src/intercept/speed-probe.js";

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
  const probe = new SpeedProbe<string>(speed, (url, page) => (asked.push(`${url} for ${page}`), true), 200);
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
