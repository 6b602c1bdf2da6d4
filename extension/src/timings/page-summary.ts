// The numbers above the waterfall (and in the copied text summary) for one page load, with an estimate of how long the
// accelerated requests would have taken without pipelining. The estimate's model is stated in NO_PIPELINING_MODEL
// and shown in the panel. Pure.
import type { PassReason } from "../intercept/pass-reason.js";
import { LEFT_TO_BROWSER, reasonInPlainWords } from "./left-to-browser.js";
import { timelineOf } from "./phases.js";
import type { PageFlight, PageLoadData, RequestRecord } from "./timing-store.js";

export const BROWSER_CONNECTIONS_PER_ORIGIN = 6;

export const NO_PIPELINING_MODEL =
  `Without pipelining (estimate): the browser's own HTTP/1.1 rule, at most ${BROWSER_CONNECTIONS_PER_ORIGIN} connections ` +
  "per origin and one request at a time on each. Every accelerated request is issued when lanefetch saw it, on a free " +
  `connection of its origin, else on a new one while there are fewer than ${BROWSER_CONNECTIONS_PER_ORIGIN} (costing the ` +
  "origin's measured connection setup: DNS + TCP + TLS, median), else when the first one frees up; it then takes the " +
  "origin's fastest measured request-to-first-byte time (one round trip plus server time) plus its own measured body " +
  "transfer time. Compared with the measured span from the first accelerated request seen to the last one delivered.";

/** Bytes the helper's interfaces carried, and what the browser fetched itself. */
export const DEFAULT_ROUTE = "default route";
export const BROWSER_ROUTE = "browser";

