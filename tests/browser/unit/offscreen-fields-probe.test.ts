// Chromium's fields probe (intercept/offscreen-fields-probe.ts): a paused request of the offscreen document reads as
// the probe's own (no tab, its document, CDP's resource type lowercased, the renderer's fields); the run asks for an
// image and a stylesheet only and ends as soon as both were seen; the offscreen document takes requests to the
// probe's name only. Pure parts with a fake event: no browser, no clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import {
  CHROMIUM_PROBE_KINDS, FieldsProbe, PROBE_HOST, startLoads, type SendHeadersDetails, type SendHeadersEvent,
} from "../../../extension/src/intercept/browser-fields-probe.js";
import { isProbeTarget, pageRun, pausedDetails } from "../../../extension/src/intercept/offscreen-fields-probe.js";
import { RecordingLoads, assertFieldsMessage } from "../support/fields-probe.js";

const UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const OWN = "chrome-extension://abcdefghijklmnop";
const PAGE = `${OWN}/fields-probe.html`;
// What Chromium 156 paused for the offscreen document's image and stylesheet (seen: 2026-11-30)
const ACCEPT = { image: "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", style: "text/css,*/*;q=0.1", script: "*/*" };

function paused(url: string, resourceType: Protocol.Network.ResourceType, accept: string): Protocol.Fetch.RequestPausedEvent {
  return {
    requestId: "interception-1", frameId: "F", resourceType,
    request: {
      url, method: "GET", initialPriority: "Low", referrerPolicy: "strict-origin-when-cross-origin",
      headers: { Accept: accept, "User-Agent": UA, "sec-ch-ua-mobile": "?0" },
    },
  };
}

class FakeEvent implements SendHeadersEvent {
  listener: ((d: SendHeadersDetails) => { cancel: boolean }) | null = null;
  addListener(listener: (d: SendHeadersDetails) => { cancel: boolean }): void {
    this.listener = listener;
  }
}


test("a paused request of the offscreen document is read as the probe's own", () => {
  const d = pausedDetails(paused(`http://${PROBE_HOST}/n/style`, "Stylesheet", ACCEPT.style), PAGE);
  assert.deepEqual(d, {
    url: `http://${PROBE_HOST}/n/style`, type: "stylesheet", tabId: -1, documentUrl: PAGE,
    requestHeaders: [{ name: "Accept", value: ACCEPT.style }, { name: "User-Agent", value: UA }, { name: "sec-ch-ua-mobile", value: "?0" }],
  });
});

test("Chromium's run: the page's image, stylesheet and script end it once all were seen, and a font teaches nothing", async () => {
  const event = new FakeEvent();
  const probe = new FieldsProbe(event, OWN, CHROMIUM_PROBE_KINDS);
  let cancelled = false;
  const nonce = "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a";
  const result = probe.run(null, nonce, 5000, () => () => void (cancelled = true)); // the timer never fires
  const loads = new RecordingLoads();
  startLoads(loads, nonce, CHROMIUM_PROBE_KINDS); // what the page does once the session reloaded it
  assert.deepEqual(loads.urls, ["image", "style", "script"].map((k) => `http://${PROBE_HOST}/${nonce}/${k}`));
  const listener = event.listener ?? assert.fail("no listener");
  listener(pausedDetails(paused(`http://${PROBE_HOST}/${nonce}/font`, "Font", "*/*"), PAGE));
  listener(pausedDetails(paused(`http://${PROBE_HOST}/${nonce}/image`, "Image", ACCEPT.image), PAGE));
  listener(pausedDetails(paused(`http://${PROBE_HOST}/${nonce}/style`, "Stylesheet", ACCEPT.style), PAGE));
  await Promise.resolve();
  assert.ok(!cancelled, "not done before the script");
  listener(pausedDetails(paused(`http://${PROBE_HOST}/${nonce}/script`, "Script", ACCEPT.script), PAGE));
  assertFieldsMessage(await result, UA, [["image", "no-cors", ACCEPT.image], ["style", "no-cors", ACCEPT.style], ["script", "no-cors", ACCEPT.script]]);
  assert.ok(cancelled, "its timer cancelled");
});

test("the page makes requests only as the offscreen document reloaded by the session, with a run's nonce", () => {
  const nonce = "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a";
  assert.equal(pageRun(`?run=${nonce}`, "reload", false), nonce);
  assert.equal(pageRun(`?run=${nonce}`, "navigate", false), null, "created, before the session reloads it: nothing");
  assert.equal(pageRun(`?run=${nonce}`, undefined, false), null);
  assert.equal(pageRun(`?run=${nonce}`, "reload", true), null, "opened in a tab: nothing");
  for (const bad of ["", "?run=x", `?run=${nonce}/../evil`, `?run=${nonce.toUpperCase()}`, "?other=1"]) {
    assert.equal(pageRun(bad, "reload", false), null, bad);
  }
});

test("the session attaches to the offscreen document, never to a tab showing the same page", () => {
  const page = `chrome-extension://${"a".repeat(32)}/fields-probe.html`;
  const id = "a".repeat(32);
  const target = (more: Partial<chrome.debugger.TargetInfo>): chrome.debugger.TargetInfo =>
    ({ type: "background_page", id: "T", title: "", url: page, attached: false, extensionId: id, ...more });
  assert.ok(isProbeTarget(target({}), page, id));
  assert.ok(isProbeTarget(target({ url: `${page}?run=x` }), page, id));
  assert.ok(!isProbeTarget(target({ tabId: 7, type: "page" }), page, id), "a tab");
  assert.ok(!isProbeTarget(target({ extensionId: "b".repeat(32) }), page, id), "another extension's");
  assert.ok(!isProbeTarget(target({ url: page.replace("fields-probe", "popup") }), page, id), "another page");
});
