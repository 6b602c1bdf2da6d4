// What a racing tab's document came over, asked of the page (intercept/navigation-protocol.ts): the reading of one
// answer, the questions asked until the new document answers, and what a request of the page's origin waits for.
// No real clock: `sleep` is a counter that resolves at once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { atMost, MAX_QUESTIONS, NavigationProtocols, readingOf } from "../../../extension/src/intercept/navigation-protocol.js";

const DOC = "https://docs.example/guide/index.html";

test("an answer is read for the new document only; an empty protocol says nothing", () => {
  assert.deepEqual(readingOf(DOC, [DOC, "h2"]), { protocol: "h2" });
  assert.deepEqual(readingOf(`${DOC}#part`, [DOC, "HTTP/1.1"]), { protocol: "http/1.1" }, "the fragment is not the document's");
  assert.equal(readingOf(DOC, ["https://docs.example/old.html", "h2"]), "again", "the old page, not committed yet");
  assert.equal(readingOf(DOC, null), "again", "no navigation entry yet (about:blank)");
  assert.equal(readingOf(DOC, [DOC, ""]), "none", "from the browser's cache or a service worker");
  assert.equal(readingOf(DOC, [DOC, 2]), "none", "a page that answers nonsense says nothing");
});

function fakeSleep(): { sleep: (ms: number) => Promise<void>; slept: number[] } {
  const slept: number[] = [];
  return { slept, sleep: (ms) => (slept.push(ms), Promise.resolve()) };
}

test("asked again while the old page answers or its context goes away, until the new document says", async () => {
  const answers: unknown[] = [["https://docs.example/old.html", "http/1.1"], "throw", null, [DOC, "h2"]];
  const asked: number[] = [];
  const { sleep, slept } = fakeSleep();
  const protocols = new NavigationProtocols((tabId) => {
    asked.push(tabId);
    const a = answers.shift();
    return a === "throw" ? Promise.reject(new Error("Execution context was destroyed.")) : Promise.resolve(a);
  }, sleep);
  assert.equal(await protocols.ask(7, DOC), "h2");
  assert.deepEqual(asked, [7, 7, 7, 7]);
  assert.equal(slept.length, 3, "a pause between questions, none before the first");
  assert.equal(protocols.pending(7, `${DOC}/../style.css`), null, "answered: nothing waits");
});

test("a page that never answers for the new document is asked a bounded number of times", async () => {
  let asked = 0;
  const protocols = new NavigationProtocols(() => (asked += 1, Promise.resolve(null)), fakeSleep().sleep);
  assert.equal(await protocols.ask(1, DOC), null);
  assert.equal(asked, MAX_QUESTIONS);
});

test("requests of the page's origin wait for the unanswered question; other origins and tabs do not", async () => {
  let answer: (v: unknown) => void = () => undefined;
  const protocols = new NavigationProtocols(() => new Promise((r) => (answer = r)), fakeSleep().sleep);
  const asking = protocols.ask(3, DOC);
  const waiting = protocols.pending(3, "https://docs.example/_static/style.css");
  assert.notEqual(waiting, null);
  assert.equal(protocols.pending(3, "https://cdn.example/font.woff2"), null, "another origin");
  assert.equal(protocols.pending(4, "https://docs.example/_static/style.css"), null, "another tab");
  answer([DOC, "http/1.1"]);
  assert.equal(await waiting, "http/1.1");
  assert.equal(await asking, "http/1.1");
});

test("a newer document of the tab, or the tab gone, ends the old question without an answer", async () => {
  const protocols = new NavigationProtocols(() => Promise.resolve(["https://docs.example/other.html", "h2"]), fakeSleep().sleep);
  const first = protocols.ask(5, DOC);
  const second = protocols.ask(5, "https://docs.example/other.html");
  assert.equal(await first, null);
  assert.equal(await second, "h2");
  const third = protocols.ask(6, DOC);
  protocols.forget(6);
  assert.equal(await third, null);
  assert.equal(protocols.pending(6, DOC), null);
});

test("a request waits at most the given time for an answer that does not come", async () => {
  const never = new Promise<string | null>(() => undefined);
  const { sleep, slept } = fakeSleep();
  assert.equal(await atMost(never, 300, sleep), null);
  assert.deepEqual(slept, [300]);
  assert.equal(await atMost(Promise.resolve("h2"), 300, () => new Promise(() => undefined)), "h2");
});
