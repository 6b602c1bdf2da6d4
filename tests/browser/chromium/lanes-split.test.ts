// Split downloads in real Chromium with the real helper: the options page lists the helper's interfaces, refuses bad
// input with the reason, and saves a policy into the helper's policy file; with "split large downloads" on, a page's
// fetch of a large file arrives exact, was fetched by the helper as byte ranges, and its timing record has lanes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EXTENSION_ID, freshProfile, launch, openPage, setSites, tabIdOf, tabTimings } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { screenshot, seriousAxeViolations } from "../support/ui-checks.js";
import { bigBody, startSites, type Sites } from "../support/test-site.js";

let sites: Sites;
before(async () => {
  sites = await startSites();
});
after(() => sites.close());

const SIZE = 2_500_000;

test("options page: interfaces and their policy through the helper; a large fetch is split over the lanes", async () => {
  const browser = await launch(freshProfile(true));
  const policyFile = join(browser.userDataDir, "helper-config", "lanefetch", "interfaces.json");
  try {
    await setSites(browser.worker, [{ scope: "host", name: "127.0.0.1" }]);
    const options = await browser.context.newPage();
    await options.goto(`chrome-extension://${EXTENSION_ID}/options.html`);
    await options.waitForSelector('#interfaces tr[data-name="lo"]', { timeout: 20000 });
    // Loopback can never carry a lane: greyed, the reason in plain words, nothing to change.
    const lo = '#interfaces tr[data-name="lo"]';
    assert.match((await options.textContent(lo)) ?? "", /internal connection, which never reaches the internet/);
    assert.equal(await options.getAttribute(lo, "class"), "unusable");
    assert.equal(await options.isDisabled(`${lo} input.weight`), true);
    assert.doesNotMatch((await options.textContent("main")) ?? "", /\(loopback\)/);
    assert.match((await options.textContent("#interfaces-file")) ?? "", /helper-config\/lanefetch\/interfaces\.json/);
    assert.equal(await options.isVisible("#interfaces-file"), false, "the file's path only for who asks");
    // Every input has an accessible name; axe-core finds nothing serious.
    const unnamed = await options.$$eval("#interfaces input", (els) => els.filter((e) => !e.getAttribute("aria-label")).length);
    assert.equal(unnamed, 0);
    assert.deepEqual(await seriousAxeViolations(options), []);
    await screenshot(options, "options");

    // A connection that can carry lanes (this machine's first other than loopback).
    const name = await options.$eval('#interfaces tr[data-name]:not([data-permanent])', (e) => (e as HTMLElement).dataset.name ?? "");
    const row = `#interfaces tr[data-name="${name}"]`;
    // Bad input: the reason in the row, nothing sent, what was typed kept.
    await options.fill(`${row} input.weight`, "0");
    assert.match((await options.textContent(`${row} .message`)) ?? "", /Not saved yet/, "typing shows the change is not saved yet");
    await options.press(`${row} input.weight`, "Enter");
    assert.match((await options.textContent(`${row} .message`)) ?? "", /Weight must be a number above 0/);
    assert.equal(await options.inputValue(`${row} input.weight`), "0");
    assert.ok(!existsSync(policyFile));

    // Saved as it changes: the row is drawn again from the helper's answer and says "Saved".
    await options.fill(`${row} input.weight`, "2");
    await options.fill(`${row} input.cap`, "5");
    await options.press(`${row} input.cap`, "Enter");
    await options.waitForSelector(`${row}[data-saved]`, { timeout: 20000 });
    assert.equal(await options.textContent(`${row} .message`), "Saved");
    assert.equal(await options.inputValue(`${row} input.cap`), "5");
    assert.equal(await options.inputValue(`${row} input.weight`), "2");
    await screenshot(options, "options-saved");
    const saved = (JSON.parse(readFileSync(policyFile, "utf8")) as { interfaces: Record<string, unknown> }).interfaces[name];
    assert.deepEqual(saved, { enabled: true, weight: 2, metered: false, daily_cap_bytes: 5_000_000 });

    // Off by default; turned on from the options page.
    assert.equal(await options.isChecked("#split-large"), false);
    await options.check("#split-large");
    await eventually("the options page stored the switch", () => browser.worker.evaluate(async () =>
      (await chrome.storage.local.get("splitLargeDownloads")).splitLargeDownloads === true));

    sites.clearLog();
    const url = `${sites.a.origin}/download.html?size=${SIZE}`;
    const page = await browser.context.newPage();
    await openPage(page, url);
    const got = (await (await page.waitForFunction(() => (window as { __download?: unknown }).__download, null, { timeout: 60000 })).jsonValue()) as {
      bytes: number; sha256: string;
    };
    assert.deepEqual(got, { bytes: SIZE, sha256: createHash("sha256").update(bigBody(SIZE)).digest("hex") });
    const hits = sites.log.filter((r) => r.path === `/big/${SIZE}.bin`);
    assert.ok(hits.length >= 2 && hits.every((r) => r.owner.kind === "helper" && String(r.headers.range).startsWith("bytes=")),
      JSON.stringify(hits.map((r) => [r.owner.kind, r.headers.range])));

    const tabId = await tabIdOf(browser.worker, url);
    let recordId = "";
    const lanes = await eventually("the timing record carries the lanes", async () => {
      const record = (await tabTimings(browser.context, tabId)).records.find((r) => r.url.endsWith(`/big/${SIZE}.bin`));
      recordId = record?.id ?? "";
      return record?.timing?.lanes;
    }, { timeoutMs: 20000, everyMs: 200 });
    assert.ok(lanes.length >= 1, "the timing record carries the lanes");
    // Loopback: one lane on the default route (null in the protocol), every body byte on it.
    assert.deepEqual(lanes.map((l) => [l.interface, l.bytes]), [[null, SIZE]]);

    // The timing page shows the lanes of the selected request, and the HAR carries them.
    const panel = await browser.context.newPage();
    await panel.goto(`chrome-extension://${EXTENSION_ID}/timing.html?tab=${tabId}`);
    await panel.click(`[id="req-${recordId}"]`, { timeout: 20000 });
    await panel.waitForFunction(() => /Lanes \(split over 1 interface\)/.test(document.querySelector("#details")?.textContent ?? ""));
    assert.match((await panel.textContent("#details table.lanes")) ?? "", /default route.*ok$/, "one row: the default route lane, not down");
    const download = panel.waitForEvent("download");
    await panel.click("#export");
    const har = JSON.parse(readFileSync(await (await download).path(), "utf8")) as {
      log: { entries: { request: { url: string }; _lanefetch: { lanes: { interface: string | null; bytes: number }[] | null } }[] };
    };
    const entry = har.log.entries.find((e) => e.request.url.endsWith(`/big/${SIZE}.bin`));
    assert.deepEqual(entry?._lanefetch.lanes?.map((l) => [l.interface, l.bytes]), [[null, SIZE]]);
  } finally {
    await browser.close();
  }
});
