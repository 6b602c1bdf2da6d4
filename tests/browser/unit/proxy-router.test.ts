// ProxyRouter's routing decisions without a browser: what proxy.onRequest gets for each request, given the helper's
// answers to proxy_open (RecordingPorts below stands in for the native port, so each answer can be held or refused).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "../../../extension/src/generated/protocol.js";
import type { ProxyInfo, ProxyRequestDetails } from "../../../extension/src/proxy/firefox-proxy-api.js";
import { DIRECT, ProxyRouter, type ContextPorts, type RouterPorts } from "../../../extension/src/proxy/proxy-router.js";
import { matchingRule, type SiteRule } from "../../../extension/src/sites/site-rule.js";

const PAGE = "http://shop.example/index.html";

/** The helper's side of proxy_open / proxy_close: records the calls; each open waits until answered. */
class RecordingPorts implements RouterPorts {
  readonly opened: { contextId: string; page: Page; answer: (port: number | null, splitPort?: number) => void }[] = [];
  readonly closed: string[] = [];
  /** Answer every open at once with this port (undefined: hold them until answered by hand); the split port, if any. */
  constructor(private readonly autoPort?: number | null, private readonly autoSplitPort?: number) {}

  open(contextId: string, page: Page): Promise<ContextPorts | null> {
    return new Promise((resolve) => {
      const answer = (port: number | null, splitPort?: number) => resolve(port === null ? null : { port, splitPort: splitPort ?? null });
      this.opened.push({ contextId, page, answer });
      if (this.autoPort !== undefined) answer(this.autoPort, this.autoSplitPort);
    });
  }

  close(contextId: string): void {
    this.closed.push(contextId);
  }
}

function setup(rules: SiteRule[] = [{ scope: "domain", name: "shop.example" }], autoPort?: number | null, openTimeoutMs = 200) {
  const ports = new RecordingPorts(autoPort);
  const sites = { rules };
  const router = new ProxyRouter(ports, (url) => matchingRule(sites.rules, url) !== null, openTimeoutMs);
  router.start("s3cret");
  return { ports, router, sites };
}

let nextId = 0;
function req(url: string, extra: Partial<ProxyRequestDetails> = {}): ProxyRequestDetails {
  nextId += 1;
  return { requestId: String(nextId), url, method: "GET", type: "image", tabId: 7, documentUrl: PAGE, frameAncestors: [], incognito: false, ...extra };
}

function viaHelper(port: number): ProxyInfo[] {
  return [{ type: "http", host: "127.0.0.1", port, failoverTimeout: 1 }, DIRECT];
}

test("an enabled site's http:// requests go to the helper's listener for the page context, direct as the fail-over", async () => {
  const { ports, router } = setup(undefined, 41001);
  assert.deepEqual(await router.route(req(PAGE, { type: "main_frame", documentUrl: undefined })), viaHelper(41001));
  assert.equal(ports.opened.length, 1);
  assert.deepEqual(ports.opened[0]?.page, { address_space: "public", top_site: "http://shop.example", private_browsing: false });
  // Once the listener is known, the answer is immediate (no promise) and no second listener is asked for.
  assert.deepEqual(router.route(req("http://cdn.other.example/a.png")), viaHelper(41001), "cross-site subresource of the page");
  assert.deepEqual(router.route(req("http://img.shop.example/b.png")), viaHelper(41001));
  assert.equal(ports.opened.length, 1);
  assert.deepEqual(router.credentialsFor("127.0.0.1", 41001), { username: "lanefetch", password: "s3cret" });
  assert.equal(router.credentialsFor("127.0.0.1", 41002), null, "not one of the helper's listeners");
  assert.equal(router.credentialsFor("proxy.example", 41001), null);
});

test("requests arriving while the listener opens share one proxy_open", async () => {
  const { ports, router } = setup();
  // (an async callback runs route() at once, synchronously)
  const pending = ["1", "2"].map(async (n) => router.route(req(`http://shop.example/${n}.png`)));
  assert.equal(ports.opened.length, 1);
  ports.opened[0]?.answer(41005);
  for (const p of await Promise.all(pending)) assert.deepEqual(p, viaHelper(41005));
});

