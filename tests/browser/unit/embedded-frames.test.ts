import { test } from "node:test";
import assert from "node:assert/strict";
import { EmbeddedFrames, type PausedSource } from "../../../extension/src/intercept/embedded-frames.js";

const MAIN = "MAINFRAME";
const TOP = "https://shop.example";

function heard(frames: EmbeddedFrames, source: PausedSource): string | null {
  frames.paused(source, MAIN);
  return frames.frameSite(source, MAIN, TOP);
}

test("the top-level page's own requests, its same-site frames' and its service worker's carry no frame site", () => {
  const frames = new EmbeddedFrames();
  assert.equal(heard(frames, { sessionId: undefined, frameId: MAIN, resourceType: "Document", url: "https://shop.example/" }), null);
  assert.equal(heard(frames, { sessionId: undefined, frameId: MAIN, resourceType: "Image", url: "https://cdn.other.example/a.png" }), null);
  assert.equal(heard(frames, { sessionId: undefined, frameId: "F1", resourceType: "Document", url: "https://www.shop.example/f.html" }), null);
  assert.equal(heard(frames, { sessionId: undefined, frameId: "F1", resourceType: "Script", url: "https://video.example/x.js" }), null);
  frames.attached(1, "SW", "service_worker", "T-SW", "https://shop.example/sw.js", undefined);
  assert.equal(heard(frames, { sessionId: "SW", frameId: "", resourceType: "Fetch", url: "https://shop.example/api" }), null);
});

test("a cross-site frame: its document, then every request of its session, carry its site; A inside B inside A too", () => {
  const frames = new EmbeddedFrames();
  // measured in Chromium: the frame's document is paused in the parent's session, then the child attached with an
  // empty URL and the frame's id as its target id
  assert.equal(heard(frames, { sessionId: undefined, frameId: "F2", resourceType: "Document", url: "https://video.example/embed/1" }),
    "https://video.example");
  frames.attached(1, "S-B", "iframe", "F2", "", undefined);
  assert.equal(heard(frames, { sessionId: "S-B", frameId: "F2", resourceType: "Image", url: "https://shop.example/logo.png" }),
    "https://video.example");
  // a frame of the top-level site inside the embedded one: keyed apart from the page's own requests
  assert.equal(heard(frames, { sessionId: "S-B", frameId: "F3", resourceType: "Document", url: "https://shop.example/inner.html" }),
    "https://shop.example");
  frames.attached(1, "S-A", "iframe", "F3", "", "S-B");
  assert.equal(heard(frames, { sessionId: "S-A", frameId: "F3", resourceType: "Script", url: "https://shop.example/a.js" }), "https://shop.example");
  // the embedded frame's service worker is embedded too
  frames.attached(1, "S-W", "service_worker", "T-W", "https://video.example/sw.js", "S-B");
  assert.equal(heard(frames, { sessionId: "S-W", frameId: "", resourceType: "Fetch", url: "https://video.example/api" }), "https://video.example");
  // gone: a session id is not reused, but what the tab leaves is forgotten
  frames.tabGone(1);
  assert.equal(heard(frames, { sessionId: "S-B", frameId: "F2", resourceType: "Image", url: "https://shop.example/logo.png" }), null);
});

test("a cross-site frame whose document was not heard gets a partition of its own, never the page's", () => {
  const frames = new EmbeddedFrames();
  frames.attached(2, "S-X", "iframe", "F9", "", undefined);
  assert.equal(heard(frames, { sessionId: "S-X", frameId: "F9", resourceType: "Image", url: "https://shop.example/x.png" }), "opaque:S-X");
  frames.detached("S-X");
  assert.equal(heard(frames, { sessionId: "S-X", frameId: "F9", resourceType: "Image", url: "https://shop.example/x.png" }), null);
});
