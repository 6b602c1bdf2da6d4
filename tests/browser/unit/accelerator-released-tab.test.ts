// A tab released (debugger detached, tab closed) while its requests are with the helper or wait to go to it: the
// helper is told to stop them, their answers are dropped, and nothing of them is counted afterwards.
// - With the helper: their deliveries' own timers (no head, body stalled) used to stay armed; 20 s later each
//   "timed out", was continued on the gone debuggee and counted as "left to the browser: timeout" on whatever page
//   the tab showed by then.
// - Waiting for the browser's large response on its origin to end (at most FINISHING_WAIT_MS,
//   browser-warm-connection.ts): the request is still the tab's (the tab is busy: the tab policy turns Fetch off
//   only once it is idle, and Fetch.disable would hand the request to the browser while the helper is asked for it
//   too), and released meanwhile nothing of it is sent to the helper or answered later.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { Accelerator, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { BrowserWarmConnection, FINISHING_WAIT_MS } from "../../../extension/src/intercept/browser-warm-connection.js";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";
import { SilentHelper } from "../support/silent-helper.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const batchSent = (port: SilentHelper): boolean => port.sent.some((m) => m.type === "batch");

/** An accelerator on a silent helper, one request of tab 7 handed to it (a script behind the document's large
 * answer still arriving over the browser's HTTP/1.1 connection where `behindWarm`, else an image). */
async function setUp(behindWarm: boolean) {
  const port = new SilentHelper(["pipelining", "decode", "browser_warm"]); // able to answer from what it holds
  const connection = new HelperConnection(() => port, {
    extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 1000, retryMissingMs: 1000, retryCrashMs: 0,
  });
  assert.equal(await connection.ready(), true);
  const speed = new HostSpeed();
  speed.setThreshold(null);
  const counters = new TabCounters();
  const limits = { headTimeoutMs: 60, stallTimeoutMs: 60, maxBodyBytes: 1 << 20 };
  const accelerator = new Accelerator(speed, new HelperClient(connection), () => connection.state, counters, new TimingStore(), {
    batching: { quietMs: 1, maxWaitMs: 2, maxItems: 10 }, limits,
  });
  if (behindWarm) {
    const warm = new BrowserWarmConnection();
    accelerator.warmConnection = warm;
    warm.progress("http://example.org/", { protocol: "http/1.1", remoteAddress: "192.0.2.1", fromCache: null, bodyBytes: 200_000 });
  }
  const answered: string[] = [];
  const responder: FetchResponder = {
    fulfill: (params: Protocol.Fetch.FulfillRequestRequest) => (answered.push(`fulfill ${params.requestId}`), Promise.resolve(true)),
    pass: (id: string) => (answered.push(`pass ${id}`), Promise.resolve()),
  };
  const page: PageInfo = { url: "http://example.org/", topSite: "http://example.org", siteActive: true, addressSpace: "public", plainHttpHosts: ["example.org"], privateBrowsing: false };
  const paused: PausedRequest = behindWarm
    ? { interceptionId: "i1", url: "http://example.org/style.css", method: "GET", headers: [], cdpResourceType: "Stylesheet", priority: "VeryHigh", frameId: "F", hasBody: false }
    : { interceptionId: "i1", url: "http://example.org/x.png", method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false };
  accelerator.handle({ tabId: 7, paused, responder, page });
  return { port, connection, counters, accelerator, answered, limits };
}

test("requests of a released tab are not timed out, continued or counted later", async () => {
  const { port, connection, counters, accelerator, answered, limits } = await setUp(false);
  for (let i = 0; i < 50 && !batchSent(port); i++) await sleep(5);
  assert.ok(batchSent(port), `the batch went to the helper: ${JSON.stringify([port.sent, answered, connection.state])}`);
  accelerator.tabGone(7);  // the debugger left the tab: Chromium let its paused requests go
  assert.ok(port.sent.some((m) => m.type === "cancel"), "the helper was told to stop");
  counters.newPage(7, "http://example.net/");  // the tab shows its next page
  await sleep(limits.headTimeoutMs * 3);
  assert.deepEqual(answered, [], "nothing answered for a request the browser no longer holds");
  assert.deepEqual(counters.get(7).passed, {}, "the next page's counts hold nothing of it");
  assert.equal(accelerator.inFlight, 0);
});

test("a request waiting for the browser's warm connection keeps its tab busy", async () => {
  const { port, accelerator } = await setUp(true);
  await sleep(10); // batched, and waiting for the document's end
  assert.ok(!batchSent(port), "the batch waits for the browser's response to end");
  assert.equal(accelerator.busyFor(7), true);
  await sleep(FINISHING_WAIT_MS + 20);
  assert.ok(batchSent(port), "then it goes to the helper");
  assert.equal(accelerator.busyFor(7), true);
});

test("a tab released while its request waits for the browser's warm connection: nothing sent, nothing answered", async () => {
  const { port, accelerator, answered, limits } = await setUp(true);
  await sleep(10);
  assert.ok(!batchSent(port), "the batch waits for the browser's response to end");
  accelerator.tabGone(7);
  await sleep(FINISHING_WAIT_MS + limits.headTimeoutMs * 2);
  assert.ok(!batchSent(port), "no batch for a tab that went");
  assert.deepEqual(answered, [], "nothing answered for a request the browser no longer holds");
  assert.equal(accelerator.inFlight, 0);
});
