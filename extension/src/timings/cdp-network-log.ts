// Chromium: the browser's own view of each request from CDP Network events on the debugger session, turned into a
// BrowserTiming per (network request id, URL) when the request finishes. A redirect keeps its network id, so each
// hop is keyed by its URL too. Pure: the caller feeds events and gets finished timings back.
import type { Protocol } from "devtools-protocol";
import type { SpeedSample } from "../intercept/host-speed.js";
import type { BrowserTiming } from "./browser-timing.js";
import { setNewest } from "../bounded-map.js";

/** What the request's requestWillBeSent said (for listing requests lanefetch never saw paused). */
export interface SeenRequest {
  /** The tab whose session reported it (as given to handle()). */
  tabId: number;
  method: string;
  /** CDP resource type, e.g. "Image". */
  type: string;
  priority: string;
  headers: [string, string][];
  /** The document whose load made the request (CDP loaderId; a top-level document's own request id is its
   * loader's), to file it under that page load however late it finishes; null where CDP left it out. */
  loaderId: string | null;
}
export type FinishedTiming = (networkId: string, url: string, timing: BrowserTiming, request: SeenRequest) => void;
/** What the browser's timing of a request tells of its host's round trip: a TCP connect (one round trip) or the
 * request's time to the first byte of its response head (at least one). HostSpeed decides which samples count. */
export type ConnectedTiming = (sample: SpeedSample) => void;
/** A response to the browser's own request came over the network with this protocol (Network.Response.protocol:
 * "h2", "http/1.1"…); a fulfilled, cached or service worker's answer is not reported. */
export type ResponseProtocol = (url: string, protocol: string) => void;
/** The browser's own request's response is arriving: its timing so far (after the head, after each chunk). */
export type Arriving = (url: string, timing: BrowserTiming) => void;

interface Pending {
  url: string;
  request: SeenRequest;
  /** epoch ms = monotonic s × 1000 + offset */
  offsetMs: number;
  startedAt: number;
  timing: BrowserTiming;
}

/** Network.enable with a small resource buffer: the extension asks for no body, but a document the browser loads
 * itself is streamed to the helper (intercept/document-stream.ts), and the bytes that arrived before
 * Network.streamResourceContent answered come only from this buffer (with 0 a document's first 4 kB were lost).
 * Bounded per target: 2 MiB in all, 512 KiB of one response (the first read of a document is a few tens of kB; a
 * lost one is detected and the stream cut). */
export const NETWORK_ENABLE: Protocol.Network.EnableRequest = { maxTotalBufferSize: 2 * 1024 * 1024, maxResourceBufferSize: 512 * 1024, maxPostDataSize: 0 };

const MAX_PENDING = 4000;

function headerPairs(headers: Protocol.Network.Headers): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const part of value.split("\n")) pairs.push([name, part]);
  }
  return pairs;
}

function blank(start: number): BrowserTiming {
  return {
    start, dnsStart: null, dnsEnd: null, connectStart: null, connectEnd: null, sslStart: null, sslEnd: null,
    sendStart: null, sendEnd: null, headersEnd: null, end: null, status: null, statusText: "", protocol: null,
    mimeType: null, responseHeaders: [], remoteAddress: null, connectionId: null, encodedBytes: null, bodyBytes: null, fromCache: null,
    error: null,
  };
}

