// What the page benchmarks' drivers (Chromium over Playwright, Firefox over WebDriver BiDi) measure of one page
// load, and the stdout/stdin protocol bench/page_load.py speaks with them:
//   DRIVER URL on|off IMAGES [WARM_URL]
// One JSON line per load (with LANEFETCH_BENCH_CPU_MARKS, a `{"cpu":...}` line before and after its navigation, each
// answered by a caller's line: cpuMark); with WARM_URL the driver then reads one line from stdin (the caller has taken its
// counters) and loads WARM_URL in the same tab. After its last load the driver keeps the page open until the caller
// closes stdin (it has read the link's settled counters), so what the page still fetches after its load event is
// part of the load's bytes in both variants: closing the browser at once cut OFF's late responses short (Firefox
// on `wcdma`, rust-std: OFF's link moved less than the bodies the server sent), while ON the helper finished them.
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

export interface LoadResult {
  images: number;
  decoded: number;
  load_s: number;
  dcl_s: number;
  response_end_s: number;
  /** Epoch ms (this machine's clock, as the driver's Date.now()) of the final navigation's start and load event end:
   * the wall clock's two parts, the gate's (call → navigation start) and the driver's (load event → noticed). */
  start_epoch_ms: number;
  load_end_epoch_ms: number;
  /** The font faces the page used once its fonts settled: "family weight style: loaded|error", sorted. */
  fonts: string[];
  /** The layout once images and fonts settled: every element's box under <body> (in document coordinates), in
   * document order, FNV-1a hashed ("hash/elements"): a stylesheet, font or image (of no set size) that did not
   * arrive moves boxes. */
  layout: string;
}

/** How a driver reaches into its page (the in-page functions below run there). */
export interface PageProbe {
  /** Resolves once `loadEnded` holds in the page. */
  untilLoaded(): Promise<unknown>;
  /** `readLoad` evaluated in the page. */
  read(): Promise<LoadResult>;
  /** The page's console errors and warnings and its uncaught errors since the last call, where the driver listens
   * (real-pages' drivers: the report compares ON's with OFF's). */
  console?(): string[];
  /** The viewport as drawn once the page was read (a PNG's SHA-256, 16 hex digits): what layout does not show, a
   * background image or a colour, shows here. */
  screen?(): Promise<string>;
}

/** A screenshot as PageProbe.screen gives it: its SHA-256, 16 hex digits. With LANEFETCH_BENCH_SCREENSHOTS=DIR the
 * PNG is kept too, as DIR/DIGEST.png (the digest is in the load's line), to see what two loads drew differently. */
