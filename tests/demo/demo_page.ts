// What the demo's browser drivers (chromium_driver.ts, firefox_driver.ts) share: their options, what they read
// from the demo page itself (functions run inside the page, so any automation library can call them), and how the
// ON load becomes the timing page's screenshot and a HAR file.
import { writeFileSync } from "node:fs";
import type { PageLoadData } from "../../extension/src/timings/timing-store.js";

/** The JSON the demo (tests/demo/__main__.py) passes a driver as its one argument. */
export interface DriverOptions {
  url: string;
  /** Chromium: the user-data-dir (the helper already registered into it when "on"). Firefox: unused. */
  profile: string;
  on: boolean;
  window: boolean;
  screenshot?: string;
  panel_screenshot?: string;
  har?: string;
}

export interface PageMeasure {
  load_s: number;
  resources: number;
  time_origin: number;
  /** Which browsers the page's text names (it should name only the one in use). */
  names: string[];
}

export function driverOptions(): DriverOptions {
  const arg = process.argv[2];
  if (arg === undefined) throw new Error(`usage: ${process.argv[1] ?? "driver"} JSON-OPTIONS`);
  return JSON.parse(arg) as DriverOptions;
}

/** In the page: load-time.js has filled its box (right after the load event): the page is what the user sees. */
export function pageShown(): boolean {
  return !(document.getElementById("load-time")?.textContent ?? "measuring").includes("measuring");
}

/** In the page: the navigation's load time, how many files it loaded, and which browsers its text names. */
export function pageMeasure(): PageMeasure {
  const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
  return {
    load_s: (nav.loadEventEnd - nav.startTime) / 1000,
    resources: performance.getEntriesByType("resource").length,
    time_origin: performance.timeOrigin,
    names: ["Chromium", "Firefox"].filter((name) => document.body.innerText.includes(name)),
  };
}

/** The timing page's screenshot is this wide, and grows in height until every row shows (at most this high). */
export const PANEL_WIDTH = 1500;
export const PANEL_MAX_HEIGHT = 4000;

/** The record to show in the timing page's details pane: the request that waited deepest in a pipeline. */
export function deepestPipelined(data: PageLoadData): string | undefined {
  return data.records
    .filter((r) => r.timing?.connection)
    .sort((a, b) => (b.timing?.connection?.pipeline_position ?? 0) - (a.timing?.connection?.pipeline_position ?? 0))[0]?.id;
}

/** The load as HAR 1.2, as the timing page's "Export HAR" builds it; throws if it does not validate. */
export async function writeHar(data: PageLoadData, version: string, userAgent: string, file: string): Promise<number> {
  // Imported here: the OFF load needs neither (compiling the HAR schema takes a moment).
  const { buildHar } = await import("../../extension/src/timings/har.js");
  const { harErrors } = await import("../browser/support/har-validator.js");
  const browser = /(Firefox|Chromium|Chrome)\/([\d.]+)/.exec(userAgent);
  const har = buildHar([data], { version, ...(browser ? { browser: { name: browser[1] ?? "", version: browser[2] ?? "" } } : {}) });
  const errors = harErrors(har);
  if (errors.length > 0) throw new Error(`the HAR does not validate: ${errors.join("; ")}`);
  writeFileSync(file, JSON.stringify(har, null, 2));
  return har.log.entries.length;
}

/** Runs the driver; any failure is one line on stderr and exit status 1 (the demo shows it). */
export function runDriver(main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
