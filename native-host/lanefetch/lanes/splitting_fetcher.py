"""The split as a fetcher around another: a request marked `split` (a GET without its own Range) is fetched
as byte ranges over the network interfaces (split_fetch.py), on connections of its own, never behind small
requests; everything else goes to the inner fetcher. It owns the lanes' lifecycle: built on first use,
renewed when the interface policy changes (the ones under way finish on the lanes they started on, which
close afterwards), and a request to this machine's own addresses splits over the default route alone
(a socket bound to an interface cannot reach loopback)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Callable

from ..engine.address_policy import address_space_of
from ..engine.config import EngineConfig
from ..engine.connection_cap import ConnectionCap
from ..engine.errors import FetchError
from ..engine.exchange import Sink
from ..engine.fetcher import BatchResult, Fetcher, Page
from ..engine.host_names import is_localhost_name
from ..engine.pool_plan import Handshake
from ..engine.request import FetchRequest, parse_target
from .split_fetch import LaneObserver, SplitFetcher, make_fetcher


def _on_this_machine(host: str) -> bool:
    if is_localhost_name(host):  # never asked of the resolver: 127.0.0.1 and ::1
        return True
    try:
        return address_space_of(host) == "loopback"
    except ValueError:  # a name, not an address
        return False


def wants_split(request: FetchRequest) -> bool:
    return request.split and request.method.upper() == "GET" and not any(
        k.lower() == "range" for k, _ in request.headers)


class SplittingFetcher:
    def __init__(self, inner: Fetcher, config: EngineConfig, lanes: list[tuple[str, float]] | None,
                 warn: Callable[[str], None] | None = None, cap: ConnectionCap | None = None) -> None:
        """`cap`: the helper's cap on connections (connection_cap.py), which the lanes' engines share with the
        inner fetcher's; None: the lanes share one of their own."""
        self.inner = inner
        self._cap = cap
        self._config = config
        self._lanes = lanes  # by name, or None: the user's interface policy
        self._warn = warn
        self._split: SplitFetcher | None = None
        self._split_local: SplitFetcher | None = None  # targets on this machine: one lane, the default route
        self._busy: dict[SplitFetcher, int] = {}  # split requests under way, per fetcher
        self._retired: set[SplitFetcher] = set()  # replaced after a policy change, closed once idle
        self._closing: set[asyncio.Task[None]] = set()  # retired ones closing
        self.on_lane_bytes: LaneObserver | None = None  # given to whichever split fetcher runs a request

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        split: list[asyncio.Task[None]] = []
        rest: list[FetchRequest] = []
        for req in requests:
            target = None
            if wants_split(req):
                try:
                    target = parse_target(req.url)
                except FetchError:
                    target = None  # the inner fetcher says what is wrong with it
            if target is None:
                rest.append(req)
                continue
            fetcher = self._local_splitter() if _on_this_machine(target.origin.host) else self.splitter()
            # Busy from now on, not from when its task first runs (a policy change meanwhile must not close it),
            # until the task is done (even cancelled before it ran).
            self._busy[fetcher] = self._busy.get(fetcher, 0) + 1
            task = asyncio.create_task(self._split_fetch(fetcher, req, sink, page))
            task.add_done_callback(functools.partial(self._split_done, fetcher))
            split.append(task)
        try:
            result = await self.inner.fetch(rest, sink, page)
            await asyncio.gather(*split)
        finally:
            for task in split:
                task.cancel()
        return result

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        return self.inner.preconnect(url, page, handshake)

    async def cancel(self, request_ids: list[str]) -> None:
        await self.inner.cancel(request_ids)
        for fetcher in [*self._busy]:
            for rid in request_ids:
                await fetcher.cancel(rid)

    def splitter(self) -> SplitFetcher:
        """The lanes for split requests: by name, or the interfaces the user's policy allows."""
        if self._split is None:
            self._split = make_fetcher(self._config, self._lanes, self._warn, self._cap)
        return self._split

    def _local_splitter(self) -> SplitFetcher:
        if self._split_local is None:
            self._split_local = make_fetcher(dataclasses.replace(self._config), [], cap=self._cap)
        return self._split_local

    async def lanes_changed(self) -> None:
        """The interface policy changed: later split requests get lanes chosen anew."""
        old, self._split = self._split, None
        if old is not None and old in self._busy:
            self._retired.add(old)
        elif old is not None:
            await old.aclose()

    async def _split_fetch(self, fetcher: SplitFetcher, req: FetchRequest, sink: Sink, page: Page) -> None:
        fetcher.on_lane_bytes = self.on_lane_bytes
        await fetcher.fetch(req, sink, page)

    def _split_done(self, fetcher: SplitFetcher, task: asyncio.Task[None]) -> None:
        self._busy[fetcher] -= 1
        if not self._busy[fetcher]:
            del self._busy[fetcher]
            if fetcher in self._retired:
                self._retired.discard(fetcher)
                closing = asyncio.get_running_loop().create_task(fetcher.aclose())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        await self.inner.aclose()
        await asyncio.gather(*self._closing)
        for fetcher in {*self._retired, *[f for f in (self._split, self._split_local) if f is not None]}:
            await fetcher.aclose()
        self._split, self._split_local, self._retired = None, None, set()