test("https:// (not opted in), other sites, site off, no tab, kept types and a public page reaching a private address go direct", async () => {
  const { ports, router, sites } = setup(undefined, 41010);
  assert.equal(router.route(req("https://shop.example/x.png", { documentUrl: "https://shop.example/" })), DIRECT, "https without the HTTPS opt-in");
  assert.equal(router.route(req("http://news.example/x.png", { documentUrl: "http://news.example/" })), DIRECT, "site not enabled");
  assert.equal(router.route(req("http://shop.example/x.png", { tabId: -1 })), DIRECT, "no tab (the extension's or the browser's own)");
  for (const type of ["websocket", "media", "object", "beacon", "speculative"]) {
    assert.equal(router.route(req("http://shop.example/x", { type })), DIRECT, type);
  }
  assert.equal(router.route(req("http://192.168.1.1/x.png")), DIRECT, "public page → private address");
  assert.equal(router.route(req("http://127.0.0.1/x.png")), DIRECT, "public page → loopback");
  assert.equal(ports.opened.length, 0);
  assert.deepEqual(await router.route(req("http://shop.example/y.png")), viaHelper(41010));
  sites.rules = [];
  assert.equal(router.route(req("http://shop.example/z.png")), DIRECT, "site turned off: direct at once, listener or not");
});

test("https:// of hosts the helper's CA covers: CONNECT to the helper with the secret; other https:// direct", async () => {
  const { router } = setup(undefined, 41060);
  router.setHttpsCovered((url) => new URL(url).hostname.endsWith("shop.example"));
  const top = { documentUrl: "https://shop.example/" };
  assert.deepEqual(await router.route(req("https://img.shop.example/a.png", top)), [
    { type: "http", host: "127.0.0.1", port: 41060, failoverTimeout: 1, proxyAuthorizationHeader: `Basic ${btoa("lanefetch:s3cret")}` }, DIRECT,
  ]);
  assert.equal(router.route(req("https://cdn.other.example/a.png", top)), DIRECT, "not covered by the site's CA");
  assert.deepEqual(router.route(req("http://shop.example/b.png", top)), viaHelper(41060), "plain http: no header (the 407 answers it)");
});

test("the native port lost: direct at once, also for requests still waiting for their listener", async () => {
  const { ports, router } = setup();
  const waiting = router.route(req("http://shop.example/1.png"));
  router.stop();
  assert.equal(router.routing, false);
  assert.equal(router.route(req("http://shop.example/2.png")), DIRECT);
  ports.opened[0]?.answer(41020); // a late proxy_ready from the helper that went away
  assert.deepEqual(await waiting, [DIRECT]);
  assert.equal(router.credentialsFor("127.0.0.1", 41020), null);
  // Reconnected: a new session, a new listener.
  router.start("other");
  const again = router.route(req("http://shop.example/3.png"));
  assert.equal(ports.opened.length, 2);
  ports.opened[1]?.answer(41021);
  assert.deepEqual(await again, viaHelper(41021));
  assert.deepEqual(router.credentialsFor("127.0.0.1", 41021), { username: "lanefetch", password: "other" });
});

test("no listener (refused, or no answer in time): direct, and the next request asks again", async () => {
  const refused = setup(undefined, null);
  assert.deepEqual(await refused.router.route(req("http://shop.example/1.png")), [DIRECT]);
  assert.deepEqual(await refused.router.route(req("http://shop.example/2.png")), [DIRECT]);
  assert.equal(refused.ports.opened.length, 2);

  const silent = setup(undefined, undefined, 30);
  assert.deepEqual(await silent.router.route(req("http://shop.example/1.png")), [DIRECT], "timed out");
  silent.ports.opened[0]?.answer(41030); // too late: not used
  assert.equal(silent.router.credentialsFor("127.0.0.1", 41030), null);
});

test("frames: requests of an enabled page's frames follow the top-level page, not the frame's own site", async () => {
  const { ports, router } = setup(undefined, 41040);
  const inFrame = req("http://ads.example/pixel.png", {
    documentUrl: "http://ads.example/frame.html",
    frameAncestors: [{ url: "http://ads.example/outer.html", frameId: 3 }, { url: PAGE, frameId: 0 }],
  });
  assert.deepEqual(await router.route(inFrame), viaHelper(41040));
  assert.equal(ports.opened[0]?.page.top_site, "http://shop.example");
  const onOtherTop = req("http://shop.example/x.png", { documentUrl: "http://shop.example/f.html", frameAncestors: [{ url: "http://news.example/", frameId: 0 }] });
  assert.equal(router.route(onOtherTop), DIRECT, "a frame of an enabled site inside a page that is not");
});

