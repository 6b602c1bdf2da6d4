// A page of an enabled site in real Chromium: every subresource kind arrives intact, fetched by the helper, and
// nothing but CORS preflights (and, for a loopback page, its document) reaches the origin servers from the browser itself.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { EXTENSION_ID, openPage, setSites, settledPageLoad, startSiteOn, stopSiteOn, tabIdOf, tabStatus, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import type { Sites } from "../support/test-site.js";

let sites: Sites;
let browser: Browser;

before(async () => ({ sites, browser } = await startSiteOn()));
after(() => stopSiteOn({ sites, browser }));

function notFromHelper(): string[] {
  return sites.log.filter((r) => r.owner.kind !== "helper").map((r) => `${r.method} ${r.host}${r.path} (${r.owner.kind})`);
}

test("main page: img, scripts, modules, CSS url(), fonts, fetch, XHR, cookies, redirect, gzip/br, SRI — via the helper", async () => {
  sites.clearLog();
  const page = await browser.context.newPage();
  const url = `${sites.a.origin}/index.html`;
  const other = sites.other.origin;
  await openPage(page, url);
  await page.waitForFunction(() => (window as unknown as { __results?: unknown }).__results !== undefined, undefined, { timeout: 20000 });
  const r = await page.evaluate(() => (window as unknown as { __results: Record<string, unknown> }).__results);
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.img, 17);
  assert.equal(r.crossImg, 23);
  assert.equal(r.redirected, 29, "redirect followed to the right image");
  assert.equal(r.classic, "same-origin classic");
  assert.equal(r.cross, "cross-origin classic");
  assert.deepEqual(r.compressed, [120000, 120000], "both compressed scripts decoded and ran");
  assert.equal(r.sri, "ran", "SRI-checked script with the right hash ran");
  assert.equal(r.sriBad, "blocked", "SRI still blocks a script with the wrong hash");
  assert.equal(r.fetch, true);
  assert.equal(r.xhr, true);
  assert.match(String(r.cookieEcho), /lf_http=1/, "HttpOnly cookie from a fulfilled Set-Cookie was stored and sent");
  assert.match(String(r.cookieEcho), /lf_js=2/);
  assert.equal(r.documentCookie, "lf_js=2", "HttpOnly stays hidden from the page");
  assert.equal(r.corsCredentialed, true);
  assert.equal(r.preflighted, true);
  assert.deepEqual(r.fonts, ["LfNoCors:error", "LfOk:loaded"], "CORS still enforced on fonts");
  assert.equal(r.cssBackground, `url("${other}/img/bg.png")`, "relative url() resolved against the stylesheet");
  assert.equal(r.cssRule, "applied");
  assert.equal(r.module, "dep+cross");
  // Every request of the load answered (the counters are kept as each is): nothing is still on its way.
  const tab = await tabIdOf(browser.worker, url);
  const probe = await browser.context.newPage();
  await probe.goto(`chrome-extension://${EXTENSION_ID}/timing.html`);
  await settledPageLoad(probe, tab);
  await probe.close();

  const seen = sites.log.map((x) => `${x.method} ${x.host}${x.path}`);
  const a = new URL(url).host;
  const b = new URL(other).host;
  for (const p of [`${a}/index.html`, `${b}/img/bg.png`, `${b}/mod/cross.mjs`, `${a}/redirect?to=/img/29.png`, `${a}/img/29.png`,
    `${b}/font/cors.ttf`, `${b}/font/nocors.ttf`, `${a}/js/sri-bad.js`, `${a}/js/gzip.js`, `${a}/js/br.js`, `${a}/echo-cookie`]) {
    assert.ok(seen.includes(`GET ${p}`), `${p} requested (got ${seen.join(", ")})`);
  }
  const s = await tabStatus(browser.context, tab);
  assert.deepEqual(notFromHelper().sort(), [`GET ${a}/index.html (browser)`, `OPTIONS ${b}/cors/data.txt (browser)`],
    `only the loopback page's document and the CORS preflight went from the browser (tab status: ${JSON.stringify(s)})`);
  assert.equal(s.helper.status, "connected");
  assert.equal(s.tab.intercepting, true);
  assert.equal(s.counts.passed.preflight, 1, JSON.stringify(s.counts));
  assert.equal(s.counts.passed.local_document, 1, JSON.stringify(s.counts));
  // The helper reads the loopback page's document as Chromium streams it and flies the images it names. A prefetched
  // redirect is never given to the browser (fidelity: status-without-referer, the prefetch carried no Referer), so
  // the redirect's path may reach the server once more, for the browser's own request: the only one asked twice.
  const twice = seen.filter((x, i) => seen.indexOf(x) !== i);
  assert.ok(twice.every((x) => x === `GET ${a}/redirect?to=/img/29.png` || x === `GET ${b}/cors/data.txt`), `asked twice: ${twice.join(", ")}`);
  const refusedRedirect = twice.filter((x) => x.includes("/redirect?")).length;
  assert.equal(s.counts.accelerated, sites.log.length - 2 - refusedRedirect, `${JSON.stringify(s.counts)} ${JSON.stringify(seen)}`);
  await page.close();
});

