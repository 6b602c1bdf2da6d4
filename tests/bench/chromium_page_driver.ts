// Page loads in real Chromium (run inside the lab's client namespace by bench/page_load.py):
//   node --import tsx tests/bench/chromium_page_driver.ts URL on|off IMAGES [WARM_URL | --repeat | --again]
// A fresh profile each run (no HTTP cache); "on" registers the helper, enables the page's host and waits for the helper first.
// Prints one JSON line per load (measured as bench/page_measure.ts says): in-page navigation timing (navigation
// start → load event end) and the wall clock from page.goto to the load event (for the first "on" load this includes the extension's gate: blocked try,
// debugger attach, second navigation). After the first load it reads one line from stdin (the caller has taken its
// counters), then: with WARM_URL (a page of the same shape on another origin of the same host) loads it in the
// same tab: the browser, the extension and the helper are running, the connections are new; with --repeat restarts
// Chromium on the same profile (its own disk cache warm for OFF, the helper's cache, kept in the profile, warm for
// ON; the renderer's memory cache gone) and loads URL again in a new tab; with --again loads URL again in the same
// tab (a return to the page: the browser's caches warm, the tab intercepted since its first load).
// LANEFETCH_BENCH_BREAKDOWN=1: ON lines also say where the time went (see breakdown()); =requests: and each request.
import type { Page } from "playwright-core";
import { freshProfile, launch, openPage, setSites, tabIdOf, tabTimings, waitForHelper, type Browser } from "../browser/support/chromium-harness.js";
import type { RequestRecord } from "../../extension/src/timings/timing-store.js";
import { exitOnError, loadEnded, measure, nextCallerLine, readLoad, screenDigest, untilCallerDone, untilSettled, type PageProbe } from "./page_measure.js";

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? null) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

/**
 * Where an ON load's time went, per request (medians and maxima in ms, from the extension's timing records and the
 * helper's timing points, all epoch ms on this machine) and for the page (navigation start → first request paused,
 * last request answered → load event).
 */
async function breakdown(browser: Browser, page: Page, url: string): Promise<Record<string, unknown>> {
  const nav = await page.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    return { start: performance.timeOrigin + n.startTime, responseEnd: performance.timeOrigin + n.responseEnd, load: performance.timeOrigin + n.loadEventEnd };
  });
  const tabId = await tabIdOf(browser.worker, url);
  const { records } = await tabTimings(browser.context, tabId);
  const mine = records.filter((r: RequestRecord) => r.pausedAt >= nav.start - 5 && r.resourceType !== "Document");
  const phases: Record<string, number[]> = {};
  const add = (name: string, a: number | null | undefined, b: number | null | undefined): void => {
    if (a == null || b == null) return;
    (phases[name] ??= []).push(b - a);
  };
  for (const r of mine) {
    const t = r.timing?.timing;
    add("browser_to_paused", r.browser?.start, r.pausedAt);
    add("paused_to_helper", r.pausedAt, t?.queued);
    add("helper_queue", t?.queued, t?.sent);
    add("connect", t?.connect_start, t?.connect_end);
    add("sent_to_first_byte", t?.sent, t?.first_byte);
    add("first_to_last_byte", t?.first_byte, t?.last_byte);
    add("last_byte_to_answered", t?.last_byte ?? (r.outcome === "fulfilled" ? t?.queued : null), r.answeredAt);
    add("paused_to_answered", r.pausedAt, r.answeredAt);
    add("browser_start_to_end", r.browser?.start, r.browser?.end);
    add("browser_start_to_first_byte", r.browser?.start, r.browser?.headersEnd);
  }
  const out: Record<string, unknown> = {};
  for (const [name, xs] of Object.entries(phases)) out[name] = { median: median(xs), max: Math.max(...xs), n: xs.length };
  const paused = mine.map((r) => r.pausedAt);
  const answered = mine.flatMap((r) => (r.answeredAt === null ? [] : [r.answeredAt]));
  const outcomes: Record<string, number> = {};
  // Stepped aside while paused, or never paused (the tab left to the browser: tab-policy.ts).
  const kind = (r: RequestRecord): string => (r.detail?.startsWith("tab left") ? `${r.reason ?? ""} unpaused` : r.reason ?? r.timing?.cache ?? r.outcome);
  for (const r of mine) outcomes[kind(r)] = (outcomes[kind(r)] ?? 0) + 1;
  const doc = records.find((r: RequestRecord) => r.resourceType === "Document" && r.pausedAt >= nav.start - 50);
  const firstTaken = mine.filter((r) => r.outcome === "fulfilled").map((r) => r.pausedAt);
  // Each request of the page, ms from navigation start (LANEFETCH_BENCH_BREAKDOWN=requests): which waited where.
  const at = (x: number | null | undefined): number | null => (x == null ? null : Math.round(x - nav.start));
  const requests = process.env.LANEFETCH_BENCH_BREAKDOWN === "requests"
    ? mine.map((r) => ({
      url: r.url.slice(r.url.lastIndexOf("/") + 1).slice(0, 40), type: r.resourceType, priority: r.priority,
      browser: at(r.browser?.start), paused: at(r.pausedAt), queued: at(r.timing?.timing.queued), sent: at(r.timing?.timing.sent),
      first: at(r.timing?.timing.first_byte), last: at(r.timing?.timing.last_byte), answered: at(r.answeredAt),
      end: at(r.browser?.end), conn: r.timing?.connection?.id ?? null, pos: r.timing?.connection?.pipeline_position ?? null,
      depth: r.timing?.connection?.pipeline_depth ?? null, outcome: kind(r),
    }))
    : undefined;
  // The tab policy's events and commands around the navigation (ms from the final navigation's start; the gate's
  // blocked try and attach come before it, negative).
  const trace = await browser.worker.evaluate(() => (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? []);
  const tab_trace = trace.filter(([, t]) => t >= nav.start - 3000 && t <= nav.start + 500).map(([label, t]) => `${at(t) ?? ""} ${label}`);
  return {
    requests,
    tab_trace,
    document_end: at(nav.responseEnd),
    load: at(nav.load),
    phases: out,
    document_connect: doc?.browser ? { connect: doc.browser.connectStart === null ? null : (doc.browser.connectEnd ?? 0) - doc.browser.connectStart, headers_end_to_first_paused: paused.length && doc.browser.headersEnd ? Math.min(...paused) - doc.browser.headersEnd : null } : "no record",
    last_taken_paused_after_first: firstTaken.length && paused.length ? Math.max(...firstTaken) - Math.min(...paused) : null,
    outcomes,
    nav_to_document_end: nav.responseEnd - nav.start,
    document_end_to_first_paused: paused.length ? Math.min(...paused) - nav.responseEnd : null,
    first_to_last_paused: paused.length ? Math.max(...paused) - Math.min(...paused) : null,
    last_answered_to_load: answered.length ? nav.load - Math.max(...answered) : null,
    last_browser_end_to_load: mine.some((r) => r.browser?.end) ? nav.load - Math.max(...mine.map((r) => r.browser?.end ?? 0)) : null,
  };
}

