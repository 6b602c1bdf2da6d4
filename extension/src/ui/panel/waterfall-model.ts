// What the waterfall shows, without the DOM: one row per request with its phases, grouped by connection or by
// network interface (or not at all), each group with a colour. Pure.
import { timelineOf, type RequestTimeline } from "../../timings/phases.js";
import { reasonInPlainWords } from "../../timings/left-to-browser.js";
import { BROWSER_ROUTE, DEFAULT_ROUTE } from "../../timings/page-summary.js";
import type { PageLoadData, RequestRecord } from "../../timings/timing-store.js";

export type GroupBy = "connection" | "interface" | "none";

export interface WaterfallRow {
  record: RequestRecord;
  timeline: RequestTimeline;
  /** Short name: path and query (the host too when it is not the page's). */
  name: string;
  connection: string;
  /** "position/depth" on a helper connection, else "". */
  pipeline: string;
  route: string;
  /** Why it was left to the browser (in plain words), for requests lanefetch did not take. */
  passed: string | null;
  /** Colour of the row's connection (or interface) group: an HSL hue. */
  hue: number;
}

export interface WaterfallGroup {
  key: string;
  title: string;
  hue: number;
  rows: WaterfallRow[];
}

export interface Waterfall {
  groups: WaterfallGroup[];
  rows: WaterfallRow[];
  /** The time axis: from the page load's start to the last end (ms since the epoch). */
  from: number;
  to: number;
}

function shortName(url: string, pageUrl: string): string {
  try {
    const u = new URL(url);
    const page = new URL(pageUrl);
    const path = `${u.pathname}${u.search}` || "/";
    return u.host === page.host ? path : `${u.host}${path}`;
  } catch {
    return url;
  }
}

/** Where a response fetched ahead by the page's flight (docs/prefetch.md) is listed: it came over the flight's
 *  connections before the browser asked, and was handed over whole. */
export const PREFETCH_FLIGHT = "page's prefetch flight";

function connectionKey(r: RequestRecord): string {
  const conn = r.timing?.connection;
  if (conn) return `lanefetch connection ${conn.id}`;
  if (r.timing?.cache === "hit") return "helper cache";
  if (r.timing?.cache === "prefetch") return PREFETCH_FLIGHT;
  if (r.browser?.fromCache) return `browser ${r.browser.fromCache} cache`;
  if (r.browser?.connectionId) return `browser connection ${r.browser.connectionId}`;
  return r.outcome === "pending" ? "pending" : "browser";
}

function routeOf(r: RequestRecord): string {
  if (r.timing?.connection) return r.timing.connection.interface ?? DEFAULT_ROUTE;
  if (r.timing?.cache === "hit") return "helper cache";
  if (r.timing?.cache === "prefetch") return PREFETCH_FLIGHT;
  return r.outcome === "pending" ? "pending" : BROWSER_ROUTE;
}

function groupTitle(key: string, rows: WaterfallRow[], by: GroupBy): string {
  const first = rows[0]?.record;
  const conn = first?.timing?.connection;
  const n = `${rows.length} request${rows.length === 1 ? "" : "s"}`;
  if (by === "connection" && conn) {
    const where = [conn.interface ?? DEFAULT_ROUTE, conn.remote_address].filter(Boolean).join(" → ");
    return `${key} · ${where} · ${n}`;
  }
  return `${key} · ${n}`;
}

export function buildWaterfall(data: PageLoadData, by: GroupBy): Waterfall {
  const rows: WaterfallRow[] = data.records.map((record) => {
    const conn = record.timing?.connection;
    return {
      record,
      timeline: timelineOf(record),
      name: shortName(record.url, data.load.url),
      connection: connectionKey(record),
      pipeline: conn ? `${conn.pipeline_position}/${conn.pipeline_depth}` : "",
      route: routeOf(record),
      passed: record.outcome === "passed" ? reasonInPlainWords(record.reason) : null,
      hue: 0,
    };
  });
  rows.sort((a, b) => a.timeline.start - b.timeline.start || a.record.id.localeCompare(b.record.id, "en", { numeric: true }));
  const keyOf = (row: WaterfallRow): string => (by === "interface" ? row.route : by === "connection" ? row.connection : "");
  const byKey = new Map<string, WaterfallRow[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const list = byKey.get(key) ?? [];
    list.push(row);
    byKey.set(key, list);
  }
  // Hues in order of first appearance, spread around the circle (golden angle) so neighbours differ.
  const hues = new Map<string, number>();
  for (const row of rows) {
    const colourKey = by === "interface" ? row.route : row.connection;
    if (!hues.has(colourKey)) hues.set(colourKey, Math.round((hues.size * 137.508) % 360));
    row.hue = hues.get(colourKey) ?? 0;
  }
  const groups = [...byKey].map(([key, list]) => ({ key, title: groupTitle(key, list, by), hue: list[0]?.hue ?? 0, rows: list }));
  const ordered = groups.flatMap((g) => g.rows);
  const from = Math.min(data.load.startedAt, ...rows.map((r) => r.timeline.start));
  const to = Math.max(from + 1, data.load.loadedAt ?? from, ...rows.map((r) => r.timeline.end));
  return { groups, rows: ordered, from, to };
}
