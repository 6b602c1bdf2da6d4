"""The proxy side of one native-messaging session: a secret, one engine, and a listener per page context
the extension asked for (proxy_open / proxy_close). Firefox caches proxied responses itself, so this
engine has no HTTP cache of its own; what it learns of each origin (pipelining, protocol, round trip:
cache/origin_memory.py) is kept in the host's cache database (`records`), so a Firefox session starts where the
last one left off."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from pathlib import Path

from ..cache.http_cache import HttpCache
from ..engine import EngineConfig, Page
from ..service import FetchService, ServiceConfig
from . import ca_firefox
from .admission import Admission
from .ca_certs import Site
from .ca_sites import HttpsSites, SyncResult, https_root
from .server import ProxyListener, ProxyObserver
from .tls_terminator import TlsTerminator

MAX_LISTENERS = 256  # page contexts open at once; the oldest is closed beyond this


class ProxyService:
    def __init__(self, config: EngineConfig, observer: ProxyObserver, https_data: Path | None = None, *,
                 records: Callable[[Page], HttpCache | None] | None = None) -> None:
        self.secret = secrets.token_urlsafe(24)
        # No cache of responses (Firefox keeps its own); the origins' records where `records` says
        self.fetcher = FetchService(ServiceConfig(config), records=records)
        self._observer = observer
        self._listeners: dict[str, ProxyListener] = {}
        # One count of connections for all listeners: the total caps hold however many contexts are open.
        self.admission: Admission[asyncio.StreamWriter] = Admission()
        # HTTPS sites the user opted into (ca_sites.py): nothing is terminated until the extension names them.
        # At hello Firefox may not have opened its certificate store yet: the first sync waits for it (≤ 5 s).
        self.https = HttpsSites(https_data or https_root(), ca_firefox.parent_firefox(),
                                find=lambda: ca_firefox.parent_firefox(wait_s=5.0))
        self.tls = TlsTerminator(self.https)
        self._sync_lock = asyncio.Lock()

    async def sync_https(self, sites: list[Site]) -> SyncResult:
        """Make the opted-in set true (certutil runs in a thread); one sync at a time."""
        async with self._sync_lock:
            return await asyncio.to_thread(self.https.sync, sites)

    async def open(self, context_id: str, page: Page) -> ProxyListener:
        """The listener serving this page context (a context id names one page context for its lifetime)."""
        existing = self._listeners.get(context_id)
        if existing is not None and existing.page == page:
            return existing
        await self.close(context_id)
        if len(self._listeners) >= MAX_LISTENERS:
            await self.close(next(iter(self._listeners)))
        listener = ProxyListener(self.fetcher, page, self.secret, self._observer, context_id,
                                 connect_timeout=self.fetcher.config.engine.connect_timeout, tls=self.tls,
                                 admission=self.admission, speaks_h2=self._met_speaking_h2)
        await listener.start()
        self._listeners[context_id] = listener
        return listener

    async def _met_speaking_h2(self, url: str, page: Page) -> bool:
        """Did a handshake of this session choose h2 with url's origin? Only then are its CONNECTs tunnelled
        (server.py): one remembered from an earlier session leaves the session's first page of it ended here,
        where the helper speaks h2 to Firefox and its pool starts from what was remembered (measured against
        Firefox's own h2 over `sat`: 1.00-1.26x, docs/performance.md)."""
        return await self.fetcher.speaks_h2(url, page, remembered=False)

    async def close(self, context_id: str) -> None:
        listener = self._listeners.pop(context_id, None)
        if listener is not None:
            await listener.close()

    async def aclose(self) -> None:
        for cid in list(self._listeners):
            await self.close(cid)
        await self.fetcher.aclose()
