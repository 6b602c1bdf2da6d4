// What lanefetch knows of each host's speed, and the one rule that makes a host "fast": where lanefetch steps aside.
//
// Theory of operation. Pipelining saves round trips, and each request lanefetch takes costs a few ms of its own
// (batching window, the native port both ways, the helper, one fulfil), a page a blocked first navigation and an
// attached debugger. When a host's round trip is small, there is too little to save: measured in real Chromium on the
// `lan` link (RTT < 1 ms) ON was slower than OFF for every page shape, and on real pages (`real-pages`: seven
// documentation pages, 12–33 subresources) over `lte` (60 ms) ON was 0.75–0.89× OFF on every page, while over
// `sat` (600 ms) it was level or ahead on most and only synthetic pages of 77+ tiny images gained on `lte`. So
// requests to a host whose round trip is below STEP_ASIDE_BELOW_RTT_MS go to the browser; this file is the only
// holder of the threshold.
//
// Samples come in with their source and the time they were taken:
// - helper_connect: the helper's new connection (origin_rtt) — one round trip;
// - browser_connect: the browser's own TCP connect (CDP Network timing, TLS excluded) — one round trip;
// - browser_first_byte: a request sent → first byte of its response head, which takes at least one round trip (plus
//   the server's time), so it bounds the RTT from above even on a connection opened earlier;
// - helper_memory: what an earlier helper session measured (within a day), sent on a navigation's preconnect before
//   this session has a connection (origin_rtt, remembered), so the gate's speed probe (speed-probe.ts) decides at
//   once. It decides only while the host has no measured sample: the first measured one (any source) replaces it,
//   and it contradicts nothing (the user's network may have changed since).
// A sample that cannot be a round trip of the network is rejected here: not a finite non-negative number, no origin;
// a time of an answer that did not cross the network (a service worker's, a cache's, or one lanefetch fulfilled
// itself: Chromium times a fulfilled document's "sent → first byte" in milliseconds whatever the link; it would make
// a far host look near); a first-byte time of anything but a document (a page's many subresources queue behind each other
// and would push the host's few good samples out of its history).
//
// A sample too small is what costs: it hands a whole tab to the browser on a slow link (the field report: ~0 ms and
// 4–9 ms samples on 400 ms and 50 ms links). So a sample is trusted only if the host's other round trips allow it
// (`contradicted`): one that at least two other round-trip samples (connect times; a first-byte time is only an
// upper bound and contradicts nothing) put far above it (more than OUTLIER_FACTOR × it + OUTLIER_SLACK_MS), with
// none of the others near it, is discarded — one fast sample never outweighs consistent slow ones, while a LAN
// host's samples, all small, stand together however they scatter.
// A host's RTT is the smallest of its trusted recent samples (queueing only ever adds to one), over its origins (any
// scheme or port: one machine, one network path). Samples age out (the user's network changes)
// and only the newest few per origin count. A verdict says fast / slow / unknown, and until when it holds without
// a new sample (expiresAt: the last sample below the threshold ages out). With the threshold off (the tests' flag
// `accelerateFastLinks`) every host is "slow": there is nothing to learn. Pure apart from the injected clock.

import { originOf } from "./origin-of.js";

export const STEP_ASIDE_BELOW_RTT_MS = 100;

/** storage.local key: true = take requests even where the link is so fast that lanefetch cannot win (tests). */
export const ACCELERATE_FAST_LINKS_KEY = "accelerateFastLinks";

/** The threshold the stored settings ask for (null: never step aside). */
export function thresholdFromSettings(settings: Record<string, unknown>): number | null {
  return settings[ACCELERATE_FAST_LINKS_KEY] === true ? null : STEP_ASIDE_BELOW_RTT_MS;
}

export type SampleSource = "helper_connect" | "browser_connect" | "browser_first_byte" | "helper_memory";

export interface SpeedSample {
  /** The URL or origin measured (its origin is kept). */
  url: string;
  ms: number;
  source: SampleSource;
  /** browser_first_byte: the request was a document. */
  document?: boolean;
  /** The answer did not cross the network: a service worker's, a cache's, or fulfilled through the debugger (no
   * remote address). */
  local?: boolean;
}

