// A racing tab's long document leaves the browser's own connection warm (intercept/document-arrival.ts), in real
// Chromium: the tab's Network domain is off until its page loaded (debugger-sessions.ts), so the document's bytes are
// not counted; webRequest says when its first and last bytes came, and a body that took three flights or more warmed
// its connection. The script the page asks for after its load then goes to that connection (the browser's, reused),
// its image to the helper, as for a tab whose Network is on (site-on.test.ts). Loopback's round trip is a
// millisecond: the document trickled over 400 ms spans hundreds of them. (Fails without the webRequest feed: the
// script then goes to the helper.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openPage, startRacing, stopRacing, tabIdOf, tabStatus, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { siteOptions, type Sites } from "../support/test-site.js";

let sites: Sites;
let browser: Browser;

before(async () => ({ sites, browser } = await startRacing()));
after(() => stopRacing({ sites, browser }));

test("a racing tab's long document, trickled in: the next script goes to the browser's warm connection", async () => {
  // Every answer held back (as attach-race.test.ts): the document's head comes long after the attach ended, as on a
  // slow link; without it the navigation may commit first and the page is left to the browser.
  siteOptions.delayMs = 700;
  sites.clearLog();
  const page = await browser.context.newPage();
  const url = `${sites.a.origin}/long.html?trickle=400`;
  await openPage(page, url);
  await page.waitForFunction(() => (window as unknown as { __classic?: string }).__classic !== undefined, undefined, { timeout: 20000 });
  await page.waitForFunction(() => ((window as unknown as { __longImage?: number }).__longImage ?? 0) > 0, undefined, { timeout: 20000 });
  const traceNow = async (): Promise<string[]> => (await browser.worker.evaluate(() =>
    (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? [])).map(([label]) => label);
  // Network was off while the page loaded (so the document's bytes were never counted): on only after the load.
  await eventually("Network on after the load", async () => (await traceNow()).includes("network: on after the load"));
  assert.ok(!(await traceNow()).includes("event navigation_blocked"), "the navigation raced, not blocked");
  const doc = sites.log.find((r) => r.path.startsWith("/long.html"));
  const script = sites.log.find((r) => r.path === "/js/classic.js");
  const image = sites.log.find((r) => r.path === "/img/13.png");
  const log = JSON.stringify(sites.log.map((r) => [r.path, r.owner.kind, r.connection]));
  assert.equal(doc?.owner.kind, "browser", "a loopback page's document is the browser's");
  assert.equal(script?.owner.kind, "browser", `the script went to the browser (log: ${log})`);
  assert.equal(script.connection, doc.connection, "on the document's own connection, reused");
  assert.equal(image?.owner.kind, "helper", "an image is never offered to the browser's connection");
  const s = await tabStatus(browser.context, await tabIdOf(browser.worker, url));
  assert.equal(s.counts.passed.browser_warm_connection, 1, JSON.stringify(s.counts));
  await page.close();
});
