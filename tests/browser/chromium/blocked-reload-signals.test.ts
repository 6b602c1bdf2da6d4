// What real Chromium tells an extension about a top-level navigation that a DNR block rule stops, as the navigation
// gate's block does (intercept/navigation-gate.ts): whether it was a reload, and a hard reload (Ctrl+Shift+R,
// `Page.reload({ignoreCache: true})`, the same NavigationController reload) or a plain one. The gate re-navigates a
// blocked navigation with chrome.tabs.update once it attached, which makes any reload a plain navigation; it could
// re-navigate with chrome.tabs.reload(tabId, {bypassCache}) only if something before (or at) the block told them
// apart. This test pins down that nothing does (docs/architecture.md, "A reload the gate blocked"): should a Chromium
// start telling them apart, it fails, and the gate can then keep the user's reload as it was.
//
// A probe extension of its own (no lanefetch): a session block rule for 127.0.0.1's main frames, and every
// webNavigation, webRequest (with extraHeaders), declarativeNetRequest.onRuleMatchedDebug and tabs.onUpdated event
// recorded with all its fields.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type CDPSession, type Page, type Worker } from "playwright-core";
import { chromiumExecutable } from "../support/paths.js";
import { eventually } from "../support/eventually.js";

const MANIFEST = {
  manifest_version: 3, name: "blocked reload probe", version: "1",
  permissions: ["declarativeNetRequest", "declarativeNetRequestFeedback", "webNavigation", "webRequest", "tabs"],
  host_permissions: ["<all_urls>"],
  background: { service_worker: "background.js" },
};

const BACKGROUND = `
globalThis.events = [];
const record = (kind) => (d) => globalThis.events.push({ kind, ...JSON.parse(JSON.stringify(d)) });
const frames = { urls: ["<all_urls>"], types: ["main_frame"] };
for (const name of ["onBeforeNavigate", "onCommitted", "onErrorOccurred", "onCompleted", "onDOMContentLoaded"]) {
  chrome.webNavigation[name].addListener(record("webNavigation." + name));
}
chrome.webRequest.onBeforeRequest.addListener(record("webRequest.onBeforeRequest"), frames);
chrome.webRequest.onBeforeSendHeaders.addListener(record("webRequest.onBeforeSendHeaders"), frames, ["requestHeaders", "extraHeaders"]);
chrome.webRequest.onErrorOccurred.addListener(record("webRequest.onErrorOccurred"), frames);
chrome.declarativeNetRequest.onRuleMatchedDebug.addListener(record("declarativeNetRequest.onRuleMatchedDebug"));
chrome.tabs.onUpdated.addListener((tabId, changeInfo, tab) =>
  globalThis.events.push({ kind: "tabs.onUpdated", changeInfo, url: tab.url, pendingUrl: tab.pendingUrl, status: tab.status }));
globalThis.block = async (on) => {
  const existing = await chrome.declarativeNetRequest.getSessionRules();
  await chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: existing.map((r) => r.id), addRules: on ? [{
    id: 1, priority: 1, action: { type: "block" },
    condition: { resourceTypes: ["main_frame"], requestMethods: ["get"], requestDomains: ["127.0.0.1"] } }] : [] });
};
`;

interface ProbeEvent {
  kind: string;
  [field: string]: unknown;
}

/** Fields that differ between any two navigations (ids, times), whatever kind they are. */
const PER_NAVIGATION = new Set(["requestId", "documentId", "timeStamp", "tabId", "processId", "lastAccessed"]);

/** The events as a sorted list (events of different APIs may interleave differently from one navigation to the next),
 * without the fields that differ between any two navigations. */
function comparable(events: ProbeEvent[]): string[] {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).filter(([k]) => !PER_NAVIGATION.has(k)).map(([k, v]) => [k, strip(v)]));
  };
  return events.map((e) => JSON.stringify(strip(e))).sort();
}

let server: http.Server;
let origin: string;
const seen: string[] = [];
let dir: string;
let context: BrowserContext;
let worker: Worker;
let page: Page;
let cdp: CDPSession;

before(async () => {
  server = http.createServer((req, res) => {
    seen.push(`${req.url ?? ""} cc=${req.headers["cache-control"] ?? "-"} pragma=${req.headers.pragma ?? "-"}`);
    if (req.url === "/a.html") {
      res.writeHead(200, { "content-type": "text/html", "cache-control": "max-age=3600", etag: '"v1"' });
      res.end("<!doctype html><title>a</title><p>a");
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), "lanefetch-reload-probe-"));
  const extension = join(dir, "extension");
  mkdirSync(extension);
  writeFileSync(join(extension, "manifest.json"), JSON.stringify(MANIFEST));
  writeFileSync(join(extension, "background.js"), BACKGROUND);
  context = await chromium.launchPersistentContext(join(dir, "profile"), {
    executablePath: chromiumExecutable, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", `--disable-extensions-except=${extension}`, `--load-extension=${extension}`],
  });
  worker = context.serviceWorkers()[0] ?? await context.waitForEvent("serviceworker", { timeout: 15000 });
  page = await context.newPage();
  cdp = await context.newCDPSession(page);
});

