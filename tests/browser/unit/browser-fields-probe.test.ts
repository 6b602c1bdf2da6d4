// Firefox's fields probe (intercept/browser-fields-probe.ts): the Accept per kind read from the probe's own requests
// (the background page's: no tab, its document, the kind's request type, the run's nonce), every request to the
// probe's name cancelled, whoever makes it and whenever; the message validates against the protocol and says
// nothing it did not see. A fake event and fake loads: no browser, no clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  FIREFOX_PROBE_KINDS, FieldsProbe, PROBE_HOST, PROBE_URLS, browserFields, probeKindOf,
  type HeaderField, type SendHeadersDetails, type SendHeadersEvent,
} from "../../../extension/src/intercept/browser-fields-probe.js";
import { RecordingLoads, assertFieldsMessage } from "../support/fields-probe.js";

const UA = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
const ACCEPT: Record<string, string> = {
  image: "image/avif,image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
  font: "application/font-woff2;q=1.0,application/font-woff;q=0.9,*/*;q=0.8",
  style: "text/css,*/*;q=0.1",
};
const OWN = "moz-extension://3f1c2a9e";
// Firefox's webRequest types, written out here (not taken from PROBE_KINDS): what the real browser says
const TYPE: Record<string, string> = { image: "image", font: "font", style: "stylesheet" };

function fieldsOf(kind: string, ua = UA): HeaderField[] {
  return [{ name: "Host", value: PROBE_HOST }, { name: "User-Agent", value: ua }, { name: "Accept", value: ACCEPT[kind] ?? "" },
    { name: "Sec-Fetch-Dest", value: kind }];
}

/** The background page's request for a kind (as Firefox describes it), with changes. */
function own(nonce: string, kind: string, more: Partial<SendHeadersDetails> = {}): SendHeadersDetails {
  return { url: `http://${PROBE_HOST}/${nonce}/${kind}`, type: TYPE[kind] ?? "other", tabId: -1,
    documentUrl: `${OWN}/_generated_background_page.html`, requestHeaders: fieldsOf(kind), ...more };
}

