// The stream of a document the browser loads itself (intercept/document-stream.ts): what reaches the helper is the
// body's bytes in order, each once, the head on the first piece, and an end that says whether the body really ended;
// bytes the resource buffer lost, a failed load, a refused command, a body past the cap or a tab gone cut it. Pure
// parts with a fake CDP command and recorded messages: no browser, no clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { BrowserDocument, Page } from "../../../extension/src/generated/protocol.js";
import { base64ByteLength } from "../../../extension/src/deliver/base64-concat.js";
import { DocumentStreams, MAX_PIECE_CHARS, MAX_STREAMED, MAX_STREAMS } from "../../../extension/src/intercept/document-stream.js";

const DOC = "http://intranet.lan/guide/";
const PAGE: Page = { url: DOC, top_site: "http://intranet.lan", address_space: "private" };
const b64 = (text: string): string => Buffer.from(text).toString("base64");

class Cdp {
  readonly calls: { tabId: number; method: string; params: Record<string, unknown> }[] = [];
  private readonly replies: { resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
  readonly command = (tabId: number, method: string, params: Record<string, unknown>): Promise<unknown> => {
    this.calls.push({ tabId, method, params });
    return new Promise((resolve, reject) => this.replies.push({ resolve, reject }));
  };
  async answer(i: number, bufferedData: string): Promise<void> {
    this.replies[i]?.resolve({ bufferedData });
    await new Promise((r) => setImmediate(r));
  }
  async reply(i: number, value: unknown): Promise<void> {
    this.replies[i]?.resolve(value);
    await new Promise((r) => setImmediate(r));
  }
  async refuse(i: number): Promise<void> {
    this.replies[i]?.reject(new Error("No resource with given identifier found"));
    await new Promise((r) => setImmediate(r));
  }
}

function streams(up = true): { cdp: Cdp; sent: BrowserDocument[]; docs: DocumentStreams } {
  const cdp = new Cdp();
  const sent: BrowserDocument[] = [];
  const docs = new DocumentStreams(cdp.command, (m) => {
    if (up) sent.push(m);
    return up;
  });
  return { cdp, sent, docs };
}

function bodyOf(sent: BrowserDocument[]): string {
  return sent.map((m) => Buffer.from(m.data, "base64").toString()).join("");
}

const response = { requestId: "N1", response: { url: DOC, status: 200, headers: { "content-type": "text/html; charset=utf-8" } } };
const HEAD = { type: "browser_document", page: PAGE, id: "r3", data: "", status: 200, content_type: "text/html; charset=utf-8" };

test("the buffered first bytes, then what came early, then the rest: in order, once, the head first, ended whole", async () => {
  const { cdp, sent, docs } = streams();
  assert.equal(docs.start(7, "N1", "r3", DOC, PAGE), true);
  assert.deepEqual(cdp.calls, [{ tabId: 7, method: "Network.streamResourceContent", params: { requestId: "N1" } }]);
  docs.handle(7, "Network.responseReceived", response);
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 11 }); // before streaming: no data
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 5, data: b64("<p>2 ") }); // early, with data
  docs.handle(9, "Network.dataReceived", { requestId: "N1", dataLength: 3, data: b64("xxx") }); // another tab's
  docs.handle(7, "Network.dataReceived", { requestId: "N2", dataLength: 3, data: b64("yyy") }); // another request's
  assert.deepEqual(sent, [HEAD], "the head at once; no byte before the command's answer");
  await cdp.answer(0, b64("<!doctype h"));
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 4, data: b64("end.") });
  docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
  assert.equal(bodyOf(sent), "<!doctype h<p>2 end.");
  assert.deepEqual(sent[1], { type: "browser_document", page: PAGE, id: "r3", data: b64("<!doctype h") });
  assert.ok(sent.slice(1).every((m) => m.status === undefined && m.content_type === undefined));
  assert.deepEqual(sent.map((m) => m.end), [undefined, undefined, undefined, undefined, "whole"]);
  assert.equal(docs.size, 0);
});

