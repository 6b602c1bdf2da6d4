// The header bytes Chromium builds its response from. The helper reads a field value's bytes as latin-1 (one char
// per byte, engine/message_block.py and h2_session.py); Fetch.fulfillRequest's responseHeaders are protocol text,
// which Chromium takes as UTF-8, so a byte above 0x7f (a raw UTF-8 Location or file name, a cookie value) reached the
// page encoded twice: a Location of "/café" redirected to "/cafÃ©". The protocol's binaryResponseHeaders carries
// the bytes themselves ("name: value\0" pairs).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { fulfillParams } from "../../../extension/src/deliver/fulfill-params.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

/** What Chromium's fetch_handler.cc makes of the parameters: one byte string per header line. */
function headerLines(params: Protocol.Fetch.FulfillRequestRequest): Buffer[] {
  if (params.responseHeaders !== undefined && params.binaryResponseHeaders !== undefined) throw new Error("both given");
  if (params.binaryResponseHeaders !== undefined) {
    const raw = Buffer.from(params.binaryResponseHeaders, "base64");
    const lines: Buffer[] = [];
    let at = 0;
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] !== 0) continue;
      lines.push(raw.subarray(at, i));
      at = i + 1;
    }
    if (at < raw.length) lines.push(raw.subarray(at));
    return lines;
  }
  return (params.responseHeaders ?? []).map((h) => Buffer.from(`${h.name}:${h.value}`, "utf8"));
}

/** A field line as the origin sent it, name and value separated as Chromium's parser splits them. */
function field(line: Buffer): [string, Buffer] {
  const colon = line.indexOf(":".charCodeAt(0));
  let start = colon + 1;
  while (line[start] === 0x20) start++;
  return [line.subarray(0, colon).toString("latin1"), line.subarray(start)];
}

const latin1 = (bytes: Buffer): string => bytes.toString("latin1");

test("field values reach Chromium as the origin's bytes, not re-encoded as UTF-8", () => {
  const location = Buffer.from("/café/menu.png", "utf8");  // a raw UTF-8 Location, read by the helper as latin-1
  const cookie = Buffer.from([0x6e, 0x3d, 0xe9, 0x74, 0xe9]);  // "n=été" in latin-1
  const head: Head = {
    type: "head", id: "r1", status: 302, reason: "Found", http_version: "1.1", decoded: true,
    headers: [["Location", latin1(location)], ["Set-Cookie", latin1(cookie)], ["Content-Type", "text/plain"],
      ["Set-Cookie", "plain=1"], ["Content-Length", "0"]],
  };
  const fields = headerLines(fulfillParams("i", head, "")).map(field);
  assert.deepEqual(fields.map(([n]) => n), ["Location", "Set-Cookie", "Content-Type", "Set-Cookie"]);
  assert.deepEqual(fields[0]?.[1], location);
  assert.deepEqual(fields[1]?.[1], cookie);
  assert.deepEqual(fields[2]?.[1], Buffer.from("text/plain"));
  assert.deepEqual(fields[3]?.[1], Buffer.from("plain=1"));
});

test("ASCII fields stay protocol text (responseHeaders)", () => {
  const head: Head = {
    type: "head", id: "r1", status: 200, reason: "OK", http_version: "1.1", decoded: true, headers: [["Content-Type", "text/css"]],
  };
  const params = fulfillParams("i", head, "");
  assert.deepEqual(params.responseHeaders, [{ name: "Content-Type", value: "text/css" }]);
  assert.equal(params.binaryResponseHeaders, undefined);
});
