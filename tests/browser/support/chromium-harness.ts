// Real Chromium (Debian's) with the built extension, on a fresh user-data-dir, optionally with the real helper
// registered into it by `lanefetch install --chromium-user-data-dir`.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page, type Worker } from "playwright-core";
import type { SiteRule } from "../../../extension/src/sites/site-rule.js";
import type { PageLoadReply, PageLoadsReply, PopupRequest, StatusReply, TimingsReply } from "../../../extension/src/background/popup-api.js";
import type { PageLoadData } from "../../../extension/src/timings/timing-store.js";
import { untilSettled } from "./page-load-wait.js";
import { chromiumDist, chromiumExecutable, helperCli, repoRoot } from "./paths.js";
import { siteOptions, startSites, type Sites } from "./test-site.js";
import { eventually } from "./eventually.js";

const identity = JSON.parse(readFileSync(resolve(repoRoot, "shared/identity.json"), "utf8")) as { chromium_extension_id: string };
export const EXTENSION_ID = identity.chromium_extension_id;

export interface Browser {
  context: BrowserContext;
  worker: Worker;
  userDataDir: string;
  close(): Promise<void>;
  /** Closes the browser but keeps the profile (for restart tests). */
  quit(): Promise<void>;
}

export function freshProfile(withHelper: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), "lf-chromium-profile-"));
  if (withHelper) execFileSync(helperCli, ["install", "--browser", "chromium", "--chromium-user-data-dir", dir], { stdio: "pipe" });
  return dir;
}

/** headless: false opens a window (the `npm start` demo on a display). ignoreHttpsErrors: the browser takes the
 * tests' own https origins (their CA is not the system's; the helper trusts it through LANEFETCH_TEST_UPSTREAM_CA_FILE). */
