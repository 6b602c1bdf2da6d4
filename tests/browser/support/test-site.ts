// The pages and resources the real-browser tests load, served for any *.test host. Every byte is deterministic so
// the pages can check what they got.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { iconPng } from "../../../extension/build/icons.js";
import { OriginServer, type Handler, type LoggedRequest, type OriginTls } from "./origin-server.js";

export const FONT_FILE = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/** Deterministic text of `size` bytes for name `name`. */
export function textOf(name: string, size: number): string {
  let out = "";
  let i = 0;
  while (out.length < size) out += `${name}:${i++};`;
  return out.slice(0, size);
}

const sha256b64 = (text: string): string => createHash("sha256").update(text).digest("base64");

export const SRI_SCRIPT = "window.__sri = 'ran';\n";
const BIG_SCRIPT_PAYLOAD = textOf("compressed", 120_000);
const bigScript = `window.__compressed = (window.__compressed || []).concat([${JSON.stringify(BIG_SCRIPT_PAYLOAD.length)}]);\n// ${BIG_SCRIPT_PAYLOAD}\n`;
const bigScriptGz = gzipSync(bigScript);
const bigScriptBr = brotliCompressSync(Buffer.from(bigScript));

const NOICON = `<link rel="icon" href="data:,">`;

/** Origins the pages refer to: set by the tests once their servers listen. */
export const siteOptions = {
  /** A cross-site origin (another loopback address). */
  other: "http://127.0.0.2:1",
  /** A same-site, cross-origin origin (same address, another port). */
  sameSite: "http://127.0.0.1:1",
  /** Delay in ms applied to every response (makes pipelining observable). */
  delayMs: 0,
  /** The width (and height) of /versioned.png, a cacheable image whose bytes a test changes between loads. */
  versionedSize: 8,
  /** The body of /counter (never stored): a test changes it to see whether a page got the server's current answer. */
  counter: 0,
};

function originOf(req: IncomingMessage): { self: string; other: string; sameSite: string } {
  return { self: `http://${req.headers.host ?? ""}`, other: siteOptions.other, sameSite: siteOptions.sameSite };
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store", ...extra });
  res.end(body);
}

/** A long document (over 64 KiB on the wire: the browser's connection ends it warm) that, 100 ms after its load
 * event, asks for a script and an image: the script may go to the browser's warm connection, the image never. */
function longPage(): string {
  const text = Array.from({ length: 1600 }, (_, i) => `<p>Paragraph ${i}: ${textOf("long", 80)}</p>`).join("\n");
  return `<!doctype html>${NOICON}<title>long</title>${text}<script>
addEventListener("load", () => setTimeout(() => {
  const s = document.createElement("script"); s.src = "/js/classic.js"; document.head.append(s);
  const i = new Image(); i.src = "/img/13.png"; i.onload = () => { window.__longImage = i.naturalWidth; }; document.body.append(i);
}, 100));
</script>`;
}

