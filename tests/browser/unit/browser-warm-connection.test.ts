// The browser's own warm HTTP/1.1 connection (intercept/browser-warm-connection.ts): which responses leave one, which
// requests may have it, one at a time, and when it stops counting.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  BrowserWarmConnection, CLAIM_FOR_MS, WARM_BYTES, WARM_FOR_MS, WARM_SPAN_RTTS, type FinishedOnWire,
} from "../../../extension/src/intercept/browser-warm-connection.js";

function wire(end: number, encodedBytes = 1_600_000, over: Partial<FinishedOnWire> = {}): FinishedOnWire {
  return { protocol: "http/1.1", remoteAddress: "10.0.0.2:80", fromCache: null, encodedBytes, end, error: null, ...over };
}

/** What the helper's fulfilled answer looks like in the browser's network log. */
function fulfilled(end: number): FinishedOnWire {
  return { protocol: "http/1.1", remoteAddress: null, fromCache: null, encodedBytes: 0, end, error: null };
}

test("a large HTTP/1.1 response leaves its origin's connection warm for one render-blocking request at a time", () => {
  let now = 5_000;
  const w = new BrowserWarmConnection(() => now);
  w.finished("http://a.test/print.html", wire(now));
  assert.equal(w.claim("http://a.test/book.png", "Image"), false, "an image does not block rendering");
  assert.equal(w.claim("http://b.test/x.js", "Script"), false, "another origin");
  assert.equal(w.claim("http://a.test/highlight.js", "Script"), true);
  assert.equal(w.claim("http://a.test/book.js", "Script"), false, "the connection is taken");
  assert.equal(w.claim("http://a.test/more.css", "Stylesheet"), false);
  now += 1_200;
  w.finished("http://a.test/highlight.js", wire(now, 313_000)); // the browser's request ended there
  now += WARM_FOR_MS;
  assert.equal(w.claim("http://a.test/book.js", "Script"), true, "idle again, from its last byte on");
});

test("only the browser's own large HTTP/1.1 answers over the network warm a connection", () => {
  const now = 1_000;
  const w = new BrowserWarmConnection(() => now);
  const cases: [string, FinishedOnWire][] = [
    ["small", wire(now, WARM_BYTES - 1)],
    ["h2 (the multiplexed rule's)", wire(now, 500_000, { protocol: "h2" })],
    ["the helper's answer", fulfilled(now)],
    ["from the disk cache", wire(now, 500_000, { fromCache: "disk" })],
    ["failed", wire(now, 500_000, { error: "net::ERR_CONNECTION_RESET" })],
    ["size unknown", wire(now, 0, { encodedBytes: null })],
  ];
  for (const [i, [why, t]] of cases.entries()) {
    w.finished(`http://c${i}.test/doc`, t);
    assert.equal(w.claim(`http://c${i}.test/s.css`, "Stylesheet"), false, why);
  }
  w.finished("http://d.test/doc", wire(now, WARM_BYTES));
  assert.equal(w.claim("http://d.test/s.css", "Stylesheet"), true, "at the threshold");
});

test("an idle connection cools: past WARM_FOR_MS after its last byte it is not offered", () => {
  let now = 0;
  const w = new BrowserWarmConnection(() => now);
  w.finished("http://a.test/doc", wire(100));
  now = 100 + WARM_FOR_MS;
  w.finished("http://b.test/doc", wire(100));
  assert.equal(w.claim("http://a.test/x.js", "Script"), true, "at the limit");
  now += 1;
  assert.equal(w.claim("http://b.test/x.js", "Script"), false, "past it");
});

test("the helper answering the claimed request (release, or its fulfilled answer in the log) frees the connection", () => {
  const now = 0;
  const w = new BrowserWarmConnection(() => now);
  w.finished("http://a.test/doc", wire(0));
  assert.ok(w.claim("http://a.test/a.js", "Script"));
  w.release("http://a.test/other.js");
  assert.equal(w.claim("http://a.test/b.js", "Script"), false, "releasing another URL changes nothing");
  w.release("http://a.test/a.js");
  assert.ok(w.claim("http://a.test/b.js", "Script"));
  w.finished("http://a.test/b.js", fulfilled(0));
  assert.ok(w.claim("http://a.test/c.js#frag", "Script"), "the helper's answer left the connection idle");
  w.finished("http://a.test/c.js", wire(0, 100, { error: "net::ERR_EMPTY_RESPONSE" }));
  assert.equal(w.claim("http://a.test/d.js", "Script"), false, "the browser's request failed there: forgotten");
});

test("a claim the browser never reports ending expires, and the connection with it", () => {
  let now = 0;
  const w = new BrowserWarmConnection(() => now);
  w.finished("http://a.test/doc", wire(0));
  assert.ok(w.claim("http://a.test/a.js", "Script"));
  now = CLAIM_FOR_MS;
  assert.equal(w.claim("http://a.test/b.js", "Script"), false, "still claimed");
  now += 1;
  assert.equal(w.claim("http://a.test/b.js", "Script"), false, "expired: forgotten, not offered again");
  w.finished("http://a.test/doc2", wire(now));
  assert.ok(w.claim("http://a.test/b.js", "Script"), "a new large response warms it again");
});

