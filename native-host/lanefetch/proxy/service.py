"""The proxy side of one native-messaging session: a secret, one engine, and a listener per page context
the extension asked for (proxy_open / proxy_close). Firefox caches proxied responses itself, so this
engine has no HTTP cache of its own; what it learns of each origin (pipelining, protocol, round trip:
cache/origin_memory.py) is kept in the host's cache database (`records`), so a Firefox session starts where the
last one left off. The listeners fetch through a PageLoads of their own (prefetch/page_loads.py): the extension
names each document it routes to a context (navigation), the context's requests are that page's load, learned
(under FIREFOX_PAGES), read for what they name and answered from the page's prefetch flight."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..cache.http_cache import HttpCache
from ..engine import EngineConfig, Page
from ..engine.connection_cap import ConnectionCap
from ..engine.errors import FetchError
from ..engine.request import parse_target
from ..prefetch.page_loads import LoadEnded, PageLoads
from ..service import FetchService, ServiceConfig
from . import ca_firefox
from .admission import Admission
from .ca_certs import Site
from .ca_sites import HttpsSites, SyncResult, https_root
from .server import ProxyListener, ProxyObserver
from .tls_terminator import TlsTerminator

MAX_LISTENERS = 256  # page contexts open at once; the oldest is closed beyond this (and `evicted` told)
# Firefox's learned pages, apart from Chromium's in the same database: each replays its own browser's fields
FIREFOX_PAGES = "firefox "


def _no_responses(page: Page) -> HttpCache | None:
    """Firefox caches proxied responses itself: the helper keeps none (and never answers from a cache another
    browser's helper filled in the same database)."""
    return None


async def _unreported(ended: LoadEnded) -> None:
    """A page load's report with nobody to hear it."""


class ProxyService:
    def __init__(self, config: EngineConfig, observer: ProxyObserver, https_data: Path | None = None, *,
                 records: Callable[[Page], HttpCache | None] | None = None,
                 page_ended: Callable[[LoadEnded], Awaitable[None]] | None = None,
                 evicted: Callable[[str], Awaitable[None]] | None = None, cap: ConnectionCap | None = None) -> None:
        """`cap`: the helper's cap on connections (engine/connection_cap.py), the host service's: the proxy's
        upstream connections count under it with the host's own."""
        self.secret = secrets.token_urlsafe(24)
        # No cache of responses (Firefox keeps its own); the origins' records where `records` says
        self.fetcher = FetchService(ServiceConfig(config), records=records, cap=cap)
        # A page context's requests are its page's load (ProxyService.navigation): learned where `records` keeps
        # them, its document and stylesheets read for what they name, and answered from the page's prefetch flight.
        # Bodies go to Firefox as the server coded them, so the flight asks with Firefox's own Accept-Encoding
        # (PageLoads: decode). What it flies that is not render-blocking, to an origin that speaks h2, waits for
        # Firefox's render-blocking requests around it (holds_for: proxy/gather.py says why only there).
        self.loads = PageLoads(self.fetcher, _no_responses, page_ended or _unreported,
                               records_for=records if records is not None else _no_responses,
                               link_room=self.fetcher.link_room, decode=False, namespace=FIREFOX_PAGES,
                               reaches_here=self._reaches_here, sheet_sets_site=True, holds_for=self._met_speaking_h2)
        self._observer = observer
        # Hears of each context whose listener open() closed to make room: the extension still routes its tab to that
        # port (which another context's listener may get next) until it is told.
        self._evicted = evicted
        self._listeners: dict[str, ProxyListener] = {}
        # One count of connections for all listeners: the total caps hold however many contexts are open.
        self.admission: Admission[asyncio.StreamWriter] = Admission()
        # HTTPS sites the user opted into (ca_sites.py): nothing is terminated until the extension names them.
        # At hello Firefox may not have opened its certificate store yet: the first sync waits for it (≤ 5 s).
        self.https = HttpsSites(https_data or https_root(), ca_firefox.parent_firefox(),
                                find=lambda: ca_firefox.parent_firefox(wait_s=5.0))
        self.tls = TlsTerminator(self.https)
        self._sync_lock = asyncio.Lock()

    def _reaches_here(self, url: str) -> bool:
        """Does Firefox send its request for url to this helper? Plain http of a routed page, yes; https only to a
        site the user opted in (its CONNECT ended here; otherwise a tunnel the helper never reads)."""
        try:
            target = parse_target(url)
        except FetchError:
            return False
        return target.origin.scheme == "http" or self.tls.covers(target.origin)

    async def sync_https(self, sites: list[Site]) -> SyncResult:
        """Make the opted-in set true (certutil runs in a thread); one sync at a time."""
        async with self._sync_lock:
            return await asyncio.to_thread(self.https.sync, sites)

    async def open(self, context_id: str, page: Page) -> ProxyListener:
        """The listener serving this page context (a context id names one page context for its lifetime). The
        context's page is its tab's site, never one document: which page its requests belong to is told per
        navigation (navigation)."""
        page = dataclasses.replace(page, url=None)
        existing = self._listeners.get(context_id)
        if existing is not None and existing.page == page:
            return existing
        await self.close(context_id)
        if len(self._listeners) >= MAX_LISTENERS:
            oldest = next(iter(self._listeners))
            await self.close(oldest)
            if self._evicted is not None:
                await self._evicted(oldest)
        listener = ProxyListener(self.loads, page, self.secret, self._observer, context_id,
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

    async def navigation(self, context_id: str, url: str) -> bool:
        """The context's tab navigates to `url` (its document routed to this context's listener): the context's
        requests from now on are that page's load, which begins (page_loads.py: its flight starts if its earlier
        loads taught one; nothing is learned in private browsing). False where the page's requests will not come
        here: no such context, or an https page whose CONNECT is tunnelled (Firefox's own h2:
        ProxyListener.hands_to_firefox; a flight would be waste)."""
        listener = self._listeners.get(context_id)
        if listener is None:
            return False
        try:
            target = parse_target(url)
        except FetchError:
            listener.page_url = None
            return False
        # Set before anything is awaited: the document may arrive while the h2 question is answered
        page_url = listener.page_url = url.split("#", 1)[0]
        if target.origin.scheme == "https" and not await listener.ends_here(target.origin):
            if listener.page_url == page_url:  # (not told of a later document meanwhile)
                listener.page_url = None
            return False
        self.loads.navigation(dataclasses.replace(listener.page, url=page_url))
        return True

    def navigation_elsewhere(self, context_id: str) -> None:
        """The context's tab shows a page whose document went to the network directly (its origin fast): what
        still comes here (another origin's requests) belongs to no page load, so the previous page learns nothing
        of this one's."""
        listener = self._listeners.get(context_id)
        if listener is not None:
            listener.page_url = None

    async def close(self, context_id: str) -> None:
        listener = self._listeners.pop(context_id, None)
        if listener is not None:
            await listener.close()

    async def aclose(self) -> None:
        for cid in list(self._listeners):
            await self.close(cid)
        await self.loads.aclose()  # the loads under way end (recorded), then the service closes
