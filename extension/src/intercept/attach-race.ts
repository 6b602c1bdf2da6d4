// Chromium: whether a navigation can go on while its tab is being attached, instead of being blocked by the gate
// (navigation-gate.ts) and navigated again once the debugger session is up. Pure: chromium-main.ts keeps the durations
// (in storage, so that a browser started again knows them) and tells the tab policy which hosts qualify.
//
// Theory of operation. The gate's block costs a navigation the whole attach (0.1–0.23 s measured on a 2-core
// machine: `tab_trace` in the real-pages breakdown) before its document is even asked for. It exists so that not one
// subresource escapes interception. But a subresource can only be asked for once the document's first bytes are
// back, at least one round trip of the host after the navigation starts (two on a new connection). Where that round
// trip is well above what an attach takes here, the navigation goes on unblocked, the attach begins at its start
// (tab-policy.ts, "navigation_started"), and Fetch is on before the page can ask for anything: the document is
// the browser's own (as without lanefetch), its subresources are lanefetch's, and the attach costs nothing.
// An attach's duration here is from its start until Fetch.enable was answered (what the race must beat; a racing
// attach leaves Network.enable to the page's load: debugger-sessions.ts says why).
// The margin is the slowest of the recent attaches times RACE_FACTOR; with none measured yet (a new profile), an
// attach is taken to cost ATTACH_PRIOR_MS, ten times what one took here. Losing the race costs no correctness: a subresource asked before Fetch is on
// is fetched by the browser itself (and a page flight's copy of it is wasted bytes), which is why the margin is wide.
// A racing page's document is the browser's, so the helper cannot read it for what it names (a first visit's
// discovery: apache-rewrite's first visit on `sat` fell from 1.28× to 1.05× racing). The race's preconnect asks the
// helper whether the page has a learned flight (flight_plan); without one the tab is navigated again once attached,
// as after the gate's block but ~0.1 s sooner, unless the answer came too late (tooLateToRenavigate).

/** Whether the helper's word on a racing navigation's flight came too late to navigate again (ms since the
 * navigation started, the host's round trip): past half a round trip a request on a warm browser connection may be at
 * the server, and past one a cold connection's is on its way; asking again then would fetch the document twice. */
export function tooLateToRenavigate(elapsedMs: number, rttMs: number | null): boolean {
  return rttMs === null || elapsedMs > rttMs / 2;
}

/** The storage key (chrome.storage.local) of the recent attach durations. */
export const ATTACH_DURATIONS_KEY = "attachDurationsMs";
/** Recent attach durations kept (the slowest of them decides). */
export const ATTACH_SAMPLES = 8;
/** A host's round trip must be at least this many times the slowest recent attach. */
export const RACE_FACTOR = 1.5;
/** What an attach is taken to cost before one was measured (ms): ten times the 10–16 ms after which Fetch was on in
 * the benchmarks' racing attaches (a 2-core machine, the browser and the helper just started). With it a host of
 * 225 ms or more races the first attach (`sat`'s 600 ms and `wcdma`'s 400 ms do). */
export const ATTACH_PRIOR_MS = 150;

/** Recent attach durations (ms), newest last, at most ATTACH_SAMPLES. */
export function withAttach(recent: readonly number[], ms: number): number[] {
  if (!Number.isFinite(ms) || ms < 0) return [...recent];
  return [...recent, ms].slice(-ATTACH_SAMPLES);
}

/** What an attach is taken to cost here: the slowest recent one (ATTACH_PRIOR_MS while none was measured). */
export function attachEstimate(recent: readonly number[]): number {
  const valid = recent.filter((ms) => Number.isFinite(ms) && ms >= 0);
  return valid.length ? Math.max(...valid) : ATTACH_PRIOR_MS;
}

/** Whether a navigation to a host of this round trip (ms) can go on while its tab is attached. A racing tab's
 * document cannot be streamed to the helper (its Network domain waits for the page's load), so a private page's
 * first navigation in a tab is not read (document-stream.ts); gating such pages instead so that it is was measured
 * and not kept: the gate and the Network domain on during the load cost rust-book-print 0.94–0.96× on `sat`, where
 * racing is 1.00× (real-pages, session 36; docs/performance.md). */
export function racesAttach(rttMs: number | null, recent: readonly number[]): boolean {
  return rttMs !== null && rttMs >= RACE_FACTOR * attachEstimate(recent);
}

/** The durations read back from storage (anything else is ignored). */
export function storedAttaches(value: unknown): number[] {
  if (!Array.isArray(value)) return [];
  return value.filter((x): x is number => typeof x === "number" && Number.isFinite(x) && x >= 0).slice(-ATTACH_SAMPLES);
}
