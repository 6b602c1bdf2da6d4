// HAR 1.2 from recorded page loads. Pure (no browser API): the extension's pages call it for "Export HAR", and a
// Node script can import it and feed it page loads read from the extension (`{type: "lanefetch/page-load", id}`).
// Timings follow HAR: blocked, dns, connect (TCP + TLS), ssl (inside connect), send, wait, receive; `time` is their sum.
// Chrome's fields `_connectionId`, `_resourceType`, `_priority` let HAR viewers draw connections; `_lanefetch` holds
// what lanefetch did (interface, pipeline position, cache, retries, why a request was left to the browser).
import type { LaneTiming } from "../generated/protocol.js";
import { reasonInPlainWords } from "./left-to-browser.js";
import { phaseTotals, timelineOf } from "./phases.js";
import type { PageLoadData, RequestRecord } from "./timing-store.js";

export interface HarHeader { name: string; value: string }

export interface HarTimings {
  blocked: number;
  dns: number;
  connect: number;
  ssl: number;
  send: number;
  wait: number;
  receive: number;
}

export interface LanefetchEntryFields {
  /** "accelerated": the helper fetched it and the browser got its response; "passed": left to the browser. */
  outcome: "accelerated" | "passed" | "pending";
  passReason: string | null;
  passReasonText: string | null;
  detail: string | null;
  /** Where the timings come from: the helper's clock points, the browser's own, or only lanefetch's pause/answer. */
  timingSource: "helper" | "browser" | "none";
  connectionId: number | null;
  interface: string | null;
  localAddress: string | null;
  remoteAddress: string | null;
  reusedConnection: boolean | null;
  pipelinePosition: number | null;
  pipelineDepth: number | null;
  cache: "none" | "hit" | "revalidated" | "prefetch" | null;
  retries: number | null;
  wireBytes: number | null;
  batchId: string | null;
  /** Time from the helper's last byte until the browser had the response (inside receive). */
  deliverMs: number;
  /** A split response: what each lane carried (the helper's timing message, as is). */
  lanes: LaneTiming[] | null;
}

export interface HarEntry {
  pageref: string;
  startedDateTime: string;
  time: number;
  request: {
    method: string; url: string; httpVersion: string; cookies: []; headers: HarHeader[];
    queryString: HarHeader[]; headersSize: number; bodySize: number;
  };
  response: {
    status: number; statusText: string; httpVersion: string; cookies: []; headers: HarHeader[];
    content: { size: number; mimeType: string }; redirectURL: string; headersSize: number; bodySize: number;
    _transferSize: number;
  };
  cache: Record<string, never>;
  timings: HarTimings;
  serverIPAddress?: string;
  connection?: string;
  _connectionId?: string;
  _resourceType: string;
  _priority: string;
  _lanefetch: LanefetchEntryFields;
}

export interface HarPage {
  startedDateTime: string;
  id: string;
  title: string;
  pageTimings: { onContentLoad: number; onLoad: number };
}

export interface Har {
  log: {
    version: "1.2";
    creator: { name: string; version: string };
    browser?: { name: string; version: string };
    pages: HarPage[];
    entries: HarEntry[];
  };
}

export interface HarOptions {
  /** lanefetch's version, for log.creator. */
  version: string;
  browser?: { name: string; version: string };
  /** Keep Cookie / Set-Cookie / Authorization values (off by default: HAR files get shared). */
  sensitive?: boolean;
}

const SENSITIVE = new Set(["cookie", "set-cookie", "authorization", "proxy-authorization"]);

function headers(pairs: readonly (readonly [string, string])[], sensitive: boolean): HarHeader[] {
  return pairs.filter(([n]) => sensitive || !SENSITIVE.has(n.toLowerCase())).map(([name, value]) => ({ name, value }));
}

function headerOf(pairs: readonly (readonly [string, string])[], name: string): string | undefined {
  return pairs.find(([n]) => n.toLowerCase() === name)?.[1];
}

function queryString(url: string): HarHeader[] {
  try {
    return [...new URL(url).searchParams].map(([name, value]) => ({ name, value }));
  } catch {
    return [];
  }
}

