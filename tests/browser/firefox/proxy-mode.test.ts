// Proxy mode in real Firefox ESR: pages of an enabled http:// site load through the helper's proxy — every
// subresource kind intact, each request at the origins made by the helper (pipelined), none by Firefox itself — and
// with the site off everything is Firefox's own again; with "split large downloads" on, a large fetch is split over
// the lanes. One browser for the file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer } from "node:net";
import { harEntry } from "../../../extension/src/timings/har.js";
import type { PageLoadData } from "../../../extension/src/timings/timing-store.js";
import { enabledFirefox, freshHome, launchFirefox, setSites, tabIdOf, tabStatus, waitForHelper, waitForResult, type Firefox } from "../support/firefox-harness.js";
import { eventually } from "../support/eventually.js";
import { OriginServer } from "../support/origin-server.js";
import { bigBody, startSites, testSite, type Sites } from "../support/test-site.js";

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

function notFromHelper(): string[] {
  return sites.log.filter((r) => r.owner.kind !== "helper").map((r) => `${r.method} ${r.host}${r.path} (${r.owner.kind})`);
}

test("main page: document, img, scripts, modules, CSS url(), fonts, fetch, XHR, cookies, redirect — all via the helper", async () => {
  sites.clearLog();
  const page = await ff.browser.newPage();
  const url = `${sites.a.origin}/index.html`;
  const other = sites.other.origin;
  await page.goto(url);
  const r = await waitForResult<Record<string, unknown>>(page, "window.__results");
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.img, 17);
  assert.equal(r.crossImg, 23);
  assert.equal(r.redirected, 29, "redirect followed to the right image");
  assert.equal(r.classic, "same-origin classic");
  assert.equal(r.cross, "cross-origin classic");
  assert.deepEqual(r.compressed, [120000, 120000], "compressed scripts (coding untouched by the helper) decoded by Firefox");
  assert.equal(r.sri, "ran");
  assert.equal(r.sriBad, "blocked");
  assert.equal(r.fetch, true);
  assert.equal(r.xhr, true);
  assert.match(String(r.cookieEcho), /lf_http=1/, "HttpOnly cookie from a proxied Set-Cookie was stored and sent");
  assert.match(String(r.cookieEcho), /lf_js=2/);
  assert.equal(r.documentCookie, "lf_js=2");
  assert.equal(r.corsCredentialed, true);
  assert.equal(r.preflighted, true);
  // Firefox settles a face's status after fonts.load() resolves: read them once the font set is ready.
  const fonts = await page.evaluate(() => document.fonts.ready.then(() => [...document.fonts].map((f) => f.family.replace(/"/g, "") + ":" + f.status).sort()));
  assert.deepEqual(fonts, ["LfNoCors:error", "LfOk:loaded"], "CORS still enforced on fonts");
  assert.equal(r.cssBackground, `url("${other}/img/bg.png")`, "relative url() resolved against the stylesheet");
  assert.equal(r.cssRule, "applied");
  assert.equal(r.module, "dep+cross");
  const seen = (): string[] => sites.log.map((x) => `${x.method} ${x.host}${x.path}`);
  const a = new URL(url).host;
  const b = new URL(other).host;
  for (const p of [`${a}/index.html`, `${b}/img/bg.png`, `${b}/mod/cross.mjs`, `${a}/redirect?to=/img/29.png`, `${a}/img/29.png`,
    `${b}/font/cors.ttf`, `${a}/js/gzip.js`, `${a}/echo-cookie`]) {
    await eventually(`${p} requested`, () => seen().includes(`GET ${p}`), {}, seen);
  }
  assert.deepEqual(notFromHelper(), [], "Firefox itself made no request to the origins");
  // The helper's flight may prefetch what the document names (it knows Firefox's fields: the extension's fields
  // probe); a claimed prefetch reaches the server in place of Firefox's request. So each URL must reach the servers
  // exactly as often as Firefox asked the helper for it (the extension's records of the tab), with one exception:
  // a prefetched redirect is never given to Firefox (fidelity: status-without-referer, the prefetch carried no
  // Referer), so its path reaches the server once more, through the helper, for Firefox's own request. Firefox may
  // ask twice for one URL itself (the script whose integrity check fails: twice through the helper in every run of
  // the helper's log we read), which the servers then see twice as well.
  const tabId = await tabIdOf(ff, url);
  type TimingRecord = { url: string; outcome: string; detail: string | null };
  const recordsOfTab = async (): Promise<TimingRecord[]> => (await ff.inExtension<{ records: TimingRecord[] }>(
    `chrome.runtime.sendMessage({ type: "lanefetch/timings", tabId: ${tabId} })`)).records;
  const tally = (urls: string[]): Map<string, number> => {
    const n = new Map<string, number>();
    for (const u of urls) n.set(u, (n.get(u) ?? 0) + 1);
    return n;
  };
  const beyondAsked = (records: TimingRecord[]): Map<string, number> => {
    const asked = tally(records.map((x) => x.url));
    const beyond = new Map<string, number>();
    for (const [u, n] of tally(sites.log.map((x) => `http://${x.host}${x.path}`))) {
      if (n > (asked.get(u) ?? 0)) beyond.set(u, n - (asked.get(u) ?? 0));
    }
    return beyond;
  };
  const redirect = `${url.replace("/index.html", "")}/redirect?to=/img/29.png`;
  const onlyTheRedirect = (beyond: Map<string, number>): boolean =>
    [...beyond].every(([u, n]) => u === redirect && n === 1);
  // The last records and reports may still be on their way.
  let last: unknown = {};
  // A record is made when the helper takes the request and fulfilled when its timing comes: wait for both.
  const records = await eventually("every request the servers saw was one Firefox asked for (but a refused redirect prefetch), each answered", async () => {
    const got = await recordsOfTab();
    const beyond = beyondAsked(got);
    last = { beyond: [...beyond], asked: got.map((x) => `${x.url} ${x.outcome}`) };
    return onlyTheRedirect(beyond) && got.every((x) => x.outcome !== "pending") && got;
  }, { everyMs: 100 }, () => last);
  const extra = [...beyondAsked(records).values()].reduce((a, n) => a + n, 0);
  let counts = {};
  const s = await eventually("every request Firefox asked for counted as accelerated", async () => {
    const status = await tabStatus(ff, tabId);
    counts = status.counts;
    return status.counts.accelerated >= sites.log.length - extra && status;
  }, { everyMs: 100 }, () => counts);
  assert.deepEqual(records.filter((x) => x.outcome !== "fulfilled"), [], "every proxied request was answered by the helper");
  assert.deepEqual(beyondAsked(await recordsOfTab()), beyondAsked(records), "no request came after the records settled");
  assert.equal(s.helper.status, "connected");
  assert.equal(s.tab.intercepting, true);
  assert.equal(s.counts.accelerated, sites.log.length - extra, JSON.stringify(s.counts));
  assert.equal(s.counts.accelerated, records.length, "one record per request Firefox asked for");
  await page.close();
});

test("same-site and cross-site iframes load through the helper", async () => {
  sites.clearLog();
  const page = await ff.browser.newPage();
  await page.goto(`${sites.a.origin}/frames.html`);
  const frames = await waitForResult<Record<string, unknown>>(page, "window.__frames && window.__frames.same && window.__frames.cross && window.__frames");
  for (const name of ["same", "cross"]) assert.deepEqual(frames[name], { name, img: 31, script: "frame script", fetch: true }, name);
  const crossFrame = (): number => sites.log.filter((r) => /frame=cross/.test(r.path)).length;
  await eventually("the cross-site frame's image and fetch reached the server", () => crossFrame() >= 2, {}, () => sites.log.map((r) => r.path));
  assert.equal(crossFrame(), 2);
  assert.deepEqual(notFromHelper(), [], "frames of an enabled top-level site go through the helper too");
  await page.close();
});

test("many images of one origin: Firefox's many proxy connections become few pipelined helper connections", async () => {
  sites.clearLog();
  sites.a.dropConnections();
  const page = await ff.browser.newPage();
  await page.goto(`${sites.a.origin}/many.html?n=60`);
  const widths = await waitForResult<number[]>(page, "window.__widths");
  assert.deepEqual(widths, Array.from({ length: 60 }, (_, i) => i + 2));
  const images = sites.log.filter((r) => /\?many$/.test(r.path));
  assert.equal(images.length, 60);
  assert.ok(images.every((r) => r.owner.kind === "helper"));
  const connections = new Set(images.map((r) => r.connection));
  // at most the helper's per-origin limit (EngineConfig.connections_per_origin, 6 as the browsers; Firefox would use
  // up to 32 connections to its proxy)
  assert.ok(connections.size <= 6, `helper connections: ${connections.size}`);
  const pipelined = images.filter((r) => r.inFlightOnArrival > 1).length;
  assert.ok(pipelined > 0, `requests that arrived while another was in flight on their connection: ${pipelined}`);
  await page.close();
});

test("the standalone timing page lists the page load's requests as answered by the helper", async () => {
  sites.clearLog();
  const page = await ff.browser.newPage();
  const url = `${sites.a.origin}/many.html?n=12`;
  await page.goto(url);
  await waitForResult<number[]>(page, "window.__widths");
  const tabId = await tabIdOf(ff, url);
  await ff.showInExtension(`timing.html?tab=${tabId}`);
  const served = sites.log.map((r) => `http://${r.host}${r.path}`).sort();
  interface Shown { rows: string[]; statuses: string[]; passed: number; loaded: boolean }
  let shown: Shown | null = null;
  for (let i = 0; i < 100; i++) { // the page polls the background once a second
    await new Promise((ok) => setTimeout(ok, 200));
    shown = await ff.inExtension<Shown | null>(`location.pathname === "/timing.html" && document.body.dataset.ready === "true"
      ? chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} }).then(({ loads }) => ({
          rows: [...document.querySelectorAll("#waterfall .row[data-id] .name")].map((e) => e.title).sort(),
          statuses: [...new Set([...document.querySelectorAll("#waterfall .row[data-id]")].map((e) => e.children[2]?.textContent))],
          passed: document.querySelectorAll("#waterfall .row.passed").length,
          loaded: loads[0]?.url === ${JSON.stringify(url)} && loads[0].loadedAt !== null,
        }))
      : null`).catch(() => null); // the realm may be between pages
    if (shown && shown.loaded && shown.rows.length >= served.length && shown.statuses.join() === "200") break;
  }
  await ff.showInExtension("options.html");
  assert.equal(served.length, 13, "the document and 12 images");
  assert.deepEqual(shown, { rows: served, statuses: ["200"], passed: 0, loaded: true },
    "one row per request with Firefox's status, none passed through, the load event known");
  // The records (and so the panel and the HAR) are as complete as Chromium's: both heads, Firefox's own types, the
  // MIME type, and the body's size apart from the wire's.
  const data = await ff.inExtension<PageLoadData | null>(`chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} })
    .then(({ loads }) => chrome.runtime.sendMessage({ type: "lanefetch/page-load", id: loads[0].id })).then((r) => r.data)`);
  assert.ok(data);
  const types = data.records.map((r) => r.resourceType).sort();
  assert.deepEqual([...new Set(types)], ["document", "image"], JSON.stringify(types));
  for (const r of data.records) {
    const entry = harEntry(r);
    assert.ok(entry.request.headers.some((h) => h.name.toLowerCase() === "host"), `${r.url}: request headers`);
    assert.ok(entry.response.headers.length > 0, `${r.url}: response headers`);
    assert.notEqual(entry.response.content.mimeType, "x-unknown", r.url);
    assert.ok(entry.response._transferSize > entry.response.content.size, `${r.url}: the wire has the head too`);
    assert.equal(entry.response.content.size, entry.response.bodySize, `${r.url}: not coded, so decoded = sent`);
  }
  await page.close();
});

test("a page Firefox loaded twice: its third visit's image is answered from the helper's prefetch flight", async () => {
  // The main page set cookies for the host: a request carrying one is never prefetched (the helper holds none).
  await ff.browser.deleteCookie(...await ff.browser.cookies());
  const page = await ff.browser.newPage();
  const url = `${sites.a.origin}/plain.html`;
  const seen: number[] = [];
  for (let visit = 1; visit <= 3; visit += 1) {
    sites.clearLog();
    await page.goto(url);
    await page.waitForFunction(() => [...document.images].every((i) => i.complete && i.naturalWidth > 0));
    seen.push(sites.log.filter((r) => r.path === "/img/9.png").length);
  }
  assert.deepEqual(seen, [1, 1, 1], "each visit's image reached the server once (the flight's or Firefox's own)");
  assert.deepEqual(notFromHelper(), [], "everything fetched by the helper");
  const tabId = await tabIdOf(ff, url);
  const cache = await eventually("the third visit's image record", async () => {
    const data = await ff.inExtension<PageLoadData | null>(`chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} })
      .then(({ loads }) => chrome.runtime.sendMessage({ type: "lanefetch/page-load", id: loads[0].id })).then((r) => r.data)`);
    const image = data?.records.find((r) => r.url.endsWith("/img/9.png"));
    return image?.timing?.cache ?? undefined;
  });
  assert.equal(cache, "prefetch", "the timing record says where the answer came from");
  // A fourth visit ends the third load: the helper's report of what its flight did reaches the timing records.
  await page.goto(url);
  const report = await eventually("the third load's flight report", async () => {
    const { loads } = await ff.inExtension<{ loads: { url: string; flight: { answered: number } | null }[] }>(
      `chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} })`);
    return loads.filter((l) => l.url === url).map((l) => l.flight).find((f) => f !== null) ?? false;
  });
  assert.ok(report.answered >= 1, JSON.stringify(report));
  await page.close();
});

test("step-aside: the helper's connect time shows the origin fast (loopback) before the document is routed: Firefox fetches everything itself", async () => {
  // An origin the helper never connected to (its RTT unknown), with the rule in force (accelerateFastLinks off): the
  // document waits for the helper's preconnect to that origin (speed-probe.ts), which shows a loopback round trip.
  const fresh = new OriginServer(testSite, "127.0.0.3", sites.log);
  await fresh.listen();
  await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }, { scope: "host", name: "127.0.0.3" }], { accelerateFastLinks: false });
  try {
    sites.clearLog();
    const page = await ff.browser.newPage();
    const url = `${fresh.origin}/many.html?n=20`;
    await page.goto(url);
    assert.deepEqual(await waitForResult<number[]>(page, "window.__widths"), Array.from({ length: 20 }, (_, i) => i + 2));
    await new Promise((ok) => setTimeout(ok, 300));
    const byOwner = sites.log.map((r) => `${r.path} ${r.owner.kind}`);
    assert.deepEqual(byOwner.filter((x) => !x.endsWith(" browser")), [], "the document and every image from Firefox itself");
    assert.equal(byOwner.length, 21);
    const tabId = await tabIdOf(ff, url);
    interface Rec { url: string; outcome: string; reason: string | null; status: number | null; browser: { end: number | null } | null }
    let passed: Rec[] = [];
    for (let i = 0; i < 50; i++) { // Firefox's onCompleted may still be on its way
      const { records } = await ff.inExtension<{ records: Rec[] }>(`chrome.runtime.sendMessage({ type: "lanefetch/timings", tabId: ${tabId} })`);
      passed = records.filter((r) => r.outcome === "passed");
      if (passed.length === 21 && passed.every((r) => r.status === 200 && r.browser?.end)) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    assert.equal(passed.length, 21, "the timing records list the document and the images Firefox fetched");
    assert.ok(passed.every((r) => r.reason === "low_latency" && r.status === 200 && r.browser?.end), JSON.stringify(passed[0]));
    assert.equal((await tabStatus(ff, tabId)).counts.passed.low_latency, 21);
    const { loads } = await ff.inExtension<{ loads: { url: string; requests: number }[] }>(`chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} })`);
    assert.deepEqual(loads.filter((l) => l.url === url), [{ ...loads[0], url, requests: 21 }], "one page load for the timing page, with every request");

    // The tests' flag: everything through the helper again, also on the origin now known fast.
    await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }, { scope: "host", name: "127.0.0.3" }], { accelerateFastLinks: true });
    sites.clearLog();
    await page.goto(`${fresh.origin}/many.html?n=8`);
    await waitForResult<number[]>(page, "window.__widths");
    await new Promise((ok) => setTimeout(ok, 300));
    assert.deepEqual(sites.log.filter((r) => r.owner.kind !== "helper").map((r) => r.path), []);
    assert.equal(sites.log.length, 9);
    await page.close();
  } finally {
    await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }]);
    await fresh.close();
  }
});

