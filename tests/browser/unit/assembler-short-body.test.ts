// A body shorter than its head's Content-Length is a truncated response: fulfilled, Chromium would take the
// truncated resource as the whole one (a script cut mid-statement, half an image), where the browser's own fetch
// would have failed it or fetched it whole. The assembler refuses it at the end (the browser then fetches the
// request itself) instead of trusting the helper to have reported every short body as an error. A response that
// has no body whatever its Content-Length says (the answer to HEAD, a 204, a 304) is still fulfilled.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const head = (status: number, length: number, decoded = false): Head => ({
  type: "head", id: "r1", status, reason: "", http_version: "1.1", decoded, headers: [["Content-Length", String(length)]],
});
const b64 = (text: string): string => Buffer.from(text).toString("base64");

test("a body shorter than its Content-Length is refused at the end", () => {
  const a = new ResponseAssembler();
  assert.equal(a.addHead(head(200, 10)), null);
  assert.equal(a.addBody(b64("hello")), null);
  const done = a.finish();
  assert.equal(done.kind === "refused" && done.reason, "helper_error");
  const none = new ResponseAssembler();
  none.addHead(head(200, 10));
  assert.equal(none.finish().kind, "refused", "no body at all for a Content-Length of 10");
});

test("a body of exactly its Content-Length, or a decoded one (its length not the field's), is fulfilled", () => {
  const a = new ResponseAssembler();
  a.addHead(head(200, 10));
  a.addBody(b64("hello"));
  a.addBody(b64("world"));
  assert.equal(a.finish().kind, "complete");
  const decoded = new ResponseAssembler();
  decoded.addHead(head(200, 10, true));
  decoded.addBody(b64("hi"));
  assert.equal(decoded.finish().kind, "complete");
});

test("responses without a body are fulfilled whatever their Content-Length", () => {
  for (const status of [204, 304]) {
    const a = new ResponseAssembler();
    a.addHead(head(status, 10));
    assert.equal(a.finish().kind, "complete", `${status}`);
  }
  const answerToHead = new ResponseAssembler(undefined, "HEAD");
  answerToHead.addHead(head(200, 10));
  assert.equal(answerToHead.finish().kind, "complete", "the answer to HEAD");
});

test("a delivery whose body ended short lets the browser fetch the request (nothing fulfilled)", async () => {
  const answered: string[] = [];
  const results: DeliveryResult[] = [];
  const responder: FetchResponder = {
    fulfill: (p) => (answered.push(`fulfill ${p.requestId}`), Promise.resolve(true)),
    pass: (id) => (answered.push(`pass ${id}`), Promise.resolve()),
  };
  const paused = { interceptionId: "i1", url: "http://a.test/app.js", method: "GET", headers: [] } as unknown as PausedRequest;
  const d = new RequestDelivery("r1", paused, responder, { done: (r) => results.push(r), timing: () => undefined, cancel: () => undefined });
  d.head(head(200, 10));
  d.body({ data: b64("hello") });
  d.end();
  await Promise.resolve();
  assert.deepEqual(answered, ["pass i1"]);
  assert.equal(results[0]?.outcome, "passed");
  const headDelivery = new RequestDelivery("r2", { ...paused, interceptionId: "i2", method: "HEAD" }, responder, {
    done: (r) => results.push(r), timing: () => undefined, cancel: () => undefined,
  });
  headDelivery.head(head(200, 10));
  headDelivery.end();
  await Promise.resolve();
  assert.deepEqual(answered, ["pass i1", "fulfill i2"]);
});
