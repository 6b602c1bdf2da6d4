// Chromium: a paused request whose page is still being learned (its document's loader, up to 100 ms; a racing tab's
// answer about its document's protocol, up to 300 ms) is handed over once that is known (Accelerator.handleWhen).
// Its tab released meanwhile (debugger detached, tab closed), the browser no longer holds the request: it used to be
// batched and fetched by the helper all the same (a wasted fetch), its answer sent to a gone debuggee and counted
// on whatever page the tab showed by then. Meanwhile the tab is busy: the tab policy turns Fetch off only once it
// is idle (Fetch.disable would hand the request to the browser while the helper is asked for it too).
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { Accelerator, type HeldRequest, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";
import { SilentHelper } from "../support/silent-helper.js";

async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

async function setUp(t: TestContext) {
  const port = new SilentHelper();
  const connection = new HelperConnection(() => port, {
    extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 1000, retryMissingMs: 1000, retryCrashMs: 0,
  });
  assert.equal(await connection.ready(), true);
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const speed = new HostSpeed();
  speed.setThreshold(null);
  const counters = new TabCounters();
  const accelerator = new Accelerator(speed, new HelperClient(connection), () => connection.state, counters, new TimingStore(), {
    batching: { quietMs: 1, maxWaitMs: 2, maxItems: 10 }, limits: { headTimeoutMs: 60, stallTimeoutMs: 60, maxBodyBytes: 1 << 20 },
  });
  const answered: string[] = [];
  const responder: FetchResponder = {
    fulfill: (params: Protocol.Fetch.FulfillRequestRequest) => (answered.push(`fulfill ${params.requestId}`), Promise.resolve(true)),
    pass: (id: string) => (answered.push(`pass ${id}`), Promise.resolve()),
  };
  const page: PageInfo = { url: "http://example.org/", topSite: "http://example.org", siteActive: true, addressSpace: "public", plainHttpHosts: ["example.org"], privateBrowsing: false };
  const paused: PausedRequest = {
    interceptionId: "i1", url: "http://example.org/x.png", method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false,
  };
  const held: HeldRequest = { tabId: 7, paused, responder, page };
  let give: (held: HeldRequest) => void = () => undefined;
  accelerator.handleWhen(7, new Promise<HeldRequest>((resolve) => (give = resolve)));
  const batches = (): number => port.sent.filter((m) => m.type === "batch").length;
  return { accelerator, counters, answered, held, give: (change: Partial<HeldRequest> = {}): void => give({ ...held, ...change }), batches };
}

test("a request released while its page was being learned is not batched, sent or answered", async (t) => {
  const { accelerator, counters, answered, give, batches } = await setUp(t);
  accelerator.tabGone(7);
  give();  // its loader came (or the wait ended) after the tab went
  await flush();
  t.mock.timers.tick(10);
  await flush();
  t.mock.timers.tick(200);
  await flush();
  assert.equal(batches(), 0, "the helper is asked for nothing the browser no longer holds");
  assert.deepEqual(answered, []);
  assert.deepEqual(counters.get(7).passed, {});
  assert.equal(accelerator.inFlight, 0);
  assert.equal(accelerator.busyFor(7), false);
});

test("a request waiting for its page keeps its tab busy, and is batched once its page is known", async (t) => {
  const { accelerator, give, batches } = await setUp(t);
  assert.equal(accelerator.busyFor(7), true, "the tab policy must not turn Fetch off under it");
  give();
  await flush();
  t.mock.timers.tick(10);
  await flush();
  assert.equal(batches(), 1);
  assert.equal(accelerator.busyFor(7), true);
});

test("a request passed at once when its page is known leaves its tab idle, and says so", async (t) => {
  const { accelerator, answered, held, give } = await setUp(t);
  const idle: number[] = [];
  accelerator.onIdle((tabId) => idle.push(tabId));
  give({ page: { ...held.page, siteActive: false } });  // its page turned out to be a site that is not on
  await flush();
  assert.deepEqual(answered, ["pass i1"]);
  assert.equal(accelerator.busyFor(7), false);
  assert.deepEqual(idle, [7], "a tab policy waiting for the tab to be idle hears it at once");
});
