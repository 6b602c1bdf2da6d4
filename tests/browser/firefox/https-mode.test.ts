// Firefox HTTPS acceleration in real Firefox ESR. The origins serve https with their own test CA, which the test
// profile trusts like a public CA and the helper only through LANEFETCH_TEST_UPSTREAM_CA_FILE. The user opts in from
// the popup; the helper installs a name-constrained CA into this profile, which Firefox trusts after a restart (the
// second launch, same profile); then the site's https requests are made by the helper, a certificate the lanefetch CA
// signs for a host outside its constraints is refused by Firefox, a bad upstream certificate fails the load, and
// opting out restores Firefox's own loading. Two browser launches for the file (the restart is the point).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freshHome, launchFirefox, setSites, tabIdOf, tabStatus, trustingProfile, waitForResult, type Firefox } from "../support/firefox-harness.js";
import { OriginServer } from "../support/origin-server.js";
import { helperCli, repoRoot } from "../support/paths.js";
import { startSites, testSite, type Sites } from "../support/test-site.js";

const python = join(dirname(helperCli), "python");
const certScript = resolve(repoRoot, "tests/browser/support/test-certs.py");
const SITE = { scope: "domain", name: "127.0.0.1" } as const;

let certs: string;
let home: string;
let profile: string;
let sites: Sites;
let bad: OriginServer;
let ff: Firefox | null = null;

function firefox(): Firefox {
  if (!ff) throw new Error("Firefox is not running");
  return ff;
}

function certutilList(): string {
  return execFileSync("certutil", ["-L", "-d", `sql:${profile}`], { encoding: "utf8" });
}

async function launch(): Promise<Firefox> {
  return launchFirefox(home, { profile, keepHome: true, env: { LANEFETCH_TEST_UPSTREAM_CA_FILE: join(certs, "upstream-ca.pem") } });
}

async function until<T>(what: string, get: () => Promise<T> | T, ok: (v: T) => boolean, ms = 20000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  certs = mkdtempSync(join(tmpdir(), "lf-https-certs-"));
  execFileSync(python, [certScript, "origins", certs]);
  const tls = { cert: readFileSync(join(certs, "origin.pem"), "utf8"), key: readFileSync(join(certs, "origin.key"), "utf8") };
  sites = await startSites(tls);
  bad = new OriginServer(testSite, "127.0.0.1", [], { cert: readFileSync(join(certs, "rogue.pem"), "utf8"), key: readFileSync(join(certs, "rogue.key"), "utf8") });
  await bad.listen();
  home = freshHome(true);
  // The origins' CA stands in for a public CA: Firefox loads the site directly before and after lanefetch.
  profile = trustingProfile(join(certs, "upstream-ca.pem"));
  ff = await launch();
  await setSites(ff, [SITE]);
});

after(async () => {
  await ff?.close();
  await sites.close();
  await bad.close();
  for (const d of [home, profile, certs]) rmSync(d, { recursive: true, force: true });
});

