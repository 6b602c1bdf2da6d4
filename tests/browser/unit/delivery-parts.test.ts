// Body joining, fulfil parameters and the response assembler's limits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { base64ByteLength, concatBase64 } from "../../../extension/src/deliver/base64-concat.js";
import { fulfillParams } from "../../../extension/src/deliver/fulfill-params.js";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const b64 = (bytes: Buffer): string => bytes.toString("base64");

test("base64 pieces join into the base64 of the whole body, whatever the piece sizes", () => {
  const body = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7) % 256));
  for (const cuts of [[999], [3, 6, 300], [1, 2, 500], [10, 11, 12, 13]]) {
    const pieces: string[] = [];
    let at = 0;
    for (const cut of [...cuts, body.length]) {
      pieces.push(b64(body.subarray(at, cut)));
      at = cut;
    }
    assert.equal(concatBase64(pieces), b64(body), `cuts ${cuts.join(",")}`);
    assert.equal(pieces.reduce((n, p) => n + base64ByteLength(p), 0), body.length);
  }
  assert.equal(concatBase64([]), "");
});

const head = (headers: [string, string][], status = 200): Head => ({
  type: "head", id: "r1", status, reason: "OK", http_version: "1.1", headers, decoded: true,
});

test("fulfil keeps the server's fields (repeated Set-Cookie, CORS) and drops transfer fields", () => {
  const params = fulfillParams("i9", head([
    ["Content-Type", "text/css"], ["Set-Cookie", "a=1"], ["Set-Cookie", "b=2; HttpOnly"],
    ["Access-Control-Allow-Origin", "http://a.test"], ["Content-Length", "999"], ["Transfer-Encoding", "chunked"],
    ["Connection", "keep-alive"], ["Keep-Alive", "timeout=5"],
  ]), "Ym9keQ==");
  assert.equal(params.requestId, "i9");
  assert.equal(params.responseCode, 200);
  assert.equal(params.body, "Ym9keQ==");
  assert.deepEqual(params.responseHeaders, [
    { name: "Content-Type", value: "text/css" }, { name: "Set-Cookie", value: "a=1" },
    { name: "Set-Cookie", value: "b=2; HttpOnly" }, { name: "Access-Control-Allow-Origin", value: "http://a.test" },
  ]);
});

test("3xx stay 3xx with their Location", () => {
  const params = fulfillParams("i", head([["Location", "/next"]], 302), "");
  assert.equal(params.responseCode, 302);
  assert.deepEqual(params.responseHeaders, [{ name: "Location", value: "/next" }]);
});

test("assembler: complete response; too large by Content-Length or by bytes; undecoded bodies refused", () => {
  const ok = new ResponseAssembler(10);
  assert.equal(ok.addHead(head([])), null);
  assert.equal(ok.addBody(b64(Buffer.from("hello"))), null);
  assert.equal(ok.addBody(b64(Buffer.from("world"))), null);
  const done = ok.finish();
  assert.equal(done.kind, "complete");
  assert.equal(Buffer.from(done.bodyBase64, "base64").toString(), "helloworld");

  const big = new ResponseAssembler(10);
  assert.deepEqual(big.addHead(head([["Content-Length", "11"]]))?.kind, "refused");
  const grows = new ResponseAssembler(10);
  grows.addHead(head([]));
  grows.addBody(b64(Buffer.from("123456")));
  const refused = grows.addBody(b64(Buffer.from("123456")));
  assert.equal(refused?.kind === "refused" && refused.reason, "too_large");
  const encoded = new ResponseAssembler();
  const r = encoded.addHead({ ...head([["Content-Encoding", "gzip"]]), decoded: false });
  assert.equal(r?.kind === "refused" && r.reason, "helper_error");
});
