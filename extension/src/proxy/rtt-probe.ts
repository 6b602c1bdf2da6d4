// Before an enabled site's document of an origin whose round trip is unknown is routed, proxy mode asks the helper to
// connect to that origin (preconnect, in the pool the page's requests will use) and waits briefly for the connect
// time (origin_rtt). A fast origin's document then goes direct at once (step-aside) instead of through the helper's
// proxy (a listener, Firefox's 407 round, the helper's fetch) only to learn the RTT; a slow origin's document finds
// the helper's connection already on its way, so the wait costs it nothing.
import type { Page } from "../generated/protocol.js";

/** At most this long (ms) a document waits for its origin's connect time: a LAN origin's (< 15 ms) plus the native
 * port both ways on a busy machine. The wait ends with the connect time, fast or not, so only an origin whose
 * connect takes longer waits this long, and then the helper's connection is still on its way: generous costs little. */
export const PROBE_WAIT_MS = 100;

export class RttProbe {
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(
    /** Ask the helper to connect to url's origin for this page; false if it cannot be asked (port down). */
    private readonly preconnect: (url: string, page: Page) => boolean,
    private readonly waitMs = PROBE_WAIT_MS,
  ) {}

  /** The helper reported a connect time to `origin`: whoever waits for it goes on. */
  observed(origin: string): void {
    const waiters = this.waiting.get(origin);
    this.waiting.delete(origin);
    for (const done of waiters ?? []) done();
  }

  /** Connect to url's origin; resolves once its connect time arrived, or after the wait (at once if not asked). */
  probe(url: string, page: Page): Promise<void> {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      return Promise.resolve();
    }
    if (!this.preconnect(url, page)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const left = (this.waiting.get(origin) ?? []).filter((d) => d !== done);
        if (left.length > 0) this.waiting.set(origin, left);
        else this.waiting.delete(origin);
        resolve();
      }, this.waitMs);
      this.waiting.set(origin, [...(this.waiting.get(origin) ?? []), done]);
    });
  }
}