after(async () => {
  await context.close();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function events(): Promise<ProbeEvent[]> {
  return worker.evaluate(() => (globalThis as unknown as { events: ProbeEvent[] }).events);
}

/** The page loaded (and cached: fresh for an hour), then `act` with the block rule on (or off): every event until
 * the tab is complete again, after the navigation ended (blocked or loaded). */
async function recorded(act: () => Promise<unknown>, blocked = true): Promise<ProbeEvent[]> {
  await worker.evaluate(() => (globalThis as unknown as { block: (on: boolean) => Promise<void> }).block(false));
  await worker.evaluate(() => {
    (globalThis as unknown as { events: unknown[] }).events.length = 0;
  });
  await page.goto(`${origin}/a.html`, { waitUntil: "load" });
  // The page's load event can come before the extension hears of it: its onCompleted and the tab's "complete" may
  // arrive after the events are cleared below, and would count as the next navigation's (a CI failure).
  await eventually("the loaded page's onCompleted and the tab's complete, seen by the extension", async () => {
    const all = await events();
    return all.some((e) => e.kind === "webNavigation.onCompleted") &&
      all.some((e) => e.kind === "tabs.onUpdated" && (e.changeInfo as { status?: string }).status === "complete")
      ? true : null;
  }, { timeoutMs: 15000 });
  await worker.evaluate((on) => (globalThis as unknown as { block: (on: boolean) => Promise<void> }).block(on), blocked);
  await worker.evaluate(() => {
    (globalThis as unknown as { events: unknown[] }).events.length = 0;
  });
  seen.length = 0;
  await act();
  const end = blocked ? "webNavigation.onErrorOccurred" : "webNavigation.onCompleted";
  return eventually(`${end}, then the tab complete`, async () => {
    const all = await events();
    const ended = all.findIndex((e) => e.kind === end);
    return ended >= 0 && all.slice(ended).some((e) => e.kind === "tabs.onUpdated" && e.status === "complete") ? all : null;
  }, { timeoutMs: 15000 }, () => seen);
}

const reload = (ignoreCache: boolean) => () => cdp.send("Page.reload", { ignoreCache });

test("a blocked hard reload, a blocked plain reload and a blocked navigation to the same URL look alike to an extension", async () => {
  const plain = await recorded(reload(false));
  const plainSeen = [...seen];
  const hard = await recorded(reload(true));
  const hardSeen = [...seen];
  const typed = await recorded(() => cdp.send("Page.navigate", { url: `${origin}/a.html`, transitionType: "typed" }));
  // (The favicon the load before asked for may reach the server late, inside the window: only the page counts.)
  const pageAsked = (list: string[]): string[] => list.filter((s) => s.startsWith("/a.html"));
  assert.deepEqual([pageAsked(plainSeen), pageAsked(hardSeen)], [[], []], "the block stopped both before the network");
  const kinds = plain.map((e) => e.kind);
  assert.ok(kinds.includes("webNavigation.onBeforeNavigate") && kinds.includes("webRequest.onBeforeRequest") &&
    kinds.includes("declarativeNetRequest.onRuleMatchedDebug") && kinds.includes("webNavigation.onErrorOccurred"), kinds.join(", "));
  // The only event that names a transition (onCommitted's transitionType) never comes: the error page is not a commit.
  assert.ok(!kinds.includes("webNavigation.onCommitted"), kinds.join(", "));
  assert.ok(!kinds.includes("webRequest.onBeforeSendHeaders"), "blocked before its fields were prepared");
  assert.equal(plain.find((e) => e.kind === "webNavigation.onErrorOccurred")?.error, "net::ERR_BLOCKED_BY_CLIENT");
  // Field for field the same (but ids and times): nothing tells a hard reload from a plain one,
  // nor a reload from a navigation to the page's own URL.
  assert.deepEqual(comparable(hard), comparable(plain));
  assert.deepEqual(comparable(typed), comparable(plain));
});

test("unblocked, only the commit says reload, alike for a hard and a plain one, and no event shows the no-cache fields", async () => {
  const plain = await recorded(reload(false), false);
  const plainSeen = [...seen];
  const hard = await recorded(reload(true), false);
  const hardSeen = [...seen];
  // They really were a plain and a hard reload: the server saw a validation and an unconditional no-cache GET.
  assert.deepEqual(plainSeen.filter((s) => s.startsWith("/a.html")), ["/a.html cc=max-age=0 pragma=-"]);
  assert.deepEqual(hardSeen.filter((s) => s.startsWith("/a.html")), ["/a.html cc=no-cache pragma=no-cache"]);
  for (const events of [plain, hard]) {
    const commit = events.find((e) => e.kind === "webNavigation.onCommitted");
    assert.deepEqual([commit?.transitionType, commit?.transitionQualifiers], ["reload", []]);
    const sendHeaders = events.find((e) => e.kind === "webRequest.onBeforeSendHeaders");
    const fields = (sendHeaders?.requestHeaders as { name: string }[] | undefined) ?? [];
    assert.ok(!fields.some((f) => /^(cache-control|pragma)$/i.test(f.name)), JSON.stringify(fields));
  }
  // (The tab's own updates left out here: the hard reload asks for the favicon again.)
  const navigation = (list: ProbeEvent[]): ProbeEvent[] => list.filter((e) => e.kind !== "tabs.onUpdated");
  assert.deepEqual(comparable(navigation(hard)), comparable(navigation(plain)));
});
