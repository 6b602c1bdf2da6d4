// A racing tab's page served over HTTP/2 (intercept/navigation-protocol.ts), in real Chromium: the tab's Network
// domain is off until its page loaded and webRequest writes an h2 status line as HTTP/1.1, so what its document came
// over is asked of the page (its navigation entry's nextHopProtocol). Said "h2", the page's requests to its origin go
// to the browser's own h2 connection (declined as browser_multiplexed: a fresh helper holds nothing of them), none is
// fetched by the helper. (Fails without the question: every subresource then went to the helper, which made them
// wait behind the TLS handshake its preconnect had held; a fresh helper's first h2 load over `sat` was ~0.8×.)
// The origin is node's HTTP/2 server on loopback with the tests' own CA (the browser told to take it, the helper
// trusting it through LANEFETCH_TEST_UPSTREAM_CA_FILE), its answers held back as the racing tests do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createSecureServer, type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { openPage, startRacing, stopRacing, tabIdOf, tabStatus, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { helperCli, repoRoot } from "../support/paths.js";
import { socketOwner } from "../support/socket-owner.js";
import type { Sites } from "../support/test-site.js";

const IMAGES = 4;
// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

let certs: string;
let sites: Sites;
let browser: Browser;
let h2: Http2SecureServer;
const log: { path: string; version: string; owner: string }[] = [];

function page(): string {
  const images = Array.from({ length: IMAGES }, (_, i) => `<img src="/img/${i}.png" onload="window.__images=(window.__images||0)+1">`).join("");
  return `<!doctype html><html><head><link rel="stylesheet" href="/style.css"></head><body>${images}</body></html>`;
}

function serve(req: Http2ServerRequest, res: Http2ServerResponse): void {
  const path = req.url;
  const port = (h2.address() as AddressInfo).port;
  log.push({ path, version: req.httpVersion, owner: socketOwner(req.socket.remotePort ?? 0, port).kind });
  // Every answer held back: the document's head comes long after the attach ended, as on a slow link.
  setTimeout(() => {
    if (path.startsWith("/page.html")) res.writeHead(200, { "content-type": "text/html" }).end(page());
    else if (path === "/style.css") res.writeHead(200, { "content-type": "text/css" }).end("body { margin: 0 }");
    else if (path.startsWith("/img/")) res.writeHead(200, { "content-type": "image/png" }).end(PNG);
    else res.writeHead(404).end();
  }, 700);
}

before(async () => {
  certs = mkdtempSync(join(tmpdir(), "lf-h2-certs-"));
  execFileSync(join(dirname(helperCli), "python"), [resolve(repoRoot, "tests/browser/support/test-certs.py"), "origins", certs]);
  h2 = createSecureServer({ allowHTTP1: true, cert: readFileSync(join(certs, "origin.pem")), key: readFileSync(join(certs, "origin.key")) }, serve);
  await new Promise<void>((ok) => h2.listen(0, "127.0.0.1", ok));
  // The helper, started by the browser, inherits this environment.
  process.env.LANEFETCH_TEST_UPSTREAM_CA_FILE = join(certs, "upstream-ca.pem");
  ({ sites, browser } = await startRacing({ ignoreHttpsErrors: true }));
});

after(async () => {
  await stopRacing({ sites, browser });
  await new Promise<void>((ok) => h2.close(() => ok()));
  delete process.env.LANEFETCH_TEST_UPSTREAM_CA_FILE;
  rmSync(certs, { recursive: true, force: true });
});

test("a racing tab's h2 page: its protocol asked of the page, its requests left to the browser's h2 connection", async () => {
  const url = `https://127.0.0.1:${(h2.address() as AddressInfo).port}/page.html`;
  const tab = await browser.context.newPage();
  await openPage(tab, url);
  await tab.waitForFunction((n) => (window as unknown as { __images?: number }).__images === n, IMAGES, { timeout: 20000 });
  const trace = (await browser.worker.evaluate(() => (globalThis as { lanefetchTabTrace?: [string, number][] }).lanefetchTabTrace ?? []))
    .map(([label]) => label);
  assert.ok(!trace.includes("event navigation_blocked"), `the navigation raced, not blocked: ${trace.join(", ")}`);
  const subresources = log.filter((r) => !r.path.startsWith("/page.html") && r.path !== "/favicon.ico");
  assert.equal(subresources.length, IMAGES + 1, JSON.stringify(log));
  assert.deepEqual([...new Set(subresources.map((r) => `${r.owner} ${r.version}`))], ["browser 2.0"], JSON.stringify(log));
  assert.ok(trace.includes("protocol: h2 (asked of the page)"), `the page said h2: ${trace.join(", ")}`);
  const tabId = await tabIdOf(browser.worker, url);
  let passed = 0;
  await eventually("every subresource counted as left to the browser's h2 connection", async () => {
    const s = await tabStatus(browser.context, tabId);
    passed = s.counts.passed.browser_multiplexed ?? 0;
    return passed >= IMAGES + 1; // (and the favicon's request, where Chromium made it in the tab)
  }, {}, () => passed);
  await tab.close();
});
