// The extension holds a body whole until Fetch.fulfillRequest takes it; every request the helper answered could hold
// 8 MiB (32 MiB split) at once, with no bound across them (a page of many large images held them all). BodyBudget
// bounds the total (64 MiB by default): a request whose body would take it above the limit goes to the browser
// (`memory_budget`) — before it is sent while (nearly) no room is left, or when its head's Content-Length or its
// bytes do not fit — and no request already holding a share loses it.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { Accelerator, type HeldRequest, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";
import { BodyBudget, DEFAULT_BODY_BUDGET_BYTES } from "../../../extension/src/deliver/body-budget.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { Head } from "../../../extension/src/generated/protocol.js";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";
import { seededRandom } from "../support/seeded-random.js";

const b64 = (bytes: number): string => Buffer.alloc(bytes, 0x61).toString("base64");

test("shares: taken whole or not at all, only growing, released once; the total never above the limit", () => {
  const budget = new BodyBudget(100, 10);
  assert.equal(DEFAULT_BODY_BUDGET_BYTES, 64 * 1024 * 1024);
  assert.equal(budget.need("a", 60), true);
  assert.equal(budget.need("b", 50), false, "60 + 50 > 100");
  assert.equal(budget.usedBytes, 60, "a refused share changes nothing");
  assert.equal(budget.need("b", 40), true);
  assert.equal(budget.usedBytes, 100);
  assert.equal(budget.need("a", 30), true, "a share needing less than it holds is already there");
  assert.equal(budget.usedBytes, 100);
  assert.equal(budget.need("c", 0), true, "nothing needed, nothing taken");
  assert.equal(budget.need("a", 61), false, "a share does not grow past the limit either");
  assert.equal(budget.roomForNew(), false);
  budget.release("b");
  budget.release("b");
  assert.equal(budget.usedBytes, 60);
  assert.equal(budget.roomForNew(), true);
  assert.equal(budget.need("d", Number.NaN), false);
  assert.equal(budget.need("d", -1), false);
  budget.release("a");
  assert.equal(budget.usedBytes, 0);
  assert.equal(budget.holders, 0);
});


test("random sequences: used is the sum of the granted shares, never above the limit; no grant is taken back", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rand = seededRandom(seed);
    const limit = 1 + Math.floor(rand() * 1000);
    const budget = new BodyBudget(limit);
    const model = new Map<string, number>();
    for (let step = 0; step < 200; step++) {
      const id = `r${Math.floor(rand() * 8)}`;
      if (rand() < 0.3) {
        budget.release(id);
        model.delete(id);
      } else {
        const bytes = Math.floor(rand() * limit * 0.6);
        const before = model.get(id) ?? 0;
        const others = [...model].filter(([k]) => k !== id).reduce((n, [, v]) => n + v, 0);
        const fits = others + Math.max(before, bytes) <= limit;
        assert.equal(budget.need(id, bytes), fits, `seed ${seed} step ${step}`);
        if (fits && bytes > before) model.set(id, bytes);
      }
      const sum = [...model.values()].reduce((n, v) => n + v, 0);
      assert.equal(budget.usedBytes, sum, `seed ${seed} step ${step}`);
      assert.ok(budget.usedBytes <= limit);
    }
  }
});

const head = (headers: [string, string][] = [], decoded = false): Head => ({
  type: "head", id: "x", status: 200, reason: "OK", http_version: "1.1", headers, decoded,
});

function deliveries(t: TestContext, budget: BodyBudget) {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const fulfilled: Protocol.Fetch.FulfillRequestRequest[] = [];
  const passed: string[] = [];
  const cancelled: string[] = [];
  const results = new Map<string, DeliveryResult>();
  const responder: FetchResponder = {
    fulfill: (p) => (fulfilled.push(p), Promise.resolve(true)),
    pass: (id) => (passed.push(id), Promise.resolve()),
  };
  const make = (id: string): RequestDelivery => {
    const paused = { interceptionId: `i-${id}`, url: `http://a.test/${id}`, method: "GET", headers: [] } as unknown as PausedRequest;
    const d = new RequestDelivery(id, paused, responder, {
      done: (r) => results.set(id, r), timing: () => undefined, cancel: (c) => cancelled.push(c),
    }, { headTimeoutMs: 1000, stallTimeoutMs: 1000, maxBodyBytes: 1000 }, budget);
    d.sent();
    return d;
  };
  return { make, fulfilled, passed, cancelled, results };
}

const settled = (): Promise<void> => new Promise((r) => setImmediate(r));

test("a head whose Content-Length does not fit goes to the browser at once; the request holding the room is fulfilled", async (t) => {
  const budget = new BodyBudget(100, 10);
  const { make, fulfilled, passed, cancelled, results } = deliveries(t, budget);
  const a = make("a");
  const b = make("b");
  a.head(head([["Content-Length", "80"]]));
  assert.equal(budget.usedBytes, 80, "an announced body takes its room before its bytes come");
  b.head(head([["Content-Length", "30"]]));
  assert.deepEqual(cancelled, ["b"], "the helper is told to stop it");
  assert.deepEqual(passed, ["i-b"], "continued: the browser fetches it itself");
  a.body({ data: b64(50) });
  a.body({ data: b64(30) });
  a.end();
  await settled();
  const rb = results.get("b");
  assert.equal(rb?.outcome === "passed" && rb.reason, "memory_budget");
  assert.equal(results.get("a")?.outcome, "fulfilled");
  assert.equal(fulfilled[0]?.body, b64(80), "nothing of what was taken is lost");
  assert.equal(budget.usedBytes, 0, "its share is free once the browser took the fulfil");
  const c = make("c");
  c.head(head([["Content-Length", "90"]]));
  assert.equal(budget.usedBytes, 90, "the room is there again");
  c.drop();
  assert.equal(budget.usedBytes, 0);
});

