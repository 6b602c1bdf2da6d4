// Where lanefetch cannot win, it steps aside: the browser fetches the request itself (continueRequest).
// Pipelining saves round trips, and each request lanefetch takes costs a few ms of its own (batching window, the
// native port both ways, the helper, one fulfill). When the origin's round trip is below that, there is nothing
// to save: measured in real Chromium on the `lan` link (RTT < 1 ms), ON was slower than OFF for every page shape.
// The threshold comes from tests/bench (seed000-pages and the RTT sweep in README "Performance").

export const STEP_ASIDE_BELOW_RTT_MS = 15;

/** Whether a request to an origin with this RTT estimate goes to the browser; unknown RTT: lanefetch takes it. */
export function stepsAside(rttMs: number | null, belowMs: number | null = STEP_ASIDE_BELOW_RTT_MS): boolean {
  return belowMs !== null && rttMs !== null && rttMs < belowMs;
}