test("one context per tab, top-level site and private browsing; navigating away or closing the tab closes it", async () => {
  let port = 41050;
  const ports = new RecordingPorts();
  const router = new ProxyRouter(ports, () => true, 200);
  router.start("s");
  const open = (details: ProxyRequestDetails): Promise<ProxyInfo | ProxyInfo[]> => {
    const r = router.route(details);
    for (const o of ports.opened.splice(0)) o.answer(port++);
    return Promise.resolve(r);
  };
  const a = await open(req(PAGE, { type: "main_frame" }));
  const sameSite = await open(req("http://www.shop.example/", { type: "main_frame", tabId: 7 }));
  assert.deepEqual(sameSite, a, "another page of the same site in the tab keeps its listener");
  const otherTab = await open(req(PAGE, { type: "main_frame", tabId: 8 }));
  const privateTab = await open(req(PAGE, { type: "main_frame", tabId: 9, incognito: true }));
  assert.deepEqual(new Set([a, otherTab, privateTab].map((x) => JSON.stringify(x))).size, 3);

  router.tabChanged(7, "about:blank");
  assert.deepEqual(ports.closed, [], "a non-http page (a tab opening) changes nothing");
  router.tabChanged(7, "http://www.shop.example/other");
  assert.deepEqual(ports.closed, [], "same site");
  router.tabChanged(7, "http://news.example/");
  assert.equal(ports.closed.length, 1, "another site: the listener is closed");
  assert.equal(router.credentialsFor("127.0.0.1", 41050), null);
  router.tabChanged(8, null);
  assert.equal(ports.closed.length, 2, "tab closed");
  assert.ok(router.credentialsFor("127.0.0.1", 41052), "the private tab's listener is still in use");
});

test("step-aside: requests to an origin known fast go direct (also the document), the others still via the helper", async () => {
  const { ports, router } = setup(undefined, 41070);
  const fast = new Set<string>();
  const passed: string[] = [];
  router.setStepAside((url) => (fast.has(new URL(url).origin) ? "fast" : null), (details, pageUrl, detail) =>
    passed.push(`${details.url} ${pageUrl} ${detail}`));
  // Unknown RTT: lanefetch takes it (the document's connection will tell).
  assert.deepEqual(await router.route(req(PAGE, { type: "main_frame", documentUrl: undefined })), viaHelper(41070));
  fast.add("http://shop.example");
  assert.equal(router.route(req("http://shop.example/a.png")), DIRECT);
  assert.deepEqual(router.route(req("http://cdn.other.example/b.png")), viaHelper(41070), "another origin of the page, not known fast");
  assert.equal(router.route(req(PAGE, { type: "main_frame", documentUrl: undefined })), DIRECT, "the next visit's document too");
  assert.equal(router.route(req("http://news.example/c.png", { documentUrl: "http://news.example/" })), DIRECT);
  assert.deepEqual(passed, [`http://shop.example/a.png ${PAGE} fast`, `${PAGE} ${PAGE} fast`], "only enabled sites' requests count as stepped aside");
  assert.equal(ports.opened.length, 1);
});

test("a document of an origin whose RTT is unknown waits for the probe, then goes direct if the origin proved fast", async () => {
  const { ports, router } = setup(undefined, 41080);
  const fast = new Set<string>();
  const passed: string[] = [];
  const probed: string[] = [];
  let answer: (() => void) | null = null;
  router.setStepAside((url) => (fast.has(new URL(url).origin) ? "fast" : null), (details) => passed.push(details.url));
  router.setRttProbe((url) => {
    probed.push(url);
    return new Promise<void>((resolve) => (answer = resolve));
  });
  const lan = router.route(req("http://lan.shop.example/", { type: "main_frame", documentUrl: undefined }));
  assert.ok(lan instanceof Promise);
  fast.add("http://lan.shop.example"); // the helper's connect time arrived
  (answer as (() => void) | null)?.();
  assert.deepEqual(await lan, [DIRECT]);
  assert.deepEqual(passed, ["http://lan.shop.example/"], "counted as stepped aside");
  const far = router.route(req(PAGE, { type: "main_frame", documentUrl: undefined }));
  (answer as (() => void) | null)?.();
  assert.deepEqual(await far, viaHelper(41080), "not fast: through the helper, whose connection is on its way");
  assert.deepEqual(probed, ["http://lan.shop.example/", PAGE]);
  assert.deepEqual(router.route(req("http://shop.example/a.png")), viaHelper(41080), "subresources do not probe");
  assert.equal(ports.opened.length, 1);
});