test("the popup offers HTTPS for an enabled https site; opting in installs a constrained CA that needs a restart", async () => {
  const f = firefox();
  const page = await f.browser.newPage();
  const url = `${sites.a.origin}/plain.html`;
  await page.goto(url);
  const tabId = await tabIdOf(f, url);
  let s = await tabStatus(f, tabId);
  assert.deepEqual([s.tab.https?.optedIn, s.tab.https?.state], [false, null]);
  assert.match(String(s.tab.problem), /Accelerate HTTPS on this site/);
  // The popup, in a frame of the options page (BiDi cannot open moz-extension:// pages itself).
  const shown = await f.inExtension<{ hidden: boolean; label: string; explain: string }>(`new Promise((ok) => {
    const frame = document.createElement("iframe");
    frame.id = "popup-under-test";
    frame.src = "popup.html?tabId=${tabId}";
    document.body.append(frame);
    const look = () => {
      const d = frame.contentDocument;
      if (!d || d.body?.dataset.ready !== "true") return setTimeout(look, 50);
      ok({ hidden: d.getElementById("https-section").hidden, label: d.getElementById("https").parentElement.textContent.trim(),
           explain: d.getElementById("https-explain").textContent });
    };
    look();
  })`);
  assert.equal(shown.hidden, false);
  assert.equal(shown.label, "Accelerate HTTPS on this site");
  assert.match(shown.explain, /can vouch only for 127\.0\.0\.1/);
  await f.inExtension(`document.getElementById("popup-under-test").contentDocument.getElementById("https").click()`);
  s = await until("opt-in state", () => tabStatus(f, tabId), (x) => x.tab.https?.state === "restart_needed");
  assert.match(String(s.tab.https?.which), new RegExp(`runs in \\(${profile}\\)`), "the profile Firefox runs in, found by the helper");
  assert.match(String(s.tab.problem), /Restart Firefox/);
  assert.match(certutilList(), /lanefetch domain 127\.0\.0\.1 [0-9a-f]+ +C,,/);
  const keyFile = execFileSync("find", [join(home, ".local/share/lanefetch/firefox-https"), "-name", "*.key"], { encoding: "utf8" }).trim();
  assert.equal(statSync(keyFile).mode & 0o777, 0o600);
  // Not trusted by this Firefox yet: its https requests still go direct.
  sites.clearLog();
  await page.reload();
  await page.waitForFunction("document.images[0] && document.images[0].naturalWidth === 9", { timeout: 20000 });
  assert.ok(sites.log.every((r) => r.owner.kind === "browser"), JSON.stringify(sites.log.map((r) => r.owner.kind)));
  await page.close();
  await f.close();
  ff = null;
  // Firefox may still be writing its profile after close(): wait for its lock to go before starting it again.
  await until("profile unlocked", () => { try { statSync(join(profile, "lock")); return false; } catch { return true; } }, (x) => x);
});

