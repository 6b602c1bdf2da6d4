"""The asyncio shell around one store: looks a batch up in one go on its own worker thread (SQLite stays
off the event loop) and runs the taps' writes on the same thread, in order; `aclose` waits for them.
What is done with the answers (hits served, conditional requests, taps on the rest) is
caching_fetcher.py's.

A store that cannot be opened or fails (a read or a write) makes the cache step aside (logged), never the fetch."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar
from urllib.parse import urldefrag

from ..engine.fields import Headers
from .entry import StoredHead
from .policy import Decision, Hit, Miss, Revalidate, decide
from .store import EntryStore, StoreStats
from .tap import Writes

log = logging.getLogger("lanefetch.cache")

T = TypeVar("T")

Plan = tuple[Decision, bytes | None]


def cache_url(url: str) -> str:
    """The URL as a cache key: the fragment is never sent, so it never distinguishes responses."""
    return urldefrag(url).url


def _put(store: EntryStore, partition: str, url: str, variant: str, head: StoredHead, body: bytes) -> None:
    """Store a response; the URL's entries stored under another Vary go (the server's Vary changed: kept, a copy
    stored before it varied would answer the requests this response's Vary sets apart, which a browser's cache,
    one response per URL, would not). Variants under the same Vary stay side by side."""
    for entry in store.lookup(partition, "GET", url):
        if set(entry.head.vary) != set(head.vary):
            store.delete(entry.id)
    store.put(partition, "GET", url, variant, head, body)


class _Writes:
    """The tap's writes for one partition, queued on the cache's worker thread."""

    def __init__(self, cache: HttpCache, partition: str) -> None:
        self._cache = cache
        self._partition = partition

    def put(self, url: str, variant: str, head: StoredHead, body: bytes) -> None:
        self._cache.submit(lambda s: _put(s, self._partition, url, variant, head, body))

    def update_head(self, entry_id: int, head: StoredHead) -> None:
        self._cache.submit(lambda s: s.update_head(entry_id, head))

    def delete(self, entry_id: int) -> None:
        self._cache.submit(lambda s: s.delete(entry_id))

    def delete_url(self, url: str) -> None:
        self._cache.submit(lambda s: s.delete_url(self._partition, url))


class HttpCache:
    def __init__(self, open_store: Callable[[], EntryStore], max_entry_bytes: int) -> None:
        self._open_store = open_store
        self.max_entry_bytes = max_entry_bytes
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lanefetch-cache")
        self._store: EntryStore | None = None
        self._failed = False
        self._pending: set[asyncio.Future[object]] = set()

    # -- the worker thread ---------------------------------------------------------------------------------

    def _with_store(self, fn: Callable[[EntryStore], T]) -> T:
        if self._store is None:
            self._store = self._open_store()
        return fn(self._store)

    async def run(self, fn: Callable[[EntryStore], T]) -> T:
        """Run fn(store) on the worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._with_store, fn)

    def submit(self, fn: Callable[[EntryStore], object]) -> None:
        """Queue a write; its failure is logged, never raised into a fetch. It is on the worker's queue when this
        returns, so whatever is asked after it (a plan looking up a URL just invalidated) runs after it: a task
        (ensure_future) would queue it only on the loop's next turn, behind a plan asked in this one."""
        if self._failed:
            return

        def write(store: EntryStore) -> object:
            try:
                return fn(store)
            except Exception:
                # A write lost (an invalidation, a replaced entry's delete) would leave served what it was to
                # remove: the cache steps aside, from the plan queued right behind it on this thread on.
                self._failed = True
                raise

        try:
            fut = asyncio.get_running_loop().run_in_executor(self._executor, self._with_store, write)
        except RuntimeError as e:  # the cache was closed (its worker shut down): the write is dropped
            log.warning("cache write dropped: %r", e)
            return
        self._pending.add(fut)
        fut.add_done_callback(self._write_done)

    def _write_done(self, fut: asyncio.Future[object]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.warning("cache write failed: %r", fut.exception())

    # -- what caching_fetcher.py asks ----------------------------------------------------------------------

    async def plan(self, queries: list[tuple[str, str, Headers]], partition: str) -> list[Plan] | None:
        """One decision per (method, cache URL, request fields), with the stored body of hits and revalidations;
        None when the store is unusable (the batch goes to the network untouched)."""
        if self._failed or not queries:
            return None
        try:
            return await self.run(lambda s: None if self._failed else _plan(s, partition, queries))
        except Exception as e:
            self._failed = True
            log.warning("cache unavailable, fetching without it: %r", e)
            return None

    async def _records(self, read: Callable[[EntryStore], dict[str, str]], without: str) -> dict[str, str]:
        """Records read from the store (origins, pages); {} when the store is unusable (logged: what goes without)."""
        if self._failed:
            return {}
        try:
            return await self.run(read)
        except Exception as e:
            log.warning("cache unavailable, %s: %r", without, e)
            return {}

    async def learned(self, partition: str, origins: list[str]) -> dict[str, str]:
        """Origin records kept under this partition (origin_memory.py); {} when the store is unusable."""
        if not origins:
            return {}
        return await self._records(lambda s: s.learned(partition, origins), "learning nothing from it")

    async def site_learned(self, partition: str, limit: int = 256) -> dict[str, str]:
        """Every origin record kept under this partition (a site's known origins); {} when the store is unusable."""
        return await self._records(lambda s: s.site_learned(partition, limit), "learning nothing from it")

    def learn(self, partition: str, records: dict[str, str]) -> None:
        if records:
            self.submit(lambda s: s.learn(partition, records))

    async def pages(self, partition: str, keys: list[str]) -> dict[str, str]:
        """Learned page records kept under this partition (prefetch/learned.py); {} when the store is unusable."""
        if not keys:
            return {}
        return await self._records(lambda s: s.pages(partition, keys), "no learned pages")

    def keep_pages(self, partition: str, records: dict[str, str], now: float) -> None:
        if records:
            self.submit(lambda s: s.keep_pages(partition, records, now))

    def writes(self, partition: str) -> Writes:
        return _Writes(self, partition)

    async def stats(self) -> StoreStats:
        return await self.run(lambda s: s.stats())

    async def clear(self) -> int:
        return await self.run(lambda s: s.clear())

    async def aclose(self) -> None:
        await asyncio.gather(*self._pending, return_exceptions=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_store)
        self._executor.shutdown(wait=True)

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _plan(store: EntryStore, partition: str, queries: list[tuple[str, str, Headers]]) -> list[Plan]:
    """On the worker thread: one decision (and, for hits and revalidations, the stored body) per request."""
    t = time.time()
    plans: list[Plan] = []
    used: list[int] = []
    for method, url, headers in queries:
        decision = decide(method, headers, store.lookup(partition, "GET", url) if method == "GET" else [], t)
        body = None
        if isinstance(decision, (Hit, Revalidate)):
            body = store.body(decision.entry.id, as_of=decision.entry.head)
            if body is None:  # gone or replaced meanwhile, or failed its integrity check (and was dropped)
                decision = Miss()
            elif isinstance(decision, Hit):
                used.append(decision.entry.id)
        plans.append((decision, body))
    store.touch(used)
    return plans
