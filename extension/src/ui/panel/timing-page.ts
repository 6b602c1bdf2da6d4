// The timing view: the standalone extension page (recent page loads of enabled sites, one selected) and, opened
// inside DevTools, the "lanefetch" panel for the inspected tab. Reads the background's records by message, polls
// once a second while shown and re-renders only when the selected load changed.
// `timing.html?tab=N` preselects tab N's newest load, `?load=ID` a given load. Which load is shown at each poll, and
// when the view empties because it is gone: load-choice.ts.
import type { PageLoadReply, PageLoadsReply, TimingRequest } from "../../background/popup-api.js";
import { buildHar } from "../../timings/har.js";
import { LEFT_TO_BROWSER, reasonInPlainWords } from "../../timings/left-to-browser.js";
import { flightWords, NO_PIPELINING_MODEL, summarize, summaryText, type PageSummary } from "../../timings/page-summary.js";
import type { PageLoad, PageLoadData } from "../../timings/timing-store.js";
import { byId, formatBytes, formatMs } from "../format.js";
import { renderDetails } from "./details-view.js";
import { chooseLoad, emptyText } from "./load-choice.js";
import { buildWaterfall, type GroupBy, type Waterfall } from "./waterfall-model.js";
import { legend, renderWaterfall } from "./waterfall-view.js";

const version = chrome.runtime.getManifest().version;
const devtoolsTab: number | undefined = (chrome as { devtools?: typeof chrome.devtools }).devtools?.inspectedWindow.tabId;
const params = new URLSearchParams(location.search);
const tabFilter = devtoolsTab ?? (params.has("tab") ? Number(params.get("tab")) : undefined);

const nav = byId("loads", HTMLElement);
const select = byId("load-select", HTMLSelectElement);
const groupSelect = byId("group", HTMLSelectElement);
const summaryHost = byId("summary", HTMLElement);
const legendHost = byId("legend", HTMLDivElement);
const waterfallHost = byId("waterfall", HTMLDivElement);
const details = byId("details", HTMLElement);
const exportButton = byId("export", HTMLButtonElement);
const copyButton = byId("copy", HTMLButtonElement);
const flash = byId("flash", HTMLSpanElement);

let loads: PageLoad[] = [];
/** The load the user chose; null: follow the newest (of the tab, in DevTools or with ?tab=). */
let chosen: string | null = params.get("load");
let shown: { data: PageLoadData; waterfall: Waterfall; rows: HTMLElement[]; summary: PageSummary } | null = null;
let selected: string | null = null;
/** Counts refreshes: one that an overlapping later one overtook (a click during a poll) renders nothing. */
let generation = 0;

function ask<T>(message: TimingRequest): Promise<T> {
  return chrome.runtime.sendMessage<TimingRequest, T>(message);
}

function say(text: string): void {
  flash.textContent = text;
  setTimeout(() => {
    if (flash.textContent === text) flash.textContent = "";
  }, 3000);
}

function loadLabel(l: PageLoad): string {
  return `${new Date(l.startedAt).toLocaleTimeString()} · ${l.requests} req`;
}

function renderLoadList(current: string | null): void {
  // The select stands in for the list in DevTools and where the page is too narrow for it (timing.css decides).
  select.replaceChildren(...loads.map((l) => new Option(`${loadLabel(l)} · ${l.url}`, l.id, false, l.id === current)));
  (select.parentElement as HTMLElement).hidden = loads.length < 2;
  if (devtoolsTab !== undefined) return;
  nav.replaceChildren(...loads.map((l) => {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.id = l.id;
    b.setAttribute("aria-current", String(l.id === current));
    const url = document.createElement("span");
    url.className = "url";
    url.textContent = l.title || l.url;
    url.title = l.url;
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = `${loadLabel(l)}${l.loadedAt ? ` · ${formatMs(l.loadedAt - l.startedAt)}` : ""}`;
    b.append(url, meta);
    return b;
  }));
}

function stat(value: string, label: string, title = ""): HTMLElement {
  const d = document.createElement("div");
  d.className = "stat";
  if (title) d.title = title;
  const b = document.createElement("b");
  b.textContent = value;
  const s = document.createElement("span");
  s.textContent = label;
  d.append(b, s);
  return d;
}

