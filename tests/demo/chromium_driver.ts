// The browser side of `npm start` (run by tests/demo/__main__.py inside the lab's client namespace, so the
// browser and the helper it starts reach the demo site only through the emulated link):
//   node --import tsx tests/demo/chromium_driver.ts '{"url": ..., "profile": DIR, "on": true, "window": false,
//     "screenshot": FILE, "panel_screenshot": FILE, "har": FILE}'
// Loads the demo page once, in a throwaway profile (the helper already registered into it when "on"), with the
// page's site enabled when "on". Prints one JSON line once the page has loaded: load time, resources and, when
// "on", lanefetch's per-request records. When "on", the extension's timing page for the tab opens in a second tab.
// With "window": true Chromium opens a window and this waits until the user closes it; otherwise Chromium is
// headless, takes the screenshots (page, timing page), writes the load's HAR (checked against HAR 1.2) and exits.
import type { BrowserContext, Page } from "playwright-core";
import type { PageLoadData } from "../../extension/src/timings/timing-store.js";
import { EXTENSION_ID, launch, openPage, setSites, settledPageLoad, tabIdOf } from "../browser/support/chromium-harness.js";
import { deepestPipelined, driverOptions, pageMeasure, pageShown, PANEL_MAX_HEIGHT, PANEL_WIDTH, runDriver, writeHar, type PageMeasure } from "./demo_page.js";

async function loaded(page: Page): Promise<PageMeasure> {
  await page.waitForFunction(pageShown, undefined, { timeout: 180000 });
  return page.evaluate(pageMeasure);
}

/** The timing page for the tab, in a tab of its own, once it shows the tab's finished load. */
async function openTimingPage(context: BrowserContext, tabId: number, window: boolean): Promise<{ panel: Page; data: PageLoadData }> {
  const panel = await context.newPage();
  await panel.goto(`chrome-extension://${EXTENSION_ID}/timing.html?tab=${tabId}`);
  const data = await settledPageLoad(panel, tabId, 120000);
  if (!window) await panel.setViewportSize({ width: PANEL_WIDTH, height: 900 });
  await panel.waitForFunction(({ id, version }) => document.body.dataset.loadId === id && Number(document.body.dataset.version) >= version,
    { id: data.load.id, version: data.load.version }, { timeout: 30000 });
  return { panel, data };
}

/**
 * The timing page as a newcomer should first see it: every row visible (the page grows until the waterfall no
 * longer scrolls) and, in the details pane, the request that waited deepest in a pipeline.
 */
async function panelScreenshot(panel: Page, data: PageLoadData, file: string): Promise<void> {
  const overflow = await panel.$eval("#waterfall", (w) => w.scrollHeight - w.clientHeight);
  const viewport = panel.viewportSize() ?? { width: PANEL_WIDTH, height: 900 };
  await panel.setViewportSize({ width: viewport.width, height: Math.min(PANEL_MAX_HEIGHT, viewport.height + Math.max(0, overflow) + 4) });
  const deepest = deepestPipelined(data);
  if (deepest) await panel.click(`#waterfall .row[data-id=${JSON.stringify(deepest)}]`);
  await panel.screenshot({ path: file });
}

async function main(): Promise<void> {
  const o = driverOptions();
  const browser = await launch(o.profile, { headless: !o.window });
  try {
    if (o.on) await setSites(browser.worker, [{ scope: "host", name: new URL(o.url).hostname }], { accelerateFastLinks: false });
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    const t0 = Date.now();
    if (o.on) await openPage(page, o.url);
    else await page.goto(o.url, { waitUntil: "load", timeout: 180000 });
    const timing = await loaded(page);
    const wall = (Date.now() - t0) / 1000;
    let records: unknown[] = [];
    let harEntries: number | null = null;
    if (o.on) {
      const { panel, data } = await openTimingPage(browser.context, await tabIdOf(browser.worker, o.url), o.window);
      records = data.records;
      if (o.panel_screenshot) await panelScreenshot(panel, data, o.panel_screenshot);
      if (o.har) {
        const { version, userAgent } = await panel.evaluate(() => ({ version: chrome.runtime.getManifest().version, userAgent: navigator.userAgent }));
        harEntries = await writeHar(data, version, userAgent, o.har);
      }
      await page.bringToFront();
    }
    if (o.screenshot) await page.screenshot({ path: o.screenshot, fullPage: true });
    console.log(JSON.stringify({ on: o.on, wall_s: wall, ...timing, records, har_entries: harEntries }));
    if (o.window) {
      await new Promise<void>((resolve) => {
        browser.context.on("close", () => resolve());
      });
    }
  } finally {
    await browser.quit().catch(() => undefined); // the launcher removes the profile directory
  }
}

runDriver(main);
