// The browser side of `npm start` (run by tests/demo/__main__.py inside the lab's client namespace, so the
// browser and the helper it starts reach the demo site only through the emulated link):
//   node --import tsx tests/demo/demo_driver.ts '{"url": ..., "profile": DIR, "on": true, "window": false, "screenshot": FILE}'
// Loads the demo page once, in a throwaway profile (the helper already registered into it when "on"), with the
// page's site enabled when "on". Prints one JSON line once the page has loaded: load time, resources and, when
// "on", lanefetch's per-request records. With "window": true Chromium opens a window and this waits until the
// user closes it; otherwise Chromium is headless, takes a screenshot and exits.
import type { Page } from "playwright-core";
import { launch, openPage, setSites, tabIdOf, tabTimings } from "../browser/support/chromium-harness.js";

interface Options {
  url: string;
  profile: string;
  on: boolean;
  window: boolean;
  screenshot?: string;
}

async function loaded(page: Page): Promise<{ load_s: number; resources: number; time_origin: number }> {
  // load-time.js fills its box right after the load event: then the page is what the user sees.
  await page.waitForFunction(() => !document.getElementById("load-time")?.textContent.includes("measuring"),
    undefined, { timeout: 180000 });
  return page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    return {
      load_s: (nav.loadEventEnd - nav.startTime) / 1000,
      resources: performance.getEntriesByType("resource").length,
      time_origin: performance.timeOrigin,
    };
  });
}

async function main(): Promise<void> {
  const arg = process.argv[2];
  if (arg === undefined) throw new Error("usage: demo_driver.ts JSON-OPTIONS");
  const o = JSON.parse(arg) as Options;
  const browser = await launch(o.profile, { headless: !o.window });
  try {
    if (o.on) await setSites(browser.worker, [{ scope: "host", name: new URL(o.url).hostname }]);
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    const t0 = Date.now();
    if (o.on) await openPage(page, o.url);
    else await page.goto(o.url, { waitUntil: "load", timeout: 180000 });
    const timing = await loaded(page);
    const wall = (Date.now() - t0) / 1000;
    const records = o.on ? (await tabTimings(browser.context, await tabIdOf(browser.worker, o.url))).records : [];
    if (o.screenshot) await page.screenshot({ path: o.screenshot, fullPage: true });
    console.log(JSON.stringify({ on: o.on, wall_s: wall, ...timing, records }));
    if (o.window) {
      await new Promise<void>((resolve) => {
        browser.context.on("close", () => resolve());
      });
    }
  } finally {
    await browser.quit().catch(() => undefined); // the launcher removes the profile directory
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
