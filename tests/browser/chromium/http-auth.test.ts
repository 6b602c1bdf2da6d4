// A login asked of a subresource (401 + WWW-Authenticate) in real Chromium (deliver/request-delivery.ts: login): the
// browser keeps the credentials it was given for the realm, and answers such a 401 with them itself; the helper has
// none. The page is opened with credentials in its URL (the browser's document: a loopback page's), its image, outside
// the document's path, is asked for without Authorization: the helper's 401 must not be delivered, the browser's
// retry with the realm's credentials gets the image.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { openPage, tabIdOf, tabTimings } from "../support/chromium-harness.js";
import { startLoopbackSite, stopLoopbackSite, type LoopbackSite } from "../support/loopback-site.js";
import { eventually } from "../support/eventually.js";

// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
const GOOD = `Basic ${Buffer.from("user:secret").toString("base64")}`;

let site: LoopbackSite;
const log: { url: string; auth: boolean; status: number }[] = [];

function serve(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? "";
  const authorized = req.headers.authorization === GOOD;
  const answer = (status: number, headers: Record<string, string>, body: string | Buffer): void => {
    log.push({ url, auth: req.headers.authorization !== undefined, status });
    res.writeHead(status, { "cache-control": "no-store", ...headers }).end(body);
  };
  if (url === "/open.html") return answer(200, { "content-type": "text/html" }, "<!doctype html><title>open</title>");
  if (!authorized) return answer(401, { "www-authenticate": 'Basic realm="lanefetch"', "content-type": "text/plain" }, "login first");
  // Named whole: a relative URL would carry the document's credentials along.
  if (url === "/auth/page.html") return answer(200, { "content-type": "text/html" }, `<!doctype html><img id="pixel" src="http://${req.headers.host ?? ""}/img/secret.png">`);
  if (url === "/img/secret.png") return answer(200, { "content-type": "image/png" }, PNG);
  answer(404, {}, "");
}

before(async () => {
  site = await startLoopbackSite(serve);
});

after(() => stopLoopbackSite(site));

test("a 401 asking for a login of a request without Authorization goes to the browser, which answers it with the realm's credentials", async () => {
  const origin = site.origin;
  const tab = await site.browser.context.newPage();
  await openPage(tab, `${origin}/open.html`); // attached and intercepting from here
  const tabId = await tabIdOf(site.browser.worker, `${origin}/open.html`);
  await tab.goto(`${site.origin.replace("http://", "http://user:secret@")}/auth/page.html`);
  await tab.waitForFunction(() => {
    const img = document.getElementById("pixel") as HTMLImageElement | null;
    return img?.complete === true && img.naturalWidth === 1;
  }, undefined, { timeout: 20000 });
  const imageUrl = `${origin}/img/secret.png`;
  let all: unknown[] = [];
  let records: { url: string; outcome: string; reason: string | null; status: number | null }[] = [];
  await eventually("the image's records are answered", async () => {
    const got = (await tabTimings(site.browser.context, tabId)).records;
    all = got.map((r) => [r.url, r.outcome, r.reason]);
    records = got.filter((r) => r.url === imageUrl);
    return records.length > 0 && records.every((r) => r.outcome !== "pending");
  }, { timeoutMs: 10000 }, () => [records, log, all]);
  assert.ok(records.some((r) => r.outcome === "passed" && r.reason === "login"), JSON.stringify(records));
  assert.ok(!records.some((r) => r.outcome === "fulfilled" && r.status === 401), "the helper's 401 was never delivered");
  assert.ok(log.some((l) => l.url === "/img/secret.png" && l.auth && l.status === 200), "the browser's retry with the credentials got it");
  await tab.close();
});
