import { test } from "node:test";
import assert from "node:assert/strict";
import { batchKey, type HeldRequest, type PageInfo } from "../../../extension/src/background/accelerator.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";

const responder: FetchResponder = { fulfill: () => Promise.resolve(true), pass: () => Promise.resolve() };

function held(pageUrl: string, url: string, tabId = 1, frameSite?: string): HeldRequest {
  const page: PageInfo = { url: pageUrl, topSite: "https://shop.example", siteActive: true, addressSpace: "public", plainHttpHosts: [], privateBrowsing: false };
  if (frameSite !== undefined) page.frameSite = frameSite;
  return {
    tabId, responder, page,
    paused: { interceptionId: "i1", url, method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false },
  };
}

test("two pages' requests never share a batch, even in one tab and origin; a fragment does not make another page", () => {
  const a = batchKey(held("https://shop.example/a.html", "https://shop.example/1.png"));
  assert.notEqual(a, batchKey(held("https://shop.example/b.html", "https://shop.example/1.png")));
  assert.notEqual(a, batchKey(held("https://shop.example/a.html?x=1", "https://shop.example/1.png")));
  assert.equal(a, batchKey(held("https://shop.example/a.html#top", "https://shop.example/2.png")));
});

test("one page's requests are batched per tab, origin and embedded frame", () => {
  const a = batchKey(held("https://shop.example/a.html", "https://shop.example/1.png"));
  assert.notEqual(a, batchKey(held("https://shop.example/a.html", "https://cdn.example/1.png")));
  assert.notEqual(a, batchKey(held("https://shop.example/a.html", "https://shop.example/1.png", 2)));
  assert.notEqual(a, batchKey(held("https://shop.example/a.html", "https://shop.example/1.png", 1, "https://video.example")));
  const local = held("https://shop.example/a.html", "https://shop.example/1.png");
  local.page.addressSpace = "loopback";
  assert.notEqual(a, batchKey(local), "a frame's own document may judge its requests more public (embedded-frames.ts)");
  assert.ok(a.startsWith("1|"), "a tab's batches are found by its id");
});