/** The main page: one of each subresource kind the issue lists; results land in window.__results. */
function indexPage(req: IncomingMessage): string {
  const { other } = originOf(req);
  const expected = { data: textOf("data", 5000), xhr: textOf("xhr", 3000), cors: textOf("cors", 700) };
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}
<title>lanefetch test page</title>
<link rel="stylesheet" href="${other}/css/style.css">
<style>
@font-face { font-family: "LfOk"; src: url("${other}/font/cors.ttf"); }
@font-face { font-family: "LfNoCors"; src: url("${other}/font/nocors.ttf"); }
</style>
<script src="/js/classic.js"></script>
<script src="${other}/js/cross.js"></script>
<script src="/js/gzip.js"></script>
<script src="/js/br.js"></script>
<script src="/js/sri.js" integrity="sha256-${sha256b64(SRI_SCRIPT)}"></script>
<script>window.__sriBad = "pending";</script>
<script src="/js/sri-bad.js" integrity="sha256-${sha256b64("something else")}" onerror="window.__sriBad='blocked'"></script>
<script type="module" src="/mod/main.mjs"></script>
</head><body>
<div class="bg" id="bg">background</div>
<img id="img" src="/img/17.png">
<img id="cross-img" src="${other}/img/23.png">
<img id="redirected" src="/redirect?to=/img/29.png">
<script>
const expected = ${JSON.stringify(expected)};
async function run() {
  const r = {};
  const imgs = [...document.images];
  await Promise.all(imgs.map((i) => i.complete ? null : new Promise((ok) => { i.onload = i.onerror = ok; })));
  r.img = document.getElementById("img").naturalWidth;
  r.crossImg = document.getElementById("cross-img").naturalWidth;
  r.redirected = document.getElementById("redirected").naturalWidth;
  r.classic = window.__classic;
  r.cross = window.__cross;
  r.compressed = window.__compressed;
  r.sri = window.__sri;
  r.sriBad = window.__sriBad;
  const dataText = await (await fetch("/data/5000.txt", { credentials: "include" })).text();
  r.fetch = dataText === expected.data;
  r.xhr = await new Promise((ok) => { const x = new XMLHttpRequest(); x.open("GET", "/data/xhr.txt"); x.onload = () => ok(x.responseText === expected.xhr); x.onerror = () => ok("error"); x.send(); });
  await (await fetch("/set-cookie")).text();
  r.cookieEcho = await (await fetch("/echo-cookie")).text();
  r.documentCookie = document.cookie;
  r.corsCredentialed = (await (await fetch("${other}/cors/data.txt", { credentials: "include" })).text()) === expected.cors;
  r.preflighted = await fetch("${other}/cors/data.txt", { headers: { "X-Lanefetch-Test": "1" } }).then((x) => x.text()).then((t) => t === expected.cors, (e) => String(e));
  await Promise.allSettled([document.fonts.load('16px "LfOk"'), document.fonts.load('16px "LfNoCors"')]);  // both settled: one failing first must not cut the other short
  r.fonts = [...document.fonts].map((f) => f.family.replace(/"/g, "") + ":" + f.status).sort();
  r.cssBackground = getComputedStyle(document.getElementById("bg")).backgroundImage;
  r.cssRule = getComputedStyle(document.body).getPropertyValue("--lf-css").trim();
  while (window.__module === undefined) await new Promise((ok) => setTimeout(ok, 20));
  r.module = window.__module;
  window.__results = r;
}
run().catch((e) => { window.__results = { error: String(e) }; });
</script>
</body></html>`;
}

function framesPage(req: IncomingMessage): string {
  const { other, sameSite } = originOf(req);
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}</head><body>
<iframe id="same" src="${sameSite}/frame.html?name=same"></iframe>
<iframe id="cross" src="${other}/frame.html?name=cross"></iframe>
<script>
window.__frames = {};
addEventListener("message", (e) => { window.__frames[e.data.name] = e.data; });
</script></body></html>`;
}

function framePage(url: URL): string {
  const name = url.searchParams.get("name") ?? "frame";
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}<script src="/js/frame.js"></script></head><body>
<img id="i" src="/img/31.png?frame=${name}">
<script>
const img = document.getElementById("i");
const done = async () => {
  const text = await (await fetch("/data/300.txt?frame=${name}")).text();
  parent.postMessage({ name: ${JSON.stringify(name)}, img: img.naturalWidth, script: window.__frameScript, fetch: text === ${JSON.stringify(textOf("data", 300))} }, "*");
};
img.complete ? done() : (img.onload = img.onerror = done);
</script></body></html>`;
}

/** The page and, once its image loaded, a cross-site frame ask for one cacheable image: the browser keys its cache
 * by the frame's site too, so the frame's request must not be answered from what the page's left. */
function frameCachePage(req: IncomingMessage): string {
  const { other } = originOf(req);
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}</head><body>
<img id="top" src="${other}/cached/12.png">
<script>
window.__frameCache = {};
addEventListener("message", (e) => { window.__frameCache = e.data; });
const topImg = document.getElementById("top");
const inner = () => { const f = document.createElement("iframe"); f.src = "${other}/frame-cache-inner.html"; document.body.append(f); };
topImg.complete ? inner() : (topImg.onload = topImg.onerror = inner);
</script></body></html>`;
}

