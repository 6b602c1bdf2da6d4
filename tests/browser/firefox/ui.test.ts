// The extension's pages as a person meets them in real Firefox ESR, as popup.test.ts, panel.test.ts and
// lanes-split.test.ts do in Chromium: the popup's state line for an accelerated page, a page left to the browser on a
// fast connection and a missing helper; the timing page from 600 to 1400 px with every mark in the legend; the
// options page's labelled inputs and its words on the cache; axe-core finds nothing serious or critical on any
// of them. Screenshots: tests/artifacts/firefox-*.png (look at them).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { enabledFirefox, freshHome, launchFirefox, setSites, tabIdOf, tabStatus, waitForHelper, waitForResult, type Firefox } from "../support/firefox-harness.js";
import { OriginServer } from "../support/origin-server.js";
import { startSites, testSite, type Sites } from "../support/test-site.js";
import { artifactsDir, AXE_LOAD_EXPRESSION, AXE_SERIOUS_EXPRESSION, pollUntil, type AxeViolation } from "../support/ui-checks.js";

let sites: Sites;
let ff: Firefox;

before(async () => {
  sites = await startSites();
  ff = await enabledFirefox();
});
after(async () => {
  await ff.close();
  await sites.close();
});

async function shot(on: Firefox, name: string, width: number, height: number): Promise<void> {
  mkdirSync(artifactsDir, { recursive: true });
  // Two frames: the last render (and the switch's 0.15 s transition) is painted before the capture (a first run
  // caught the switch before it was drawn on).
  await on.inExtension("new Promise((ok) => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => ok(1))), 200))");
  writeFileSync(join(artifactsDir, `firefox-${name}.png`), await on.screenshotExtension(width, height));
}

async function noSeriousViolations(on: Firefox, what: string): Promise<void> {
  assert.equal(await on.inExtension<string>(AXE_LOAD_EXPRESSION), "object");
  const violations = await on.inExtension<AxeViolation[]>(AXE_SERIOUS_EXPRESSION);
  assert.deepEqual(violations, [], `axe-core, ${what}: ${JSON.stringify(violations, null, 1)}`);
}

/** The extension's tab shows the popup for tab `tabId`; returns its state line once it matches. */
async function popupLine(on: Firefox, tabId: number, pattern: RegExp): Promise<string> {
  await on.showInExtension(`popup.html?tabId=${tabId}`);
  await on.screenshotExtension(340, 420); // the popup's own size
  return pollUntil(`the popup's state line matching ${String(pattern)}`, async () => {
    const text = await on.inExtension<string>(`document.body.dataset.ready !== undefined ? document.getElementById("state-line").textContent : ""`);
    return pattern.test(text) ? text : undefined;
  });
}

test("popup, accelerated page: how many requests went through lanefetch; the switch works from the keyboard; nothing serious for axe-core", async () => {
  const page = await ff.browser.newPage();
  const url = `${sites.a.origin}/many.html?n=12`;
  await page.goto(url);
  await waitForResult<number[]>(page, "window.__widths");
  const tabId = await tabIdOf(ff, url);
  const line = await popupLine(ff, tabId, /^Faster: /);
  assert.match(line, /^Faster: (all \d+|\d+ of \d+) requests through lanefetch$/);
  const main = await ff.inExtension<{ role: string | null; checked: boolean; text: string }>(`({
    role: document.getElementById("toggle").getAttribute("role"), checked: document.getElementById("toggle").checked,
    text: document.querySelector("main").textContent })`);
  assert.equal(main.role, "switch");
  assert.equal(main.checked, true);
  assert.doesNotMatch(main.text, /\b0 ms\b/, "no zero time saved");
  await shot(ff, "popup-faster", 340, 420);
  await noSeriousViolations(ff, "popup, faster");
  // Keyboard only: the switch is the first thing Tab reaches, Space turns the site off, and on again.
  await ff.pressKeys("\uE004"); // Tab
  assert.equal(await ff.inExtension<string>("document.activeElement?.id ?? ''"), "toggle");
  await ff.pressKeys("\uE00D"); // Space
  await pollUntil("the popup says the site is off", async () =>
    (await ff.inExtension<string>(`document.getElementById("state-line").textContent`)) === "Off for this site" || undefined);
  assert.equal(await ff.inExtension<boolean>(`document.getElementById("toggle").checked`), false);
  await shot(ff, "popup-off", 340, 420);
  await ff.pressKeys("\uE00D");
  await pollUntil("the site on again", async () => (await ff.inExtension<boolean>(`document.getElementById("toggle").checked`)) || undefined);
  await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }]);
  await ff.showInExtension("options.html");
  await page.close();
});

