// Page loads in real Chromium (run inside the lab's client namespace by bench/page_load.py):
//   node --import tsx tests/bench/chromium_page_driver.ts URL on|off IMAGES [WARM_URL]
// A fresh profile each run (no HTTP cache); "on" registers the helper and enables the page's host first.
// Prints one JSON line per load: in-page navigation timing (navigation start → load event end) and the wall clock
// from page.goto to the load event (for the first "on" load this includes the extension's gate: blocked try,
// debugger attach, second navigation, and the helper's start). With WARM_URL (a page of the same shape on another
// origin of the same host) it then reads one line from stdin (the caller has taken its counters) and loads
// WARM_URL in the same tab: the browser, the extension and the helper are running, the connections are new.
import { createInterface } from "node:readline";
import type { Page } from "playwright-core";
import { freshProfile, launch, openPage, setSites } from "../browser/support/chromium-harness.js";

async function measure(page: Page, images: number, load: () => Promise<void>): Promise<Record<string, unknown>> {
  const t0 = Date.now();
  await load();
  await page.waitForFunction(() => {
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
    return nav !== undefined && nav.loadEventEnd > 0;
  }, undefined, { timeout: 120000 });
  const wall = (Date.now() - t0) / 1000;
  const r = await page.evaluate(async () => {
    const imgs = Array.from(document.images);
    const decoded = await Promise.all(imgs.map((i) => i.decode().then(() => i.naturalWidth > 0, () => false)));
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    return {
      images: imgs.length,
      decoded: decoded.filter(Boolean).length,
      load_s: (nav.loadEventEnd - nav.startTime) / 1000,
      dcl_s: (nav.domContentLoadedEventEnd - nav.startTime) / 1000,
      response_end_s: (nav.responseEnd - nav.startTime) / 1000,
    };
  });
  if (r.images !== images || r.decoded !== images) throw new Error(`images: ${r.decoded}/${r.images} decoded, want ${images}`);
  return { wall_s: wall, ...r };
}

async function main(): Promise<void> {
  const [url, mode, imagesArg, warmUrl] = process.argv.slice(2);
  if (url === undefined || (mode !== "on" && mode !== "off")) throw new Error("usage: URL on|off IMAGES [WARM_URL]");
  const images = Number(imagesArg ?? "80");
  const on = mode === "on";
  const browser = await launch(freshProfile(on));
  try {
    if (on) await setSites(browser.worker, [{ scope: "host", name: new URL(url).hostname }]);
    const page = await browser.context.newPage();
    const first = await measure(page, images, async () => {
      if (on) await openPage(page, url);
      else await page.goto(url, { waitUntil: "load", timeout: 120000 });
    });
    console.log(JSON.stringify({ mode, ...first }));
    if (warmUrl !== undefined) {
      const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
      await lines.next();
      const warm = await measure(page, images, async () => {
        await page.goto(warmUrl, { waitUntil: "load", timeout: 120000 });
      });
      console.log(JSON.stringify({ mode, ...warm }));
    }
    await page.close();
  } finally {
    await browser.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
