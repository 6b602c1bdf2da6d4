// Chromium: what a page of a tab left to the browser fetched, read from the page's own Resource Timing entries once
// it loaded (chrome.scripting, every frame). Listening while the page loads costs the page: a webRequest listener
// for the tab made a 77-image page on `lan` ~11 % slower (`npm run bench -- chromium-debugger-cost`, variant
// "webrequest", 10 runs) and CDP Network more; reading the entries after the load costs the page nothing. They have
// the connection phases; what they lack: the method (GET assumed, as for subresources), failed requests, requests
// after the load event and, for cross-origin requests without Timing-Allow-Origin, the phases and status (left
// unknown). The buffer holds 250 entries unless the page raised it: more are not listed.
import type { ResourceType } from "../generated/protocol.js";
import type { BrowserTiming } from "./browser-timing.js";

/** One entry as the page script returns it: ms on the epoch clock, 0 where the page may not know. */
export interface ResourceEntry {
  url: string;
  initiatorType: string;
  /** "navigation" for the frame's document. */
  entryType: string;
  start: number;
  dnsStart: number;
  dnsEnd: number;
  connectStart: number;
  connectEnd: number;
  sslStart: number;
  requestStart: number;
  responseStart: number;
  end: number;
  status: number;
  protocol: string;
  transferSize: number;
  bodyBytes: number;
  cached: boolean;
}

/** Runs in the page (serialized by chrome.scripting: it must use nothing from outside). */
export function readResourceTiming(): ResourceEntry[] {
  const origin = performance.timeOrigin;
  const at = (ms: number): number => (ms > 0 ? origin + ms : 0);
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")] as PerformanceResourceTiming[];
  return entries.map((e) => ({
    url: e.name, initiatorType: e.initiatorType, entryType: e.entryType, start: origin + e.startTime,
    dnsStart: at(e.domainLookupStart), dnsEnd: at(e.domainLookupEnd), connectStart: at(e.connectStart),
    connectEnd: at(e.connectEnd), sslStart: at(e.secureConnectionStart), requestStart: at(e.requestStart),
    responseStart: at(e.responseStart), end: at(e.responseEnd),
    // Chromium ≥ 109; 0 for a cross-origin response without Timing-Allow-Origin.
    status: e.responseStatus || 0,
    protocol: e.nextHopProtocol, transferSize: e.transferSize, bodyBytes: e.decodedBodySize,
    // A cached response has no bytes on the wire but a body.
    cached: e.transferSize === 0 && e.decodedBodySize > 0,
  }));
}

const TYPES: Record<string, ResourceType> = {
  img: "image", image: "image", css: "stylesheet", link: "stylesheet", script: "script", fetch: "fetch",
  xmlhttprequest: "fetch", beacon: "fetch", video: "media", audio: "media", track: "media", iframe: "document",
  frame: "document", navigation: "document",
};

export function resourceTypeOf(e: ResourceEntry): ResourceType {
  if (e.entryType === "navigation") return "document";
  // A stylesheet's fonts are "css"-initiated too: the URL tells them apart.
  if (/\.(woff2?|ttf|otf)(\?|$)/i.test(e.url)) return "font";
  return TYPES[e.initiatorType] ?? "other";
}

export function browserTimingOf(e: ResourceEntry): BrowserTiming {
  const known = (ms: number): number | null => (ms > 0 ? ms : null);
  const connected = e.connectEnd > e.connectStart && e.connectStart > 0;
  return {
    start: e.start, dnsStart: e.dnsEnd > e.dnsStart ? known(e.dnsStart) : null, dnsEnd: e.dnsEnd > e.dnsStart ? known(e.dnsEnd) : null,
    connectStart: connected ? e.connectStart : null, connectEnd: connected ? e.connectEnd : null,
    sslStart: connected ? known(e.sslStart) : null, sslEnd: connected && e.sslStart > 0 ? e.connectEnd : null,
    sendStart: known(e.requestStart), sendEnd: known(e.requestStart), headersEnd: known(e.responseStart),
    end: Math.max(e.start, e.end), status: e.status > 0 ? e.status : null, statusText: "", protocol: e.protocol || null,
    mimeType: null, responseHeaders: [], remoteAddress: null, connectionId: null,
    encodedBytes: e.transferSize > 0 ? e.transferSize : null, bodyBytes: e.bodyBytes > 0 ? e.bodyBytes : null,
    fromCache: e.cached ? "disk" : null, error: null,
  };
}