test("turning a site on connects to it ahead of any page, so its first page's speed is known (sites/just-enabled.ts)", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root: a listener on port 80, where a site's probe connects");
  // No tab shows the site: the probe goes to its name over http, a TCP connection and nothing sent on it.
  const accepted: string[] = [];
  const listener = createServer((socket) => {
    accepted.push(socket.remoteAddress ?? "?");
    socket.destroy();
  });
  await new Promise<void>((ok, fail) => listener.once("error", fail).listen(80, "127.0.0.4", ok));
  try {
    await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }, { scope: "host", name: "127.0.0.4" }]);
    await eventually("the helper's connection to the site just turned on", () => accepted.length >= 1, {}, () => accepted);
  } finally {
    await setSites(ff, [{ scope: "domain", name: "127.0.0.1" }]);
    await new Promise((ok) => listener.close(ok));
  }
});

test("split large downloads (options page switch): a page's fetch of a large file arrives exact, fetched by the helper as byte ranges", async () => {
  const SIZE = 2_500_000;
  await ff.showInExtension("options.html");
  await ff.inExtension(`new Promise((ok) => { const wait = () => document.querySelector("#split-large")?.dataset.ready === "true" ? ok() : setTimeout(wait, 50); wait(); })`);
  const box = await ff.inExtension<{ disabled: boolean; checked: boolean }>(`(() => { const b = document.querySelector("#split-large"); return { disabled: b.disabled, checked: b.checked }; })()`);
  assert.deepEqual(box, { disabled: false, checked: false }, "offered in Firefox, off by default");
  await ff.inExtension(`document.querySelector("#split-large").click()`);
  await ff.inExtension(`(async () => { for (let i = 0; i < 100 && (await chrome.storage.local.get("splitLargeDownloads")).splitLargeDownloads !== true; i++) await new Promise((r) => setTimeout(r, 50)); })()`);
  try {
    await new Promise((ok) => setTimeout(ok, 200)); // the background reads the switch on storage.onChanged
    sites.clearLog();
    const page = await ff.browser.newPage();
    const url = `${sites.a.origin}/download.html?size=${SIZE}`;
    await page.goto(url);
    const got = await waitForResult<{ bytes: number; sha256: string }>(page, "window.__download", 60000);
    assert.deepEqual(got, { bytes: SIZE, sha256: createHash("sha256").update(bigBody(SIZE)).digest("hex") });
    const hits = sites.log.filter((r) => r.path === `/big/${SIZE}.bin`);
    assert.ok(hits.length >= 2 && hits.every((r) => r.owner.kind === "helper" && String(r.headers.range).startsWith("bytes=")),
      JSON.stringify(hits.map((r) => [r.owner.kind, r.headers.range])));
    assert.equal(sites.log.filter((r) => r.path.startsWith("/download.html") && r.headers.range !== undefined).length, 0, "the page itself whole");
    const tabId = await tabIdOf(ff, url);
    let lanes: { interface: string | null; bytes: number }[] | undefined;
    for (let i = 0; i < 100 && lanes === undefined; i++) { // the helper's timing report may still be on its way
      const { records } = await ff.inExtension<{ records: { url: string; timing: { lanes?: { interface: string | null; bytes: number }[] } | null }[] }>(
        `chrome.runtime.sendMessage({ type: "lanefetch/timings", tabId: ${tabId} })`);
      lanes = records.find((r) => r.url.endsWith(`/big/${SIZE}.bin`))?.timing?.lanes;
      if (lanes === undefined) await new Promise((ok) => setTimeout(ok, 200));
    }
    // Loopback: one lane on the default route, every body byte on it.
    assert.deepEqual(lanes?.map((l) => [l.interface, l.bytes]), [[null, SIZE]]);
    await page.close();
  } finally {
    await ff.inExtension(`chrome.storage.local.set({ splitLargeDownloads: false })`);
  }
});

