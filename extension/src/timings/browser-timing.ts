// What the browser itself saw of a request (its own network stack's timing, status, headers, connection), for
// requests lanefetch passed through and as the page-side view of fulfilled ones. Browser-neutral: Chromium fills it
// from CDP Network events (cdp-network-log.ts); another browser may fill what it can and leave the rest null.

/** Points in ms since the epoch; null where the phase did not happen (reused connection, cache) or is unknown. */
export interface BrowserTiming {
  /** The browser's network request started (after lanefetch let it go). */
  start: number;
  dnsStart: number | null;
  dnsEnd: number | null;
  connectStart: number | null;
  connectEnd: number | null;
  sslStart: number | null;
  sslEnd: number | null;
  sendStart: number | null;
  sendEnd: number | null;
  headersEnd: number | null;
  /** Finished (or failed). */
  end: number | null;
  status: number | null;
  statusText: string;
  /** e.g. "http/1.1", "h2". */
  protocol: string | null;
  mimeType: string | null;
  responseHeaders: [string, string][];
  remoteAddress: string | null;
  connectionId: string | null;
  /** Bytes the browser received for it (head + body as on the wire). */
  encodedBytes: number | null;
  /** Decoded body bytes the page got. */
  bodyBytes: number | null;
  fromCache: "disk" | "memory" | "service_worker" | null;
  /** Why the browser's own load failed, if it did. */
  error: string | null;
}
