// Requests of an enabled site's page that Firefox fetched itself while lanefetch stepped aside (sent direct by the
// proxy router), as passed records with what chrome.webRequest tells of them: start, first byte, end, status,
// address. webRequest has no connection phases (DNS, connect, TLS, send), so these records have none; the panel
// shows them as one "browser" bar.
import type { ResourceType } from "../generated/protocol.js";
import type { PassReason } from "../intercept/pass-reason.js";
import type { TabCounters } from "./tab-counters.js";
import type { TimingStore } from "./timing-store.js";
import { setNewest } from "../bounded-map.js";
import { treatedPrivate } from "../tab-privacy.js";

/** Requests followed until the browser completed them (bounded). */
const LIMIT = 500;
/** webRequest's request types in the helper's (DevTools') terms. fetch() and XHR are both "xmlhttprequest" there:
 * "fetch" for both. */
const TYPES: Record<string, ResourceType> = {
  main_frame: "document", sub_frame: "document", stylesheet: "stylesheet", script: "script", image: "image",
  imageset: "image", font: "font", xmlhttprequest: "fetch", media: "media", xslt: "stylesheet", beacon: "ping",
  ping: "ping", csp_report: "cspviolationreport", websocket: "websocket", web_manifest: "manifest",
};

export function webRequestResourceType(type: string): ResourceType {
  return TYPES[type] ?? "other";
}

/** A webRequest event's details, as far as the records use them. */
export interface WebRequestEvent {
  requestId: string;
  url: string;
  timeStamp: number;
  statusCode?: number;
  statusLine?: string;
  ip?: string;
  fromCache?: boolean;
  error?: string;
  /** Present when the listener asked for them (extraInfoSpec ["responseHeaders"]). */
  responseHeaders?: { name: string; value?: string }[];
}

export interface BrowserRequest {
  requestId: string;
  url: string;
  method: string;
  type: string;
  /** A private window's request (webRequest's and proxy.onRequest's details say so); absent counts as private. */
  incognito?: boolean;
}

interface Followed {
  recordId: string;
  start: number;
  headersAt: number | null;
}

function mimeTypeOf(headers: readonly (readonly [string, string])[]): string | null {
  const type = headers.find(([n]) => n.toLowerCase() === "content-type")?.[1];
  return type === undefined ? null : (type.split(";")[0]?.trim() ?? null);
}

export class BrowserFetchedRecords {
  private readonly followed = new Map<string, Followed>();

  /** `idPrefix` keeps the records' ids apart from the other records of the store. */
  constructor(
    private readonly counters: TabCounters,
    private readonly timings: TimingStore,
    private readonly idPrefix: string,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The browser fetches this request of the tab's page itself: a passed record, counted. `at`: when it started. */
  passed(tabId: number, pageUrl: string, request: BrowserRequest, reason: PassReason, detail: string, at: number = this.now()): void {
    const id = `${this.idPrefix}${request.requestId}`;
    // Asked again for the same request (a redirect keeps its id): followed until it completes, also when the store
    // kept no record of it (its page load full).
    if (this.followed.has(request.requestId) || this.timings.get(id)) return;
    this.timings.add({
      id, tabId, pageUrl, url: request.url, method: request.method, resourceType: webRequestResourceType(request.type),
      priority: "Medium", networkId: request.requestId, batchId: null, pausedAt: at, answeredAt: at, outcome: "passed",
      reason, detail, status: null, bodyBytes: 0, timing: null, privateBrowsing: treatedPrivate(request.incognito),
    });
    this.counters.passed(tabId, reason);
    setNewest(this.followed, request.requestId, { recordId: id, start: at, headersAt: null }, LIMIT);
  }

  /** webRequest.onResponseStarted / onCompleted / onErrorOccurred of any request: the browser's own view of the
   * ones it fetched itself; true if it was one of them. */
  event(kind: "started" | "completed" | "failed", e: WebRequestEvent): boolean {
    const d = this.followed.get(e.requestId);
    if (!d) return false;
    if (kind === "started") {
      d.headersAt = e.timeStamp;
      return true;
    }
    this.followed.delete(e.requestId);
    const status = e.statusCode ?? null;
    const headers: [string, string][] = (e.responseHeaders ?? []).map((h) => [h.name, h.value ?? ""]);
    this.timings.update(d.recordId, {
      status,
      browser: {
        start: d.start, dnsStart: null, dnsEnd: null, connectStart: null, connectEnd: null, sslStart: null, sslEnd: null,
        sendStart: null, sendEnd: null, headersEnd: d.headersAt, end: Math.max(d.start, e.timeStamp), status,
        statusText: e.statusLine?.replace(/^HTTP\/\S+ \d+ ?/, "") ?? "", protocol: null, mimeType: mimeTypeOf(headers),
        responseHeaders: headers, remoteAddress: e.ip ?? null, connectionId: null, encodedBytes: null, bodyBytes: null,
        fromCache: e.fromCache === true ? "disk" : null, error: kind === "failed" ? (e.error ?? "failed") : null,
      },
    });
    return true;
  }
}
