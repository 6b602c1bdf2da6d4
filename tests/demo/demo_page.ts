// What the demo's browser drivers (chromium_driver.ts, firefox_driver.ts) share: their options, and what they read
// from the demo page itself (functions run inside the page, so any automation library can call them).

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

/** In the page: the navigation's load time and how many files it loaded. */
export function pageMeasure(): PageMeasure {
  const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
  return {
    load_s: (nav.loadEventEnd - nav.startTime) / 1000,
    resources: performance.getEntriesByType("resource").length,
    time_origin: performance.timeOrigin,
  };
}

/** Runs the driver; any failure is one line on stderr and exit status 1 (the demo shows it). */
export function runDriver(main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
