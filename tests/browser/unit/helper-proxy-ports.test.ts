// Proxy mode (Firefox) over the native port: HelperProxyPorts and ProxyRouter against a scripted helper. The helper
// keeps a bounded number of page contexts' listeners and closes the oldest to open another, telling it with an error
// naming the context: the router forgets that context, so its tab's next request asks for a listener again instead
// of going to a closed port (or to the listener of another context that got the same port).
import { test } from "node:test";
import assert from "node:assert/strict";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";
import type { ProxyRequestDetails } from "../../../extension/src/proxy/firefox-proxy-api.js";
import { HelperProxyPorts } from "../../../extension/src/proxy/helper-proxy-ports.js";
import { ProxyRouter } from "../../../extension/src/proxy/proxy-router.js";

const OPTIONS = { extensionVersion: "0.0.0", browser: "firefox" as const, helloTimeoutMs: 1000, retryMissingMs: 5000, retryCrashMs: 0 };

/** A helper answering hello (proxy mode) and each proxy_open with the next port; `say` sends it any message. */
function scripted() {
  const opens: string[] = [];
  let nextPort = 41000;
  let listener: ((message: unknown) => void) | null = null;
  const say = (message: Record<string, unknown>): void => listener?.(message);
  const port: NativePort = {
    postMessage: (m: unknown) => {
      const message = m as { type?: string; context_id?: string };
      if (message.type === "hello") {
        queueMicrotask(() => say({
          type: "hello", protocol: 1, helper_version: "1.0.0", compatible: true, capabilities: ["proxy"], proxy_secret: "s".repeat(16),
        }));
      } else if (message.type === "proxy_open" && message.context_id !== undefined) {
        const contextId = message.context_id;
        opens.push(contextId);
        nextPort += 1;
        const port = nextPort;
        queueMicrotask(() => say({ type: "proxy_ready", context_id: contextId, host: "127.0.0.1", port }));
      }
    },
    onMessage: (l) => { listener = l; },
    onDisconnect: () => undefined,
    disconnect: () => undefined,
  };
  return { connection: new HelperConnection(() => port, OPTIONS), opens, say };
}

function req(url: string, tabId = 7): ProxyRequestDetails {
  return { requestId: "1", url, method: "GET", type: "image", tabId, documentUrl: "http://shop.example/", frameAncestors: [] };
}

test("a context whose listener the helper closed to make room is forgotten: its next request opens one anew", async () => {
  const { connection, opens, say } = scripted();
  assert.equal(await connection.ready(), true);
  const ports = new HelperProxyPorts(connection);
  const router = new ProxyRouter(ports, () => true, 1000);
  ports.onClosed((contextId) => router.contextClosed(contextId));
  router.start("s".repeat(16));
  const first = await router.route(req("http://shop.example/a.png"));
  assert.ok(Array.isArray(first) && first[0]?.type === "http" && first[0].port === 41001, JSON.stringify(first));
  assert.equal(opens.length, 1);
  // Another tab's context opened; the helper had too many and closed the first (what lanefetch-host sends then).
  await router.route(req("http://shop.example/b.png", 8));
  say({ type: "error", id: opens[0], code: "cancelled", message: "the helper closed this page context's proxy listener" });
  const again = await router.route(req("http://shop.example/c.png"));
  assert.ok(Array.isArray(again) && again[0]?.type === "http" && again[0].port === 41003, JSON.stringify(again));
  assert.equal(opens.length, 3, "a new listener asked for");
  assert.equal(router.credentialsFor("127.0.0.1", 41001), null, "the closed listener's port is no longer the helper's");
});
