// One request's time line as consecutive phases (where each happened, ms since the epoch), from the helper's timing
// points when the helper fetched it, else from the browser's own timing. The waterfall draws these segments; the HAR
// builder sums them into HAR timings. Pure.
import type { RequestRecord } from "./timing-store.js";

/**
 * blocked: waiting (lanefetch batching, the helper's queue, a pipeline slot, the browser's own queue);
 * dns, connect (TCP), ssl (TLS), send, wait (request sent → first byte), receive (first → last byte),
 * deliver: the helper's last byte → the browser has the response (native messaging and fulfil).
 */
export type Phase = "blocked" | "dns" | "connect" | "ssl" | "send" | "wait" | "receive" | "deliver";

export const PHASE_ORDER: readonly Phase[] = ["blocked", "dns", "connect", "ssl", "send", "wait", "receive", "deliver"];

export interface Segment {
  phase: Phase;
  from: number;
  to: number;
}

export interface RequestTimeline {
  start: number;
  end: number;
  /** Consecutive, non-overlapping, in time order; zero-length phases left out. */
  segments: Segment[];
  /** Whose clock points these are. */
  source: "helper" | "browser" | "none";
}

type Point = [Phase, number | null];

/** Walks the points in order: each known point ends the phase named with it, starting where the last one ended. */
function walk(start: number, points: Point[], end: number): Segment[] {
  const segments: Segment[] = [];
  let at = start;
  for (const [phase, point] of points) {
    if (point === null) continue;
    const to = Math.min(Math.max(point, at), Math.max(end, at));
    if (to > at) segments.push({ phase, from: at, to });
    at = to;
  }
  return segments;
}

export function timelineOf(record: RequestRecord): RequestTimeline {
  const t = record.timing?.timing;
  if (t) {
    const start = record.pausedAt;
    const end = Math.max(start, record.answeredAt ?? t.last_byte ?? t.first_byte ?? t.queued);
    const points: Point[] = [
      ["blocked", t.dns_start],
      ["dns", t.dns_end],
      ["blocked", t.connect_start],
      ["connect", t.connect_end],
      ["ssl", t.tls_end],
      ["blocked", t.sent],
      // No request sent: served from the helper's cache.
      [t.sent !== null ? "wait" : "blocked", t.first_byte],
      ["receive", t.last_byte],
      ["deliver", end],
    ];
    return { start, end, segments: merge(walk(start, points, end)), source: "helper" };
  }
  const b = record.browser;
  if (b && b.end !== null) {
    const start = Math.min(record.pausedAt, b.start);
    const end = Math.max(b.end, record.answeredAt ?? b.end);
    const points: Point[] = [
      ["blocked", b.dnsStart],
      ["dns", b.dnsEnd],
      ["blocked", b.connectStart],
      // CDP's connect includes TLS: TCP up to sslStart, then TLS.
      ["connect", b.sslStart ?? b.connectEnd],
      ["ssl", b.sslEnd],
      ["connect", b.connectEnd],
      ["blocked", b.sendStart],
      ["send", b.sendEnd],
      ["wait", b.headersEnd],
      ["receive", end],
    ];
    return { start, end, segments: merge(walk(start, points, end)), source: "browser" };
  }
  const end = Math.max(record.pausedAt, record.answeredAt ?? record.pausedAt);
  return { start: record.pausedAt, end, segments: end > record.pausedAt ? [{ phase: "blocked", from: record.pausedAt, to: end }] : [], source: "none" };
}

/** Adjacent segments of the same phase become one. */
function merge(segments: Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const last = out[out.length - 1];
    if (last && last.phase === s.phase && last.to === s.from) last.to = s.to;
    else out.push({ ...s });
  }
  return out;
}

/** Total time per phase (ms). */
export function phaseTotals(timeline: RequestTimeline): Record<Phase, number> {
  const totals: Record<Phase, number> = { blocked: 0, dns: 0, connect: 0, ssl: 0, send: 0, wait: 0, receive: 0, deliver: 0 };
  for (const s of timeline.segments) totals[s.phase] += s.to - s.from;
  return totals;
}