export interface Verdict {
  host: string;
  /** unknown: no fresh sample (and the threshold is on). */
  state: "fast" | "slow" | "unknown";
  /** The host's RTT estimate (ms), null if unknown. */
  rttMs: number | null;
  /** Epoch ms when this verdict ends without a new sample (a fast host's last fast sample ages out); null: never. */
  expiresAt: number | null;
}

export interface SpeedOptions {
  maxOrigins: number;
  maxAgeMs: number;
  /** Recent samples kept per origin. */
  samples: number;
}

export const DEFAULT_SPEED: SpeedOptions = { maxOrigins: 512, maxAgeMs: 5 * 60_000, samples: 4 };

/** A sample this far below at least two other round trips of its host (and none near it) is not believed. */
export const OUTLIER_FACTOR = 4;
export const OUTLIER_SLACK_MS = 5;

/** The helper's origin_rtt as a sample (remembered: an earlier session's measure). */
export function helperSample(origin: string, rttMs: number, remembered: boolean): SpeedSample {
  return { url: origin, ms: rttMs, source: remembered ? "helper_memory" : "helper_connect" };
}

interface Kept {
  at: number;
  ms: number;
  /** A round trip (a connect time), only an upper bound of one (request sent → first byte), or an earlier helper
   * session's round trip (stands only while nothing was measured). */
  kind: "rtt" | "upper" | "remembered";
}

function kindOf(source: SampleSource): Kept["kind"] {
  if (source === "browser_first_byte") return "upper";
  return source === "helper_memory" ? "remembered" : "rtt";
}

/** Is this sample impossible next to the host's other samples? At least two other round trips lie far above it and
 * none near it. */
export function contradicted(sample: { ms: number }, others: readonly { ms: number; kind: Kept["kind"] }[]): boolean {
  const bound = OUTLIER_FACTOR * sample.ms + OUTLIER_SLACK_MS;
  const rtts = others.filter((o) => o.kind === "rtt");
  return rtts.filter((o) => o.ms > bound).length >= 2 && !rtts.some((o) => o.ms <= bound);
}

interface OriginSamples {
  host: string;
  kept: Kept[];
}

/** The host name of a URL or origin ("" if it is none). */
export function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}

/** Why a sample cannot be a round trip of the network (null: it can). */
export function rejectReason(sample: SpeedSample): string | null {
  if (!Number.isFinite(sample.ms) || sample.ms < 0) return "not a duration";
  if (originOf(sample.url) === "" || originOf(sample.url) === "null") return "no origin";
  if (sample.local === true) return "answered without the network";
  if (sample.source === "browser_first_byte" && sample.document !== true) return "not a document";
  return null;
}

export class HostSpeed {
  /** Least recently observed first. */
  private readonly byOrigin = new Map<string, OriginSamples>();
  /** Each host's origins (a host's verdict reads only these). */
  private readonly originsOf = new Map<string, Set<string>>();
  private readonly listeners: ((host: string) => void)[] = [];
  private belowMs: number | null = STEP_ASIDE_BELOW_RTT_MS;