const FRAME_CACHE_INNER = `<!doctype html><html><head><meta charset="utf-8">${NOICON}</head><body><img id="i" src="/cached/12.png">
<script>
const img = document.getElementById("i");
const done = () => parent.postMessage({ img: img.naturalWidth }, "*");
img.complete ? done() : (img.onload = img.onerror = done);
</script></body></html>`;

function swPage(): string {
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}</head><body><script>
(async () => {
  try {
    await navigator.serviceWorker.register("/sw.js");
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller) await new Promise((ok) => navigator.serviceWorker.addEventListener("controllerchange", ok, { once: true }));
    const r = await fetch("/data/400.txt?via=sw");
    window.__sw = { text: (await r.text()) === ${JSON.stringify(textOf("data", 400))}, viaSw: r.headers.get("X-Via-Sw") };
  } catch (e) { window.__sw = { error: String(e) }; }
})();
</script></body></html>`;
}

const SW_SCRIPT = `
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {
  if (!new URL(e.request.url).search.includes("via=sw")) return;
  e.respondWith(fetch(e.request).then(async (r) => new Response(await r.text(), { headers: { "X-Via-Sw": "yes" } })));
});
`;

function cspPage(req: IncomingMessage): string {
  const { other } = originOf(req);
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}</head><body>
<img id="self" src="/img/11.png"><img id="blocked" src="${other}/img/13.png?csp=blocked">
<script src="/js/csp-inline-check.js"></script>
</body></html>`;
}

function manyPage(count: number): string {
  const imgs = Array.from({ length: count }, (_, i) => `<img src="/img/${i + 2}.png?many">`).join("");
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}</head><body>${imgs}<script>
window.addEventListener("load", () => { window.__widths = [...document.images].map((i) => i.naturalWidth); });
</script></body></html>`;
}


/** Deterministic bytes (not text: no helper or browser may decode them) for the large-download tests. */
export function bigBody(size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + (i >> 9) + (i >> 17)) & 255;
  return out;
}

/** A static file as nginx serves one: a strong ETag, one byte range (bytes=a-b, a-, -n) when asked, If-Range. */
function sendRanged(req: IncomingMessage, res: ServerResponse, body: Buffer, etag: string): void {
  const head = { "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes", ETag: etag, "Cache-Control": "no-store" };
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
  const ifRange = req.headers["if-range"];
  if (!range || (ifRange !== undefined && ifRange !== etag) || (range[1] === "" && range[2] === "")) {
    res.writeHead(200, { ...head, "Content-Length": body.length });
    res.end(body);
    return;
  }
  const start = range[1] === "" ? Math.max(0, body.length - Number(range[2])) : Number(range[1]);
  const end = range[1] === "" || range[2] === "" ? body.length - 1 : Math.min(Number(range[2]), body.length - 1);
  if (start >= body.length || start > end) {
    res.writeHead(416, { ...head, "Content-Range": `bytes */${body.length}` });
    res.end();
    return;
  }
  res.writeHead(206, { ...head, "Content-Length": end - start + 1, "Content-Range": `bytes ${start}-${end}/${body.length}` });
  res.end(body.subarray(start, end + 1));
}

/** A page that downloads /big/SIZE.bin with fetch() and puts its size and SHA-256 (hex) into window.__download. */
function downloadPage(url: URL): string {
  const size = Number(url.searchParams.get("size") ?? "0");
  return `<!doctype html><html><head><meta charset="utf-8">${NOICON}<title>download</title></head><body><script>
