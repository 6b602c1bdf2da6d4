// Fetch.fulfillRequest's status line: Chromium builds "HTTP/1.1 <code> <phrase>" and refuses the whole fulfil with
// "Invalid http status code or phrase" when the phrase is empty: given as "", or absent for a code Chromium has no
// phrase of its own for (content/browser/devtools/protocol/fetch_handler.cc, net::TryToGetHttpReasonPhrase). An HTTP/2
// answer has no reason phrase at all (the helper's head says ""), so such a refusal left the request to the browser,
// which fetched it a second time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fulfillParams } from "../../../extension/src/deliver/fulfill-params.js";
import type { Head } from "../../../extension/src/generated/protocol.js";

const head = (status: number, reason: string, httpVersion: Head["http_version"] = "2"): Head => ({
  type: "head", id: "r1", status, reason, http_version: httpVersion, headers: [["Content-Type", "text/plain"]], decoded: true,
});

test("an answer without a reason phrase gets a non-empty responsePhrase, whatever its code", () => {
  // 419 (Laravel), 420, 499 (nginx), 520–530 (Cloudflare), 299: codes Chromium has no phrase for
  for (const status of [200, 404, 419, 420, 430, 499, 520, 521, 522, 523, 524, 525, 526, 530, 299, 999]) {
    const params = fulfillParams("i", head(status, ""), "");
    assert.equal(params.responseCode, status);
    assert.equal(typeof params.responsePhrase, "string", `${status}: a phrase is given`);
    assert.notEqual(params.responsePhrase?.trim(), "", `${status}: the phrase is not empty`);
  }
  assert.equal(fulfillParams("i", head(404, ""), "").responsePhrase, "Not Found");
});

test("the server's own reason phrase is kept", () => {
  assert.equal(fulfillParams("i", head(419, "Page Expired", "1.1"), "").responsePhrase, "Page Expired");
  assert.equal(fulfillParams("i", head(200, "Fine", "1.1"), "").responsePhrase, "Fine");
});