async function waitFor<T>(page: import("playwright-core").Page, expr: string, timeout = 20000): Promise<T> {
  await page.waitForFunction(expr, undefined, { timeout });
  return (await page.evaluate(expr));
}

test("same-site and cross-site (out-of-process) iframes load through the helper", async () => {
  sites.clearLog();
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/frames.html`);
  const frames = await waitFor<Record<string, { img: number; script: string; fetch: boolean }>>(
    page, "window.__frames && window.__frames.same && window.__frames.cross && window.__frames");
  for (const name of ["same", "cross"]) {
    assert.deepEqual(frames[name], { name, img: 31, script: "frame script", fetch: true }, name);
  }
  const crossFrameRequests = (): number => sites.log.filter((r) => r.host === sites.other.url().host && /frame=cross/.test(r.path)).length;
  await eventually("the cross-site frame's image and fetch reached the server", () => crossFrameRequests() >= 2, {}, () => sites.log.map((r) => r.path));
  assert.equal(crossFrameRequests(), 2);
  assert.deepEqual(notFromHelper().sort(), [
    `GET ${sites.a.url().host}/frames.html (browser)`,
    `GET ${sites.other.url().host}/frame.html?name=cross (browser)`,
    `GET ${sites.sameSite.url().host}/frame.html?name=same (browser)`,
  ].sort(), "only the (loopback) documents came from the browser");
  await page.close();
});

test("a cross-site frame's request is not answered from the helper's cache of the page's (the browser keys by the frame's site)", async () => {
  sites.clearLog();
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/frame-cache.html`);
  const got = await waitFor<{ img: number }>(page, "window.__frameCache && window.__frameCache.img !== undefined && window.__frameCache");
  assert.equal(got.img, 12);
  const asked = (): { owner: string }[] => sites.log.filter((r) => r.host === sites.other.url().host && r.path === "/cached/12.png")
    .map((r) => ({ owner: r.owner.kind }));
  // The page's copy (max-age=3600, kept by the helper under the page's site) would have answered the frame at once:
  // the frame's own request reaches the server, through the helper, as the browser's own would.
  await eventually("the frame's image reached the server too", () => asked().length >= 2, {}, () => asked());
  assert.deepEqual(asked(), [{ owner: "helper" }, { owner: "helper" }]);
  await page.close();
});

test("the site's own service worker: its fetches go through the helper", async () => {
  sites.clearLog();
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/sw.html`);
  const sw = await waitFor<Record<string, unknown>>(page, "window.__sw");
  assert.deepEqual(sw, { text: true, viaSw: "yes" });
  const viaSw = sites.log.filter((r) => r.path === "/data/400.txt?via=sw");
  assert.equal(viaSw.length, 1);
  assert.equal(viaSw[0]?.owner.kind, "helper", "the worker's fetch was taken by the helper");
  assert.ok(sites.log.some((r) => r.path === "/sw.js" && r.owner.kind === "helper"), "the worker script too");
  await page.close();
});

test("a CSP page: allowed resources via the helper, blocked ones never requested", async () => {
  sites.clearLog();
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/csp.html`);
  // Loaded (openPage waits for the load event: both images settled) and the allowed script ran.
  await page.waitForFunction(() => (window as unknown as { __cspScript?: string }).__cspScript !== undefined, undefined, { timeout: 20000 });
  const state = await page.evaluate(() => ({
    self: (document.getElementById("self") as HTMLImageElement).naturalWidth,
    blocked: (document.getElementById("blocked") as HTMLImageElement).naturalWidth,
    script: (window as unknown as { __cspScript?: string }).__cspScript,
  }));
  assert.deepEqual(state, { self: 11, blocked: 0, script: "ran" });
  assert.ok(!sites.log.some((r) => /csp=blocked/.test(r.path)), "CSP blocked the cross-site image before any request");
  assert.ok(sites.log.some((r) => r.path === "/img/11.png" && r.owner.kind === "helper"));
  await page.close();
});

