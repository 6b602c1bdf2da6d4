// A 204 or 304 has no body, so the helper decodes nothing and keeps its Content-Encoding (stream/decoding_sink.py,
// decoded=false). The assembler took that field for a body still coded and left the request to the browser, which
// asked the server again (a page's own conditional request answered 304 cost a second round trip).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ResponseAssembler } from "../../../extension/src/deliver/response-assembler.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const head = (status: number): Head => ({
  type: "head", id: "r1", status, reason: "", http_version: "1.1", decoded: false,
  headers: [["ETag", "\"v1\""], ["Content-Encoding", "gzip"], ["Vary", "Accept-Encoding"]],
});

test("a 204 or 304 with a Content-Encoding field is fulfilled (no body to decode)", () => {
  for (const status of [204, 304]) {
    const a = new ResponseAssembler();
    assert.equal(a.addHead(head(status)), null, `${status} accepted`);
    const done = a.finish();
    assert.equal(done.kind, "complete", `${status} complete`);
  }
});

test("a 200 whose body is still coded is still refused", () => {
  const r = new ResponseAssembler().addHead(head(200));
  assert.equal(r?.kind === "refused" && r.reason, "helper_error");
});

// A 304 may give the Content-Length of the representation it validates (RFC 9110 §8.6): a large file's was taken for
// a body above the size limit, and the browser asked the server again for the page's conditional request.
test("a 204 or 304 is fulfilled whatever size its Content-Length names (it has no body to hold)", () => {
  for (const status of [204, 304]) {
    const a = new ResponseAssembler(1000);
    const h = { ...head(status), headers: [["ETag", "\"v1\""], ["Content-Length", "104857600"]] as [string, string][] };
    assert.equal(a.addHead(h), null, `${status} accepted`);
    assert.equal(a.finish().kind, "complete", `${status} complete`);
  }
  const large = new ResponseAssembler(1000).addHead({ ...head(200), headers: [["Content-Length", "104857600"]] });
  assert.equal(large?.kind === "refused" && large.reason, "too_large", "a 200 of that size still goes to the browser");
});
