"""The asyncio shell around the cache: the engine hands it a batch's exchanges before they are
queued; it looks them all up in one go on its own worker thread (SQLite stays off the event loop),
serves fresh hits from storage through the exchanges' usual sink calls, turns stale entries into
conditional requests that ride the same pipelined connections as everything else, and puts a tap
on what goes to the network so complete, storable responses get stored. Writes run on the same
worker thread, in order; `aclose` waits for them.

A store that cannot be opened or fails makes the cache step aside (logged), never the fetch."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TypeVar
from urllib.parse import urldefrag

from ..engine.errors import FetchError
from ..engine.exchange import Exchange
from ..engine.fields import Headers
from ..engine.response_parser import Framing, ResponseHead
from ..engine.timing import now
from .entry import StoredHead
from .policy import Bypass, Decision, Hit, Miss, Revalidate, decide, served_headers
from .store import EntryStore, StoreStats
from .tap import CacheTap

log = logging.getLogger("lanefetch.cache")

T = TypeVar("T")
HIT_CHUNK = 256 * 1024  # a hit's body goes to the sink in pieces this size (decoding stays incremental)

Plan = tuple[Decision, bytes | None]


def cache_url(url: str) -> str:
    """The URL as a cache key: the fragment is never sent, so it never distinguishes responses."""
    return urldefrag(url).url


class _Writes:
    """The tap's writes for one partition, queued on the cache's worker thread."""

    def __init__(self, cache: HttpCache, partition: str) -> None:
        self._cache = cache
        self._partition = partition

    def put(self, url: str, variant: str, head: StoredHead, body: bytes) -> None:
        self._cache.submit(lambda s: s.put(self._partition, "GET", url, variant, head, body))

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
        self._tasks: set[asyncio.Task[None]] = set()

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
        """Queue a write; its failure is logged, never raised into a fetch."""
        if self._failed:
            return
        fut = asyncio.ensure_future(self.run(fn))
        self._pending.add(fut)
        fut.add_done_callback(self._write_done)

    def _write_done(self, fut: asyncio.Future[object]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.warning("cache write failed: %r", fut.exception())

    # -- the engine's entry point --------------------------------------------------------------------------

    async def prepare(self, exchanges: list[Exchange], partition: str) -> list[Exchange]:
        """Serve what the cache can; return the exchanges that still need the network (some of them
        now conditional, all of them watched by a tap)."""
        if self._failed or not exchanges:
            return exchanges
        queries = [(ex.request.method, cache_url(ex.request.url), list(ex.request.headers)) for ex in exchanges]
        try:
            plans = await self.run(lambda s: _plan(s, partition, queries))
        except Exception as e:
            self._failed = True
            log.warning("cache unavailable, fetching without it: %r", e)
            return exchanges
        network: list[Exchange] = []
        writes = _Writes(self, partition)
        for ex, (url_method, url, headers), (decision, body) in zip(exchanges, queries, plans, strict=True):
            if isinstance(decision, Hit) and body is not None:
                task = asyncio.create_task(_serve_hit(ex, decision, body), name=f"lanefetch-hit-{ex.request.id}")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                continue
            revalidating = None
            if isinstance(decision, Revalidate) and body is not None:
                revalidating = (decision.entry, body)
                ex.wire_request = replace(ex.request, headers=ex.request.headers + decision.conditional)
            if not (isinstance(decision, Bypass) and url_method == "GET"):
                ex.tap = CacheTap(writes, url_method, url, headers, ex.timing, self.max_entry_bytes, revalidating)
            network.append(ex)
        return network

    async def stats(self) -> StoreStats:
        return await self.run(lambda s: s.stats())

    async def clear(self) -> int:
        return await self.run(lambda s: s.clear())

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, *self._pending, return_exceptions=True)
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
            body = store.body(decision.entry.id)
            if body is None:  # gone meanwhile, or failed its integrity check (and was dropped)
                decision = Miss()
            elif isinstance(decision, Hit):
                used.append(decision.entry.id)
        plans.append((decision, body))
    store.touch(used)
    return plans


async def _serve_hit(ex: Exchange, hit: Hit, body: bytes) -> None:
    """A fresh stored response through the exchange's usual path: same head/body/end/timing calls."""
    try:
        ex.cache_status = "hit"
        ex.timing.first_byte = now()
        head = hit.entry.head
        served = ResponseHead(head.status, head.reason, head.http_version, served_headers(head, hit.age))
        await ex.start_response(served, Framing.LENGTH)
        for i in range(0, len(body), HIT_CHUNK):
            await ex.body(body[i : i + HIT_CHUNK])
        await ex.complete([], 0)
    except asyncio.CancelledError:
        await ex.fail(FetchError("cancelled", "the helper is shutting down"))
        raise
    except Exception as e:  # a failing sink must not leave the request hanging
        await ex.fail(FetchError("internal", f"serving from the cache failed: {e!r}"))
