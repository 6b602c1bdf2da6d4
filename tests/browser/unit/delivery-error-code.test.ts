// The helper's error code picks the reason a request went to the browser (RequestDelivery's table). The code is
// text from another process, not checked against the schema's list on the way in: one naming a key every object
// inherits ("constructor", "__proto__", "toString") read the inherited value, and a function or Object.prototype
// became the request's pass reason (counted per tab and shown in the panel). An unknown code is "helper_error".
import { test } from "node:test";
import assert from "node:assert/strict";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import type { Error as HelperError } from "../../../extension/src/generated/protocol.js";

async function passReason(code: string): Promise<DeliveryResult | undefined> {
  const results: DeliveryResult[] = [];
  const responder: FetchResponder = { fulfill: () => Promise.resolve(true), pass: () => Promise.resolve() };
  const paused = { interceptionId: "i1", url: "http://a.test/x.png", method: "GET", headers: [] } as unknown as PausedRequest;
  const d = new RequestDelivery("r1", paused, responder, { done: (r) => results.push(r), timing: () => undefined, cancel: () => undefined });
  d.error(code as HelperError["code"], "said the helper");
  await Promise.resolve();
  return results[0];
}

test("an error code naming an inherited key is a helper_error, not the inherited value", async () => {
  for (const code of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
    const result = await passReason(code);
    assert.equal(result?.outcome === "passed" && result.reason, "helper_error", code);
  }
});

test("known codes keep their reasons", async () => {
  const expected: Record<string, string> = {
    blocked_address: "blocked_address", too_large: "too_large", timeout: "timeout", connection_lost: "helper_unavailable",
    browser_warm: "browser_warm_connection", dns_failed: "helper_error",
  };
  for (const [code, reason] of Object.entries(expected)) {
    const result = await passReason(code);
    assert.equal(result?.outcome === "passed" && result.reason, reason, code);
  }
});
