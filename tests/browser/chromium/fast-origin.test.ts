// A page of an enabled site whose origin is fast (loopback: RTT < 15 ms) with step-aside on, as in the product: once
// the origin is known fast the tab stays attached but is no longer intercepted — the browser fetches the page's
// requests itself and the timing panel still lists every one, also on another port of that host — and a navigation
// to an origin not known fast is intercepted again before its subresources are requested.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  EXTENSION_ID, freshProfile, launch, openPage, setSites, settledPageLoad, tabIdOf, tabStatus, type Browser,
} from "../support/chromium-harness.js";
import { siteOptions, startSites, type Sites } from "../support/test-site.js";

let sites: Sites;
let browser: Browser;

before(async () => {
  sites = await startSites();
  browser = await launch(freshProfile(true));
  await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }], { accelerateFastLinks: false });
});
after(async () => {
  siteOptions.delayMs = 0;
  await browser.close();
  await sites.close();
});

async function manyImages(page: Page, n: number): Promise<void> {
  await page.waitForFunction((k) => (window as unknown as { __widths?: number[] }).__widths?.length === k, n, { timeout: 20000 });
}

function owners(): string[] {
  return [...new Set(sites.log.filter((r) => /\?many$/.test(r.path)).map((r) => r.owner.kind))];
}

test("a fast origin's tab is left to the browser (listed in the panel), a slow origin is intercepted again", async () => {
  const page = await browser.context.newPage();
  const first = `${sites.a.origin}/many.html?n=10`;
  await openPage(page, first);
  await manyImages(page, 10);
  const tabId = await tabIdOf(browser.worker, first);

  // The origin is known fast now (the document's connect time): the next page is the browser's alone.
  sites.clearLog();
  const next = `${sites.a.origin}/many.html?n=30`;
  await page.goto(next, { waitUntil: "load" });
  await manyImages(page, 30);
  assert.deepEqual(owners(), ["browser"]);
  const status = await tabStatus(browser.context, tabId);
  assert.equal(status.tab.intercepting, true, "the tab stays attached (no flicker of the debugging bar)");
  const probe = await browser.context.newPage();
  await probe.goto(`chrome-extension://${EXTENSION_ID}/timing.html`);
  const data = await settledPageLoad(probe, tabId);
  assert.equal(data.load.url, next);
  const images = data.records.filter((r) => r.url.endsWith("?many"));
  assert.equal(images.length, 30, "the panel lists every image the browser fetched");
  for (const r of images) {
    assert.equal(r.outcome, "passed");
    assert.equal(r.reason, "low_latency");
    assert.match(r.detail ?? "", /tab left to the browser/);
    assert.equal(r.browser?.status, 200);
    assert.ok(r.browser.end !== null && r.browser.end >= r.browser.start, JSON.stringify(r.browser));
    assert.match(r.detail ?? "", /Resource Timing/);
  }
  // Same-origin entries carry their phases (whether a connection was new depends on what the first page left open).
  assert.ok(images.every((r) => r.browser?.sendStart != null && r.browser.headersEnd != null && r.browser.headersEnd >= r.browser.sendStart),
    "request sent and first byte");
  assert.equal(data.records.filter((r) => r.resourceType === "document" && r.url === next).length, 1, "the document, once");

  // Another port of the same host: the same network path, left to the browser from its document on.
  sites.clearLog();
  const samePath = `${sites.sameSite.origin}/many.html?n=25`;
  await page.goto(samePath, { waitUntil: "load" });
  await manyImages(page, 25);
  assert.deepEqual(owners(), ["browser"]);
  const other = await settledPageLoad(probe, tabId);
  assert.equal(other.load.url, samePath);
  assert.equal(other.records.filter((r) => r.url.endsWith("?many") && /tab left to the browser/.test(r.detail ?? "")).length, 25);

  // Not known fast any more (step-aside off) and a slow server: the navigation is intercepted again in time.
  await browser.worker.evaluate(() => chrome.storage.local.set({ accelerateFastLinks: true }));
  await new Promise((r) => setTimeout(r, 300));
  siteOptions.delayMs = 150;
  sites.clearLog();
  const slow = `${sites.a.origin}/many.html?n=20`;
  await page.goto(slow, { waitUntil: "load" });
  await manyImages(page, 20);
  siteOptions.delayMs = 0;
  const again = await settledPageLoad(probe, tabId);
  assert.deepEqual(owners(), ["helper"], JSON.stringify(again.records.map((r) => [r.url, r.outcome, r.reason, r.detail])));
  assert.equal(again.load.url, slow);
  assert.equal(again.records.filter((r) => r.url.endsWith("?many") && r.outcome === "fulfilled").length, 20);
  await probe.close();
  await page.close();
});
