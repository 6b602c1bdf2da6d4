// What lanefetch knows of each origin's round-trip time: TCP connect times, which take one round trip — the
// helper's new connections (its timing messages) and the browser's own (CDP Network timing of requests it fetched
// itself, e.g. the page's document). Bounded, and samples age out: the user's network changes.

export interface LatencyOptions {
  maxOrigins: number;
  maxAgeMs: number;
  /** Recent samples kept per origin. */
  samples: number;
}

export const DEFAULT_LATENCY: LatencyOptions = { maxOrigins: 512, maxAgeMs: 5 * 60_000, samples: 4 };

interface Sample {
  at: number;
  ms: number;
}

export class OriginLatency {
  private readonly byOrigin = new Map<string, Sample[]>();
  private readonly listeners: ((origin: string) => void)[] = [];

  constructor(
    private readonly options: LatencyOptions = DEFAULT_LATENCY,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** One connect time (ms) to `origin` (scheme://host:port as URL.origin gives it). Nonsense is ignored. */
  observe(origin: string, connectMs: number): void {
    if (!Number.isFinite(connectMs) || connectMs < 0 || origin === "" || origin === "null") return;
    const samples = this.byOrigin.get(origin) ?? [];
    this.byOrigin.delete(origin); // re-inserted last: the map's order is least recently observed first
    samples.push({ at: this.now(), ms: connectMs });
    if (samples.length > this.options.samples) samples.splice(0, samples.length - this.options.samples);
    this.byOrigin.set(origin, samples);
    while (this.byOrigin.size > this.options.maxOrigins) {
      const oldest = this.byOrigin.keys().next().value;
      if (oldest === undefined) break;
      this.byOrigin.delete(oldest);
    }
    for (const listener of this.listeners) listener(origin);
  }

  /** Called after each sample taken (not for ignored nonsense); returns how to stop. */
  onObserved(listener: (origin: string) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  /** The hosts with a fresh RTT estimate, most recently observed first. */
  hosts(): string[] {
    const out = new Set<string>();
    for (const origin of [...this.byOrigin.keys()].reverse()) {
      if (this.rttMs(origin) !== null) out.add(hostOf(origin));
    }
    return [...out].filter((h) => h !== "");
  }

  /** The origin's RTT estimate: the smallest recent connect time (queueing only ever adds to one); null if unknown. */
  rttMs(origin: string): number | null {
    const samples = this.byOrigin.get(origin);
    if (!samples) return null;
    const fresh = samples.filter((s) => this.now() - s.at <= this.options.maxAgeMs);
    if (fresh.length === 0) {
      this.byOrigin.delete(origin);
      return null;
    }
    return Math.min(...fresh.map((s) => s.ms));
  }

  /** The smallest RTT estimate of any origin on `hostname` (any scheme or port: one machine, one network path);
   * null if none is known. */
  hostRttMs(hostname: string): number | null {
    let best: number | null = null;
    for (const origin of [...this.byOrigin.keys()]) {
      if (hostOf(origin) !== hostname) continue;
      const rtt = this.rttMs(origin);
      if (rtt !== null && (best === null || rtt < best)) best = rtt;
    }
    return best;
  }
}

/** The host name of a URL or origin ("" if it is none). */
export function hostOf(origin: string): string {
  try {
    return new URL(origin).hostname;
  } catch {
    return "";
  }
}
