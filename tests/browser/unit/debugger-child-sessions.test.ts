// Chromium debugger mode: a tab's child sessions (out-of-process iframes, its service worker, shared workers) get
// Fetch enabled too, so their requests are paused for lanefetch. When the tab's interception is switched off (the
// helper went, or its top-level host is fast) they must stop being paused as well: otherwise an embedded frame's
// requests still waited for a helper that is gone (client.ready(), up to its start's timeout) before the browser
// fetched them, slower than without lanefetch. Driven through a fake chrome.debugger.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { DebuggerSessions } from "../../../extension/src/intercept/debugger-sessions.js";

type Source = { tabId?: number; sessionId?: string };
type Listener = (source: Source, method: string, params: unknown) => void;

function fakeChrome(t: TestContext) {
  const sent: string[] = [];
  const events: Listener[] = [];
  const detaches: ((source: Source, reason: string) => void)[] = [];
  const g = globalThis as { chrome?: unknown };
  const saved = g.chrome;
  g.chrome = {
    runtime: { id: "ext" },
    debugger: {
      onEvent: { addListener: (l: Listener) => events.push(l) },
      onDetach: { addListener: (l: (source: Source, reason: string) => void) => detaches.push(l) },
      attach: () => Promise.resolve(),
      detach: () => Promise.resolve(),
      getTargets: () => Promise.resolve([{ tabId: 1, id: "MAIN", attached: true }]),
      sendCommand: (target: Source, method: string) => {
        sent.push(`${target.sessionId ?? `tab${String(target.tabId)}`} ${method}`);
        return Promise.resolve({});
      },
    },
  };
  t.after(() => {
    g.chrome = saved;
  });
  const emit = (source: Source, method: string, params: unknown): void => {
    for (const l of events) l(source, method, params);
  };
  const child = (sessionId: string, type: string, parent?: string): void => {
    emit({ tabId: 1, sessionId: parent }, "Target.attachedToTarget", {
      sessionId, targetInfo: { type, targetId: `T-${sessionId}`, url: "" }, waitingForDebugger: true,
    });
  };
  return { sent, emit, child, detaches };
}