/** "1.2.3.4:80" / "[::1]:443" → the bare address HAR wants in serverIPAddress. */
export function bareAddress(address: string | null | undefined): string | undefined {
  if (!address) return undefined;
  const v6 = /^\[([0-9a-fA-F:.]+)\](?::\d+)?$/.exec(address);
  if (v6) return v6[1];
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?$/.exec(address);
  return v4 ? v4[1] : undefined;
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;

function httpVersionOf(record: RequestRecord): string {
  const protocol = record.browser?.protocol;
  if (!record.timing && protocol) {
    // ALPN names ("h2", "h3", "h3-29"): HAR's "HTTP/x.y"; "http/1.1" as is, upper case.
    const alpn = /^h([23])(?:-\w+)?$/i.exec(protocol);
    return alpn ? `HTTP/${alpn[1]}.0` : protocol.toUpperCase();
  }
  // The helper's connection says which protocol carried it (absent from helpers before HTTP/2: HTTP/1.1).
  return record.timing?.connection?.protocol === "h2" ? "HTTP/2.0" : "HTTP/1.1";
}

export function harEntry(record: RequestRecord, sensitive = false): HarEntry {
  const timeline = timelineOf(record);
  const totals = phaseTotals(timeline);
  const timings: HarTimings = {
    blocked: round(totals.blocked),
    dns: totals.dns > 0 ? round(totals.dns) : -1,
    connect: totals.connect + totals.ssl > 0 ? round(totals.connect + totals.ssl) : -1,
    ssl: totals.ssl > 0 ? round(totals.ssl) : -1,
    send: round(totals.send),
    wait: round(totals.wait),
    receive: round(totals.receive + totals.deliver),
  };
  // HAR: time is the sum of the timings except ssl (inside connect) and the -1s.
  const time = round(timings.blocked + Math.max(timings.dns, 0) + Math.max(timings.connect, 0) + timings.send + timings.wait + timings.receive);
  const b = record.browser;
  const helper = record.timing;
  const conn = helper?.connection ?? null;
  // The page's view of the head when the browser showed it (Chromium); else what the helper wrote to the browser
  // (Firefox proxy mode, whose webRequest shows the extension no head).
  const responseHeaders = b?.responseHeaders.length ? b.responseHeaders : (helper?.response?.headers ?? []);
  const status = record.status ?? b?.status ?? 0;
  const connectionId = conn ? `lanefetch-${conn.id}` : (b?.connectionId ?? undefined);
  const server = bareAddress(conn?.remote_address ?? b?.remoteAddress);
  const transfer = helper?.wire_bytes ?? b?.encodedBytes ?? -1;
  const entry: HarEntry = {
    pageref: record.pageLoadId,
    startedDateTime: new Date(timeline.start).toISOString(),
    time,
    request: {
      method: record.method, url: record.url, httpVersion: httpVersionOf(record), cookies: [], headers: headers(record.requestHeaders, sensitive),
      queryString: queryString(record.url), headersSize: -1, bodySize: record.method === "GET" || record.method === "HEAD" ? 0 : -1,
    },
    response: {
      status, statusText: b?.statusText ?? "", httpVersion: httpVersionOf(record), cookies: [], headers: headers(responseHeaders, sensitive),
      content: {
        size: record.outcome === "fulfilled" ? record.bodyBytes : (b?.bodyBytes ?? 0),
        mimeType: headerOf(responseHeaders, "content-type") ?? b?.mimeType ?? "x-unknown",
      },
      redirectURL: headerOf(responseHeaders, "location") ?? "", headersSize: -1,
      // The body as it crossed to the browser (coded); content.size is it decoded.
      bodySize: helper?.response?.body_bytes ?? -1, _transferSize: transfer,
    },
    cache: {},
    timings,
    _resourceType: record.resourceType.toLowerCase(),
    _priority: record.priority,
    _lanefetch: {
      outcome: record.outcome === "fulfilled" ? "accelerated" : record.outcome,
      passReason: record.reason,
      passReasonText: record.reason ? reasonInPlainWords(record.reason) : null,
      detail: record.detail || null,
      timingSource: timeline.source,
      connectionId: conn?.id ?? null,
      interface: conn?.interface ?? null,
      localAddress: conn?.local_address ?? null,
      remoteAddress: conn?.remote_address ?? b?.remoteAddress ?? null,
      reusedConnection: conn?.reused ?? null,
      pipelinePosition: conn?.pipeline_position ?? null,
      pipelineDepth: conn?.pipeline_depth ?? null,
      cache: helper?.cache ?? (helper ? "none" : null),
      retries: helper?.retries ?? null,
      wireBytes: helper?.wire_bytes ?? null,
      batchId: record.batchId,
      deliverMs: round(totals.deliver),
      lanes: helper?.lanes ?? null,
    },
  };
  if (server !== undefined) entry.serverIPAddress = server;
  if (connectionId !== undefined) {
    entry.connection = connectionId;
    entry._connectionId = connectionId;
  }
  return entry;
}

function harPage(data: PageLoadData): HarPage {
  const { load } = data;
  const since = (at: number | null): number => (at === null ? -1 : round(Math.max(0, at - load.startedAt)));
  return {
    startedDateTime: new Date(load.startedAt).toISOString(),
    id: load.id,
    title: load.title || load.url,
    pageTimings: { onContentLoad: since(load.contentLoadedAt), onLoad: since(load.loadedAt) },
  };
}

/** One HAR log of the given page loads; entries in start order. */
export function buildHar(loads: readonly PageLoadData[], options: HarOptions): Har {
  const entries = loads
    .flatMap((l) => l.records.map((r) => harEntry(r, options.sensitive === true)))
    .sort((a, b) => a.startedDateTime.localeCompare(b.startedDateTime));
  const log: Har["log"] = { version: "1.2", creator: { name: "lanefetch", version: options.version }, pages: loads.map(harPage), entries };
  if (options.browser) log.browser = options.browser;
  return { log };
}
