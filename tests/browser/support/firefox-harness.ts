// Real Firefox ESR (Debian's) over WebDriver BiDi (puppeteer-core) with the built Firefox extension installed, on a
// fresh profile and a fresh HOME that may hold the helper's native-messaging manifest (`lanefetch install`).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before } from "node:test";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import type { StatusReply } from "../../../extension/src/background/popup-api.js";
import type { SiteRule } from "../../../extension/src/sites/site-rule.js";
import { firefoxDist, firefoxExecutable, helperCli, repoRoot } from "./paths.js";
import { startSites, type Sites } from "./test-site.js";

const identity = JSON.parse(readFileSync(resolve(repoRoot, "shared/identity.json"), "utf8")) as { firefox_extension_id: string };
/** Fixed internal UUID (set by pref) so the tests can open the extension's pages. */
export const EXTENSION_UUID = "3f1c2a9e-6b7d-4e55-9a0c-1d2e3f4a5b6c";
export const EXTENSION_BASE = `moz-extension://${EXTENSION_UUID}`;

const PREFS: Record<string, unknown> = {
  "extensions.webextensions.uuids": JSON.stringify({ [identity.firefox_extension_id]: EXTENSION_UUID }),
  // The test origins are loopback addresses: let extensions proxy them (public sites need no such pref).
  "network.proxy.allow_hijacking_localhost": true,
  "network.trr.mode": 5,
  "app.update.enabled": false,
  "app.update.auto": false,
  "toolkit.telemetry.enabled": false,
  "datareporting.policy.dataSubmissionEnabled": false,
  "browser.safebrowsing.malware.enabled": false,
  "browser.safebrowsing.phishing.enabled": false,
  "app.normandy.enabled": false,
  "network.captive-portal-service.enabled": false,
  "network.connectivity-service.enabled": false,
  "network.prefetch-next": false,
  "network.dns.disablePrefetch": true,
  "network.http.speculative-parallel-limit": 0,
  "browser.urlbar.speculativeConnect.enabled": false,
  "extensions.update.enabled": false,
};

export interface Firefox {
  browser: Browser;
  home: string;
  /** Runs an expression in the extension's options page (the extension opens it on install) and returns its value,
   * JSON round-tripped. WebDriver BiDi may not navigate to moz-extension:// URLs and puppeteer lists no such pages,
   * but BiDi does list the open tab and runs script in it, with the extension's APIs. */
  inExtension<T>(expression: string): Promise<T>;
  /** The extension's tab shows `path` (e.g. "timing.html?tab=3"); returns once it has loaded. BiDi may not navigate
   * to moz-extension:// URLs, but the extension's own tab may. */
  showInExtension(path: string): Promise<void>;
  /** A PNG of the extension's tab at this viewport size (BiDi: puppeteer lists no moz-extension:// pages). */
  screenshotExtension(width: number, height: number): Promise<Buffer>;
  /** Presses keys in the extension's tab, as a person at the keyboard (WebDriver key values: "\uE004" is Tab). */
  pressKeys(...keys: string[]): Promise<void>;
  close(): Promise<void>;
}

interface BidiConnection {
  send(method: string, params: unknown): Promise<{ result: unknown }>;
}

export function freshHome(withHelper: boolean): string {
  const home = mkdtempSync(join(tmpdir(), "lf-firefox-home-"));
  if (withHelper) execFileSync(helperCli, ["install", "--browser", "firefox"], { stdio: "pipe", env: { ...process.env, HOME: home } });
  return home;
}