test("site off: Firefox loads everything itself, the popup shows the site off", async () => {
  await setSites(ff, []);
  sites.clearLog();
  const page = await ff.browser.newPage();
  const url = `${sites.a.origin}/plain.html`;
  await page.goto(url);
  await page.waitForFunction("document.images[0] && document.images[0].naturalWidth === 9", { timeout: 20000 });
  await new Promise((ok) => setTimeout(ok, 200));
  assert.deepEqual(sites.log.map((r) => `${r.path} ${r.owner.kind}`), ["/plain.html browser", "/img/9.png browser"]);
  const s = await tabStatus(ff, await tabIdOf(ff, url));
  assert.equal(s.tab.rule, null);
  assert.equal(s.tab.intercepting, false);
  await page.close();
});

test("helper absent: an enabled site loads directly and the popup says how to install the helper", async () => {
  const bare = await launchFirefox(freshHome(false));
  try {
    await setSites(bare, [{ scope: "domain", name: "127.0.0.1" }]);
    const status = await waitForHelper(bare, "not_installed");
    assert.equal(status.helper.status, "not_installed", JSON.stringify(status.helper));
    sites.clearLog();
    const page = await bare.browser.newPage();
    const url = `${sites.a.origin}/plain.html`;
    await page.goto(url);
    await page.waitForFunction("document.images[0] && document.images[0].naturalWidth === 9", { timeout: 20000 });
    await new Promise((ok) => setTimeout(ok, 200));
    assert.deepEqual(sites.log.map((r) => `${r.path} ${r.owner.kind}`), ["/plain.html browser", "/img/9.png browser"]);
    const s = await tabStatus(bare, await tabIdOf(bare, url));
    assert.match(JSON.stringify(s.helper), /lanefetch install/);
    assert.equal(s.tab.intercepting, false);
  } finally {
    await bare.close();
  }
});
