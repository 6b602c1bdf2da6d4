// A private (incognito) window's tab of an enabled site, in real Chromium (headless works), with the extension allowed
// in private windows as a user allows it (chrome://extensions; developer mode first, or Chromium disables the unpacked
// extension it reloads: "unsupportedDeveloperExtension"): its requests are taken by the helper, which learns no page
// from them (its cache database, where a normal window's page then is learned), and the tab's private flag was known
// before its first request was paused (the background's tab trace names every pause that found it unknown:
// tab-privacy.ts). The flag's unknown window itself (a pause before the browser answered) is not reproduced here:
// tab-privacy.test.ts and the background's code cover it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Worker } from "playwright-core";
import { EXTENSION_ID, openPage, startSiteOn, stopSiteOn, waitForGate, waitForHelper, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import type { Sites } from "../support/test-site.js";
import { repoRoot } from "../support/paths.js";

let sites: Sites;
let browser: Browser;
before(async () => ({ sites, browser } = await startSiteOn()));
after(() => stopSiteOn({ sites, browser }));

/** Allows the extension in private windows, as the chrome://extensions toggle does (the extension reloads): its new
 * background worker. */
async function allowInIncognito(): Promise<Worker> {
  const page = await browser.context.newPage();
  try {
    await page.goto(`chrome://extensions/?id=${EXTENSION_ID}`);
    await page.evaluate(async (id) => {
      type DeveloperPrivate = {
        updateProfileConfiguration(c: { inDeveloperMode: boolean }): Promise<void>;
        updateExtensionConfiguration(c: { extensionId: string; incognitoAccess: boolean }): Promise<void>;
      };
      const dp = (chrome as unknown as { developerPrivate: DeveloperPrivate }).developerPrivate;
      await dp.updateProfileConfiguration({ inDeveloperMode: true });
      await dp.updateExtensionConfiguration({ extensionId: id, incognitoAccess: true });
    }, EXTENSION_ID);
  } finally {
    await page.close();
  }
  const worker = await eventually("the reloaded extension's worker", () => browser.context.serviceWorkers()
    .find((w) => w !== browser.worker && w.url().startsWith(`chrome-extension://${EXTENSION_ID}/`)));
  assert.equal(await worker.evaluate(() => chrome.extension.isAllowedIncognitoAccess()), true);
  return worker;
}

/** The pages the helper learned, as kept in its cache database (the profile's, chromium-harness.ts), read-only. */
function learnedPages(): string[] {
  const db = join(browser.userDataDir, "helper-cache", "lanefetch", "cache.sqlite3");
  if (!existsSync(db)) return [];
  const read = "import sqlite3,sys,json;c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro',uri=True);print(json.dumps([r[0] for r in c.execute('select page from pages')]))";
  return JSON.parse(execFileSync(resolve(repoRoot, ".venv/bin/python"), ["-c", read, db], { encoding: "utf8" })) as string[];
}

const IMAGES = ["/cached/3.png", "/cached/4.png"];

test("a private window's page: taken by the helper, kept in memory only, its private flag known at its first pause", async () => {
  const worker = await allowInIncognito();
  await waitForGate(worker, 1);
  await waitForHelper(browser.context);
  sites.clearLog();
  const url = `${sites.a.origin}/cached.html?private`;
  const opened = await worker.evaluate(async (u) => {
    const win = await chrome.windows.create({ incognito: true, url: u });
    return { incognito: win?.incognito, tabId: win?.tabs?.[0]?.id };
  }, url);
  assert.equal(opened.incognito, true);
  const tabId = opened.tabId ?? -1;
  const byHelper = (): string[] => sites.log.filter((r) => IMAGES.includes(r.path) && r.owner.kind === "helper").map((r) => r.path).sort();
  await eventually("the private page's images fetched by the helper", () => byHelper().length === IMAGES.length, { timeoutMs: 20000 }, byHelper);
  const trace = await worker.evaluate(() => (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? []);
  assert.ok(trace.some(([label]) => label === "event attached"), "the private tab was attached");
  assert.deepEqual(trace.filter(([label]) => label.startsWith("privacy:")), [], "its private flag was known at its first pause");
  await worker.evaluate(async (id) => chrome.tabs.remove(id), tabId);

  // A normal window's page is learned there once its load was idle 20 s (prefetch/load_log.py), and written after
  // anything of the private page's, idle earlier: the check below can see a page learned, and nothing the private
  // page did is still on its way.
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/cached.html?normal`);
  await eventually("the normal page learned", () => learnedPages().some((p) => p.includes("cached.html?normal")), { timeoutMs: 45000 }, learnedPages);
  assert.deepEqual(learnedPages().filter((p) => p.includes("private")), [], "the private page was not learned");
  await page.close();
});