(async () => {
  try {
    const data = await (await fetch("/big/${size}.bin")).arrayBuffer();
    const digest = await crypto.subtle.digest("SHA-256", data);
    window.__download = { bytes: data.byteLength, sha256: [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("") };
  } catch (e) { window.__download = { error: String(e) }; }
})();
</script></body></html>`;
}

/** Requests seen per host and path (`host path`), and who waits for one: /css/held.css is answered only once its
 * page's background image was asked for (or after HELD_MAX_MS), as a slow stylesheet chain holds Firefox's images
 * back. */
const seenPaths = new Set<string>();
const pathWaiters = new Map<string, (() => void)[]>();
const HELD_MAX_MS = 4000;

function sawPath(key: string): void {
  seenPaths.add(key);
  for (const wake of pathWaiters.get(key) ?? []) wake();
  pathWaiters.delete(key);
}

function untilPath(key: string, maxMs: number): Promise<void> {
  if (seenPaths.has(key)) return Promise.resolve();
  return new Promise((ok) => {
    const timer = setTimeout(ok, maxMs); // a bound, not a measure: the page loads either way
    pathWaiters.set(key, [...(pathWaiters.get(key) ?? []), () => { clearTimeout(timer); ok(); }]);
  });
}

export const testSite: Handler = async (req, res, url) => {
  if (siteOptions.delayMs) await new Promise((ok) => setTimeout(ok, siteOptions.delayMs));
  const { self } = originOf(req);
  const path = url.pathname;
  sawPath(`${req.headers.host ?? ""} ${path}`);
  const cors = { "Access-Control-Allow-Origin": "*" };
  if (req.method === "OPTIONS") {
    res.writeHead(204, {
      "Access-Control-Allow-Origin": req.headers.origin ?? "*",
      "Access-Control-Allow-Headers": "X-Lanefetch-Test",
      "Access-Control-Allow-Credentials": "true",
    });
    res.end();
    return;
  }
  const img = /^\/img\/(\d+)\.png$/.exec(path);
  if (img) return send(res, 200, "image/png", iconPng(Number(img[1])));
  if (path === "/img/bg.png") return send(res, 200, "image/png", iconPng(5));
  // Cacheable images for the helper's cache: fresh for an hour, or always revalidated (ETag, 304 when it matches).
  const cached = /^\/cached\/(\d+)\.png$/.exec(path);
  if (cached) return send(res, 200, "image/png", iconPng(Number(cached[1])), { "Cache-Control": "max-age=3600" });
  if (path === "/versioned.png") {
    const size = siteOptions.versionedSize;
    return send(res, 200, "image/png", iconPng(size), { "Cache-Control": "max-age=3600", ETag: `"s${size}"` });
  }
  const revalidated = /^\/revalidated\/(\d+)\.png$/.exec(path);
  if (revalidated) {
    const validator = { "Cache-Control": "no-cache", ETag: `"v${revalidated[1]}"` };
    if (req.headers["if-none-match"] === validator.ETag) {
      res.writeHead(304, validator);
      res.end();
      return;
    }
    return send(res, 200, "image/png", iconPng(Number(revalidated[1])), validator);
  }
  const data = /^\/data\/(\d+)\.txt$/.exec(path);
  if (data) return send(res, 200, "text/plain", textOf("data", Number(data[1])));
  const big = /^\/big\/(\d+)\.bin$/.exec(path);
  if (big) return sendRanged(req, res, bigBody(Number(big[1])), `"big-${big[1]}"`);
  if (path === "/download.html") return send(res, 200, "text/html; charset=utf-8", downloadPage(url));
  switch (path) {
    case "/":
    case "/index.html":
      return send(res, 200, "text/html; charset=utf-8", indexPage(req));
    case "/cached.html":
      return send(res, 200, "text/html; charset=utf-8",
        `<!doctype html>${NOICON}<title>cached</title><img src="/cached/3.png"><img src="/cached/4.png"><img src="/revalidated/5.png"><img src="/revalidated/6.png">`);
    case "/versioned.html":
      return send(res, 200, "text/html; charset=utf-8", `<!doctype html>${NOICON}<title>versioned</title><img id="v" src="/versioned.png">`);
    case "/held.html":
      // Two render-blocking stylesheets: one names a background image of an element on the page, the other takes
      // long. Firefox asks for the image only once it can lay the page out, after both; the helper can guess it
      // from the first stylesheet and the document (prefetch/discover_backgrounds.py).
      return send(res, 200, "text/html; charset=utf-8",
        `<!doctype html>${NOICON}<title>held</title><link rel="stylesheet" href="/css/held-bg.css"><link rel="stylesheet" href="/css/held.css"><div class="held-bg">held</div>`);
    case "/css/held-bg.css":
      return send(res, 200, "text/css", ".held-bg { background-image: url(/img/22.png); height: 20px; }\n");
    case "/css/held.css":
      await untilPath(`${req.headers.host ?? ""} /img/22.png`, HELD_MAX_MS);
      return send(res, 200, "text/css", "div { color: green; }\n");
    case "/counter.html":
      // A page whose script asks the server for /counter with fetch()'s cache mode "no-store": it wants the answer
      // the server gives when it asks (readCounter is called by the test, after the load).
      return send(res, 200, "text/html; charset=utf-8", `<!doctype html>${NOICON}<title>counter</title><img src="/img/9.png"><script>
window.readCounter = async () => (await fetch("/counter", { cache: "no-store" })).text();
</script>`);
    case "/counter":
      return send(res, 200, "text/plain", String(siteOptions.counter));
    case "/plain.html":
      return send(res, 200, "text/html; charset=utf-8", `<!doctype html>${NOICON}<title>plain</title><img src="/img/9.png"><p>plain</p>`);
    case "/frames.html":
      return send(res, 200, "text/html; charset=utf-8", framesPage(req));
    case "/frame.html":
      return send(res, 200, "text/html; charset=utf-8", framePage(url));
    case "/frame-cache.html":
      return send(res, 200, "text/html; charset=utf-8", frameCachePage(req));
    case "/frame-cache-inner.html":
      return send(res, 200, "text/html; charset=utf-8", FRAME_CACHE_INNER);
    case "/sw.html":
      return send(res, 200, "text/html; charset=utf-8", swPage());
    case "/sw.js":
      return send(res, 200, "text/javascript", SW_SCRIPT);
    case "/csp.html":
      return send(res, 200, "text/html; charset=utf-8", cspPage(req), { "Content-Security-Policy": "default-src 'self'; img-src 'self'" });
    case "/long.html": {
      // ?trickle=MS: the body in ten parts over MS ms (chunked, no length), as a slow link brings a long document.
      const trickleMs = Number(url.searchParams.get("trickle") ?? 0);
      if (!trickleMs) return send(res, 200, "text/html; charset=utf-8", longPage());
      const body = Buffer.from(longPage());
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
      for (let part = 0; part < 10; part++) {
        res.write(body.subarray(Math.floor((part * body.length) / 10), Math.floor(((part + 1) * body.length) / 10)));
        await new Promise((ok) => setTimeout(ok, trickleMs / 10));
      }
      res.end();
      return;
    }
    case "/many.html":
      return send(res, 200, "text/html; charset=utf-8", manyPage(Number(url.searchParams.get("n") ?? 30)));
    case "/data/xhr.txt":
      return send(res, 200, "text/plain", textOf("xhr", 3000));
    case "/cors/data.txt":
      return send(res, 200, "text/plain", textOf("cors", 700), {
        "Access-Control-Allow-Origin": req.headers.origin ?? "*",
        "Access-Control-Allow-Credentials": "true",
      });
    case "/css/style.css":
      return send(res, 200, "text/css", `.bg { background-image: url(../img/bg.png); }\nbody { --lf-css: applied; }\n`);
    case "/font/cors.ttf":
      return send(res, 200, "font/ttf", readFileSync(FONT_FILE), cors);
    case "/font/nocors.ttf":
      return send(res, 200, "font/ttf", readFileSync(FONT_FILE));
    case "/js/classic.js":
      return send(res, 200, "text/javascript", "window.__classic = 'same-origin classic';\n");
    case "/js/cross.js":
      return send(res, 200, "text/javascript", "window.__cross = 'cross-origin classic';\n");
    case "/js/frame.js":
      return send(res, 200, "text/javascript", "window.__frameScript = 'frame script';\n");
    case "/js/csp-inline-check.js":
      return send(res, 200, "text/javascript", "window.__cspScript = 'ran';\n");
    case "/js/gzip.js":
      return send(res, 200, "text/javascript", bigScriptGz, { "Content-Encoding": "gzip" });
    case "/js/br.js":
      // Chromium offers br on https only: honour Accept-Encoding like a real server.
      return /\bbr\b/.test(String(req.headers["accept-encoding"]))
        ? send(res, 200, "text/javascript", bigScriptBr, { "Content-Encoding": "br" })
        : send(res, 200, "text/javascript", bigScriptGz, { "Content-Encoding": "gzip" });
    case "/js/sri.js":
      return send(res, 200, "text/javascript", SRI_SCRIPT);
    case "/js/sri-bad.js":
      return send(res, 200, "text/javascript", "window.__sriBad = 'executed';\n");
    case "/mod/main.mjs":
      return send(res, 200, "text/javascript", `import { dep } from "./dep.mjs";\nimport { cross } from "${originOf(req).other}/mod/cross.mjs";\nwindow.__module = dep + "+" + cross;\n`);
    case "/mod/dep.mjs":
      return send(res, 200, "text/javascript", `export const dep = "dep";\n`);
    case "/mod/cross.mjs":
      return send(res, 200, "text/javascript", `export const cross = "cross";\n`, cors);
    case "/redirect":
      res.writeHead(302, { Location: url.searchParams.get("to") ?? "/", "Cache-Control": "no-store" });
      res.end();
      return;
    case "/set-cookie":
      return send(res, 200, "text/plain", "set", { "Set-Cookie": ["lf_http=1; Path=/; HttpOnly", "lf_js=2; Path=/"] });
    case "/echo-cookie":
      return send(res, 200, "text/plain", req.headers.cookie ?? "");
    default:
      return send(res, 404, "text/plain", `no ${path} on ${self}`);
  }
};

export interface Sites {
  /** The page's origin (127.0.0.1). */
  a: OriginServer;
  /** Same site, another origin (127.0.0.1, another port). */
  sameSite: OriginServer;
  /** Another site (127.0.0.2). */
  other: OriginServer;
  log: LoggedRequest[];
  clearLog(): void;
  close(): Promise<void>;
}

/** Three origin servers on loopback addresses sharing one log, with the pages pointed at each other (https with
 * `tls`: a certificate for 127.0.0.1 and 127.0.0.2). */
export async function startSites(tls?: OriginTls): Promise<Sites> {
  const log: LoggedRequest[] = [];
  const a = new OriginServer(testSite, "127.0.0.1", log, tls);
  const sameSite = new OriginServer(testSite, "127.0.0.1", log, tls);
  const other = new OriginServer(testSite, "127.0.0.2", log, tls);
  await Promise.all([a.listen(), sameSite.listen(), other.listen()]);
  siteOptions.other = other.origin;
  siteOptions.sameSite = sameSite.origin;
  return {
    a, sameSite, other, log,
    clearLog: () => {
      log.length = 0;
    },
    close: async () => {
      await Promise.all([a.close(), sameSite.close(), other.close()]);
    },
  };
}
