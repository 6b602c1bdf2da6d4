// HelperClient against a scripted helper (a fake native port): what it keeps per request, and what becomes of a
// request whose answer is malformed (RequestDelivery behind it, as the accelerator wires it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { HelperClient, type RequestSink } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";
import type { Batch, ToExtension } from "../../../extension/src/generated/protocol.js";
import { RequestDelivery, type DeliveryResult } from "../../../extension/src/deliver/request-delivery.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { HttpsSites } from "../../../extension/src/proxy/https-sites.js";
import { answerInterfacesRequest, type InterfacesReply } from "../../../extension/src/lanes/interfaces-api.js";

const OPTIONS = { extensionVersion: "0.0.0", browser: "chromium" as const, helloTimeoutMs: 1000, retryMissingMs: 5000, retryCrashMs: 0 };

/** A helper that answers hello compatibly; `say` sends it any message, `sent` holds what the extension sent. */
function scripted() {
  const sent: unknown[] = [];
  let listener: ((message: unknown) => void) | null = null;
  let lost: ((error: string | undefined) => void) | null = null;
  const port: NativePort = {
    postMessage: (m: unknown) => {
      sent.push(m);
      if ((m as { type?: string }).type === "hello") {
        queueMicrotask(() => listener?.({ type: "hello", protocol: 1, helper_version: "1.0.0", compatible: true, capabilities: ["pipelining"] }));
      }
    },
    onMessage: (l) => { listener = l; },
    onDisconnect: (l) => { lost = l; },
    disconnect: () => undefined,
  };
  const connection = new HelperConnection(() => port, OPTIONS);
  const client = new HelperClient(connection);
  return {
    connection, client, sent,
    say: (message: ToExtension | Record<string, unknown>) => listener?.(message),
    die: (error?: string) => lost?.(error),
  };
}

interface Heard { kind: string; detail?: string }

function recording(heard: Heard[]): RequestSink {
  return {
    head: () => heard.push({ kind: "head" }),
    body: () => heard.push({ kind: "body" }),
    end: () => heard.push({ kind: "end" }),
    error: (code) => heard.push({ kind: "error", detail: code }),
    timing: () => heard.push({ kind: "timing" }),
    working: () => heard.push({ kind: "working" }),
  };
}

function batchOf(batchId: string, ids: string[]): Batch {
  const requests = ids.map((id) => ({ id, method: "GET", url: `http://example.test/${id}`, headers: [] }));
  const [head, ...rest] = requests;
  if (!head) throw new Error("no requests");
  return { type: "batch", batch_id: batchId, page: { address_space: "public" }, requests: [head, ...rest] };
}

const TIMING = {
  queued: 1, dns_start: null, dns_end: null, connect_start: null, connect_end: null, tls_end: null, sent: null, first_byte: null, last_byte: null,
};

test("a batch the helper refused whole (an error per request, no timing, no batch_done) keeps nothing", async () => {
  const { client, say } = scripted();
  let heard: Heard[] = [];
  const rounds = 50;
  for (let n = 0; n < rounds; n++) {
    heard = [];
    const ids = [`r${n}a`, `r${n}b`];
    const sinks = new Map(ids.map((id) => [id, recording(heard)]));
    assert.equal(await client.send(batchOf(`b${n}`, ids), sinks, () => undefined), true);
    // What lanefetch-host says for a frame it could not read (framing.py: BadFrame) or a batch it refused whole
    // (host.py: _reject): the frame's error, then one per request id it named. Nothing else follows.
    say({ type: "error", code: "too_large", message: "message too large" });
    for (const id of ids) say({ type: "error", id, code: "too_large", message: "not fetched" });
  }
  assert.deepEqual(heard, [{ kind: "error", detail: "too_large" }, { kind: "error", detail: "too_large" }]);
  // A long session refuses some batches: what is kept for them must not grow with it.
  assert.ok(client.inFlight === 0, `${client.inFlight} entries kept for ${rounds * 2} answered requests`);
});

test("a request answered normally still hears its timing, and then nothing is kept", async () => {
  const { client, say } = scripted();
  const heard: Heard[] = [];
  const sinks = new Map([["r1", recording(heard)], ["r2", recording(heard)]]);
  let done = 0;
  assert.equal(await client.send(batchOf("b1", ["r1", "r2"]), sinks, () => { done += 1; }), true);
  say({ type: "head", id: "r1", status: 200, reason: "OK", http_version: "1.1", headers: [], decoded: false });
  say({ type: "end", id: "r1", body_bytes: 0 });
  say({ type: "error", id: "r2", code: "connect_failed", message: "refused" });
  say({ type: "timing", id: "r1", timing: TIMING, retries: 0 });
  say({ type: "timing", id: "r2", timing: TIMING, retries: 0 });
  say({ type: "batch_done", batch_id: "b1", connections: 1, max_concurrent_connections: 1 });
  assert.deepEqual(heard.map((h) => h.kind), ["head", "end", "error", "timing", "timing"]);
  assert.equal(done, 1);
  assert.equal(client.inFlight, 0);
});

