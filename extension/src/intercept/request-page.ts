// Chromium: the top-level page a paused request belongs to. Its site decides whether lanefetch takes the request
// (pass-through-policy.ts: site_off) and its address space what the helper may reach for it.
//
// The tab's URL is what webNavigation.onCommitted said last, and Chromium defines no order between webNavigation's
// events and the network's (the webNavigation API's "Relation to webRequest events"; Fetch.requestPaused is the
// network's): a page's first subresources can be paused before its commit is heard, and a page being left can still
// ask for something after the next page's document was paused. Between a load's start (its document paused, or its
// navigation started) and its commit heard, a request may be either page's, so it is judged conservatively:
//
// - A request that names its document is that document's page. Fetch.requestPaused says only the frame (the same
//   across the main frame's documents), but its networkId is the request id of Network.requestWillBeSent, whose
//   loaderId is the requesting document's load, equal to the request id of that document's own navigation (the
//   networkId of its paused document). That event comes before or after the pause (measured: about half after, by
//   ~2 ms; never for a dedicated worker's requests), so this is used where heard. A main-frame request whose loader
//   is neither the newest load's nor the committed page's is an older document's (the about:blank an opener wrote
//   into, a page being left): no page, left to the browser.
// - Otherwise, the tab showing a web page, the request is taken only if both the shown page and the newest load are
//   on enabled sites (a tab on enabled A loading not-enabled B: B's first subresources are not the helper's).
// - A tab that showed no web page when the load began and heard no commit since (a new tab's about:blank or
//   chrome://newtab/, an extension page, a tab not seen yet) has only the newest load's page to take: its main frame's
//   requests are that page's, except one whose loader says otherwise; where the loader is expected (the tab's Network
//   domain is on) and not heard yet the caller waits for it a little, and without it the request is not taken. Where
//   no loader can be heard (Network deferred while a navigation raced the attach, no network id) a main-frame request
//   is the newest load's (an about:blank document's own request cannot be told apart there); a request of another
//   frame or session is not taken.

import { addressSpaceOfUrl, mayReach } from "../sites/address-space.js";
import { setNewest } from "../bounded-map.js";

