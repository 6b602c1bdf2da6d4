"""Recalling and recording learned pages (learned.py) in the helper's cache database: the thin shell.

`recall` reads a page's histories (exact key, shape key, and the template key once the stylesheets are known) from
the store of the page's cache, in its top-level site's partition; `record` adds one load under all of them. The read,
merge and write of `record` run as one function on the cache's single worker thread, so two loads of one page
recorded at once cannot lose each other. Nothing is read or written for private browsing or a page without a
top-level site (learned.may_learn), nor when the service runs without a cache (nothing to clear it with)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..cache.http_cache import HttpCache
from ..cache.store import EntryStore
from ..engine.fetcher import Page
from .learned import History, Observed, decode, encode, may_learn, page_keys, remember


@dataclass(frozen=True)
class Recalled:
    exact: History | None = None
    template: History | None = None
    shape: History | None = None


class PageMemory:
    def __init__(self, cache_for: Callable[[Page], HttpCache | None],
                 clock: Callable[[], float] = time.time, *, namespace: str = "") -> None:
        """`namespace` keeps one browser's pages apart from another's in the same database (Chromium's and
        Firefox's helpers share the cache directory): a load replays the fields its browser sent, which the other
        browser's requests never match, and one load of each would make a request "stable"."""
        self._cache_for = cache_for
        self._clock = clock
        self._namespace = namespace

    def _cache(self, page: Page) -> HttpCache | None:
        return self._cache_for(page) if may_learn(page) else None

    async def recall(self, page: Page, url: str, stylesheets: list[str] | None = None) -> Recalled:
        """The page's histories (exact, shape, and template once the stylesheets are known); None where not kept."""
        cache = self._cache(page)
        keys = page_keys(url, stylesheets)
        if cache is None or keys is None:
            return Recalled()
        records = await cache.pages(page.top_site, self._keys(keys.exact, keys.template, keys.shape))
        now = self._clock()

        def history(key: str | None) -> History | None:
            kept = records.get(self._namespace + key) if key is not None else None
            return decode(kept, now) if kept is not None else None

        return Recalled(history(keys.exact), history(keys.template), history(keys.shape))

    def record(self, page: Page, url: str, stylesheets: list[str] | None, load: list[Observed], *,
               keep_empty: bool = False) -> None:
        """Remember one load of the page (queued on the cache's worker thread). A load that brought the helper no
        request is not remembered, unless keep_empty: a flight was fetched for it, and the next plan must know
        that none of it was asked for (the browser now fetches those requests itself: a fast origin, an origin
        it reaches over its own h2 connection), or every later visit would fetch them again for nothing."""
        cache = self._cache(page)
        keys = page_keys(url, stylesheets)
        if cache is None or keys is None or not (load or keep_empty):
            return
        wanted = self._keys(keys.exact, keys.template, keys.shape)
        partition, now, exact = page.top_site, self._clock(), keys.exact

        def update(store: EntryStore, generation: int) -> bool:
            kept = store.pages(partition, wanted)
            return store.keep_pages(partition, {
                k: encode(remember(decode(kept[k], now) if k in kept else None, load, now, exact))
                for k in wanted}, now, generation)

        cache.submit_learned(update)  # never after a clear (by any process) the load's learning came before

    def _keys(self, *keys: str | None) -> list[str]:
        return [self._namespace + k for k in keys if k]