test("a body of unknown length takes its bytes as they come, and goes to the browser when they no longer fit", async (t) => {
  const budget = new BodyBudget(100, 10);
  const { make, passed, cancelled, results } = deliveries(t, budget);
  const a = make("a");
  const b = make("b");
  a.head(head([], true));
  b.head(head([], true));
  a.body({ data: b64(60) });
  b.body({ data: b64(30) });
  assert.equal(budget.usedBytes, 90);
  b.body({ data: b64(20) });
  assert.deepEqual(cancelled, ["b"]);
  assert.deepEqual(passed, ["i-b"]);
  assert.equal(budget.usedBytes, 60, "the passed request's share is free; the other keeps its own");
  assert.equal(b.heldBytes, 0);
  a.body({ data: b64(40) });
  a.end();
  await settled();
  assert.equal(results.get("a")?.outcome, "fulfilled");
  const rb = results.get("b");
  assert.equal(rb?.outcome === "passed" && rb.reason, "memory_budget");
  assert.equal(budget.usedBytes, 0);
});

test("every other end frees the share: failed, timed out, refused", async (t) => {
  const budget = new BodyBudget(1000, 10);
  const { make } = deliveries(t, budget);
  const failed = make("f");
  failed.head(head([["Content-Length", "500"]]));
  failed.error("connection_lost", "port closed");
  const slow = make("s");
  slow.head(head([], true));
  slow.body({ data: b64(100) });
  assert.equal(budget.usedBytes, 100);
  t.mock.timers.tick(1000);
  const coded = make("c");
  coded.head(head([["Content-Length", "700"]]));
  coded.body({ data: b64(701) });  // longer than announced: refused
  await settled();
  assert.equal(budget.usedBytes, 0);
  assert.equal(budget.holders, 0);
});

/** A helper's port that says hello, keeps what the extension sends, and answers what the test tells it to. */
class ScriptedHelper implements NativePort {
  readonly sent: { type: string; requests?: { id: string }[] }[] = [];
  private listener: ((message: unknown) => void) | null = null;
  postMessage(message: unknown): void {
    const m = message as { type: string };
    this.sent.push(m);
    if (m.type === "hello") {
      queueMicrotask(() => this.listener?.({ type: "hello", protocol: 1, helper_version: "0.1.0", compatible: true, capabilities: ["pipelining", "decode"] }));
    }
  }
  onMessage(listener: (message: unknown) => void): void {
    this.listener = listener;
  }
  onDisconnect(): void {}
  disconnect(): void {}
  say(message: object): void {
    this.listener?.(message);
  }
  batches(): { id: string }[][] {
    return this.sent.flatMap((m) => (m.type === "batch" && m.requests ? [m.requests] : []));
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

test("accelerator: a request is not sent to the helper while the bodies held leave no room; it is once they are answered", async (t) => {
  const port = new ScriptedHelper();
  const connection = new HelperConnection(() => port, {
    extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 1000, retryMissingMs: 1000, retryCrashMs: 0,
  });
  assert.equal(await connection.ready(), true);
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const speed = new HostSpeed();
  speed.setThreshold(null);
  const counters = new TabCounters();
  const budget = new BodyBudget(1000, 100);
  const accelerator = new Accelerator(speed, new HelperClient(connection), () => connection.state, counters, new TimingStore(), {
    batching: { quietMs: 1, maxWaitMs: 2, maxItems: 10 }, limits: { headTimeoutMs: 600, stallTimeoutMs: 600, maxBodyBytes: 1000 }, bodyBudget: budget,
  });
  assert.equal(accelerator.bodyBudget, budget);
  const answered: string[] = [];
  const responder: FetchResponder = {
    fulfill: (params) => (answered.push(`fulfill ${params.requestId}`), Promise.resolve(true)),
    pass: (id) => (answered.push(`pass ${id}`), Promise.resolve()),
  };
  const page: PageInfo = { url: "http://example.org/", topSite: "http://example.org", siteActive: true, addressSpace: "public", plainHttpHosts: ["example.org"], privateBrowsing: false };
  const held = (n: number): HeldRequest => ({
    tabId: 7, responder, page,
    paused: { interceptionId: `i${n}`, url: `http://example.org/${n}.png`, method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false },
  });
  accelerator.handle(held(1));
  await flush();
  t.mock.timers.tick(5);
  await flush();
  const [first] = port.batches();
  const id = first?.[0]?.id ?? "";
  assert.notEqual(id, "");
  port.say({ type: "head", id, status: 200, reason: "OK", http_version: "1.1", headers: [["Content-Length", "950"]], decoded: false });
  assert.equal(budget.usedBytes, 950);

  accelerator.handle(held(2));
  await flush();
  t.mock.timers.tick(5);
  await flush();
  assert.equal(port.batches().length, 1, "not sent: its answer could only be thrown away");
  assert.deepEqual(answered, ["pass i2"]);
  assert.deepEqual(counters.get(7).passed, { memory_budget: 1 });

  port.say({ type: "body", id, data: b64(950) });
  port.say({ type: "end", id, body_bytes: 950 });
  await flush();
  assert.deepEqual(answered, ["pass i2", "fulfill i1"], "the request that held the room is delivered whole");
  assert.equal(budget.usedBytes, 0);

  accelerator.handle(held(3));
  await flush();
  t.mock.timers.tick(5);
  await flush();
  assert.equal(port.batches().length, 2, "room again: sent to the helper");
  t.mock.timers.tick(600);
  await flush();
  assert.equal(budget.usedBytes, 0);
});
