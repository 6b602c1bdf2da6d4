import { test } from "node:test";
import assert from "node:assert/strict";
import { NO_PAGE, RequestLoaders, requestPage, type LoaderSignal, type PageLoad, type RequestPage, type TabPages } from "../../../extension/src/intercept/request-page.js";
import { decide } from "../../../extension/src/intercept/pass-through-policy.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { addressSpaceOfUrl } from "../../../extension/src/sites/address-space.js";
import { plainHttpHosts } from "../../../extension/src/intercept/plain-http.js";
import { matchingRule, type SiteRule } from "../../../extension/src/sites/site-rule.js";

// Enabled: 127.0.0.1 (loopback) and on.example; not enabled: off.example.
const SITE = "http://127.0.0.1:8080";
const ON = "https://on.example";
const OFF = "https://off.example";
const rules: SiteRule[] = [{ scope: "domain", name: "127.0.0.1" }, { scope: "domain", name: "on.example" }];
const siteOn = (url: string): boolean => matchingRule(rules, url) !== null;

const NONE: LoaderSignal = { kind: "none" };
const heard = (loaderId: string): LoaderSignal => ({ kind: "heard", loaderId });

function image(url = `${ON}/img/9.png`): PausedRequest {
  return { interceptionId: "i2", url, method: "GET", headers: [["Accept", "image/*"]], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false };
}

function load(url: string, loader: string | null, commitsBefore = 1): PageLoad {
  return { url, loader, commitsBefore };
}

/** A tab that heard `commits` commits, the last `committedUrl` (its document's loader `committedLoader`). */
function tab(committedUrl: string, newest: PageLoad | undefined, committedLoader: string | null = null, commits = 1): TabPages {
  return { committedUrl, committedLoader, commits, newest };
}

function pageOf(t: TabPages, loader: LoaderSignal = NONE, mainFrame = true, url = `${SITE}/img/9.png`): RequestPage {
  return requestPage({ url, topDocument: false, mainFrame, loader }, t, siteOn);
}

/** What chromium-main.ts decides for a paused image of the tab (the page's site and address space). */
function decision(t: TabPages, loader: LoaderSignal = NONE, mainFrame = true): ReturnType<typeof decide> {
  const request = image();
  const attributed = requestPage({ url: request.url, topDocument: false, mainFrame, loader }, t, siteOn);
  assert.ok("page" in attributed, "a page, not a wait");
  const pageUrl = attributed.page;
  return decide(request, { siteActive: siteOn(pageUrl), addressSpace: addressSpaceOfUrl(pageUrl) ?? "public",
    plainHttpHosts: plainHttpHosts([pageUrl]) });
}

const TAKEN = { take: true };
const SITE_OFF = { take: false, reason: "site_off" };

test("enabled A to not-enabled B: B's image paused before B's commit is heard is not taken, whatever its loader says", () => {
  // The tab shows A (its document LA), its session paused B's document (LB); B's commit is not heard yet.
  const t = tab(`${ON}/a.html`, load(`${OFF}/b.html`, "LB"), "LA");
  assert.deepEqual(decision(t), SITE_OFF);
  assert.deepEqual(decision(t, heard("LB")), SITE_OFF);
  assert.deepEqual(decision(t, { kind: "pending" }), SITE_OFF); // no wait: it is not taken anyway
  assert.deepEqual(decision(t, NONE, false), SITE_OFF); // an iframe's or a child session's
  // A's document's own request, named by its loader, is still A's.
  assert.deepEqual(decision(t, heard("LA")), TAKEN);
  // B's document not yet known by its id (its navigation started): the same.
  assert.deepEqual(decision(tab(`${ON}/a.html`, load(`${OFF}/b.html`, null), "LA")), SITE_OFF);
});

