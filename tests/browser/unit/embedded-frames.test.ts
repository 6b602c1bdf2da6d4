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

// Address spaces: a request is judged by the more public of its page's space and its frame's own document's (as
// Chromium's Private Network Access judges the document that makes it), so a public frame in a loopback page cannot
// make the helper reach this machine for it.
const LOCAL_MAIN = "LOCALMAIN";

function spaceOf(frames: EmbeddedFrames, source: PausedSource, page: "public" | "private" | "loopback"): string {
  frames.paused(source, LOCAL_MAIN);
  return frames.addressSpace(source, LOCAL_MAIN, page);
}

test("a public frame inside a loopback page is judged public; the page's own requests and local frames stay loopback", () => {
  const frames = new EmbeddedFrames();
  // the page's own requests (main frame) and a same-site frame of the page
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: LOCAL_MAIN, resourceType: "Document", url: "http://localhost:8080/" }, "loopback"),
    "loopback");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: LOCAL_MAIN, resourceType: "Image", url: "http://127.0.0.1:9000/a.png" }, "loopback"),
    "loopback");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F1", resourceType: "Document", url: "http://localhost:8080/f.html" }, "loopback"),
    "loopback");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F1", resourceType: "Script", url: "http://127.0.0.1:9000/f.js" }, "loopback"),
    "loopback");

  // a public frame: its document paused in the page's session, then its out-of-process child attached
  spaceOf(frames, { sessionId: undefined, frameId: "F2", resourceType: "Document", url: "https://ads.example/embed" }, "loopback");
  frames.attached(1, "S-B", "iframe", "F2", "", undefined);
  assert.equal(spaceOf(frames, { sessionId: "S-B", frameId: "F2", resourceType: "Image", url: "http://127.0.0.1:9000/secret" }, "loopback"),
    "public");
  assert.equal(spaceOf(frames, { sessionId: "S-B", frameId: "F2", resourceType: "Fetch", url: "http://192.168.1.1/admin" }, "loopback"),
    "public");
  // its worker, and a frame inside it whose document was not seen (about:blank), are the public frame's
  frames.attached(1, "S-W", "worker", "T-W", "", "S-B");
  assert.equal(spaceOf(frames, { sessionId: "S-W", frameId: "", resourceType: "Fetch", url: "http://127.0.0.1:9000/api" }, "loopback"), "public");
  assert.equal(spaceOf(frames, { sessionId: "S-B", frameId: "F-BLANK", resourceType: "Image", url: "http://127.0.0.1:9000/x.png" }, "loopback"),
    "public");
  // a loopback document inside the public frame is the loopback server's own: judged by its own space
  assert.equal(spaceOf(frames, { sessionId: "S-B", frameId: "F3", resourceType: "Document", url: "http://localhost:8080/inner" }, "loopback"),
    "loopback");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F3", resourceType: "Image", url: "http://localhost:8080/i.png" }, "loopback"),
    "loopback");
});

test("a frame never makes a request more private than its page, and one seen public stays public while it lives", () => {
  const frames = new EmbeddedFrames();
  // a loopback frame inside a public page: the page's
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F4", resourceType: "Document", url: "http://localhost:8080/w" }, "public"), "public");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F4", resourceType: "Image", url: "http://localhost:8080/w.png" }, "public"),
    "public");
  // a private-network frame inside a loopback page: private
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F5", resourceType: "Document", url: "http://router.lan/" }, "loopback"), "private");
  // a public frame navigating itself to a loopback URL: its public document runs until the new one commits
  spaceOf(frames, { sessionId: undefined, frameId: "F6", resourceType: "Document", url: "https://ads.example/a" }, "loopback");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F6", resourceType: "Document", url: "http://localhost:8080/b" }, "loopback"),
    "public");
  assert.equal(spaceOf(frames, { sessionId: undefined, frameId: "F6", resourceType: "Image", url: "http://localhost:8080/b.png" }, "loopback"),
    "public");
});

test("a cross-site frame whose document was not seen is judged public", () => {
  const frames = new EmbeddedFrames();
  frames.attached(3, "S-Y", "iframe", "F7", "", undefined);
  assert.equal(spaceOf(frames, { sessionId: "S-Y", frameId: "F7", resourceType: "Image", url: "http://127.0.0.1:9000/x.png" }, "loopback"),
    "public");
  // one attached with its URL is judged by it
  frames.attached(3, "S-Z", "iframe", "F8", "http://localhost:8080/z", undefined);
  assert.equal(spaceOf(frames, { sessionId: "S-Z", frameId: "F8", resourceType: "Image", url: "http://127.0.0.1:9000/z.png" }, "loopback"),
    "loopback");
});
