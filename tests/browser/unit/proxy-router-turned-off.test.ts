// ProxyRouter: a site turned off (or lanefetch made inactive by a browser proxy: the same empty rules) while a
// request of its tab waited for the context's listener to open, or for its document's RTT probe, goes direct: the
// answer Firefox gets is decided when the wait ends, not on the rules of when it began.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ProxyRequestDetails } from "../../../extension/src/proxy/firefox-proxy-api.js";
import { DIRECT, ProxyRouter, type ContextPorts, type RouterPorts } from "../../../extension/src/proxy/proxy-router.js";
import { matchingRule, type SiteRule } from "../../../extension/src/sites/site-rule.js";

const PAGE = "http://shop.example/index.html";

class HeldPorts implements RouterPorts {
  readonly opened: { contextId: string; answer: (port: number | null) => void }[] = [];

  open(contextId: string): Promise<ContextPorts | null> {
    return new Promise((resolve) => {
      this.opened.push({ contextId, answer: (port) => resolve(port === null ? null : { port, splitPort: null }) });
    });
  }

  close(): void {}
}

function req(url: string, extra: Partial<ProxyRequestDetails> = {}): ProxyRequestDetails {
  return { requestId: "1", url, method: "GET", type: "image", tabId: 7, documentUrl: PAGE, frameAncestors: [], incognito: false, ...extra };
}

function setup() {
  const ports = new HeldPorts();
  const sites: { rules: SiteRule[] } = { rules: [{ scope: "domain", name: "shop.example" }] };
  const router = new ProxyRouter(ports, (url) => matchingRule(sites.rules, url) !== null, 200);
  router.start("s");
  return { ports, router, sites };
}

test("a site turned off while its tab's listener was being opened: the waiting request goes direct", async () => {
  const { ports, router, sites } = setup();
  const waiting = router.route(req("http://shop.example/a.png"));
  assert.ok(waiting instanceof Promise);
  sites.rules = [];
  ports.opened[0]?.answer(41200);
  assert.deepEqual(await waiting, [DIRECT]);
});

test("a site turned off while its document waited for the RTT probe: the document goes direct", async () => {
  const { ports, router, sites } = setup();
  let probed: (() => void) | null = null;
  router.setRttProbe(() => new Promise<void>((resolve) => (probed = resolve)));
  const told: string[] = [];
  router.setNavigation((_contextId, url) => told.push(url));
  const doc = router.route(req(PAGE, { type: "main_frame", documentUrl: undefined }));
  ports.opened[0]?.answer(41201);
  sites.rules = [];
  (probed as (() => void) | null)?.();
  assert.deepEqual(await doc, [DIRECT]);
  assert.deepEqual(told, [], "nor is the helper told of a page load it will not see");
});
