// Page loads in real Firefox ESR (run inside the lab's client namespace by bench/page_load.py), over WebDriver BiDi
// as the Firefox tests drive it:
//   node --import tsx tests/bench/firefox_page_driver.ts URL on|off IMAGES [WARM_URL]
// A fresh profile and HOME each run (no HTTP cache), the built extension installed; "on" registers the helper in
// that HOME, enables the page's host and waits until the extension's native port is up (Firefox opens it as soon as
// a site is enabled, so the helper's start-up is not inside the load), then every http:// request of the tab goes
// through the helper's proxy. Prints one JSON line per load (bench/page_measure.ts); with WARM_URL it then loads
// WARM_URL in the same tab (another origin: no connection carries over, the helper is running).
// An https:// URL (real-pages' nginx-h2): the profile is made fresh with a store trusting the origin's CA
// (LANEFETCH_TEST_UPSTREAM_CA_FILE, which the helper trusts too), as a public CA is trusted; "on" is a site opted into
// "Accelerate HTTPS on this site" before a Firefox restart: the site's CA installed into that profile by
// `lanefetch firefox-https add` before Firefox starts, the extension's storage saying the site is enabled and opted
// in, and the navigation only once the extension routes the site's https requests to the helper (its helper said
// the CA is one this Firefox trusts).
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import type { Page } from "puppeteer-core";
import type { SiteRule } from "../../extension/src/sites/site-rule.js";
import { freshHome, launchFirefox, setSites, trustingProfile, untilHttpsRouted, waitForHelper } from "../browser/support/firefox-harness.js";
import { helperCli } from "../browser/support/paths.js";
import { driverArgs, exitOnError, loadEnded, measure, readLoad, runLoads, screenDigest, untilSettled, type PageProbe } from "./page_measure.js";

/** The page's console errors and warnings and uncaught errors, as they come (bench/page_measure.ts PageProbe). */
function listen(page: Page): string[] {
  const heard: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warn") heard.push(`${m.type()}: ${m.text()} (${m.location().url ?? ""})`);
  });
  page.on("pageerror", (e) => heard.push(`uncaught: ${e instanceof Error ? e.message : String(e)}`));
  return heard;
}

function probe(page: Page, heard: string[]): PageProbe {
  return {
    untilLoaded: () => page.waitForFunction(loadEnded, { timeout: 120000 }),
    read: () => page.evaluate(readLoad),
    console: () => heard.splice(0),
    screen: async () => screenDigest(await page.screenshot({ type: "png" })),
  };
}

async function main(): Promise<void> {
  const args = driverArgs(process.argv.slice(2));
  const site: SiteRule = { scope: "host", name: new URL(args.url).hostname };
  const https = args.url.startsWith("https://");
  const originCa = process.env.LANEFETCH_TEST_UPSTREAM_CA_FILE;
  if (https && !originCa) throw new Error("an https:// page needs its CA in LANEFETCH_TEST_UPSTREAM_CA_FILE");
  const home = freshHome(args.on);
  const profile = https && originCa ? trustingProfile(originCa, "lanefetch bench CA") : undefined;
  if (profile && args.on) {
    execFileSync(helperCli, ["firefox-https", "add", "--scope", site.scope, "--profile", profile, site.name],
      { stdio: "pipe", env: { ...process.env, HOME: home } });
  }
  // LANEFETCH_BENCH_HELPER_CACHE: the helper's cache directory the benchmark keeps across fresh profiles (what it
  // learned of the site's origins: bench/page_load.py first_visit), else the fresh home's.
  const helperCache = process.env.LANEFETCH_BENCH_HELPER_CACHE;
  const launch = { ...(profile ? { profile } : {}), ...(helperCache ? { env: { XDG_CACHE_HOME: helperCache } } : {}) };
  const ff = await launchFirefox(home, launch).catch((e: unknown) => {
    if (profile) rmSync(profile, { recursive: true, force: true });
    throw e;
  });
  const startedAt = Date.now();
  try {
    let helperUpAt: number | null = null;
    if (args.on) {
      await setSites(ff, [site], { accelerateFastLinks: false, httpsSites: profile ? [site] : [] });
      const status = await waitForHelper(ff);
      if (status.helper.status !== "connected") throw new Error(`helper not connected: ${JSON.stringify(status.helper)}`);
      if (profile) await untilHttpsRouted(ff, args.url);
      helperUpAt = Date.now();
    }
    // Both variants navigate SETTLE_MS after Firefox started, ON with the helper up (page_measure.ts untilSettled).
    await untilSettled(startedAt, helperUpAt);
    const page = await ff.browser.newPage();
    // Some pages call window.print() once loaded (mdBook's print.html, 100 ms after its load event). In headless
    // Firefox that starts a print job which holds the page's script, so the driver's next in-page call never
    // returns (WebDriver BiDi's script.callFunction timed out after 180 s). Print is a no-op
    // here, in both variants.
    await page.evaluateOnNewDocument(() => { window.print = () => undefined; });
    const goto = (url: string): Promise<unknown> => page.goto(url, { waitUntil: "load", timeout: 120000 });
    const heard = listen(page);
    await runLoads(args,
      () => measure(probe(page, heard), args.images, () => goto(args.url)),
      (warmUrl) => measure(probe(page, heard), args.images, () => goto(warmUrl)));
    await page.close();
  } finally {
    await ff.close();
    if (profile) rmSync(profile, { recursive: true, force: true }); // one we made: Firefox leaves it in place
  }
}

main().catch(exitOnError);
