// Where lanefetch cannot win, it steps aside: the browser fetches the request itself (continueRequest).
// Pipelining saves round trips, and each request lanefetch takes costs a few ms of its own (batching window, the
// native port both ways, the helper, one fulfill). When the origin's round trip is below that, there is nothing
// to save: measured in real Chromium on the `lan` link (RTT < 1 ms), ON was slower than OFF for every page shape.
// The threshold comes from tests/bench (seed000-pages and the RTT sweep in docs/performance.md).
import { hostOf, type OriginLatency } from "./origin-latency.js";

export const STEP_ASIDE_BELOW_RTT_MS = 15;

/** Whether a request to an origin with this RTT estimate goes to the browser; unknown RTT: lanefetch takes it. */
export function stepsAside(rttMs: number | null, belowMs: number | null = STEP_ASIDE_BELOW_RTT_MS): boolean {
  return belowMs !== null && rttMs !== null && rttMs < belowMs;
}

/** storage.local key: true = take requests even where the link is so fast that lanefetch cannot win (tests). */
export const ACCELERATE_FAST_LINKS_KEY = "accelerateFastLinks";

/** The threshold the stored settings ask for (null: never step aside). */
export function stepAsideThreshold(settings: Record<string, unknown>): number | null {
  return settings[ACCELERATE_FAST_LINKS_KEY] === true ? null : STEP_ASIDE_BELOW_RTT_MS;
}

/** Why a request to `url` goes to the browser ("round trip to … ~N ms", the pass's detail), or null: lanefetch
 * takes it. A round trip belongs to the host (any scheme or port: the same network path), so another port of a
 * host known fast needs no new measurement. The same rule in both backgrounds (Chromium's accelerator, Firefox's
 * proxy router). */
export function stepAsideDetail(latency: OriginLatency, url: string, belowMs: number | null): string | null {
  const host = hostOf(url);
  if (host === "") return null;
  const rtt = latency.hostRttMs(host);
  return stepsAside(rtt, belowMs) ? `round trip to ${host} ~${rtt?.toFixed(1) ?? "?"} ms` : null;
}
