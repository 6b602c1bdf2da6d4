"""The asyncio shell around one store: looks a batch up in one go on its own worker thread (SQLite stays
off the event loop) and runs the taps' writes on the same thread, in order; `aclose` waits for them.
What is done with the answers (hits served, conditional requests, taps on the rest) is
caching_fetcher.py's.

A store that cannot be opened or fails (a read or a write) makes the cache step aside (logged), never the fetch.

Clears by another process (the other browser's helper, `lanefetch cache clear`; the database is shared): what
this process learned in memory before such a clear (its origin policies, its page loads under way, the browser's
field profile) must never be written back after it. The cache counts *epochs* on the event loop: one begins at a
clear of its own (`clear`: its callers forget first, as host.py does) and when a clear elsewhere is found. Each
write of learned records (`submit_learned`) carries the epoch it was asked in, and is made only while the store's
clear generation (sqlite_store.py) is still the one that epoch began at. One that is not made found a clear
elsewhere: the next epoch begins (on the loop, before anything asked later is queued) and `on_cleared`'s callbacks
forget what was learned so far, as at a clear of the process's own; the writes still queued from the epoch before
are refused in turn. What was learned after the clear but before it was found is forgotten too: never kept is the
safe side."""

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
        self._epoch = 0  # on the loop: moved on at each clear, here or found elsewhere (the module's docstring)
        # The store's clear generation each epoch's learning belongs to: the first's read when the store opens, the
        # next one's with a clear (both on the worker thread), or set on the loop when a clear elsewhere is found.
        self._generations: dict[int, int] = {}
        self._on_cleared: list[Callable[[], None]] = []

    # -- the worker thread ---------------------------------------------------------------------------------

    def _with_store(self, fn: Callable[[EntryStore], T]) -> T:
        if self._store is None:
            self._store = self._open_store()
            self._generations.setdefault(0, self._store.generation())
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

    def submit_learned(self, write: Callable[[EntryStore, int], bool]) -> None:
        """Queue a write of learned records that `write(store, generation)` makes only while the store's clear
        generation is `generation` (EntryStore.learn, keep_pages), saying whether it did. Made with what was learned
        in this epoch: where it is not, another process cleared the store (the module's docstring)."""
        epoch = self._epoch
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop, no helper running: nothing to write from
            return

        def learned(store: EntryStore) -> None:
            generation = self._generations.get(epoch)  # (none: this epoch's clear failed; refused, as for a change)
            if generation is not None and write(store, generation):
                return
            loop.call_soon_threadsafe(self._cleared_elsewhere, epoch, store.generation())

        self.submit(learned)

    def on_cleared(self, forget: Callable[[], None]) -> None:
        """forget() is called (on the loop) when another process is found to have cleared the store: what was learned
        so far must never be written (a clear of this process's own: its caller forgets)."""
        self._on_cleared.append(forget)

    def _cleared_elsewhere(self, epoch: int, generation: int) -> None:
        if epoch != self._epoch:
            return  # the epoch moved on meanwhile: a clear here, or this clear found already
        log.info("the cache was cleared by another process: what this one learned before is forgotten")
        self._epoch += 1
        self._generations[self._epoch] = generation
        for forget in self._on_cleared:
            forget()

    def _write_done(self, fut: asyncio.Future[object]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.warning("cache write failed: %r", fut.exception())

    # -- what caching_fetcher.py asks ----------------------------------------------------------------------

    async def plan(self, queries: list[tuple[str, str, Headers]], partition: str, *,
                   look_only: bool = False) -> list[Plan] | None:
        """One decision per (method, cache URL, request fields), with the stored body of hits and revalidations;
        None when the store is unusable (the batch goes to the network untouched). The entries of a forced fetch
        (`Miss(drop=True)`) are dropped here, as the request is about to go, unless `look_only` (a prefetch
        deciding what to fly: no request of the page goes yet, and learned fields must not empty the store)."""
        if self._failed or not queries:
            return None
        try:
            return await self.run(lambda s: None if self._failed else _plan(s, partition, queries, look_only))
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
            self.submit_learned(lambda s, generation: s.learn(partition, records, generation))

    async def pages(self, partition: str, keys: list[str]) -> dict[str, str]:
        """Learned page records kept under this partition (prefetch/learned.py); {} when the store is unusable."""
        if not keys:
            return {}
        return await self._records(lambda s: s.pages(partition, keys), "no learned pages")

    def keep_pages(self, partition: str, records: dict[str, str], now: float) -> None:
        if records:
            self.submit_learned(lambda s, generation: s.keep_pages(partition, records, now, generation))

    def writes(self, partition: str) -> Writes:
        return _Writes(self, partition)

    async def stats(self) -> StoreStats:
        return await self.run(lambda s: s.stats())

    async def clear(self) -> int:
        """Empty the store. Its callers forget what was learned first: what is learned from now on is kept."""
        self._epoch += 1
        epoch = self._epoch

        def clear(store: EntryStore) -> int:
            # The generation the clear moved the store to. Another process's clear meanwhile (before this one, or
            # after it) leaves the store at another, and this epoch's writes are refused: never a wrong write.
            before = store.generation()
            n = store.clear()
            self._generations[epoch] = before + 1
            return n

        return await self.run(clear)

    async def aclose(self) -> None:
        await asyncio.gather(*self._pending, return_exceptions=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_store)
        self._executor.shutdown(wait=True)

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _plan(store: EntryStore, partition: str, queries: list[tuple[str, str, Headers]], look_only: bool) -> list[Plan]:
    """On the worker thread: one decision (and, for hits and revalidations, the stored body) per request."""
    t = time.time()
    plans: list[Plan] = []
    used: list[int] = []
    for method, url, headers in queries:
        decision = decide(method, headers, store.lookup(partition, "GET", url) if method == "GET" else [], t)
        if isinstance(decision, Miss) and decision.drop and not look_only:
            store.delete_url(partition, url)  # a forced fetch: what was stored never answers again (policy.py)
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
