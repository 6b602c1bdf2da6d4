// Chromium: origins the browser itself reaches over a multiplexed connection (HTTP/2 or HTTP/3), so that their
// requests are left to it.
//
// Theory: over HTTP/1.1 the helper wins by pipelining where the browser asks one request per connection at a time.
// Over h2 the browser already sends every request of a wave at once on one connection, and that connection is warm:
// it carried the page's document, so the server's congestion window has grown with it. The helper's connection to
// the same origin (opened by its preconnect at navigation) has carried nothing and starts again from the initial
// window (IW10). Measured on `sat` (600 ms RTT, nginx over h2, real-pages): the first wave of subresources went out
// at the same moment in ON and OFF, the browser's warm connection then delivered 86 packets in the first round trip,
// the helper's fresh one 10, then 27: one or two round trips more per page, ON 0.86–0.94× OFF. The helper has nothing
// to add there that would pay for that (no pipelining to do, nothing learned on a first visit), so requests to an
// origin whose document — or any response — just came to the browser over h2/h3 go to the browser. Pure: the caller
// feeds what Network.responseReceived says, with an injected clock.

import { originOf } from "./origin-of.js";
import { setNewest } from "../bounded-map.js";

/** How long a sighting counts: the browser keeps an idle h2 connection open for minutes, the page's later requests
 * come within seconds; renewed by every response that comes over a multiplexed connection. */
export const MULTIPLEXED_FOR_MS = 60_000;
const MAX_ORIGINS = 512;

/** Is this protocol (Network.Response.protocol) a multiplexed one: "h2", "h3", "h3-29"… (not "http/1.1", "data"…). */
export function multiplexes(protocol: string | null | undefined): boolean {
  return protocol === "h2" || (protocol ?? "").startsWith("h3");
}

export class BrowserMultiplexed {
  /** origin → when it was last seen answering the browser over a multiplexed connection (least recent first). */
  private readonly seen = new Map<string, { at: number; protocol: string }>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** A response to the browser's own request came from the network over `protocol`. */
  observe(url: string, protocol: string): void {
    const origin = originOf(url);
    if (origin === "" || origin === "null" || !multiplexes(protocol)) return;
    setNewest(this.seen, origin, { at: this.now(), protocol }, MAX_ORIGINS);
  }

  /** Why a request to `url` goes to the browser (a pass's detail), or null: the browser has no fresh multiplexed
   * connection to its origin that we know of. */
  detail(url: string): string | null {
    const origin = originOf(url);
    const s = this.seen.get(origin);
    if (s === undefined) return null;
    if (this.now() - s.at > MULTIPLEXED_FOR_MS) {
      this.seen.delete(origin);
      return null;
    }
    return `the browser has a warm ${s.protocol === "h2" ? "HTTP/2" : "HTTP/3"} connection to ${origin}`;
  }
}
