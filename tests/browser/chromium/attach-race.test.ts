// A navigation that races the debugger attach (intercept/attach-race.ts), in real Chromium: where the host's round
// trip is well above what an attach takes, the gate lets the navigation through (an allow rule) and the tab is
// attached from the navigation's start; no navigation is blocked, and every subresource is the helper's. The page
// was never loaded, so the helper says it has no flight for it (flight_plan); a tab is then navigated again so that
// its document comes through the helper, but only within half the host's round trip of the navigation's start, and
// loopback's is far shorter than any answer: the page is left as it goes (the tab policy's table tests hold the
// navigation again; the helper's answer both ways is test_prefetch_host.py's). Loopback has no such round trip, so the test makes both sides of the race what they are
// on a slow link: attaches stored as instant (startRacing) and every response of the origin held back (the document comes back long after the attach ended).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { EXTENSION_ID, openPage, settledPageLoad, startRacing, stopRacing, tabIdOf, tabStatus, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { siteOptions, type Sites } from "../support/test-site.js";

let sites: Sites;
let browser: Browser;

before(async () => ({ sites, browser } = await startRacing()));
after(() => stopRacing({ sites, browser }));

test("a host that races the attach: not blocked, attached from the navigation's start, its subresources the helper's", async () => {
  let rules: string[] = [];
  siteOptions.delayMs = 700;
  sites.clearLog();
  const page = await browser.context.newPage();
  const url = `${sites.a.origin}/many.html?n=3`;
  await openPage(page, url);
  await page.waitForFunction(() => (window as unknown as { __widths?: number[] }).__widths?.length === 3, undefined, { timeout: 20000 });

  const trace = await browser.worker.evaluate(() => (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? []);
  const events = trace.map(([label]) => label);
  assert.ok(!events.includes("event navigation_blocked"), `no navigation was blocked: ${events.join(", ")}`);
  const told = events.indexOf("event flight_plan");
  assert.ok(told >= 0, `the helper said whether the page has a flight: ${events.join(", ")}`);
  assert.equal(events.filter((e) => e === "start navigate").length, 0, "the answer came too late to navigate again");
  const owner = (path: RegExp): string[] => [...new Set(sites.log.filter((r) => path.test(r.path)).map((r) => r.owner.kind))];
  // (A loopback page's document is the browser's either way: accelerator.ts.)
  assert.deepEqual(owner(/^\/many\.html/), ["browser"]);
  assert.equal(sites.log.filter((r) => /^\/many\.html/.test(r.path)).length, 1, "the document asked once");
  assert.deepEqual(owner(/\?many$/), ["helper"], "every image is the helper's");
  assert.equal(sites.log.filter((r) => /\?many$/.test(r.path)).length, 3, "each asked once");

  const tabId = await tabIdOf(browser.worker, url);
  assert.equal((await tabStatus(browser.context, tabId)).tab.intercepting, true);
  const probe = await browser.context.newPage();
  await probe.goto(`chrome-extension://${EXTENSION_ID}/timing.html`);
  const data = await settledPageLoad(probe, tabId);
  assert.equal(data.load.url, url, "the page load began at the navigation (the document was not paused)");
  assert.equal(data.records.filter((r) => r.url.endsWith("?many") && r.outcome === "fulfilled").length, 3);

  // Its Network domain, left for later while the navigation raced, is turned on once the page loaded.
  siteOptions.delayMs = 0;
  const traceNow = async (): Promise<string[]> => (await browser.worker.evaluate(() =>
    (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? [])).map(([label]) => label);
  await eventually("Network is on after the load", async () => (await traceNow()).includes("network: on after the load"));

  // The attach was measured: a real one is slower than the stored 0 ms, so this loopback host races no more.
  const stored = await browser.worker.evaluate(async () => (await chrome.storage.local.get("attachDurationsMs")).attachDurationsMs as number[]);
  assert.equal(stored.length, 2);
  assert.ok((stored[1] ?? 0) > 0, JSON.stringify(stored));
  await eventually("the racing host's allow rule is gone", async () => (rules = await browser.worker.evaluate(async () =>
    (await chrome.declarativeNetRequest.getSessionRules()).map((r) => r.action.type))).join() === "block", {}, () => rules);
  await probe.close();
  await page.close();
});
