// HSTS in real Chromium (intercept/plain-http.ts): Fetch.requestPaused fires for an http:// request before Chromium
// applies HSTS, so a paused http:// request to a host the browser learned HSTS for must go to the browser, which
// upgrades it, never to the helper over plain http. The HSTS host is a name (HSTS is never noted for an IP address)
// mapped to loopback for Chromium, with a certificate from the test's throwaway CA that Chromium takes through
// --ignore-certificate-errors-spki-list (which clears the errors, so the Strict-Transport-Security header counts;
// ignoring all certificate errors would make Chromium drop it). One loopback port speaks both TLS and plain http:
// its plain-http side records every request, and must record none.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { Duplex } from "node:stream";
import { dirname, join, resolve } from "node:path";
import { freshProfile, launch, openPage, setSites, tabIdOf, tabTimings, waitForHelper, type Browser } from "../support/chromium-harness.js";
import { eventually } from "../support/eventually.js";
import { helperCli, repoRoot } from "../support/paths.js";

const HOST = "hsts.test";
// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

let certs: string;
let browser: Browser;
let mux: NetServer;
let tls: HttpsServer;
let plain: HttpServer;
let pageServer: HttpServer;
const plainRequests: string[] = [];
const tlsRequests: string[] = [];
const sockets = new Set<Socket>();

const port = (s: NetServer | HttpServer): number => (s.address() as AddressInfo).port;

function serveTls(req: IncomingMessage, res: ServerResponse): void {
  tlsRequests.push(req.url ?? "");
  const hsts = { "strict-transport-security": "max-age=3600" };
  if (req.url?.startsWith("/pixel.png")) res.writeHead(200, { ...hsts, "content-type": "image/png", "cache-control": "no-store" }).end(PNG);
  else if (req.url === "/frame.html") {
    res.writeHead(200, { ...hsts, "content-type": "text/html", "cache-control": "no-store" })
      .end(`<!doctype html><body><img id="pixel" src="http://${HOST}:${port(mux)}/pixel.png?frame"></body>`);
  }
  else res.writeHead(200, { ...hsts, "content-type": "text/html" }).end("<!doctype html><title>hsts</title>");
}

before(async () => {
  certs = mkdtempSync(join(tmpdir(), "lf-hsts-certs-"));
  execFileSync(join(dirname(helperCli), "python"), [resolve(repoRoot, "tests/browser/support/test-certs.py"), "names", certs, HOST]);
  const cert = readFileSync(join(certs, "origin.pem"));
  const spki = createHash("sha256").update(new X509Certificate(cert).publicKey.export({ type: "spki", format: "der" })).digest("base64");
  tls = createHttpsServer({ cert, key: readFileSync(join(certs, "origin.key")) }, serveTls);
  plain = createHttpServer((req, res) => {
    plainRequests.push(req.url ?? "");
    res.writeHead(200, { "content-type": "image/png", "cache-control": "no-store" }).end(PNG);
  });
  // One port, both protocols: a TLS ClientHello starts with byte 0x16.
  mux = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.once("data", (first) => {
      socket.pause();
      if (first[0] !== 0x16) {
        socket.unshift(first);
        plain.emit("connection", socket);
        socket.resume();
        return;
      }
      // TLS reads a net.Socket's handle, not its stream (the byte read here would be lost): a stream of its own.
      const stream = new Duplex({
        read: () => void socket.resume(),
        write: (chunk: Buffer, _enc, done) => void socket.write(chunk, done),
        final: (done) => void socket.end(done),
        destroy: (err, done) => (socket.destroy(), done(err)),
      });
      socket.on("data", (chunk: Buffer) => {
        if (!stream.push(chunk)) socket.pause();
      });
      socket.on("end", () => stream.push(null));
      socket.on("error", (e) => stream.destroy(e));
      stream.push(first);
      tls.emit("connection", stream);
    });
  });
  await new Promise<void>((ok) => mux.listen(0, "127.0.0.1", ok));
  pageServer = createHttpServer((req, res) => {
    const body = req.url === "/framed.html"
      ? `<!doctype html><body><iframe id="frame" src="http://${HOST}:${port(mux)}/frame.html"></iframe></body>`
      : `<!doctype html><body><img id="pixel" src="http://${HOST}:${port(mux)}/pixel.png"></body>`;
    res.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" }).end(body);
  });
  await new Promise<void>((ok) => pageServer.listen(0, "127.0.0.1", ok));
  process.env.LANEFETCH_TEST_UPSTREAM_CA_FILE = join(certs, "upstream-ca.pem");
  browser = await launch(freshProfile(true), { args: [`--host-resolver-rules=MAP ${HOST} 127.0.0.1`, `--ignore-certificate-errors-spki-list=${spki}`] });
  await setSites(browser.worker, [{ scope: "domain", name: "127.0.0.1" }]);
  await waitForHelper(browser.context);
});