export class CdpNetworkLog {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly finished: FinishedTiming, private readonly connected?: ConnectedTiming,
    private readonly protocolSeen?: ResponseProtocol, private readonly arriving?: Arriving) {}

  /** Feed one CDP event (method and params as chrome.debugger.onEvent gives them) of `tabId`'s sessions. Unknown
   * methods are ignored. */
  handle(method: string, params: unknown, tabId = -1): void {
    switch (method) {
      case "Network.requestWillBeSent":
        this.willBeSent(params as Protocol.Network.RequestWillBeSentEvent, tabId);
        break;
      case "Network.responseReceived":
        this.responseReceived(params as Protocol.Network.ResponseReceivedEvent);
        break;
      case "Network.dataReceived": {
        const e = params as Protocol.Network.DataReceivedEvent;
        const p = this.pending.get(e.requestId);
        if (p) {
          p.timing.bodyBytes = (p.timing.bodyBytes ?? 0) + e.dataLength;
          this.arriving?.(p.url, p.timing);
        }
        break;
      }
      case "Network.requestServedFromCache": {
        const p = this.pending.get((params as Protocol.Network.RequestServedFromCacheEvent).requestId);
        if (p) p.timing.fromCache = "memory";
        break;
      }
      case "Network.loadingFinished": {
        const e = params as Protocol.Network.LoadingFinishedEvent;
        this.finish(e.requestId, e.timestamp, e.encodedDataLength, null);
        break;
      }
      case "Network.loadingFailed": {
        const e = params as Protocol.Network.LoadingFailedEvent;
        this.finish(e.requestId, e.timestamp, null, e.canceled === true ? `${e.errorText} (cancelled)` : e.errorText);
        break;
      }
    }
  }

  get size(): number {
    return this.pending.size;
  }

  private willBeSent(e: Protocol.Network.RequestWillBeSentEvent, tabId: number): void {
    const previous = this.pending.get(e.requestId);
    if (previous && e.redirectResponse) {
      this.applyResponse(previous, e.redirectResponse);
      this.finish(e.requestId, e.timestamp, e.redirectResponse.encodedDataLength, null);
    }
    const offsetMs = e.wallTime * 1000 - e.timestamp * 1000;
    const start = e.timestamp * 1000 + offsetMs;
    // Partial: fields a browser may leave out are defaulted (this is only for the panel).
    const r: Partial<Protocol.Network.Request> = e.request;
    const request: SeenRequest = {
      tabId, method: r.method ?? "GET", type: e.type ?? "Other", priority: r.initialPriority ?? "Medium", headers: headerPairs(r.headers ?? {}),
      loaderId: (e as Partial<Protocol.Network.RequestWillBeSentEvent>).loaderId ?? null,
    };
    setNewest(this.pending, e.requestId, { url: e.request.url, request, offsetMs, startedAt: start, timing: blank(start) }, MAX_PENDING);
  }

  private responseReceived(e: Protocol.Network.ResponseReceivedEvent): void {
    const p = this.pending.get(e.requestId);
    if (p) {
      this.applyResponse(p, e.response);
      this.arriving?.(p.url, p.timing);
    }
    const r = e.response;
    // No remote address: fulfilled through the debugger (the helper's answer) or never on the network.
    if (r.protocol && r.remoteIPAddress && !r.fromDiskCache && !r.fromServiceWorker && !r.fromPrefetchCache) {
      this.protocolSeen?.(r.url, r.protocol);
    }
  }

  private applyResponse(p: Pending, r: Protocol.Network.Response): void {
    const t = p.timing;
    t.status = r.status;
    t.statusText = r.statusText;
    t.protocol = r.protocol ?? null;
    t.mimeType = r.mimeType || null;
    t.responseHeaders = headerPairs(r.headers);
    t.remoteAddress = r.remoteIPAddress ? (r.remoteIPAddress.includes(":") ? `[${r.remoteIPAddress}]` : r.remoteIPAddress) + (r.remotePort ? `:${r.remotePort}` : "") : null;
    t.connectionId = r.connectionId ? String(r.connectionId) : null;
    if (r.fromServiceWorker) t.fromCache = "service_worker";
    else if (r.fromDiskCache) t.fromCache = "disk";
    const rt = r.timing;
    if (!rt) return;
    const base = rt.requestTime * 1000 + p.offsetMs;
    const at = (ms: number): number | null => (ms >= 0 ? base + ms : null);
    t.start = Math.min(p.startedAt, base);
    t.dnsStart = at(rt.dnsStart);
    t.dnsEnd = at(rt.dnsEnd);
    t.connectStart = at(rt.connectStart);
    t.connectEnd = at(rt.connectEnd);
    t.sslStart = at(rt.sslStart);
    t.sslEnd = at(rt.sslEnd);
    t.sendStart = at(rt.sendStart);
    t.sendEnd = at(rt.sendEnd);
    t.headersEnd = at(rt.receiveHeadersEnd);
    // An answer with no remote address did not come over the network: the helper's (Fetch.fulfillRequest: its
    // timing is the detour's, a few ms whatever the link), a service worker's, a cache's. Its times are no round trip.
    const local = r.fromServiceWorker === true || r.fromDiskCache === true || r.fromPrefetchCache === true || !r.remoteIPAddress;
    // As soon as the response head is in (before the page's subresources): TCP only, TLS excluded.
    if (rt.connectStart >= 0 && rt.connectEnd >= 0) {
      const ms = (rt.sslStart >= rt.connectStart ? rt.sslStart : rt.connectEnd) - rt.connectStart;
      this.connected?.({ url: p.url, ms, source: "browser_connect", local });
    }
    // Request sent → first byte of the head: an upper bound even on a connection opened earlier (Chromium preconnects
    // a navigation's origin), so a page's document tells that its host is fast although its connect time is hidden.
    const headStart = rt.receiveHeadersStart >= 0 ? rt.receiveHeadersStart : rt.receiveHeadersEnd;
    if (rt.sendEnd >= 0 && headStart >= 0) {
      this.connected?.({ url: p.url, ms: headStart - rt.sendEnd, source: "browser_first_byte", document: p.request.type === "Document", local });
    }
  }

  private finish(requestId: string, timestamp: number, encodedBytes: number | null, error: string | null): void {
    const p = this.pending.get(requestId);
    if (!p) return;
    this.pending.delete(requestId);
    p.timing.end = timestamp * 1000 + p.offsetMs;
    if (encodedBytes !== null) p.timing.encodedBytes = encodedBytes;
    p.timing.error = error;
    this.finished(requestId, p.url, p.timing, p.request);
  }
}
