// Split downloads from the extension's side: which requests are marked `split` (the rule), the options page's
// policy form, and the accelerator with the REAL helper process and a real origin answering Range (the only stand-in
// is the recorder in place of Chrome's Fetch domain).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Protocol } from "devtools-protocol";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import { Accelerator, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { DEFAULT_BATCHING } from "../../../extension/src/batch/batcher.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { DEFAULT_LIMITS } from "../../../extension/src/deliver/request-delivery.js";
import type { Batch } from "../../../extension/src/generated/protocol.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { capToForm, policyFromForm } from "../../../extension/src/lanes/policy-form.js";
import { likelyLarge } from "../../../extension/src/lanes/split-rule.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";
import { OriginServer } from "../support/origin-server.js";
import { helperHost } from "../support/paths.js";
import { eventually } from "../support/eventually.js";
import { ProcessNativePort, type ProcessPortLog } from "../support/process-native-port.js";
import { bigBody, testSite } from "../support/test-site.js";

/** The loopback test server is "fast": these tests take its requests unless one turns step-aside on. */
function takingFastLinks(): HostSpeed {
  const speed = new HostSpeed();
  speed.setThreshold(null);
  return speed;
}

test("only fetch/XHR/other requests for usually large files are marked for splitting", () => {
  const yes = [["https://a.example/dl/linux.iso", "fetch"], ["https://a.example/x/model.GGUF?v=2", "xhr"],
    ["https://a.example/a/b.tar.gz", "other"], ["https://a.example/report.pdf#page=2", "fetch"], ["https://a.example/app.wasm", "fetch"]] as const;
  for (const [url, type] of yes) assert.ok(likelyLarge(url, type), `${url} ${type}`);
  const no = [["https://a.example/photo.jpg", "image"], ["https://a.example/big.zip", "image"], ["https://a.example/clip.mp4", "media"],
    ["https://a.example/app.js", "script"], ["https://a.example/api/data.json", "fetch"], ["https://a.example/zip", "fetch"],
    ["https://a.example/.zip", "fetch"], ["https://a.example/a.zip/", "fetch"], ["https://a.example/font.bin", "font"], ["not a url.zip", "fetch"]] as const;
  for (const [url, type] of no) assert.ok(!likelyLarge(url, type), `${url} ${type}`);
});

test("the policy form refuses bad input with the reason and converts the cap to bytes", () => {
  const form = { enabled: true, metered: false, weight: "1.5", capMb: "" };
  assert.deepEqual(policyFromForm(form), { policy: { enabled: true, metered: false, weight: 1.5, daily_cap_bytes: null } });
  assert.deepEqual(policyFromForm({ ...form, capMb: "250.5" }), { policy: { enabled: true, metered: false, weight: 1.5, daily_cap_bytes: 250_500_000 } });
  assert.deepEqual(policyFromForm({ ...form, capMb: "0" }), { policy: { enabled: true, metered: false, weight: 1.5, daily_cap_bytes: null } });
  for (const weight of ["0", "-2", "", "abc", "Infinity"]) assert.match((policyFromForm({ ...form, weight }) as { error: string }).error, /^Weight must be a number above 0/);
  // Above the form's largest weight: said so (not "must be above 0", which it is).
  assert.equal((policyFromForm({ ...form, weight: "2000000" }) as { error: string }).error,
    "Weight must be a number above 0 and at most 1000000, not \"2000000\".");
  assert.deepEqual(policyFromForm({ ...form, weight: "1000000" }), { policy: { enabled: true, metered: false, weight: 1e6, daily_cap_bytes: null } });
  for (const capMb of ["-1", "x"]) assert.match((policyFromForm({ ...form, capMb }) as { error: string }).error, /^Daily cap must be/);
  assert.equal(capToForm(null), "");
  assert.equal(capToForm(250_500_000), "250.5");
});

class Recorder implements FetchResponder {
  readonly answers = new Map<string, { kind: "fulfill"; params: Protocol.Fetch.FulfillRequestRequest } | { kind: "pass" }>();
  fulfill(params: Protocol.Fetch.FulfillRequestRequest): Promise<boolean> {
    this.answers.set(params.requestId, { kind: "fulfill", params });
    return Promise.resolve(true);
  }
  pass(id: string): Promise<void> {
    this.answers.set(id, { kind: "pass" });
    return Promise.resolve();
  }
}

const server = new OriginServer(testSite);
let port = 0;
const home = mkdtempSync(join(tmpdir(), "lf-lanes-split-"));
before(async () => {
  port = await server.listen();
});
after(async () => {
  await server.close();
  rmSync(home, { recursive: true, force: true });
});

