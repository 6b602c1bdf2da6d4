// ProxyRouter and the frames of an enabled page: a frame cross-site to the top-level page (or anything inside one)
// is the embedded site's, as in Chromium (embedded-frames.ts). Its requests go to a listener of their own whose page
// carries that frame's site (protocol Page.frame_site): the helper keeps them apart from the page's (connections,
// origin records) and never learns them as the page's load nor answers them from its flight. The page's own
// requests and its same-site frames' stay in the page's context.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "../../../extension/src/generated/protocol.js";
import type { ProxyInfo, ProxyRequestDetails } from "../../../extension/src/proxy/firefox-proxy-api.js";
import { DIRECT, ProxyRouter, requestSpace, type ContextPorts, type RouterPorts } from "../../../extension/src/proxy/proxy-router.js";

const PAGE = "http://shop.example/index.html";
const TOP = { url: PAGE, frameId: 0 };

/** Answers each proxy_open at once with the next port. */
class CountingPorts implements RouterPorts {
  readonly opened: { contextId: string; page: Page; port: number }[] = [];
  private next = 41300;

  open(contextId: string, page: Page): Promise<ContextPorts | null> {
    this.next += 1;
    this.opened.push({ contextId, page, port: this.next });
    return Promise.resolve({ port: this.next, splitPort: null });
  }

  readonly closed: string[] = [];

  close(contextId: string): void {
    this.closed.push(contextId);
  }
}

function req(url: string, extra: Partial<ProxyRequestDetails> = {}): ProxyRequestDetails {
  return { requestId: "1", url, method: "GET", type: "image", tabId: 7, documentUrl: PAGE, frameAncestors: [], incognito: false, ...extra };
}

/** The port a route went to (null: direct); a route still waiting counts as direct (these listeners are known). */
function port(info: ProxyInfo | ProxyInfo[] | Promise<ProxyInfo[]>): number | null {
  if (info instanceof Promise) return null;
  const first = Array.isArray(info) ? info[0] : info;
  return first?.type === "http" ? first.port : null;
}

test("a cross-site frame's requests go to a context of their own, its page naming the frame's site", async () => {
  const ports = new CountingPorts();
  const router = new ProxyRouter(ports, (url) => new URL(url).hostname.endsWith("shop.example"), 200);
  router.start("s");
  const page = port(await router.route(req(PAGE, { type: "main_frame", documentUrl: undefined })));
  assert.deepEqual(ports.opened[0]?.page, { address_space: "public", top_site: "http://shop.example", private_browsing: false });

  const frameDoc = await router.route(req("http://ads.example/frame.html", { type: "sub_frame", frameAncestors: [TOP] }));
  const inFrame = await router.route(req("http://cdn.example/pixel.png", { documentUrl: "http://ads.example/frame.html", frameAncestors: [TOP] }));
  assert.equal(ports.opened.length, 2, "one more listener: the embedded site's");
  assert.deepEqual(ports.opened[1]?.page,
    { address_space: "public", top_site: "http://shop.example", private_browsing: false, frame_site: "http://ads.example" });
  assert.notEqual(port(frameDoc), page, "the frame's document is the embedded site's");
  assert.equal(port(inFrame), port(frameDoc), "and so is what the frame loads, wherever from");

  // A frame nested in the embedded one is embedded too, even one of the page's own site (keyed apart, as in Chromium).
  const nested = await router.route(req("http://shop.example/widget.png", {
    documentUrl: "http://shop.example/inner.html", frameAncestors: [{ url: "http://ads.example/frame.html", frameId: 3 }, TOP],
  }));
  assert.equal(port(nested), port(frameDoc));

  // The page's own requests, and its same-site frames', stay the page's.
  assert.equal(port(router.route(req("http://cdn.example/a.png"))), page);
  assert.equal(port(router.route(req("http://www.shop.example/f.html", { type: "sub_frame", frameAncestors: [TOP] }))), page);
  assert.equal(port(router.route(req("http://cdn.example/b.png", { documentUrl: "http://www.shop.example/f.html", frameAncestors: [TOP] }))), page);
  assert.equal(port(router.route(req("http://cdn.example/c.png", { documentUrl: "about:srcdoc", frameAncestors: [TOP] }))), page,
    "a frame without a site of its own (srcdoc, about:blank) is its parent's");
  assert.equal(ports.opened.length, 2);
  assert.equal(router.route(req("http://ads.example/x.png", { tabId: 8, documentUrl: "http://ads.example/", frameAncestors: [] })), DIRECT,
    "(the embedded site itself is not enabled)");
});

