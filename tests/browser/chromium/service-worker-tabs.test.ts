// A service worker shared by two tabs of an enabled site, in real Chromium. Every tab of its scope auto-attaches
// the worker in a session of its own, and Chromium pauses each of the worker's requests in one of those sessions only
// (the newest tab's), whichever tab the request serves: filed under that tab, a fetch the worker made for the first
// tab was counted in the second tab's popup, listed under its page, and told to the helper as that page's (whose
// learned page it joined). A worker's requests are its own now: still taken by the helper and answered where they were
// paused (each page gets its own answer), counted and listed under no tab's page. Also traced: no request of these
// tabs met a tab whose private flag was not known yet (tab-privacy.ts).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openPage, startSiteOn, stopSiteOn, tabIdOf, tabStatus, tabTimings, type Browser } from "../support/chromium-harness.js";
import { textOf, type Sites } from "../support/test-site.js";
import type { Page } from "playwright-core";

let sites: Sites;
let browser: Browser;

before(async () => ({ sites, browser } = await startSiteOn()));
after(() => stopSiteOn({ sites, browser }));

/** A fetch the page's service worker answers (it fetches the same URL itself): the body and the worker's mark. */
async function viaWorker(page: Page, size: number): Promise<{ text: string; viaSw: string | null }> {
  return page.evaluate(async (n) => {
    const r = await fetch(`/data/${n}.txt?via=sw`);
    return { text: await r.text(), viaSw: r.headers.get("X-Via-Sw") };
  }, size);
}

test("a service worker shared by two tabs: its requests are the worker's own, in neither tab's counts or records", async () => {
  const first = await browser.context.newPage();
  const firstUrl = `${sites.a.origin}/sw.html`;
  await openPage(first, firstUrl);
  await first.waitForFunction("window.__sw !== undefined", undefined, { timeout: 20000 });
  const second = await browser.context.newPage();
  const secondUrl = `${sites.a.origin}/sw.html?second`;
  await openPage(second, secondUrl);
  await second.waitForFunction("window.__sw !== undefined", undefined, { timeout: 20000 });
  for (const page of [first, second]) assert.deepEqual(await page.evaluate("window.__sw"), { text: true, viaSw: "yes" });

  sites.clearLog();
  // Each page gets the answer to its own request (bodies of their own sizes), though both are paused in the second
  // tab's session, asked at once.
  const [forSecond, forFirst] = await Promise.all([viaWorker(second, 500), viaWorker(first, 300)]);
  assert.deepEqual(forSecond, { text: textOf("data", 500), viaSw: "yes" });
  assert.deepEqual(forFirst, { text: textOf("data", 300), viaSw: "yes" });
  const owners = sites.log.filter((r) => r.path.includes("via=sw")).map((r) => `${r.path} ${r.owner.kind}`).sort();
  assert.deepEqual(owners, ["/data/300.txt?via=sw helper", "/data/500.txt?via=sw helper"], "the worker's fetches are still the helper's");

  for (const url of [firstUrl, secondUrl]) {
    const tabId = await tabIdOf(browser.worker, url);
    const listed = (await tabTimings(browser.context, tabId)).records.map((r) => r.url);
    assert.deepEqual(listed.filter((u) => u.includes("via=sw") || u.endsWith("/sw.js")), [], `${url}: the worker's requests are not its page's`);
    // The page has nothing else for the helper (its document the browser loads itself): nothing counted accelerated.
    const { counts } = await tabStatus(browser.context, tabId);
    assert.equal(counts.accelerated, 0, `${url}: ${JSON.stringify(counts)}`);
  }
  const trace = await browser.worker.evaluate(() => (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? []);
  assert.deepEqual(trace.filter(([label]) => label.startsWith("privacy:")), [], "each tab's private flag was known at its first pause");
  await first.close();
  await second.close();
});