after(async () => {
  await browser.close();
  for (const s of sockets) s.destroy();
  await Promise.all([mux, pageServer].map((s) => new Promise<void>((ok) => s.close(() => ok()))));
  delete process.env.LANEFETCH_TEST_UPSTREAM_CA_FILE;
  rmSync(certs, { recursive: true, force: true });
});

test("an http page's http:// image on a host the browser learned HSTS for goes to the browser (upgraded), never to the helper", async () => {
  const tab = await browser.context.newPage();
  // The browser learns HSTS for the host (not an enabled site: nothing intercepted), and upgrades an http visit.
  await tab.goto(`https://${HOST}:${port(mux)}/`);
  await tab.goto(`http://${HOST}:${port(mux)}/again`);
  assert.equal(tab.url(), `https://${HOST}:${port(mux)}/again`, "the premise: Chromium upgrades the host by HSTS");
  assert.deepEqual(plainRequests, []);

  // An enabled site's http page (another host) with an http:// image on the HSTS host.
  const pageUrl = `http://127.0.0.1:${port(pageServer)}/page.html`;
  tlsRequests.length = 0;
  await openPage(tab, pageUrl);
  await tab.waitForFunction(() => {
    const img = document.getElementById("pixel") as HTMLImageElement | null;
    return img?.complete === true && img.naturalWidth === 1;
  }, undefined, { timeout: 20000 });
  assert.deepEqual(plainRequests, [], "no plain-http request reached the HSTS host");
  assert.ok(tlsRequests.includes("/pixel.png"), "the browser fetched the image over https");

  const tabId = await tabIdOf(browser.worker, pageUrl);
  const imageUrl = `http://${HOST}:${port(mux)}/pixel.png`;
  let records: { url: string; outcome: string; reason: string | null; batchId: string | null }[] = [];
  await eventually("the image's record is answered", async () => {
    records = (await tabTimings(browser.context, tabId)).records.filter((r) => r.url === imageUrl);
    return records.length > 0 && records.every((r) => r.outcome !== "pending");
  }, { timeoutMs: 10000 }, () => records);
  for (const r of records) {
    assert.equal(r.outcome, "passed");
    assert.equal(r.reason, "plain_http", "left to the browser for its HSTS, not sent to the helper");
    assert.equal(r.batchId, null, "never in a batch to the helper");
  }
  await tab.close();
});

test("a frame's http:// document on the HSTS host is left to the browser, which upgrades it: nothing goes over plain http", async () => {
  // Runs after the first test: the browser knows HSTS for the host.
  const tab = await browser.context.newPage();
  const pageUrl = `http://127.0.0.1:${port(pageServer)}/framed.html`;
  plainRequests.length = 0;
  tlsRequests.length = 0;
  await openPage(tab, pageUrl);
  let frameImage = false;
  await eventually("the frame's image is shown", async () => {
    const frame = tab.frames().find((f) => f.url().includes("/frame.html"));
    frameImage = frame !== undefined && await frame.evaluate(() => {
      const img = document.getElementById("pixel") as HTMLImageElement | null;
      return img?.complete === true && img.naturalWidth === 1;
    }).catch(() => false);
    return frameImage;
  }, { timeoutMs: 20000 }, () => frameImage);
  assert.equal(tab.frames().find((f) => f.url().includes("/frame.html"))?.url(), `https://${HOST}:${port(mux)}/frame.html`, "the frame was upgraded");
  assert.deepEqual(plainRequests, [], "no plain-http request reached the HSTS host");
  assert.ok(tlsRequests.includes("/pixel.png?frame"), "the browser fetched the frame's image over https");
  // The frame's http document was paused, left to the browser, which redirected it by HSTS (an internal redirect,
  // paused again as https): the frame's own document is https, so its http:// requests have no host to go over
  // plain http (and Blink upgrades a passive mixed-content image itself).
  const tabId = await tabIdOf(browser.worker, pageUrl);
  let records: { url: string; outcome: string; batchId: string | null }[] = [];
  await eventually("the frame's document records are answered", async () => {
    records = (await tabTimings(browser.context, tabId)).records.filter((r) => r.url.includes(HOST));
    return records.some((r) => r.url.startsWith("https:")) && records.every((r) => r.outcome !== "pending");
  }, { timeoutMs: 10000 }, () => records);
  const plainOnes = records.filter((r) => r.url.startsWith("http:"));
  assert.deepEqual(plainOnes.map((r) => [r.url, r.outcome, r.batchId]), [[`http://${HOST}:${port(mux)}/frame.html`, "passed", null]],
    "only the frame's document was paused over http, and left to the browser");
  await tab.close();
});