test("a cross-site frame's listener closes with its tab's page, and is never told of a navigation", async () => {
  const ports = new CountingPorts();
  const router = new ProxyRouter(ports, () => true, 200);
  router.start("s");
  const told: string[] = [];
  router.setNavigation((contextId) => told.push(contextId));
  await router.route(req(PAGE, { type: "main_frame", documentUrl: undefined }));
  await router.route(req("http://ads.example/frame.html", { type: "sub_frame", frameAncestors: [TOP] }));
  assert.deepEqual(told, [ports.opened[0]?.contextId]);
  router.tabChanged(7, "http://news.example/");
  assert.deepEqual(ports.closed.sort(), ports.opened.map((o) => o.contextId).sort());
});

// Address spaces: a frame's requests are judged by the more public of the page's space and the space of the document
// that makes them (as Chromium: embedded-frames.ts), so a public frame in a loopback page reaches nothing local
// through the helper, and the loopback page still gets its own loopback subresources through it.
const LOCAL_PAGE = "http://localhost:8080/index.html";
const LOCAL_TOP = { url: LOCAL_PAGE, frameId: 0 };
const AD = "http://ads.example/frame.html";

function localReq(url: string, extra: Partial<ProxyRequestDetails> = {}): ProxyRequestDetails {
  return req(url, { documentUrl: LOCAL_PAGE, ...extra });
}

test("the request's own document decides, the more public of it and the page", () => {
  assert.equal(requestSpace(localReq("http://127.0.0.1:9/a.png"), "loopback"), "loopback");
  assert.equal(requestSpace(localReq(LOCAL_PAGE, { type: "main_frame", documentUrl: undefined }), "loopback"), "loopback");
  // a frame's document request is made by its parent
  assert.equal(requestSpace(localReq(AD, { type: "sub_frame", frameAncestors: [LOCAL_TOP] }), "loopback"), "loopback");
  assert.equal(requestSpace(localReq("http://127.0.0.1:9/x", { documentUrl: AD, frameAncestors: [LOCAL_TOP] }), "loopback"), "public");
  assert.equal(requestSpace(localReq("http://127.0.0.1:9/x", { documentUrl: "blob:http://ads.example/5f1c", frameAncestors: [LOCAL_TOP] }),
    "loopback"), "public", "a blob: document is its origin's");
  assert.equal(requestSpace(localReq("http://127.0.0.1:9/x", { documentUrl: "about:srcdoc", frameAncestors: [{ url: AD, frameId: 3 }, LOCAL_TOP] }),
    "loopback"), "public", "a document without a space of its own is the nearest frame's around it");
  assert.equal(requestSpace(localReq("http://127.0.0.1:9/x", { documentUrl: "data:text/html,x", frameAncestors: [LOCAL_TOP] }), "loopback"),
    "loopback");
  assert.equal(requestSpace(localReq("http://10.0.0.2/x", { documentUrl: "http://router.lan/", frameAncestors: [LOCAL_TOP] }), "loopback"),
    "private");
  // never more private than the page
  assert.equal(requestSpace(req("http://127.0.0.1:9/x", { documentUrl: "http://localhost:8080/w", frameAncestors: [TOP] }), "public"), "public");
});

test("a public frame inside a loopback page cannot make the helper reach this machine; the page still can", async () => {
  const ports = new CountingPorts();
  const router = new ProxyRouter(ports, (url) => new URL(url).hostname === "localhost", 200);
  router.start("s");
  const page = port(await router.route(localReq(LOCAL_PAGE, { type: "main_frame", documentUrl: undefined })));
  assert.notEqual(page, null);
  assert.equal(port(await router.route(localReq("http://127.0.0.1:9000/own.png"))), page, "the page's own loopback subresource");
  assert.equal(port(await router.route(localReq("http://localhost:8080/app.js"))), page);

  const inFrame = { documentUrl: AD, frameAncestors: [LOCAL_TOP] };
  assert.equal(await router.route(localReq("http://127.0.0.1:9000/secret", inFrame)), DIRECT, "left to the browser, which judges it itself");
  assert.equal(await router.route(localReq("http://192.168.1.1/admin", inFrame)), DIRECT);
  assert.equal(await router.route(localReq("http://127.0.0.1:9000/x", { documentUrl: "about:blank", frameAncestors: [{ url: AD, frameId: 3 }, LOCAL_TOP] })),
    DIRECT);
  const cdn = port(await router.route(localReq("http://cdn.example/pixel.png", inFrame)));
  assert.notEqual(cdn, null);
  assert.notEqual(cdn, page);
  assert.deepEqual(ports.opened.map((o) => o.page.address_space), ["loopback", "public"],
    "the frame's listener is opened for a public page: the helper checks its resolved addresses against that");
  assert.equal(ports.opened[1]?.page.frame_site, "http://ads.example");

  // the page committing again keeps both contexts: the frame's is judged more public than its page, not another page
  router.tabChanged(7, LOCAL_PAGE);
  assert.deepEqual(ports.closed, []);
  assert.equal(port(router.route(localReq("http://cdn.example/pixel2.png", inFrame))), cdn);
});
