// Chromium: the browser's own document as webRequest sees it, for a tab whose Network domain stays off while its page
// loads (an attach that raced the navigation: debugger-sessions.ts). It gives BrowserWarmConnection what CDP's
// Network events give it for other tabs, less the byte count: when the document's first byte came, where from, and
// how many of the host's round trips its body has taken so far (`arriving`) or took in all (`completed`).
//
// Theory: webRequest observes without touching the request (no blocking listener, nothing the renderer sees), which
// is why it is used here and Network is not: enabled while the page loads, the renderer's network agent asked again
// for requests it had made (debugger-sessions.ts). Its events carry a timestamp, the remote IP, the cache flag and
// the status line, not the bytes; the span of the body in round trips stands in for them (WARM_SPAN_RTTS). Chromium
// writes an HTTP/2 answer's status line as HTTP/1.1, so a document that came over h2 may count as HTTP/1.1 here: its
// claim then sends one render-blocking request to the browser's h2 connection, which is as warm. A body that took
// long for another reason (a server that flushed its head and then thought) counts as warm too: the request it
// hands to the browser then costs what it would cost without lanefetch, on the connection the browser would use.
// Pure: the caller feeds the events and the host's round trip, and asks `arriving` once WARM_SPAN_RTTS of them have
// passed.

import type { ArrivingOnWire, FinishedOnWire } from "./browser-warm-connection.js";
import { setNewest } from "../bounded-map.js";

/** The fields of webRequest's onResponseStarted / onCompleted details used here. */
export interface WebRequestResponse {
  requestId: string;
  url: string;
  /** Epoch ms. */
  timeStamp: number;
  ip?: string;
  fromCache: boolean;
  statusLine: string;
}

interface Started {
  url: string;
  at: number;
  remoteAddress: string | null;
  fromCache: string | null;
  protocol: string | null;
}

/** Documents whose answer started and has not ended are kept at most this many (a tab's navigation ends its own). */
const MAX_STARTED = 64;

/** The protocol CDP would name ("http/1.1"), from a status line ("HTTP/1.1 200 OK"); null if it names none. */
export function protocolOf(statusLine: string): string | null {
  const version = /^HTTP\/(\d(?:\.\d)?)\s/.exec(statusLine)?.[1];
  const names: Record<string, string> = { "1.0": "http/1.0", "1.1": "http/1.1", "2": "h2", "2.0": "h2", "3": "h3" };
  return version === undefined ? null : (names[version] ?? null);
}

export class DocumentArrival {
  private readonly started = new Map<string, Started>();

  /** webRequest.onResponseStarted: the document's first byte (its head) came. */
  responseStarted(e: WebRequestResponse): void {
    setNewest(this.started, e.requestId, {
      url: e.url, at: e.timeStamp, remoteAddress: e.ip ?? null, fromCache: e.fromCache ? "cache" : null,
      protocol: protocolOf(e.statusLine),
    }, MAX_STARTED);
  }

  /** The document still arriving at `now` (epoch ms), with the host's round trips since its first byte; null if it
   * ended, was never seen, or the round trip is not known. */
  arriving(requestId: string, now: number, rttMs: number | null): { url: string; timing: ArrivingOnWire } | null {
    const s = this.started.get(requestId);
    if (s === undefined || rttMs === null || rttMs <= 0) return null;
    return {
      url: s.url,
      timing: { protocol: s.protocol, remoteAddress: s.remoteAddress, fromCache: s.fromCache, bodyBytes: null,
        spanRoundTrips: (now - s.at) / rttMs },
    };
  }

  /** webRequest.onCompleted: the document's last byte came. Null for one whose start was not seen. */
  completed(e: WebRequestResponse, rttMs: number | null): { url: string; timing: FinishedOnWire } | null {
    const s = this.ended(e.requestId);
    if (s === undefined) return null;
    return {
      url: s.url,
      timing: {
        protocol: protocolOf(e.statusLine) ?? s.protocol, remoteAddress: e.ip ?? s.remoteAddress,
        fromCache: e.fromCache ? "cache" : s.fromCache, encodedBytes: null, end: e.timeStamp, error: null,
        spanRoundTrips: rttMs === null || rttMs <= 0 ? null : (e.timeStamp - s.at) / rttMs,
      },
    };
  }

  /** webRequest.onErrorOccurred: the document failed (or was cancelled) after its first byte. */
  failed(requestId: string, timeStamp: number, error: string): { url: string; timing: FinishedOnWire } | null {
    const s = this.ended(requestId);
    if (s === undefined) return null;
    return {
      url: s.url,
      timing: { protocol: s.protocol, remoteAddress: s.remoteAddress, fromCache: s.fromCache, encodedBytes: null,
        end: timeStamp, error, spanRoundTrips: null },
    };
  }

  /** The started document's record, forgotten: it ended (or failed) once. */
  private ended(requestId: string): Started | undefined {
    const s = this.started.get(requestId);
    this.started.delete(requestId);
    return s;
  }
}
