// Chromium: which plain-http requests the helper may take without being weaker than the browser's HTTPS upgrade
// (HSTS). Pure, but for the bounded record of frames' documents (FrameDocuments).
//
// Theory of operation. Fetch.requestPaused fires for an http:// request before Chromium's network stack applies HSTS
// (a host preloaded, or one that sent Strict-Transport-Security earlier, is upgraded to https later, by an internal
// redirect), so a paused http:// request may be one the browser would only ever send over https. The extension
// cannot read the browser's HSTS store. What it can know: a document the browser itself loaded over plain http is on
// a host the browser did not upgrade (it would have, were that host HSTS), so that host's http requests are the
// browser's own kind. Hence a plain-http request is taken only if its hostname (ports aside: HSTS is per host) is:
// - that of the tab's top-level page, when that page's document is an http:// one (the browser loaded it: a paused
//   top-level http document is itself never taken, pass-through-policy.ts), or
// - that of the requesting frame's own document, when it is an http:// one (its newest document request paused for
//   that frame id, recorded here; a frame document upgraded by HSTS is paused again as https and replaces it), or
// - an IP address literal: HSTS is never noted for one (RFC 6797 section 8.1; Chromium drops the header there) and
//   none is preloaded.
// Every other http:// request (another host, an http subresource of an https page) is left to the browser untouched
// (`plain_http`), so its upgrade applies. An https:// request is not concerned.
import { setNewest } from "../bounded-map.js";

/** Hostname of an http:// URL, null for any other URL. */
function plainHttpHost(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === "http:" ? u.hostname : null;
  } catch {
    return null;
  }
}

function isIpLiteral(hostname: string): boolean {
  // URL's hostname is canonical: an IPv6 address in brackets, an IPv4 one as four decimal numbers.
  return hostname.startsWith("[") || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}

/** The hosts whose plain-http requests may be taken, from the URLs of the documents the browser loaded for the
 * requesting page and frame (the https ones and non-URLs add nothing). */
export function plainHttpHosts(documents: readonly (string | null | undefined)[]): string[] {
  const hosts = new Set<string>();
  for (const url of documents) {
    const host = url ? plainHttpHost(url) : null;
    if (host !== null && host !== "") hosts.add(host);
  }
  return [...hosts];
}

/** Whether `url` may be fetched by the helper as far as HSTS goes: not plain http, or plain http to a host the
 * browser itself reached over plain http for this page (`hosts`, from plainHttpHosts), or to an IP address. */
export function plainHttpAllowed(url: string, hosts: readonly string[]): boolean {
  const host = plainHttpHost(url);
  return host === null || isIpLiteral(host) || hosts.includes(host);
}

/** Frame ids whose documents are remembered (a bound against pages that make frames forever). */
const FRAMES_KEPT = 500;

/** The newest document URL paused for each frame other than the tab's main one (its own HSTS evidence). */
export class FrameDocuments {
  private readonly documents = new Map<string, string>();

  /** A paused request: a frame's document names what that frame shows next. */
  paused(frameId: string, resourceType: string, url: string, mainFrameId: string | undefined): void {
    if (resourceType !== "Document" || frameId === "" || frameId === mainFrameId) return;
    setNewest(this.documents, frameId, url, FRAMES_KEPT);
  }

  /** The frame's document URL, if one was paused for it. */
  documentOf(frameId: string): string | undefined {
    return this.documents.get(frameId);
  }
}
