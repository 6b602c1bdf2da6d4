// The whole page in one flight, in real Chromium with the built extension and the real helper (debugger mode): after
// two loads of a page the helper learned, the next navigation fetches its subresources at once and the page's own
// requests are answered from that flight (the server sees each once; the timing records say "prefetch"); the page
// behaves exactly as it did without (its own checks of every subresource kind give the same results); what the
// browser sent with a cookie is never prefetched; and the ended load's report reaches the timing records.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { PageLoadsReply } from "../../../extension/src/background/popup-api.js";
import type { PageLoadData } from "../../../extension/src/timings/timing-store.js";
import { EXTENSION_ID, freshProfile, launch, openPage, setSites, settledPageLoad, tabIdOf, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { siteOptions, startSites, type Sites } from "../support/test-site.js";

let sites: Sites;
before(async () => {
  sites = await startSites();
});
after(() => sites.close());

async function results(page: Page): Promise<unknown> {
  return page.waitForFunction(() => (window as unknown as { __results?: unknown }).__results).then((h) => h.jsonValue());
}

function cacheByPath(data: PageLoadData): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of data.records) if (r.timing) out[`${new URL(r.url).host} ${new URL(r.url).pathname}`] = r.timing.cache ?? "none";
  return out;
}

/** A fresh Chromium with 127.0.0.1 turned on, an extension page (whose API reads the timing records) and a tab. */
async function launchOnLoopback(): Promise<{ browser: Browser; extension: Page; page: Page }> {
  const browser = await launch(freshProfile(true));
  try {
    await setSites(browser.worker, [{ scope: "host", name: "127.0.0.1" }]);
    const extension = await browser.context.newPage();
    await extension.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    return { browser, extension, page: await browser.context.newPage() };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

test("a learned page's third visit is answered from its flight, and the page behaves the same", async () => {
  const browser = await launch(freshProfile(true));
  try {
    await setSites(browser.worker, [{ scope: "host", name: "127.0.0.1" }, { scope: "host", name: "127.0.0.2" }]);
    const page = await browser.context.newPage();
    const extension = await browser.context.newPage();
    await extension.goto(`chrome-extension://${EXTENSION_ID}/options.html`);

    // A plain page: its one image, no cookies.
    const plain = `${sites.a.origin}/plain.html`;
    const seenPlain: number[] = [];
    let data: PageLoadData | null = null;
    for (let visit = 1; visit <= 3; visit += 1) {
      sites.clearLog();
      await openPage(page, plain);
      await page.waitForFunction(() => [...document.images].every((i) => i.complete && i.naturalWidth > 0));
      data = await settledPageLoad(extension, await tabIdOf(browser.worker, plain));
      seenPlain.push(sites.log.filter((r) => r.path === "/img/9.png").length);
    }
    assert.deepEqual(seenPlain, [1, 1, 1], "each visit's image reached the server once (the flight's or the page's own)");
    assert.equal(cacheByPath(data ?? assert.fail("no load"))[`${new URL(sites.a.origin).host} /img/9.png`], "prefetch");

    // The test site's main page: every subresource kind, a cookie set by the page (requests that carry it are never
    // prefetched), the page's own checks of what it got.
    const index = `${sites.a.origin}/index.html`;
    const seen: unknown[] = [];
    const caches: Record<string, string>[] = [];
    for (let visit = 1; visit <= 4; visit += 1) {
      await openPage(page, index);
      seen.push(await results(page));
      caches.push(cacheByPath(await settledPageLoad(extension, await tabIdOf(browser.worker, index))));
    }
    assert.deepEqual(seen.slice(1), [seen[0], seen[0], seen[0]], "the page behaves as on its first visit");
    // A first visit has nothing learned: what flies is what the loopback page's document, streamed by Chromium,
    // names as images, or its stylesheets' rules give it as background images; never a stylesheet, a script or a
    // fetch, which the browser asks for as soon as the helper could.
    const firstFlown = Object.keys(caches[0] ?? {}).filter((k) => caches[0]?.[k] === "prefetch");
    assert.ok(firstFlown.every((k) => /\.(png|gif|jpe?g|svg|webp)$/.test(k)), `a first visit flies images only: ${firstFlown.join(", ")}`);
    const third = caches[2] ?? {};
    const fromFlight = Object.keys(third).filter((k) => third[k] === "prefetch").sort();
    assert.ok(fromFlight.includes(`${new URL(sites.other.origin).host} /css/style.css`), `answered from the flight: ${fromFlight.join(", ")}`);
    assert.ok(!fromFlight.includes(`${new URL(sites.a.origin).host} /data/5000.txt`), "a request with the page's cookie is never prefetched");

    // The fourth navigation ended the third load: its report (sent, wasted) is in the timing records.
    const tabId = await tabIdOf(browser.worker, index);
    let listed: unknown = null;
    const report = await eventually("the third load's flight report", async () => {
      const { loads } = await extension.evaluate(
        (id) => chrome.runtime.sendMessage<unknown, PageLoadsReply>({ type: "lanefetch/page-loads", tabId: id }), tabId);
      listed = loads.map((l) => [l.url, l.requests, l.flight]);
      const ofIndex = loads.filter((l) => l.url === index);
      return ofIndex[1]?.flight ?? false;
    }, { everyMs: 100 }, () => listed);
    assert.ok(report.sent >= fromFlight.length, JSON.stringify(report));
  } finally {
    await browser.close();
  }
});

test("a page's fetch(url, {cache: \"no-store\"}) after its learned loads gets the server's current answer, not a flight's copy", async () => {
  // The helper cannot see a fetch()'s cache mode (the Fetch domain pauses the request before it becomes fields), and
  // Chromium never answers a script's request with a copy it fetched unasked: a flight neither flies a learned
  // fetch() nor answers one (prefetch/fidelity.py). The page's image, learned alike, still flies.
  const { browser, extension, page } = await launchOnLoopback();
  try {
    const url = `${sites.a.origin}/counter.html`;
    const host = new URL(sites.a.origin).host;
    const got: string[] = [];
    const atServer: number[] = [];
    let caches: Record<string, string> = {};
    for (let visit = 1; visit <= 3; visit += 1) {
      sites.clearLog();
      siteOptions.counter = visit * 10;
      await openPage(page, url);
      await page.waitForFunction(() => [...document.images].every((i) => i.complete && i.naturalWidth > 0));
      siteOptions.counter += 1; // the server's answer changed after the navigation (and any flight it began)
      got.push(await page.evaluate(() => (window as unknown as { readCounter(): Promise<string> }).readCounter()));
      caches = cacheByPath(await settledPageLoad(extension, await tabIdOf(browser.worker, url)));
      atServer.push(sites.log.filter((r) => r.path === "/counter").length);
    }
    assert.deepEqual(got, ["11", "21", "31"], "every visit's fetch() got the server's answer at the time it asked");
    assert.notEqual(caches[`${host} /counter`], "prefetch");
    assert.deepEqual(atServer, [1, 1, 1], "the learned fetch() was not flown: no bytes for nobody");
    assert.equal(caches[`${host} /img/9.png`], "prefetch", "the third visit had a flight: its image came from it");
  } finally {
    await browser.close();
  }
});

test("a loopback page's document, loaded by Chromium itself, is read by the helper as it streams: its background image flies", async () => {
  // held.html: a render-blocking stylesheet the server holds until the page's background image was asked for (4 s at
  // most), so Chromium itself cannot ask for the image before that; the helper can only guess it from the other
  // stylesheet's rule matched against the document, which it has only from the browser's stream (browser_document:
  // a loopback page's document is never the helper's, local_document).
  const { browser, extension, page } = await launchOnLoopback();
  try {
    const url = `${sites.a.origin}/held.html`;
    sites.clearLog();
    await openPage(page, url);
    const image = await eventually("the background image at the server", () => {
      const asked = sites.log.filter((r) => r.path === "/img/22.png");
      return asked.length > 0 ? asked : undefined;
    }, {}, () => sites.log.map((r) => `${r.path} ${r.owner.kind}`));
    assert.equal(image.length, 1, "the image reached the server once");
    assert.equal(sites.log.find((r) => r.path === "/held.html")?.owner.kind, "browser", "the document is Chromium's own");
    const data = await settledPageLoad(extension, await tabIdOf(browser.worker, url));
    assert.equal(cacheByPath(data)[`${new URL(sites.a.origin).host} /img/22.png`], "prefetch",
      "Chromium's request for the image was answered from the flight");
    assert.match(String(image[0]?.headers.accept), /^image\//, "sent with Chromium's image Accept (the fields probe's)");
  } finally {
    await browser.close();
  }
});
