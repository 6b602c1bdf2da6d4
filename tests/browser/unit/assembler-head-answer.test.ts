// The answer to HEAD has no body: its Content-Length and Content-Encoding are those the GET would get (RFC 9110
// §9.3.2), so a HEAD of a large or compressed file came with a Content-Length above the size limit, or a coding the
// helper had nothing to decode (decoded=false), and the assembler refused it as too large or still coded (the browser
// would have asked the server again). Chromium's pass-through policy leaves HEAD to the browser today (`method`), so
// the assembler is what must not count on that. 204 and 304 already were bodiless; HEAD now is too, and none of them
// takes room in the extension's body budget.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { BodyBudget } from "../../../extension/src/deliver/body-budget.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import type { Head } from "../../../extension/src/generated/protocol.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";

const LARGE = 104857600;
const head = (status: number, headers: [string, string][]): Head => ({
  type: "head", id: "r1", status, reason: "OK", http_version: "1.1", decoded: false, headers,
});
const FIELDS: [string, string][][] = [
  [["Content-Length", String(LARGE)]],
  [["Content-Length", "5000"], ["Content-Encoding", "gzip"]],
  [["Content-Length", String(LARGE)], ["Content-Encoding", "br"]],
];

test("the answer to HEAD is fulfilled (empty body) whatever size or coding its fields name", () => {
  for (const headers of FIELDS) {
    for (const status of [200, 204, 304]) {
      const a = new ResponseAssembler(1000, "HEAD");
      assert.equal(a.addHead(head(status, headers)), null, `${status} ${JSON.stringify(headers)}`);
      assert.equal(a.announcedBytes, 0, "no body to hold");
      const done = a.finish();
      assert.equal(done.kind === "complete" && done.bodyBase64, "", "complete, with an empty body");
    }
  }
  const lower = new ResponseAssembler(1000, "head");
  assert.equal(lower.addHead(head(200, FIELDS[0] ?? [])), null, "the method's case does not matter");
});

test("the same fields on a GET's 200 are still refused (too large; a body still coded)", () => {
  const big = new ResponseAssembler(1000, "GET").addHead(head(200, [["Content-Length", String(LARGE)]]));
  assert.equal(big?.kind === "refused" && big.reason, "too_large");
  const coded = new ResponseAssembler(1000, "GET").addHead(head(200, [["Content-Encoding", "gzip"]]));
  assert.equal(coded?.kind === "refused" && coded.reason, "helper_error");
});

test("a HEAD delivery is fulfilled with the GET's fields and takes nothing of the body budget", async () => {
  const fulfilled: Protocol.Fetch.FulfillRequestRequest[] = [];
  const results: DeliveryResult[] = [];
  const responder: FetchResponder = {
    fulfill: (p) => (fulfilled.push(p), Promise.resolve(true)),
    pass: () => Promise.resolve(),
  };
  const budget = new BodyBudget(1000);
  const paused = { interceptionId: "i1", url: "http://a.test/big.iso", method: "HEAD", headers: [] } as unknown as PausedRequest;
  const d = new RequestDelivery("r1", paused, responder, { done: (r) => results.push(r), timing: () => undefined, cancel: () => undefined },
    { headTimeoutMs: 1000, stallTimeoutMs: 1000, maxBodyBytes: 1000 }, budget);
  d.sent();
  d.head(head(200, [["Content-Length", String(LARGE)], ["Content-Encoding", "gzip"], ["Content-Type", "application/x-iso9660-image"]]));
  assert.equal(budget.usedBytes, 0);
  d.end();
  await new Promise((r) => setImmediate(r));
  assert.equal(results[0]?.outcome, "fulfilled");
  assert.equal(fulfilled[0]?.body, "");
  assert.deepEqual(fulfilled[0].responseHeaders, [
    { name: "Content-Length", value: String(LARGE) }, { name: "Content-Type", value: "application/x-iso9660-image" },
  ]);
});