test("A to A', both enabled: taken before and after the commit is heard", () => {
  const before = tab(`${ON}/a.html`, load(`${SITE}/plain.html`, "LB"), "LA");
  for (const loader of [NONE, heard("LB"), heard("LA"), { kind: "pending" } as const]) assert.deepEqual(decision(before, loader), TAKEN);
  const after = tab(`${SITE}/plain.html`, load(`${SITE}/plain.html`, "LB"), "LB", 2);
  assert.deepEqual(decision(after, heard("LB")), TAKEN);
  assert.deepEqual(decision(after), TAKEN);
  // The helper may reach for it only what the more public of the two pages may: a public page's request is judged
  // as the public page's, not as the loopback one's.
  assert.deepEqual(pageOf(tab(`${SITE}/a.html`, load(`${ON}/b.html`, "LB"), "LA")), { page: `${ON}/b.html` });
  assert.deepEqual(pageOf(tab(`${ON}/b.html`, load(`${SITE}/a.html`, "LB"), "LA")), { page: `${ON}/b.html` });
});

test("not-enabled X to enabled A: A's image is taken only when its loader names A's document", () => {
  const t = tab(`${OFF}/x.html`, load(`${ON}/a.html`, "LA"));
  assert.deepEqual(decision(t), SITE_OFF);
  assert.deepEqual(decision(t, heard("LA")), TAKEN);
  assert.deepEqual(decision(t, heard("LX")), SITE_OFF);
});

test("a new tab's first page: an image paused before the page's commit is heard is the paused document's, not about:blank's", () => {
  // The tab committed about:blank (a new tab), its session paused the document plain.html?2, and its image comes
  // before webNavigation.onCommitted for plain.html?2: the image is the enabled site's, taken by the helper.
  const t = tab("about:blank", load(`${SITE}/plain.html?2`, "L2"));
  assert.deepEqual(pageOf(t), { page: `${SITE}/plain.html?2` });
  assert.deepEqual(decision(t), TAKEN);
  assert.deepEqual(decision(t, heard("L2")), TAKEN);
  // Likewise from the new-tab page, an extension page, or a tab not seen yet.
  for (const shown of ["chrome://newtab/", "chrome-extension://abc/popup.html"]) assert.deepEqual(decision(tab(shown, load(`${SITE}/plain.html?2`, "L2"))), TAKEN, shown);
  assert.deepEqual(decision(tab("", load(`${SITE}/plain.html?2`, "L2", 0), null, 0)), TAKEN);
  // Its loader expected (Network on) and not heard yet: wait for it; not heard in time: not taken.
  assert.deepEqual(pageOf(t, { kind: "pending" }), { waitForLoader: true });
  assert.deepEqual(decision(t, { kind: "unheard" }), SITE_OFF);
  // A page not enabled is not taken, nor waited for.
  assert.deepEqual(pageOf(tab("about:blank", load(`${OFF}/b.html`, "LB")), { kind: "pending" }), { page: `${OFF}/b.html` });
});

test("an about:blank document (written by a not-enabled opener) while an enabled page loads: not taken where its loader tells", () => {
  const t = tab("about:blank", load(`${SITE}/plain.html`, "LA"));
  // Its loader is the about:blank document's, not the paused document's.
  assert.deepEqual(decision(t, heard("Lblank")), SITE_OFF);
  assert.deepEqual(pageOf(t, heard("Lblank")), { page: NO_PAGE });
  // A worker's script (no loader) or a loader of a load not known by its id: not taken.
  assert.deepEqual(decision(t, heard("")), SITE_OFF);
  assert.deepEqual(decision(tab("about:blank", load(`${SITE}/plain.html`, null)), heard("Lblank")), SITE_OFF);
  // Another frame's or session's request cannot be told apart: not taken.
  assert.deepEqual(decision(t, NONE, false), SITE_OFF);
  // Without the Network domain (a navigation raced the attach) nothing tells them apart: the loading page's.
  assert.deepEqual(decision(t, NONE), TAKEN);
});