test("many images of one origin: batched and pipelined on few helper connections", async () => {
  sites.clearLog();
  sites.a.dropConnections();
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/many.html?n=40`);
  const widths = await waitFor<number[]>(page, "window.__widths");
  assert.deepEqual(widths, Array.from({ length: 40 }, (_, i) => i + 2));
  const images = sites.log.filter((r) => /\?many$/.test(r.path));
  assert.equal(images.length, 40);
  assert.ok(images.every((r) => r.owner.kind === "helper"));
  const connections = new Set(images.map((r) => r.connection));
  const maxIndex = Math.max(...images.map((r) => r.indexOnConnection));
  assert.ok(maxIndex >= 5, `requests per helper connection: up to ${maxIndex} on ${connections.size} connections`);
  await page.close();
});

test("after a long document the browser loaded itself, a script goes to that warm connection; an image to the helper", async () => {
  sites.clearLog();
  const page = await browser.context.newPage();
  const url = `${sites.a.origin}/long.html`;
  await openPage(page, url);
  assert.equal(await waitFor<string>(page, "window.__classic"), "same-origin classic");
  assert.ok(await waitFor<number>(page, "window.__longImage") > 0, "the image loaded");
  const doc = sites.log.find((r) => r.path === "/long.html");
  const script = sites.log.find((r) => r.path === "/js/classic.js");
  const image = sites.log.find((r) => r.path === "/img/13.png");
  assert.equal(doc?.owner.kind, "browser", "a loopback page's document is the browser's");
  assert.equal(script?.owner.kind, "browser", `the script went to the browser (log: ${JSON.stringify(sites.log.map((r) => [r.path, r.owner.kind]))})`);
  assert.equal(script.connection, doc.connection, "on the document's own connection, reused");
  assert.equal(image?.owner.kind, "helper", "an image is never offered to the browser's connection");
  const s = await tabStatus(browser.context, await tabIdOf(browser.worker, url));
  assert.equal(s.counts.passed.browser_warm_connection, 1, JSON.stringify(s.counts));
  await page.close();
});

test("the fields probe gives the helper Chromium's Accept of images, stylesheets and scripts, and leaves nothing behind", async () => {
  // It ran at the first navigation intercepted after the helper connected (the main page's, above, or this one).
  const page = await browser.context.newPage();
  await openPage(page, `${sites.a.origin}/plain.html`);
  type Probe = { sent: boolean; kinds: string[] };
  const probe = await eventually("the fields probe ran", async () =>
    browser.worker.evaluate(() => (globalThis as { lanefetchFieldsProbe?: Probe }).lanefetchFieldsProbe ?? false), { everyMs: 100 });
  assert.deepEqual(probe, { sent: true, kinds: ["image", "style", "script"] });
  assert.equal(await browser.worker.evaluate(() => chrome.offscreen.hasDocument()), false, "its offscreen document is closed");
  // The probe's name is mapped to the test site here (startSiteOn): a request that escaped would be in its log.
  assert.deepEqual(sites.log.filter((r) => r.host.startsWith("fields.")).map((r) => r.path), [],
    "no probe request reached a server");
  await page.close();
});

test("a *.localhost page: its loopback subresources go through the helper, which reaches this machine without DNS", async () => {
  // Chromium answers *.localhost itself; this machine's resolver (glibc, /etc/hosts) does not know b.a.localhost, and
  // the helper no longer asks it (engine/host_names.py): before, the helper failed the name.
  await setSites(browser.worker, [{ scope: "domain", name: "a.localhost" }]);
  try {
    sites.clearLog();
    const page = await browser.context.newPage();
    const host = `b.a.localhost:${new URL(sites.a.origin).port}`;
    await openPage(page, `http://${host}/plain.html`);
    const image = (): string[] => sites.log.filter((r) => r.path === "/img/9.png").map((r) => `${r.host} ${r.owner.kind}`);
    await eventually("the page's image reached the server", () => image().length > 0, {}, () => sites.log.map((r) => r.path));
    assert.deepEqual(image(), [`${host} helper`]);
    await page.waitForFunction(() => document.images[0]?.naturalWidth === 9, undefined, { timeout: 10000 });
    await page.close();
  } finally {
    await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
  }
});
