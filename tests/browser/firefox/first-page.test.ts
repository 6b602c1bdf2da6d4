// A new user's first page in real Firefox ESR (proxy mode): a fresh helper that never saw this Firefox knows the
// Accept of its images at once (intercept/browser-fields-probe.ts: the extension's own requests, cancelled before
// they are sent), so the background image the helper expects from the page's first stylesheet and its
// document is prefetched while a second stylesheet holds Firefox's layout back (the test site answers that one
// only once the image was asked for, or after 4 s), and Firefox's request is answered from the flight. Without the
// probe the image fields came only with Firefox's first image request, after the layout: nothing could fly.
// One browser for the file.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { PageLoadData } from "../../../extension/src/timings/timing-store.js";
import { firefoxWithSites, tabIdOf } from "../support/firefox-harness.js";
import { eventually } from "../support/eventually.js";

const fx = firefoxWithSites();

test("a fresh helper's first page: the background image it expects is answered from the prefetch flight", async () => {
  // The probe's message went to the helper before the page (the helper takes messages in order)
  const probe = await eventually("the extension's fields probe", () => fx.ff.inExtension<{ sent: boolean; kinds: string[] } | null>(
    "browser.runtime.getBackgroundPage().then((bg) => bg.lanefetchFieldsProbe ?? null)"));
  assert.deepEqual(probe, { sent: true, kinds: ["image", "font", "style"] });
  const page = await fx.ff.browser.newPage();
  const url = `${fx.sites.a.origin}/held.html`;
  fx.sites.clearLog();
  await page.goto(url);
  const image = await eventually("the background image at the server", () => {
    const asked = fx.sites.log.filter((r) => r.path === "/img/22.png");
    return asked.length > 0 ? asked : undefined;
  });
  const [first] = image;
  assert.ok(first !== undefined && image.length === 1, "the image reached the server once");
  assert.equal(first.owner.kind, "helper");
  const tabId = await tabIdOf(fx.ff, url);
  const cache = await eventually("the image's timing record", async () => {
    const data = await fx.ff.inExtension<PageLoadData | null>(`chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} })
      .then(({ loads }) => chrome.runtime.sendMessage({ type: "lanefetch/page-load", id: loads[0].id })).then((r) => r.data)`);
    const record = data?.records.find((r) => r.url.endsWith("/img/22.png"));
    return record?.timing?.cache ?? undefined;
  });
  assert.equal(cache, "prefetch", "Firefox's image request was answered from the flight");
  // The Accept the flight sent is the one Firefox sends its images with (fidelity compared it, the server saw it)
  assert.match(String(first.headers.accept), /^image\/avif,/);
  await page.close();
});