function renderSummary(s: PageSummary): void {
  const estimate = s.withoutPipeliningMs === null ? "–" : `~${formatMs(s.withoutPipeliningMs)}`;
  const model = document.createElement("details");
  const sum = document.createElement("summary");
  sum.textContent = "How the estimate without pipelining is made";
  const p = document.createElement("p");
  p.textContent = NO_PIPELINING_MODEL;
  model.append(sum, p);
  summaryHost.replaceChildren(
    stat(s.pageLoadMs === null ? "loading…" : formatMs(s.pageLoadMs), "page load (load event)"),
    stat(String(s.requests), "requests"),
    stat(String(s.accelerated), "accelerated"),
    stat(String(s.passed), LEFT_TO_BROWSER,
      Object.entries(s.passedByReason).map(([r, n]) => `${n} because ${reasonInPlainWords(r)}`).join("\n")),
    stat(String(s.fromHelperCache), "from helper cache", `${s.revalidated} revalidated`),
    stat(s.flight === null ? String(s.fromFlight) : `${s.fromFlight} · ${formatBytes(s.flight.wastedBytes)} wasted`,
      "from the page's flight", flightWords(s)),
    stat(s.bytesByInterface.map((b) => `${b.name} ${formatBytes(b.bytes)}`).join(" · ") || "–", "bytes per route"),
    stat(`${s.connections} (max ${s.maxConcurrentConnections} at once)`, "helper connections",
      `${s.pipelined} requests pipelined behind another; max depth ${s.maxPipelineDepth}; browser connections ${s.browserConnections}`),
    stat(formatMs(s.acceleratedSpanMs), "accelerated requests, measured"),
    stat(estimate, "same, without pipelining (estimate)"),
    model,
  );
}

function select_(id: string | null, scroll: boolean): void {
  const rows = shown?.rows ?? [];
  for (const r of rows) if (r.getAttribute("aria-selected") === "true" && r.dataset.id !== id) r.setAttribute("aria-selected", "false");
  selected = id;
  const row = rows.find((r) => r.dataset.id === id);
  if (row) {
    row.setAttribute("aria-selected", "true");
    waterfallHost.setAttribute("aria-activedescendant", row.id);
    if (scroll) row.scrollIntoView({ block: "nearest" });
  } else {
    waterfallHost.removeAttribute("aria-activedescendant");
  }
  showDetails(id);
}

function showDetails(id: string | null): void {
  const row = shown?.waterfall.rows.find((r) => r.record.id === id) ?? null;
  renderDetails(details, row, shown?.data.load.startedAt ?? 0);
}

function render(data: PageLoadData): void {
  const started = performance.now();
  const by = groupSelect.value as GroupBy;
  const waterfall = buildWaterfall(data, by);
  const summary = summarize(data);
  renderSummary(summary);
  const scrollTop = waterfallHost.scrollTop;
  const rows = renderWaterfall(waterfallHost, waterfall, data.load, by !== "none");
  waterfallHost.scrollTop = scrollTop;
  shown = { data, waterfall, rows, summary };
  for (const host of [summaryHost, legendHost, waterfallHost]) host.hidden = false;
  byId("empty", HTMLParagraphElement).hidden = true;
  exportButton.disabled = false;
  copyButton.disabled = false;
  select_(rows.some((r) => r.dataset.id === selected) ? selected : null, false);
  // Read by the real-browser test (render time with many requests).
  document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
  document.body.dataset.loadId = data.load.id;
  document.body.dataset.version = String(data.load.version);
}

/** The view shows no load: the load it showed is gone (`gone`), or there never was one. */
function clear(gone: boolean): void {
  shown = null;
  selected = null;
  summaryHost.replaceChildren();
  waterfallHost.replaceChildren();
  waterfallHost.removeAttribute("aria-activedescendant");
  for (const host of [summaryHost, legendHost, waterfallHost]) host.hidden = true;
  const empty = byId("empty", HTMLParagraphElement);
  empty.textContent = emptyText(gone, devtoolsTab !== undefined);
  empty.hidden = false;
  exportButton.disabled = true;
  copyButton.disabled = true;
  renderDetails(details, null, 0);
  delete document.body.dataset.loadId;
  delete document.body.dataset.version;
}