test("under any sequence of events an origin has at most one request claiming its connection", () => {
  // A seeded walk over finished / claim / release events, checked against a model of outstanding claims.
  let seed = 12345;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let now = 0;
  const w = new BrowserWarmConnection(() => now);
  const claimed = new Map<string, string>(); // origin -> url
  const urls = [0, 1, 2, 3].map((i) => `http://o${i % 2}.test/r${i}.js`);
  let claims = 0;
  for (let step = 0; step < 5000; step++) {
    now += rand(400);
    const url = urls[rand(urls.length)] ?? "";
    const origin = new URL(url).origin;
    const kind = rand(10);
    if (kind < 4) {
      if (w.claim(url, "Script")) {
        assert.equal(claimed.has(origin), false, `second claim on ${origin} at step ${step}`);
        claimed.set(origin, url);
        claims += 1;
      }
    } else if (kind < 7) {
      const large = rand(2) === 0;
      w.finished(url, wire(now, large ? 200_000 : 1_000));
      // The claimed request ended, or a new large response came on another connection (the newest warm one counts).
      if (claimed.get(origin) === url || large) claimed.delete(origin);
    } else if (kind < 9) {
      w.release(url);
      if (claimed.get(origin) === url) claimed.delete(origin);
    } else {
      now += rand(CLAIM_FOR_MS); // now and then long enough for a claim to expire
    }
  }
  assert.ok(claims > 100, `the walk claimed ${claims} times`);
});

test("a large response still arriving: render-blocking requests may wait for its end, which listeners hear of", () => {
  const now = 0;
  const w = new BrowserWarmConnection(() => now);
  const heard: string[] = [];
  const off = w.onFinished((origin) => heard.push(origin));
  const arriving = (bodyBytes: number, over: Partial<FinishedOnWire> = {}) =>
    ({ protocol: "http/1.1", remoteAddress: "10.0.0.2:80", fromCache: null, bodyBytes, ...over });
  w.progress("http://a.test/print.html", arriving(WARM_BYTES - 1));
  assert.equal(w.finishing("http://a.test/x.js", "Script"), false, "not large yet");
  w.progress("http://a.test/print.html", arriving(WARM_BYTES));
  assert.equal(w.finishing("http://a.test/x.js", "Script"), true);
  assert.equal(w.finishing("http://a.test/x.png", "Image"), false, "images never wait");
  assert.equal(w.finishing("http://b.test/x.js", "Script"), false, "another origin");
  w.progress("http://c.test/doc", arriving(500_000, { protocol: "h2" }));
  w.progress("http://d.test/doc", arriving(500_000, { remoteAddress: null }));
  assert.equal(w.finishing("http://c.test/x.js", "Script") || w.finishing("http://d.test/x.js", "Script"), false);
  w.finished("http://a.test/other.css", wire(0, 1_000));
  assert.deepEqual(heard, [], "another request's end is not the large response's");
  w.finished("http://a.test/print.html", wire(0));
  assert.deepEqual(heard, ["http://a.test"]);
  assert.equal(w.finishing("http://a.test/x.js", "Script"), false, "ended");
  assert.ok(w.claim("http://a.test/x.js", "Script"), "and warm: recorded before the listeners heard");
  w.progress("http://a.test/x.js", arriving(300_000));
  assert.equal(w.finishing("http://a.test/y.js", "Script"), false, "the claimed request arriving is nothing to wait for");
  off();
  w.progress("http://a.test/big2.html", arriving(WARM_BYTES));
  w.finished("http://a.test/big2.html", wire(0));
  assert.deepEqual(heard, ["http://a.test"], "unsubscribed");
});

test("without a byte count, a body that took WARM_SPAN_RTTS of the host's round trips warms its connection", () => {
  let now = 10_000;
  const w = new BrowserWarmConnection(() => now);
  const span = (spanRoundTrips: number | null): FinishedOnWire => wire(now, 0, { encodedBytes: null, spanRoundTrips });
  w.finished("http://a.test/two-flights.html", span(WARM_SPAN_RTTS - 0.01));
  assert.equal(w.claim("http://a.test/x.js", "Script"), false, "two flights: not warm enough");
  w.finished("http://b.test/unmeasured.html", span(null));
  assert.equal(w.claim("http://b.test/x.js", "Script"), false, "no span, no bytes: not known warm");
  w.finished("http://c.test/three-flights.html", span(WARM_SPAN_RTTS));
  assert.equal(w.claim("http://c.test/x.js", "Script"), true, "three flights");
  // Still arriving after that many round trips: a render-blocking request may wait for its end.
  w.progress("http://d.test/long.html", { protocol: "http/1.1", remoteAddress: "10.0.0.2", fromCache: null,
    bodyBytes: null, spanRoundTrips: WARM_SPAN_RTTS });
  assert.equal(w.finishing("http://d.test/a.css", "Stylesheet"), true);
  now += 10;
  w.finished("http://d.test/long.html", span(WARM_SPAN_RTTS + 0.2));
  assert.equal(w.finishing("http://d.test/a.css", "Stylesheet"), false, "it ended");
  assert.equal(w.claim("http://d.test/a.css", "Stylesheet"), true);
});
