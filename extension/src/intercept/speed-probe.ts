// Asking a host's speed before its page is routed, in both browsers: the helper connects to the page's origin (the
// preconnect the page gets anyway, sent earlier) and the caller waits briefly for its connect time (origin_rtt, a
// HostSpeed sample). A fast host's document then goes to the browser at once — Firefox: direct instead of through the
// helper's proxy (a listener, the 407 round, the helper's fetch); Chromium: the gate lets the tab through unattached
// instead of attaching the debugger only to learn the host should have been left alone.
//
// Theory of operation. The wait ends as soon as its answer is decided, never on a fixed timer alone:
// - any sample of the host (fast or not) decides it at once;
// - right after the preconnect the helper is pinged: its pong says it has taken the preconnect (it handles messages
//   in order), i.e. the connect has started. A host below the threshold (STEP_ASIDE_BELOW_RTT_MS) then answers within
//   the threshold plus the report's way back (PROBE_SAMPLE_SLACK_MS) of that pong; past that, without a sample, the
//   host is known not fast and the wait ends (on an idle machine ~ threshold + 20 ms instead of the whole wait);
// - the browser's wait (PROBE_WAIT_MS) stays the bound: no pong in time (a busy helper) costs no more than before.
//   Firefox's (100 ms) is below the threshold plus any pong, so only Chromium asks for one.
// A slow host's document finds the helper's connection already on its way. The decision (probeEnd) is pure; the
// class is the thin shell (timer, listener, the ping's promise) around it, with the clock injected.
import { hostOf, type HostSpeed } from "./host-speed.js";

/** How long each browser waits for the connect time at most: a near host's plus the native port both ways on a busy
 * machine (a host whose connect time comes later is not fast enough to step aside for in Firefox; its first
 * document goes through the helper and later samples decide). Chromium's is longer: right after the helper's start or under load its answer takes ~10–20 ms more, and
 * the gate's alternative (attaching) costs a fast page more than the wait. */
export const PROBE_WAIT_MS = { firefox: 100, chromium: 150 } as const;

/** After the helper's pong: the connect's start (the connection task's first turn, the address) and its report's way
 * back over the native port, beyond the connect time itself. */
export const PROBE_SAMPLE_SLACK_MS = 15;

/**
 * When a probe with no sample yet is decided "not fast" (epoch ms): `waitMs` after it was sent, or earlier once the
 * helper acknowledged the preconnect (`ackedAt`): a connect time below `thresholdMs` would have come by then.
 */
export function probeEnd(sentAt: number, ackedAt: number | null, waitMs: number, thresholdMs: number): number {
  const bound = sentAt + waitMs;
  return ackedAt === null ? bound : Math.min(bound, ackedAt + thresholdMs + PROBE_SAMPLE_SLACK_MS);
}

/** P: what the helper needs to know of the page (each browser's own description of it). */
export class SpeedProbe<P> {
  constructor(
    private readonly speed: HostSpeed,
    /** Ask the helper to connect to url's origin for this page; false if it cannot be asked (port down). */
    private readonly preconnect: (url: string, page: P) => boolean,
    private readonly waitMs: number,
    /** Resolves true once the helper has taken every message sent before (a ping's pong); false: no answer. */
    private readonly acknowledged: () => Promise<boolean> = () => Promise.resolve(false),
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Null when there is nothing to wait for: the host's verdict is known (or the threshold is off), `url` is not
   * one, or the helper could not be asked. Else resolves when a sample of url's host arrives, or once the host is
   * known not fast (probeEnd). */
  probe(url: string, page: P): Promise<void> | null {
    const host = hostOf(url);
    const threshold = this.speed.threshold;
    if (host === "" || threshold === null || this.speed.verdict(url).state !== "unknown") return null;
    if (!this.preconnect(url, page)) return null;
    const sentAt = this.now();
    return new Promise((resolve) => {
      let finished = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        stop();
        resolve();
      };
      const until = (end: number): void => {
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, end - this.now()));
      };
      const stop = this.speed.onVerdict((h) => {
        if (h === host) done();
      });
      until(probeEnd(sentAt, null, this.waitMs, threshold));
      void this.acknowledged().then((ok) => {
        if (ok && !finished) until(probeEnd(sentAt, this.now(), this.waitMs, threshold));
      });
    });
  }
}