test("popup, fast connection: the page is left to the browser and the popup says it is not needed here", async () => {
  // An origin the helper never connected to, with the rule in force: the helper's preconnect shows it fast (loopback).
  const fresh = new OriginServer(testSite, "127.0.0.4", sites.log);
  await fresh.listen();
  await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }, { scope: "host", name: "127.0.0.4" }], { accelerateFastLinks: false });
  try {
    const page = await ff.browser.newPage();
    const url = `${fresh.origin}/many.html?n=6`;
    await page.goto(url);
    await waitForResult<number[]>(page, "window.__widths");
    const line = await popupLine(ff, await tabIdOf(ff, url), /^Not needed here/);
    assert.equal(line, "Not needed here: this connection is already fast");
    const text = await ff.inExtension<string>(`document.querySelector("main").textContent`);
    assert.doesNotMatch(text, /pipelin|latency|loopback|fast link/i, "plain words");
    await shot(ff, "popup-not-needed", 340, 420);
    await noSeriousViolations(ff, "popup, not needed");
    await ff.showInExtension("options.html");
    await page.close();
  } finally {
    await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }]);
    await fresh.close();
  }
});

test("popup, Firefox set to auto-detect proxy settings where the helper finds a WPAD server: lanefetch stays off and says why", async () => {
  // network.proxy.type 4: "Auto-detect proxy settings for this network" (proxyType "autoDetect", read every 3 s);
  // the helper's WPAD lookup answers through LANEFETCH_TEST_WPAD (the harness says none elsewhere)
  const wpad = await launchFirefox(freshHome(true), { prefs: { "network.proxy.type": 4 }, env: { LANEFETCH_TEST_WPAD: "wpad.test.example" } });
  try {
    await setSites(wpad, [{ scope: "domain", name: "127.0.0.1" }]);
    await waitForHelper(wpad);
    const page = await wpad.browser.newPage();
    const url = `${sites.a.origin}/plain.html`;
    const said = /^The browser is set to detect a proxy automatically, and automatic proxy detection found a WPAD server at wpad\.test\.example: lanefetch stays off/;
    await page.goto(url);
    const tabId = await tabIdOf(wpad, url);
    // The helper is told of the setting as it is read, and answers after its lookup
    await pollUntil("the popup's reason", async () => {
      const problem = (await tabStatus(wpad, tabId)).tab.problem ?? "";
      return said.test(problem) ? problem : undefined;
    });
    sites.clearLog();
    await page.reload();
    await page.waitForFunction("document.images[0] && document.images[0].naturalWidth === 9", { timeout: 20000 });
    assert.ok(sites.log.length > 0, "the page loaded again");
    assert.deepEqual(sites.log.filter((r) => r.owner.kind === "helper"), [], "nothing fetched by the helper");
  } finally {
    await wpad.close();
  }
});

test("popup, no helper installed: the first line says what to run", async () => {
  const bare = await launchFirefox(freshHome(false));
  try {
    await setSites(bare, [{ scope: "domain", name: "127.0.0.1" }]);
    await waitForHelper(bare, "not_installed");
    const page = await bare.browser.newPage();
    const url = `${sites.a.origin}/plain.html`;
    await page.goto(url);
    await page.waitForFunction("document.images[0] && document.images[0].naturalWidth === 9", { timeout: 20000 });
    assert.equal(await popupLine(bare, await tabIdOf(bare, url), /^Helper/), "Helper not installed — run lanefetch install");
    assert.equal(await bare.inExtension<string>(`document.querySelector("#state-line code").textContent`), "lanefetch install");
    await shot(bare, "popup-no-helper", 340, 420);
    await noSeriousViolations(bare, "popup, no helper");
  } finally {
    await bare.close();
  }
});

