// What the debugger session of an accelerated tab listens to. A session with CDP Fetch enabled makes Chromium hand
// every request of the page through the interception path, and Network.enable sends ~6 events per request to this
// worker; on a fast link both cost more than lanefetch can save (measured in `npm run bench --
// chromium-debugger-cost`: a session with no domain costs nothing measurable, Fetch or Network each up to ~1.5× the
// load time on `lan` under load). So while the tab's top-level origin is known fast (step-aside.ts), the tab stays
// attached (no flicker of the debugging bar) but "browser": Fetch off at once, Network off once that page loaded,
// and the browser's requests are listed from chrome.webRequest events instead. A navigation to an origin not known
// fast turns both back on before the new page asks for its subresources. Pure: the caller runs the commands.

import { hostOf } from "./origin-latency.js";

export type TabCommand = "fetch_on" | "fetch_off" | "network_on" | "network_off" | "watch_on" | "watch_off";

interface TabState {
  /** The host of the top-level page the tab shows or navigates to (a round trip belongs to a host, not a port). */
  host: string;
  /** The browser fetches the tab's requests itself: Fetch is off. */
  browser: boolean;
  network: boolean;
  /** chrome.webRequest listeners list the tab's requests (while Network is off). */
  watch: boolean;
}


export class TabModes {
  private readonly tabs = new Map<number, TabState>();

  /** The session was attached with Fetch and Network on (DebuggerSessions.attach). */
  attached(tabId: number, url: string): void {
    this.tabs.set(tabId, { host: hostOf(url), browser: false, network: true, watch: false });
  }

  forget(tabId: number): void {
    this.tabs.delete(tabId);
  }

  /** True while the browser fetches the tab's requests itself (nothing is paused). */
  isBrowser(tabId: number): boolean {
    return this.tabs.get(tabId)?.browser === true;
  }

  /** Whether the tab's requests are listed from webRequest events (Network is off). */
  isWatched(tabId: number): boolean {
    return this.tabs.get(tabId)?.watch === true;
  }

  host(tabId: number): string | undefined {
    return this.tabs.get(tabId)?.host;
  }

  /** Attached tabs that show a page of `host`. */
  tabsOf(host: string): number[] {
    return [...this.tabs].filter(([, s]) => s.host === host).map(([id]) => id);
  }

  /** The tab starts a top-level navigation to `url`; `fast`: its host is known fast. */
  navigating(tabId: number, url: string, fast: boolean): TabCommand[] {
    const s = this.tabs.get(tabId);
    if (!s) return [];
    s.host = hostOf(url);
    return fast ? this.toBrowser(s) : this.toIntercepting(s);
  }

  /** The host the tab shows was just measured fast (its document's timing, the helper's preconnect). */
  originFast(tabId: number): TabCommand[] {
    const s = this.tabs.get(tabId);
    return s ? this.toBrowser(s) : [];
  }

  /** The tab's top-level page finished loading: a browser tab lists the next pages' requests from webRequest and
   * then drops Network — in that order, so that the two lists overlap (the caller drops what both list) instead of
   * leaving a gap that a quick next navigation's requests would fall into unlisted. */
  loaded(tabId: number): TabCommand[] {
    const s = this.tabs.get(tabId);
    if (!s?.browser || !s.network) return [];
    s.network = false;
    s.watch = true;
    return ["watch_on", "network_off"];
  }

  private toBrowser(s: TabState): TabCommand[] {
    if (s.browser) return [];
    s.browser = true;
    return ["fetch_off"];
  }

  private toIntercepting(s: TabState): TabCommand[] {
    // Fetch first: the new page's subresources must find it on (Network.enable took ~0.25 s under load).
    const out: TabCommand[] = [];
    if (s.watch) out.push("watch_off");
    if (s.browser) out.push("fetch_on");
    if (!s.network) out.push("network_on");
    s.browser = false;
    s.network = true;
    s.watch = false;
    return out;
  }
}
