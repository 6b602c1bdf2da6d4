"""What every layer of fetching offers: a batch of requests in, responses streamed into a sink, for a page.

The engine (pools of connections) implements it at the bottom; the cache (cache/caching_fetcher.py) and
the split over network interfaces (lanes/splitting_fetcher.py) implement it around another fetcher, and
lanefetch/service.py composes them once for the host, the CLI and the proxy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .address_policy import AddressSpace
from .exchange import Sink
from .pool_plan import Handshake
from .request import FetchRequest


@dataclass
class Page:
    """Who asks: the page's own address space bounds what the helper may reach for it; top_site (and, for the
    requests of a cross-site frame, frame_site) partitions connections, the cache and what is learned the way the
    browser partitions its own."""

    address_space: AddressSpace = "public"
    top_site: str = ""
    url: str | None = None
    private_browsing: bool = False
    # Set for the requests of a frame that is, or sits inside, a frame cross-site to the top-level page: that
    # frame's site. Chromium keys its HTTP cache by the top-level site and the frame's site, so an embedded site
    # cannot tell from the cache what the page loaded, nor the page what the embedded site did
    frame_site: str = ""
    # Firefox: the tab's container (its cookie store), set for a container's pages only. Firefox keeps a container's
    # cookies and connections apart from every other's; one connection carrying two containers' requests would
    # show a server that the identities the user keeps apart are one.
    cookie_store: str = ""

    @property
    def partition(self) -> str:
        """Where state kept for this page's requests lives (cache entries, origin records): the top-level site, and
        apart from it a cross-site frame's under both sites (never equal to a top-level site's own partition), and
        a Firefox container's pages under their cookie store too."""
        site = f"{self.top_site} ^{self.frame_site}" if self.frame_site else self.top_site
        return f"{site} @{self.cookie_store}" if self.cookie_store else site


@dataclass
class BatchResult:
    connections: int
    max_concurrent_connections: int


class Fetcher(Protocol):
    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        """Fetch every request, streaming into sink (one end or one error per request, then its timing);
        returns when all have ended."""
        ...

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        """Open a connection to url's origin ahead of work (`handshake`: pool_plan.preconnect_plan); False when
        none was started."""
        ...

    async def cancel(self, request_ids: list[str]) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ClosingFetcher(Fetcher, Protocol):
    """A Fetcher that can also give a request up for good: cancelled, and its connection not kept for the rest of
    an answer nobody will read (engine.Engine.cancel_and_close; the Firefox proxy's, when Firefox resets a stream)."""

    async def cancel_and_close(self, request_id: str) -> None: ...
