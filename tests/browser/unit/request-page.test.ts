import { test } from "node:test";
import assert from "node:assert/strict";
import { requestPageUrl } from "../../../extension/src/intercept/request-page.js";
import { decide } from "../../../extension/src/intercept/pass-through-policy.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { addressSpaceOfUrl } from "../../../extension/src/sites/address-space.js";
import { matchingRule, type SiteRule } from "../../../extension/src/sites/site-rule.js";

const SITE = "http://127.0.0.1:8080";
const rules: SiteRule[] = [{ scope: "domain", name: "127.0.0.1" }];

function image(url = `${SITE}/img/9.png`): PausedRequest {
  return { interceptionId: "i2", url, method: "GET", headers: [["Accept", "image/*"]], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false };
}

/** What chromium-main.ts decides for a paused subresource of a tab (the page's site and address space). */
function decision(tabUrl: string, pageLoadUrl: string | undefined): ReturnType<typeof decide> {
  const request = image();
  const pageUrl = requestPageUrl(request.url, false, tabUrl, pageLoadUrl);
  return decide(request, { siteActive: matchingRule(rules, pageUrl) !== null, addressSpace: addressSpaceOfUrl(pageUrl) ?? "public" });
}

test("a new tab's first page: an image paused before the page's commit is heard is the paused document's, not about:blank's", () => {
  // The tab committed about:blank (a new tab), its session paused the document plain.html?2, and its image comes
  // before webNavigation.onCommitted for plain.html?2: the image is the enabled site's, taken by the helper.
  assert.equal(requestPageUrl(`${SITE}/img/9.png`, false, "about:blank", `${SITE}/plain.html?2`), `${SITE}/plain.html?2`);
  assert.deepEqual(decision("about:blank", `${SITE}/plain.html?2`), { take: true });
  // Likewise from the new-tab page, an extension page, or a tab not seen yet.
  for (const tabUrl of ["chrome://newtab/", "chrome-extension://abc/popup.html", ""]) {
    assert.deepEqual(decision(tabUrl, `${SITE}/plain.html?2`), { take: true }, tabUrl);
  }
});

test("with no page load begun in the tab, a request of a tab showing no web page is judged by its own URL", () => {
  assert.equal(requestPageUrl(`${SITE}/img/9.png`, false, "about:blank", undefined), `${SITE}/img/9.png`);
  assert.equal(requestPageUrl(`${SITE}/img/9.png`, false, "", undefined), `${SITE}/img/9.png`);
});

test("a tab showing a web page keeps its committed URL; a top-level document is its own page", () => {
  // A paused document that never commits (a download) does not change what the page on screen asks for.
  assert.equal(requestPageUrl(`${SITE}/x.js`, false, `${SITE}/a.html`, "https://other.example/file.zip"), `${SITE}/a.html`);
  assert.deepEqual(decision("https://off.example/", `${SITE}/plain.html`), { take: false, reason: "site_off" });
  assert.equal(requestPageUrl(`${SITE}/b.html`, true, `${SITE}/a.html`, `${SITE}/a.html`), `${SITE}/b.html`);
});