  constructor(
    private readonly options: SpeedOptions = DEFAULT_SPEED,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The threshold in force (ms; null: never step aside). */
  get threshold(): number | null {
    return this.belowMs;
  }

  /** From the stored settings (thresholdFromSettings); listeners hear every known host when it changes, the least
   * recently observed first (so that whoever orders hosts by the newest sample keeps that order). */
  setThreshold(belowMs: number | null): void {
    if (belowMs === this.belowMs) return;
    this.belowMs = belowMs;
    for (const host of this.knownHosts().reverse()) this.tell(host);
  }

  /** One sample; false if rejected (rejectReason). Listeners hear the sample's host after each accepted one. */
  observe(sample: SpeedSample): boolean {
    if (rejectReason(sample) !== null) return false;
    const origin = originOf(sample.url);
    const entry = this.byOrigin.get(origin) ?? { host: hostOf(origin), kept: [] };
    this.byOrigin.delete(origin); // re-inserted last: the map's order is least recently observed first
    const kind = kindOf(sample.source);
    // A measured sample replaces what was remembered (the remembered one may be of another network).
    if (kind !== "remembered") entry.kept = entry.kept.filter((k) => k.kind !== "remembered");
    entry.kept.push({ at: this.now(), ms: sample.ms, kind });
    if (entry.kept.length > this.options.samples) entry.kept.splice(0, entry.kept.length - this.options.samples);
    this.byOrigin.set(origin, entry);
    this.originsOf.set(entry.host, (this.originsOf.get(entry.host) ?? new Set()).add(origin));
    while (this.byOrigin.size > this.options.maxOrigins) {
      const oldest = this.byOrigin.keys().next().value;
      if (oldest === undefined) break;
      this.drop(oldest);
    }
    this.tell(entry.host);
    return true;
  }

  /** Called with the host after each accepted sample, and for every known host when the threshold changes;
   * returns how to stop. */
  onVerdict(listener: (host: string) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  /** The verdict on the host of `url` (a URL, an origin or a bare host name). */
  verdict(url: string): Verdict {
    const host = url.includes("/") ? hostOf(url) : url;
    const samples = this.freshSamples(host);
    // Remembered round trips decide only while none of the host's origins has a measured one.
    const measured = samples.filter((s) => s.kind !== "remembered");
    const all = measured.length ? measured : samples;
    const fresh = all.filter((s) => !contradicted(s, all.filter((o) => o !== s)));
    const rttMs = fresh.length ? Math.min(...fresh.map((s) => s.ms)) : null;
    const below = this.belowMs;
    if (below === null) return { host, state: "slow", rttMs, expiresAt: null };
    if (rttMs === null) return { host, state: "unknown", rttMs, expiresAt: null };
    if (rttMs >= below) return { host, state: "slow", rttMs, expiresAt: Math.min(...fresh.map((s) => s.at)) + this.options.maxAgeMs };
    const lastFast = Math.max(...fresh.filter((s) => s.ms < below).map((s) => s.at));
    return { host, state: "fast", rttMs, expiresAt: lastFast + this.options.maxAgeMs };
  }

  isFast(url: string): boolean {
    return this.verdict(url).state === "fast";
  }

  /** Why a request to `url` goes to the browser ("round trip to … ~N ms", a pass's detail), or null: lanefetch takes
   * it. The same rule in both backgrounds (Chromium's accelerator and tab policy, Firefox's proxy router). */
  stepAsideDetail(url: string): string | null {
    const v = this.verdict(url);
    return v.state === "fast" && v.host !== "" ? `round trip to ${v.host} ~${v.rttMs?.toFixed(1) ?? "?"} ms` : null;
  }

  /** The earliest time one of these hosts' verdicts ends without a new sample (epoch ms), null if none does. */
  nextExpiry(hosts: readonly string[]): number | null {
    const ends = hosts.map((h) => this.verdict(h).expiresAt ?? Infinity).filter((at) => Number.isFinite(at));
    return ends.length ? Math.min(...ends) : null;
  }

  /** Hosts with a fresh sample, most recently observed first; origins with none left are dropped. */
  knownHosts(): string[] {
    const out = new Set<string>();
    for (const [origin, { host }] of [...this.byOrigin].reverse()) {
      if (this.freshOf(origin).length > 0) out.add(host);
    }
    return [...out].filter((h) => h !== "");
  }

  private freshSamples(host: string): Kept[] {
    if (host === "") return [];
    return [...(this.originsOf.get(host) ?? [])].flatMap((o) => this.freshOf(o));
  }

  private freshOf(origin: string): Kept[] {
    const fresh = (this.byOrigin.get(origin)?.kept ?? []).filter((s) => this.now() - s.at <= this.options.maxAgeMs);
    if (fresh.length === 0) this.drop(origin);
    return fresh;
  }

  private drop(origin: string): void {
    const entry = this.byOrigin.get(origin);
    if (!entry) return;
    this.byOrigin.delete(origin);
    const origins = this.originsOf.get(entry.host);
    origins?.delete(origin);
    if (origins?.size === 0) this.originsOf.delete(entry.host);
  }

  private tell(host: string): void {
    if (host === "") return;
    for (const listener of [...this.listeners]) listener(host);
  }
}
