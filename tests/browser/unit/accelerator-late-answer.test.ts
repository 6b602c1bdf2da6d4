// A request answered after its tab went on to another page load of the same URL (a reload, a link to the same page)
// is counted for the page that asked for it: the popup's counts of the new page hold nothing of it. The browser's
// pass of a request is a debugger command, answered later; a reload meanwhile reset the tab's counts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Accelerator, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";
import { SilentHelper } from "../support/silent-helper.js";

const PAGE = "http://example.org/";

test("a request passed after its tab reloaded the same URL is not counted in the reloaded page's counts", async () => {
  const port = new SilentHelper(["pipelining"]);
  const connection = new HelperConnection(() => port, {
    extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 1000, retryMissingMs: 1000, retryCrashMs: 0,
  });
  const counters = new TabCounters();
  const store = new TimingStore();
  const accelerator = new Accelerator(new HostSpeed(), new HelperClient(connection), () => connection.state, counters, store);
  const passes: (() => void)[] = [];
  const responder: FetchResponder = {
    fulfill: () => Promise.resolve(true),
    pass: () => new Promise<void>((resolve) => passes.push(resolve)),
  };
  // The site is off: each request is passed to the browser at once, its pass answered when the test says.
  const page: PageInfo = { url: PAGE, topSite: "http://example.org", siteActive: false, addressSpace: "public", plainHttpHosts: ["example.org"], privateBrowsing: false };
  const paused = (id: string): PausedRequest => ({
    interceptionId: id, url: `${PAGE}${id}.png`, method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false,
  });
  counters.newPage(7, PAGE);
  store.newPage(7, PAGE, 1000);
  accelerator.handle({ tabId: 7, paused: paused("old"), responder, page });
  counters.newPage(7, PAGE); // the tab reloads: its counts start afresh
  const reload = store.newPage(7, PAGE, 2000);
  accelerator.handle({ tabId: 7, paused: paused("new"), responder, page });
  for (const pass of passes.splice(0)) pass();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(counters.get(7).passed, { site_off: 1 }, "the reload's own request only");
  assert.deepEqual(store.pageLoad(reload.id)?.records.map((r) => r.url), [`${PAGE}new.png`]);
  assert.equal(accelerator.inFlight, 0);
});
