// The helper's HTTP cache in real Chromium: a repeat visit is served from it ("hit") or revalidated with a 304
// ("revalidated"), the per-request timing records say which, and the options page shows the cache's size and clears
// it through the real helper.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { TimingsReply } from "../../../extension/src/background/popup-api.js";
import { EXTENSION_ID, freshProfile, launch, openPage, setSites, tabIdOf, waitForGate, waitForHelper, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { startSites, type Sites } from "../support/test-site.js";

let sites: Sites;
before(async () => {
  sites = await startSites();
});
after(() => sites.close());

const IMAGES = ["/cached/3.png", "/cached/4.png", "/revalidated/5.png", "/revalidated/6.png"];

async function imagesShown(page: Page): Promise<void> {
  await page.waitForFunction(() => [...document.images].every((i) => i.complete && i.naturalWidth > 0));
}

/** The helper's cache status of each image request of the tab's latest load of `url`. */
async function cacheOf(browser: Browser, tabId: number, url: string): Promise<Record<string, string>> {
  const page = await browser.context.newPage();
  try {
    await page.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    let latest = new Map<string, string>();
    return await eventually("the helper's timing of every image", async () => {
      const reply: TimingsReply = await page.evaluate((id) => chrome.runtime.sendMessage({ type: "lanefetch/timings", tabId: id }), tabId);
      const mine = reply.records.filter((r) => r.pageUrl === url && IMAGES.includes(new URL(r.url).pathname));
      latest = new Map(mine.map((r) => [new URL(r.url).pathname, r.timing?.cache ?? "pending"]));
      return latest.size === IMAGES.length && ![...latest.values()].includes("pending") && Object.fromEntries(latest);
    }, { everyMs: 100 }, () => Object.fromEntries(latest));
  } finally {
    await page.close();
  }
}

/** Every image's answer came from the network (each reached the server once, which the caller checks): fetched for
 * the browser's request ("none"), or ahead of it by the page's flight ("prefetch": Chromium streams the loopback
 * page's document to the helper, which flies the images it names that the browser's first batch did not ask for
 * yet), never from the helper's cache. */
function assertFromTheNetwork(cache: Record<string, string>): void {
  const statuses = IMAGES.map((p) => cache[p]);
  assert.ok(statuses.every((c) => c === "none" || c === "prefetch"), JSON.stringify(cache));
}

/** A new browser on the same profile (its renderer's memory cache would otherwise serve the images again). */
async function visitAfterRestart(browser: Browser, url: string): Promise<{ browser: Browser; tabId: number }> {
  await browser.quit();
  const next = await launch(browser.userDataDir);
  // Session rules do not outlive the browser: the worker puts the gate back at startup, and a navigation before that
  // would be the browser's own (as toggle-and-fallback's restart waits too).
  await waitForGate(next.worker, 1);
  // And the helper up again: while it starts, requests are the browser's own (never slower), and a page loaded
  // meanwhile would be part browser, part helper (seen once in CI: the two cached images fetched by the browser).
  await waitForHelper(next.context);
  const page = await next.context.newPage();
  await openPage(page, url);
  await imagesShown(page);
  return { browser: next, tabId: await tabIdOf(next.worker, url) };
}

test("a repeat visit comes from the helper's cache (hit / revalidated 304), and the options page clears it", async () => {
  let browser = await launch(freshProfile(true));
  const url = `${sites.a.origin}/cached.html`;
  const requested = (): string[] => sites.log.filter((r) => IMAGES.includes(r.path)).map((r) => `${r.path} ${r.owner.kind}`).sort();
  try {
    await setSites(browser.worker, [{ scope: "host", name: "127.0.0.1" }]);
    const page = await browser.context.newPage();
    sites.clearLog();
    await openPage(page, url);
    await imagesShown(page);
    assert.deepEqual(requested(), IMAGES.map((p) => `${p} helper`).sort());
    assertFromTheNetwork(await cacheOf(browser, await tabIdOf(browser.worker, url), url));

    // Second visit, after a browser restart (the helper's cache is on disk): the fresh images never reach the
    // server; the no-cache ones go out conditional and come back 304.
    sites.clearLog();
    let tabId: number;
    ({ browser, tabId } = await visitAfterRestart(browser, url));
    assert.deepEqual(requested(), ["/revalidated/5.png helper", "/revalidated/6.png helper"]);
    assert.ok(sites.log.filter((r) => r.path.startsWith("/revalidated/")).every((r) => r.headers["if-none-match"] !== undefined));
    assert.deepEqual(await cacheOf(browser, tabId, url), {
      "/cached/3.png": "hit", "/cached/4.png": "hit", "/revalidated/5.png": "revalidated", "/revalidated/6.png": "revalidated",
    });

    // The options page shows what the cache holds and clears it through the helper.
    const options = await browser.context.newPage();
    await options.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    await options.waitForSelector("#cache-state[data-entries]");
    assert.equal(await options.getAttribute("#cache-state", "data-entries"), "4");
    assert.match((await options.textContent("#cache-state")) ?? "", /^4 entries, [\d.]+ (B|KiB|MiB)\.$/, "no file path unless asked");
    assert.match((await options.textContent("#cache-file")) ?? "", /helper-cache\/lanefetch\//, "where it is kept, folded away");
    await options.click("#cache-clear");
    await options.waitForFunction(() => document.getElementById("cache-state")?.textContent.startsWith("Removed"));
    assert.match((await options.textContent("#cache-state")) ?? "", /^Removed 4 entries\. 0 entries, 0 B\./);

    // After clearing, every image goes to the network again, unconditionally.
    sites.clearLog();
    ({ browser, tabId } = await visitAfterRestart(browser, url));
    assert.deepEqual(requested(), IMAGES.map((p) => `${p} helper`).sort());
    assert.ok(sites.log.filter((r) => IMAGES.includes(r.path)).every((r) => r.headers["if-none-match"] === undefined));
    assertFromTheNetwork(await cacheOf(browser, tabId, url));
  } finally {
    await browser.close();
  }
});
