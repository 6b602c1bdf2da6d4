// ProxyRouter and Firefox's containers (contextual identities): a container's tabs have cookies, connections and
// cache of their own, kept apart from every other container's by Firefox. Their contexts' pages name the cookie store
// (protocol Page.cookie_store), so the helper's connections and origin records for them are a partition of their
// own: a server never sees two containers' requests on one of the helper's connections (which would link the
// identities the user keeps apart), and nothing is learned from a container's pages to be flown in another's.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "../../../extension/src/generated/protocol.js";
import type { ProxyRequestDetails } from "../../../extension/src/proxy/firefox-proxy-api.js";
import { DIRECT, ProxyRouter, type ContextPorts, type RouterPorts } from "../../../extension/src/proxy/proxy-router.js";

const PAGE = "http://shop.example/index.html";

class CountingPorts implements RouterPorts {
  readonly opened: Page[] = [];

  open(_contextId: string, page: Page): Promise<ContextPorts | null> {
    this.opened.push(page);
    return Promise.resolve({ port: 41400 + this.opened.length, splitPort: null });
  }

  close(): void {}
}

function doc(tabId: number, extra: Partial<ProxyRequestDetails> = {}): ProxyRequestDetails {
  return { requestId: "1", url: PAGE, method: "GET", type: "main_frame", tabId, frameAncestors: [], incognito: false, ...extra };
}

test("a container tab's context names its cookie store; the default store's and private browsing's do not", async () => {
  const ports = new CountingPorts();
  const router = new ProxyRouter(ports, () => true, 200);
  router.start("s");
  await router.route(doc(1, { cookieStoreId: "firefox-default" }));
  await router.route(doc(2, { cookieStoreId: "firefox-container-2" }));
  await router.route(doc(3, { cookieStoreId: "firefox-container-3" }));
  await router.route(doc(4, { cookieStoreId: "firefox-private", incognito: true }));
  await router.route(doc(5));
  const base = { address_space: "public", top_site: "http://shop.example", private_browsing: false };
  assert.deepEqual(ports.opened, [
    base,
    { ...base, cookie_store: "firefox-container-2" },
    { ...base, cookie_store: "firefox-container-3" },
    { ...base, private_browsing: true },
    base,
  ]);
});

test("a container tab's document stepped aside is told to that tab's context as direct", async () => {
  const ports = new CountingPorts();
  const router = new ProxyRouter(ports, () => true, 200);
  router.start("s");
  const told: [string, boolean][] = [];
  router.setNavigation((_contextId, url, _page, direct) => told.push([url, direct]));
  const container = { cookieStoreId: "firefox-container-2" };
  await router.route(doc(2, container));
  const fast = "http://shop.example/fast.html";
  router.setStepAside((url) => (url === fast ? "fast" : null), () => undefined);
  assert.deepEqual(router.route(doc(2, { ...container, url: fast })), DIRECT);
  assert.deepEqual(told, [[PAGE, false], [fast, true]]);
});