export async function launch(userDataDir: string,
  { headless = true, ignoreHttpsErrors = false, args = [], env = {} }:
    { headless?: boolean; ignoreHttpsErrors?: boolean; args?: string[]; /** More for Chromium and the helper it starts. */ env?: Record<string, string> } = {}): Promise<Browser> {
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumExecutable,
    headless,
    ignoreHTTPSErrors: ignoreHttpsErrors,
    viewport: headless ? { width: 1280, height: 720 } : null,
    // The helper Chromium starts keeps its HTTP cache and interface policy with the profile, never in the runner's own;
    // LANEFETCH_BENCH_HELPER_CACHE: one the benchmark keeps across fresh profiles (learned pages, bench/page_load.py).
    env: {
      ...process.env, XDG_CACHE_HOME: process.env.LANEFETCH_BENCH_HELPER_CACHE ?? join(userDataDir, "helper-cache"),
      XDG_CONFIG_HOME: join(userDataDir, "helper-config"),
      LANEFETCH_TEST_WPAD: "", // the helper's WPAD lookup: none found, whatever this machine's DNS says
      ...env,
    },
    args: [
      "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", `--disable-extensions-except=${chromiumDist}`, `--load-extension=${chromiumDist}`, ...args,
    ],
  });
  const prefix = `chrome-extension://${EXTENSION_ID}/`;
  let worker = context.serviceWorkers().find((w) => w.url().startsWith(prefix));
  worker ??= await context.waitForEvent("serviceworker", { predicate: (w) => w.url().startsWith(prefix), timeout: 15000 });
  await new Promise((r) => setTimeout(r, 1000));
  const quit = async (): Promise<void> => {
    await context.close();
  };
  return {
    context, worker, userDataDir, quit,
    close: async () => {
      await quit();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Enables these sites. The tests' sites are on loopback, where the extension would step aside (the browser fetches
 * from a fast origin itself): `accelerateFastLinks` (default true here) makes it take them anyway, so the tests see
 * the helper at work; benchmarks and the demo pass false, the product's default.
 */
/** Enables these sites and waits for the gate's block rules, which exist only while the helper is connected: a
 * profile without the helper passes `gate: false` (nothing is ever blocked there). */
export async function setSites(worker: Worker, sites: SiteRule[], { accelerateFastLinks = true, gate = true } = {}): Promise<void> {
  await worker.evaluate(async ([s, fast]) => {
    await chrome.storage.local.set({ sites: s.map((x) => ({ ...x, added: Date.now() })), accelerateFastLinks: fast });
  }, [sites, accelerateFastLinks] as const);
  await waitForGate(worker, gate ? sites.length : 0);
}

/** Waits until the extension's navigation gate holds one blocking DNR session rule per active site (fast hosts'
 * allow rules not counted). */
export async function waitForGate(worker: Worker, rules: number): Promise<void> {
  let blocks = -1;
  await eventually(`the gate has ${rules} blocking rule(s)`, async () => (blocks = await worker.evaluate(async () =>
    (await chrome.declarativeNetRequest.getSessionRules()).filter((r) => r.action.type === "block").length)) === rules, {}, () => blocks);
}

/** Waits until the background says the helper is connected, or in the `wanted` state (asked from an extension page,
 * for that page's tab). */
export async function waitForHelper(context: BrowserContext, timeout = 10000, wanted: StatusReply["helper"]["status"] = "connected"): Promise<void> {
  const page = await context.newPage();
  try {
    await page.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    let status = "";
    await eventually(`the helper is ${wanted}`, async () => (status = await page.evaluate(async () => {
      const tab = await chrome.tabs.getCurrent();
      const reply = await chrome.runtime.sendMessage<unknown, StatusReply>({ type: "lanefetch/status", tabId: tab?.id ?? -1 });
      return reply.helper.status;
    })) === wanted, { timeoutMs: timeout, everyMs: 100 }, () => status);
  } finally {
    await page.close();
  }
}

/** Navigates to a page of an enabled site: the gate blocks the first try and the extension navigates again. */
export async function openPage(page: Page, url: string, timeout = 20000): Promise<void> {
  try {
    await page.goto(url, { waitUntil: "load" });
  } catch (e) {
    // The gate's block, or a racing navigation the extension started again (no flight: attach-race.ts) aborted.
    if (!/ERR_BLOCKED_BY_CLIENT|ERR_ABORTED|interrupted by another navigation|frame was detached/i.test(String(e))) throw e;
  }
  // The blocked try shows chrome-error://chromewebdata/; wait for the real page to finish loading.
  await page.waitForFunction((u) => location.href === u && document.readyState === "complete", url, { timeout });
}

export async function tabIdOf(worker: Worker, url: string): Promise<number> {
  const id = await worker.evaluate(async (u) => (await chrome.tabs.query({})).find((t) => t.url === u)?.id, url);
  if (id === undefined) throw new Error(`no tab shows ${url}`);
  return id;
}

/** Asks the background what the popup would ask (from an extension page: the worker cannot message itself). */
async function askBackground<T>(context: BrowserContext, message: PopupRequest): Promise<T> {
  const page = await context.newPage();
  try {
    await page.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    const reply: unknown = await page.evaluate((m) => chrome.runtime.sendMessage(m), message);
    return reply as T;
  } finally {
    await page.close();
  }
}

export async function tabStatus(context: BrowserContext, tabId: number): Promise<StatusReply> {
  return askBackground<StatusReply>(context, { type: "lanefetch/status", tabId });
}

/** The per-request records the timing panel reads (what lanefetch did with each request of the tab). */
export async function tabTimings(context: BrowserContext, tabId: number): Promise<TimingsReply> {
  return askBackground<TimingsReply>(context, { type: "lanefetch/timings", tabId });
}

/**
 * The tab's newest page load once it has finished (load event seen, nothing pending, the browser's own timing in for
 * every request it fetched itself), read from `extensionPage` (any page of the extension) as the timing page reads it.
 */
export async function settledPageLoad(extensionPage: Page, tabId: number, timeout = 60000): Promise<PageLoadData> {
  return untilSettled(() => extensionPage.evaluate(async (tab) => {
    const { loads } = await chrome.runtime.sendMessage<unknown, PageLoadsReply>({ type: "lanefetch/page-loads", tabId: tab });
    const newest = loads[0];
    return newest ? (await chrome.runtime.sendMessage<unknown, PageLoadReply>({ type: "lanefetch/page-load", id: newest.id })).data : null;
  }, tabId), (r) => r.outcome !== "pending" && (r.outcome !== "passed" || r.browser !== null), timeout);
}

export interface SiteOn {
  sites: Sites;
  browser: Browser;
}

/** The test sites and Chromium with the helper registered and the loopback test site (127.0.0.1) enabled. */
export async function startSiteOn(): Promise<SiteOn> {
  const sites = await startSites();
  // The fields probe's name goes to the test site, not to this machine's port 80: a probe request that escaped its
  // interception would be in the site's log (site-on.test.ts).
  const probe = `--host-resolver-rules=MAP fields.lanefetch.localhost 127.0.0.1:${new URL(sites.a.origin).port}`;
  const browser = await launch(freshProfile(true), { args: [probe] });
  await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
  return { sites, browser };
}

export async function stopSiteOn(env: SiteOn): Promise<void> {
  await env.browser.close();
  await env.sites.close();
}

/** The test sites and Chromium where the loopback test site's navigations race the debugger attach
 * (intercept/attach-race.ts). Loopback has no round trip longer than an attach, so attaches are stored as instant
 * (read from storage at the worker's start) and a tab shows the origin before the site is turned on: the just-enabled
 * probe measures that host and its verdict races, so the gate allows it. The first real attach is measured and ends
 * the race: each racing test needs its own browser. */
export async function startRacing({ ignoreHttpsErrors = false } = {}): Promise<SiteOn> {
  const sites = await startSites();
  const browser = await launch(freshProfile(true), { ignoreHttpsErrors });
  await browser.worker.evaluate(async () => chrome.storage.local.set({ attachDurationsMs: [0] }));
  const before = await browser.context.newPage();
  await openPage(before, `${sites.a.origin}/many.html?n=1`);
  await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
  await waitForHelper(browser.context);
  let rules: string[] = [];
  await eventually("the gate allows the racing host", async () => (rules = await browser.worker.evaluate(async () =>
    (await chrome.declarativeNetRequest.getSessionRules()).map((r) => r.action.type).sort())).join() === "allow,block", {}, () => rules);
  return { sites, browser };
}

/** After startRacing: answers no longer held back (a racing test holds them, siteOptions.delayMs), all stopped. */
export async function stopRacing(env: SiteOn): Promise<void> {
  siteOptions.delayMs = 0;
  await stopSiteOn(env);
}
