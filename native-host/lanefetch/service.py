"""The composition root: the one place that puts fetching together, for the native host, the CLI and the
Firefox proxy alike.

    consumer's sink  ←  DecodingSink (stream/)           bodies to identity where the consumer asks
    FetchService     →  SplittingFetcher (lanes/)        `split` GETs as byte ranges over the interfaces
                     →  CachingFetcher (cache/)          hits, conditional requests, taps (when a cache is set)
                     →  Engine (engine/)                 pools → connections → HTTP/1.1 pipelining

Each layer is a Fetcher (engine/fetcher.py) around the next; none of them builds another. What the helper
asks of a request before any layer sees it (Accept-Encoding as the browser would) is done here too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .cache.caching_fetcher import CachingFetcher
from .cache.http_cache import HttpCache
from .cache.memory_store import MemoryStore
from .cache.sqlite_store import SqliteStore
from .engine.config import EngineConfig
from .engine.engine import Engine
from .engine.exchange import Sink
from .engine.fetcher import BatchResult, Fetcher, Page
from .engine.origin_policy import OriginPolicy
from .engine.request import FetchRequest, Origin, with_accept_encoding
from .lanes.split_fetch import SplitFetcher
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
    def __init__(self, config: ServiceConfig | None = None, warn: Callable[[str], None] | None = None) -> None:
        self.config = config or ServiceConfig()
        self.engine = Engine(self.config.engine)
        self._caches: dict[bool, HttpCache] = {}  # by private_browsing
        inner: Fetcher = self.engine
        if self.config.cache_dir is not None:
            inner = CachingFetcher(inner, self._cache)
        self._splitting = SplittingFetcher(inner, self.config.engine, self.config.lanes, warn)

    @property
    def policies(self) -> dict[Origin, OriginPolicy]:
        return self.engine.policies

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page | None = None) -> BatchResult:
        for req in requests:
            req.method = req.method.upper()
            with_accept_encoding(req, urlsplit(req.url).scheme.lower())
        return await self._splitting.fetch(requests, DecodingSink(sink), page or Page())

    def preconnect(self, url: str, page: Page | None = None) -> bool:
        return self._splitting.preconnect(url, page or Page())

    async def cancel(self, request_ids: list[str]) -> None:
        await self._splitting.cancel(request_ids)

    async def cancel_and_close(self, request_id: str) -> None:
        await self.engine.cancel_and_close(request_id)

    def splitter(self) -> SplitFetcher:
        return self._splitting.splitter()

    async def lanes_changed(self) -> None:
        await self._splitting.lanes_changed()

    def cache_for(self, page: Page) -> HttpCache | None:
        """The HTTP cache this page's requests use: the persistent one, or for private browsing one in memory
        that never touches the disk; None when the service runs without a cache."""
        return None if self.config.cache_dir is None else self._cache(page)

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
            self._caches[page.private_browsing] = cache
        return cache

    async def aclose(self) -> None:
        await self._splitting.aclose()
        for cache in self._caches.values():
            await cache.aclose()
        self._caches.clear()
