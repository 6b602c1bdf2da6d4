// Chromium: what a request of an unsafe method makes the helper's cache forget (RFC 9111 §4.4). Pure.
//
// Theory of operation. The helper takes only GET; a POST, PUT, DELETE or PATCH of an enabled page goes to the
// browser (pass reason `method`), which sends it itself. It may change what the server answers for its URL, and the
// browser's own cache forgets what it holds for that URL once the answer comes with a non-error status. In debugger
// mode the page's later GETs are answered from the helper's cache (and its prefetch flight), never the browser's, so
// the helper must forget too, or a page that posts to /api/cart and reads /api/cart again would see the copy from
// before its own change. The helper is told (`invalidate`) twice:
// - before the request goes on, its URL: messages reach the helper in order, so no later request of the page is
//   answered from a copy taken before it (forgetting also after a failure costs one fetch, never a wrong answer);
// - once its response came with a status below 400 (the browser's view, CDP Network events), its URL again (a GET
//   answered while it was on its way reflects the state before it) with the response's Location and
//   Content-Location, which §4.4 names, but only on the request's own origin (§4.4: never another origin's).
// A tab without Network events (its attach raced the navigation) gets the first only.
import type { Page } from "../generated/protocol.js";
import { withoutFragment } from "./origin-of.js";
import { setNewest } from "../bounded-map.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);

/** Requests remembered between their pause and their response; the oldest are dropped beyond this. */
export const MAX_UNSAFE_PENDING = 256;

export function isUnsafe(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

/** The URLs a response with `status` and `headers` to an unsafe request of `url` invalidates: none for an error
 * (or no status), else the request's URL and the same-origin Location and Content-Location, resolved against it,
 * without fragments, each once. */
export function invalidatedUrls(url: string, status: number | null, headers: readonly (readonly [string, string])[]): string[] {
  if (status === null || status < 200 || status >= 400) return [];
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return [];
  }
  const urls = [withoutFragment(target.href)];
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower !== "location" && lower !== "content-location") continue;
    let named: URL;
    try {
      named = new URL(value.trim(), target);
    } catch {
      continue;
    }
    const href = withoutFragment(named.href);
    if (named.origin === target.origin && !urls.includes(href)) urls.push(href);
  }
  return urls.slice(0, 3);
}

/** Unsafe requests passed to the browser, by CDP network id, until their response is seen. */
export class UnsafeRequests {
  private readonly pending = new Map<string, Page>();

  remember(networkId: string, page: Page): void {
    setNewest(this.pending, networkId, page, MAX_UNSAFE_PENDING);
  }

  /** The request of networkId finished (or failed: status null): its page and the URLs to invalidate, or null
   * (not an unsafe request remembered here, or nothing to invalidate). */
  answered(networkId: string, url: string, status: number | null, headers: readonly (readonly [string, string])[]): { page: Page; urls: string[] } | null {
    const page = this.pending.get(networkId);
    if (page === undefined) return null;
    this.pending.delete(networkId);
    const urls = invalidatedUrls(url, status, headers);
    return urls.length > 0 ? { page, urls } : null;
  }
}
