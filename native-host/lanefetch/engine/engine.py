"""The engine: takes batches of requests for any number of origins, fetches them through per-origin
pools, streams responses into a sink (bodies as the server coded them), and tells per batch how many
connections it used. The bottom Fetcher (fetcher.py): the cache, decoding and the split over interfaces
are wrapped around it (lanefetch/service.py), never called from here."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from . import system_trust
from .address_policy import AddressSpace
from .config import EngineConfig
from .connection import Carrier
from .connection_cap import ConnectionCap
from .errors import FetchError
from .exchange import Exchange, Sink
from .fetcher import BatchResult, Page
from .host_link import HostLink
from .origin_policy import OriginPolicy
from .pool import OriginPool
from .pool_plan import Handshake, connection_cap
from .request import FetchRequest, Origin, parse_target, validate
from .rtt_sample import handshake_round_trip
from .timing import ConnectTiming, now
from .transport import make_tls_context, trust_paths

log = logging.getLogger("lanefetch.engine")


@dataclass(eq=False)
class _BatchTracker:
    exchanges: list[Exchange]
    max_concurrent: int = 0


#: Whose learning an origin's policy is: (origin, Page.partition, private browsing). What one site's pages (or a private
#: window's) taught the helper about an origin neither decides another's connections nor is kept as another's record
#: (cache/origin_memory.py), as the browser keeps its own per-site network state apart.
PolicyKey = tuple[Origin, str, bool]


def policy_key(origin: Origin, page: Page) -> PolicyKey:
    return (origin, page.partition, page.private_browsing)


def _file_limit() -> int | None:
    """The process's soft limit on open file descriptors (None where not known: Windows, or unlimited)."""
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def shared_cap(config: EngineConfig, cap: ConnectionCap | None) -> ConnectionCap:
    """The helper's cap on connections: `cap` where another part of the process made it, else a new one,
    config.max_connections, at most half the process's file limit (pool_plan.connection_cap). Made once
    (service.py) and given to every engine of the process."""
    return cap if cap is not None else ConnectionCap(connection_cap(config.max_connections, _file_limit()))


def _cancel_timer(timer: asyncio.TimerHandle) -> Callable[[object], None]:
    return lambda _done: timer.cancel()


