// Chromium: which paused requests are an embedded site's (a frame cross-site to the top-level page, or anything
// inside one), and that frame's site. The browser keys its HTTP cache by the top-level site *and* the frame's site
// (its network isolation key), so a site embedded in a page cannot tell from the cache what the page loaded, nor
// the page what the embedded site did; the helper's cache and learned state, keyed by the top-level site alone,
// would join them. Such requests carry `frame_site` (protocol Page), and the helper keeps them apart.
//
// What CDP tells, measured in Debian's Chromium: an out-of-process iframe (every cross-site frame, under site
// isolation) is a child target, auto-attached with an empty URL; its document's request was paused before, in the
// parent's session, with a frameId equal to the child's targetId. So the frame's site is the site of the newest
// document request paused for that frame id. Requests of the tab's own session are the top-level page's or its
// same-site frames' (one process holds one site), except a frame's document request to another site: the embedded
// frame's navigation itself. A child of an embedded session (a frame inside it, its service worker) is embedded
// too, whatever its own site (A inside B inside A is still keyed apart from A's own requests).
//
// Where the frame's site was not seen (its document request was not paused for us), its requests get a partition of
// their own session ("opaque:" + session id): never the page's, never another embedded frame's.
//
// The same records say which address space a request is judged by (address-space.ts; the helper's own check is on
// the resolved addresses, address_policy.py). Chromium's Private Network Access judges a request by the address space
// of the document that makes it, so a public frame inside a loopback page may not reach this machine, where the
// top-level page's space alone would let the helper do it for the frame. A request's space is the more public of the
// page's and its frame's own document's: the frame's is the space of the documents paused for its frame id (the most
// public of them while the frame lives: a frame navigating away runs its old document until the new one commits,
// and no commit is heard per frame), else its embedded session's (its own document's when the child was attached;
// public for a cross-site frame whose document was not seen; a worker's, its parent session's), else the page's.
import { addressSpaceOfUrl, morePublic, type AddressSpace } from "../sites/address-space.js";
import { schemefulSite } from "../sites/site-rule.js";
import { setNewest } from "../bounded-map.js";

/** Frame ids whose documents are remembered (a page's frames; a bound against pages that make frames forever). */
const DOCUMENTS_KEPT = 500;

interface Embedded {
  tabId: number;
  site: string;
  /** The address space its requests are judged by where their own frame's document was not seen. */
  space: AddressSpace;
}

export interface PausedSource {
  /** The child session the request was paused in; undefined for the tab's own session. */
  sessionId: string | undefined;
  frameId: string;
  resourceType: string;
  url: string;
}

export class EmbeddedFrames {
  /** frameId → site of its newest document request. */
  private readonly documents = new Map<string, string>();
  /** frameId → the most public address space of its documents (paused for it while it lives). */
  private readonly spaces = new Map<string, AddressSpace>();
  /** child sessionId → embedded frame (only embedded sessions are kept). */
  private readonly sessions = new Map<string, Embedded>();

  /** A child target was auto-attached from `parentSessionId` (undefined: the tab's own session). */
  attached(tabId: number, sessionId: string, type: string, targetId: string, url: string, parentSessionId: string | undefined): void {
    const parent = parentSessionId === undefined ? undefined : this.sessions.get(parentSessionId);
    // An iframe target is out of process: cross-site to its parent, so embedded wherever it sits. A worker is
    // embedded where its parent is.
    if (type !== "iframe" && parent === undefined) return;
    const site = this.documents.get(targetId) ?? schemefulSite(url) ?? (type === "iframe" ? undefined : parent?.site);
    // A frame whose document was not seen is judged public: nothing says it may reach more.
    const space = this.spaces.get(targetId) ?? addressSpaceOfUrl(url) ?? (type === "iframe" ? undefined : parent?.space);
    this.sessions.set(sessionId, { tabId, site: site ?? `opaque:${sessionId}`, space: space ?? "public" });
  }

  detached(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  tabGone(tabId: number): void {
    for (const [id, e] of this.sessions) if (e.tabId === tabId) this.sessions.delete(id);
  }

  /** Every paused request, as it is heard (before the child target its frame may become is attached): a frame's
   * document names the frame's site. */
  paused(source: PausedSource, mainFrameId: string | undefined): void {
    if (source.resourceType !== "Document" || source.frameId === mainFrameId) return;
    const own = schemefulSite(source.url);
    if (own !== null) this.remember(source.frameId, own);
    const space = addressSpaceOfUrl(source.url);
    if (space !== null) {
      const before = this.spaces.get(source.frameId);
      setNewest(this.spaces, source.frameId, before === undefined ? space : morePublic(before, space), DOCUMENTS_KEPT);
    }
  }

  /** The address space a paused request is judged by: the more public of the page's (`pageSpace`, the space of the
   * page it is attributed to) and its frame's own document's. The main frame's requests are the page's. */
  addressSpace(source: PausedSource, mainFrameId: string | undefined, pageSpace: AddressSpace): AddressSpace {
    const own = source.frameId === mainFrameId ? undefined : this.spaces.get(source.frameId);
    const embedded = source.sessionId === undefined ? undefined : this.sessions.get(source.sessionId);
    const frame = own ?? embedded?.space;
    return frame === undefined ? pageSpace : morePublic(pageSpace, frame);
  }

  /** The frame site a paused request carries to the helper, or null for the top-level page's own requests.
   * `mainFrameId`: the tab's main frame; `topSite`: the site of the page the request is attributed to. */
  frameSite(source: PausedSource, mainFrameId: string | undefined, topSite: string): string | null {
    const isDocument = source.resourceType === "Document";
    const own = isDocument ? schemefulSite(source.url) : null;
    const embedded = source.sessionId === undefined ? undefined : this.sessions.get(source.sessionId);
    if (embedded !== undefined) {
      // A frame's document inside the embedded one is keyed by its own site; the rest by the embedded frame's
      return isDocument && own !== null ? own : embedded.site;
    }
    if (source.sessionId !== undefined) return null; // the top-level site's own worker
    if (isDocument && source.frameId !== mainFrameId && own !== null && own !== topSite) return own;
    return null;
  }

  private remember(frameId: string, site: string): void {
    setNewest(this.documents, frameId, site, DOCUMENTS_KEPT);
  }
}