async function optionsContext(bidi: BidiConnection): Promise<string> {
  const end = Date.now() + 15000;
  for (;;) {
    const tree = (await bidi.send("browsingContext.getTree", {})).result as { contexts: { context: string; url: string }[] };
    const found = tree.contexts.find((c) => c.url.startsWith(`${EXTENSION_BASE}/options.html`));
    if (found) return found.context;
    if (Date.now() > end) throw new Error("the extension did not open its options page on install");
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface LaunchOptions {
  /** A profile directory to use (and keep): a restart is a second launch with the same one. */
  profile?: string;
  /** More environment for Firefox and so for the helper it starts. */
  env?: Record<string, string>;
  /** More preferences (over the harness's own). */
  prefs?: Record<string, unknown>;
  /** Leave HOME in place on close (the test launches again with it). */
  keepHome?: boolean;
  /** false opens a window (the `npm start -- --browser firefox` demo on a display). */
  headless?: boolean;
}

export async function launchFirefox(home: string, options: LaunchOptions = {}): Promise<Firefox> {
  const headless = options.headless ?? true;
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: firefoxExecutable,
    headless,
    defaultViewport: headless ? undefined : null, // a window: pages take the window's size
    extraPrefsFirefox: { ...PREFS, ...options.prefs },
    ...(options.profile ? { userDataDir: options.profile } : {}),
    // LANEFETCH_TEST_WPAD: the helper's WPAD lookup finds none, whatever this machine's DNS says
    env: { ...process.env, HOME: home, XDG_CACHE_HOME: join(home, ".cache"), LANEFETCH_TEST_WPAD: "", ...options.env },
  });
  const close = async (): Promise<void> => {
    try {
      await browser.close();
    } finally {
      if (!options.keepHome) rmSync(home, { recursive: true, force: true }); // also when Firefox did not close cleanly
    }
  };
  try {
    await browser.installExtension(firefoxDist);
    const bidi = (browser as unknown as { connection: BidiConnection }).connection;
    const context = await optionsContext(bidi);
    const inExtension = async <T>(expression: string): Promise<T> => {
      const wrapped = `(async () => JSON.stringify(await (${expression})))()`;
      const r = (await bidi.send("script.evaluate", { expression: wrapped, target: { context }, awaitPromise: true })).result as
        { type: string; result?: { value?: string }; exceptionDetails?: { text?: string } };
      if (r.type !== "success") throw new Error(`in the extension: ${r.exceptionDetails?.text ?? JSON.stringify(r)}`);
      const text = r.result?.value;
      return (text === undefined ? undefined : JSON.parse(text)) as T;
    };
    await inExtension("new Promise((ok) => document.readyState === 'complete' ? ok(1) : addEventListener('load', () => ok(1)))");
    const showInExtension = async (path: string): Promise<void> => {
      await inExtension(`(setTimeout(() => location.assign(${JSON.stringify(path)}), 0), 1)`);
      const want = `/${path.split("?")[0] ?? ""}`;
      for (let i = 0; i < 100; i++) {
        await new Promise((ok) => setTimeout(ok, 100));
        const at = await inExtension<boolean>(`location.pathname === ${JSON.stringify(want)} && document.readyState === "complete" && typeof chrome === "object"`)
          .catch(() => false); // the realm may be between pages
        if (at) return;
      }
      throw new Error(`the extension's tab did not show ${path}`);
    };
    const screenshotExtension = async (width: number, height: number): Promise<Buffer> => {
      await bidi.send("browsingContext.setViewport", { context, viewport: { width, height } });
      await new Promise((ok) => setTimeout(ok, 300)); // the page lays out at the new size
      const shot = (await bidi.send("browsingContext.captureScreenshot", { context, origin: "viewport" })).result as { data: string };
      return Buffer.from(shot.data, "base64");
    };
    const pressKeys = async (...keys: string[]): Promise<void> => {
      await bidi.send("browsingContext.activate", { context }); // keys go to the tab in front
      const actions = keys.flatMap((value) => [{ type: "keyDown", value }, { type: "keyUp", value }]);
      await bidi.send("input.performActions", { context, actions: [{ type: "key", id: "keyboard", actions }] });
    };
    return { browser, home, inExtension, showInExtension, screenshotExtension, pressKeys, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** A fresh Firefox (a fresh HOME, the helper installed) with 127.0.0.1 enabled, its helper connected. */
export async function enabledFirefox(): Promise<Firefox> {
  const ff = await launchFirefox(freshHome(true));
  await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }]);
  // With a site enabled the extension opens the native port at once and keeps it open.
  const status = (await waitForHelper(ff)).helper.status;
  if (status !== "connected") throw new Error(`the helper is ${status}, not connected`);
  return ff;
}

