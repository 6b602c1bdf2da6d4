"""One page's flight: fetch what the page will ask for into a holding area, and answer the browser's later
requests from it only where fidelity.py says the server could not have answered differently.

Used by page_loads.py (the host's wiring, Chromium debugger mode; docs/prefetch.md). Two parts:

- `Flight`: given a page (its partition, address space, privacy) and a plan (`Planned`: URL, the request fields
  to send, the engine's resource type, whether the item is confident, its expected size), it admits each item
  through the page's budget ledger (budget.py) in plan order, sends the admitted ones as ONE batch through the
  fetcher it was given (the service's: same pools, pipelining or h2, address policy, Accept-Encoding as the
  helper asks for the browser), and keeps every response whole in memory (head, body, trailers, when its head
  arrived on the injected clock), never in the HTTP cache (`cache_store=False`: a stored prefetch would answer,
  through the cache, a request the fidelity rule refused it to; a fresh cache hit may still answer a prefetch, and
  an item the cache holds stale, `Planned.stored`, is revalidated: a 304 refreshes the stored response and its
  body is held, `cache_refresh`) until a browser request claims it (below).
  Body bytes are counted as they arrive; when the ledger says an item's class is
  over its limit the fetch is cancelled and the item discarded. Never sent: anything but GET, and any request
  with Cookie or Authorization (the helper holds no credentials of the user's; a prefetch must not carry any
  the browser would not send, and one without them would never match a credentialed request anyway).
- `FlightAnswers`: a Fetcher around another (the service). For each request of a batch but a page's fetch()/XHR (never
  answered from a prefetch: fidelity.py): if the page's flight holds prefetches for that URL, it waits for them to
  finish (their bytes are already on their way: waiting is never slower than asking again) and asks
  fidelity.may_answer about each, comparing the request's fields as the helper would send them (engine/request.py
  `sent_headers`, as the service would); the first match is claimed and served whole (head, body, end, timing with
  cache "prefetch", "hit" where the helper's HTTP cache had answered the prefetch fresh: the flight saved nothing
  there, or "revalidated" where a 304 refreshed the stored response it answers with). Everything else, and every
  request of a page without a flight, goes to the inner fetcher untouched. A claimed prefetch answers one request
  only.
  Claimed, it is the answer to that request, and is stored in the helper's HTTP cache as the service would have
  stored it (`_keep`): a fulfilled answer never enters the browser's own cache, so the page's next request for the
  URL (Chromium asks for the favicon after the load, often an image the page already showed) would otherwise
  fetch it whole a second time, where the browser alone answers it from its cache or revalidates it (real-pages
  flask-tutorial's second visit: 6.9 kB more on the downlink, 1.04 x OFF's bytes). Only an answer that came from
  the network as the server coded it (not decoded for the page, its place on the connection proven): the cache
  keeps bodies as the server sent them.

A request waiting on a prefetch can be cancelled like any other (it ends as `cancelled` at once), and a flight
whose batch ends without answering an item (a fetcher that raised, a cancel) leaves no request waiting on it.

After its first refusal by the fidelity rule a flight sends nothing more (what waits is dropped, what a later
discovery adds is refused): the fields it was planned with, or the page, proved wrong once, and more of the same
would only be waste; that bounds a wrong field profile's cost to what was under way at that moment. A request that
one of several prefetches of its URL answers is no refusal (a page may ask one URL in two ways, a no-cors preload
and a cors module script: the one prefetch not answering the other's request proves nothing wrong).

`Flight.close()` ends the page: fetches still running are cancelled, everything unclaimed is discarded as waste,
and the report says how many requests were answered from the flight, and the bytes claimed and wasted.
Counting is in body bytes as the sink sees them (decoded where the request decodes), so waste is over- rather
than under-counted when bodies arrive compressed."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..cache.http_cache import HttpCache, cache_url
from ..cache.policy import SAFE_METHODS
from ..cache.tap import CacheTap
from ..engine.errors import FetchError
from ..engine.exchange import DeliveredHead, Sink, TimingReport
from ..engine.fetcher import BatchResult, Fetcher, Page
from ..engine.fields import Headers
from ..engine.pool_plan import HEAD_BYTES, Handshake
from ..engine.request import FetchRequest, sent_headers
from ..engine.response_parser import ResponseHead
from ..engine.timing import RequestTiming, now
from .budget import Ledger
from .fidelity import MAX_AGE, Prefetched, Verdict, may_answer, request_refusal, script_request
from .flight_pieces import LinkRoom, PieceFetcher
from .plan import Planned

log = logging.getLogger(__name__)

CHUNK = 256 * 1024
_NEVER_SENT = frozenset({"cookie", "authorization"})
_ids = itertools.count(1)


@dataclass
class _Held:
    request: FetchRequest
    head: DeliveredHead | None = None
    fetched_at: float = 0.0
    sent_at: float = 0.0  # epoch seconds, when the flight sent it (the request time of an HTTP cache entry)
    body: list[bytes] = field(default_factory=list)
    trailers: Headers = field(default_factory=list)
    error: FetchError | None = None
    over_budget: bool = False
    claimed: bool = False
    waiters: int = 0  # browser requests waiting for it (take): while any does, the budget does not cut it
    source: str = "none"  # where the flight's fetch was answered from (its timing's cache: none, hit, revalidated)
    wire_bytes: int = 0  # what its fetch put on the link (its timing's)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def prefetched(self) -> Prefetched | None:
        if self.head is None or self.error is not None or self.over_budget:
            return None
        return Prefetched(self.request.method, self.request.url, list(self.request.headers), self.head.status,
                          self.head.headers, self.fetched_at)


@dataclass
class FlightReport:
    planned: int = 0
    sent: int = 0
    refused_by_budget: int = 0
    cancelled_by_budget: int = 0
    answered: int = 0
    refused_by_fidelity: dict[str, int] = field(default_factory=dict)
    claimed_bytes: int = 0
    wasted_bytes: int = 0


class Flight:
    def __init__(self, fetcher: Fetcher, page: Page, ledger: Ledger, *,
                 clock: Callable[[], float] = time.monotonic, max_age: float = MAX_AGE,
                 split_where: LinkRoom | None = None) -> None:
        # A large image or font is asked in pieces over several connections where `split_where` says the link has
        # room for it (flight_pieces.py); None: nowhere. One of unknown size is weighed by the page's budget at its
        # size, once known, before its rest is asked.
        self._fetcher = self._pieces = PieceFetcher(fetcher, split_where, ledger.expect)
        self.page = page
        self.ledger = ledger
        self._clock = clock
        self._max_age = max_age
        self._held: dict[str, _Held] = {}  # by request id
        self._by_url: dict[str, list[_Held]] = {}
        self._tasks: list[asyncio.Task[BatchResult]] = []
        self._cancels: set[asyncio.Task[None]] = set()
        #: called with each prefetch that arrived whole (2xx or not): page_loads.py reads stylesheets from it
        self.on_arrived: Callable[[FetchRequest, DeliveredHead, bytes], None] | None = None
        #: whether a deferred item is still worth sending (page_loads.py: the browser did not ask for it yet)
        self.still_wanted: Callable[[str], bool] = lambda url: True
        self._deferred: list[Planned] = []  # confident items the budget had no room for yet, in plan order
        self.distrusted = False  # the fidelity rule refused one of its prefetches: it sends nothing more
        self.report = FlightReport()
        self.closed = False

    def start(self, plan: list[Planned]) -> None:
        """Admit and send the plan as one batch (in the background). Called again (discovery found more), the
        new items join the same holding area and ledger as another batch."""
        if self.closed:
            return
        self.report.planned += len(plan)
        self._send([item for item in plan if not any(k.lower() in _NEVER_SENT for k, _ in item.headers)])

    def _release(self) -> None:
        """Budget came free (a prefetch was claimed, discarded or ended smaller than its estimate): send the
        deferred items that fit now and that the browser has not asked for meanwhile."""
        if self._deferred and not self.closed:
            deferred, self._deferred = self._deferred, []
            self._send([item for item in deferred if self.still_wanted(item.url)])

    def _send(self, plan: list[Planned]) -> None:
        if self.distrusted:  # its fields (or the page) proved wrong once: more of the same would be waste
            self.report.refused_by_budget += len(plan)
            return
        requests: list[FetchRequest] = []
        for item in plan:
            # What the helper's cache holds stale is revalidated: the link carries a 304 (a head), the body comes
            # from the cache, so the budget, which weighs link bytes, admits it at nothing
            request = FetchRequest(f"prefetch-{next(_ids)}", "GET", item.url, list(item.headers),
                                   resource_type=item.resource_type, decode=item.decode, cache_store=False,
                                   cache_refresh=item.stored, expected_size=item.expected_size,
                                   expected_wire=HEAD_BYTES if item.stored else item.expected_wire)
            # A revalidation is no guess of its own: the helper's cache holds the response because this page asked
            # for it before. Counted as a guess, a full answer where a 304 was expected (Apache sends one for every
            # file it compresses: its suffixed ETag never matches) pushed the page's guesses over their limit as it
            # arrived, was cut whole and asked again by the browser (rust-std returned to in one tab, learned from one
            # load: six stylesheets, scripts and icons asked twice)
            confident = item.confident or item.stored
            if self._deferred or not self.ledger.admit(request.id, confident=confident,
                                                       expected_size=0 if item.stored else item.expected_size):
                if confident:  # waits for room (in order: nothing overtakes a deferred item)
                    self._deferred.append(item)
                else:
                    self.report.refused_by_budget += 1
                continue
            held = _Held(request, sent_at=time.time())
            self._held[request.id] = held
            self._by_url.setdefault(item.url, []).append(held)
            requests.append(request)
        self.report.sent += len(requests)
        if not requests:
            return
        task = asyncio.create_task(self._fetcher.fetch(requests, _HoldSink(self), self.page),
                                   name="lanefetch-prefetch-flight")
        batch = [self._held[r.id] for r in requests]
        task.add_done_callback(lambda t: self._batch_ended(t, batch))
        self._tasks.append(task)

    def _batch_ended(self, task: asyncio.Task[BatchResult], batch: list[_Held]) -> None:
        """However the batch ended (a fetcher that raised or was cancelled included), no browser request may wait
        on a prefetch forever: whatever did not end is an error, never an answer."""
        if not task.cancelled() and task.exception() is not None:
            log.warning("prefetch batch failed: %r", task.exception())
        for held in batch:
            if not held.done.is_set():
                held.error = held.error or FetchError("internal", "the prefetch batch ended without an answer")
                held.done.set()

    async def wait(self) -> None:
        """Until every prefetch of the flight has ended (for tests and the page report)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._cancels:
            await asyncio.gather(*self._cancels, return_exceptions=True)

    def holds(self, url: str) -> bool:
        return any(not h.claimed for h in self._by_url.get(url, ()))

    def invalidate(self, url: str) -> None:
        """The page sent a request of an unsafe method to url (RFC 9111 §4.4): what the flight fetched for it may no
        longer be what the server would answer, so it answers no later request of the page (discarded, counted as
        wasted, at close). A request that is already waiting for one was asked before, and keeps it."""
        self._by_url.pop(url, None)

    async def take(self, request: FetchRequest) -> _Held | None:
        """The held response that may answer this browser request (claimed for it), or None."""
        if self.closed:
            return None
        headers = sent_headers(request)  # the fields as the service would send them
        # The age limit (fidelity.MAX_AGE) is the prefetch's age when the browser asked: a large body on a slow link
        # may take longer than the limit to come after its head, the request waiting for it all along (judged at
        # its end, it was refused as too old and the whole body fetched a second time)
        asked_at = self._clock()
        # Why each prefetch of the URL did not answer: refusals only if none does. A page may ask one URL in two ways
        # (a no-cors preload and a cors module script): one prefetch not answering the other's request says nothing
        # against the flight's fields.
        refusals: list[str] = []
        for held in list(self._by_url.get(request.url, ())):
            if held.claimed:
                continue
            # What refuses this request whatever the prefetch's answer is known now: such a request neither lifts
            # the budget off the prefetch (an unusable guess growing unbounded) nor waits for its whole body.
            early = request_refusal(sent_headers(held.request), request.method.upper(), request.url,
                                    held.request.url, headers, request.resource_type)
            if early is None and held.request.decode != request.decode:
                early = Verdict(False, "decode")
            if early is not None:
                refusals.append(early.reason)
                continue
            self.ledger.asked(held.request.id)  # requested now: the budget no longer cuts it (budget.py)
            held.waiters += 1
            try:
                await held.done.wait()
            finally:
                held.waiters -= 1
                if not held.waiters and not held.done.is_set():
                    # Cancelled while it came, nobody else waiting: a guess again, within the budget, or one
                    # unbounded body would cross the link for nobody.
                    self.ledger.unasked(held.request.id)
            prefetched = held.prefetched()
            if held.claimed or prefetched is None or self.closed:
                continue
            verdict = may_answer(prefetched, request.method.upper(), request.url, headers,
                                 now=max(asked_at, prefetched.fetched_at), max_age=self._max_age,
                                 resource_type=request.resource_type)
            if verdict.ok:
                held.claimed = True
                self.ledger.claim(held.request.id)
                self._release()
                self.report.answered += 1
                return held
            refusals.append(verdict.reason)
        for reason in refusals:
            self._refused(request.url, reason)
        return None

    def _refused(self, url: str, reason: str) -> None:
        """The fidelity rule refused a prefetch of url for a browser request: counted, and the flight distrusted
        (its fields, or the page, proved wrong once: more of the same would be waste)."""
        log.debug("the prefetch of %s may not answer the browser's request: %s", url, reason)
        counts = self.report.refused_by_fidelity
        counts[reason] = counts.get(reason, 0) + 1
        if not self.distrusted:
            self.distrusted = True
            self.report.refused_by_budget += len(self._deferred)
            self._deferred = []

    async def close(self) -> FlightReport:
        """End the page: cancel what still runs, discard everything unclaimed; the page's report."""
        self.closed = True
        self.report.refused_by_budget += len(self._deferred)  # never found room
        self._deferred = []
        running = [h.request.id for h in self._held.values() if not h.done.is_set()]
        if running:
            await self._fetcher.cancel(running)
        await self.wait()
        for held in self._held.values():
            if not held.claimed:
                self.ledger.discard(held.request.id)
        self.report.claimed_bytes = self.ledger.claimed_bytes
        # pieces of a split answer that were never handed on crossed the link all the same
        self.report.wasted_bytes = self.ledger.wasted_bytes + self._pieces.discarded_bytes
        return self.report

    # the holding sink's side

    def _over_budget(self, held: _Held) -> None:
        log.debug("the prefetch of %s is cut: the page's budget is spent (%s)", held.request.url, self.ledger.limits)
        held.over_budget = True
        self.report.cancelled_by_budget += 1
        held.body.clear()
        self.ledger.discard(held.request.id)
        task = asyncio.create_task(self._fetcher.cancel([held.request.id]), name="lanefetch-prefetch-cancel")
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)


