// Chromium's fields probe (intercept/offscreen-fields-probe.ts): a paused request of the offscreen document reads as
// the probe's own (no tab, its document, CDP's resource type lowercased, the renderer's fields); the run asks for an
// image and a stylesheet only and ends as soon as both were seen; the offscreen document takes requests to the
// probe's name only. Pure parts with a fake event: no browser, no clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Protocol } from "devtools-protocol";
import { CHROMIUM_PROBE_KINDS, FieldsProbe, PROBE_HOST, type ProbeLoads, type SendHeadersDetails, type SendHeadersEvent } from "../../../extension/src/intercept/browser-fields-probe.js";
import { PROBE_LOAD, isProbeLoad, pausedDetails } from "../../../extension/src/intercept/offscreen-fields-probe.js";
import { protocolErrors } from "../support/protocol-validator.js";

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

class RecordingLoads implements ProbeLoads {
  urls: string[] = [];
  image(url: string): void { this.urls.push(url); }
  font(url: string): void { this.urls.push(url); }
  style(url: string): void { this.urls.push(url); }
  script(url: string): void { this.urls.push(url); }
}

test("a paused request of the offscreen document is read as the probe's own", () => {
  const d = pausedDetails(paused(`http://${PROBE_HOST}/n/style`, "Stylesheet", ACCEPT.style), PAGE);
  assert.deepEqual(d, {
    url: `http://${PROBE_HOST}/n/style`, type: "stylesheet", tabId: -1, documentUrl: PAGE,
    requestHeaders: [{ name: "Accept", value: ACCEPT.style }, { name: "User-Agent", value: UA }, { name: "sec-ch-ua-mobile", value: "?0" }],
  });
});

test("Chromium's run asks for an image, a stylesheet and a script, ends once all were seen, and a font teaches nothing", async () => {
  const event = new FakeEvent();
  const probe = new FieldsProbe(event, OWN, CHROMIUM_PROBE_KINDS);
  const loads = new RecordingLoads();
  let cancelled = false;
  const result = probe.run(loads, "n7", 5000, () => () => void (cancelled = true)); // the timer never fires
  assert.deepEqual(loads.urls, [`http://${PROBE_HOST}/n7/image`, `http://${PROBE_HOST}/n7/style`, `http://${PROBE_HOST}/n7/script`]);
  const listener = event.listener ?? assert.fail("no listener");
  listener(pausedDetails(paused(`http://${PROBE_HOST}/n7/font`, "Font", "*/*"), PAGE));
  listener(pausedDetails(paused(`http://${PROBE_HOST}/n7/image`, "Image", ACCEPT.image), PAGE));
  listener(pausedDetails(paused(`http://${PROBE_HOST}/n7/style`, "Stylesheet", ACCEPT.style), PAGE));
  await Promise.resolve();
  assert.ok(!cancelled, "not done before the script");
  listener(pausedDetails(paused(`http://${PROBE_HOST}/n7/script`, "Script", ACCEPT.script), PAGE));
  const message = await result;
  assert.deepEqual(message, {
    type: "browser_fields", user_agent: UA,
    accept: [{ destination: "image", mode: "no-cors", value: ACCEPT.image }, { destination: "style", mode: "no-cors", value: ACCEPT.style },
      { destination: "script", mode: "no-cors", value: ACCEPT.script }],
  });
  assert.equal(protocolErrors.toHost(message), null, "the message is the protocol's");
  assert.ok(cancelled, "its timer cancelled");
});

test("the offscreen document takes requests to the probe's name only", () => {
  assert.ok(isProbeLoad({ type: PROBE_LOAD, kind: "image", url: `http://${PROBE_HOST}/n/image` }));
  assert.ok(isProbeLoad({ type: PROBE_LOAD, kind: "font", url: `https://${PROBE_HOST}/n/font` }));
  for (const m of [
    { type: PROBE_LOAD, kind: "image", url: "http://example.com/n/image" },
    { type: PROBE_LOAD, kind: "image", url: `http://${PROBE_HOST}.example.com/n/image` },
    { type: PROBE_LOAD, kind: "worker", url: `http://${PROBE_HOST}/n/worker` },
    { type: PROBE_LOAD, kind: "image", url: "not a url" },
    { type: "lanefetch/other", kind: "image", url: `http://${PROBE_HOST}/n/image` },
    null, "x",
  ]) assert.equal(isProbeLoad(m), false, JSON.stringify(m));
});