/** For a test file: before its tests, the test sites and an enabledFirefox(); after them, both closed. */
export function firefoxWithSites(): { readonly sites: Sites; readonly ff: Firefox } {
  let sites: Sites | null = null;
  let ff: Firefox | null = null;
  before(async () => {
    sites = await startSites();
    ff = await enabledFirefox();
  });
  after(async () => {
    await ff?.close();
    await sites?.close();
  });
  return {
    get sites(): Sites {
      if (sites === null) throw new Error("the test sites are not started (used outside a test?)");
      return sites;
    },
    get ff(): Firefox {
      if (ff === null) throw new Error("Firefox is not launched (used outside a test?)");
      return ff;
    },
  };
}

/** Enables `sites`. The test origins are loopback (RTT far below the step-aside threshold, where lanefetch leaves
 * requests to Firefox): `accelerateFastLinks` (default true here, as in the Chromium harness) makes it take them
 * anyway, so the tests see the proxy path; benchmarks and the demo pass false (what users get). */
export async function setSites(ff: Firefox, sites: SiteRule[], { accelerateFastLinks = true, httpsSites = [] as SiteRule[] } = {}): Promise<void> {
  const stored = sites.map((x) => ({ ...x, added: Date.now() }));
  // The sites opted into HTTPS in the same write as the sites: the helper makes the opted-in set true as soon as
  // the extension connects, so a site enabled but not yet opted in would lose a CA installed before the start.
  const https = httpsSites.length > 0 ? `, httpsSites: ${JSON.stringify(httpsSites)}` : "";
  await ff.inExtension(`chrome.storage.local.set({ sites: ${JSON.stringify(stored)}, accelerateFastLinks: ${String(accelerateFastLinks)}${https} })`);
  await new Promise((r) => setTimeout(r, 200)); // the background reads the rules on storage.onChanged
}

/** A fresh Firefox profile directory whose certificate store trusts `caFile` for TLS servers, as a public CA is
 * trusted (Firefox reads a store it finds there instead of making one). */
export function trustingProfile(caFile: string, nickname = "test origins CA"): string {
  const profile = mkdtempSync(join(tmpdir(), "lf-firefox-profile-"));
  execFileSync("certutil", ["-N", "--empty-password", "-d", `sql:${profile}`]);
  execFileSync("certutil", ["-A", "-n", nickname, "-t", "C,,", "-i", caFile, "-d", `sql:${profile}`]);
  return profile;
}

/** Until the extension routes `url`'s https requests to the helper (its site's CA is one this Firefox trusts, the
 * helper said so), asked about a tab that shows the URL without loading it (a discarded tab: no request, no
 * connection), or throws after `ms` with the last status. */
export async function untilHttpsRouted(ff: Firefox, url: string, ms = 15000): Promise<StatusReply> {
  const tabId = await ff.inExtension<number>(`chrome.tabs.create({ url: ${JSON.stringify(url)}, discarded: true, active: false }).then((t) => t.id)`);
  try {
    const end = Date.now() + ms;
    for (;;) {
      const reply = await tabStatus(ff, tabId);
      if ((reply.tab.https?.state === "active" && reply.tab.intercepting) || Date.now() > end) {
        if (!reply.tab.intercepting) throw new Error(`https requests of ${url} not routed to the helper: ${JSON.stringify(reply.tab)}`);
        return reply;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await ff.inExtension(`chrome.tabs.remove(${String(tabId)})`);
  }
}

export async function tabIdOf(ff: Firefox, url: string): Promise<number> {
  return ff.inExtension(`chrome.tabs.query({}).then((tabs) => tabs.find((t) => t.url === ${JSON.stringify(url)})?.id ?? -1)`);
}

export async function tabStatus(ff: Firefox, tabId: number): Promise<StatusReply> {
  return ff.inExtension(`chrome.runtime.sendMessage({ type: "lanefetch/status", tabId: ${tabId} })`);
}

/** Waits until the extension's native port to the helper is up (status "connected"), or gives up. */
export async function waitForHelper(ff: Firefox, status = "connected"): Promise<StatusReply> {
  const end = Date.now() + 15000;
  for (;;) {
    const reply = await ff.inExtension<StatusReply>(
      `chrome.tabs.getCurrent().then((t) => chrome.runtime.sendMessage({ type: "lanefetch/status", tabId: t.id }))`);
    if (reply.helper.status === status || Date.now() > end) return reply;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function waitForResult<T>(page: Page, expr: string, timeout = 20000): Promise<T> {
  await page.waitForFunction(expr, { timeout });
  return (await page.evaluate(expr)) as T;
}
