// The Firefox side of `npm start -- --browser firefox` (run by tests/demo/__main__.py inside the lab's client
// namespace, like chromium_driver.ts, with the same JSON options): Debian's Firefox ESR over WebDriver BiDi with the
// extension installed, in a throwaway HOME (the helper's native-messaging manifest installed into it when "on"), the
// page's site enabled when "on" (proxy mode: the helper is Firefox's proxy for the site's requests). Prints one JSON
// line once the page has loaded, with lanefetch's per-request records when "on"; then the extension's own tab (the
// options page it opened on install) shows the timing page for the demo tab. With "window": true Firefox opens a
// window and this waits until the user closes it; otherwise it takes the screenshots (page, timing page), writes the
// load's HAR (checked against HAR 1.2, built by the same code as the timing page's "Export HAR") and exits.
import { writeFileSync } from "node:fs";
import type { Firefox } from "../browser/support/firefox-harness.js";
import { freshHome, launchFirefox, setSites, tabIdOf, waitForHelper } from "../browser/support/firefox-harness.js";
import { newestLoadExpression, untilSettled } from "../browser/support/page-load-wait.js";
import type { PageLoadData } from "../../extension/src/timings/timing-store.js";
import { deepestPipelined, driverOptions, pageMeasure, pageShown, PANEL_MAX_HEIGHT, PANEL_WIDTH, runDriver, writeHar } from "./demo_page.js";

/** The tab's newest page load once every record has its outcome and Firefox's status (onCompleted comes last). */
function settledLoad(ff: Firefox, tabId: number): Promise<PageLoadData> {
  return untilSettled(() => ff.inExtension<PageLoadData | null>(newestLoadExpression(tabId)),
    (r) => r.outcome !== "pending" && r.status !== null, 120000);
}

/** The extension's tab shows the timing page for the demo tab, rendered up to the settled load's last change. */
async function showTimingPage(ff: Firefox, tabId: number, data: PageLoadData): Promise<void> {
  await ff.showInExtension(`timing.html?tab=${tabId}`);
  const end = Date.now() + 30000;
  while (!(await ff.inExtension<boolean>(`document.body.dataset.loadId === ${JSON.stringify(data.load.id)} &&
      Number(document.body.dataset.version) >= ${data.load.version}`).catch(() => false))) {
    if (Date.now() > end) throw new Error("the timing page did not show the demo page's load");
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** As in Chromium: every row visible and, in the details pane, the request that waited deepest in a pipeline. */
async function panelScreenshot(ff: Firefox, data: PageLoadData, file: string): Promise<void> {
  const height = 900;
  await ff.screenshotExtension(PANEL_WIDTH, height); // lay the page out at the screenshot's width first
  const overflow = await ff.inExtension<number>(`(() => { const w = document.getElementById("waterfall"); return w.scrollHeight - w.clientHeight; })()`);
  const deepest = deepestPipelined(data);
  if (deepest) await ff.inExtension(`document.querySelector(${JSON.stringify(`#waterfall .row[data-id=${JSON.stringify(deepest)}]`)})?.click(), 1`);
  writeFileSync(file, await ff.screenshotExtension(PANEL_WIDTH, Math.min(PANEL_MAX_HEIGHT, height + Math.max(0, overflow) + 4)));
}

async function main(): Promise<void> {
  const o = driverOptions();
  const ff = await launchFirefox(freshHome(o.on), { headless: !o.window });
  try {
    if (o.on) {
      await setSites(ff, [{ scope: "host", name: new URL(o.url).hostname }], { accelerateFastLinks: false });
      const { helper } = await waitForHelper(ff);
      if (helper.status !== "connected") throw new Error(`the extension could not reach the helper: ${JSON.stringify(helper)}`);
    }
    const page = await ff.browser.newPage();
    if (!o.window) await page.setViewport({ width: 1280, height: 720 }); // as the Chromium demo's screenshot
    const t0 = Date.now();
    await page.goto(o.url, { waitUntil: "load", timeout: 180000 });
    await page.waitForFunction(pageShown, { timeout: 180000 });
    const timing = await page.evaluate(pageMeasure);
    const wall = (Date.now() - t0) / 1000;
    if (o.screenshot) await page.screenshot({ path: o.screenshot, fullPage: true });
    let records: unknown[] = [];
    let harEntries: number | null = null;
    if (o.on) {
      const tabId = await tabIdOf(ff, o.url);
      const data = await settledLoad(ff, tabId);
      records = data.records;
      await showTimingPage(ff, tabId, data);
      if (o.panel_screenshot) await panelScreenshot(ff, data, o.panel_screenshot);
      if (o.har) {
        const { version, userAgent } = await ff.inExtension<{ version: string; userAgent: string }>(
          "({ version: chrome.runtime.getManifest().version, userAgent: navigator.userAgent })");
        harEntries = await writeHar(data, version, userAgent, o.har);
      }
    }
    console.log(JSON.stringify({ on: o.on, wall_s: wall, ...timing, records, har_entries: harEntries }));
    if (o.window) await new Promise<void>((resolve) => ff.browser.once("disconnected", () => resolve()));
  } finally {
    await ff.close().catch(() => undefined); // removes the throwaway HOME
  }
}

runDriver(main);