test("first bytes the buffer no longer holds: no byte is sent, the stream is cut (a document missing its start is never read)", async () => {
  const { cdp, sent, docs } = streams();
  docs.start(7, "N1", "r3", DOC, PAGE);
  docs.handle(7, "Network.responseReceived", response);
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 4000 });
  await cdp.answer(0, ""); // evicted
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 4, data: b64("more") });
  docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
  assert.equal(bodyOf(sent), "");
  assert.deepEqual(sent.map((m) => m.end), [undefined, "cut"]);
  assert.equal(docs.size, 0);
});

test("a body that ended before the answer is sent whole from the buffer", async () => {
  const { cdp, sent, docs } = streams();
  docs.start(7, "N1", "r3", DOC, PAGE);
  docs.handle(7, "Network.responseReceived", response);
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 9 });
  docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
  await cdp.answer(0, b64("<p>tiny</"));
  assert.equal(bodyOf(sent), "<p>tiny</");
  assert.deepEqual(sent.map((m) => m.end), [undefined, undefined, "whole"]);
});

test("a failed load, bytes the stream did not carry, a tab gone, a redirect: cut after what was sent", async () => {
  for (const stop of ["failed", "unstreamed", "tab gone", "redirected"] as const) {
    const { cdp, sent, docs } = streams();
    docs.start(7, "N1", "r3", DOC, PAGE);
    docs.handle(7, "Network.responseReceived", response);
    await cdp.answer(0, "");
    docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 3, data: b64("abc") });
    if (stop === "failed") docs.handle(7, "Network.loadingFailed", { requestId: "N1", errorText: "net::ERR_ABORTED" });
    else if (stop === "unstreamed") docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 3 });
    else if (stop === "redirected") docs.handle(7, "Network.requestWillBeSent", { requestId: "N1", redirectResponse: { status: 302 } });
    else docs.tabGone(7);
    docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 3, data: b64("def") });
    docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
    assert.equal(bodyOf(sent), "abc", stop);
    assert.deepEqual(sent.map((m) => m.end), [undefined, undefined, "cut"], stop);
  }
});

test("a refused command: the whole body once it ended, only if it is exactly the bytes the browser reported", async () => {
  const cases = [
    { what: "base64, before the end", headers: { "Content-Type": "text/html" }, reply: { body: b64("<p>é</p>"), base64Encoded: true }, endFirst: false, sent: "<p>é</p>" },
    { what: "text in UTF-8, after the end", headers: { "Content-Type": "text/html; charset=UTF-8" }, reply: { body: "<p>é</p>", base64Encoded: false }, endFirst: true, sent: "<p>é</p>" },
    { what: "text in another charset", headers: { "Content-Type": "text/html; charset=windows-1252" }, reply: { body: "<p>é</p>", base64Encoded: false }, endFirst: true, sent: null },
    { what: "text, no charset named, as many bytes in UTF-8", headers: { "Content-Type": "text/html" }, reply: { body: "<p>é</p>", base64Encoded: false }, endFirst: true, sent: "<p>é</p>" },
    { what: "not the bytes reported", headers: { "Content-Type": "text/html" }, reply: { body: b64("<p>"), base64Encoded: true }, endFirst: false, sent: null },
  ];
  // One more: no charset named, but the text was windows-1252's (é one byte): longer in UTF-8, not taken
  cases.push({ what: "text, no charset named, longer in UTF-8", headers: { "Content-Type": "text/html" }, reply: { body: "<p>éé</p>", base64Encoded: false }, endFirst: true, sent: null });
  for (const c of cases) {
    const { cdp, sent, docs } = streams();
    docs.start(7, "N1", "r3", DOC, PAGE);
    docs.handle(7, "Network.responseReceived", { requestId: "N1", response: { url: DOC, status: 200, headers: c.headers } });
    docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: Buffer.byteLength("<p>é</p>") });
    if (c.endFirst) docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
    await cdp.refuse(0);
    if (!c.endFirst) {
      assert.equal(cdp.calls.length, 1, `${c.what}: the body is asked for only once it ended`);
      docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
    }
    assert.deepEqual(cdp.calls[1], { tabId: 7, method: "Network.getResponseBody", params: { requestId: "N1" } }, c.what);
    await cdp.reply(1, c.reply);
    assert.equal(sent[0]?.status, 200, c.what);
    if (c.sent === null) {
      assert.equal(bodyOf(sent), "", c.what);
      assert.deepEqual(sent.map((m) => m.end), [undefined, "cut"], c.what);
    } else {
      assert.equal(bodyOf(sent), c.sent, c.what);
      assert.deepEqual(sent.map((m) => m.end), [undefined, undefined, "whole"], c.what);
    }
    assert.equal(docs.size, 0, c.what);
  }
});