test("timing page from 1400 down to 600 px: Size, Time and the waterfall stay on screen; every mark in the legend", async () => {
  const page = await ff.browser.newPage();
  const url = `${sites.a.origin}/many.html?n=12`;
  await page.goto(url);
  await waitForResult<number[]>(page, "window.__widths");
  const tabId = await tabIdOf(ff, url);
  await ff.showInExtension(`timing.html?tab=${tabId}`);
  await pollUntil("the timing page shows the load with its load event", async () =>
    (await ff.inExtension<boolean>(`document.body.dataset.ready === "true" && document.querySelectorAll("#waterfall .row[data-id]").length >= 13
      && !document.getElementById("summary").textContent.includes("loading…")`)) || undefined);
  const legend = await ff.inExtension<string>(`document.getElementById("legend").textContent`);
  assert.match(legend, /DOMContentLoaded/, "the legend names the DOMContentLoaded line");
  assert.match(legend, /\bload \(/, "the legend names the load line");
  // A Firefox record in the details pane: its type, MIME type, both heads, and the body's size apart from the wire's.
  await ff.inExtension(`(document.querySelector('#waterfall .row[data-id] .name[title*="/img/5.png"]').closest(".row").click(), 1)`);
  const details = await pollUntil("the details pane shows the image", async () => {
    const text = await ff.inExtension<string>(`document.getElementById("details").innerText`);
    return /\/img\/5\.png/.test(text) ? text : undefined;
  });
  assert.match(details, /Type\s+image/);
  assert.match(details, /MIME type\s+image\/png/);
  assert.match(details, /Request headers \([1-9]\d*\)/);
  assert.match(details, /Response headers [^\n]*\([1-9]\d*\)/);
  const body = /Body\s+(\d+) B/.exec(details)?.[1];
  const wire = /On the wire\s+(\d+) B/.exec(details)?.[1];
  assert.ok(body && wire && Number(wire) > Number(body), `body ${body} B, on the wire ${wire} B (the head too): ${details}`);
  for (const width of [1400, 900, 600]) {
    await shot(ff, `timing-${width}`, width, 820); // lays the page out at this width
    const edges = await ff.inExtension<{ right: number; width: number }[]>(`[...document.querySelectorAll(
      "#waterfall .row.head > .c-size, #waterfall .row.head > .c-time, #waterfall .row.head > .track")]
      .map((e) => { const r = e.getBoundingClientRect(); return { right: r.right, width: r.width }; })`);
    assert.equal(edges.length, 3);
    for (const e of edges) assert.ok(e.width > 0 && e.right <= width, `at ${width} px: ${JSON.stringify(edges)}`);
    assert.ok((edges[2]?.width ?? 0) >= 140, `at ${width} px the waterfall keeps room: ${JSON.stringify(edges)}`);
  }
  await ff.screenshotExtension(1500, 820);
  await noSeriousViolations(ff, "timing page");
  await ff.showInExtension("options.html");
  await page.close();
});

test("options page: every interface input labelled, loopback greyed with the reason, a change saved as made; nothing serious for axe-core", async () => {
  await ff.showInExtension("options.html");
  await pollUntil("the options page lists the interfaces", async () =>
    (await ff.inExtension<boolean>(`!!document.querySelector('#interfaces tr[data-name="lo"]')`)) || undefined);
  // Firefox caches what the helper's proxy returns; the helper keeps none: the page says so rather than "Asking the
  // helper…" for ever (the Chromium background answers the cache request, Firefox's has nothing to answer).
  const cache = await ff.inExtension<{ about: string; visible: string[] }>(`({ about: document.getElementById("cache-about").textContent,
    visible: ["cache-state", "cache-where", "cache-clear"].filter((id) => !document.getElementById(id).hidden) })`);
  assert.match(cache.about, /Firefox's own cache/);
  assert.deepEqual(cache.visible, []);
  const o = await ff.inExtension<{ unnamed: number; inputs: number; lo: string; loClass: string | null }>(`({
    unnamed: [...document.querySelectorAll("#interfaces input")].filter((e) => !e.getAttribute("aria-label")).length,
    inputs: document.querySelectorAll("#interfaces input").length,
    lo: document.querySelector('#interfaces tr[data-name="lo"]').textContent,
    loClass: document.querySelector('#interfaces tr[data-name="lo"]').getAttribute("class") })`);
  assert.ok(o.inputs > 0);
  assert.equal(o.unnamed, 0);
  assert.match(o.lo, /internal connection, which never reaches the internet/);
  assert.equal(o.loClass, "unusable");
  await shot(ff, "options", 1000, 900);
  await noSeriousViolations(ff, "options page");
  // A change is saved as it is made, and the row says so (the helper writes the policy into this test's HOME).
  const name = await ff.inExtension<string>(`document.querySelector('#interfaces tr[data-name]:not([data-permanent])').dataset.name`);
  const row = `#interfaces tr[data-name="${name}"]`;
  await ff.inExtension(`(() => { const w = document.querySelector(${JSON.stringify(`${row} input.weight`)}); w.value = "2";
    w.dispatchEvent(new Event("input", { bubbles: true })); w.dispatchEvent(new Event("change", { bubbles: true })); return 1; })()`);
  const saved = await pollUntil("the row says Saved", async () => {
    const r = await ff.inExtension<{ saved: boolean; message: string; weight: string }>(`(() => { const tr = document.querySelector(${JSON.stringify(row)});
      return { saved: tr.dataset.saved === "true", message: tr.querySelector(".message").textContent, weight: tr.querySelector("input.weight").value }; })()`);
    return r.saved ? r : undefined;
  });
  assert.deepEqual(saved, { saved: true, message: "Saved", weight: "2" });
  await shot(ff, "options-saved", 1000, 900);
});
