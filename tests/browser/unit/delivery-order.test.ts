// What a delivery does with the helper's messages out of their order (head, body*, end): a second head or a body
// before any head is refused (the browser fetches the request), never fulfilled as a mix of two responses; a body
// longer than the Content-Length its head announced is refused too.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const LIMITS = { headTimeoutMs: 1000, stallTimeoutMs: 500, maxBodyBytes: 1 << 20 };
const b64 = (text: string): string => Buffer.from(text).toString("base64");
const head = (status: number, headers: [string, string][] = [], decoded = true): Head => ({
  type: "head", id: "r1", status, reason: "", http_version: "1.1", headers, decoded,
});

function delivery(): { d: RequestDelivery; fulfilled: Protocol.Fetch.FulfillRequestRequest[]; passed: string[]; cancelled: string[]; results: DeliveryResult[] } {
  const fulfilled: Protocol.Fetch.FulfillRequestRequest[] = [];
  const passed: string[] = [];
  const cancelled: string[] = [];
  const results: DeliveryResult[] = [];
  const responder: FetchResponder = {
    fulfill: (params) => { fulfilled.push(params); return Promise.resolve(true); },
    pass: (id) => { passed.push(id); return Promise.resolve(); },
  };
  const paused = { interceptionId: "i1", url: "http://a.test/x", method: "GET", headers: [] } as unknown as PausedRequest;
  const d = new RequestDelivery("r1", paused, responder, {
    done: (r) => results.push(r), timing: () => undefined, cancel: (id) => cancelled.push(id),
  }, LIMITS);
  return { d, fulfilled, passed, cancelled, results };
}

const settled = (): Promise<void> => new Promise((r) => setImmediate(r));

test("a second head is refused, not fulfilled with the first response's body in front", async () => {
  const { d, fulfilled, passed, cancelled, results } = delivery();
  d.sent();
  d.head(head(200));
  d.body({ data: b64("first") });
  d.head(head(404));
  d.body({ data: b64("second") });
  d.end();
  await settled();
  assert.deepEqual(fulfilled, []);
  assert.deepEqual(passed, ["i1"]);
  assert.deepEqual(cancelled, ["r1"]);
  assert.equal(results.length, 1);
  assert.equal(results[0]?.outcome === "passed" && results[0].reason, "helper_error");
});

test("a body before the head is refused", async () => {
  const { d, fulfilled, passed, results } = delivery();
  d.sent();
  d.body({ data: b64("early") });
  d.head(head(200));
  d.end();
  await settled();
  assert.deepEqual(fulfilled, []);
  assert.deepEqual(passed, ["i1"]);
  assert.equal(results[0]?.outcome === "passed" && results[0].reason, "helper_error");
});

test("a body longer than its head's Content-Length is refused", async () => {
  const { d, fulfilled, passed, cancelled, results } = delivery();
  d.sent();
  d.head(head(200, [["Content-Length", "5"]], false));
  d.body({ data: b64("hello") });
  d.body({ data: b64(" and more") });
  d.end();
  await settled();
  assert.deepEqual(fulfilled, []);
  assert.deepEqual(passed, ["i1"]);
  assert.deepEqual(cancelled, ["r1"]);
  assert.equal(results[0]?.outcome === "passed" && results[0].reason, "helper_error");
});

test("a body of exactly its Content-Length is fulfilled", async () => {
  const { d, fulfilled, passed } = delivery();
  d.sent();
  d.head(head(200, [["Content-Length", "5"]], false));
  d.body({ data: b64("hel") });
  d.body({ data: b64("lo") });
  d.end();
  await settled();
  assert.deepEqual(passed, []);
  assert.equal(Buffer.from(fulfilled[0]?.body ?? "", "base64").toString(), "hello");
});