class Engine:
    def __init__(self, config: EngineConfig | None = None, cap: ConnectionCap | None = None) -> None:
        """`cap`: the helper's one cap on connections (connection_cap.py), shared with every other engine it runs;
        without one, the engine has a cap of its own (config.max_connections, at most half the file limit)."""
        self.config = config or EngineConfig()
        self.policies: dict[PolicyKey, OriginPolicy] = {}  # learned this session (policy_key)
        # One pool per origin, address space, top-level site and window kind: a private window's connections (and
        # the TLS sessions they resume) are never a normal window's, as in the browser's own network stack.
        self._pools: dict[tuple[Origin, AddressSpace, str, bool], OriginPool] = {}
        self._seq = itertools.count()
        self._open_connections = 0
        self.cap = shared_cap(self.config, cap)
        self._batches: set[_BatchTracker] = set()
        self._by_id: dict[str, Exchange] = {}
        self._tls: ssl.SSLContext | None = None
        self._trust_watch = system_trust.StoreWatch()  # when the trust store's files changed: _tls made again
        self.last_arrival = 0.0  # when response bytes last arrived on any connection (pool.delivered; body_stall.py)
        self.host_link = HostLink()  # whether the host's interfaces have been quiet too (body_stall.py)
        #: Told each new connection's origin and TCP connect time in seconds (one round trip).
        self.on_connected: Callable[[Origin, float], None] | None = None
        #: Told whose policy a connection's end taught something against pipelining (a demotion, a keep-alive limit):
        #: that may come after every batch using the origin returned (bytes nobody asked for on an idle connection),
        #: so it is kept then (service.py), not only at the end of a next batch the helper may never run.
        self.on_policy_changed: Callable[[PolicyKey], None] | None = None

    # -- public API ----------------------------------------------------------------------------------------

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page | None = None) -> BatchResult:
        """Fetch all requests, streaming into sink; returns when every request has ended or failed."""
        page = page or Page()
        loop = asyncio.get_running_loop()
        tracker = _BatchTracker([])
        self._batches.add(tracker)
        tracker.max_concurrent = self._open_connections
        try:
            network: list[Exchange] = []
            for req in requests:
                req.method = req.method.upper()
                try:
                    target = validate(req)
                    if req.browser_warm and not req.conditional:
                        # Only the network is left to answer it, and the browser's own connection there is warmer
                        # than any of ours can be (the extension's browser-warm-connection.ts says why).
                        raise FetchError("browser_warm", "the browser's own connection to this origin is warm and idle:"
                                         " the browser fetches this itself")
                except Exception as e:  # this request's error; the batch goes on
                    if not isinstance(e, FetchError):
                        log.exception("validating request %.128r", req.id)
                        e = FetchError("internal", f"request not fetched: {e!r}")
                    ex = Exchange(req, None, sink, next(self._seq), 0)
                    tracker.exchanges.append(ex)
                    await ex.fail(e)
                    continue
                ex = Exchange(req, target, sink, next(self._seq), self.config.max_retries)
                tracker.exchanges.append(ex)
                self._by_id[req.id] = ex
                timer = loop.call_later(self.config.total_timeout, self._expire, ex)
                ex.done.add_done_callback(_cancel_timer(timer))
                network.append(ex)
            for ex in network:
                assert ex.target is not None
                self._pool_for(ex.target.origin, page).submit(ex)
            await asyncio.gather(*(ex.done for ex in tracker.exchanges))
        finally:
            self._batches.discard(tracker)
            for ex in tracker.exchanges:
                if self._by_id.get(ex.request.id) is ex:
                    del self._by_id[ex.request.id]
        used = {ex.connection.id for ex in tracker.exchanges if ex.connection is not None}
        return BatchResult(len(used), tracker.max_concurrent)

    def preconnect(self, url: str, page: Page | None = None, handshake: Handshake = "full") -> bool:
        """Start a connection to url's origin before any request needs it (bad URLs are ignored); False when none
        was started (one is open or opening already, or a bad URL). `handshake`: pool_plan.preconnect_plan."""
        try:
            target = parse_target(url)
        except FetchError:
            return False
        page = page or Page()
        return self._pool_for(target.origin, page).preconnect(handshake, for_page=bool(page.url))

    async def cancel(self, request_ids: list[str]) -> None:
        for rid in request_ids:
            ex = self._by_id.get(rid)
            if ex is not None:
                await ex.fail(FetchError("cancelled", "cancelled by the caller"))

    async def cancel_and_close(self, request_id: str) -> None:
        """Cancel a request whose answer must not be read to its end (a whole body nobody wants): over HTTP/1.1
        the connection carrying it is closed (requests pipelined behind it are retried on another, as after any
        lost connection); over HTTP/2 only its stream is reset."""
        ex = self._by_id.get(request_id)
        if ex is None:
            return
        carriers = [c for pool in self._pools.values() for c in pool.connections if c.carries(ex)]
        await self.cancel([request_id])
        for carrier in carriers:
            carrier.abandon(ex)

    async def aclose(self) -> None:
        for pool in self._pools.values():
            pool.stop_opening()  # the room each frees under the cap goes to other engines' pools, not to a sibling's
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()

    # -- used by pools and connections -----------------------------------------------------------------------

    def next_connection_id(self) -> int:
        return self.cap.next_id()  # unique over the engines sharing the cap: it counts connections by id

    def tcp_connected(self, origin: Origin, timing: ConnectTiming, policy: OriginPolicy) -> None:
        if timing.connect_start is None or timing.connect_end is None:
            return
        # The kernel's measure where it explains the connect time (rtt_sample.py: never a sample too small).
        rtt = handshake_round_trip(timing.connect_end - timing.connect_start, timing.handshake_rtt)
        policy.observe_round_trip(rtt)  # remembered for the next session (origin_memory.py)
        if self.on_connected is not None:
            self.on_connected(origin, rtt)

    def policy_changed(self, policy: OriginPolicy) -> None:
        if self.on_policy_changed is not None:
            for key in [k for k, p in self.policies.items() if p is policy]:
                self.on_policy_changed(key)

    def tls_context(self) -> ssl.SSLContext:
        """The context a new TLS connection is made with: made again when the files of the trust store it read
        changed (system_trust.py), so a CA removed from the store is no longer trusted, and one added is."""
        t = now()
        if self._tls is None or self._trust_watch.due(t):
            seen = system_trust.stamp(trust_paths(self.config.ca_file))  # before reading: a change meanwhile is seen
            if self._trust_watch.changed(seen, t) or self._tls is None:
                self._tls = make_tls_context(self.config.ca_file, http2=self.config.http2)
        return self._tls

    # The cap over all origins and engines (connection_cap.py): the pools' calls, passed on.
    def admit(self, pool: OriginPool, wanted: int, wait: bool = True, evict: bool = True) -> int:
        return self.cap.admit(pool, wanted, wait, evict)

    def connection_counted(self, pool: OriginPool, conn_id: int) -> None:
        self.cap.counted(pool, conn_id)

    def connection_released(self, pool: OriginPool, conn_id: int) -> None:
        self.cap.released(pool, conn_id)

    def room_may_have_come(self) -> None:
        self.cap.serve()

    def pool_closed(self, pool: OriginPool) -> None:
        self.cap.forget(pool)

    def connection_opened(self, conn: Carrier) -> None:
        self._open_connections += 1
        for b in self._batches:
            b.max_concurrent = max(b.max_concurrent, self._open_connections)

    def connection_closed(self, conn: Carrier) -> None:
        if conn.transport is not None:
            self._open_connections -= 1

    # -- internals -------------------------------------------------------------------------------------------

    def _pool_for(self, origin: Origin, page: Page) -> OriginPool:
        key = (origin, page.address_space, page.partition, page.private_browsing)
        pool = self._pools.get(key)
        if pool is None:
            policy = self.policies.setdefault(policy_key(origin, page), OriginPolicy(self.config.effective_depth))
            tls = self.tls_context() if origin.scheme == "https" else None
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
