"""The composition root: the one place that puts fetching together, for the native host, the CLI and the
Firefox proxy alike.

    consumer's sink  ←  DecodingSink (stream/)           bodies to identity where the consumer asks
    FetchService     →  SplittingFetcher (lanes/)        `split` GETs as byte ranges over the interfaces
                     →  CachingFetcher (cache/)          hits, conditional requests, taps (when a cache is set)
                     →  Engine (engine/)                 pools → connections → HTTP/1.1 pipelining

Each layer is a Fetcher (engine/fetcher.py) around the next; none of them builds another. What the helper
asks of a request before any layer sees it (Accept-Encoding as the browser would) is done here too, and so is
remembering what was learned about each origin across helper restarts (cache/origin_memory.py: kept in the
cache's store, per top-level site, never for private browsing), and connecting ahead of a page to the origins
its site's earlier loads used (preconnect_site). A service that keeps no responses (the Firefox proxy's: Firefox
caches them itself) may still keep those records, in another service's store (`records`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .cache.caching_fetcher import CachingFetcher
from .cache.http_cache import HttpCache
from .cache.memory_store import MemoryStore
from .cache.origin_memory import Record, heed, policy_from, preconnect_origins, record_of
from .cache.sqlite_store import SqliteStore
from .engine.config import EngineConfig
from .engine.connection_cap import ConnectionCap
from .engine.engine import Engine, PolicyKey, policy_key, shared_cap
from .engine.errors import FetchError
from .engine.exchange import Sink
from .engine.fetcher import BatchResult, Fetcher, Page
from .engine.origin_policy import OriginPolicy
from .engine.pool_plan import Handshake, roomy_bdp
from .engine.request import FetchRequest, Origin, parse_target, with_accept_encoding
from .lanes.split_fetch import LaneObserver, SplitFetcher
from .lanes.splitting_fetcher import SplittingFetcher
from .stream.decoding_sink import DecodingSink


@dataclass
class ServiceConfig:
    engine: EngineConfig = field(default_factory=EngineConfig)
    cache_dir: Path | None = None  # the persistent HTTP cache's directory; None: no cache at all
    cache_max_bytes: int = 512 * 1024 * 1024  # stored heads and bodies, LRU beyond this
    private_cache_max_bytes: int = 64 * 1024 * 1024  # in memory, for private-browsing pages only
    lanes: list[tuple[str, float]] | None = None  # split requests: (interface, weight); None: policy, [] default


class FetchService:
    def __init__(self, config: ServiceConfig | None = None, warn: Callable[[str], None] | None = None, *,
                 records: Callable[[Page], HttpCache | None] | None = None, cap: ConnectionCap | None = None) -> None:
        """`records`: where what is learned of origins is kept (origin_memory.py), when not in this service's own
        cache: the Firefox proxy's service stores no responses, and keeps its records in the host's cache database
        (one database, one writer; cleared with it). `cap`: the helper's cap on connections (engine/connection_cap.py)
        where another service of the process made it (the proxy's shares the host's): every engine of this service
        (the main one, the split fetches' lanes) counts under it; without one, this service makes the process's
        (`self.cap`)."""
        self.config = config or ServiceConfig()
        self._records = records
        self.cap = shared_cap(self.config.engine, cap)
        self.engine = Engine(self.config.engine, self.cap)
        self.engine.on_policy_changed = self._policy_changed
        self._caches: dict[bool, HttpCache] = {}  # by private_browsing
        # The (partition, origin) pairs whose records this session has read: an origin met under one site is read
        # again under another, whose own record's evidence against pipelining must not be lost (_recall).
        self._recalled: set[tuple[str, Origin]] = set()
        # Policies learned before the records were cleared with the cache (forget_learned): used on, never kept again.
        self._forgotten: set[PolicyKey] = set()
        inner: Fetcher = self.engine
        if self.config.cache_dir is not None:
            inner = CachingFetcher(inner, self._cache)
        self._splitting = SplittingFetcher(inner, self.config.engine, self.config.lanes, warn, self.cap)

    @property
    def policies(self) -> dict[PolicyKey, OriginPolicy]:
        return self.engine.policies

    async def link_room(self, url: str, page: Page) -> bool:
        """Is url's origin known (this session, or remembered under page's site) to have a link that carries
        BALANCE_BDP or more per round trip? Where it is, a flight's large answers come in pieces
        (prefetch/flight_pieces.py) and its images are spread over the connections at once (pool_plan.balances)."""
        try:
            origin = parse_target(url).origin
        except FetchError:
            return False
        await self._recall([url], page)  # what an earlier session learned of it, as a fetch would start from
        policy = self.engine.policies.get(policy_key(origin, page))
        bdp = None if policy is None else policy.link_bdp
        room = roomy_bdp(bdp) is not None
        logging.getLogger("lanefetch.service").info("%s: link's estimate %s bytes per round trip: %s", origin, bdp,
                                                    "room for pieces" if room else "no room")
        return room

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page | None = None) -> BatchResult:
        page = page or Page()
        for req in requests:
            req.method = req.method.upper()
            try:
                scheme = urlsplit(req.url).scheme.lower()
            except ValueError:  # not a URL: the engine answers this request with its error, the others go on
                continue
            with_accept_encoding(req, scheme)
        origins = await self._recall([r.url for r in requests], page)
        try:
            return await self._splitting.fetch(requests, DecodingSink(sink), page)
        finally:
            self._remember(origins, page)

    async def recall(self, url: str, page: Page) -> None:
        """Start url's origin from what an earlier session learned of it under page's site, unless this session
        met it already. Call before preconnect: the pool a preconnect opens keeps the policy it starts with."""
        await self._recall([url], page)

    def remembered_round_trip(self, url: str, page: Page) -> float | None:
        """url's origin's round trip (s) as an earlier session measured it under page's site, while this session has
        measured none there (recall first)."""
        try:
            origin = parse_target(url).origin
        except FetchError:
            return None
        policy = self.engine.policies.get(policy_key(origin, page))
        if policy is None or policy.round_trip is not None or policy.remembered_round_trip is None:
            return None
        return policy.remembered_round_trip[0]

    async def _recall(self, urls: list[str], page: Page) -> list[Origin]:
        """Start each origin this session has not met yet under this site from what an earlier session learned
        under it."""
        cache = self.records_for(page)
        origins: list[Origin] = []
        for url in urls:
            try:
                origin = parse_target(url).origin
            except FetchError:  # a bad URL: the engine answers it with its error
                continue
            if origin not in origins:
                origins.append(origin)
        if cache is None or page.private_browsing:
            return origins
        # Unmet this session, or met under another site only: this site's record may say the origin misbehaved.
        unread = [o for o in origins if (page.partition, o) not in self._recalled]
        self._recalled.update((page.partition, o) for o in unread)
        now = time.time()
        for name, raw in (await cache.learned(page.partition, [str(o) for o in unread])).items():
            origin = next(o for o in unread if str(o) == name)
            try:
                policy = policy_from(json.loads(raw), self.config.engine.effective_depth, now)
            except (ValueError, RecursionError):  # RecursionError: a damaged row nested past the decoder's limit
                policy = None
            if policy is None:
                continue
            key = policy_key(origin, page)
            if key not in self.engine.policies:
                self.engine.policies[key] = policy
            else:  # met already (a pool made before the record was read): its evidence against pipelining applies
                heed(self.engine.policies[key], policy)
        return origins

    def _remember(self, origins: list[Origin], page: Page) -> None:
        cache = self.records_for(page)
        if cache is None or page.private_browsing:
            return
        now = time.time()
        records = {}
        for origin in origins:
            key = policy_key(origin, page)
            policy = None if key in self._forgotten else self.engine.policies.get(key)
            record = None if policy is None else record_of(policy, now)
            if record is not None:
                records[str(origin)] = json.dumps(record)
        cache.learn(page.partition, records)

    def _policy_changed(self, key: PolicyKey) -> None:
        """A connection's end taught the session something against pipelining to an origin: kept at once, as a
        batch's end keeps it, since every batch using the origin may have returned and the helper may stop before
        another comes (a demotion lost so, the next session started optimistic against a server known bad)."""
        origin, partition, private = key
        # Where records are kept depends only on the window kind (records_for), never on the site.
        cache = None if private else self.records_for(Page(private_browsing=False))
        policy = None if key in self._forgotten else self.engine.policies.get(key)
        record = None if cache is None or policy is None else record_of(policy, time.time())
        if cache is not None and record is not None:
            cache.learn(partition, {str(origin): json.dumps(record)})

    def forget_learned(self) -> None:
        """The cache is being cleared, and the origin records kept in it: what this session learned of origins so far
        is cleared history too, never written back. The session goes on using it (a demoted origin stays demoted,
        an h2 one is still known to speak h2), but keeps no record of an origin it knew before the clear."""
        self._forgotten.update(self.engine.policies)

    async def speaks_h2(self, url: str, page: Page, *, remembered: bool = True) -> bool:
        """Is url's origin known to choose HTTP/2: learned this session, or (`remembered`) remembered under page's
        site?"""
        if remembered:
            origins = await self._recall([url], page)
        else:  # this session's handshakes only: no need to read the records
            try:
                origins = [parse_target(url).origin]
            except FetchError:
                origins = []
        policy = self.engine.policies.get(policy_key(origins[0], page)) if origins else None
        return policy is not None and policy.protocol == "h2" and (remembered or policy.protocol_seen)

    def preconnect(self, url: str, page: Page | None = None, handshake: Handshake = "full") -> bool:
        return self._splitting.preconnect(url, page or Page(), handshake)

    async def preconnect_site(self, page: Page, handshake: Handshake = "full") -> list[str]:
        """A page of page.top_site starts: connect to the origins the site's earlier loads used (what was learned
        under it, freshest first; never for private browsing), each starting from what was learned of it, with the
        navigation's `handshake` (a `tcp` one still opens every connection of an origin remembered as HTTP/1.1
        only: pool_plan.preconnect_plan). Returns the origins a connection was started to (none where one is open
        or opening already)."""
        cache = self.records_for(page)
        if cache is None or page.private_browsing or not page.top_site:
            return []
        records: dict[str, Record] = {}
        # (the page's partition: a container's pages connect to what that container's loads used, never another's)
        for name, raw in (await cache.site_learned(page.partition)).items():
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):  # as _recall
                continue
            if isinstance(record, dict):
                records[name] = record
        now = time.time()
        started = []
        for name in preconnect_origins(records, now):
            try:
                origin = parse_target(name + "/").origin
            except FetchError:
                continue
            policy = policy_from(records[name], self.config.engine.effective_depth, now)
            if policy is not None and policy_key(origin, page) not in self.engine.policies:
                self.engine.policies[policy_key(origin, page)] = policy
            if self.preconnect(name + "/", page, handshake):
                started.append(name)
        return started

    async def cancel(self, request_ids: list[str]) -> None:
        await self._splitting.cancel(request_ids)

    async def cancel_and_close(self, request_id: str) -> None:
        await self.engine.cancel_and_close(request_id)

    def splitter(self) -> SplitFetcher:
        return self._splitting.splitter()

    def observe_lanes(self, observer: LaneObserver | None) -> None:
        """observer(request id, lane name, bytes) as each piece of a split body arrives on its lane."""
        self._splitting.on_lane_bytes = observer

    async def lanes_changed(self) -> None:
        await self._splitting.lanes_changed()

    def cache_for(self, page: Page) -> HttpCache | None:
        """The HTTP cache this page's requests use: the persistent one, or for private browsing one in memory
        that never touches the disk; None when the service runs without a cache."""
        return None if self.config.cache_dir is None else self._cache(page)

    def records_for(self, page: Page) -> HttpCache | None:
        """Where what is learned of origins under this page's site is kept: `records` where the service was given
        one, else its own cache (None: nowhere, nothing is remembered)."""
        return self._records(page) if self._records is not None else self.cache_for(page)

    def _cache(self, page: Page) -> HttpCache:
        cache = self._caches.get(page.private_browsing)
        if cache is None:
            cfg = self.config
            where = cfg.cache_dir
            assert where is not None
            if page.private_browsing:
                size = cfg.private_cache_max_bytes
                cache = HttpCache(lambda: MemoryStore(size), max_entry_bytes=size // 8)
            else:
                size = cfg.cache_max_bytes
                cache = HttpCache(lambda: SqliteStore(where, size), max_entry_bytes=min(size // 8, 64 << 20))
                # Cleared by another process sharing the database (the other browser's helper, the CLI): what this
                # session learned before it is never written back (http_cache.py)
                cache.on_cleared(self.forget_learned)
            self._caches[page.private_browsing] = cache
        return cache

    async def aclose(self) -> None:
        await self._splitting.aclose()
        for cache in self._caches.values():
            await cache.aclose()
        self._caches.clear()
