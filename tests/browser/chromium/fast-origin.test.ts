// A page of an enabled site whose origin is fast (loopback: RTT < 15 ms) with step-aside on, as in the product.
// With the helper running, a first visit costs one probe: the gate asks the helper to connect, sees the host is
// fast and lets the page through with no debugger attached; its pages (other ports too) are then the browser's
// alone, and the timing panel still lists every request (from the page's Resource Timing). A navigation to an
// origin not known fast is stopped by the gate and intercepted; an intercepted tab that goes to the fast host again
// stays attached but is no longer intercepted, and is listed the same way.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  EXTENSION_ID, freshProfile, launch, openPage, setSites, settledPageLoad, tabIdOf, tabStatus, waitForHelper, type Browser,
} from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
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

async function listedByBrowser(probe: Page, tabId: number, url: string, n: number, attached = false): Promise<void> {
  const data = await settledPageLoad(probe, tabId);
  assert.equal(data.load.url, url);
  const images = data.records.filter((r) => r.url.endsWith("?many"));
  assert.equal(images.length, n, "the panel lists every image the browser fetched");
  for (const r of images) {
    assert.equal(r.outcome, "passed");
    assert.equal(r.reason, "low_latency");
    assert.match(r.detail ?? "", /tab left to the browser/);
    if (!attached) assert.match(r.detail ?? "", /Resource Timing/);
    assert.equal(r.browser?.status, 200);
    assert.ok(r.browser.end !== null && r.browser.end >= r.browser.start, JSON.stringify(r.browser));
  }
  // Same-origin entries carry their phases (whether a connection was new depends on what came before).
  assert.ok(images.every((r) => r.browser?.sendStart != null && r.browser.headersEnd != null && r.browser.headersEnd >= r.browser.sendStart),
    "request sent and first byte");
  // CDP says "Document", Resource Timing "document" (the panel shows both in lower case).
  assert.equal(data.records.filter((r) => r.resourceType.toLowerCase() === "document" && r.url === url).length, 1, "the document, once");
}

test("a fast origin is left to the browser without the debugger (listed in the panel); a slow origin is intercepted", async () => {
  const probe = await browser.context.newPage();
  await probe.goto(`chrome-extension://${EXTENSION_ID}/timing.html`);
  await waitForHelper(browser.context);
  // Right after its hello the helper opens its cache (~0.3 s): a probe then can miss the gate's budget (the tab is
  // attached, as on a slow link), which is not what this test is about. Its cache stats name a location once open.
  await eventually("the helper's cache is open", () => probe.evaluate(async () => {
    const reply = await chrome.runtime.sendMessage<unknown, { stats: { location?: string | null } | null }>({ type: "lanefetch/cache", action: "stats" });
    return reply.stats?.location ?? null;
  }));

  // First visit: the gate stops it, the helper's connect time says fast, the page loads without the debugger.
  const page = await browser.context.newPage();
  sites.clearLog();
  const first = `${sites.a.origin}/many.html?n=10`;
  await openPage(page, first);
  await manyImages(page, 10);
  const tabId = await tabIdOf(browser.worker, first);
  assert.deepEqual(owners(), ["browser"]);
  assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, false, "no debugger attached");
  await listedByBrowser(probe, tabId, first, 10);
  const rules = await browser.worker.evaluate(async () => (await chrome.declarativeNetRequest.getSessionRules()).map((r) => r.action.type));
  assert.deepEqual(rules.sort(), ["allow", "block"], "the gate lets the fast host through");

  // Another port of the same host: the same network path, through the gate at once.
  sites.clearLog();
  const samePath = `${sites.sameSite.origin}/many.html?n=25`;
  await page.goto(samePath, { waitUntil: "load" });
  await manyImages(page, 25);
  assert.deepEqual(owners(), ["browser"]);
  assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, false);
  await listedByBrowser(probe, tabId, samePath, 25);

  // Not known fast any more (step-aside off) and a slow server: the gate stops the navigation, the tab is attached.
  await browser.worker.evaluate(() => chrome.storage.local.set({ accelerateFastLinks: true }));
  await waitForAllows(0);
  siteOptions.delayMs = 150;
  sites.clearLog();
  const slow = `${sites.a.origin}/many.html?n=20`;
  await openPage(page, slow);
  await manyImages(page, 20);
  siteOptions.delayMs = 0;
  const again = await settledPageLoad(probe, tabId);
  assert.deepEqual(owners(), ["helper"], JSON.stringify(again.records.map((r) => [r.url, r.outcome, r.reason, r.detail])));
  assert.equal(again.load.url, slow);
  assert.equal(again.records.filter((r) => r.url.endsWith("?many") && r.outcome === "fulfilled").length, 20);
  assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, true);

  // Step-aside on again: the attached tab going to the fast host stays attached (no flicker of the debugging bar)
  // but the browser fetches the page alone, listed the same way.
  await browser.worker.evaluate(() => chrome.storage.local.set({ accelerateFastLinks: false }));
  await waitForAllows(1);
  sites.clearLog();
  const next = `${sites.a.origin}/many.html?n=30`;
  await page.goto(next, { waitUntil: "load" });
  await manyImages(page, 30);
  assert.deepEqual(owners(), ["browser"]);
  assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, true, "the tab stays attached");
  await listedByBrowser(probe, tabId, next, 30, true);
  await probe.close();
  await page.close();
});

/** The gate's allow rules' URL filters (one per fast host of an enabled site). */
function allowFilters(): Promise<string[]> {
  return browser.worker.evaluate(async () =>
    (await chrome.declarativeNetRequest.getSessionRules()).filter((r) => r.action.type === "allow").map((r) => r.condition.regexFilter ?? ""));
}

async function waitForAllows(n: number): Promise<void> {
  let last: string[] = [];
  await eventually(`the gate has ${n} allow rule(s)`, async () => (last = await allowFilters()).length === n, {}, () => last);
}

test("enabling a site probes the host its open tab shows: a fast one's reload passes the gate, no debugger", async () => {
  const page = await browser.context.newPage();
  const url = `${sites.other.origin}/many.html?n=5`;
  await page.goto(url, { waitUntil: "load" }); // not an enabled site yet
  await manyImages(page, 5);
  const tabId = await tabIdOf(browser.worker, url);
  await waitForHelper(browser.context);
  await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }, { scope: "host", name: "127.0.0.2" }], { accelerateFastLinks: false });
  let last: string[] = [];
  await eventually("the enabled site's host is probed fast and let through by the gate",
    async () => (last = await allowFilters()).some((f) => f.includes("127\\.0\\.0\\.2")), {}, () => last);
  sites.clearLog();
  await page.reload({ waitUntil: "load" });
  await manyImages(page, 5);
  // A blocked try would have been followed by the extension's own navigation, not a reload.
  assert.equal(await page.evaluate(() => (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).type), "reload");
  assert.deepEqual(owners(), ["browser"]);
  assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, false);
  const probe = await browser.context.newPage();
  await probe.goto(`chrome-extension://${EXTENSION_ID}/timing.html`);
  await listedByBrowser(probe, tabId, url, 5);
  await probe.close();
  await page.close();
});
