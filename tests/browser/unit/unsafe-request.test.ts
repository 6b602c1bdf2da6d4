// What a request of an unsafe method makes the helper's cache forget (intercept/unsafe-request.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_UNSAFE_PENDING, UnsafeRequests, invalidatedUrls, isUnsafe } from "../../../extension/src/intercept/unsafe-request.js";

const PAGE = { url: "https://shop.test/cart", top_site: "https://shop.test", address_space: "public" as const };

test("only methods that are not safe count", () => {
  assert.deepEqual(["GET", "head", "OPTIONS", "TRACE"].map(isUnsafe), [false, false, false, false]);
  assert.deepEqual(["POST", "PUT", "DELETE", "PATCH", "PURGE"].map(isUnsafe), [true, true, true, true, true]);
});

test("a non-error answer forgets the URL and the same-origin Location and Content-Location, without fragments", () => {
  const url = "https://shop.test/api/cart?x=1#f";
  assert.deepEqual(invalidatedUrls(url, 201, [["location", "/api/cart/7#new"], ["Content-Location", "https://shop.test/api/cart?x=1"]]),
    ["https://shop.test/api/cart?x=1", "https://shop.test/api/cart/7"]);
  assert.deepEqual(invalidatedUrls(url, 302, [["Location", "https://other.test/"], ["Content-Location", "http://shop.test/api/cart"]]),
    ["https://shop.test/api/cart?x=1"], "another origin's (even another scheme's) are never forgotten");
  assert.deepEqual(invalidatedUrls(url, 200, [["Location", "http://[bad"]]), ["https://shop.test/api/cart?x=1"]);
});

test("an error, no answer or a URL that is not one forgets nothing", () => {
  assert.deepEqual(invalidatedUrls("https://shop.test/a", 404, []), []);
  assert.deepEqual(invalidatedUrls("https://shop.test/a", 500, []), []);
  assert.deepEqual(invalidatedUrls("https://shop.test/a", null, []), []);
  assert.deepEqual(invalidatedUrls("https://shop.test/a", 101, []), []);
  assert.deepEqual(invalidatedUrls("not a url", 200, []), []);
});

test("a remembered request is told once, at its answer; the oldest are dropped beyond the bound", () => {
  const unsafe = new UnsafeRequests();
  unsafe.remember("n1", PAGE);
  assert.equal(unsafe.answered("n2", "https://shop.test/a", 200, []), null, "not remembered");
  assert.deepEqual(unsafe.answered("n1", "https://shop.test/a", 204, []), { page: PAGE, urls: ["https://shop.test/a"] });
  assert.equal(unsafe.answered("n1", "https://shop.test/a", 204, []), null, "told once");
  unsafe.remember("failed", PAGE);
  assert.equal(unsafe.answered("failed", "https://shop.test/a", 500, []), null);
  for (let i = 0; i <= MAX_UNSAFE_PENDING; i += 1) unsafe.remember(`m${i}`, PAGE);
  assert.equal(unsafe.answered("m0", "https://shop.test/a", 200, []), null, "the oldest was dropped");
  assert.notEqual(unsafe.answered(`m${MAX_UNSAFE_PENDING}`, "https://shop.test/a", 200, []), null);
});