/** Lets the fake's resolved promises (the sessions' awaited commands) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

function sessions(): DebuggerSessions {
  return new DebuggerSessions({ paused: () => undefined, detached: () => undefined });
}

test("switching a tab's interception off switches its child sessions' Fetch off too, and on again", async (t) => {
  const { sent, child } = fakeChrome(t);
  const s = sessions();
  assert.equal((await s.attach(1)).ok, true);
  child("FRAME", "iframe");
  child("SW", "service_worker");
  await settle();
  assert.ok(sent.includes("FRAME Fetch.enable") && sent.includes("SW Fetch.enable"), sent.join("\n"));
  sent.length = 0;
  await s.setFetch(1, false);
  await settle();
  assert.deepEqual(sent.filter((c) => c.endsWith("Fetch.disable")).sort(), ["FRAME Fetch.disable", "SW Fetch.disable", "tab1 Fetch.disable"]);
  sent.length = 0;
  await s.setFetch(1, true);
  await settle();
  assert.deepEqual(sent.filter((c) => c.endsWith("Fetch.enable")).sort(), ["FRAME Fetch.enable", "SW Fetch.enable", "tab1 Fetch.enable"]);
});

test("a child session attached while the tab's interception is off is not paused (but still let run)", async (t) => {
  const { sent, child } = fakeChrome(t);
  const s = sessions();
  await s.attach(1);
  await s.setFetch(1, false);
  sent.length = 0;
  child("FRAME", "iframe");
  child("INNER", "service_worker", "FRAME");
  await settle();
  assert.ok(!sent.some((c) => c.endsWith("Fetch.enable")), sent.join("\n"));
  assert.ok(sent.includes("FRAME Runtime.runIfWaitingForDebugger") && sent.includes("INNER Runtime.runIfWaitingForDebugger"));
  assert.ok(sent.includes("FRAME Target.setAutoAttach"), "its own children are still attached (and let run)");
  sent.length = 0;
  await s.setFetch(1, true);
  await settle();
  assert.deepEqual(sent.filter((c) => c.endsWith("Fetch.enable")).sort(), ["FRAME Fetch.enable", "INNER Fetch.enable", "tab1 Fetch.enable"]);
});

test("a child session that ended, or a tab detached, is not switched any more", async (t) => {
  const { sent, child, emit } = fakeChrome(t);
  const s = sessions();
  await s.attach(1);
  child("FRAME", "iframe");
  child("GONE", "iframe");
  await settle();
  emit({ tabId: 1 }, "Target.detachedFromTarget", { sessionId: "GONE" });
  sent.length = 0;
  await s.setFetch(1, false);
  await settle();
  assert.deepEqual(sent.filter((c) => c.endsWith("Fetch.disable")).sort(), ["FRAME Fetch.disable", "tab1 Fetch.disable"]);
  await s.detach(1);
  await s.attach(1);  // attached again: interception on, no child of the old session
  sent.length = 0;
  await s.setFetch(1, false);
  await settle();
  assert.deepEqual(sent.filter((c) => c.endsWith("Fetch.disable")), ["tab1 Fetch.disable"]);
});

// Each session's responder (how its held requests are answered) was kept in a map that only a release of the tab by
// lanefetch emptied: every out-of-process iframe and service worker a long-lived tab ever had, and every tab closed
// or detached by the browser, stayed in it for the worker's life.
test("a session's responder is forgotten when the child session ends, the browser detaches the tab, or it is released", async (t) => {
  const { child, emit, detaches } = fakeChrome(t);
  const s = sessions();
  await s.attach(1);
  child("FRAME", "iframe");
  await settle();
  const frame = s.responderFor({ tabId: 1, sessionId: "FRAME" });
  const own = s.responderFor({ tabId: 1 });
  assert.equal(s.responderFor({ tabId: 1, sessionId: "FRAME" }), frame, "one per session while it lasts");
  emit({ tabId: 1 }, "Target.detachedFromTarget", { sessionId: "FRAME" });
  assert.equal(s.respondersKept, 1, "the ended child's is gone; the tab's own is kept");
  assert.equal(s.responderFor({ tabId: 1 }), own);
  for (const l of detaches) l({ tabId: 1 }, "target_closed");  // the tab closed
  assert.equal(s.respondersKept, 0);
  await s.attach(1);
  s.responderFor({ tabId: 1 });
  s.responderFor({ tabId: 1, sessionId: "SW" });
  await s.detach(1);
  assert.equal(s.respondersKept, 0);
  s.responderFor({ tabId: 1 });  // a request heard as the tab went: answered, never kept
  assert.equal(s.respondersKept, 0);
});

// A service worker (or shared worker) serves every tab of its scope, whichever tab's session pauses its requests:
// its sessions, and what it attaches, are known as the worker's; a tab's frames and dedicated workers are the tab's.
test("a shared worker's session and its children are the worker's; frames, dedicated workers and the tab's own are not", async (t) => {
  const { child, emit, detaches } = fakeChrome(t);
  const s = sessions();
  await s.attach(1);
  const attached = (sessionId: string, type: string, url: string, parent?: string): void =>
    emit({ tabId: 1, sessionId: parent }, "Target.attachedToTarget", { sessionId, targetInfo: { type, targetId: `T-${sessionId}`, url }, waitingForDebugger: true });
  attached("SW", "service_worker", "https://shop.example/sw.js");
  attached("SW-CHILD", "worker", "https://shop.example/inner.js", "SW");
  attached("SHARED", "shared_worker", "https://shop.example/shared.js", "FRAME");
  child("FRAME", "iframe");
  child("DEDICATED", "worker");
  await settle();
  assert.equal(s.workerOf("SW"), "https://shop.example/sw.js");
  assert.equal(s.workerOf("SW-CHILD"), "https://shop.example/sw.js", "what the worker attached is the worker's");
  assert.equal(s.workerOf("SHARED"), "https://shop.example/shared.js");
  for (const own of [undefined, "FRAME", "DEDICATED"]) assert.equal(s.workerOf(own), null, String(own));
  emit({ tabId: 1 }, "Target.detachedFromTarget", { sessionId: "SW" });
  assert.equal(s.workerOf("SW"), null, "forgotten when its session ends");
  for (const l of detaches) l({ tabId: 1 }, "target_closed");
  assert.equal(s.workerOf("SHARED"), null, "and with its tab's session");
});