test("split large downloads: requests the split rule marks go to the context's split port, others to its port", async () => {
  const { router } = setup(undefined, 41090);
  const ports = new RecordingPorts(41091, 41092);
  const splitting = new ProxyRouter(ports, () => true, 200);
  splitting.start("s3cret");
  const zip = "http://shop.example/files/release.zip";
  // Off (the default): nothing goes to a split port.
  assert.deepEqual(await splitting.route(req(zip, { type: "xmlhttprequest" })), viaHelper(41091));
  splitting.splitLarge = true;
  assert.deepEqual(splitting.route(req(zip, { type: "xmlhttprequest" })), viaHelper(41092), "fetch()/XHR of an archive");
  assert.deepEqual(splitting.route(req("http://shop.example/model.gguf?v=2", { type: "other" })), viaHelper(41092), "other (a download)");
  assert.deepEqual(splitting.route(req("http://shop.example/data.json", { type: "xmlhttprequest" })), viaHelper(41091), "not a large file's name");
  assert.deepEqual(splitting.route(req("http://shop.example/photo.bin", { type: "image" })), viaHelper(41091), "images are never split");
  assert.deepEqual(splitting.route(req(zip, { type: "main_frame", documentUrl: undefined })), viaHelper(41091), "nor documents");
  assert.equal(splitting.route(req("http://shop.example/film.mp4", { type: "media" })), DIRECT, "media stays with Firefox");
  assert.deepEqual(splitting.credentialsFor("127.0.0.1", 41092), { username: "lanefetch", password: "s3cret" }, "the 407 of the split port");
  // A helper without a split port: the same request to its one port.
  router.splitLarge = true;
  assert.deepEqual(await router.route(req(zip, { type: "xmlhttprequest" })), viaHelper(41090));
});

test("each document routed to the helper is told with its context, whether its listener was open or not", async () => {
  const { ports, router } = setup();
  const told: [string, string, Page][] = [];
  router.setNavigation((contextId, url, page) => told.push([contextId, url, page]));
  const first = router.route(req(PAGE, { type: "main_frame", documentUrl: undefined }));
  assert.equal(told.length, 0, "told before the listener is known");
  ports.opened[0]?.answer(41020);
  assert.deepEqual(await first, viaHelper(41020));
  const contextId = ports.opened[0]?.contextId ?? "";
  assert.deepEqual(told.slice(), [[contextId, PAGE, { address_space: "public", top_site: "http://shop.example", private_browsing: false }]]);
  assert.deepEqual(router.route(req("http://shop.example/a.png")), viaHelper(41020));
  assert.deepEqual(router.route(req("http://shop.example/frame.html", { type: "sub_frame" })), viaHelper(41020));
  assert.equal(told.length, 1, "a subresource or a frame is no navigation of the tab");
  const next = "http://shop.example/next.html";
  assert.deepEqual(router.route(req(next, { type: "main_frame", documentUrl: undefined })), viaHelper(41020));
  assert.deepEqual(told.map(([c, u]) => [c, u]), [[contextId, PAGE], [contextId, next]]);
  assert.equal(router.route(req("http://news.example/", { type: "main_frame", documentUrl: undefined })), DIRECT);
  assert.equal(told.length, 2, "a document going direct is not told");
});

test("a document stepped aside is told as direct to the tab's context, so what still comes to it is no page's", async () => {
  const { ports, router } = setup(undefined, 41030);
  const told: [string, string, boolean][] = [];
  router.setNavigation((contextId, url, _page, direct) => told.push([contextId, url, direct]));
  assert.deepEqual(await router.route(req(PAGE, { type: "main_frame", documentUrl: undefined })), viaHelper(41030));
  const contextId = ports.opened[0]?.contextId ?? "";
  const fastPage = "http://shop.example/fast.html";
  router.setStepAside((url) => (url === fastPage ? "fast" : null), () => undefined);
  assert.equal(router.route(req(fastPage, { type: "main_frame", documentUrl: undefined })), DIRECT);
  assert.deepEqual(told.slice(), [[contextId, PAGE, false], [contextId, fastPage, true]]);
  assert.equal(router.route(req(fastPage, { documentUrl: fastPage })), DIRECT);
  assert.equal(told.length, 2, "a subresource stepped aside is no navigation");
});

test("a request whose details do not say whether its window is private is routed as a private window's", async () => {
  // Firefox's details carry `incognito`; a request without it is not known normal, so the helper keeps its context
  // memory only and learns nothing from it (tab-privacy.ts, as Chromium's background does for a tab not known yet).
  const { ports, router } = setup(undefined, 41090);
  const unknown = req(PAGE, { type: "main_frame", tabId: 7 });
  delete unknown.incognito;
  await router.route(unknown);
  await router.route(req(PAGE, { type: "main_frame", tabId: 7, incognito: false }));
  await router.route(req(PAGE, { type: "main_frame", tabId: 7, incognito: true }));
  const page = { address_space: "public", top_site: "http://shop.example" };
  assert.deepEqual(ports.opened.map((o) => o.page), [
    { ...page, private_browsing: true },
    { ...page, private_browsing: false },
  ], "unknown and private share the private context; only a window known normal gets a normal one");
});
