// Chromium: the browser's own HTTP/1.1 connection to an origin that has just carried a large response, idle now,
// offered to the page's next render-blocking request.
//
// Theory: a TCP connection's speed is its congestion window, which grows with what it carried (slow start doubles
// it per round trip from the server's initial ten segments) and shrinks when it sits idle (halved per
// retransmission timeout). When the browser loads a page's document itself (a page on a private address:
// `local_document`) the document's connection ends it far warmer than any of the helper's: they carried only the
// page's small stylesheets and icons so far. Measured on `sat` (600 ms RTT, 10 Mbit/s; real-pages, Chromium +
// Apache, rust-book-print: a 1.6 MB document, then a 313 kB script): without lanefetch the browser sent the script
// on the document's idle connection and had it 0.35 s after its first byte; through the helper, on a connection
// that had carried 1–4 kB answers, it took 3.1 s (five round trips of slow start), and the page's load event waited
// for it. So one render-blocking request (a stylesheet or script: the page waits for it, and its size is not known
// when it is asked for) at a time is marked `browser_warm` while such a connection is idle and fresh: the helper
// answers it from what it holds (its prefetch flight, its cache) or declines it at once (error `browser_warm`),
// and the browser then sends it on that connection (Chromium reuses an idle socket it has used before). A small
// answer costs the same single round trip on either connection; a large one is spared the slow start. The claim
// ends when the browser's own request finishes there (the connection is idle again, warmer) or the helper answered
// it after all. Pure: the caller feeds the browser's finished requests (CDP Network events) and an injected clock.
//
// A tab whose attach raced its navigation (attach-race.ts) has no Network domain until its page loaded, so its
// document's bytes are not counted; what the browser still tells (webRequest, document-arrival.ts) is when the
// document's first and last bytes came. A body that took WARM_SPAN_RTTS of the host's round trips from its first byte
// to its last came in three flights or more, so the server's window was doubled at least twice on the way: as warm as
// WARM_BYTES says (measured 2026-11-28: without this, rust-book-print on `sat` fell to 0.79–0.92× once the attach
// raced, its 313 kB script again on a cold helper connection).

import { originOf, withoutFragment } from "./origin-of.js";
import { setNewest } from "../bounded-map.js";

/** A response at least this large (bytes on the wire) leaves its connection warm: its window has grown past four
 * times the initial window (IW10: 14.6 kB), two round trips of slow start saved for any answer that needs them. */
export const WARM_BYTES = 64 * 1024;
/** How long after its last byte an idle connection counts as warm: the server halves its window after an RTO of
 * idleness (RFC 2861; at least 200 ms over the round trip), and a page's next request comes within milliseconds of
 * the document's end when it is render-blocking. */
export const WARM_FOR_MS = 1000;
/** A body whose first and last bytes came this many of the host's round trips apart warmed its connection as much
 * as WARM_BYTES: one flight per round trip, each twice the last (two round trips: three flights; the threshold sits
 * between two flights' and three's). */
export const WARM_SPAN_RTTS = 1.5;
/** A render-blocking request asked for while such a response is still arriving waits this long at most for its end:
 * the parser asks for what the document's last bytes name before the browser reports the document finished
 * (CDP's loadingFinished came after the next script's Fetch.requestPaused in one of two loads of rust-book-print). */
export const FINISHING_WAIT_MS = 50;
/** A claim the browser never reported finishing (its request cancelled with the page) expires after this. */
export const CLAIM_FOR_MS = 30_000;
/** What the page waits for before it can render (CDP resource types). */
const RENDER_BLOCKING = new Set(["Stylesheet", "Script"]);
const MAX_ORIGINS = 64;

/** What the caller knows of the browser's own finished request (from CdpNetworkLog's BrowserTiming). */
export interface FinishedOnWire {
  /** Network.Response.protocol ("http/1.1", "h2"…); null: no response. */
  protocol: string | null;
  /** Null: not over the network (the helper's answer, a cache, a service worker). */
  remoteAddress: string | null;
  fromCache: string | null;
  /** Bytes on the wire (Network.loadingFinished.encodedDataLength); null: unknown. */
  encodedBytes: number | null;
  /** Epoch ms of its last byte; null: unknown. */
  end: number | null;
  /** Set when it failed. */
  error: string | null;
  /** How many of the host's round trips its body took from first byte to last, where the byte count is not known
   * (document-arrival.ts); absent or null: not measured. */
  spanRoundTrips?: number | null;
}

interface WarmConnection {
  /** Epoch ms the connection went idle. */
  idleSince: number;
  /** The request it was offered to, and when; null: idle. */
  claimedBy: string | null;
  claimedAt: number;
}

