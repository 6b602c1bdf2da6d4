// Chromium: the top-level page a paused request belongs to. Its site decides whether lanefetch takes the request
// (pass-through-policy.ts: site_off) and its address space what the helper may reach for it.
//
// The tab's URL is what webNavigation.onCommitted said last, and Chromium defines no order between webNavigation's
// events and the network's (the webNavigation API's "Relation to webRequest events"; Fetch.requestPaused is the
// network's): a page's first subresources can be paused before its commit is heard. In a tab that showed no web page
// before (a new tab's about:blank or chrome://newtab/, an extension page, a tab not seen yet) its URL would then make
// them requests of no site, and the browser would fetch them itself. There the page load the tab's own session began
// last stands for the page: its document was paused (or its navigation started) before any of its subresources.
// A tab showing a web page keeps its committed URL (a document paused but never committed, such as a download, does
// not change what the page on screen asks for).

function isWebPage(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

/**
 * The URL of the page `requestUrl` belongs to: the request's own for the tab's top-level document; else the tab's
 * committed URL if that is a web page; else the page load the tab's session began last, or, with none, the request's
 * own URL.
 */
export function requestPageUrl(requestUrl: string, topDocument: boolean, tabUrl: string, pageLoadUrl: string | undefined): string {
  if (topDocument) return requestUrl;
  if (isWebPage(tabUrl)) return tabUrl;
  return pageLoadUrl !== undefined && isWebPage(pageLoadUrl) ? pageLoadUrl : requestUrl;
}
