// One page load in real Chromium (run inside the lab's client namespace by bench/scenario_chromium_page.py):
//   node --import tsx tests/bench/chromium_page_driver.ts URL on|off IMAGES
// A fresh profile each run (no HTTP cache); "on" registers the helper and enables the page's host first.
// Prints one JSON line: in-page navigation timing (navigation start → load event end) and the wall clock
// from the first page.goto to the load event (for "on" this includes the extension's gate: blocked try,
// debugger attach, second navigation).
import { freshProfile, launch, openPage, setSites } from "../browser/support/chromium-harness.js";

async function main(): Promise<void> {
  const [url, mode, imagesArg] = process.argv.slice(2);
  if (url === undefined || (mode !== "on" && mode !== "off")) throw new Error("usage: URL on|off IMAGES");
  const images = Number(imagesArg ?? "80");
  const on = mode === "on";
  const browser = await launch(freshProfile(on));
  try {
    if (on) await setSites(browser.worker, [{ scope: "host", name: new URL(url).hostname }]);
    const page = await browser.context.newPage();
    const t0 = Date.now();
    if (on) {
      await openPage(page, url);
    } else {
      await page.goto(url, { waitUntil: "load", timeout: 120000 });
    }
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
    console.log(JSON.stringify({ mode, wall_s: wall, ...r }));
    await page.close();
  } finally {
    await browser.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
