// RttProbe: a document of an origin with unknown RTT waits for the helper's connect time, but never long.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RttProbe } from "../../../extension/src/proxy/rtt-probe.js";

const PAGE = { address_space: "public" as const, top_site: "http://shop.example" };

test("resolves when the origin's connect time arrives, after the wait at the latest, at once when the helper cannot be asked", async () => {
  const asked: string[] = [];
  let up = true;
  const probe = new RttProbe((url) => (asked.push(url), up), 200);
  const t0 = Date.now();
  const waiting = probe.probe("http://lan.example/a", PAGE);
  const other = probe.probe("http://other.example/", PAGE);
  probe.observed("http://unrelated.example");
  probe.observed("http://lan.example");
  await waiting;
  assert.ok(Date.now() - t0 < 150, "answered by the connect time, not the timer");
  await other;
  assert.ok(Date.now() - t0 >= 190, "no connect time: the wait's end");
  assert.deepEqual(asked, ["http://lan.example/a", "http://other.example/"]);
  up = false;
  const t1 = Date.now();
  await probe.probe("http://down.example/", PAGE);
  assert.ok(Date.now() - t1 < 100);
  await probe.probe("not a url", PAGE);
});