export function screenDigest(png: Uint8Array): string {
  const digest = createHash("sha256").update(png).digest("hex").slice(0, 16);
  const dir = process.env.LANEFETCH_BENCH_SCREENSHOTS;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${digest}.png`), png);
  }
  return digest;
}

/** In the page: the top-level document's load event has ended. */
export const loadEnded = (): boolean => {
  const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
  return nav !== undefined && nav.loadEventEnd > 0;
};

/** In the page: navigation timing (navigation start → load event end) after every image decoded. */
export const readLoad = async (): Promise<LoadResult> => {
  const imgs = Array.from(document.images);
  // A decode that never settles counts as not decoded after 10 s: a load is reported with its count rather than
  // hanging the driver until the protocol times out.
  // (Inline, no named inner function: this runs serialized in the page, where tsx's __name helper does not exist.)
  const decoded = await Promise.all(imgs.map((i) => Promise.race([
    i.decode().then(() => i.naturalWidth > 0, () => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10000)),
  ])));
  // Fonts settle after the load event, as text uses them: waited for as images are (10 s at most).
  await Promise.race([document.fonts.ready, new Promise((resolve) => setTimeout(resolve, 10000))]);
  const fonts = Array.from(document.fonts).filter((f) => f.status !== "unloaded")
    .map((f) => `${f.family.replace(/"/g, "")} ${f.weight} ${f.style}: ${f.status}`).sort();
  let hash = 2166136261;
  let elements = 0;
  for (const el of Array.from(document.querySelectorAll("body *"))) {
    const r = el.getBoundingClientRect();
    const box = `${el.tagName}:${Math.round(r.x + window.scrollX)},${Math.round(r.y + window.scrollY)},${Math.round(r.width)},${Math.round(r.height)};`;
    for (let i = 0; i < box.length; i++) hash = Math.imul(hash ^ box.charCodeAt(i), 16777619) >>> 0;
    elements++;
  }
  const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
  return {
    fonts,
    layout: `${hash.toString(16)}/${String(elements)}`,
    images: imgs.length,
    decoded: decoded.filter(Boolean).length,
    load_s: (nav.loadEventEnd - nav.startTime) / 1000,
    dcl_s: (nav.domContentLoadedEventEnd - nav.startTime) / 1000,
    response_end_s: (nav.responseEnd - nav.startTime) / 1000,
    start_epoch_ms: performance.timeOrigin + nav.startTime,
    load_end_epoch_ms: performance.timeOrigin + nav.loadEventEnd,
  };
};

/** With LANEFETCH_BENCH_CPU_MARKS (bench/page_load.py sets it): prints `{"cpu":NAME}` and waits for the caller's
 * line, the caller having sampled the CPU times of the driver's process tree (bench/cpu_sampler.py): the browser's
 * and the helper's CPU of a load is counted from the navigation call to the load event, not while the driver reads
 * the page and takes its screenshot. */
async function cpuMark(name: "navigating" | "loaded"): Promise<void> {
  if (!process.env.LANEFETCH_BENCH_CPU_MARKS) return;
  console.log(JSON.stringify({ cpu: name }));
  await nextCallerLine();
}

/** One load: `load` navigates; the wall clock runs from its start to the load event. */
export async function measure(probe: PageProbe, images: number, load: () => Promise<unknown>): Promise<Record<string, unknown>> {
  probe.console?.(); // what earlier loads logged is theirs
  await cpuMark("navigating");
  const t0 = Date.now();
  await load();
  await probe.untilLoaded();
  const noticed = Date.now();
  await cpuMark("loaded");
  const wall = (noticed - t0) / 1000;
  const r = await probe.read();
  const messages = probe.console?.();
  const screen = await probe.screen?.();
  // Where the wall clock beyond the navigation went: before the final navigation started (ON in Chromium: the gate's
  // blocked try, the debugger's attach, the navigation again) and after its load event, until the driver noticed it.
  const before_nav_s = (r.start_epoch_ms - t0) / 1000;
  const after_load_s = (noticed - r.load_end_epoch_ms) / 1000;
  // images < 0 (a real page): its images are what they are; the counts are reported, not checked.
  if (images >= 0 && (r.images !== images || r.decoded !== images)) throw new Error(`images: ${r.decoded}/${r.images} decoded, want ${images}`);
  return { wall_s: wall, before_nav_s, after_load_s, ...r, ...(messages ? { console: messages } : {}), ...(screen ? { screen } : {}) };
}

/** Both drivers navigate a browser's first page SETTLE_MS after it started, in both variants (the same idle time for
 * its own start-up work), and ON at least HELPER_UP_MS after the helper connected: a user turns a site on in the
 * popup and reloads; the helper's start-up work (imports, its cache, the site's connect ahead) is not the page's.
 * LANEFETCH_BENCH_COLD_HELPER=1 navigates at once, the helper's start inside that load. */
export const SETTLE_MS = 2500;
export const HELPER_UP_MS = 1000;

/** Waits until the first navigation may start: `startedAt` the browser's launch, `helperUpAt` when ON's helper was
 * up (null for OFF). */
export async function untilSettled(startedAt: number, helperUpAt: number | null): Promise<void> {
  if (process.env.LANEFETCH_BENCH_COLD_HELPER) return;
  const settled = Math.max(startedAt + SETTLE_MS, helperUpAt === null ? 0 : helperUpAt + HELPER_UP_MS);
  await new Promise((r) => setTimeout(r, Math.max(0, settled - Date.now())));
}

export interface DriverArgs {
  url: string;
  on: boolean;
  images: number;
  warmUrl: string | undefined;
}

export function driverArgs(argv: string[]): DriverArgs {
  const [url, mode, imagesArg, warmUrl] = argv;
  if (url === undefined || (mode !== "on" && mode !== "off")) throw new Error("usage: URL on|off IMAGES [WARM_URL]");
  return { url, on: mode === "on", images: Number(imagesArg ?? "80"), warmUrl };
}

// The caller's lines on stdin: one reader for the driver's whole life (a second readline interface on the same
// stream could take lines meant for the first).
let callerLines: AsyncIterator<string> | undefined;

/** The caller's next line; done once it closed stdin. */
export function nextCallerLine(): Promise<IteratorResult<string>> {
  callerLines ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  return callerLines.next();
}

// Bounds the wait for the caller to close stdin after the last load (it waits at most 15 s for the link to go quiet
// and 5 s for the server's log); past it the driver closes the browser anyway.
const CALLER_DONE_MS = 60000;

/** Resolves once the caller closed stdin, or after CALLER_DONE_MS (with a line on stderr saying so). */
export async function untilCallerDone(): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => { timer = setTimeout(() => resolve("late"), CALLER_DONE_MS); });
  try {
    for (;;) {
      const r = await Promise.race([nextCallerLine(), late]);
      if (r === "late") { console.error(`caller kept stdin open for ${CALLER_DONE_MS} ms after the last load`); return; }
      if (r.done === true) return;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Prints the first load; with a warm URL waits for the caller's line and prints the warm load; then waits for the
 * caller to be done (untilCallerDone). */
export async function runLoads(args: DriverArgs, first: () => Promise<Record<string, unknown>>,
  warm: (url: string) => Promise<Record<string, unknown>>): Promise<void> {
  const mode = args.on ? "on" : "off";
  console.log(JSON.stringify({ mode, ...(await first()) }));
  if (args.warmUrl !== undefined) {
    await nextCallerLine();
    console.log(JSON.stringify({ mode, ...(await warm(args.warmUrl)) }));
  }
  await untilCallerDone();
}

export function exitOnError(e: unknown): never {
  console.error(e);
  process.exit(1);
}
