// For the fields probes' unit tests (intercept/browser-fields-probe.ts): loads that only record their URLs, and the
// browser_fields message a run should send, checked whole and against the protocol.
import assert from "node:assert/strict";
import type { BrowserFields } from "../../../extension/src/generated/protocol.js";
import type { ProbeLoads } from "../../../extension/src/intercept/browser-fields-probe.js";
import { protocolErrors } from "./protocol-validator.js";

/** `message` is exactly `{user_agent, accept}` with these [destination, mode, value] kinds, in order, and valid. */
export function assertFieldsMessage(message: BrowserFields | null, userAgent: string, kinds: [string, string, string | null][]): void {
  assert.deepEqual(message, {
    type: "browser_fields", user_agent: userAgent,
    accept: kinds.map(([destination, mode, value]) => ({ destination, mode, value })),
  });
  assert.equal(protocolErrors.toHost(message), null, "the message is the protocol's");
}

/** Loads that record the URLs asked for, in order. */
export class RecordingLoads implements ProbeLoads {
  urls: string[] = [];
  image(url: string): void { this.urls.push(url); }
  font(url: string): void { this.urls.push(url); }
  style(url: string): void { this.urls.push(url); }
  script(url: string): void { this.urls.push(url); }
}
