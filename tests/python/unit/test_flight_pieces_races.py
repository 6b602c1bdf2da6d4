"""flight_pieces' shell (PieceFetcher) when a first piece's rest is under way and something else happens: a cancel
while the rest's batch is starting, the rest's fetcher breaking, the first piece failing after its head. The inner
fetcher is scripted, as the engine behaves but with its timing in the test's hands: a cancel of an id it has not
registered yet is ignored (Engine.cancel), and a batch registers its ids only after an await (the service's
cache.plan and _recall run in a thread), which is the window these races need. Every request ends exactly once."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable

from lanefetch.engine import BatchResult, DeliveredHead, FetchError, FetchRequest, Page, Sink, TimingReport
from lanefetch.engine.fields import Headers
from lanefetch.engine.pool_plan import Handshake
from lanefetch.engine.timing import RequestTiming
from lanefetch.prefetch.flight_pieces import PIECE_BYTES, PieceFetcher, rest_ranges

BODY = bytes(i % 251 for i in range(200_000))


class Scripted:
    """Answers each range of BODY as a 206 once `flowing` is set; a batch after the first registers its ids only once
    `registering` is set (or raises, `broken_rest`)."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.cancelled: dict[str, asyncio.Event] = {}
        self.flowing = asyncio.Event()
        self.registering = asyncio.Event()
        self.registering.set()
        self.served: list[str] = []
        self.broken_rest = False
        self.first_fails_after_head = False

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        self.batches.append([r.id for r in requests])
        if len(self.batches) > 1:
            await self.registering.wait()
            if self.broken_rest:
                raise RuntimeError("the fetcher broke")
        for r in requests:
            self.cancelled[r.id] = asyncio.Event()
        await asyncio.gather(*(self._serve(r, sink) for r in requests))
        return BatchResult(1, 1)

    async def _serve(self, r: FetchRequest, sink: Sink) -> None:
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", dict(r.headers)["Range"])
        assert m is not None
        first, last = int(m[1]), min(int(m[2]) if m[2] else len(BODY) - 1, len(BODY) - 1)
        await sink.head(r, DeliveredHead(206, "Partial Content", "1.1", [
            ("ETag", '"v1"'), ("Content-Range", f"bytes {first}-{last}/{len(BODY)}")], False))
        if self.first_fails_after_head and r.id.endswith("piece0"):
            await sink.error(r, FetchError("connection_lost", "reset"))
        else:
            waits = [asyncio.create_task(self.flowing.wait()), asyncio.create_task(self.cancelled[r.id].wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if self.cancelled[r.id].is_set():
                await sink.error(r, FetchError("cancelled", "cancelled by the caller"))
            else:
                self.served.append(r.id)
                await sink.body(r, BODY[first : last + 1])
                await sink.end(r, last - first + 1, [])
        await sink.timing(r, TimingReport(RequestTiming(queued=0.0), None, 0, 0))

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        return False

    async def cancel(self, request_ids: list[str]) -> None:
        for rid in request_ids:
            event = self.cancelled.get(rid)  # an id not registered yet: ignored, as Engine.cancel does
            if event is not None:
                event.set()

    async def aclose(self) -> None:
        return None


class Events:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.data = b""

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        self.log.append(f"head {head.status}")

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.data += data

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        self.log.append("end")

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self.log.append(f"error {error.code}")

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.log.append("timing")

    def outcomes(self) -> list[str]:
        return [e for e in self.log if e in ("end", "timing") or e.startswith("error")]


async def _anywhere(url: str, page: Page) -> bool:
    return True


def _image() -> FetchRequest:  # a first visit's image: its size not known
    return FetchRequest("img", "GET", "http://a.example/p.png", [("Accept", "image/*")], resource_type="image",
                        decode=True)


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never: {what}")


REST = len(rest_ranges(len(BODY)))


async def test_all_pieces_served_join_into_the_body() -> None:
    inner = Scripted()
    inner.flowing.set()
    sink = Events()
    await PieceFetcher(inner, _anywhere).fetch([_image()], sink, Page())
    assert [len(b) for b in inner.batches] == [1, REST] and REST >= 2
    assert sink.log == ["head 200", "end", "timing"] and sink.data == BODY
    assert len(BODY) > PIECE_BYTES


async def test_a_cancel_while_the_rest_is_starting_reaches_the_rest_too() -> None:
    inner = Scripted()
    inner.registering.clear()  # the rest's batch is not known to the engine yet
    fetcher = PieceFetcher(inner, _anywhere)
    sink = Events()
    task = asyncio.create_task(fetcher.fetch([_image()], sink, Page()))
    await _until(lambda: len(inner.batches) == 2, "the rest's batch started")
    await fetcher.cancel(["img"])  # the flight closed, or its budget cut it
    inner.registering.set()
    await _until(lambda: all(inner.cancelled.get(i, asyncio.Event()).is_set() for i in inner.batches[1]),
                 "every piece of the rest cancelled at its head")
    inner.flowing.set()
    await task
    assert inner.served == [], "nothing of a cancelled request's rest is downloaded"
    assert sink.outcomes() == ["error cancelled", "timing"]


async def test_a_rest_whose_fetcher_breaks_ends_the_request_once_with_an_error() -> None:
    inner = Scripted()
    inner.broken_rest = True
    sink = Events()
    task = asyncio.create_task(PieceFetcher(inner, _anywhere).fetch([_image()], sink, Page()))
    await _until(lambda: len(inner.batches) == 2, "the rest's batch started")
    inner.flowing.set()
    await task
    assert sink.outcomes() == ["error internal", "timing"]


async def test_a_first_piece_failing_after_its_head_cancels_its_rest() -> None:
    inner = Scripted()
    inner.first_fails_after_head = True
    sink = Events()
    task = asyncio.create_task(PieceFetcher(inner, _anywhere).fetch([_image()], sink, Page()))
    await _until(lambda: sink.outcomes() != [], "the request ended")
    assert sink.outcomes() == ["error connection_lost", "timing"], "ended without waiting for the rest's bytes"
    inner.flowing.set()
    await task
    assert inner.served == []


class Overlong(Scripted):
    """Answers each range with the 206 head it asked for, the first piece's body running on past its range (up to
    `limit` chunks, until cancelled): a server whose Content-Length or chunked body says more than its
    Content-Range."""

    CHUNK = 16 * 1024

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.overlong_sent = 0

    async def _serve(self, r: FetchRequest, sink: Sink) -> None:
        if not r.id.endswith("piece0"):
            self.flowing.set()
            await super()._serve(r, sink)
            return
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", dict(r.headers)["Range"])
        assert m is not None
        first, last = int(m[1]), int(m[2])
        await sink.head(r, DeliveredHead(206, "Partial Content", "1.1", [
            ("ETag", '"v1"'), ("Content-Range", f"bytes {first}-{last}/{len(BODY)}")], False))
        for _ in range(self.limit):
            if self.cancelled[r.id].is_set():
                await sink.error(r, FetchError("cancelled", "cancelled by the caller"))
                break
            await sink.body(r, bytes(self.CHUNK))
            self.overlong_sent += self.CHUNK
            await asyncio.sleep(0)
        else:
            await sink.end(r, self.overlong_sent, [])
        await sink.timing(r, TimingReport(RequestTiming(queued=0.0), None, 0, 0))


async def test_a_piece_whose_body_runs_past_its_range_is_cut_there_not_held() -> None:
    # A piece is held until every piece checked out, out of the flight budget's sight: a 206 whose body goes on past
    # the range its Content-Range gives (join refuses it anyway) was kept whole in memory, however large.
    limit = 1024  # 16 MiB, were it never cut
    inner = Overlong(limit)
    fetcher = PieceFetcher(inner, _anywhere)
    sink = Events()
    request = dataclasses.replace(_image(), expected_size=len(BODY))  # a known split: every piece asked at once
    await fetcher.fetch([request], sink, Page())
    assert inner.overlong_sent < PIECE_BYTES + 4 * Overlong.CHUNK, "the piece was cut soon after its range's end"
    assert sink.outcomes() == ["error cancelled", "timing"]
    assert fetcher.discarded_bytes == inner.overlong_sent
