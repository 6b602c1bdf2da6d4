// A tab released (detached, closed) while the helper fetches its requests: the helper is told to stop them and
// their answers are dropped, and nothing of them is counted afterwards. Their deliveries' own timers (no head, body
// stalled) used to stay armed: 20 s later each "timed out", was continued on the gone debuggee and counted as
// "left to the browser: timeout" on whatever page the tab showed by then.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { Accelerator, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";

/** A helper that says hello and then keeps every batch to itself (still fetching). */
class SilentHelper implements NativePort {
  readonly sent: { type: string }[] = [];
  private listener: ((message: unknown) => void) | null = null;
  postMessage(message: unknown): void {
    const m = message as { type: string };
    this.sent.push(m);
    if (m.type === "hello") {
      queueMicrotask(() => this.listener?.({
        type: "hello", protocol: 1, helper_version: "0.1.0", compatible: true, capabilities: ["pipelining", "decode"],
      }));
    }
  }
  onMessage(listener: (message: unknown) => void): void {
    this.listener = listener;
  }
  onDisconnect(): void {}
  disconnect(): void {}
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test("requests of a released tab are not timed out, continued or counted later", async () => {
  const port = new SilentHelper();
  const connection = new HelperConnection(() => port, {
    extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 1000, retryMissingMs: 1000, retryCrashMs: 0,
  });
  const speed = new HostSpeed();
  speed.setThreshold(null);
  const counters = new TabCounters();
  const limits = { headTimeoutMs: 60, stallTimeoutMs: 60, maxBodyBytes: 1 << 20 };
  const accelerator = new Accelerator(speed, new HelperClient(connection), () => connection.state, counters, new TimingStore(), {
    batching: { quietMs: 1, maxWaitMs: 2, maxItems: 10 }, limits,
  });
  const answered: string[] = [];
  const responder: FetchResponder = {
    fulfill: (params: Protocol.Fetch.FulfillRequestRequest) => (answered.push(`fulfill ${params.requestId}`), Promise.resolve(true)),
    pass: (id: string) => (answered.push(`pass ${id}`), Promise.resolve()),
  };
  const page: PageInfo = { url: "http://example.org/", topSite: "http://example.org", siteActive: true, addressSpace: "public", privateBrowsing: false };
  const paused: PausedRequest = {
    interceptionId: "i1", url: "http://example.org/x.png", method: "GET", headers: [], cdpResourceType: "Image",
    priority: "Low", frameId: "F", hasBody: false,
  };
  accelerator.handle({ tabId: 7, paused, responder, page });
  for (let i = 0; i < 50 && !port.sent.some((m) => m.type === "batch"); i++) await sleep(5);
  assert.ok(port.sent.some((m) => m.type === "batch"), `the batch went to the helper: ${JSON.stringify([port.sent, answered, connection.state])}`);

  accelerator.tabGone(7);  // the debugger left the tab: Chromium let its paused requests go
  assert.ok(port.sent.some((m) => m.type === "cancel"), "the helper was told to stop");
  counters.newPage(7, "http://example.net/");  // the tab shows its next page
  await sleep(limits.headTimeoutMs * 3);
  assert.deepEqual(answered, [], "nothing answered for a request the browser no longer holds");
  assert.deepEqual(counters.get(7).passed, {}, "the next page's counts hold nothing of it");
  assert.equal(accelerator.inFlight, 0);
});
