// Chromium: a hard reload (Ctrl+Shift+R, `Page.reload({ignoreCache: true})`) asks every request of the reloaded
// page past every cache. The helper has a cache of its own, and reads a request's intent from its fields alone
// (`Cache-Control: no-cache` / `Pragma: no-cache`: fetched in full, the stored copy dropped). But Chromium adds those
// fields in its network stack, from the load's cache flags, after the Fetch domain paused the request: the paused
// document and subresources of a hard reload look like a plain visit's (measured, Chromium 156: the server saw
// both fields on the document and its image, the paused requests neither). Left so, the helper answers them from its
// cache, where the browser would have gone to the server: weaker than the browser.
//
// Theory of operation. What says a load bypasses the cache is the navigation itself: the Page domain's
// frameStartedNavigating gives its `navigationType` ("reloadBypassingCache"; a plain reload, F5, is "reload", which
// Chromium answers with a validation of the document alone, its subresources as usual) and its `loaderId`, which is
// the network request id of the load's document, so the network id of its paused document and the loaderId of every
// request that document makes (request-page.ts). It comes before the document is paused (the navigation starts
// before its request; measured). Neither the paused document (no such fields), Network.requestWillBeSent (no field
// for it) nor requestWillBeSentExtraInfo (the fields as sent, so only for a document the browser sends itself, and
// after it went) can tell it for a document the helper fetches.
// A request is the bypassing load's when
// - it is the top-level document of such a navigation (its network id is the loader), or
// - the tab's newest top-level load is such a navigation and the request is not known to be another document's: a
//   main-frame request whose loader was heard and is not the load's belongs to the page being left. Every other one
//   (its loader not heard yet, a frame's, a child session's: Blink bypasses the cache for a frame whose ancestor is
//   reloaded bypassing it) is taken as the load's: a request wrongly marked costs a full fetch, never a wrong answer.
// Such a request gets `Cache-Control: no-cache` and `Pragma: no-cache` (replacing what it had, as Chromium's network
// stack sets them) before it goes to the helper: what the server sees is then what it sees from Chromium itself.
// Pure: chromium-main.ts feeds it the Page events and asks it per paused request.
import { setNewest } from "../bounded-map.js";
import type { LoaderSignal } from "./request-page.js";

/** CDP Page.frameStartedNavigating's navigationType of a hard reload. */
export const BYPASSING_NAVIGATION = "reloadBypassingCache";

/** The fields Chromium's network stack adds to every request of a load that bypasses the cache. */
export const BYPASS_FIELDS: readonly (readonly [string, string])[] = [["Cache-Control", "no-cache"], ["Pragma", "no-cache"]];

/** A paused request, as far as this asks. */
export interface BypassQuery {
  /** The tab's top-level document (its own session, its main frame). */
  topDocument: boolean;
  /** Its browser network request id (the loader of the load, for a top-level document). */
  networkId: string | undefined;
  /** Made in the tab's main frame, in its own session. */
  mainFrame: boolean;
  loader: LoaderSignal;
}

/** The loads (by loaderId) whose navigation bypasses the cache, of the newest `limit` navigations heard. */
export class CacheBypassLoads {
  /** "tabId loaderId" → whether that navigation bypasses the cache. */
  private readonly loads = new Map<string, boolean>();

  constructor(private readonly limit = 500) {}

  /** Page.frameStartedNavigating heard in a tab's own session. */
  navigationStarted(tabId: number, loaderId: string, navigationType: string): void {
    if (loaderId === "") return;
    setNewest(this.loads, `${tabId} ${loaderId}`, navigationType === BYPASSING_NAVIGATION, this.limit);
  }

  bypasses(tabId: number, loaderId: string | null | undefined): boolean {
    return loaderId !== null && loaderId !== undefined && this.loads.get(`${tabId} ${loaderId}`) === true;
  }

  forgetTab(tabId: number): void {
    const prefix = `${tabId} `;
    for (const key of [...this.loads.keys()]) if (key.startsWith(prefix)) this.loads.delete(key);
  }

  /** Whether `request`, paused in `tabId` whose newest top-level load has `newestLoader`, goes past the cache. */
  requestBypasses(tabId: number, request: BypassQuery, newestLoader: string | null | undefined): boolean {
    if (request.topDocument) return this.bypasses(tabId, request.networkId);
    if (!this.bypasses(tabId, newestLoader)) return false;
    // A main-frame request heard to come from another document is that document's (the page being left).
    return !(request.mainFrame && request.loader.kind === "heard" && request.loader.loaderId !== "" && request.loader.loaderId !== newestLoader);
  }
}

/** `headers` with Cache-Control and Pragma saying no-cache, in place of any they had. */
export function withBypassFields(headers: readonly (readonly [string, string])[]): [string, string][] {
  const names = new Set(BYPASS_FIELDS.map(([n]) => n.toLowerCase()));
  return [...headers.filter(([n]) => !names.has(n.toLowerCase())).map(([n, v]): [string, string] => [n, v]),
    ...BYPASS_FIELDS.map(([n, v]): [string, string] => [n, v])];
}
