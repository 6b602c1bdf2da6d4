// The extension's own timers wait for a helper that stopped, not for a slow link: a `working` message for the
// request's batch starts them afresh (an answer held until its pipelined connection drains can take longer than
// the 20 s head timer on a 384 kbit/s link; the browser used to fetch such requests a second time).
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";

const LIMITS = { headTimeoutMs: 1000, stallTimeoutMs: 500, maxBodyBytes: 1 << 20 };

function delivery(t: TestContext): { d: RequestDelivery; passed: string[]; cancelled: string[]; results: DeliveryResult[] } {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const passed: string[] = [];
  const cancelled: string[] = [];
  const results: DeliveryResult[] = [];
  const responder: FetchResponder = {
    fulfill: () => Promise.resolve(true),
    pass: (id) => { passed.push(id); return Promise.resolve(); },
  };
  const paused = { interceptionId: "i1", url: "http://a.test/x.png", method: "GET", headers: [] } as unknown as PausedRequest;
  const d = new RequestDelivery("r1", paused, responder, {
    done: (r) => results.push(r), timing: () => undefined, cancel: (id) => cancelled.push(id),
  }, LIMITS);
  return { d, passed, cancelled, results };
}

test("working before the head timer fires waits a whole head timeout again", (t) => {
  const { d, passed, cancelled } = delivery(t);
  d.sent();
  for (let i = 0; i < 5; i++) {  // 5 × 900 ms: far past the 1000 ms head timer, yet the helper kept saying so
    t.mock.timers.tick(900);
    d.working();
  }
  assert.deepEqual(passed, []);
  assert.deepEqual(cancelled, []);
  t.mock.timers.tick(1000);  // then silence: the timer fires
  assert.deepEqual(passed, ["i1"]);
  assert.deepEqual(cancelled, ["r1"]);
});

test("without working the head timer lets the browser fetch", (t) => {
  const { d, passed } = delivery(t);
  d.sent();
  t.mock.timers.tick(999);
  assert.deepEqual(passed, []);
  t.mock.timers.tick(1);
  assert.deepEqual(passed, ["i1"]);
});

test("working after the head arms the body's stall timer, and does nothing once answered", async (t) => {
  const { d, passed, results } = delivery(t);
  d.sent();
  d.head({ type: "head", id: "r1", status: 200, reason: "OK", http_version: "1.1", headers: [], decoded: true });
  t.mock.timers.tick(400);
  d.working();
  t.mock.timers.tick(400);
  assert.deepEqual(passed, []);
  t.mock.timers.tick(100);
  assert.deepEqual(passed, ["i1"]);  // the stall timer (500 ms), not the head's
  d.working();  // answered: nothing more
  t.mock.timers.tick(5000);
  await Promise.resolve();
  assert.equal(passed.length, 1);
  assert.equal(results.length, 1);
});

test("a delivery dropped before its batch went is cancelled at the helper at once, and arms no timer", (t) => {
  const { d, passed, cancelled } = delivery(t);
  d.drop();  // its tab went while the batch waited for the helper to start
  d.sent();
  assert.deepEqual(cancelled, ["r1"]);  // the helper fetches nothing the browser no longer holds
  t.mock.timers.tick(5000);
  assert.deepEqual(cancelled, ["r1"]);  // once: no head timer went off 20 s later
  assert.deepEqual(passed, []);
});
