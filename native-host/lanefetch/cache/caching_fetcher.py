"""The cache as a fetcher around another (the engine): a batch is looked up in one go; fresh hits are served
from storage straight to the sink, stale entries become conditional requests that ride the same pipelined
connections as everything else, and every request that goes to the network is watched on its way back by
a tap (tap.py) that stores complete, storable responses and turns a 304 to our own revalidation into the
stored response.

The tap sits between the engine and the consumer's sink (`_TapSink`), so it sees each response as the
server coded it, after the engine proved its place on the connection: a pipelined answer reaches the
sink, and so the cache, only once proven (engine/pipeline.py); one let through unproven says so on its
head and is never stored. Private browsing gets a cache of its own that never touches the disk.

A stored body the consumer has decoded (`decode`: debugger mode) is checked to decode first, as Chromium would
decode it (stream/decode.py `decodes`, in a thread, once per entry and helper run: _DecodeChecks): one that does
not (stored broken by an earlier version, a prefetch that kept it as coded, a disk that changed it) would end its
request as `decode_failed` on every hit, and a conditional request would only have a 304 revalidate it. Its entry
is deleted and the request goes to the network as a miss, without conditional fields, its answer stored in its
place if it may be.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable

from ..engine.errors import FetchError
from ..engine.exchange import DeliveredHead, Sink, TimingReport
from ..engine.fetcher import BatchResult, Fetcher, Page
from ..engine.fields import Headers
from ..engine.pool_plan import Handshake
from ..engine.request import FetchRequest
from ..engine.response_parser import ResponseHead
from ..engine.timing import RequestTiming, now
from ..stream.decode import decodes
from .http_cache import HttpCache, Plan, cache_url
from .policy import Bypass, Hit, Miss, Revalidate, lookup_fields, served_headers
from .tap import CacheTap, Writes

HIT_CHUNK = 256 * 1024  # a hit's body goes to the sink in pieces this size (decoding stays incremental)


class CachingFetcher:
    def __init__(self, inner: Fetcher, cache_for: Callable[[Page], HttpCache]) -> None:
        self.inner = inner
        self._cache_for = cache_for
        self._checks = _DecodeChecks()

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        cache = self._cache_for(page)
        queries = [(r.method.upper(), cache_url(r.url), lookup_fields(r.headers, r.resource_type)) for r in requests]
        plans = await cache.plan(queries, page.partition)
        if plans is None:
            return await self.inner.fetch(requests, sink, page)
        taps = _TapSink(sink)
        network: list[FetchRequest] = []
        hits: list[asyncio.Task[None]] = []
        writes = cache.writes(page.partition)
        plans = await self._checks.without_undecodable(requests, plans, writes)
        sent_at = time.time()
        for req, (method, url, _), (decision, body) in zip(requests, queries, plans, strict=True):
            headers = list(req.headers)  # stored with the request as sent (the lookup's own field is not)
            if isinstance(decision, Hit) and body is not None:
                hits.append(asyncio.create_task(_serve_hit(sink, req, decision, body),
                                                name=f"lanefetch-hit-{req.id}"))
                continue
            wire = req
            revalidating = None
            if isinstance(decision, Revalidate) and body is not None and (req.cache_store or req.cache_refresh):
                revalidating = (decision.entry, body)
                wire = dataclasses.replace(req, headers=req.headers + decision.conditional)
            if (not (isinstance(decision, Bypass) and method == "GET") and req.cache_store) or revalidating:
                taps.watch(wire, req, CacheTap(writes, method, url, headers, sent_at, cache.max_entry_bytes,
                                                revalidating, store=req.cache_store))
            network.append(wire)
        try:
            result = await self.inner.fetch(network, taps, page)
        finally:
            if hits:
                await asyncio.gather(*hits, return_exceptions=True)
        return result

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        return self.inner.preconnect(url, page, handshake)

    async def cancel(self, request_ids: list[str]) -> None:
        await self.inner.cancel(request_ids)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TapSink:
    """Passes responses on to the consumer's sink, showing each watched one to its tap first; the consumer sees
    its own request object, never the conditional copy that went to the network."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._taps: dict[str, CacheTap] = {}
        self._originals: dict[str, FetchRequest] = {}
        self._substituted: dict[str, int] = {}  # a 304 answered with the stored body: its length
        self._failed: set[str] = set()

    def watch(self, wire: FetchRequest, original: FetchRequest, tap: CacheTap) -> None:
        self._taps[wire.id] = tap
        self._originals[wire.id] = original

    def _original(self, request: FetchRequest) -> FetchRequest:
        return self._originals.get(request.id, request)

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        tap = self._taps.get(request.id)
        original = self._original(request)
        if tap is not None and head.unproven:
            del self._taps[request.id]  # passed on before its place was proven: never stored
            tap = None
        if tap is None:
            await self._sink.head(original, head)
            return
        try:
            substitute = tap.on_head(ResponseHead(head.status, head.reason, head.http_version, head.headers))
        except FetchError as e:
            self._taps.pop(request.id, None)
            self._failed.add(request.id)
            await self._sink.error(original, e)
            return
        if substitute is None:
            await self._sink.head(original, head)
            return
        self._taps.pop(request.id, None)  # the 304 is done with: nothing more to record
        served = substitute.head
        await self._sink.head(original, DeliveredHead(served.status, served.reason, served.http_version,
                                                      served.headers, False, stored=True))
        for i in range(0, len(substitute.body), HIT_CHUNK):
            await self._sink.body(original, substitute.body[i : i + HIT_CHUNK])
        self._substituted[request.id] = len(substitute.body)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        if request.id in self._failed or request.id in self._substituted:
            return
        tap = self._taps.get(request.id)
        if tap is not None:
            tap.on_body(data)
        await self._sink.body(self._original(request), data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        if request.id in self._failed:
            return
        tap = self._taps.pop(request.id, None)
        if tap is not None:
            tap.on_complete(trailers)
        body_bytes = self._substituted.get(request.id, body_bytes)
        await self._sink.end(self._original(request), body_bytes, trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self._taps.pop(request.id, None)
        if request.id not in self._failed:
            await self._sink.error(self._original(request), error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        if request.id in self._substituted:
            report = dataclasses.replace(report, cache="revalidated")
        self._failed.discard(request.id)
        self._substituted.pop(request.id, None)
        await self._sink.timing(self._originals.pop(request.id, request), report)


class _DecodeChecks:
    """Which stored bodies a decoding request would fail on (the module's docstring). A body found to decode is
    remembered (its entry id, its head's response time and its length: a new answer stored, or a 304's refresh,
    is checked again) for the rest of the helper's run, so a body is decoded twice only at its first hit."""

    MAX = 4096

    def __init__(self) -> None:
        self._sound: OrderedDict[tuple[int, float, int], None] = OrderedDict()

    async def without_undecodable(self, requests: list[FetchRequest], plans: list[Plan], writes: Writes) -> list[Plan]:
        """The plans with every stored body that does not decode made a miss, its entry deleted."""
        stored = [(i, (d.entry.id, d.entry.head.response_time, len(body)), d.entry.head.get("content-encoding"), body)
                  for i, (req, (d, body)) in enumerate(zip(requests, plans, strict=True))
                  if req.decode and req.method.upper() == "GET" and body and isinstance(d, (Hit, Revalidate))
                  and d.entry.head.get("content-encoding")]
        unchecked = [s for s in stored if s[1] not in self._sound]
        for _, key, _, _ in stored:
            if key in self._sound:
                self._sound.move_to_end(key)
        if not unchecked:
            return plans
        verdicts = await asyncio.to_thread(lambda: [decodes(coding, body) for _, _, coding, body in unchecked])
        plans = list(plans)
        for (i, key, _, _), sound in zip(unchecked, verdicts, strict=True):
            if sound:
                self._sound[key] = None
                if len(self._sound) > self.MAX:
                    self._sound.popitem(last=False)
            else:
                writes.delete(key[0])
                plans[i] = (Miss(), None)
        return plans


async def _serve_hit(sink: Sink, request: FetchRequest, hit: Hit, body: bytes) -> None:
    """A fresh stored response with the same head/body/end/timing calls as one from the network."""
    timing = RequestTiming(queued=now())
    try:
        stored = hit.entry.head
        timing.first_byte = now()
        await sink.head(request, DeliveredHead(stored.status, stored.reason, stored.http_version,
                                               served_headers(stored, hit.age), False, stored=True))
        for i in range(0, len(body), HIT_CHUNK):
            await sink.body(request, body[i : i + HIT_CHUNK])
        timing.last_byte = now()
        await sink.end(request, len(body), [])
    except asyncio.CancelledError:
        await sink.error(request, FetchError("cancelled", "the helper is shutting down"))
        raise
    except Exception as e:  # a failing sink must not leave the request hanging
        await sink.error(request, FetchError("internal", f"serving from the cache failed: {e!r}"))
    await sink.timing(request, TimingReport(timing, None, 0, 0, "hit"))
