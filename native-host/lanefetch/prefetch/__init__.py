"""Fetching what a page will ask for before it asks (issue 20), one pure core per question.

Wired in the host for Chromium's debugger mode (page_loads.PageLoads above the service: learned and discovered)
and in Firefox's proxy mode (the proxy's service keeps a PageLoads of its own: proxy/service.py); not in the CLI.
The decisions a prefetch flight needs, each sans-I/O and tested on its own, in the order data flows through them:

- resource.py: what a discovered or learned subresource is (absolute URL, Sec-Fetch-Dest, request mode and
  credentials mode: the inputs the fidelity rule needs), and urls.py: resolving a reference exactly as the
  browser's WHATWG URL parser does (ada), http(s) only, fragment dropped.
- discover_html.py: from a document's bytes, what the browser fetches early (stylesheets, scripts, preloads,
  eager images), via html5lib's WHATWG encoding sniff and lexbor's (selectolax) tree construction.
- discover_css.py: from a stylesheet's bytes, its @import chain and the @font-face sources the browser would pick,
  via tinycss2 (CSS Syntax Level 3).
- discover_worker.py: the two discoverers run in a worker process, off the helper's event loop.
- field_profile.py: the fields a browser sends with a subresource (browser-wide ones learned from any load, keyed by
  User-Agent; Sec-Fetch-* and Origin computed from the URLs), so a page's first visit can be planned.
- fidelity.py: when a prefetched response may answer a real browser request (same GET, same URL, same
  credentials-relevant headers and Vary'd headers), otherwise it is discarded.
- budget.py: how many bytes a page may fetch that the browser has not asked for.
- learned.py: per page and per page template, which subresources the last few loads requested and which are
  stable; persisted as opaque records in the cache's SQLite store (table `pages`), partitioned by top-level site.
- plan.py: what one page's flight fetches: learned (stable: confident; the newest load's others: guesses) and
  discovered (only with fields a learned load of that origin, destination and mode showed or the browser's field
  profile knows), never credentialed.
- load_log.py: one page load as the helper sees it (its key, the requests it made and their waves, when it is idle).
- flight.py: the asyncio shell: one page's flight through a Fetcher into a holding area, answering later batches
  only through fidelity.py.
- page_loads.py: the asyncio shell the host uses: a page's load from its navigation to its end, its flight, its
  recording into the page memory and its report.

Layering: prefetch sits on engine/ (the Fetcher protocol, requests, fields) and beside cache/ (whose store keeps
the learned records as strings; the cache imports nothing from here). See docs/prefetch.md.
"""