export interface PageSummary {
  url: string;
  title: string;
  startedAt: number;
  /** Top-level load event − navigation start; null while loading. */
  pageLoadMs: number | null;
  /** Navigation start → the last request finished. */
  lastResponseMs: number;
  requests: number;
  accelerated: number;
  passed: number;
  pending: number;
  passedByReason: Partial<Record<PassReason, number>>;
  fromHelperCache: number;
  revalidated: number;
  /** Requests answered from the page's prefetch flight (timing cache "prefetch"). */
  fromFlight: number;
  /** The helper's report of the flight (sent, answered, bytes never asked for) once the load ended; null before. */
  flight: PageFlight | null;
  retries: number;
  bytesByInterface: { name: string; bytes: number }[];
  connections: number;
  browserConnections: number;
  maxConcurrentConnections: number;
  maxPipelineDepth: number;
  /** Requests sent while another was unanswered on their connection (pipeline depth above 1); a request later on a
   *  kept-alive connection but sent after the one before was answered is not pipelined. */
  pipelined: number;
  /** Measured: first accelerated request seen → last delivered (ms); 0 without accelerated requests. */
  acceleratedSpanMs: number;
  /** The same span estimated without pipelining (NO_PIPELINING_MODEL); null without complete helper timings. */
  withoutPipeliningMs: number | null;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? 0 : sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

interface Modelled {
  origin: string;
  seenAt: number;
  sent: number;
  firstByte: number;
  lastByte: number;
  setup: number | null;
}

function modelled(r: RequestRecord): Modelled | null {
  const t = r.timing?.timing;
  if (r.outcome !== "fulfilled" || !t || t.sent === null || t.first_byte === null || t.last_byte === null) return null;
  const setupStart = t.dns_start ?? t.connect_start;
  const setupEnd = t.tls_end ?? t.connect_end;
  const opened = r.timing?.connection?.reused === false && setupStart !== null && setupEnd !== null;
  return {
    origin: originOf(r.url), seenAt: r.pausedAt, sent: t.sent, firstByte: t.first_byte, lastByte: t.last_byte,
    setup: opened ? setupEnd - setupStart : null,
  };
}

/** End time of the last request under NO_PIPELINING_MODEL, or null if there is nothing to model. */
export function estimateWithoutPipelining(records: readonly RequestRecord[]): number | null {
  const byOrigin = new Map<string, Modelled[]>();
  for (const r of records) {
    const m = modelled(r);
    if (!m) continue;
    const list = byOrigin.get(m.origin) ?? [];
    list.push(m);
    byOrigin.set(m.origin, list);
  }
  if (byOrigin.size === 0) return null;
  let end = -Infinity;
  for (const list of byOrigin.values()) {
    const roundTrip = Math.max(0, Math.min(...list.map((m) => m.firstByte - m.sent)));
    const setup = median(list.flatMap((m) => (m.setup === null ? [] : [m.setup])));
    const freeAt: number[] = [];
    for (const m of [...list].sort((a, b) => a.seenAt - b.seenAt)) {
      const free = freeAt.findIndex((at) => at <= m.seenAt);
      let slot: number;
      let start: number;
      if (free !== -1) {
        slot = free;
        start = m.seenAt;
      } else if (freeAt.length < BROWSER_CONNECTIONS_PER_ORIGIN) {
        slot = freeAt.push(0) - 1;
        start = m.seenAt + setup;
      } else {
        const earliest = Math.min(...freeAt);
        slot = freeAt.indexOf(earliest);
        start = earliest;
      }
      const finish = start + roundTrip + Math.max(0, m.lastByte - m.firstByte);
      freeAt[slot] = finish;
      end = Math.max(end, finish);
    }
  }
  return end;
}

/** Most helper connections open at once: each connection spans its first activity to its last byte. */
function maxConcurrent(records: readonly RequestRecord[]): number {
  const spans = new Map<number, [number, number]>();
  for (const r of records) {
    const t = r.timing?.timing;
    const id = r.timing?.connection?.id;
    if (!t || id === undefined) continue;
    const from = t.dns_start ?? t.connect_start ?? t.sent ?? t.first_byte;
    const to = t.last_byte ?? t.first_byte ?? from;
    if (from === null || to === null) continue;
    const span = spans.get(id);
    spans.set(id, span ? [Math.min(span[0], from), Math.max(span[1], to)] : [from, to]);
  }
  const edges = [...spans.values()].flatMap(([a, b]): [number, number][] => [[a, 1], [b, -1]]);
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let most = 0;
  for (const [, change] of edges) {
    open += change;
    most = Math.max(most, open);
  }
  return most;
}

export function summarize(data: PageLoadData): PageSummary {
  const { load, records } = data;
  const passedByReason: Partial<Record<PassReason, number>> = {};
  const bytes = new Map<string, number>();
  const helperConnections = new Set<number>();
  const browserConnections = new Set<string>();
  let accelerated = 0;
  let passed = 0;
  let fromHelperCache = 0;
  let revalidated = 0;
  let fromFlight = 0;
  let retries = 0;
  let maxPipelineDepth = 0;
  let pipelined = 0;
  let lastEnd = load.startedAt;
  let firstSeen = Infinity;
  let lastDelivered = -Infinity;
  for (const r of records) {
    lastEnd = Math.max(lastEnd, timelineOf(r).end);
    const helper = r.timing;
    const conn = helper?.connection ?? null;
    if (r.outcome === "fulfilled") {
      accelerated += 1;
      firstSeen = Math.min(firstSeen, r.pausedAt);
      lastDelivered = Math.max(lastDelivered, r.answeredAt ?? r.pausedAt);
      const route = conn?.interface ?? DEFAULT_ROUTE;
      bytes.set(route, (bytes.get(route) ?? 0) + (helper?.wire_bytes ?? r.bodyBytes));
    } else if (r.outcome === "passed") {
      passed += 1;
      if (r.reason) passedByReason[r.reason] = (passedByReason[r.reason] ?? 0) + 1;
      const got = r.browser?.encodedBytes ?? 0;
      if (got > 0) bytes.set(BROWSER_ROUTE, (bytes.get(BROWSER_ROUTE) ?? 0) + got);
      if (r.browser?.connectionId && r.browser.fromCache === null) browserConnections.add(r.browser.connectionId);
    }
    if (helper) {
      retries += helper.retries;
      if (helper.cache === "hit") fromHelperCache += 1;
      if (helper.cache === "revalidated") revalidated += 1;
      if (helper.cache === "prefetch") fromFlight += 1;
    }
    if (conn) {
      helperConnections.add(conn.id);
      maxPipelineDepth = Math.max(maxPipelineDepth, conn.pipeline_depth);
      if (conn.pipeline_depth > 1) pipelined += 1; // sent while another was unanswered; a later position alone is keep-alive
    }
  }
  const modelledEnd = estimateWithoutPipelining(records);
  const span = accelerated > 0 ? Math.max(0, lastDelivered - firstSeen) : 0;
  return {
    url: load.url,
    title: load.title,
    startedAt: load.startedAt,
    pageLoadMs: load.loadedAt === null ? null : Math.max(0, load.loadedAt - load.startedAt),
    lastResponseMs: Math.max(0, lastEnd - load.startedAt),
    requests: records.length,
    accelerated,
    passed,
    pending: records.length - accelerated - passed,
    passedByReason,
    fromHelperCache,
    revalidated,
    fromFlight,
    flight: load.flight,
    retries,
    bytesByInterface: [...bytes].map(([name, n]) => ({ name, bytes: n })).sort((a, b) => b.bytes - a.bytes),
    connections: helperConnections.size,
    browserConnections: browserConnections.size,
    maxConcurrentConnections: maxConcurrent(records),
    maxPipelineDepth,
    pipelined,
    acceleratedSpanMs: span,
    withoutPipeliningMs: modelledEnd === null || accelerated === 0 ? null : Math.max(0, modelledEnd - firstSeen),
  };
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

/** The prefetch flight in a line: requests answered from it and, once the helper reported the ended load, what it
 *  sent and the bytes no request asked for. */
export function flightWords(s: Pick<PageSummary, "fromFlight" | "flight">): string {
  const answered = `${s.fromFlight} answered`;
  if (s.flight === null) return s.fromFlight > 0 ? `${answered} (report when the page's load ends)` : "none";
  return `${answered}; ${s.flight.sent} prefetched, ${kib(s.flight.wastedBytes)} never asked for`;
}

/** Plain text for bug reports (the panel's "Copy summary"). */
export function summaryText(s: PageSummary, version: string): string {
  const reasons = Object.entries(s.passedByReason).map(([r, n]) => `    ${n} because ${reasonInPlainWords(r)} (${r})`);
  const lines = [
    `lanefetch ${version} — ${s.url}`,
    `started: ${new Date(s.startedAt).toISOString()}`,
    `page load (load event): ${s.pageLoadMs === null ? "not finished" : ms(s.pageLoadMs)}; last response at ${ms(s.lastResponseMs)}`,
    `requests: ${s.requests} — accelerated ${s.accelerated}, ${LEFT_TO_BROWSER} ${s.passed}, from helper cache ${s.fromHelperCache}` +
      ` (revalidated ${s.revalidated})${s.pending ? `, pending ${s.pending}` : ""}; retries ${s.retries}`,
    ...(reasons.length ? [`  ${LEFT_TO_BROWSER}:`, ...reasons] : []),
    `from the page's prefetch flight: ${flightWords(s)}`,
    `bytes: ${s.bytesByInterface.map((b) => `${b.name} ${kib(b.bytes)}`).join(", ") || "none"}`,
    `helper connections: ${s.connections} (max ${s.maxConcurrentConnections} at once), pipelined requests ${s.pipelined},` +
      ` max pipeline depth ${s.maxPipelineDepth}; browser connections: ${s.browserConnections}`,
    `accelerated requests: ${ms(s.acceleratedSpanMs)} measured, ` +
      `${s.withoutPipeliningMs === null ? "no estimate" : `~${ms(s.withoutPipeliningMs)}`} estimated without pipelining`,
    `model: ${NO_PIPELINING_MODEL}`,
  ];
  return lines.join("\n") + "\n";
}
