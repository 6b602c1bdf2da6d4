"""The page loads under way, each with its flight: the asyncio shell that wires learning and flights to the
browser's navigations and batches (the decisions are in load_log.py, plan.py, budget.py, fidelity.py).

`PageLoads` is a Fetcher around the service (the host puts it on top of the chain: above the cache, the split
and the engine, so a prefetched response answers before any of them is asked):

- `navigation(page)`: a navigation of an enabled site starts (the extension's `preconnect`). The page's load
  begins (load_log.load_key: never for private browsing or without a top-level site); a load of the same page
  that already saw requests ends first. In the background the page's learned history is recalled
  (page_memory.py, exact page only: the template key needs the document's stylesheets, and discovery is not
  wired yet), planned (plan.py, nothing discovered) and, if the plan is not empty, flown (flight.py) through the
  inner fetcher, within the page's budget. Left out: what the helper's HTTP cache holds (fresh, it answers the
  browser as fast; stale, the browser's own request revalidates it, where a prefetch would fetch the whole body
  again), and what the browser already asked for while the history was read (it went its own way).
- `fetch(batch)`: a batch naming a page with a load under way is logged (load_log.LoadLog: URL, fields, wave,
  size as delivered) and goes through `FlightAnswers`, which answers from the flight where fidelity allows and
  passes the rest to the inner fetcher. A batch of a page without a load goes to the inner fetcher as before.
- A load ends at the next navigation of its page, when it is idle (load_log.IDLE_S on the injected clock, checked
  whenever a navigation or batch arrives, and by a timer every IDLE_S of the event loop while loads are under
  way), or when the helper stops (`aclose`). Ending:
  the flight is closed (what runs is cancelled, the unclaimed is waste), the load's requests are recorded into
  the page's memory (the cache's worker thread), and `on_end` gets the page's report.
- Clearing the cache (`forget`) also forgets the loads under way: they record nothing when they end.
- At most MAX_LOADS loads are kept; beyond that the oldest ends (its flight's memory is bounded by its budget).

Recording and recalling are the page memory's (never for private browsing; partitioned by top-level site;
cleared with the cache)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..cache.http_cache import HttpCache, cache_url
from ..cache.policy import Hit, Revalidate
from ..engine.errors import FetchError
from ..engine.exchange import DeliveredHead, Sink, TimingReport
from ..engine.fetcher import BatchResult, Fetcher, Page
from ..engine.fields import Headers
from ..engine.request import FetchRequest, with_accept_encoding
from .budget import Ledger
from .flight import Flight, FlightAnswers, FlightReport
from .load_log import IDLE_S, LoadKey, LoadLog, load_key
from .page_memory import PageMemory
from .plan import Planned, plan

log = logging.getLogger(__name__)

MAX_LOADS = 32


@dataclass(frozen=True)
class LoadEnded:
    """One page load's report: what its flight did (None: no flight, nothing learned to fly), how many of its
    requests were recorded for the next loads, and the id of its first request (None: no batch came)."""

    page: Page
    url: str
    flight: FlightReport | None
    recorded: int
    first_request: str | None = None


@dataclass
class _Load:
    key: LoadKey
    page: Page
    log: LoadLog
    flight: Flight | None = None
    starting: asyncio.Task[None] | None = None
    ended: bool = False
    forgotten: bool = False  # the cache was cleared while it ran: nothing of it is recorded


class _LoggingSink:
    """Passes everything on; tells the load's log what was delivered (size, for the wave of later batches)."""

    def __init__(self, inner: Sink, load: _Load, clock: Callable[[], float]) -> None:
        self._inner = inner
        self._load = load
        self._clock = clock

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        await self._inner.head(request, head)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        await self._inner.body(request, data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        self._load.log.ended(request.id, body_bytes, self._clock())
        await self._inner.end(request, body_bytes, trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self._load.log.failed(request.id, self._clock())
        await self._inner.error(request, error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        await self._inner.timing(request, report)


class PageLoads:
    def __init__(self, inner: Fetcher, cache_for: Callable[[Page], HttpCache | None],
                 on_end: Callable[[LoadEnded], Awaitable[None]], *, clock: Callable[[], float] = time.monotonic,
                 idle_s: float = IDLE_S) -> None:
        self.inner = inner
        self._memory = PageMemory(cache_for)
        self._cache_for = cache_for
        self._answers = FlightAnswers(inner, self._flight_for)
        self._on_end = on_end
        self._clock = clock
        self._idle_s = idle_s
        self._loads: dict[LoadKey, _Load] = {}
        self._ending: set[asyncio.Task[None]] = set()
        self._sweep: asyncio.TimerHandle | None = None

    def _flight_for(self, page: Page) -> Flight | None:
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        return load.flight if load is not None else None

    def navigation(self, page: Page) -> bool:
        """A navigation of `page` starts: its load begins (or a fresh one continues). False: nothing may be learned
        for this page (private browsing, no top-level site, not an http(s) URL)."""
        self._end_idle()
        key = load_key(page)
        if key is None:
            return False
        current = self._loads.get(key)
        if current is not None and current.log.fresh:
            return True
        previous = self._end_in_background(current) if current is not None else None
        load = _Load(key, page, LoadLog(self._clock()))
        self._loads[key] = load
        while len(self._loads) > MAX_LOADS:
            self._end_in_background(next(iter(self._loads.values())))
        load.starting = asyncio.create_task(self._start_flight(load, previous), name="lanefetch-prefetch-start")
        return True

    async def _start_flight(self, load: _Load, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:  # the page's previous load is recorded first: this one's plan learns from it
            await asyncio.gather(previous, return_exceptions=True)
        try:
            recalled = await self._memory.recall(load.page, load.key.page)
        except Exception:  # an unreadable store: the page loads as without a flight
            log.exception("recalling a page failed")
            return
        chosen = plan(recalled.exact, None, [])
        items = await self._not_cached(load.page, chosen.items)
        # What the browser asked for while the history was read went its own way: fetching it again is waste.
        items = [item for item in items if not load.log.requested(item.url)]
        if not items or load.ended:
            return
        flight = Flight(self.inner, load.page, Ledger(chosen.limits), clock=self._clock)
        flight.start(items)
        load.flight = flight

    async def _not_cached(self, page: Page, items: list[Planned]) -> list[Planned]:
        """The items the helper's HTTP cache holds nothing of. A fresh copy answers the browser's request as fast
        as a flight could; a stale one is the browser's request's to revalidate (a prefetch never stores, so it
        cannot turn a 304 into the stored body: it would fetch the whole body the cache already has)."""
        cache = self._cache_for(page)
        if cache is None or not items:
            return items
        queries = []
        for item in items:
            wire = FetchRequest("plan", "GET", item.url, list(item.headers))
            with_accept_encoding(wire, item.url.split(":", 1)[0].lower())  # as the service will send it
            queries.append(("GET", cache_url(item.url), wire.headers))
        decisions = await cache.plan(queries, page.top_site)
        if decisions is None:
            return items
        return [item for item, (decision, body) in zip(items, decisions, strict=True)
                if not (isinstance(decision, Hit | Revalidate) and body is not None)]

    def _end_idle(self) -> None:
        now = self._clock()
        for load in [x for x in self._loads.values() if x.log.is_idle(now, self._idle_s)]:
            self._end_in_background(load)
        # Also while no message comes: an idle load's flight holds memory (and its held responses are too old to
        # answer after fidelity.MAX_AGE anyway).
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep = asyncio.get_running_loop().call_later(self._idle_s, self._end_idle) if self._loads else None

    def _end_in_background(self, load: _Load) -> asyncio.Task[None]:
        if self._loads.get(load.key) is load:
            del self._loads[load.key]
        task = asyncio.create_task(self._end(load), name="lanefetch-page-end")
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)
        return task

    async def _end(self, load: _Load) -> None:
        load.ended = True
        try:
            if load.starting is not None:
                await load.starting  # a flight being set up is closed like one under way
            report = await load.flight.close() if load.flight is not None else None
            observed = [] if load.forgotten else load.log.observed()
            self._memory.record(load.page, load.key.page, None, observed,
                                keep_empty=load.flight is not None and not load.forgotten)
            await self._on_end(LoadEnded(load.page, load.key.page, report, len(observed), load.log.first_request))
        except Exception:  # nothing waits for it: a failure is logged, never the host's end
            log.exception("ending a page load failed")

    def forget(self) -> None:
        """The cache is being cleared: the loads under way will record nothing (what they saw so far is learned
        history too, and clearing forgets it all)."""
        for load in self._loads.values():
            load.forgotten = True

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        self._end_idle()
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        if load is None:
            return await self._answers.fetch(requests, sink, page)
        load.log.batch([(r.id, r.method, r.url, list(r.headers), r.resource_type) for r in requests], self._clock())
        return await self._answers.fetch(requests, _LoggingSink(sink, load, self._clock), page)

    def preconnect(self, url: str, page: Page) -> bool:
        return self.inner.preconnect(url, page)

    async def cancel(self, request_ids: list[str]) -> None:
        await self._answers.cancel(request_ids)

    async def end_all(self) -> None:
        """Every load ends now (recorded, reported): the helper is stopping."""
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for load in list(self._loads.values()):
            self._end_in_background(load)
        while self._ending:
            await asyncio.gather(*list(self._ending), return_exceptions=True)

    async def aclose(self) -> None:
        await self.end_all()
        await self.inner.aclose()
