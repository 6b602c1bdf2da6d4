// The browser's cache modes in real Chromium, which its paused requests do not show: a hard reload goes past the
// helper's cache as it goes past the browser's (Chromium adds its no-cache fields after the Fetch domain paused the
// request, so the extension adds them: cache-bypass.ts; the helper fetches the image in full, replacing its stored
// copy), a plain reload still uses the cache, and a page's fetch() is never answered by the helper's cache alone
// (its cache mode is not shown at all: cache/policy.py, lookup_fields).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { freshProfile, launch, openPage, setSites, waitForGate, waitForHelper } from "../support/chromium-harness.js";
import { siteOptions, startSites, type Sites } from "../support/test-site.js";

let sites: Sites;
before(async () => {
  sites = await startSites();
});
after(() => sites.close());

/** The width of the page's image once it is shown (its bytes: /versioned.png is as wide as siteOptions says). */
async function shownWidth(page: Page): Promise<number> {
  await page.waitForFunction(() => {
    const img = document.getElementById("v") as HTMLImageElement | null;
    return img !== null && img.complete && img.naturalWidth > 0;
  }, undefined, { timeout: 20000 });
  return page.evaluate(() => (document.getElementById("v") as HTMLImageElement).naturalWidth);
}

/** The requests for the image the server saw: who sent them, and their cache fields. */
function imageRequests(path = "/versioned.png"): string[] {
  return sites.log.filter((r) => r.path === path).map((r) =>
    `${r.owner.kind} cc=${r.headers["cache-control"] ?? "-"} pragma=${r.headers.pragma ?? "-"} inm=${r.headers["if-none-match"] ?? "-"}`);
}

test("a hard reload fetches a fresh cached image in full and shows its new bytes; a plain reload uses the cache", async () => {
  const saved = siteOptions.versionedSize;
  let browser = await launch(freshProfile(true));
  const url = `${sites.a.origin}/versioned.html`;
  try {
    await setSites(browser.worker, [{ scope: "host", name: "127.0.0.1" }]);
    let page = await browser.context.newPage();
    siteOptions.versionedSize = 8;
    sites.clearLog();
    await openPage(page, url);
    assert.equal(await shownWidth(page), 8);
    assert.deepEqual(imageRequests(), ["helper cc=- pragma=- inm=-"], "the first load: the helper's, stored fresh for an hour");

    // The image changes on the server; the copies stay fresh for an hour.
    siteOptions.versionedSize = 9;
    sites.clearLog();
    await page.reload({ waitUntil: "load" });
    assert.equal(await shownWidth(page), 8, "a plain reload shows the cached copy");
    assert.deepEqual(imageRequests(), [], "and never asks the server for the image");

    // Ctrl+Shift+R (the same reload the browser's own shortcut makes).
    sites.clearLog();
    const cdp = await browser.context.newCDPSession(page);
    const loaded = page.waitForEvent("load");
    await cdp.send("Page.reload", { ignoreCache: true });
    await loaded;
    assert.equal(await shownWidth(page), 9, "the hard reload shows the server's new bytes");
    assert.deepEqual(imageRequests(), ["helper cc=no-cache pragma=no-cache inm=-"],
      "one full, unconditional GET, the helper's, with the fields Chromium sends a hard reload's requests with");
    await cdp.detach();

    // The stored copy was replaced: after a restart (no renderer memory cache), a plain visit gets the new bytes
    // from the helper's cache, without asking the server.
    siteOptions.versionedSize = 10;
    await browser.quit();
    browser = await launch(browser.userDataDir);
    await waitForGate(browser.worker, 1);
    await waitForHelper(browser.context);
    sites.clearLog();
    page = await browser.context.newPage();
    await openPage(page, url);
    assert.equal(await shownWidth(page), 9, "the copy the hard reload stored");
    assert.deepEqual(imageRequests(), []);
  } finally {
    siteOptions.versionedSize = saved;
    await browser.close();
  }
});

test("a page's fetch() with cache \"no-store\" is asked of the server each time, never answered from the helper's cache alone", async () => {
  const saved = siteOptions.versionedSize;
  const browser = await launch(freshProfile(true));
  const url = `${sites.a.origin}/versioned.html`;
  try {
    await setSites(browser.worker, [{ scope: "host", name: "127.0.0.1" }]);
    const page = await browser.context.newPage();
    siteOptions.versionedSize = 8;
    await openPage(page, url);
    assert.equal(await shownWidth(page), 8);
    /** The width the PNG a fetch() got says it has (IHDR). */
    const fetchedWidth = (): Promise<number> => page.evaluate(async () => {
      const bytes = new DataView(await (await fetch("/versioned.png?f", { cache: "no-store" })).arrayBuffer());
      return bytes.getUint32(16);
    });
    sites.clearLog();
    assert.equal(await fetchedWidth(), 8);
    siteOptions.versionedSize = 9;
    assert.equal(await fetchedWidth(), 9, "the server's new bytes, as Chromium's own cache would give");
    const requests = imageRequests("/versioned.png?f");
    assert.equal(requests.length, 2, JSON.stringify(requests));
    assert.ok(requests.every((r) => r.startsWith("helper ")), JSON.stringify(requests));
    // The second the helper's validation of what it stored of the first (never a hit); the server answered it in full.
    assert.match(requests[1] ?? "", /inm="s8"$/);
  } finally {
    siteOptions.versionedSize = saved;
    await browser.close();
  }
});
