// ProxyRouter: a context dropped (its tab navigated to another site, or closed) while the helper was still opening
// its listener, or after the open timed out, still has the helper close that listener: the helper keeps at most
// 256 and evicts the oldest, so leaked ones end up closing the listeners of tabs still in use.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ProxyRequestDetails } from "../../../extension/src/proxy/firefox-proxy-api.js";
import { DIRECT, ProxyRouter, type ContextPorts, type RouterPorts } from "../../../extension/src/proxy/proxy-router.js";

const PAGE = "http://shop.example/index.html";

class HeldPorts implements RouterPorts {
  readonly opened: { contextId: string; answer: (port: number | null) => void }[] = [];
  readonly closed: string[] = [];

  open(contextId: string): Promise<ContextPorts | null> {
    return new Promise((resolve) => {
      this.opened.push({ contextId, answer: (port) => resolve(port === null ? null : { port, splitPort: null }) });
    });
  }

  close(contextId: string): void {
    this.closed.push(contextId);
  }
}

function req(url: string, extra: Partial<ProxyRequestDetails> = {}): ProxyRequestDetails {
  return { requestId: "1", url, method: "GET", type: "image", tabId: 7, documentUrl: PAGE, frameAncestors: [], incognito: false, ...extra };
}

test("a tab closed while its listener was being opened: the listener the helper opens is closed", async () => {
  const ports = new HeldPorts();
  const router = new ProxyRouter(ports, () => true, 200);
  router.start("s");
  const waiting = router.route(req("http://shop.example/a.png"));
  assert.equal(ports.opened.length, 1);
  router.tabChanged(7, null);
  ports.opened[0]?.answer(41100);
  assert.deepEqual(await waiting, [DIRECT]);
  assert.equal(router.credentialsFor("127.0.0.1", 41100), null);
  assert.deepEqual(ports.closed, [ports.opened[0]?.contextId], "proxy_close for the context the helper opened");
});

test("a tab that navigated to another site after its listener's open timed out: that listener is closed too", async () => {
  const ports = new HeldPorts();
  const router = new ProxyRouter(ports, () => true, 20);
  router.start("s");
  assert.deepEqual(await router.route(req("http://shop.example/a.png")), [DIRECT], "timed out");
  ports.opened[0]?.answer(41101); // the helper opened it after all
  router.tabChanged(7, "http://news.example/");
  assert.deepEqual(ports.closed, [ports.opened[0]?.contextId]);
});