const PAUSED: PausedRequest = {
  interceptionId: "i1", url: "http://example.test/r1", method: "GET", headers: [], cdpResourceType: "Image", priority: "Low",
  frameId: "F", hasBody: false,
};

test("a malformed head from the helper never leaves the browser's request unanswered", async (t) => {
  const malformed: Record<string, Record<string, unknown>> = {
    "no reason": { status: 200, http_version: "1.1", headers: [], decoded: false },
    "a field that is no pair": { status: 200, reason: "OK", http_version: "1.1", headers: [5], decoded: false },
    "headers not a list": { status: 200, reason: "OK", http_version: "1.1", headers: "x", decoded: false },
    "status not a number": { status: "200", reason: "OK", http_version: "1.1", headers: [], decoded: false },
  };
  for (const [what, head] of Object.entries(malformed)) {
    await t.test(what, async () => {
      const { client, say } = scripted();
      const answers: string[] = [];
      const results: DeliveryResult[] = [];
      const responder: FetchResponder = {
        fulfill: () => { answers.push("fulfill"); return Promise.resolve(true); },
        pass: () => { answers.push("pass"); return Promise.resolve(); },
      };
      const delivery = new RequestDelivery("r1", PAUSED, responder, {
        done: (result) => results.push(result), timing: () => undefined, cancel: (id) => client.cancel([id]),
      });
      assert.equal(await client.send(batchOf("b1", ["r1"]), new Map([["r1", delivery]])), true);
      delivery.sent();
      try {
        say({ type: "head", id: "r1", ...head });
        say({ type: "body", id: "r1", data: "aGk=" });
        say({ type: "end", id: "r1", body_bytes: 2 });
      } finally {
        await new Promise((r) => setImmediate(r));
        delivery.drop();  // its timers, if the test fails
      }
      assert.deepEqual(answers, ["pass"], `${what}: the browser fetches it itself`);
      assert.equal(results[0]?.outcome, "passed");
    });
  }
});

test("an interfaces list too large for the port reaches the options page as the error of its own question", async () => {
  // The helper's form of it (bridge/host.py, _too_large): the answer's error with the question's nonce, so the page
  // says why at once instead of waiting for its timeout and taking the helper for unavailable.
  const { connection, client, sent, say } = scripted();
  assert.equal(await connection.ready(), true);
  const replies: InterfacesReply[] = [];
  assert.equal(answerInterfacesRequest({ type: "lanefetch/interfaces" }, client, () => connection.state, (r) => replies.push(r)), true);
  await new Promise((r) => setImmediate(r));
  const asked = sent.find((m) => (m as { type?: string }).type === "interfaces") as { nonce: string } | undefined;
  assert.ok(asked);
  say({ type: "error", code: "too_large", message: "another answer's, naming no question" });
  say({ type: "interfaces_state", nonce: asked.nonce, error: "the helper's answer is too large for the browser's port (message of 1204815 bytes)" });
  await new Promise((r) => setImmediate(r));
  assert.equal(replies.length, 1);
  assert.match(replies[0]?.state?.error ?? "", /too large/);
  assert.equal(replies[0]?.state?.interfaces, undefined);
});

test("an HTTPS sites' state too large for the port leaves no site active and shows its error on each opted-in site", async () => {
  // The helper's form of it (bridge/host.py, _too_large): an https_state with the question's nonce, no site and the
  // error. An older state must not stand for it (the newer set may have removed a site's CA).
  const { connection, sent, say } = scripted();
  assert.equal(await connection.ready(), true);
  const https = new HttpsSites(connection);
  const rule = { scope: "domain" as const, name: "example.com" };
  https.setWanted([rule], [rule]);
  const nonceOf = (n: number): string => (sent.filter((m) => (m as { type?: string }).type === "https_sites")[n] as { nonce: string }).nonce;
  say({ type: "https_state", nonce: nonceOf(0), profiles: ["/p"], which: "the profile", sites: [{ ...rule, state: "active" }] });
  assert.equal(https.covers("https://www.example.com/a.js"), true);
  https.setWanted([rule], [rule]);
  say({ type: "https_state", nonce: nonceOf(1), profiles: [], which: "", sites: [], error: "the helper's answer is too large for the browser's port" });
  assert.equal(https.covers("https://www.example.com/a.js"), false);
  const status = https.statusFor(rule, [rule]);
  assert.equal(status.state, "failed");
  assert.match(status.detail ?? "", /too large/);
  assert.equal(https.statusFor(null, [rule]).state, null);
});
