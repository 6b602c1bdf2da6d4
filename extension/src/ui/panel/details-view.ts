// The details of one request (shown for the hovered or selected row): outcome, phases, connection, cache, headers.
import type { LaneTiming } from "../../generated/protocol.js";
import { phaseTotals, PHASE_ORDER } from "../../timings/phases.js";
import { LEFT_TO_BROWSER } from "../../timings/left-to-browser.js";
import { formatBytes } from "../format.js";
import type { WaterfallRow } from "./waterfall-model.js";
import { PHASE_LABELS } from "./waterfall-view.js";

function el(tag: string, text?: string, className = ""): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function list(pairs: [string, string | number | null | undefined][]): HTMLElement {
  const dl = el("dl");
  for (const [k, v] of pairs) {
    if (v === null || v === undefined || v === "") continue;
    dl.append(el("dt", k), el("dd", String(v)));
  }
  return dl;
}

function headers(title: string, pairs: readonly (readonly [string, string])[]): HTMLElement {
  const d = document.createElement("details");
  d.append(el("summary", `${title} (${pairs.length})`));
  const dl = el("dl");
  for (const [n, v] of pairs) dl.append(el("dt", n), el("dd", v));
  d.append(dl);
  return d;
}

const ms = (v: number): string => `${v.toFixed(1)} ms`;

function mimeTypeOf(r: WaterfallRow["record"]): string | null {
  const fields = r.browser?.responseHeaders.length ? r.browser.responseHeaders : (r.timing?.response?.headers ?? []);
  const type = fields.find(([n]) => n.toLowerCase() === "content-type")?.[1] ?? r.browser?.mimeType ?? null;
  return type === null ? null : (type.split(";")[0]?.trim() ?? null);
}

/** A split response: what each lane (network interface) carried, at what rate, and when. */
function lanesTable(lanes: readonly LaneTiming[], pageStart: number): HTMLElement {
  const wrap = el("div");
  wrap.append(el("h3", `Lanes (split over ${lanes.length} interface${lanes.length === 1 ? "" : "s"})`));
  const table = el("table", undefined, "lanes");
  const head = el("tr");
  for (const h of ["interface", "bytes", "ranges", "RTT", "rate", "first → last byte", "state"]) head.append(el("th", h));
  table.append(head);
  for (const lane of lanes) {
    const tr = el("tr");
    const when = lane.first_byte !== null && lane.last_byte !== null
      ? `${ms(lane.first_byte - pageStart)} → ${ms(lane.last_byte - pageStart)}` : "-";
    tr.append(
      el("td", lane.interface ?? "default route"),
      el("td", formatBytes(lane.bytes)),
      el("td", String(lane.requests)),
      el("td", lane.rtt_ms !== null ? ms(lane.rtt_ms) : "-"),
      el("td", lane.throughput_bps !== null ? `${(lane.throughput_bps / 1e6).toFixed(2)} Mbit/s` : "-"),
      el("td", when),
      el("td", lane.down ? `down: ${lane.down}` : "ok"),
    );
    table.append(tr);
  }
  wrap.append(table);
  return wrap;
}

export function renderDetails(host: HTMLElement, row: WaterfallRow | null, pageStart: number): void {
  if (!row) {
    host.replaceChildren(el("p", "Hover or select a request (arrow keys in the list) to see its details.", "hint"));
    return;
  }
  const r = row.record;
  const t = r.timing;
  const conn = t?.connection ?? null;
  const b = r.browser;
  const outcome = r.outcome === "fulfilled" ? "accelerated: fetched by the lanefetch helper"
    : r.outcome === "passed" ? `${LEFT_TO_BROWSER}: ${row.passed ?? "no reason recorded"}` : "pending";
  const parts: HTMLElement[] = [el("h2", r.url, "url")];
  parts.push(list([
    ["Outcome", outcome],
    ["Detail", r.detail],
    ["Method", r.method],
    ["Status", r.status ?? b?.status ?? (b?.error ? `failed: ${b.error}` : null)],
    ["Type", r.resourceType.toLowerCase()],
    ["MIME type", mimeTypeOf(r)],
    ["Priority", r.priority],
    ["Body", r.outcome === "fulfilled" ? formatBytes(r.bodyBytes) : b?.bodyBytes != null ? formatBytes(b.bodyBytes) : null],
    ["On the wire", t?.wire_bytes != null ? formatBytes(t.wire_bytes) : b?.encodedBytes != null ? formatBytes(b.encodedBytes) : null],
  ]));

  parts.push(el("h3", `Timing (${row.timeline.source === "none" ? "no phase data" : `${row.timeline.source}'s clock`})`));
  const totals = phaseTotals(row.timeline);
  const table = el("table");
  const started = el("tr");
  started.append(el("td", "started at"), el("td", ms(row.timeline.start - pageStart)));
  table.append(started);
  for (const phase of PHASE_ORDER) {
    if (totals[phase] <= 0) continue;
    const tr = el("tr");
    const swatch = el("i", undefined, `p-${phase}`);
    swatch.style.cssText = "display:inline-block;width:9px;height:9px;margin-right:4px";
    const name = el("td");
    name.append(swatch, PHASE_LABELS[phase]);
    tr.append(name, el("td", ms(totals[phase])));
    table.append(tr);
  }
  const total = el("tr");
  total.append(el("td", "total"), el("td", ms(row.timeline.end - row.timeline.start)));
  table.append(total);
  parts.push(table);

  if (t) {
    parts.push(el("h3", "lanefetch"));
    parts.push(list([
      ["Connection", conn ? `#${conn.id}${conn.reused ? " (reused)" : " (new)"}` : "none"],
      ["Interface", conn ? (conn.interface ?? "default route") : null],
      ["Local → remote", conn ? `${conn.local_address ?? "?"} → ${conn.remote_address ?? "?"}` : null],
      ["Pipeline", conn ? `position ${conn.pipeline_position}, ${conn.pipeline_depth} in flight when sent` : null],
      ["Helper cache", t.cache === "prefetch" ? "prefetch (fetched ahead by the page's flight; this request matched it)" : (t.cache ?? "none")],
      ["Retries", t.retries],
      ["Batch", r.batchId],
    ]));
  }
  if (t?.lanes?.length) parts.push(lanesTable(t.lanes, pageStart));
  if (b) {
    parts.push(el("h3", "Browser"));
    parts.push(list([
      ["Connection", b.connectionId],
      ["Remote", b.remoteAddress],
      ["Protocol", b.protocol],
      ["From cache", b.fromCache],
      ["Error", b.error],
    ]));
  }
  parts.push(headers("Request headers", r.requestHeaders));
  if (b && b.responseHeaders.length) parts.push(headers("Response headers (as the page got them)", b.responseHeaders));
  else if (t?.response) parts.push(headers("Response headers (as the helper wrote them to the browser)", t.response.headers));
  host.replaceChildren(...parts);
}
