// The popup's real toggle, persistence across a browser restart, site off → no interception, and a missing helper
// → pages still load (from the browser) while the popup says how to fix it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import type { Page } from "playwright-core";
import { EXTENSION_ID, freshProfile, launch, openPage, setSites, tabIdOf, tabStatus, tabTimings, waitForGate, waitForHelper, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { helperCli } from "../support/paths.js";
import { startSites, type Sites } from "../support/test-site.js";

let sites: Sites;
before(async () => {
  sites = await startSites();
});
after(() => sites.close());

async function openPopup(page: Page, tabId: number): Promise<void> {
  await page.goto(`chrome-extension://${EXTENSION_ID}/popup.html?tabId=${tabId}`);
  await page.waitForSelector("body[data-ready=true]");
}

function imageOwner(path: string): string[] {
  return sites.log.filter((r) => r.path === path).map((r) => r.owner.kind);
}

/** What the extension made of a tab and its requests (said when a load did not go as the test expects): the tab's
 * status, each request's outcome and reason, and the newest tab events and commands (chromium-main.ts's trace). */
async function tabReport(browser: Browser, url: string): Promise<string> {
  // The trace first: asking the status opens extension pages, whose own tab events would push the page's out.
  const trace = await browser.worker.evaluate(() =>
    ((globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? []).slice(-40).map(([label]) => label));
  const tabId = await tabIdOf(browser.worker, url);
  const { tab, helper } = await tabStatus(browser.context, tabId);
  const records = (await tabTimings(browser.context, tabId)).records
    .map((r) => `${r.url} ${r.outcome}${r.reason === null ? "" : ` ${r.reason}${r.detail ? ` (${r.detail})` : ""}`}`);
  return JSON.stringify({ tab, helper: helper.status, records, trace });
}

/** Who fetched the page's image, once the server saw it (the page loaded: its request arrived before). */
async function imageFetchedBy(path = "/img/9.png"): Promise<string[]> {
  return eventually(`the server saw ${path}`, () => imageOwner(path).length > 0 && imageOwner(path), {}, () => sites.log.map((r) => r.path));
}

test("popup toggle turns the site on (reload now → via helper), persists across a restart, and turns it off", async () => {
  const profile = freshProfile(true);
  let browser = await launch(profile);
  const url = `${sites.a.origin}/plain.html`;
  try {
    // The test site is on loopback, where lanefetch would leave requests to the browser (low_latency).
    await browser.worker.evaluate(() => chrome.storage.local.set({ accelerateFastLinks: true }));
    // Off: the page loads from the browser, nothing is intercepted.
    sites.clearLog();
    const page = await browser.context.newPage();
    await openPage(page, url);
    assert.deepEqual(await imageFetchedBy(), ["browser"]);
    const tabId = await tabIdOf(browser.worker, url);
    const popup = await browser.context.newPage();
    await openPopup(popup, tabId);
    assert.equal(await popup.isChecked("#toggle"), false);
    assert.equal(await popup.textContent("#site-name"), "127.0.0.1");
    assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, false);

    // On, by clicking the real toggle; "Reload now" reloads the tab through the gate.
    await popup.click("#toggle");
    await popup.waitForSelector("#reload:not([hidden])");
    await waitForGate(browser.worker, 1);
    const stored = await browser.worker.evaluate(() => chrome.storage.local.get("sites"));
    assert.deepEqual((stored.sites as { scope: string; name: string }[]).map(({ scope, name }) => ({ scope, name })), [{ scope: "domain", name: "127.0.0.1" }]);
    sites.clearLog();
    await popup.click("#reload");
    await page.waitForFunction(() => document.readyState === "complete" && (document.images[0]?.naturalWidth ?? 0) === 9);
    assert.deepEqual(await imageFetchedBy(), ["helper"]);
    const on = await tabStatus(browser.context, tabId);
    assert.equal(on.tab.intercepting, true);
    assert.equal(on.helper.status, "connected");
    assert.ok(on.counts.accelerated >= 1);
    const badge = await browser.worker.evaluate((id) => chrome.action.getBadgeText({ tabId: id }), tabId);
    assert.equal(badge, "on");

    // Restart: the choice is still there and the page is accelerated again.
    await browser.quit();
    browser = await launch(profile);
    await waitForGate(browser.worker, 1);
    sites.clearLog();
    const again = await browser.context.newPage();
    await openPage(again, url);
    const owners = await imageFetchedBy();
    const afterRestart = await tabStatus(browser.context, await tabIdOf(browser.worker, url));
    assert.deepEqual(owners, ["helper"], `still on after a restart: ${JSON.stringify(afterRestart)}`);

    // Off again from the popup: the next load is the browser's own.
    const tab2 = await tabIdOf(browser.worker, url);
    const popup2 = await browser.context.newPage();
    await openPopup(popup2, tab2);
    assert.equal(await popup2.isChecked("#toggle"), true);
    assert.match((await popup2.textContent("#helper")) ?? "", /Helper connected \(version /);
    await popup2.click("#toggle");
    await popup2.waitForFunction(() => !(document.getElementById("toggle") as HTMLInputElement).checked);
    await eventually("detached when the site went off", async () => !(await tabStatus(browser.context, tab2)).tab.intercepting);
    sites.clearLog();
    await again.reload();
    assert.deepEqual(await imageFetchedBy(), ["browser"]);
  } finally {
    await browser.quit();
    rmSync(profile, { recursive: true, force: true });
  }
});

test("no helper installed: nothing is paused — an enabled site loads completely from the browser, and the popup says why", async () => {
  const browser = await launch(freshProfile(false));
  try {
    await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }], { gate: false });
    await waitForHelper(browser.context, 10000, "not_installed");
    sites.clearLog();
    const page = await browser.context.newPage();
    const url = `${sites.a.origin}/index.html`;
    await openPage(page, url);
    await page.waitForFunction(() => (window as unknown as { __results?: unknown }).__results !== undefined, undefined, { timeout: 20000 });
    const r = await page.evaluate(() => (window as unknown as { __results: Record<string, unknown> }).__results);
    assert.equal(r.error, undefined);
    assert.equal(r.img, 17);
    assert.equal(r.module, "dep+cross");
    assert.equal(r.fetch, true);
    assert.ok(sites.log.length > 20);
    assert.deepEqual([...new Set(sites.log.map((x) => x.owner.kind))], ["browser"]);
    const tabId = await tabIdOf(browser.worker, url);
    const s = await tabStatus(browser.context, tabId);
    // No debugger attached, so no Fetch.requestPaused at all; and none was counted as paused and passed on.
    assert.equal(s.tab.intercepting, false, "the debugger is not attached");
    assert.equal(s.helper.status, "not_installed");
    assert.equal(s.counts.accelerated, 0);
    assert.deepEqual(s.counts.passed, {}, JSON.stringify(s.counts));
    const popup = await browser.context.newPage();
    await openPopup(popup, tabId);
    assert.equal(await popup.textContent("#state-line"), "Helper not installed — run lanefetch install");
    assert.equal(await popup.textContent("#state-line code"), "lanefetch install");
    assert.equal(await popup.textContent("#state-detail"), "Until then pages are left to the browser, which loads them as it would without lanefetch.");
    assert.equal(await popup.isChecked("#toggle"), true);
  } finally {
    await browser.close();
  }
});