const BIG = 9_000_000; // above the 8 MiB fulfil limit of other requests, below the split one

async function run(splitLarge: boolean): Promise<{ recorder: Recorder; batch: Batch; accelerator: Accelerator; store: TimingStore }> {
  const log: ProcessPortLog = { sent: [], received: [], schemaViolations: [] };
  // The helper keeps its interface policy and cache in this test's own directories, never the runner's.
  const env = { ...process.env, XDG_CONFIG_HOME: join(home, "config"), XDG_CACHE_HOME: join(home, "cache") };
  const connection = new HelperConnection(() => new ProcessNativePort(helperHost, log, env),
    { extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 10000, retryMissingMs: 5000, retryCrashMs: 0 });
  const store = new TimingStore();
  const accelerator = new Accelerator(takingFastLinks(), new HelperClient(connection), () => connection.state, new TabCounters(), store,
    { batching: DEFAULT_BATCHING, limits: DEFAULT_LIMITS });
  accelerator.splitLarge = splitLarge;
  assert.ok(await connection.ready());
  const recorder = new Recorder();
  const page: PageInfo = { url: `http://127.0.0.1:${port}/`, topSite: "http://127.0.0.1", siteActive: true, addressSpace: "loopback", plainHttpHosts: [], privateBrowsing: false };
  const paused = (n: number, path: string, cdpResourceType: string): PausedRequest => ({
    interceptionId: `i${n}`, url: `http://127.0.0.1:${port}${path}`, method: "GET", headers: [["Accept", "*/*"]],
    cdpResourceType, priority: "High", frameId: "F", hasBody: false,
  });
  const requests = [paused(1, `/big/${BIG}.bin`, "Fetch"), paused(2, "/img/3.png", "Image"), paused(3, "/big/300000.bin", "Image")];
  for (const p of requests) accelerator.handle({ tabId: 1, paused: p, responder: recorder, page });
  await eventually("every request answered", () => recorder.answers.size === requests.length, { timeoutMs: 60000, everyMs: 20 });
  // The helper's timing messages follow each request's end.
  await eventually("the helper's timing of every fetched request", () => store.forTab(1).every((r) => r.outcome !== "fulfilled" || r.timing !== null), { everyMs: 20 });
  connection.close();
  assert.deepEqual(log.schemaViolations, []);
  const batch = log.sent.find((m) => (m as { type: string }).type === "batch") as Batch;
  return { recorder, batch, accelerator, store };
}

test("with the option on, a large fetch goes split (Range requests, lanes timing) and is fulfilled exact above 8 MiB", async () => {
  server.clearLog();
  const { recorder, batch, store } = await run(true);
  assert.deepEqual(batch.requests.map((r) => r.split === true), [true, false, false], "only the .bin fetch is marked");
  const answer = recorder.answers.get("i1");
  assert.equal(answer?.kind, "fulfill");
  const body = Buffer.from((answer as { params: Protocol.Fetch.FulfillRequestRequest }).params.body ?? "", "base64");
  const sha = (b: Buffer): string => createHash("sha256").update(b).digest("hex");
  assert.equal(body.length, BIG);
  assert.equal(sha(body), sha(bigBody(BIG)));
  const ranges = server.log.filter((r) => r.path === `/big/${BIG}.bin`).map((r) => r.headers.range);
  assert.ok(ranges.length >= 2 && ranges.every((r) => typeof r === "string" && r.startsWith("bytes=")), JSON.stringify(ranges));
  assert.ok(server.log.every((r) => r.owner.kind === "helper"));
  const record = store.forTab(1).find((r) => r.url.endsWith(`/big/${BIG}.bin`));
  assert.ok(record?.timing?.lanes && record.timing.lanes.length >= 1, "the timing record carries the lanes");
  assert.equal(recorder.answers.get("i2")?.kind, "fulfill");
  assert.equal(recorder.answers.get("i3")?.kind, "fulfill");
  assert.equal(server.log.filter((r) => r.path === "/big/300000.bin" && r.headers.range !== undefined).length, 0, "an image is never split");
});

test("with the option off (the default) nothing is split and a body above 8 MiB is left to the browser", async () => {
  server.clearLog();
  const { recorder, batch } = await run(false);
  assert.ok(batch.requests.every((r) => r.split === undefined));
  assert.equal(recorder.answers.get("i1")?.kind, "pass");
  assert.ok(server.log.every((r) => r.headers.range === undefined));
});
