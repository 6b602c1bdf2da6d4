// Coded bodies delivered by the helper in real Chromium (stream/decoding_sink.py, deliver/fulfill-params.ts) as the
// browser's own fetch shows them: a br body with bytes after the end of its stream is the stream's text (Chromium
// ignores what follows), and a body whose Content-Encoding names a coding Chromium does not undo (an unknown name,
// `identity, gzip`) is the body as it came, with that Content-Encoding and its Content-Length, as the page reads
// them, the same as the browser's own fetch of them shows. The helper failed all three (`decode_failed`: the requests
// went to the browser), and a fulfilled body's Content-Encoding was always dropped.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { brotliCompressSync } from "node:zlib";
import { openPage, tabIdOf, tabTimings } from "../support/chromium-harness.js";
import { startLoopbackSite, stopLoopbackSite, type LoopbackSite } from "../support/loopback-site.js";
import { eventually } from "../support/eventually.js";

const TEXT = "the body as the page reads it\n".repeat(200);
const BODIES: Record<string, { coding: string; body: Buffer }> = {
  "/br-then-bytes.txt": { coding: "br", body: Buffer.concat([brotliCompressSync(Buffer.from(TEXT)), Buffer.from("\n<!-- after the end -->\n")]) },
  "/unknown.txt": { coding: "x-lanefetch-unknown", body: Buffer.from(TEXT) },
  "/identity-gzip.txt": { coding: "identity, gzip", body: Buffer.from(TEXT) },
};

let site: LoopbackSite;

function serve(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? "";
  const coded = BODIES[url];
  if (coded !== undefined) {
    res.writeHead(200, { "content-type": "text/plain", "content-encoding": coded.coding, "content-length": String(coded.body.length), "cache-control": "no-store" })
      .end(coded.body);
    return;
  }
  if (url === "/open.html") return void res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>open</title>");
  if (url === "/page.html") {
    const script = `window.got = Promise.all(${JSON.stringify(Object.keys(BODIES))}.map(async (u) => {
      const r = await fetch(u);
      return [u, await r.text(), r.headers.get("content-encoding"), r.headers.get("content-length")];
    }));`;
    return void res.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" }).end(`<!doctype html><script>${script}</script>`);
  }
  res.writeHead(404).end();
}

before(async () => {
  site = await startLoopbackSite(serve);
});

after(() => stopLoopbackSite(site));

test("coded bodies are fulfilled as Chromium's own fetch shows them", async () => {
  const origin = site.origin;
  const tab = await site.browser.context.newPage();
  await openPage(tab, `${origin}/open.html`); // attached and intercepting from here
  const tabId = await tabIdOf(site.browser.worker, `${origin}/open.html`);
  await tab.goto(`${origin}/page.html`);
  const got = await tab.evaluate(() => (window as unknown as { got: Promise<[string, string, string | null, string | null][]> }).got);
  const seen = Object.fromEntries(got.map(([u, text, coding, length]) => [u, { text, coding, length }]));
  // (a body the helper decoded is fulfilled without its Content-Encoding and Content-Length: fulfill-params.ts)
  assert.equal(seen["/br-then-bytes.txt"]?.text, TEXT);
  for (const u of ["/unknown.txt", "/identity-gzip.txt"]) {
    assert.deepEqual(seen[u], { text: TEXT, coding: BODIES[u]?.coding, length: String(TEXT.length) }, u);
  }
  let records: { url: string; outcome: string; reason: string | null }[] = [];
  await eventually("the three are answered by the helper", async () => {
    records = (await tabTimings(site.browser.context, tabId)).records.filter((r) => r.url.startsWith(origin) && r.url.endsWith(".txt"));
    return records.length === 3 && records.every((r) => r.outcome !== "pending");
  }, { timeoutMs: 10000 }, () => records);
  assert.deepEqual(records.map((r) => r.outcome), ["fulfilled", "fulfilled", "fulfilled"], JSON.stringify(records));
  await tab.close();
});
