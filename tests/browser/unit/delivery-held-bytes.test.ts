// A delivery's body pieces are held only until its request is answered. They used to stay in its assembler after
// the answer, while the delivery itself stayed referenced: the helper client keeps an answered request's sink until
// its timing comes (up to 4000 of them), and the batch's closures keep its deliveries until batch_done; a passed or
// refused request's pieces, or a fulfilled one's, lived on with them (8 MiB each at most, 32 MiB split). Every end
// (fulfilled, failed by the helper, passed, refused, timed out, dropped) now leaves nothing held.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import type { Head } from "../../../extension/src/generated/protocol.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";

const LIMITS = { headTimeoutMs: 1000, stallTimeoutMs: 500, maxBodyBytes: 1 << 20 };
const b64 = (text: string): string => Buffer.from(text).toString("base64");
const head = (headers: [string, string][] = []): Head => ({
  type: "head", id: "r1", status: 200, reason: "OK", http_version: "1.1", headers, decoded: true,
});
const settled = (): Promise<void> => new Promise((r) => setImmediate(r));

test("assembler: nothing held once the response is handed over, refused or released", () => {
  const complete = new ResponseAssembler(100);
  complete.addHead(head());
  complete.addBody(b64("hello"));
  complete.addBody(b64("world!"));
  assert.equal(complete.heldBytes, 11);
  const done = complete.finish();
  assert.equal(done.kind === "complete" && Buffer.from(done.bodyBase64, "base64").toString(), "helloworld!");
  assert.equal(complete.heldBytes, 0);
  assert.equal(complete.bodyBytes, 11, "its size is still known");

  const tooLarge = new ResponseAssembler(8);
  tooLarge.addHead(head());
  tooLarge.addBody(b64("hello"));
  assert.equal(tooLarge.addBody(b64("world"))?.kind, "refused");
  assert.equal(tooLarge.heldBytes, 0);

  const short = new ResponseAssembler(100);
  short.addHead({ ...head([["Content-Length", "10"]]), decoded: false });
  short.addBody(b64("hello"));
  assert.equal(short.finish().kind, "refused");
  assert.equal(short.heldBytes, 0);

  const released = new ResponseAssembler(100);
  released.addHead(head());
  released.addBody(b64("hello"));
  released.release();
  assert.equal(released.heldBytes, 0);
  assert.equal(released.addBody(b64("more"))?.kind, "refused", "nothing is taken after");
  assert.equal(released.heldBytes, 0);
});

function delivery(t: TestContext, fulfilOk = true) {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const results: DeliveryResult[] = [];
  const responder: FetchResponder = {
    fulfill: () => Promise.resolve(fulfilOk),
    pass: () => Promise.resolve(),
  };
  const paused = { interceptionId: "i1", url: "http://a.test/x.js", method: "GET", headers: [] } as unknown as PausedRequest;
  const d = new RequestDelivery("r1", paused, responder, { done: (r) => results.push(r), timing: () => undefined, cancel: () => undefined }, LIMITS);
  d.sent();
  d.head(head());
  d.body({ data: b64("some body bytes") });
  assert.equal(d.heldBytes, 15, "held while it is being received");
  return { d, results };
}

const ENDS: [string, (d: RequestDelivery, t: TestContext) => void, DeliveryResult["outcome"] | null][] = [
  ["fulfilled", (d) => d.end(), "fulfilled"],
  ["failed by the helper", (d) => d.error("connect_failed", "refused"), "passed"],
  ["lost with the helper's port", (d) => d.error("connection_lost", "port closed"), "passed"],
  ["passed", (d) => d.pass("helper_unavailable", "gone"), "passed"],
  ["refused (longer than allowed)", (d) => d.body({ data: b64("x".repeat(LIMITS.maxBodyBytes)) }), "passed"],
  ["timed out", (_d, t) => t.mock.timers.tick(LIMITS.stallTimeoutMs), "passed"],
  ["dropped (its tab went)", (d) => d.drop(), null],
];

for (const [name, end, outcome] of ENDS) {
  test(`delivery ${name}: nothing of its body held after the answer`, async (t) => {
    const { d, results } = delivery(t);
    end(d, t);
    assert.equal(d.heldBytes, 0);
    await settled();
    assert.equal(results[0]?.outcome ?? null, outcome);
    d.body({ data: b64("a late piece") });
    assert.equal(d.heldBytes, 0, "a piece after the answer is not held");
  });
}

test("delivery whose fulfil the browser refused (continued instead): nothing held", async (t) => {
  const { d, results } = delivery(t, false);
  d.end();
  await settled();
  assert.equal(results[0]?.outcome, "passed");
  assert.equal(d.heldBytes, 0);
});