test("a proxy set in the browser keeps lanefetch off, and the popup says why", async () => {
  const browser = await launch(freshProfile(true));
  try {
    await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
    // Loopback is never sent to a proxy by Chromium, so the page still loads (directly) with this setting.
    await browser.worker.evaluate(() =>
      chrome.proxy.settings.set({ value: { mode: "fixed_servers", rules: { singleProxy: { scheme: "http", host: "127.0.0.1", port: 9 } } }, scope: "regular" }),
    );
    await waitForGate(browser.worker, 0);
    sites.clearLog();
    const page = await browser.context.newPage();
    const url = `${sites.a.origin}/plain.html`;
    await openPage(page, url);
    assert.deepEqual(await imageFetchedBy(), ["browser"]);
    const tabId = await tabIdOf(browser.worker, url);
    const s = await tabStatus(browser.context, tabId);
    assert.equal(s.tab.intercepting, false);
    assert.match(s.tab.problem ?? "", /set to use a proxy/);
    const popup = await browser.context.newPage();
    await openPopup(popup, tabId);
    assert.match((await popup.textContent("#notice")) ?? "", /set to use a proxy/);

    // Proxy back to direct: the gate returns and the next load goes through the helper.
    await browser.worker.evaluate(() => chrome.proxy.settings.clear({ scope: "regular" }));
    // The gate's block rule is written only from the state the cleared proxy left (no proxy, the site active, the
    // helper connected: chromium-main.ts refreshRules, tab-policy.ts gate), so it is the condition to wait for.
    await waitForGate(browser.worker, 1);
    sites.clearLog();
    const again = await browser.context.newPage();
    const next = `${sites.a.origin}/plain.html?2`;
    await openPage(again, next);
    const owners = await imageFetchedBy();
    assert.deepEqual(owners, ["helper"], owners.join() === "helper" ? undefined : `the next page: ${await tabReport(browser, next)}`);
  } finally {
    await browser.close();
  }
});

