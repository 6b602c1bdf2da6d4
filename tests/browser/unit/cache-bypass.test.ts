// Which paused requests are a hard reload's, and the fields they then go to the helper with (cache-bypass.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { CacheBypassLoads, withBypassFields, type BypassQuery } from "../../../extension/src/intercept/cache-bypass.js";
import type { LoaderSignal } from "../../../extension/src/intercept/request-page.js";

const TAB = 7;
const heard = (loaderId: string): LoaderSignal => ({ kind: "heard", loaderId });
const document = (networkId: string): BypassQuery => ({ topDocument: true, networkId, mainFrame: true, loader: heard(networkId) });
const sub = (loader: LoaderSignal, mainFrame = true): BypassQuery => ({ topDocument: false, networkId: "n.9", mainFrame, loader });

function loads(): CacheBypassLoads {
  const l = new CacheBypassLoads();
  l.navigationStarted(TAB, "FIRST", "differentDocument");
  l.navigationStarted(TAB, "F5", "reload");
  l.navigationStarted(TAB, "HARD", "reloadBypassingCache");
  return l;
}

test("a hard reload's document and the requests of its load bypass the cache; a plain visit's and an F5 reload's do not", () => {
  const l = loads();
  assert.equal(l.requestBypasses(TAB, document("HARD"), "FIRST"), true, "the document, before its load is the newest");
  assert.equal(l.requestBypasses(TAB, document("F5"), "FIRST"), false, "F5: only its document is validated, by the browser's own max-age=0");
  assert.equal(l.requestBypasses(TAB, document("FIRST"), undefined), false);
  assert.equal(l.requestBypasses(TAB, document("UNHEARD"), "HARD"), false, "a navigation not heard is a plain one");
  assert.equal(l.requestBypasses(TAB, sub(heard("HARD")), "HARD"), true);
  assert.equal(l.requestBypasses(TAB, sub(heard("F5")), "F5"), false);
  assert.equal(l.requestBypasses(TAB, sub(heard("FIRST")), "FIRST"), false);
  assert.equal(l.requestBypasses(TAB, sub(heard("HARD")), null), false, "the newest load's document not known");
});

test("a request not known to be another document's is taken as the hard reload's (a wrong mark costs a fetch)", () => {
  const l = loads();
  for (const loader of [{ kind: "pending" }, { kind: "unheard" }, { kind: "none" }, heard("")] as LoaderSignal[]) {
    assert.equal(l.requestBypasses(TAB, sub(loader), "HARD"), true, JSON.stringify(loader));
  }
  assert.equal(l.requestBypasses(TAB, sub(heard("IFRAME-DOC"), false), "HARD"), true, "a frame of the reloaded page");
  assert.equal(l.requestBypasses(TAB, sub(heard("F5")), "HARD"), false, "the page being left: its own loader");
  assert.equal(l.requestBypasses(TAB, sub({ kind: "pending" }), "F5"), false, "the newest load is no hard reload");
});

test("loads are per tab, forgotten with the tab, and kept to the newest", () => {
  const l = loads();
  assert.equal(l.requestBypasses(TAB + 1, document("HARD"), undefined), false);
  l.forgetTab(TAB);
  assert.equal(l.requestBypasses(TAB, document("HARD"), undefined), false);
  const small = new CacheBypassLoads(2);
  small.navigationStarted(TAB, "A", "reloadBypassingCache");
  small.navigationStarted(TAB, "B", "reload");
  small.navigationStarted(TAB, "C", "reload");
  assert.equal(small.bypasses(TAB, "A"), false, "the oldest forgotten");
  small.navigationStarted(TAB, "", "reloadBypassingCache");
  assert.equal(small.bypasses(TAB, ""), false, "no loader, nothing to match");
});

test("the bypass fields replace any Cache-Control or Pragma the request had, whatever their case, and keep the rest", () => {
  assert.deepEqual(withBypassFields([["Accept", "image/*"], ["cache-control", "max-age=0"], ["PRAGMA", "x"], ["Referer", "https://a.example/"]]), [
    ["Accept", "image/*"], ["Referer", "https://a.example/"], ["Cache-Control", "no-cache"], ["Pragma", "no-cache"],
  ]);
  assert.deepEqual(withBypassFields([]), [["Cache-Control", "no-cache"], ["Pragma", "no-cache"]]);
});
