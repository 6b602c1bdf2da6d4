// The debugger responder over a stand-in chrome.debugger (the one part a unit test cannot run for real): CDP's
// errors for a request, session or interception that went away are the normal end of a held request.
import { test, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { debuggerResponder } from "../../../extension/src/deliver/debugger-responder.js";

let sent: string[] = [];
let warnings: unknown[][] = [];
let failWith: string | null = null;
const originalWarn = console.warn;

beforeEach(() => {
  sent = [];
  warnings = [];
  (globalThis as unknown as { chrome: unknown }).chrome = {
    debugger: {
      sendCommand: (_target: unknown, method: string): Promise<void> => {
        sent.push(method);
        return failWith === null ? Promise.resolve() : Promise.reject(new Error(failWith));
      },
    },
  };
  console.warn = (...args: unknown[]) => void warnings.push(args);
});

afterEach(() => {
  console.warn = originalWarn;
  failWith = null;
  delete (globalThis as { chrome?: unknown }).chrome;
});

const GONE = ["Session with given id not found.", "Fetch domain is not enabled", "Invalid InterceptionId.", "Debugger is not attached to the tab with id: 3."];

for (const error of GONE) {
  test(`"${error}": the fulfil reports false, is not retried as a continue, and nothing is logged`, async () => {
    failWith = error;
    const responder = debuggerResponder({ tabId: 3, sessionId: "S1" });
    assert.equal(await responder.fulfill({ requestId: "i1", responseCode: 200 }), false);
    assert.deepEqual(sent, ["Fetch.fulfillRequest"], "no continueRequest after it");
    await responder.pass("i2");
    assert.deepEqual(sent, ["Fetch.fulfillRequest", "Fetch.continueRequest"]);
    assert.deepEqual(warnings, []);
  });
}

test("another error: the fulfil is continued instead, and both failures are logged", async () => {
  failWith = "Invalid header: x";
  const responder = debuggerResponder({ tabId: 3 });
  assert.equal(await responder.fulfill({ requestId: "i1", responseCode: 200 }), false);
  assert.deepEqual(sent, ["Fetch.fulfillRequest", "Fetch.continueRequest"]);
  assert.equal(warnings.length, 2);
});

test("a fulfil that works reports true", async () => {
  assert.equal(await debuggerResponder({ tabId: 3 }).fulfill({ requestId: "i1", responseCode: 200 }), true);
  assert.deepEqual(sent, ["Fetch.fulfillRequest"]);
});