async function refresh(): Promise<void> {
  const mine = ++generation;
  const listed = (await ask<PageLoadsReply>(tabFilter === undefined ? { type: "lanefetch/page-loads" } : { type: "lanefetch/page-loads", tabId: tabFilter })).loads;
  if (mine !== generation) return;
  loads = listed;
  const choice = chooseLoad(loads, chosen, shown?.data.load ?? null);
  chosen = choice.chosen;
  renderLoadList(choice.kind === "empty" ? null : choice.id);
  if (choice.kind === "empty") {
    if (shown !== null) clear(true);
  } else if (choice.kind === "load") {
    const { data } = await ask<PageLoadReply>({ type: "lanefetch/page-load", id: choice.id });
    if (mine !== generation) return;
    // Dropped between the two questions: empty now; the next poll shows what is kept then.
    if (data) render(data);
    else clear(true);
  }
  document.body.dataset.ready = "true";
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function copy(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // DevTools panels may not get the async clipboard: fall back to a selection copy.
    const area = document.createElement("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the only copy that works where the async clipboard is denied
    document.execCommand("copy");
    area.remove();
  }
}

function wire(): void {
  if (devtoolsTab !== undefined) document.body.classList.add("devtools");
  legendHost.replaceChildren(...legend());
  renderDetails(details, null, 0);
  nav.addEventListener("click", (e) => {
    const id = (e.target as HTMLElement).closest<HTMLElement>("button[data-id]")?.dataset.id;
    if (id === undefined) return;
    chosen = id;
    void refresh();
  });
  select.addEventListener("change", () => {
    chosen = select.value;
    void refresh();
  });
  groupSelect.addEventListener("change", () => {
    if (shown) render(shown.data);
  });
  waterfallHost.addEventListener("click", (e) => {
    const id = (e.target as HTMLElement).closest<HTMLElement>(".row[data-id]")?.dataset.id;
    if (id !== undefined) select_(id, false);
  });
  waterfallHost.addEventListener("mouseover", (e) => {
    const id = (e.target as HTMLElement).closest<HTMLElement>(".row[data-id]")?.dataset.id;
    if (id !== undefined) showDetails(id);
  });
  waterfallHost.addEventListener("mouseleave", () => showDetails(selected));
  waterfallHost.addEventListener("keydown", (e) => {
    const rows = shown?.rows ?? [];
    if (rows.length === 0) return;
    const at = rows.findIndex((r) => r.dataset.id === selected);
    const page = Math.max(1, Math.floor(waterfallHost.clientHeight / 21) - 2);
    const moves: Record<string, number> = {
      ArrowDown: at + 1, ArrowUp: at - 1, PageDown: at + page, PageUp: at - page, Home: 0, End: rows.length - 1,
    };
    if (e.key === "Escape") return select_(null, false);
    const to = moves[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select_(rows[Math.min(rows.length - 1, Math.max(0, at === -1 && e.key === "ArrowUp" ? 0 : to))]?.dataset.id ?? null, true);
  });
  exportButton.addEventListener("click", () => {
    if (!shown) return;
    const browser = /(Firefox|Chromium|Chrome)\/([\d.]+)/.exec(navigator.userAgent);
    const har = buildHar([shown.data], { version, ...(browser ? { browser: { name: browser[1] ?? "", version: browser[2] ?? "" } } : {}) });
    const host = (() => {
      try {
        return new URL(shown.data.load.url).host.replace(/[^\w.-]/g, "_");
      } catch {
        return "page";
      }
    })();
    download(`lanefetch-${host}-${new Date(shown.data.load.startedAt).toISOString().replace(/[:.]/g, "-")}.har`, JSON.stringify(har, null, 2));
    say("HAR saved");
  });
  copyButton.addEventListener("click", () => {
    if (!shown) return;
    void copy(summaryText(shown.summary, version)).then(() => say("Summary copied"));
  });
}

wire();
void refresh();
setInterval(() => {
  if (document.visibilityState === "visible") void refresh();
}, 1000);