class _HoldSink:
    """Keeps each prefetched response whole, counting its bytes against the page's budget."""

    def __init__(self, flight: Flight) -> None:
        self._flight = flight

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        held = self._flight._held[request.id]
        held.head = head
        held.fetched_at = self._flight._clock()

    async def body(self, request: FetchRequest, data: bytes) -> None:
        held = self._flight._held[request.id]
        if held.over_budget:  # still arriving after the cancel: it crossed the link all the same
            self._flight.ledger.received(request.id, len(data))
            return
        if held.head is not None and held.head.stored:  # from the helper's cache (a 304 refreshed it): not link bytes
            held.body.append(data)
            return
        if not self._flight.ledger.received(request.id, len(data)):
            self._flight._over_budget(held)
            return
        held.body.append(data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        # done at its timing, which follows: it says where the response came from (held.source)
        self._flight._held[request.id].trailers = trailers

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        log.debug("the prefetch of %s failed: %s", request.url, error)
        held = self._flight._held[request.id]
        held.error = error
        held.done.set()

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        held = self._flight._held[request.id]
        held.source = report.cache
        held.wire_bytes = report.wire_bytes
        held.done.set()
        self._flight.ledger.finished(request.id)
        self._flight._release()
        arrived = self._flight.on_arrived
        if arrived is not None and held.head is not None and held.error is None and not held.over_budget:
            arrived(request, held.head, b"".join(held.body))


class FlightAnswers:
    """A Fetcher that answers a page's requests from its flight where fidelity allows, the rest through inner."""

    def __init__(self, inner: Fetcher, flight_for: Callable[[Page], Flight | None],
                 cache_for: Callable[[Page], HttpCache | None] | None = None) -> None:
        self.inner = inner
        self._flight_for = flight_for
        self._cache_for = cache_for
        self._waiting: dict[str, asyncio.Task[None]] = {}  # requests waiting on a prefetch, by id
        self._cancelled: set[str] = set()

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        flight = self._flight_for(page)
        if flight is None:
            return await self.inner.fetch(requests, sink, page)
        for r in requests:
            if r.method.upper() not in SAFE_METHODS:
                # A request of an unsafe method that comes this way (Firefox's proxy sends every method): its URL's
                # copy answers nothing later, as Chromium's `invalidate` message does for one it sends itself.
                flight.invalidate(r.url)
        # A page's fetch()/XHR goes its way untouched (fidelity.py: its cache mode is not seen here, and Chromium
        # never answers one with a copy it fetched unasked): not a refusal, so it neither waits nor distrusts the
        # flight, whose copy of the URL (an image of the same URL, say) still answers the request it was made for.
        maybe = [r for r in requests
                 if r.method.upper() == "GET" and not script_request(r.resource_type) and flight.holds(r.url)]
        direct = [r for r in requests if r not in maybe]
        tasks = [asyncio.create_task(self._from_flight(flight, r, sink, page), name=f"lanefetch-flight-{r.id}")
                 for r in maybe]
        try:
            result = await self.inner.fetch(direct, sink, page)
        finally:
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        return result

    async def _from_flight(self, flight: Flight, request: FetchRequest, sink: Sink, page: Page) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._waiting[request.id] = task
        try:
            held = await flight.take(request)
        except asyncio.CancelledError:
            if request.id not in self._cancelled:
                raise
            self._cancelled.discard(request.id)  # the caller cancelled this request while it waited
            await sink.error(request, FetchError("cancelled", "cancelled by the caller"))
            await sink.timing(request, TimingReport(RequestTiming(queued=now()), None, 0, 0))
            return
        finally:
            self._waiting.pop(request.id, None)
        if held is None or held.head is None:
            await self.inner.fetch([request], sink, page)
            return
        timing = RequestTiming(queued=now())
        body = b"".join(held.body)
        held.body = []  # answered once: the flight need not keep it (the ledger keeps its count)
        try:
            timing.first_byte = now()
            await sink.head(request, held.head)
            for i in range(0, len(body), CHUNK):
                await sink.body(request, body[i : i + CHUNK])
            timing.last_byte = now()
            await sink.end(request, len(body), held.trailers)
        except asyncio.CancelledError:
            await sink.error(request, FetchError("cancelled", "the helper is shutting down"))
            raise
        except Exception as e:  # a failing sink must not leave the request hanging
            await sink.error(request, FetchError("internal", f"serving from the prefetch failed: {e!r}"))
        else:
            self._keep(held, request, page, body)
        # A prefetch the helper's cache answered is what it was: a cache hit (fresh: nothing on the wire), or the
        # stored response a 304 revalidated (ahead of the browser's request: the panel counts it with the cache's
        # revalidations). One that came whole from the network reports what its fetch put on the link (the panel's
        # "on the wire", the page's learned load); a revalidated one's bytes were a 304's, not the answer's.
        wire = held.wire_bytes if held.source == "none" else 0
        source = held.source if held.source in ("hit", "revalidated") else "prefetch"
        await sink.timing(request, TimingReport(timing, None, 0, wire, source))

    def _keep(self, held: _Held, request: FetchRequest, page: Page, body: bytes) -> None:
        """Store a claimed prefetch in the page's HTTP cache as the answer to `request` (module docstring): only one
        that came from the network (not from the cache, which holds it already), as the server coded it and
        proven in its place, for a request the cache may store. Its Vary is keyed on the fields the prefetch was
        sent with, which the fidelity rule found the same as the browser's where the server could vary."""
        head = held.head
        if (self._cache_for is None or head is None or not request.cache_store or held.source != "none"
                or head.decoded or head.unproven):
            return
        cache = self._cache_for(page)
        if cache is None:
            return
        tap = CacheTap(cache.writes(page.partition), "GET", cache_url(request.url), list(held.request.headers),
                       held.sent_at, cache.max_entry_bytes)
        tap.on_head(ResponseHead(head.status, head.reason, head.http_version, head.headers))
        tap.on_body(body)
        tap.on_complete(held.trailers)

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        return self.inner.preconnect(url, page, handshake)

    async def cancel(self, request_ids: list[str]) -> None:
        """A request still waiting on a prefetch ends at once as cancelled; one already handed to the inner
        fetcher (or not known here) is the inner fetcher's to cancel."""
        for rid in request_ids:
            task = self._waiting.get(rid)
            if task is not None and not task.done():
                self._cancelled.add(rid)
                task.cancel()
        await self.inner.cancel(request_ids)

    async def aclose(self) -> None:
        await self.inner.aclose()