/** What the caller knows of the browser's own response while it arrives (CdpNetworkLog's BrowserTiming so far). */
export interface ArrivingOnWire {
  protocol: string | null;
  remoteAddress: string | null;
  fromCache: string | null;
  /** Body bytes received so far. */
  bodyBytes: number | null;
  /** Round trips of the host since its first byte, where the byte count is not known (as FinishedOnWire's). */
  spanRoundTrips?: number | null;
}

/** Has this response carried enough to leave its connection warm, by its bytes or by its round trips? */
function warmedBy(bytes: number | null, spanRoundTrips: number | null | undefined): boolean {
  return (bytes ?? 0) >= WARM_BYTES || (spanRoundTrips ?? 0) >= WARM_SPAN_RTTS;
}

/** The browser's own response over the network on HTTP/1.1 (not the helper's answer, a cache's, h2's or h3's). */
function overHttp11(t: Pick<ArrivingOnWire, "protocol" | "remoteAddress" | "fromCache">): boolean {
  return t.remoteAddress !== null && t.fromCache === null && t.protocol === "http/1.1";
}

export class BrowserWarmConnection {
  /** origin → its warm connection (least recently seen first). */
  private readonly warm = new Map<string, WarmConnection>();
  /** origin → the browser's large response still arriving there (its URL). */
  private readonly arriving = new Map<string, string>();
  private readonly finishListeners = new Set<(origin: string) => void>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** The browser's own response for `url` is arriving (after Network.responseReceived and each dataReceived). */
  progress(url: string, t: ArrivingOnWire): void {
    const origin = originOf(url);
    if (origin === "" || origin === "null") return;
    const onWire = overHttp11(t);
    // The claimed request arriving on the warm connection: nothing to wait for, the connection stays claimed.
    if (this.warm.get(origin)?.claimedBy === withoutFragment(url)) return;
    if (onWire && warmedBy(t.bodyBytes, t.spanRoundTrips)) {
      setNewest(this.arriving, origin, withoutFragment(url), MAX_ORIGINS);
    }
  }

  /** Is a response large enough to leave its connection warm still arriving on `url`'s origin (so that a
   * render-blocking request may wait FINISHING_WAIT_MS for its end)? */
  finishing(url: string, resourceType: string): boolean {
    return RENDER_BLOCKING.has(resourceType) && this.arriving.has(originOf(url));
  }

  /** Calls `listener` with the origin each time a response `progress` reported as arriving ends; returns the
   * unsubscribe. */
  onFinished(listener: (origin: string) => void): () => void {
    this.finishListeners.add(listener);
    return () => this.finishListeners.delete(listener);
  }

  /** The browser's own request for `url` finished. */
  finished(url: string, t: FinishedOnWire): void {
    const origin = originOf(url);
    if (origin === "" || origin === "null") return;
    this.record(origin, url, t);
    if (this.arriving.get(origin) === withoutFragment(url)) {
      this.arriving.delete(origin);
      for (const listener of [...this.finishListeners]) listener(origin);
    }
  }

  private record(origin: string, url: string, t: FinishedOnWire): void {
    const w = this.warm.get(origin);
    const onWire = overHttp11(t) && t.error === null;
    if (w !== undefined && w.claimedBy === withoutFragment(url)) {
      // The claimed request ended on the browser's warm connection: idle again, warmer still. Answered without the
      // network (the helper's flight or cache): the connection was not used. Failed: forget it.
      if (onWire) this.set(origin, { idleSince: t.end ?? this.now(), claimedBy: null, claimedAt: 0 });
      else if (t.error === null && t.remoteAddress === null) w.claimedBy = null;
      else this.warm.delete(origin);
      return;
    }
    if (onWire && warmedBy(t.encodedBytes, t.spanRoundTrips)) {
      this.set(origin, { idleSince: t.end ?? this.now(), claimedBy: null, claimedAt: 0 });
    }
  }

  /** Should this request go to the browser's warm connection? True claims the connection for it (one request at a
   * time per origin) until the browser's request for it finishes, or `release`. */
  claim(url: string, resourceType: string): boolean {
    if (!RENDER_BLOCKING.has(resourceType)) return false;
    const origin = originOf(url);
    const w = this.warm.get(origin);
    if (w === undefined) return false;
    const now = this.now();
    if (w.claimedBy !== null) {
      if (now - w.claimedAt <= CLAIM_FOR_MS) return false;
      this.warm.delete(origin);
      return false;
    }
    if (now - w.idleSince > WARM_FOR_MS) {
      this.warm.delete(origin);
      return false;
    }
    w.claimedBy = withoutFragment(url);
    w.claimedAt = now;
    return true;
  }

  /** The helper answered the claimed request itself (from its flight or cache): the connection is idle again. */
  release(url: string): void {
    const w = this.warm.get(originOf(url));
    if (w !== undefined && w.claimedBy === withoutFragment(url)) w.claimedBy = null;
  }

  private set(origin: string, w: WarmConnection): void {
    setNewest(this.warm, origin, w, MAX_ORIGINS);
  }
}