test("after the restart the site's https requests go through the helper — every resource kind intact", async () => {
  ff = await launch();
  const f = ff;
  // A temporary add-on starts with fresh storage: the user's choices again.
  await setSites(f, [SITE]);
  await f.inExtension(`chrome.storage.local.set({ httpsSites: [${JSON.stringify(SITE)}] })`);
  sites.clearLog();
  const page = await f.browser.newPage();
  const url = `${sites.a.origin}/index.html`;
  // The first navigation may go direct while the helper starts; the badge and status say when HTTPS is on.
  await page.goto(`${sites.a.origin}/plain.html`);
  const tabId = await tabIdOf(f, `${sites.a.origin}/plain.html`);
  await until("https active", () => tabStatus(f, tabId), (x) => x.tab.https?.state === "active" && x.tab.intercepting);
  sites.clearLog();
  await page.goto(url);
  const r = await waitForResult<Record<string, unknown>>(page, "window.__results");
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.img, 17);
  assert.equal(r.crossImg, 23);
  assert.equal(r.redirected, 29);
  assert.equal(r.classic, "same-origin classic");
  assert.equal(r.cross, "cross-origin classic");
  assert.deepEqual(r.compressed, [120000, 120000]);
  assert.equal(r.sri, "ran");
  assert.equal(r.sriBad, "blocked");
  assert.equal(r.fetch, true);
  assert.equal(r.xhr, true);
  assert.match(String(r.cookieEcho), /lf_http=1/, "HttpOnly cookie from Set-Cookie through the helper");
  assert.equal(r.corsCredentialed, true);
  assert.equal(r.preflighted, true);
  const fonts = await page.evaluate(() => document.fonts.ready.then(() => [...document.fonts].map((x) => x.family.replace(/"/g, "") + ":" + x.status).sort()));
  assert.deepEqual(fonts, ["LfNoCors:error", "LfOk:loaded"], "CORS still enforced on fonts");
  assert.equal(r.cssRule, "applied");
  assert.equal(r.module, "dep+cross");
  // Firefox spoke HTTP/2 to the helper inside the tunnel (the helper offers it by ALPN: a page's requests at once).
  const hops = await page.evaluate(() => [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
    .filter((e) => e.name.startsWith(location.origin)).map((e) => (e as PerformanceResourceTiming).nextHopProtocol));
  assert.ok(hops.length > 5 && hops.every((h) => h === "h2"), `protocol to the helper: ${hops.join(", ")}`);
  await new Promise((ok) => setTimeout(ok, 300));
  const a = new URL(url).host;
  const byHelper = sites.log.filter((x) => x.host === a).map((x) => `${x.path} ${x.owner.kind}`);
  for (const p of ["/index.html", "/js/classic.js", "/img/17.png", "/redirect?to=/img/29.png", "/img/29.png", "/data/5000.txt",
    "/data/xhr.txt", "/set-cookie", "/echo-cookie", "/mod/main.mjs", "/js/gzip.js"]) {
    assert.ok(byHelper.includes(`${p} helper`), `${p} fetched by the helper (got ${byHelper.join(", ")})`);
  }
  assert.deepEqual(sites.log.filter((x) => x.host === a && x.owner.kind !== "helper").map((x) => x.path), [],
    "Firefox itself made no request to the opted-in origin");
  const other = new URL(sites.other.origin).host;
  assert.ok(sites.log.filter((x) => x.host === other).every((x) => x.owner.kind === "browser"),
    "another site (not opted in, outside the CA's constraints) is Firefox's own");
  // Frames: the same-site frame (covered) through the helper, the cross-site one direct.
  sites.clearLog();
  await page.goto(`${sites.a.origin}/frames.html`);
  const frames = await waitForResult<Record<string, unknown>>(page, "window.__frames && window.__frames.same && window.__frames.cross && window.__frames");
  for (const name of ["same", "cross"]) assert.deepEqual(frames[name], { name, img: 31, script: "frame script", fetch: true }, name);
  const same = new URL(sites.sameSite.origin).host;
  assert.ok(sites.log.some((x) => x.host === same && x.owner.kind === "helper"), "the same-site frame via the helper");
  await page.close();
});

test("a certificate the lanefetch CA signs for a host outside its constraints is refused by Firefox", async () => {
  const f = firefox();
  const out = mkdtempSync(join(tmpdir(), "lf-outside-"));
  execFileSync(python, [certScript, "outside", join(home, ".local/share"), "127.0.0.2", out]);
  const outside = new OriginServer(testSite, "127.0.0.2", [], { cert: readFileSync(join(out, "outside.pem"), "utf8"), key: readFileSync(join(out, "outside.key"), "utf8") });
  await outside.listen();
  const page = await f.browser.newPage();
  try {
    await assert.rejects(page.goto(`${outside.origin}/plain.html`), /SEC_ERROR_CERT_NOT_IN_NAME_SPACE/);
    assert.deepEqual(outside.log, [], "no request was sent over that connection");
  } finally {
    await page.close();
    await outside.close();
    rmSync(out, { recursive: true, force: true });
  }
});

test("a bad upstream certificate fails the load: the helper refuses it and Firefox shows its own error", async () => {
  const f = firefox();
  const page = await f.browser.newPage();
  try {
    const error = await page.goto(`${bad.origin}/plain.html`).then(() => "loaded", (e: unknown) => String(e));
    // The helper closed the tunnel unanswered, Firefox failed over to a direct connection and judged the certificate itself.
    assert.match(error, /SEC_ERROR_UNKNOWN_ISSUER/);
    assert.deepEqual(bad.log, [], "no request reached the server with the bad certificate");
    assert.ok(bad.tcpOwners.some((o) => o.kind === "helper"), `the helper tried and refused (${JSON.stringify(bad.tcpOwners)})`);
  } finally {
    await page.close();
  }
});

test("opting out removes the CA from the profile and Firefox loads the site itself again", async () => {
  const f = firefox();
  await f.inExtension(`chrome.storage.local.set({ httpsSites: [] })`);
  // (certutil may find the store busy for a moment while the helper's own certutil writes it)
  await until("CA removed", () => { try { return certutilList(); } catch (e) { return `busy: ${String((e as { stderr?: unknown }).stderr)}`; } },
    (l) => !l.startsWith("busy") && !/lanefetch/.test(l));
  sites.clearLog();
  const page = await f.browser.newPage();
  const url = `${sites.a.origin}/plain.html`;
  await page.goto(url);
  await page.waitForFunction("document.images[0] && document.images[0].naturalWidth === 9", { timeout: 20000 });
  await new Promise((ok) => setTimeout(ok, 200));
  assert.deepEqual(sites.log.map((x) => `${x.path} ${x.owner.kind}`), ["/plain.html browser", "/img/9.png browser"]);
  const s = await tabStatus(f, await tabIdOf(f, url));
  assert.deepEqual([s.tab.https?.optedIn, s.tab.https?.state], [false, null]);
  const cli = execFileSync(helperCli, ["firefox-https", "status"], { encoding: "utf8", env: { ...process.env, HOME: home } });
  assert.match(cli, /not enabled/);
  await page.close();
});
