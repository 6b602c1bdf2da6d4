// Firefox's fields probe (proxy/browser-fields-probe.ts): the Accept per kind read from the probe's own requests,
// every one of them cancelled, the listener removed once all three were seen or the time ran out; the message
// validates against the protocol and says nothing it did not see. A fake event and fake loads: no browser, no clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  PROBE_HOST, PROBE_URLS, browserFields, probeBrowserFields, probeKindOf,
  type HeaderField, type ProbeLoads, type SendHeadersDetails, type SendHeadersEvent,
} from "../../../extension/src/proxy/browser-fields-probe.js";
import { protocolErrors } from "../support/protocol-validator.js";

const UA = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
const ACCEPT: Record<string, string> = {
  image: "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
  font: "application/font-woff2;q=1.0,application/font-woff;q=0.9,*/*;q=0.8",
  style: "text/css,*/*;q=0.1",
};

function fieldsOf(kind: string, ua = UA): HeaderField[] {
  return [{ name: "Host", value: PROBE_HOST }, { name: "User-Agent", value: ua }, { name: "Accept", value: ACCEPT[kind] ?? "" },
    { name: "Sec-Fetch-Dest", value: kind }];
}

/** An onBeforeSendHeaders that remembers its listener and what each call answered; requests come when the test says. */
class FakeEvent implements SendHeadersEvent {
  listener: ((d: SendHeadersDetails) => { cancel: boolean }) | null = null;
  filter: string[] = [];
  extra: string[] = [];
  removed = 0;
  answers: boolean[] = [];
  addListener(listener: (d: SendHeadersDetails) => { cancel: boolean }, filter: { urls: string[] }, extra: string[]): void {
    this.listener = listener;
    this.filter = filter.urls;
    this.extra = extra;
  }
  removeListener(): void {
    this.removed += 1;
    this.listener = null;
  }
  request(url: string, headers: HeaderField[]): void {
    assert.ok(this.listener, "a request came after the listener was removed");
    this.answers.push(this.listener({ url, requestHeaders: headers }).cancel);
  }
}

class RecordingLoads implements ProbeLoads {
  urls: string[] = [];
  image(url: string): void { this.urls.push(url); }
  font(url: string): void { this.urls.push(url); }
  style(url: string): void { this.urls.push(url); }
}

/** A schedule the test fires by hand. */
function manualTimer(): { schedule: (run: () => void, ms: number) => () => void; fire: () => void; cancelled: () => boolean; ms: () => number } {
  let pending: (() => void) | null = null;
  let wasCancelled = false;
  let delay = -1;
  return {
    schedule: (run, ms) => {
      pending = run;
      delay = ms;
      return () => { wasCancelled = true; pending = null; };
    },
    fire: () => pending?.(),
    cancelled: () => wasCancelled,
    ms: () => delay,
  };
}

test("all three kinds seen: one message with each Accept, every probe request cancelled, the listener removed", async () => {
  const event = new FakeEvent();
  const loads = new RecordingLoads();
  const timer = manualTimer();
  const result = probeBrowserFields(event, loads, "p1", 5000, timer.schedule);
  assert.deepEqual(event.filter, PROBE_URLS);
  assert.deepEqual(event.extra, ["blocking", "requestHeaders"]);
  assert.deepEqual(loads.urls, [`http://${PROBE_HOST}/p1/image`, `http://${PROBE_HOST}/p1/font`, `http://${PROBE_HOST}/p1/style`]);
  assert.equal(timer.ms(), 5000);
  // Firefox upgrades an extension page's http: to https: (its CSP): the same kinds
  for (const kind of ["style", "image", "font"]) event.request(`https://${PROBE_HOST}/p1/${kind}`, fieldsOf(kind));
  const message = await result;
  assert.deepEqual(message, {
    type: "browser_fields", user_agent: UA,
    accept: [{ destination: "image", mode: "no-cors", value: ACCEPT.image }, { destination: "font", mode: "cors", value: ACCEPT.font },
      { destination: "style", mode: "no-cors", value: ACCEPT.style }],
  });
  assert.equal(protocolErrors.toHost(message), null, "the message is the protocol's");
  assert.deepEqual(event.answers, [true, true, true]);
  assert.equal(event.removed, 1);
  assert.ok(timer.cancelled());
});

test("time runs out: what was seen is sent; a stale probe's request is cancelled but teaches nothing", async () => {
  const event = new FakeEvent();
  const timer = manualTimer();
  const result = probeBrowserFields(event, new RecordingLoads(), "p2", 5000, timer.schedule);
  event.request(`http://${PROBE_HOST}/p1/font`, fieldsOf("font", "Other/1")); // an earlier probe's, late
  event.request(`http://${PROBE_HOST}/p2/image`, fieldsOf("image"));
  timer.fire();
  const message = await result;
  assert.ok(message !== null);
  assert.deepEqual(message.accept, [{ destination: "image", mode: "no-cors", value: ACCEPT.image }]);
  assert.equal(message.user_agent, UA);
  assert.deepEqual(event.answers, [true, true]);
  assert.equal(event.removed, 1);
});

test("nothing seen, or no User-Agent, or two of them: no message", async () => {
  const event = new FakeEvent();
  const timer = manualTimer();
  const result = probeBrowserFields(event, new RecordingLoads(), "p3", 10, timer.schedule);
  timer.fire();
  assert.equal(await result, null);
  const noAgent = new Map([["image", [{ name: "Accept", value: "*/*" }]]]);
  assert.equal(browserFields(noAgent), null);
  const two = new Map([["image", fieldsOf("image")], ["font", fieldsOf("font", "Other/1")]]);
  assert.equal(browserFields(two), null, "one browser's fields never answer for another's");
});

test("a kind seen without Accept says so (null); names are matched without case", () => {
  const seen = new Map([["style", [{ name: "user-agent", value: UA }]], ["image", [{ name: "USER-AGENT", value: UA }, { name: "ACCEPT", value: "*/*" }]]]);
  assert.deepEqual(browserFields(seen)?.accept, [{ destination: "image", mode: "no-cors", value: "*/*" }, { destination: "style", mode: "no-cors", value: null }]);
});

test("only the probe's own URLs are its kinds", () => {
  assert.equal(probeKindOf(`http://${PROBE_HOST}/n/image`, "n"), "image");
  assert.equal(probeKindOf(`https://${PROBE_HOST}/n/font?x`, "n"), "font");
  assert.equal(probeKindOf(`http://${PROBE_HOST}/m/image`, "n"), null);
  assert.equal(probeKindOf(`http://${PROBE_HOST}/n/script`, "n"), null);
  assert.equal(probeKindOf("http://example.com/n/image", "n"), null);
  assert.equal(probeKindOf("not a url", "n"), null);
});
