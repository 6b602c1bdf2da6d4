// A Content-Encoding naming a coding Chromium does not undo (`foo`, `identity`, `gzip, foo`): Chromium shows the body
// as it came, with that field and its Content-Length (URLRequestHttpJob::SetUpSourceStream passes the body through).
// The helper then delivers it so, marked decoded with its Content-Encoding left (stream/decoding_sink.py); the
// assembler refused it as "still coded" (the request went to the browser) and a fulfil would have dropped the field.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { fulfillParams, passedThrough } from "../../../extension/src/deliver/fulfill-params.js";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const head = (headers: [string, string][], decoded: boolean): Head => ({
  type: "head", id: "r1", status: 200, reason: "OK", http_version: "1.1", headers, decoded,
});
const b64 = (text: string): string => Buffer.from(text).toString("base64");

function fieldsOf(params: Protocol.Fetch.FulfillRequestRequest): [string, string][] {
  return (params.responseHeaders ?? []).map((h) => [h.name, h.value]);
}

for (const coding of ["foo", "identity", "gzip, foo"]) {
  test(`a body passed through under Content-Encoding: ${coding} is fulfilled as it came, with its fields`, () => {
    const fields: [string, string][] = [["Content-Type", "text/html"], ["Content-Encoding", coding], ["Content-Length", "5"]];
    const a = new ResponseAssembler();
    assert.equal(a.addHead(head(fields, true)), null);
    assert.equal(a.addBody(b64("hello")), null);
    const done = a.finish();
    assert.equal(done.kind, "complete");
    assert.ok(passedThrough(head(fields, true)));
    assert.deepEqual(fieldsOf(fulfillParams("i", head(fields, true), b64("hello"))), fields);
  });
}

test("a passed-through body is still held to its Content-Length", () => {
  const a = new ResponseAssembler();
  a.addHead(head([["Content-Encoding", "foo"], ["Content-Length", "9"]], true));
  a.addBody(b64("hello"));
  const done = a.finish();
  assert.equal(done.kind === "refused" && done.reason, "helper_error");
});

test("a coded body the helper did not decode is still refused, and its field dropped from a bodiless answer", () => {
  const a = new ResponseAssembler();
  const refused = a.addHead(head([["Content-Encoding", "gzip"]], false));
  assert.equal(refused?.kind === "refused" && refused.reason, "helper_error");
  assert.ok(!passedThrough(head([["Content-Encoding", "gzip"]], false)));
  assert.deepEqual(fieldsOf(fulfillParams("i", { ...head([["Content-Encoding", "gzip"], ["ETag", "\"v\""]], false), status: 304 }, "")),
    [["ETag", "\"v\""]]);
});
