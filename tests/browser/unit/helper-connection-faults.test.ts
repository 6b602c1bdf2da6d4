// HelperConnection when the native port cannot even be opened (connectNative throws): ready() resolves false, the
// state says why, and the next ready() within the retry wait does not try again (no reconnect storm). A hello of
// another protocol, and close() during the hello, never leave ready() waiting.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";

const OPTIONS = { extensionVersion: "0.0.0", browser: "chromium" as const, helloTimeoutMs: 1000, retryMissingMs: 5000, retryCrashMs: 500 };

test("connectNative throwing resolves ready() false and is not retried at once", async () => {
  let attempts = 0;
  let clock = 0;
  const connection = new HelperConnection((): NativePort => {
    attempts += 1;
    throw new Error("Specified native messaging host not found.");
  }, OPTIONS, () => clock);
  assert.equal(await connection.ready(), false);
  assert.equal(connection.state.status, "not_installed");
  clock += 100;
  assert.equal(await connection.ready(), false);
  assert.equal(attempts, 1);
  clock += OPTIONS.retryMissingMs;
  assert.equal(await connection.ready(), false);
  assert.equal(attempts, 2);
});

/** A port whose helper answers hello with `reply`. */
function answering(reply: Record<string, unknown>): () => NativePort {
  return () => {
    let listener: ((message: unknown) => void) | null = null;
    return {
      postMessage: (m: unknown) => {
        if ((m as { type?: string }).type === "hello") queueMicrotask(() => listener?.(reply));
      },
      onMessage: (l) => { listener = l; },
      onDisconnect: () => undefined,
      disconnect: () => undefined,
    };
  };
}

test("a hello naming another protocol is incompatible, even if it says compatible", async () => {
  const connection = new HelperConnection(answering({
    type: "hello", protocol: 2, helper_version: "9.0.0", compatible: true, capabilities: ["pipelining"],
  }), OPTIONS);
  assert.equal(await connection.ready(), false);
  assert.deepEqual(connection.state, {
    status: "incompatible", message: "helper 9.0.0 speaks protocol 2; this extension speaks protocol 1",
  });
});

/** Whether `promise` is settled once the tasks queued now have run (no timer can fire in between that matters). */
async function settledSoon<T>(promise: Promise<T>): Promise<{ value: T } | "pending"> {
  return Promise.race([promise.then((value) => ({ value })), new Promise<"pending">((r) => setImmediate(() => r("pending")))]);
}

test("close() while the hello is awaited resolves ready() false, and the next ready() connects anew", async () => {
  let attempts = 0;
  let answer = false;
  const connection = new HelperConnection((): NativePort => {
    attempts += 1;
    let listener: ((message: unknown) => void) | null = null;
    return {
      postMessage: (m: unknown) => {
        const reply = { type: "hello", protocol: 1, helper_version: "1.0.0", compatible: true, capabilities: [] };
        if ((m as { type?: string }).type === "hello" && answer) queueMicrotask(() => listener?.(reply));
      },
      onMessage: (l) => { listener = l; },
      onDisconnect: () => undefined,
      disconnect: () => undefined,
    };
  }, { ...OPTIONS, retryCrashMs: 0 });
  const first = connection.ready();
  assert.equal(connection.state.status, "connecting");
  connection.close();
  assert.deepEqual(await settledSoon(first), { value: false });
  assert.equal(connection.state.status, "idle");
  answer = true;
  assert.deepEqual(await settledSoon(connection.ready()), { value: true });
  assert.equal(attempts, 2);
  connection.close();
});
