"""The engine: takes batches of requests for any number of origins, fetches them through per-origin
pools, streams responses into a sink, and tells per batch how many connections it used."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .address_policy import AddressSpace, address_space_of
from .config import EngineConfig
from .connection import Connection
from .errors import FetchError
from .exchange import Exchange, Sink
from .origin_policy import OriginPolicy
from .pool import OriginPool
from .request import FetchRequest, Origin, parse_target, validate
from .transport import make_tls_context

if TYPE_CHECKING:
    from ..cache.http_cache import HttpCache
    from ..lanes.split_fetch import SplitFetcher

log = logging.getLogger("lanefetch.engine")


@dataclass
class Page:
    """Who asks: the page's own address space bounds what the helper may reach for it; top_site
    partitions connections the way the browser partitions its own."""

    address_space: AddressSpace = "public"
    top_site: str = ""
    url: str | None = None
    private_browsing: bool = False


@dataclass
class BatchResult:
    connections: int
    max_concurrent_connections: int


@dataclass(eq=False)
class _BatchTracker:
    exchanges: list[Exchange]
    max_concurrent: int = 0


def _on_this_machine(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return address_space_of(host) == "loopback"
    except ValueError:  # a name, not an address
        return False


def _cancel_timer(timer: asyncio.TimerHandle) -> Callable[[object], None]:
    return lambda _done: timer.cancel()


class Engine:
    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.policies: dict[Origin, OriginPolicy] = {}
        self._pools: dict[tuple[Origin, AddressSpace, str], OriginPool] = {}
        self._conn_ids = itertools.count(1)
        self._seq = itertools.count()
        self._open_connections = 0
        self._batches: set[_BatchTracker] = set()
        self._by_id: dict[str, Exchange] = {}
        self._tls: ssl.SSLContext | None = None
        self._caches: dict[bool, HttpCache] = {}  # by private_browsing
        self._split: SplitFetcher | None = None
        self._split_busy: dict[SplitFetcher, int] = {}  # split requests under way, per fetcher
        self._split_retired: set[SplitFetcher] = set()  # replaced after a policy change, closed once idle
        self._split_local: SplitFetcher | None = None  # targets on this machine: one lane, the default route
        #: Told each new connection's origin and TCP connect time in seconds (one round trip).
        self.on_connected: Callable[[Origin, float], None] | None = None

    # -- public API ----------------------------------------------------------------------------------------

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page | None = None) -> BatchResult:
        """Fetch all requests, streaming into sink; returns when every request has ended or failed."""
        page = page or Page()
        loop = asyncio.get_running_loop()
        tracker = _BatchTracker([])
        self._batches.add(tracker)
        tracker.max_concurrent = self._open_connections
        split: list[asyncio.Task[None]] = []
        try:
            network: list[Exchange] = []
            for req in requests:
                req.method = req.method.upper()
                try:
                    target = validate(req)
                except Exception as e:  # this request's error; the batch goes on
                    if not isinstance(e, FetchError):
                        log.exception("validating request %.128r", req.id)
                        e = FetchError("internal", f"request not fetched: {e!r}")
                    ex = Exchange(req, None, sink, next(self._seq), 0)
                    tracker.exchanges.append(ex)
                    await ex.fail(e)
                    continue
                if req.split and req.method == "GET" and not any(k.lower() == "range" for k, _ in req.headers):
                    # a large body over the lanes, on connections of its own (never behind small requests)
                    fetcher = self._local_splitter() if _on_this_machine(target.origin.host) else self.splitter()
                    split.append(asyncio.create_task(self._split_fetch(fetcher, req, sink, page)))
                    continue
                ex = Exchange(req, target, sink, next(self._seq), self.config.max_retries)
                tracker.exchanges.append(ex)
                self._by_id[req.id] = ex
                timer = loop.call_later(self.config.total_timeout, self._expire, ex)
                ex.done.add_done_callback(_cancel_timer(timer))
                network.append(ex)
            cache = self.cache_for(page)
            if cache is not None:
                network = await cache.prepare(network, page.top_site)
            for ex in network:
                assert ex.target is not None
                self._pool_for(ex.target.origin, page).submit(ex)
            await asyncio.gather(*(ex.done for ex in tracker.exchanges), *split)
        finally:
            for task in split:
                task.cancel()
            self._batches.discard(tracker)
            for ex in tracker.exchanges:
                if self._by_id.get(ex.request.id) is ex:
                    del self._by_id[ex.request.id]
        used = {ex.connection.id for ex in tracker.exchanges if ex.connection is not None}
        return BatchResult(len(used), tracker.max_concurrent)

    def preconnect(self, url: str, page: Page | None = None) -> bool:
        """Start a connection to url's origin before any request needs it (bad URLs are ignored); False when none
        was started (one is open or opening already, or a bad URL)."""
        try:
            target = parse_target(url)
        except FetchError:
            return False
        return self._pool_for(target.origin, page or Page()).preconnect()

    async def cancel(self, request_ids: list[str]) -> None:
        for rid in request_ids:
            ex = self._by_id.get(rid)
            if ex is not None:
                await ex.fail(FetchError("cancelled", "cancelled by the caller"))
            else:
                for fetcher in [*self._split_busy]:
                    await fetcher.cancel(rid)

    async def cancel_and_close(self, request_id: str) -> None:
        """Cancel a request whose answer must not be read to its end (a whole body nobody wants): the
        connection carrying it is closed; requests pipelined behind it are retried on another, as after
        any lost connection."""
        ex = self._by_id.get(request_id)
        carrier = None if ex is None else next(
            (c for pool in self._pools.values() for c in pool.connections
             if any(f.token is ex for f in c.state.in_flight)), None)
        await self.cancel([request_id])
        if carrier is not None and carrier.transport is not None:
            carrier.transport.writer.transport.abort()

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()
        for cache in self._caches.values():
            await cache.aclose()
        self._caches.clear()
        for fetcher in {*self._split_retired, *[f for f in (self._split, self._split_local) if f is not None]}:
            await fetcher.aclose()
        self._split, self._split_local, self._split_retired = None, None, set()

    async def lanes_changed(self) -> None:
        """The interface policy changed: later split requests get lanes chosen anew; those under way finish on the
        lanes they started on, which close afterwards."""
        old, self._split = self._split, None
        if old is not None and old in self._split_busy:
            self._split_retired.add(old)
        elif old is not None:
            await old.aclose()

    async def _split_fetch(self, fetcher: SplitFetcher, req: FetchRequest, sink: Sink, page: Page) -> None:
        self._split_busy[fetcher] = self._split_busy.get(fetcher, 0) + 1
        try:
            await fetcher.fetch(req, sink, page)
        finally:
            self._split_busy[fetcher] -= 1
            if not self._split_busy[fetcher]:
                del self._split_busy[fetcher]
                if fetcher in self._split_retired:
                    self._split_retired.discard(fetcher)
                    await fetcher.aclose()

    def splitter(self) -> SplitFetcher:
        """The lanes for split requests: config.lanes by name, or the interfaces the user's policy allows."""
        if self._split is None:
            from ..lanes.split_fetch import make_fetcher  # lanes build on the engine

            self._split = make_fetcher(self.config)
        return self._split

    def _local_splitter(self) -> SplitFetcher:
        """A socket bound to a network interface cannot reach this machine's own addresses: split requests to
        loopback use the default route (one lane)."""
        if self._split_local is None:
            from ..lanes.split_fetch import make_fetcher

            self._split_local = make_fetcher(dataclasses.replace(self.config, lanes=[]))
        return self._split_local

    def cache_for(self, page: Page) -> HttpCache | None:
        """The HTTP cache this page's requests use: the persistent one, or for private browsing one
        in memory that never touches the disk; None when the engine runs without a cache."""
        cfg = self.config
        if cfg.cache_dir is None:
            return None
        cache = self._caches.get(page.private_browsing)
        if cache is None:
            # Imported here: the cache builds on engine modules.
            from ..cache.http_cache import HttpCache
            from ..cache.memory_store import MemoryStore
            from ..cache.sqlite_store import SqliteStore

            if page.private_browsing:
                size = cfg.private_cache_max_bytes
                cache = HttpCache(lambda: MemoryStore(size), max_entry_bytes=size // 8)
            else:
                where, size = cfg.cache_dir, cfg.cache_max_bytes
                cache = HttpCache(lambda: SqliteStore(where, size), max_entry_bytes=min(size // 8, 64 << 20))
            self._caches[page.private_browsing] = cache
        return cache

    # -- used by pools and connections -----------------------------------------------------------------------

    def next_connection_id(self) -> int:
        return next(self._conn_ids)

    def connection_opened(self, conn: Connection) -> None:
        ct = conn.connect_timing
        if self.on_connected is not None and ct.connect_start is not None and ct.connect_end is not None:
            # The connect time seen from Python holds a busy machine's scheduling delay (15 ms and more while the
            # browser starts), which would make a LAN host look slow; the kernel's own measure does not.
            rtt = ct.connect_end - ct.connect_start
            self.on_connected(conn.pool.origin, rtt if ct.handshake_rtt is None else min(rtt, ct.handshake_rtt))
        self._open_connections += 1
        for b in self._batches:
            b.max_concurrent = max(b.max_concurrent, self._open_connections)

    def connection_closed(self, conn: Connection) -> None:
        if conn.transport is not None:
            self._open_connections -= 1

    # -- internals -------------------------------------------------------------------------------------------

    def _pool_for(self, origin: Origin, page: Page) -> OriginPool:
        key = (origin, page.address_space, page.top_site)
        pool = self._pools.get(key)
        if pool is None:
            policy = self.policies.setdefault(origin, OriginPolicy(self.config.effective_depth))
            tls = None
            if origin.scheme == "https":
                if self._tls is None:
                    self._tls = make_tls_context(self.config.ca_file)
                tls = self._tls
            pool = OriginPool(self, origin, page.address_space, policy, tls)
            self._pools[key] = pool
        return pool

    def _expire(self, ex: Exchange) -> None:
        if not ex.finished:
            task = asyncio.ensure_future(
                ex.fail(FetchError("timeout", f"no complete response within {self.config.total_timeout:g} s"))
            )
            with contextlib.suppress(Exception):
                task.add_done_callback(lambda t: t.exception())