export function isWebPage(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

/** The same document URL (fragments aside). */
export function samePage(a: string, b: string): boolean {
  return a.split("#")[0] === b.split("#")[0];
}

/** A top-level page load the tab's session began. */
export interface PageLoad {
  /** Its URL (its document's, after redirects). */
  url: string;
  /** The network request id of its paused document: the loaderId of every request that document makes. Null when
   * not known (a load begun at navigation start whose document was not paused, a document paused without one). */
  loader: string | null;
  /** How many commits the tab had heard when the load began. */
  commitsBefore: number;
}

/** What is known of a tab's pages when one of its requests is paused. */
export interface TabPages {
  /** The URL webNavigation.onCommitted gave last ("" none heard). */
  committedUrl: string;
  /** The loader of the committed page's document: the newest load's when the commit heard was that load's URL. */
  committedLoader: string | null;
  /** How many commits the tab has heard. */
  commits: number;
  /** The newest page load the tab's session began, if any. */
  newest: PageLoad | undefined;
}

/** What the Network domain said of the document that made the request. */
export type LoaderSignal =
  | { kind: "heard"; loaderId: string }
  /** Network.requestWillBeSent is expected (the tab's own session, Network on, a network id) and not heard yet. */
  | { kind: "pending" }
  /** Waited for, and not heard. */
  | { kind: "unheard" }
  /** None can come (Network deferred or off, a child session, no network id). */
  | { kind: "none" };

export interface PausedFrom {
  url: string;
  /** The tab's top-level document (its own session, its main frame, type Document). */
  topDocument: boolean;
  /** Made in the tab's main frame, in its own session (not an iframe, not a child target). */
  mainFrame: boolean;
  loader: LoaderSignal;
}

/** The page a request is judged by ("" none: a request of no site), or: wait for its loader, then ask again. */
export type RequestPage = { page: string } | { waitForLoader: true };

export const NO_PAGE = "";

/**
 * The page `request` belongs to, or that its loader is worth waiting for (then ask again with the loader heard or
 * "unheard", and the same `tab`). `siteOn`: whether a page's site is enabled (and active).
 */
export function requestPage(request: PausedFrom, tab: TabPages, siteOn: (pageUrl: string) => boolean): RequestPage {
  if (request.topDocument) return { page: request.url };
  const shown = tab.committedUrl;
  const load = tab.newest !== undefined && isWebPage(tab.newest.url) ? tab.newest : undefined;
  // No load begun by the session: the page shown; a tab not seen yet, the request's own URL.
  if (load === undefined) return { page: shown === "" ? request.url : shown };

  // The request names its document.
  const loaderId = request.mainFrame && request.loader.kind === "heard" && request.loader.loaderId !== "" ? request.loader.loaderId : null;
  if (loaderId !== null) {
    if (loaderId === load.loader) return { page: samePage(load.url, shown) ? shown : load.url };
    if (loaderId === tab.committedLoader) return { page: shown };
    // Neither known document's (every document it could be has a known loader): an older one's.
    if (load.loader !== null && (tab.committedLoader !== null || !isWebPage(shown))) return { page: NO_PAGE };
  }

  // The tab shows the newest load's page.
  if (samePage(load.url, shown)) return { page: shown };

  // Between the newest load's start and its commit heard: either page's. Taken only if both are enabled; then the
  // more public one's address space (what the helper may reach for it).
  if (isWebPage(shown)) {
    if (!siteOn(shown)) return { page: shown };
    if (!siteOn(load.url)) return { page: load.url };
    const [loadSpace, shownSpace] = [addressSpaceOfUrl(load.url) ?? "public", addressSpaceOfUrl(shown) ?? "public"];
    return { page: loadSpace !== shownSpace && mayReach(shownSpace, loadSpace) ? load.url : shown };
  }

  // The tab shows no web page. A commit heard since the load began (a data: URL, an about:blank after the page) is
  // newer than the load: its page, no site.
  if (load.commitsBefore !== tab.commits) return { page: shown };
  if (!siteOn(load.url)) return { page: load.url };
  // The newest load's, or the shown document's (an about:blank its opener wrote into)?
  if (!request.mainFrame) return { page: shown };
  switch (request.loader.kind) {
    case "pending":
      return { waitForLoader: true };
    case "none":
      return { page: load.url }; // cannot be told apart: the newest load's
    default:
      return { page: shown }; // unheard, or a loader that cannot be compared
  }
}

/** The loaderId of each request Network.requestWillBeSent announced in a tab's own session (the newest `limit`),
 * and waits for one not heard yet. */
export class RequestLoaders {
  private readonly loaders = new Map<string, string>();
  private readonly waiters = new Map<string, ((loaderId: string | undefined) => void)[]>();

  constructor(private readonly limit = 2000) {}

  heard(tabId: number, requestId: string, loaderId: string): void {
    const key = `${tabId} ${requestId}`;
    setNewest(this.loaders, key, loaderId, this.limit);
    const waiting = this.waiters.get(key);
    this.waiters.delete(key);
    for (const done of waiting ?? []) done(loaderId);
  }

  loaderOf(tabId: number, requestId: string): string | undefined {
    return this.loaders.get(`${tabId} ${requestId}`);
  }

  /** The request's loaderId once heard; undefined if not heard within `ms`. */
  when(tabId: number, requestId: string, ms: number): Promise<string | undefined> {
    const known = this.loaderOf(tabId, requestId);
    if (known !== undefined) return Promise.resolve(known);
    const key = `${tabId} ${requestId}`;
    return new Promise((resolve) => {
      const done = (loaderId: string | undefined): void => {
        clearTimeout(timer);
        resolve(loaderId);
      };
      const timer = setTimeout(() => {
        const rest = (this.waiters.get(key) ?? []).filter((w) => w !== done);
        if (rest.length > 0) this.waiters.set(key, rest);
        else this.waiters.delete(key);
        resolve(undefined);
      }, ms);
      this.waiters.set(key, [...(this.waiters.get(key) ?? []), done]);
    });
  }

  forgetTab(tabId: number): void {
    const prefix = `${tabId} `;
    for (const key of [...this.loaders.keys()]) if (key.startsWith(prefix)) this.loaders.delete(key);
  }
}