test("a commit heard after the load began is newer than it: a data: URL or about:blank after the page is no site", () => {
  // The tab loaded A (begun with 1 commit heard), A committed (2), then a data: URL committed (3).
  assert.deepEqual(decision(tab("data:text/html,x", load(`${SITE}/a.html`, "LA", 1), null, 3)), SITE_OFF);
  assert.deepEqual(decision(tab("about:blank", load(`${SITE}/a.html`, "LA", 1), null, 2), { kind: "pending" }), SITE_OFF);
});

test("a download from a not-enabled site on an enabled page: the page's own requests are taken where their loader says so", () => {
  // A's document LA committed; a link's document on off.example was paused and became a download (never commits).
  const t = tab(`${ON}/a.html`, load(`${OFF}/file.zip`, "LZ"), "LA");
  assert.deepEqual(decision(t, heard("LA")), TAKEN);
  assert.deepEqual(decision(t), SITE_OFF); // without it, not taken
});

test("a page's document named by its loader: an older document's request is no page's", () => {
  // The tab shows A (LA, heard); a request of the page it left (LX) is paused after.
  const t = tab(`${SITE}/a.html`, load(`${SITE}/a.html`, "LA"), "LA", 2);
  assert.deepEqual(decision(t, heard("LA")), TAKEN);
  assert.deepEqual(decision(t, heard("LX")), SITE_OFF);
  // Not a main-frame request (an iframe's loader is its own): the tab's page.
  assert.deepEqual(decision(t, heard("LF"), false), TAKEN);
  // The committed page's loader not known (its commit came with another load newest): the tab's page.
  assert.deepEqual(decision(tab(`${SITE}/a.html`, load(`${SITE}/a.html`, "LA2"), null, 2), heard("LA1")), TAKEN);
});

test("with no page load begun in the tab: the tab's page; a tab not seen yet, the request's own URL", () => {
  assert.deepEqual(pageOf(tab("about:blank", undefined)), { page: "about:blank" });
  assert.deepEqual(pageOf(tab("", undefined, null, 0)), { page: `${SITE}/img/9.png` });
  assert.deepEqual(pageOf(tab(`${SITE}/a.html`, undefined)), { page: `${SITE}/a.html` });
});

test("a tab showing the newest load's page keeps its committed URL; a top-level document is its own page", () => {
  assert.deepEqual(pageOf(tab(`${SITE}/a.html#x`, load(`${SITE}/a.html`, "LA"), "LA", 2)), { page: `${SITE}/a.html#x` });
  assert.deepEqual(decision(tab(`${OFF}/`, load(`${OFF}/`, "L"), "L", 2)), SITE_OFF);
  assert.deepEqual(requestPage({ url: `${SITE}/b.html`, topDocument: true, mainFrame: true, loader: NONE }, tab(`${SITE}/a.html`, load(`${SITE}/a.html`, "LA")), siteOn),
    { page: `${SITE}/b.html` });
});

test("RequestLoaders: a loader heard before, heard while waited for, or not heard in time", async () => {
  const loaders = new RequestLoaders(2);
  loaders.heard(1, "r1", "L1");
  assert.equal(loaders.loaderOf(1, "r1"), "L1");
  assert.equal(loaders.loaderOf(2, "r1"), undefined); // another tab's
  assert.equal(await loaders.when(1, "r1", 10), "L1");
  const waiting = loaders.when(1, "r2", 1000);
  loaders.heard(1, "r2", "L2");
  assert.equal(await waiting, "L2");
  assert.equal(await loaders.when(1, "r3", 5), undefined);
  loaders.heard(1, "r3", "L3"); // the newest two kept
  assert.equal(loaders.loaderOf(1, "r1"), undefined);
  assert.equal(loaders.loaderOf(1, "r3"), "L3");
  loaders.forgetTab(1);
  assert.equal(loaders.loaderOf(1, "r3"), undefined);
});