test("a body past the cap is cut before the bytes that pass it", async () => {

  const { cdp, sent, docs } = streams();
  docs.start(7, "N1", "r3", DOC, PAGE);
  await cdp.answer(0, "");
  const big = Buffer.alloc(MAX_STREAMED - 10, 0x61).toString("base64");
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: MAX_STREAMED - 10, data: big });
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 20, data: b64("x".repeat(20)) });
  docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
  // The big piece went as several messages, none over the protocol's limit
  assert.ok(sent.every((m) => m.data.length <= MAX_PIECE_CHARS && m.data.length % 4 === 0));
  assert.equal(sent.reduce((n, m) => n + base64ByteLength(m.data), 0), MAX_STREAMED - 10);
  assert.equal(sent.at(-1)?.end, "cut");
});

test("at most MAX_STREAMS at once, never one request twice, never one the helper was not told of; a helper gone ends the stream", async () => {
  const { docs } = streams();
  for (let i = 0; i < MAX_STREAMS; i++) assert.equal(docs.start(1, `N${i}`, `r${i}`, DOC, PAGE), true);
  assert.equal(docs.start(1, "N0", "again", DOC, PAGE), false);
  assert.equal(docs.start(1, "Nmore", "rmore", DOC, PAGE), false);
  const untold = streams();
  assert.equal(untold.docs.start(1, "N1", "r1", DOC, PAGE, () => false), false, "not told to the helper: not streamed");
  assert.deepEqual(untold.cdp.calls, []);
  const ends: string[] = [];
  const cdp = new Cdp();
  const gone = new DocumentStreams(cdp.command, () => false, (_id, end, _bytes, why) => ends.push(`${end}: ${why}`));
  gone.start(7, "N1", "r3", DOC, PAGE);
  gone.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 3 });
  await cdp.answer(0, b64("abc"));
  assert.equal(gone.size, 0);
  assert.deepEqual(ends, ["cut: helper gone"]);
});

test("a response under a Content-Security-Policy says so on its first piece (the helper then flies nothing it finds)", async () => {
  const { cdp, sent, docs } = streams();
  docs.start(7, "N1", "r3", DOC, PAGE);
  docs.handle(7, "Network.responseReceived", { requestId: "N1", response: { url: DOC, status: 200, headers: { "Content-Security-Policy": "img-src 'self'" } } });
  assert.deepEqual(sent.map((m) => m.content_security_policy), [true], "told at once, before any byte");
  await cdp.answer(0, "");
  docs.handle(7, "Network.dataReceived", { requestId: "N1", dataLength: 3, data: b64("abc") });
  assert.deepEqual(sent.map((m) => m.content_security_policy), [true, undefined]);
});

test("a response for another URL than the document told (a redirect's next hop) is never streamed as it", async () => {
  const { cdp, sent, docs } = streams();
  docs.start(7, "N1", "r3", `${DOC}#part`, PAGE);
  docs.handle(7, "Network.responseReceived", { requestId: "N1", response: { url: "http://intranet.lan/login", status: 200, headers: {} } });
  await cdp.answer(0, b64("<p>login</p>"));
  docs.handle(7, "Network.loadingFinished", { requestId: "N1" });
  assert.deepEqual(sent, [{ type: "browser_document", page: PAGE, id: "r3", data: "", end: "cut" }], "no head, no byte: cut");
  assert.equal(docs.size, 0);
  const same = streams();
  same.docs.start(7, "N1", "r3", `${DOC}#part`, PAGE);
  same.docs.handle(7, "Network.responseReceived", response);
  assert.equal(same.sent.length, 1, "the document's own URL, fragment aside");
});
