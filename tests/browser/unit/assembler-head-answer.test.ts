// The answer to HEAD has no body: its Content-Length and Content-Encoding are those the GET would get (RFC 9110
// §9.3.2), so a HEAD of a large or compressed file came with a Content-Length above the size limit, or a coding the
// helper had nothing to decode (decoded=false), and the assembler refused it as too large or still coded: the browser
// asked the server again. 204 and 304 already were bodiless; HEAD now is too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

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
