// The waterfall's DOM: a header with the time axis, group rows, and one row per request with its phase segments.
// Plain DOM built once per change (500 requests ≈ 5,000 elements); text always via textContent.
import { PHASE_ORDER, type Phase } from "../../timings/phases.js";
import { LEFT_TO_BROWSER, reasonShort } from "../../timings/left-to-browser.js";
import type { PageLoad } from "../../timings/timing-store.js";
import { formatBytes, formatMs } from "../format.js";
import type { Waterfall, WaterfallRow } from "./waterfall-model.js";

export const PHASE_LABELS: Record<Phase, string> = {
  blocked: "queued / blocked", dns: "DNS", connect: "connect", ssl: "TLS", send: "sending", wait: "waiting (first byte)",
  receive: "receiving", deliver: "delivering to the browser",
};

function el(tag: string, className: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A tick step of 1, 2 or 5 × 10^n ms giving about eight ticks over the span. */
function tickStep(span: number): number {
  const raw = span / 8;
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? power * 10;
}

/** The page's own moments, drawn as dashed lines across the waterfall. */
export const MARKS = [
  { cls: "dcl", label: "DOMContentLoaded (page parsed)" },
  { cls: "load", label: "load (page and its images loaded)" },
] as const;

export function legend(): HTMLElement[] {
  const phases = PHASE_ORDER.map((phase) => {
    const item = el("span", "");
    item.append(el("i", `p-${phase}`), PHASE_LABELS[phase]);
    return item;
  });
  const marks = MARKS.map(({ cls, label }) => {
    const item = el("span", "");
    item.append(el("i", `line ${cls}`), label);
    return item;
  });
  return [...phases, ...marks];
}

function sizeOf(row: WaterfallRow): string {
  const r = row.record;
  if (r.outcome === "fulfilled") return formatBytes(r.bodyBytes);
  const b = r.browser?.bodyBytes ?? r.browser?.encodedBytes;
  return b === null || b === undefined ? "" : formatBytes(b);
}

function statusOf(row: WaterfallRow): string {
  const s = row.record.status ?? row.record.browser?.status;
  if (s !== null && s !== undefined) return String(s);
  if (row.record.browser?.error) return "failed";
  return row.record.outcome === "pending" ? "…" : "";
}

/** Renders the waterfall into `host`; returns the request rows' elements in display order. */
export function renderWaterfall(host: HTMLElement, w: Waterfall, load: PageLoad, showGroups: boolean): HTMLElement[] {
  const span = w.to - w.from;
  const pct = (t: number): string => `${(((t - w.from) / span) * 100).toFixed(3)}%`;
  const frag = document.createDocumentFragment();

  const head = el("div", "row head");
  head.setAttribute("role", "presentation");
  head.append(el("span", "stripe"), el("span", "", "Request"), el("span", "num c-status", "Status"), el("span", "c-type", "Type"),
    el("span", "c-pipe", "Pos/depth"), el("span", "c-route", "Route"), el("span", "num c-size", "Size"), el("span", "num c-time", "Time"));
  const axis = el("span", "track");
  const step = tickStep(span);
  for (let t = 0; t <= span; t += step) {
    const tick = el("span", "tick", formatMs(t));
    tick.style.left = pct(w.from + t);
    axis.append(tick);
  }
  head.append(axis);
  frag.append(head);

  const marks: [string, number | null, string][] = [
    ["dcl", load.contentLoadedAt, MARKS[0].label], ["load", load.loadedAt, MARKS[1].label],
  ];
  const rows: HTMLElement[] = [];
  for (const group of w.groups) {
    if (showGroups) {
      const g = el("div", "row group");
      g.setAttribute("role", "presentation");
      const stripe = el("span", "stripe");
      stripe.style.background = `hsl(${group.hue} 65% 50%)`;
      g.append(stripe, el("span", "", group.title));
      frag.append(g);
    }
    for (const row of group.rows) {
      const r = row.record;
      const line = el("div", `row${r.outcome === "passed" ? " passed" : ""}`);
      line.id = `req-${r.id}`;
      line.dataset.id = r.id;
      line.setAttribute("role", "option");
      line.setAttribute("aria-selected", "false");
      if (row.passed) line.dataset.pass = `${LEFT_TO_BROWSER}: ${row.passed}`;
      const stripe = el("span", "stripe");
      stripe.style.background = `hsl(${row.hue} 65% 50%)`;
      stripe.title = row.connection;
      const name = el("span", "name");
      name.title = row.passed ? `${r.url}\n${LEFT_TO_BROWSER}: ${row.passed}` : r.url;
      // The reason first, so a narrow column still shows it (in a few words; the details say it in full).
      if (row.passed) name.append(el("span", "pass", reasonShort(r.reason) || LEFT_TO_BROWSER));
      name.append(row.name);
      const track = el("span", "track");
      for (const s of row.timeline.segments) {
        const seg = el("span", `seg p-${s.phase}`);
        seg.style.left = pct(s.from);
        seg.style.width = `${(((s.to - s.from) / span) * 100).toFixed(3)}%`;
        track.append(seg);
      }
      for (const [cls, at, title] of marks) {
        if (at === null) continue;
        const m = el("span", `mark ${cls}`);
        m.style.left = pct(at);
        m.title = title;
        track.append(m);
      }
      line.append(stripe, name, el("span", "num c-status", statusOf(row)), el("span", "c-type", r.resourceType.toLowerCase()),
        el("span", "c-pipe", row.pipeline), el("span", "c-route", row.route), el("span", "num c-size", sizeOf(row)),
        el("span", "num c-time", formatMs(row.timeline.end - row.timeline.start)), track);
      frag.append(line);
      rows.push(line);
    }
  }
  host.replaceChildren(frag);
  return rows;
}