/** OFF's side of LANEFETCH_BENCH_BREAKDOWN=requests: the page's Resource Timing, ms from navigation start. */
function resources(page: Page): Promise<Record<string, unknown>[]> {
  return page.evaluate(() => (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).map((e) => ({
    url: e.name.slice(e.name.lastIndexOf("/") + 1).slice(0, 40), type: e.initiatorType, start: Math.round(e.startTime),
    connect: Math.round(e.connectEnd - e.connectStart), request: Math.round(e.requestStart), first: Math.round(e.responseStart),
    end: Math.round(e.responseEnd), bytes: e.transferSize,
  })));
}

/** The page's console errors and warnings and uncaught errors, as they come (bench/page_measure.ts PageProbe). */
function listen(page: Page): string[] {
  const heard: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") heard.push(`${m.type()}: ${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => heard.push(`uncaught: ${e.message}`));
  return heard;
}

function probe(page: Page, heard: string[]): PageProbe {
  return {
    untilLoaded: () => page.waitForFunction(loadEnded, undefined, { timeout: 120000 }),
    read: () => page.evaluate(readLoad),
    console: () => heard.splice(0),
    screen: async () => screenDigest(await page.screenshot({ type: "png" })),
  };
}

async function main(): Promise<void> {
  const [url, mode, imagesArg, next] = process.argv.slice(2);
  if (url === undefined || (mode !== "on" && mode !== "off")) throw new Error("usage: URL on|off IMAGES [WARM_URL | --repeat | --again]");
  const images = Number(imagesArg ?? "80");
  const on = mode === "on";
  const explain = on && process.env.LANEFETCH_BENCH_BREAKDOWN ? breakdown : null;
  let browser = await launch(freshProfile(on));
  try {
    const cold = Boolean(process.env.LANEFETCH_BENCH_COLD_HELPER);
    // Both variants navigate SETTLE_MS after the browser started, ON with the helper up (page_measure.ts untilSettled).
    const startedAt = Date.now();
    if (on) await setSites(browser.worker, [{ scope: "host", name: new URL(url).hostname }], { accelerateFastLinks: false });
    let helperUpAt: number | null = null;
    if (on && !cold) {
      await waitForHelper(browser.context);
      helperUpAt = Date.now();
    }
    await untilSettled(startedAt, helperUpAt);
    let page = await browser.context.newPage();
    let heard = listen(page);
    const visit = async (where: string, gate: boolean): Promise<void> => {
      const r = await measure(probe(page, heard), images, async () => {
        if (gate) await openPage(page, where, 120000); // a real page on wcdma takes longer than the harness's 20 s
        else await page.goto(where, { waitUntil: "load", timeout: 120000 });
      });
      const detail = explain ? { breakdown: await explain(browser, page, where) }
        : process.env.LANEFETCH_BENCH_BREAKDOWN === "requests" ? { breakdown: { resources: await resources(page) } } : {};
      console.log(JSON.stringify({ mode, ...r, ...detail }));
    };
    await visit(url, on);
    if (next !== undefined) {
      await nextCallerLine();
      if (next === "--repeat") {
        await browser.quit();
        browser = await launch(browser.userDataDir);
        page = await browser.context.newPage();
        heard = listen(page);
        await visit(url, on); // the gate blocks the first try again after a restart
      } else if (next === "--again") {
        await visit(url, false);
      } else {
        await visit(next, false);
      }
    }
    await untilCallerDone();
    await page.close();
  } finally {
    await browser.close();
  }
}

main().catch(exitOnError);