test("the browser's own proxy auto-detection keeps lanefetch off where the helper finds a WPAD server; the popup names it", async () => {
  // The helper's WPAD lookup answers through LANEFETCH_TEST_WPAD (the harness says none elsewhere); the extension
  // tells the helper the browser auto-detects (auto_detect), and the helper looks `wpad` up and says it found one.
  const browser = await launch(freshProfile(true), { env: { LANEFETCH_TEST_WPAD: "wpad.test.example" } });
  try {
    await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
    await waitForHelper(browser.context);
    // Loopback is never sent to a proxy by Chromium, so the page still loads (directly) with this setting.
    await browser.worker.evaluate(() => chrome.proxy.settings.set({ value: { mode: "auto_detect" }, scope: "regular" }));
    await waitForGate(browser.worker, 0);
    sites.clearLog();
    const page = await browser.context.newPage();
    const url = `${sites.a.origin}/plain.html`;
    await openPage(page, url);
    assert.deepEqual(await imageFetchedBy(), ["browser"], await tabReport(browser, url));
    const tabId = await tabIdOf(browser.worker, url);
    const s = await tabStatus(browser.context, tabId);
    assert.equal(s.tab.intercepting, false);
    const said = /^The browser is set to detect a proxy automatically, and automatic proxy detection found a WPAD server at wpad\.test\.example: lanefetch stays off/;
    assert.match(s.tab.problem ?? "", said);
    const popup = await browser.context.newPage();
    await openPopup(popup, tabId);
    assert.match((await popup.textContent("#notice")) ?? "", said);
  } finally {
    await browser.close();
  }
});

test("a system proxy (in the environment Chromium and its helper share), which the browser follows by default, keeps lanefetch off; the popup names it", async () => {
  // No desktop settings here: with its default proxy setting ("system") Chromium reads these, as the helper does.
  const browser = await launch(freshProfile(true), { env: { http_proxy: "http://127.0.0.1:9", https_proxy: "http://127.0.0.1:9" } });
  try {
    await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }], { gate: false });
    await waitForHelper(browser.context); // its hello said where the proxy is set
    await waitForGate(browser.worker, 0);
    sites.clearLog();
    const page = await browser.context.newPage();
    const url = `${sites.a.origin}/plain.html`;
    await openPage(page, url); // loopback: Chromium never sends it to a proxy, so it loads (directly)
    assert.deepEqual(await imageFetchedBy(), ["browser"], await tabReport(browser, url));
    const tabId = await tabIdOf(browser.worker, url);
    const s = await tabStatus(browser.context, tabId);
    assert.equal(s.tab.intercepting, false);
    const said = /^This system is set to use a proxy \(127\.0\.0\.1:9 \(https_proxy in the environment\)\), which the browser follows: lanefetch stays off/;
    assert.match(s.tab.problem ?? "", said);
    const popup = await browser.context.newPage();
    await openPopup(popup, tabId);
    assert.match((await popup.textContent("#notice")) ?? "", said);
  } finally {
    await browser.close();
  }
});

test("the options page lists enabled sites and removes them", async () => {
  const browser = await launch(freshProfile(true)); // the gate (waited for below) blocks only with a helper to take the pages
  try {
    await setSites(browser.worker, [{ scope: "domain", name: "example.com" }, { scope: "host", name: "www.example.org" }]);
    const page = await browser.context.newPage();
    await page.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    await page.waitForSelector("body[data-ready=true]");
    const rows = async (): Promise<string[]> => page.$$eval("#sites tbody tr", (trs) => trs.map((tr) => (tr as HTMLElement).dataset.site ?? ""));
    assert.deepEqual(await rows(), ["domain:example.com", "host:www.example.org"]);
    await page.click('tr[data-site="domain:example.com"] button');
    await page.waitForFunction(() => document.querySelectorAll("#sites tbody tr").length === 1);
    assert.deepEqual(await rows(), ["host:www.example.org"]);
    await waitForGate(browser.worker, 1);
    const stored = await browser.worker.evaluate(() => chrome.storage.local.get("sites"));
    assert.deepEqual((stored.sites as { name: string }[]).map((x) => x.name), ["www.example.org"]);
  } finally {
    await browser.close();
  }
});

test("the options page a new user meets says the helper is missing (the command to run as code), and shows its cache and interfaces once it is installed", async () => {
  const browser = await launch(freshProfile(false));
  try {
    const page = await browser.context.newPage();
    await page.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    await page.waitForFunction(() => /^Cache unavailable\. Helper not installed/.test(document.querySelector("#cache-state")?.textContent ?? ""));
    assert.match((await page.textContent("#interfaces-state")) ?? "", /^Interfaces unavailable\. Helper not installed/);
    // The command to type shown as code, as the popup shows it, not between backticks.
    for (const id of ["#cache-state", "#interfaces-state"]) {
      assert.doesNotMatch((await page.textContent(id)) ?? "", /`/, id);
      assert.equal(await page.textContent(`${id} code`), "lanefetch install", id);
    }
    execFileSync(helperCli, ["install", "--browser", "chromium", "--chromium-user-data-dir", browser.userDataDir], { stdio: "pipe" });
    // No reload: the page asks again while the helper could not be asked.
    await page.waitForFunction(() => /^\d+ entries/.test(document.querySelector("#cache-state")?.textContent ?? ""), undefined, { timeout: 20000 });
    await page.waitForFunction(() => document.querySelector("#interfaces")?.hasAttribute("hidden") === false, undefined, { timeout: 20000 });
    assert.equal(await page.textContent("#interfaces-state"), "");
  } finally {
    await browser.close();
  }
});
