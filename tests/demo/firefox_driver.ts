// The Firefox side of `npm start -- --browser firefox` (run by tests/demo/__main__.py inside the lab's client
// namespace, like chromium_driver.ts, with the same JSON options): Debian's Firefox ESR over WebDriver BiDi with the
// extension installed, in a throwaway HOME (the helper's native-messaging manifest installed into it when "on"), the
// page's site enabled when "on" (proxy mode: the helper is Firefox's proxy for the site's requests). Prints one JSON
// line once the page has loaded, with lanefetch's per-request records when "on". With "window": true Firefox opens
// a window and this waits until the user closes it; otherwise it takes the page's screenshot and exits. The Firefox
// build has no timing page and no HAR export yet, so there is neither to write.
import type { Firefox } from "../browser/support/firefox-harness.js";
import { freshHome, launchFirefox, setSites, tabIdOf, waitForHelper } from "../browser/support/firefox-harness.js";
import type { TimingsReply } from "../../extension/src/background/popup-api.js";
import { driverOptions, pageMeasure, pageShown, runDriver } from "./demo_page.js";

/** The tab's records once no more arrive (the helper reports each request's timing as it finishes). */
async function settledRecords(ff: Firefox, tabId: number): Promise<TimingsReply["records"]> {
  const end = Date.now() + 30000;
  let last = -1;
  for (;;) {
    const { records } = await ff.inExtension<TimingsReply>(`chrome.runtime.sendMessage({ type: "lanefetch/timings", tabId: ${tabId} })`);
    const settled = records.length === last && records.every((r) => r.outcome !== "pending");
    if (settled || Date.now() > end) return records;
    last = records.length;
    await new Promise((r) => setTimeout(r, 500));
  }
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
    const records = o.on ? await settledRecords(ff, await tabIdOf(ff, o.url)) : [];
    if (o.screenshot) await page.screenshot({ path: o.screenshot, fullPage: true });
    console.log(JSON.stringify({ on: o.on, wall_s: wall, ...timing, records, har_entries: null }));
    if (o.window) await new Promise<void>((resolve) => ff.browser.once("disconnected", () => resolve()));
  } finally {
    await ff.close().catch(() => undefined); // removes the throwaway HOME
  }
}

runDriver(main);
