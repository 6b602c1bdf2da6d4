// Which handshake a page's preconnect asks the helper for, and when a held TLS handshake goes on (Chromium: an
// origin the browser reaches over h2/h3 keeps its requests, so the helper's handshake would carry nothing).
import { test } from "node:test";
import assert from "node:assert/strict";
import { handshakeFor, HELD_FOR_MS, HeldHandshakes } from "../../../extension/src/intercept/preconnect-handshake.js";

test("an https navigation holds TLS where multiplexed origins go to the browser; a probe ahead of any page is one TCP connection", () => {
  assert.equal(handshakeFor("https://a.test/doc", true, true), "tcp");
  assert.equal(handshakeFor("http://a.test/doc", true, true), "full", "plain http: the helper pipelines, its connections open at once");
  assert.equal(handshakeFor("https://a.test/doc", true, false), "full", "Firefox: every request comes through the helper");
  assert.equal(handshakeFor("http://a.test/", false, false), "tcp");
  assert.equal(handshakeFor("https://a.test/", false, true), "tcp");
});

test("the browser's first answer from a held origin: HTTP/1.1 lets the handshake go on, once; h2/h3 or another origin do not", () => {
  let now = 0;
  const held = new HeldHandshakes<string>(() => now);
  held.hold("https://a.test/doc", "page a");
  held.hold("https://b.test/doc", "page b");
  held.hold("https://c.test/doc", "page c");
  assert.equal(held.answered("https://other.test/x", "http/1.1"), null, "not held");
  assert.equal(held.answered("https://a.test:8443/x", "http/1.1"), null, "another origin (port)");
  assert.equal(held.answered("https://a.test/style.css", "http/1.1"), "page a");
  assert.equal(held.answered("https://a.test/style.css", "http/1.1"), null, "once");
  assert.equal(held.answered("https://b.test/doc", "h2"), null, "the browser keeps an h2 origin's requests");
  assert.equal(held.answered("https://b.test/doc", "http/1.1"), null, "its first answer decided");
  now += HELD_FOR_MS + 1;
  assert.equal(held.answered("https://c.test/doc", "http/1.1"), null, "too late: the helper has closed it");
  assert.equal(held.answered("not a url", "http/1.1"), null);
});
