// Which handshake the helper's preconnect for a page asks for, and when a held one should go on. Pure, with an
// injected clock.
//
// Theory: at navigation the helper connects to the page's origin, so the page's first batch finds a connection and
// the origin's round trip is known before its subresources come (the speed probe). In Chromium's debugger mode a
// request to an origin the browser reaches over HTTP/2 or HTTP/3 is left to the browser (browser-multiplexed.ts):
// the helper's TLS handshake and h2 preface to such an origin then carry nothing, and were all that lanefetch added
// to a page's uplink (real pages over h2 on `sat`: 1.3 kB of 14 kB, ON 1.13–1.16 × OFF on the smallest pages). So
// for an https page the preconnect asks for `tcp`: one TCP connection (its connect time is the round trip), its
// TLS handshake held by the helper until a request needs it. When the browser's first response from that origin
// (its document) says HTTP/1.1, the helper's connections will carry the page: a `full` preconnect then lets the
// handshake go on and opens the others, a round trip or more before the page's first batch. A connection ahead
// of any page (a site just turned on, no tab showing it) is `tcp` too: one connection to an https origin, a
// round-trip probe; a plain-http origin gets every connection for a page or where the site's earlier loads used it
// (its requests all come to the helper, so a learned page's flight, which starts with the navigation, finds them
// open), and one connection, the probe, ahead of any page otherwise (pool_plan.preconnect_plan).
// Firefox fetches every request of an enabled site through the helper: its preconnects stay `full`.
import type { Preconnect } from "../generated/protocol.js";
import { originOf } from "./origin-of.js";
import { setNewest } from "../bounded-map.js";

export type Handshake = NonNullable<Preconnect["handshake"]>;

/** How long a held handshake waits for the browser's first response of its origin (a page's document comes
 * within seconds, even on a satellite link); the helper closes an unused connection itself after 30 s. */
export const HELD_FOR_MS = 30_000;
const MAX_HELD = 64;

/**
 * The handshake to ask for: `navigation` false for a connection ahead of any page; `multiplexedToBrowser`: requests
 * to origins the browser reaches over h2/h3 are left to it (Chromium).
 */
export function handshakeFor(url: string, navigation: boolean, multiplexedToBrowser: boolean): Handshake {
  if (!navigation) return "tcp";
  return multiplexedToBrowser && url.startsWith("https:") ? "tcp" : "full";
}

/** Origins whose preconnect held its TLS handshake, with the page to name when it should go on. */
export class HeldHandshakes<P> {
  private readonly held = new Map<string, { at: number; page: P }>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** A `tcp` preconnect was sent for a page of url's origin. */
  hold(url: string, page: P): void {
    const origin = originOf(url);
    if (origin === "" || origin === "null") return;
    setNewest(this.held, origin, { at: this.now(), page }, MAX_HELD);
  }

  /**
   * A response to the browser's own request came from the network over `protocol`: the page to send a `full`
   * preconnect for (HTTP/1.1: the helper will carry the origin's requests), once; null otherwise (h2/h3: the browser
   * keeps them, the held connection is never needed).
   */
  answered(url: string, protocol: string): P | null {
    const origin = originOf(url);
    const h = this.held.get(origin);
    if (h === undefined) return null;
    this.held.delete(origin);
    if (this.now() - h.at > HELD_FOR_MS) return null;
    return protocol === "http/1.1" ? h.page : null;
  }
}
