// Fetch.fulfillRequest's status line: Chromium builds "HTTP/1.1 <code> <phrase>" from the protocol text (written as
// UTF-8) and refuses the whole fulfil with "Invalid http status code or phrase" when the phrase is empty: given as "",
// or absent for a code Chromium has no phrase of its own for (content/browser/devtools/protocol/fetch_handler.cc,
// net::TryToGetHttpReasonPhrase). The page's statusText is that line's phrase, trimmed of spaces, its bytes read as
// latin-1 (blink: WebString::FromLatin1(headers->GetStatusText())), which is also what the browser's own fetch shows:
// "" for an answer without a phrase (every HTTP/2 answer), the server's bytes one character each otherwise. Checked
// against Chromium 156: an HTTP/2 or phrase-less HTTP/1.1 answer reads "", a fulfilled phrase of " " reads "", a
// phrase of UTF-8 bytes reads them one character per byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { fulfillParams } from "../../../extension/src/deliver/fulfill-params.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const head = (status: number, reason: string, httpVersion: Head["http_version"] = "2"): Head => ({
  type: "head", id: "r1", status, reason, http_version: httpVersion, headers: [["Content-Type", "text/plain"]], decoded: true,
});

/** What Chromium does with the parameters' phrase: null when it refuses the fulfil, else the page's statusText. */
function statusText(params: Protocol.Fetch.FulfillRequestRequest): string | null {
  const phrase = params.responsePhrase;
  if (phrase === undefined || phrase === "") return null;  // (absent: only codes it has a phrase for; never relied on)
  return Buffer.from(phrase, "utf8").toString("latin1").replace(/^ +| +$/g, "");
}

/** The helper's reading of a phrase's bytes (engine/message_block.py field_text: latin-1, one char a byte). */
const latin1 = (bytes: Buffer): string => bytes.toString("latin1");

test("an answer without a reason phrase is fulfilled, and its statusText is the browser's own: empty", () => {
  // 419 (Laravel), 420, 499 (nginx), 520–530 (Cloudflare), 299: codes Chromium has no phrase for
  for (const status of [200, 404, 419, 420, 430, 499, 520, 521, 522, 523, 524, 525, 526, 530, 299, 999]) {
    for (const version of ["2", "1.1"] as const) {
      const params = fulfillParams("i", head(status, "", version), "");
      assert.equal(params.responseCode, status);
      assert.equal(statusText(params), "", `${status} over ${version}: fulfilled, statusText ""`);
    }
  }
});

test("the server's own reason phrase is kept", () => {
  assert.equal(statusText(fulfillParams("i", head(419, "Page Expired", "1.1"), "")), "Page Expired");
  assert.equal(statusText(fulfillParams("i", head(200, "Fine", "1.1"), "")), "Fine");
  assert.equal(statusText(fulfillParams("i", head(200, "  ", "1.1"), "")), "", "a phrase of spaces: nothing, as Chromium reads it");
});

test("a phrase of bytes above 0x7f reaches the page as the browser's own fetch shows it (one character a byte)", () => {
  for (const raw of [Buffer.from("Çа ✓", "utf8"), Buffer.from("\ufeffOK", "utf8"), Buffer.from("成功", "utf8")]) {
    const reason = latin1(raw);
    const params = fulfillParams("i", head(200, reason, "1.1"), "");
    assert.equal(statusText(params), reason, `${JSON.stringify(reason)}: the server's bytes, not encoded a second time`);
  }
  // Bytes that are not UTF-8 cannot be given as they came (the phrase is protocol text): fulfilled all the same.
  const params = fulfillParams("i", head(200, latin1(Buffer.from([0x43, 0xe7, 0x61])), "1.1"), "");
  assert.notEqual(statusText(params), null);
});
