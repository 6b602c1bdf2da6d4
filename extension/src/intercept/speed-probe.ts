// Asking a host's speed before its page is routed, in both browsers: the helper connects to the page's origin (the
// preconnect the page gets anyway, sent earlier) and the caller waits briefly for its connect time (origin_rtt, a
// HostSpeed sample). A fast host's document then goes to the browser at once — Firefox: direct instead of through the
// helper's proxy (a listener, the 407 round, the helper's fetch); Chromium: the gate lets the tab through unattached
// instead of attaching the debugger only to learn the host should have been left alone. A slow host's document finds
// the helper's connection already on its way, so the wait costs it nothing, and any sample of the host (fast or not)
// ends the wait at once.
import { hostOf, type HostSpeed } from "./host-speed.js";

/** How long each browser waits for the connect time: a near host's plus the native port both ways on a busy
 * machine (a host whose connect time comes later is not fast enough to step aside for in Firefox; its first
 * document goes through the helper and later samples decide). Chromium's is longer: right after the helper's start or under load its answer takes ~10–20 ms more, and
 * the gate's alternative (attaching) costs a fast page more than the wait. */
export const PROBE_WAIT_MS = { firefox: 100, chromium: 150 } as const;

/** P: what the helper needs to know of the page (each browser's own description of it). */
export class SpeedProbe<P> {
  constructor(
    private readonly speed: HostSpeed,
    /** Ask the helper to connect to url's origin for this page; false if it cannot be asked (port down). */
    private readonly preconnect: (url: string, page: P) => boolean,
    private readonly waitMs: number,
  ) {}

  /** Null when there is nothing to wait for: the host's verdict is known (or the threshold is off), `url` is not
   * one, or the helper could not be asked. Else resolves when a sample of url's host arrives, or after the wait. */
  probe(url: string, page: P): Promise<void> | null {
    const host = hostOf(url);
    if (host === "" || this.speed.verdict(url).state !== "unknown") return null;
    if (!this.preconnect(url, page)) return null;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        stop();
        resolve();
      };
      const stop = this.speed.onVerdict((h) => {
        if (h === host) done();
      });
      const timer = setTimeout(done, this.waitMs);
    });
  }
}
