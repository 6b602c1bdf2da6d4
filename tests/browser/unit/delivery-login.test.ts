// A 401 asking for a login (WWW-Authenticate) of a request that carried no Authorization goes to the browser, which
// asks the user or sends the credentials it keeps; the helper's 401 is never delivered for it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

async function deliver(requestHeaders: [string, string][], status: number, responseHeaders: [string, string][]) {
  const results: DeliveryResult[] = [];
  const calls: string[] = [];
  const cancelled: string[] = [];
  const responder: FetchResponder = {
    fulfill: (p) => (calls.push(`fulfill ${p.responseCode}`), Promise.resolve(true)),
    pass: () => (calls.push("pass"), Promise.resolve()),
  };
  const paused: PausedRequest = {
    interceptionId: "i1", url: "https://intranet.example/report.json", method: "GET", headers: requestHeaders, cdpResourceType: "Fetch",
    priority: "High", frameId: "F", hasBody: false,
  };
  const d = new RequestDelivery("r1", paused, responder, { done: (r) => results.push(r), timing: () => undefined, cancel: (id) => cancelled.push(id) });
  d.sent();
  const head: Head = { type: "head", id: "r1", status, reason: "", http_version: "1.1", headers: responseHeaders, decoded: true };
  d.head(head);
  d.body({ data: Buffer.from("no").toString("base64") });
  d.end();
  await new Promise((r) => setImmediate(r));
  d.drop();
  return { results, calls, cancelled };
}

test("401 + WWW-Authenticate to a request without Authorization: continued to the browser (login), the helper stopped", async () => {
  const { results, calls, cancelled } = await deliver([["Accept", "*/*"]], 401, [["WWW-Authenticate", 'Basic realm="x"']]);
  assert.deepEqual(calls, ["pass"]);
  assert.deepEqual(cancelled, ["r1"]);
  assert.equal(results.length, 1);
  assert.equal(results[0]?.outcome === "passed" && results[0].reason, "login");
});

test("the header name is matched whatever its case", async () => {
  const { calls } = await deliver([], 401, [["www-authenticate", "Bearer"]]);
  assert.deepEqual(calls, ["pass"]);
});

test("a 401 to a request that carried Authorization is the site's answer to it: delivered", async () => {
  const { calls, results } = await deliver([["authorization", "Basic dTpw"]], 401, [["WWW-Authenticate", 'Basic realm="x"']]);
  assert.deepEqual(calls, ["fulfill 401"]);
  assert.equal(results[0]?.outcome, "fulfilled");
});

test("a 401 without WWW-Authenticate, and a 403, are delivered", async () => {
  assert.deepEqual((await deliver([], 401, [["Content-Type", "text/plain"]])).calls, ["fulfill 401"]);
  assert.deepEqual((await deliver([], 403, [["WWW-Authenticate", "Basic"]])).calls, ["fulfill 403"]);
});