/** An onBeforeSendHeaders that keeps its one listener and what each call answered. */
class FakeEvent implements SendHeadersEvent {
  listener: ((d: SendHeadersDetails) => { cancel: boolean }) | null = null;
  filter: string[] = [];
  extra: string[] = [];
  added = 0;
  answers: boolean[] = [];
  addListener(listener: (d: SendHeadersDetails) => { cancel: boolean }, filter: { urls: string[] }, extra: string[]): void {
    this.listener = listener;
    this.filter = filter.urls;
    this.extra = extra;
    this.added += 1;
  }
  request(details: SendHeadersDetails): void {
    assert.ok(this.listener, "no listener");
    this.answers.push(this.listener(details).cancel);
  }
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

test("all three kinds seen: one message with each Accept; every request to the name cancelled, before, during and after a run", async () => {
  const event = new FakeEvent();
  const probe = new FieldsProbe(event, OWN, FIREFOX_PROBE_KINDS);
  assert.deepEqual(event.filter, PROBE_URLS);
  assert.deepEqual(event.extra, ["blocking", "requestHeaders"]);
  event.request(own("n1", "image")); // before any run: cancelled, taught nothing
  const loads = new RecordingLoads();
  const timer = manualTimer();
  const result = probe.run(loads, "n1", 5000, timer.schedule);
  assert.deepEqual(loads.urls, [`http://${PROBE_HOST}/n1/image`, `http://${PROBE_HOST}/n1/font`, `http://${PROBE_HOST}/n1/style`]);
  assert.equal(timer.ms(), 5000);
  // Firefox may upgrade an extension page's http: to https: the same kinds
  for (const kind of ["style", "image", "font"]) event.request(own("n1", kind, { url: `https://${PROBE_HOST}/n1/${kind}` }));
  assertFieldsMessage(await result, UA, [["image", "no-cors", ACCEPT.image ?? ""], ["font", "cors", ACCEPT.font ?? ""], ["style", "no-cors", ACCEPT.style ?? ""]]);
  assert.ok(timer.cancelled());
  event.request(own("n1", "image")); // after the run: still cancelled
  assert.deepEqual(event.answers, [true, true, true, true, true]);
  assert.equal(event.added, 1, "one listener for the background's life");
});

test("only the run's own requests teach: a page's (a tab), another document's, another nonce, the wrong type", async () => {
  const event = new FakeEvent();
  const probe = new FieldsProbe(event, OWN, FIREFOX_PROBE_KINDS);
  const timer = manualTimer();
  const result = probe.run(new RecordingLoads(), "n2", 5000, timer.schedule);
  const bad = { name: "Accept", value: "text/x-poisoned" };
  event.request(own("n2", "image", { tabId: 4, requestHeaders: [...fieldsOf("image").slice(0, 2), bad] }));
  event.request(own("n2", "font", { documentUrl: "https://evil.example/page.html", requestHeaders: [...fieldsOf("font").slice(0, 2), bad] }));
  event.request(own("n2", "font", { documentUrl: `${OWN}.evil.example/x`, requestHeaders: [...fieldsOf("font").slice(0, 2), bad] }));
  event.request(own("n1", "style", { requestHeaders: [...fieldsOf("style").slice(0, 2), bad] }));
  event.request(own("n2", "style", { type: "xmlhttprequest", requestHeaders: [...fieldsOf("style").slice(0, 2), bad] }));
  event.request(own("n2", "script", { type: "script", requestHeaders: [...fieldsOf("script").slice(0, 2), bad] })); // not Firefox's kind
  event.request(own("n2", "image"));
  timer.fire();
  const message = await result;
  assert.ok(message !== null);
  assert.deepEqual(message.accept, [{ destination: "image", mode: "no-cors", value: ACCEPT.image }]);
  assert.equal(message.user_agent, UA);
  assert.deepEqual(event.answers, [true, true, true, true, true, true, true], "all cancelled all the same");
});

test("nothing seen, or no User-Agent, or two of them: no message", async () => {
  const event = new FakeEvent();
  const timer = manualTimer();
  const result = new FieldsProbe(event, OWN, FIREFOX_PROBE_KINDS).run(new RecordingLoads(), "n3", 10, timer.schedule);
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
  assert.equal(probeKindOf(`http://${PROBE_HOST}/n/image`, "n")?.kind.destination, "image");
  assert.equal(probeKindOf(`https://${PROBE_HOST}/n/font?x`, "n")?.kind.destination, "font");
  assert.equal(probeKindOf(`http://${PROBE_HOST}/m/image`, "n"), null);
  assert.equal(probeKindOf(`http://${PROBE_HOST}/n/script`, "n")?.kind.destination, "script");
  assert.equal(probeKindOf(`http://${PROBE_HOST}/n/worker`, "n"), null);
  assert.equal(probeKindOf("http://example.com/n/image", "n"), null);
  assert.equal(probeKindOf("not a url", "n"), null);
});

test("a run started while one is under way (the helper reconnected) replaces it: the first ends with what it saw", async () => {
  const event = new FakeEvent();
  const probe = new FieldsProbe(event, OWN, FIREFOX_PROBE_KINDS);
  const first = manualTimer();
  const second = manualTimer();
  const a = probe.run(new RecordingLoads(), "a", 5000, first.schedule);
  event.request(own("a", "image"));
  const b = probe.run(new RecordingLoads(), "b", 5000, second.schedule);
  event.request(own("a", "font")); // the first run's late request: its nonce is no longer the run's
  for (const kind of ["image", "font", "style"]) event.request(own("b", kind));
  assert.deepEqual((await b)?.accept.map((k) => k.destination), ["image", "font", "style"]);
  first.fire();
  assert.deepEqual((await a)?.accept.map((k) => k.destination), ["image"]);
  assert.deepEqual(event.answers, [true, true, true, true, true]);
});
