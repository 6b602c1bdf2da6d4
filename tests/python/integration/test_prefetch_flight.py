"""A prefetch flight through the real service and engine against an aiohttp server on 127.0.0.1: prefetched
responses answer the browser's later requests without reaching the server again; a request whose
credentials-relevant fields differ (a Cookie), or that comes after the copy's age limit, is fetched anew; a
response's Vary is honoured; a flight never sends credentials; the page's budget keeps guesses it cannot afford
unsent and cancels one that grows past it, even one the browser waits for past the hold ceiling; a passing server
error never answers."""

from __future__ import annotations

import asyncio
import gzip
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.engine import (
    BatchResult,
    DeliveredHead,
    EngineConfig,
    FetchError,
    FetchRequest,
    Page,
    Sink,
    TimingReport,
)
from lanefetch.engine.connection import Connection
from lanefetch.engine.pool import OriginPool
from lanefetch.engine.pool_plan import Warmth
from lanefetch.prefetch.budget import HOLD_CEILING, Ledger, Limits
from lanefetch.prefetch.flight import Flight, FlightAnswers
from lanefetch.prefetch.flight_pieces import PIECE_BYTES
from lanefetch.prefetch.plan import Planned
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app
from waits import until

CSS = b"body { color: #333 } " * 500
JS = b"console.log('x');" * 300
PNG = bytes(range(256)) * 40
BIG = bytes(range(256)) * 4096  # 1 MiB
PAGE = Page(address_space="loopback", top_site="http://127.0.0.1")
STYLE = [("Accept", "text/css,*/*;q=0.1"), ("Accept-Language", "en-GB"), ("Sec-Fetch-Dest", "style"),
         ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Site", "same-origin"), ("User-Agent", "UA/1")]
SCRIPT = [(k, {"Accept": "*/*", "Sec-Fetch-Dest": "script"}.get(k, v)) for k, v in STYLE]
IMAGE = [(k, {"Accept": "image/*", "Sec-Fetch-Dest": "image"}.get(k, v)) for k, v in STYLE]


PHOTO = bytes((i * 7) % 251 for i in range(100_000))
BOMB_SIZE = 24 * 1024 * 1024
BOMB = gzip.compress(bytes(BOMB_SIZE))  # what a hostile or broken server can send: 24 kB decoding to 24 MiB


def _ranged(request: web.Request, body: bytes, etag: str | None) -> web.Response:
    """What a static file server answers: the whole body, or the single range asked for."""
    kind = {"svg": "image/svg+xml", "woff2": "font/woff2"}.get(request.path.rsplit(".", 1)[-1], "image/png")
    fields = {"Content-Type": kind, "Accept-Ranges": "bytes", **({"ETag": etag} if etag else {})}
    m = re.fullmatch(r"bytes=(\d+)-(\d*)", request.headers.get("Range", ""))
    if m is None:
        return web.Response(body=body, headers=fields)
    first, last = int(m[1]), min(int(m[2]) if m[2] else len(body) - 1, len(body) - 1)
    if first >= len(body):
        return web.Response(status=416, headers={"Content-Range": f"bytes */{len(body)}"})
    return web.Response(status=206, body=body[first : last + 1],
                        headers={**fields, "Content-Range": f"bytes {first}-{last}/{len(body)}"})


@dataclass
class Server:
    url: str = ""
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    # The server's side of each client connection, by the client's port (to close one as a server would)
    transports: dict[int, asyncio.BaseTransport] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)  # /slow.js answers once this is set

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.seen if p == path)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server()

    async def handler(request: web.Request) -> web.StreamResponse:
        state.seen.append((request.path, dict(request.headers)))
        if request.transport is not None:
            state.transports[request.transport.get_extra_info("peername")[1]] = request.transport
        name = request.match_info["name"]
        if name == "a.css":
            return web.Response(body=gzip.compress(CSS), headers={"Content-Encoding": "gzip",
                                                                  "Content-Type": "text/css"})
        if name == "count.json":  # the server's state: how many times it was asked
            return web.Response(text=str(state.count("/count.json")), content_type="application/json")
        if name == "b.js":
            return web.Response(body=JS, headers={"Content-Type": "text/javascript"})
        if name == "c.png":
            return web.Response(body=PNG, headers={"Content-Type": "image/png", "Vary": "X-Variant"})
        if name == "big.bin":
            return web.Response(body=BIG, headers={"Content-Type": "image/png"})
        if name == "icon.png":  # as a static file server answers: cacheable, validators
            return web.Response(body=PNG, headers={"Content-Type": "image/png", "Cache-Control": "max-age=600",
                                                   "ETag": '"icon-1"'})
        if name == "fresh.css":
            return web.Response(body=gzip.compress(CSS), headers={
                "Content-Encoding": "gzip", "Content-Type": "text/css", "Cache-Control": "max-age=600"})
        if name in ("photo.png", "photo.svg", "font.woff2"):
            return _ranged(request, PHOTO, '"photo-1"')
        if name == "huge.png":
            return _ranged(request, BIG, '"huge-1"')
        if name == "small.png":
            return _ranged(request, PNG, '"small-1"')
        if name == "plain.png":  # no validator: pieces fetched apart could never be proven of one version
            return _ranged(request, PHOTO, None)
        if name == "flip.png":  # another version at every request: pieces can never be joined
            return _ranged(request, PHOTO, f'"flip-{len(state.seen)}"')
        if name == "whole.png":  # Range ignored, as many dynamic handlers do; only the first request answered at once
            if state.count("/whole.png") > 1:
                await state.release.wait()
            return web.Response(body=PHOTO, headers={"Content-Type": "image/png", "ETag": '"whole-1"'})
        if name == "busy.js":  # overloaded at first (the flight's burst), then answering again
            if state.count("/busy.js") == 1:
                return web.Response(status=503, body=b"busy", headers={"Retry-After": "1"})
            return web.Response(body=JS, headers={"Content-Type": "text/javascript"})
        if name == "slow.js":
            await state.release.wait()
            return web.Response(body=JS, headers={"Content-Type": "text/javascript"})
        if name == "tail.woff2":  # all but its last 5 000 bytes at once, those once released
            response = web.StreamResponse(headers={"Content-Type": "font/woff2", "Content-Length": str(len(PHOTO))})
            await response.prepare(request)
            await response.write(PHOTO[:-5000])
            await state.release.wait()
            await response.write(PHOTO[-5000:])
            await response.write_eof()
            return response
        if name == "bomb.js":  # 24 MiB of gzip'd zeros (24 kB on the link); the first request's rest once released
            response = web.StreamResponse(headers={"Content-Type": "text/javascript", "Content-Encoding": "gzip",
                                                   "Content-Length": str(len(BOMB))})
            await response.prepare(request)
            await response.write(BOMB[:1024])
            if state.count("/bomb.js") == 1:
                await state.release.wait()
            await response.write(BOMB[1024:])
            await response.write_eof()
            return response
        if name == "held.woff2":  # its first 16 KiB at once, the rest once released
            response = web.StreamResponse(headers={"Content-Type": "font/woff2", "Content-Length": str(len(BIG))})
            await response.prepare(request)
            await response.write(BIG[:16 * 1024])
            await state.release.wait()
            await response.write(BIG[16 * 1024:])
            await response.write_eof()
            return response
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        state.url = f"http://127.0.0.1:{port}"
        try:
            yield state
        finally:
            state.release.set()  # a failed test must not leave /slow.js holding the server's cleanup


@dataclass
class Got:
    head: DeliveredHead | None = None
    body: bytes = b""
    error: FetchError | None = None
    report: TimingReport | None = None


class Collect:
    def __init__(self) -> None:
        self.got: dict[str, Got] = {}

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        self.got.setdefault(request.id, Got()).head = head

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.got.setdefault(request.id, Got()).body += data

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        assert body_bytes == len(self.got[request.id].body)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self.got.setdefault(request.id, Got()).error = error

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.got.setdefault(request.id, Got()).report = report


@pytest.fixture
async def service() -> AsyncIterator[FetchService]:
    s = FetchService(ServiceConfig(EngineConfig(connections_per_origin=2)))  # no HTTP cache: only the flight
    yield s
    await s.aclose()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _browser(rid: str, url: str, headers: list[tuple[str, str]]) -> FetchRequest:
    return FetchRequest(rid, "GET", url, list(headers), resource_type="other", decode=True)


async def test_answers_from_the_flight_and_refetches_what_does_not_match(server: Server,
                                                                        service: FetchService) -> None:
    clock = Clock()
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)), clock=clock)
    flight.start([
        Planned(f"{server.url}/a.css", STYLE, "stylesheet"),
        Planned(f"{server.url}/b.js", SCRIPT, "script"),
        Planned(f"{server.url}/c.png", [*IMAGE, ("X-Variant", "1")], "image"),
        Planned(f"{server.url}/b.js", [*SCRIPT, ("Cookie", "sid=1")], "script"),  # never sent with credentials
    ])
    await flight.wait()
    assert [p for p, _ in server.seen] and sorted(p for p, _ in server.seen) == ["/a.css", "/b.js", "/c.png"]
    assert all("Cookie" not in h for _, h in server.seen)
    assert "gzip" in dict(server.seen[0][1]).get("Accept-Encoding", "")  # asked as the browser's stack would

    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([
        _browser("css", f"{server.url}/a.css", STYLE),                      # same fields: from the flight
        _browser("js", f"{server.url}/b.js", [*SCRIPT, ("Cookie", "sid=1")]),  # a Cookie the prefetch lacked
        _browser("png", f"{server.url}/c.png", [*IMAGE, ("X-Variant", "2")]),  # the response varies on it
        _browser("new", f"{server.url}/big.bin", IMAGE),                    # never prefetched
    ], sink, PAGE)
    got = sink.got
    assert got["css"].body == CSS and got["css"].report is not None and got["css"].report.cache == "prefetch"
    # what the prefetch put on the link, its head included, gzip as it came: a fraction of the CSS it answers with
    assert len(gzip.compress(CSS)) < got["css"].report.wire_bytes < len(gzip.compress(CSS)) + 1024 < len(CSS)
    assert got["js"].body == JS and got["js"].report is not None and got["js"].report.cache == "none"
    assert got["png"].body == PNG and got["png"].report is not None and got["png"].report.cache == "none"
    assert got["new"].body == BIG
    assert server.count("/a.css") == 1  # answered from the flight
    assert server.count("/b.js") == 2 and server.seen[-1][0] in ("/b.js", "/c.png", "/big.bin")
    assert any(p == "/b.js" and h.get("Cookie") == "sid=1" for p, h in server.seen)
    assert server.count("/c.png") == 2

    # the script's and the image's prefetches were refused, and stay unclaimed: one more matching request for
    # the image is still answered from the flight (once), a second one goes to the server
    sink = Collect()
    await answers.fetch([_browser("png2", f"{server.url}/c.png", [*IMAGE, ("X-Variant", "1")])], sink, PAGE)
    assert sink.got["png2"].report is not None and sink.got["png2"].report.cache == "prefetch"
    sink = Collect()
    await answers.fetch([_browser("png3", f"{server.url}/c.png", [*IMAGE, ("X-Variant", "1")])], sink, PAGE)
    assert sink.got["png3"].report is not None and sink.got["png3"].report.cache == "none"
    assert server.count("/c.png") == 3

    # the script's copy is too old by now: fetched anew even with matching fields
    clock.t += 31
    sink = Collect()
    await answers.fetch([_browser("js2", f"{server.url}/b.js", SCRIPT)], sink, PAGE)
    assert sink.got["js2"].report is not None and sink.got["js2"].report.cache == "none"
    assert server.count("/b.js") == 3

    report = await flight.close()
    assert report.answered == 2 and report.sent == 3
    assert report.refused_by_fidelity == {"header:cookie": 1, "header:x-variant": 1, "age": 1}
    assert report.claimed_bytes == len(CSS) + len(PNG)
    assert report.wasted_bytes == len(JS)


FETCH = [(k, {"Accept": "*/*", "Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "cors"}.get(k, v)) for k, v in STYLE]


async def test_a_pages_fetch_or_xhr_is_never_answered_from_the_flight(server: Server, service: FetchService) -> None:
    """A fetch() or XHR may carry a cache mode ("no-store", "reload") the helper cannot see: it goes to the server
    and gets its answer at the time it asked, even where the flight holds a copy its fields match (a flight planned
    before plan.py stopped planning them, or the same URL asked in another way). That is no refusal: the copy still
    answers the request it could (here one of resource type `other`), and the flight is not distrusted."""
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)), clock=Clock())
    flight.start([Planned(f"{server.url}/count.json", FETCH, "fetch")])
    await flight.wait()
    assert server.count("/count.json") == 1
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    for kind in ("fetch", "xhr"):
        await answers.fetch([FetchRequest(kind, "GET", f"{server.url}/count.json", list(FETCH), resource_type=kind,
                                          decode=True)], sink, PAGE)
    await answers.fetch([_browser("other", f"{server.url}/count.json", FETCH)], sink, PAGE)
    got = {k: (g.body, g.report.cache if g.report else None) for k, g in sink.got.items()}
    assert got == {"fetch": (b"2", "none"), "xhr": (b"3", "none"), "other": (b"1", "prefetch")}
    assert server.count("/count.json") == 3
    report = await flight.close()
    assert report.answered == 1 and report.refused_by_fidelity == {} and not flight.distrusted


async def test_the_budget_keeps_unaffordable_guesses_unsent_and_cancels_one_that_outgrows_it(
        server: Server, service: FetchService) -> None:
    limits = Limits(speculative=32 * 1024, total=4 * 1024 * 1024)
    flight = Flight(service, PAGE, Ledger(limits))
    flight.start([
        Planned(f"{server.url}/a.css", STYLE, "stylesheet", confident=True, expected_size=len(CSS)),
        Planned(f"{server.url}/big.bin", IMAGE, "image", confident=False, expected_size=None),  # size unknown
        Planned(f"{server.url}/c.png", IMAGE, "image", confident=False, expected_size=40 * 1024),  # > 32 KiB
    ])
    await flight.wait()
    assert flight.report.sent == 2 and flight.report.refused_by_budget == 1
    assert server.count("/c.png") == 0
    report = await flight.close()
    # the guess of unknown size was cut off once it passed the limit: never held, every byte that came counted
    # as waste (what still arrived after the cancel included)
    assert report.cancelled_by_budget == 1
    assert 32 * 1024 < report.wasted_bytes <= len(BIG)
    assert report.claimed_bytes == 0

    # and the browser's own request for it is fetched as usual, whole
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    await answers.fetch([_browser("big", f"{server.url}/big.bin", IMAGE)], sink, PAGE)
    assert sink.got["big"].body == BIG and sink.got["big"].report is not None
    assert sink.got["big"].report.cache == "none"


async def test_a_guess_the_browser_asked_for_is_not_cut_by_the_budget(server: Server, service: FetchService) -> None:
    """A guess of unknown size (a font a stylesheet names, learned before) grows past the speculative limit only
    after the browser asked for it: it is requested now, so it is not cancelled, and the waiting request is answered
    from it, the server asked once (found on rust-std's sibling visit: cut at 32 KiB, then fetched whole again)."""
    ledger = Ledger(Limits(speculative=32 * 1024, total=4 * 1024 * 1024))
    flight = Flight(service, PAGE, ledger)
    flight.start([Planned(f"{server.url}/held.woff2", IMAGE, "font", confident=False, expected_size=None)])
    await until(lambda: server.count("/held.woff2") == 1, "the guess sent", seconds=5, seen=lambda: server.seen)
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    asking = asyncio.create_task(answers.fetch([_browser("font", f"{server.url}/held.woff2", IMAGE)], sink, PAGE))
    for _ in range(50):  # the request reaches the flight and waits there (no I/O on its way)
        await asyncio.sleep(0)
    assert not asking.done()
    server.release.set()  # the rest, 1 MiB in all: far past the 32 KiB of guesses
    await asyncio.wait_for(asking, 10)
    assert sink.got["font"].body == BIG and sink.got["font"].report is not None
    assert sink.got["font"].report.cache == "prefetch"
    assert server.count("/held.woff2") == 1
    report = await flight.close()
    assert report.cancelled_by_budget == 0 and report.answered == 1 and report.wasted_bytes == 0


async def _cancelled_while_it_waits(server: Server, service: FetchService, flight: Flight, path: str,
                                    fields: list[tuple[str, str]]) -> Collect:
    """The browser asks for `path` while the flight's prefetch of it is under way, then cancels that request."""
    await until(lambda: server.count(path) == 1, "the prefetch reached the server", seconds=5,
                seen=lambda: server.seen)
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    batch = asyncio.create_task(answers.fetch([_browser("w", f"{server.url}{path}", fields)], sink, PAGE))
    await until(lambda: "w" in answers._waiting, "the browser request waits on the prefetch", seconds=5,
                seen=lambda: sink.got)
    await answers.cancel(["w"])
    await asyncio.wait_for(batch, 5)
    return sink


async def test_a_request_waiting_on_a_prefetch_can_be_cancelled(server: Server, service: FetchService) -> None:
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=1024 * 1024)))
    flight.start([Planned(f"{server.url}/slow.js", SCRIPT, "script")])
    sink = await _cancelled_while_it_waits(server, service, flight, "/slow.js", SCRIPT)
    got = sink.got["w"]
    assert got.error is not None and got.error.code == "cancelled" and got.head is None
    assert got.report is not None
    server.release.set()
    await flight.wait()
    assert (await flight.close()).answered == 0
    assert server.count("/slow.js") == 1  # cancelled, not fetched again


async def test_a_guess_whose_waiting_request_was_cancelled_is_cut_by_the_budget_again(
        server: Server, service: FetchService) -> None:
    # The browser's request lifted the budget off the guess while it waited; cancelled, the guess is a guess again,
    # and its body (1 MiB) is cut at the budget instead of crossing the link for nobody.
    flight = Flight(service, PAGE, Ledger(Limits(speculative=32 * 1024, total=4 * 1024 * 1024)))
    flight.start([Planned(f"{server.url}/held.woff2", FONT, "font", confident=False, expected_size=None)])
    await _cancelled_while_it_waits(server, service, flight, "/held.woff2", FONT)
    server.release.set()
    await flight.wait()
    report = await flight.close()
    assert report.cancelled_by_budget == 1 and report.answered == 0
    assert report.wasted_bytes < 256 * 1024, report


class Raising:
    """A fetcher whose batch fails outright (the real ones answer each request; this is the fault a flight must
    survive without leaving a browser request waiting)."""

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        raise RuntimeError("broken fetcher")

    async def cancel(self, request_ids: list[str]) -> None:
        pass


async def test_a_flight_whose_batch_fails_leaves_no_request_waiting(server: Server, service: FetchService) -> None:
    flight = Flight(Raising(), PAGE, Ledger(Limits(speculative=64 * 1024, total=1024 * 1024)))  # type: ignore[arg-type]
    flight.start([Planned(f"{server.url}/b.js", SCRIPT, "script")])
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    await asyncio.wait_for(answers.fetch([_browser("b", f"{server.url}/b.js", SCRIPT)], sink, PAGE), 10)
    assert sink.got["b"].body == JS and sink.got["b"].report is not None and sink.got["b"].report.cache == "none"
    assert server.count("/b.js") == 1


async def test_confident_items_of_unknown_size_wait_for_room_instead_of_being_cancelled(
        server: Server, service: FetchService) -> None:
    """A first visit's flight (discovered items: confident, sizes unknown) larger than its budget: each unknown
    item counts as budget.UNKNOWN_SIZE until it ends, so only what fits is sent; the rest waits and is sent as
    room comes free (here: as sent ones end smaller than their estimate), in plan order, never cancelled midway;
    one the browser asked for meanwhile is not sent at all."""
    flight = Flight(service, PAGE, Ledger(Limits(speculative=0, total=128 * 1024)))
    flight.still_wanted = lambda url: not url.endswith("n=4")  # the browser asked for that one itself
    urls = [f"{server.url}/c.png?n={n}" for n in range(6)]
    flight.start([Planned(u, IMAGE, "image") for u in urls])
    assert flight.report.sent == 2  # 2 × 64 KiB estimated: the budget is full
    for _ in range(1000):  # fails loudly after 10 s
        if flight.report.sent == 5 and not any(not h.done.is_set() for h in flight._held.values()):
            break
        await asyncio.sleep(0.01)
    await flight.wait()
    assert flight.report.sent == 5 and flight.report.cancelled_by_budget == 0
    assert [p for p, _ in server.seen] == ["/c.png"] * 5
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    wanted = [u for u in urls if not u.endswith("n=4")]
    await answers.fetch([FetchRequest(f"r{i}", "GET", u, IMAGE, decode=True) for i, u in enumerate(wanted)], sink,
                        PAGE)
    assert all(g.report is not None and g.report.cache == "prefetch" for g in sink.got.values())
    report = await flight.close()
    assert (report.answered, report.wasted_bytes, report.refused_by_budget) == (5, 0, 0)


async def test_a_browser_warm_request_is_answered_from_the_flight_else_declined(server: Server,
                                                                               service: FetchService) -> None:
    """`browser_warm` (the browser's own connection there is warm and idle): the flight's copy answers it when the
    fidelity rule allows; otherwise the engine declines it (error `browser_warm`, nothing sent) and the browser
    fetches it itself, where without the mark the helper would fetch it again."""
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)), clock=Clock())
    flight.start([Planned(f"{server.url}/b.js", SCRIPT, "script")])
    await flight.wait()
    assert server.count("/b.js") == 1
    answers = FlightAnswers(service, lambda page: flight)

    def warm(rid: str, path: str, headers: list[tuple[str, str]]) -> FetchRequest:
        r = _browser(rid, f"{server.url}{path}", headers)
        r.browser_warm = True
        return r

    sink = Collect()
    await answers.fetch([warm("held", "/b.js", SCRIPT), warm("other", "/a.css", STYLE)], sink, PAGE)
    assert sink.got["held"].body == JS and sink.got["held"].report is not None
    assert sink.got["held"].report.cache == "prefetch"
    other = sink.got["other"]
    assert other.error is not None and other.error.code == "browser_warm" and other.head is None
    assert server.count("/a.css") == 0 and server.count("/b.js") == 1
    await flight.close()


async def test_a_claimed_prefetch_is_kept_in_the_http_cache_for_the_pages_next_request_of_it(
        server: Server, tmp_path: Path) -> None:
    """A prefetch the browser's request claimed is that request's answer: the helper's cache keeps it as if fetched
    for it, so the page's next request for the URL (Chromium's favicon after the page's own image of it: a
    fulfilled answer never enters the browser's cache) is a cache hit, not a second download. One the helper
    decoded for the page (the cache keeps bodies as the server coded them) and one never claimed are not kept."""
    service = FetchService(ServiceConfig(EngineConfig(connections_per_origin=2), cache_dir=tmp_path / "cache"))
    try:
        flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                        clock=Clock())
        flight.start([Planned(f"{server.url}/icon.png", IMAGE, "image"),
                      Planned(f"{server.url}/fresh.css", STYLE, "stylesheet")])
        await flight.wait()
        assert server.count("/icon.png") == 1 and server.count("/fresh.css") == 1
        answers = FlightAnswers(service, lambda page: flight, service.cache_for)
        sink = Collect()
        await answers.fetch([_browser("img", f"{server.url}/icon.png", IMAGE),
                             _browser("css", f"{server.url}/fresh.css", STYLE)], sink, PAGE)
        assert [sink.got[k].report.cache for k in ("img", "css") if sink.got[k].report] == ["prefetch"] * 2

        favicon = [(k, {"Accept": "image/avif,image/webp,*/*", "Sec-Fetch-Dest": "empty"}.get(k, v))
                   for k, v in IMAGE]
        sink = Collect()
        await answers.fetch([_browser("favicon", f"{server.url}/icon.png", favicon),
                             _browser("css2", f"{server.url}/fresh.css", STYLE)], sink, PAGE)
        icon = sink.got["favicon"]
        assert icon.body == PNG and icon.report is not None and icon.report.cache == "hit"
        assert icon.report.wire_bytes == 0
        assert server.count("/icon.png") == 1, "the claimed prefetch answered the page's next request of it"
        css = sink.got["css2"]
        assert css.body == CSS and css.report is not None and css.report.cache == "none"
        assert server.count("/fresh.css") == 2, "decoded for the page: not kept, fetched again"
        await flight.close()
    finally:
        await service.aclose()


FONT = [(k, {"Accept": "*/*", "Sec-Fetch-Dest": "font", "Sec-Fetch-Mode": "cors"}.get(k, v)) for k, v in STYLE]


async def _anywhere(url: str, page: Page) -> bool:
    return True


async def test_a_large_image_or_font_comes_in_pieces_over_the_connections_and_answers_whole(
        server: Server, service: FetchService) -> None:
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=_anywhere)
    flight.start([
        # learned smaller than it is now: the open-ended last piece still brings the whole body
        Planned(f"{server.url}/photo.png", IMAGE, "image", confident=True, expected_size=90_000),
        Planned(f"{server.url}/font.woff2", FONT, "font", confident=True, expected_size=len(PHOTO)),
        Planned(f"{server.url}/photo.svg", IMAGE, "image", confident=True, expected_size=len(PHOTO)),  # whole
    ])
    await flight.wait()
    ranges = {p: sorted(h.get("Range", "") for q, h in server.seen if q == p) for p, _ in server.seen}
    assert ranges["/photo.png"] == ["bytes=0-29999", "bytes=30000-59999", "bytes=60000-"]
    assert ranges["/font.woff2"] == ["bytes=0-33332", "bytes=33333-66665", "bytes=66666-"]
    assert ranges["/photo.svg"] == [""], "an SVG is asked whole (servers compress it)"
    assert all(h["Accept-Encoding"] == "identity" for _, h in server.seen if "Range" in h)

    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([_browser("png", f"{server.url}/photo.png", IMAGE),
                         _browser("font", f"{server.url}/font.woff2", FONT)], sink, PAGE)
    for rid in ("png", "font"):
        got = sink.got[rid]
        assert got.error is None and got.body == PHOTO
        assert got.head is not None and got.head.status == 200
        fields = {k.lower(): v for k, v in got.head.headers}
        assert fields["content-length"] == str(len(PHOTO)) and "content-range" not in fields
        assert fields["etag"] == '"photo-1"'
        assert got.report is not None and got.report.cache == "prefetch"
        assert len(PHOTO) < got.report.wire_bytes < len(PHOTO) + 3 * 1024  # three pieces, each with its head
    assert len(server.seen) == 7, "both answered from the flight"
    report = await flight.close()
    assert report.answered == 2 and report.claimed_bytes == 2 * len(PHOTO)


async def test_an_image_of_unknown_size_is_asked_in_a_first_piece_whose_answer_says_what_follows(
        server: Server, service: FetchService) -> None:
    # A first visit knows no image's size: the first piece's Content-Range tells it, and the rest is asked in pieces
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=_anywhere)
    flight.start([Planned(f"{server.url}/photo.png", IMAGE, "image", confident=True),
                  Planned(f"{server.url}/small.png", IMAGE, "image", confident=True),
                  Planned(f"{server.url}/missing.png", IMAGE, "image", confident=True)])
    await flight.wait()
    ranges = {p: [h.get("Range", "") for q, h in server.seen if q == p] for p, _ in server.seen}
    # each first piece ends on a byte of its own (first_range): pipelined together, each 206 proves its place
    firsts = [ranges[p][0] for p in ("/photo.png", "/small.png", "/missing.png")]
    assert sorted(firsts) == sorted(f"bytes=0-{PIECE_BYTES - 1 - k}" for k in range(3)), firsts
    start = int(firsts[0].rsplit("-", 1)[1]) + 1
    middle = start + (len(PHOTO) - start) // 2  # the rest in two even pieces
    assert sorted(ranges["/photo.png"][1:]) == [f"bytes={start}-{middle - 1}", f"bytes={middle}-"]
    assert len(ranges["/small.png"]) == 1, "all of it came in the first piece"
    assert len(ranges["/missing.png"]) == 1

    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([_browser("photo", f"{server.url}/photo.png", IMAGE),
                         _browser("small", f"{server.url}/small.png", IMAGE),
                         _browser("missing", f"{server.url}/missing.png", IMAGE)], sink, PAGE)
    for rid, body in (("photo", PHOTO), ("small", PNG)):
        got = sink.got[rid]
        assert got.error is None and got.body == body and got.head is not None and got.head.status == 200
        fields = {k.lower(): v for k, v in got.head.headers}
        assert fields["content-length"] == str(len(body)) and "content-range" not in fields
        assert got.report is not None and got.report.cache == "prefetch"
    missing = sink.got["missing"]
    assert missing.head is not None and missing.head.status == 404, "what the whole request gets: the answer"
    assert missing.report is not None and missing.report.cache == "prefetch"
    assert len(server.seen) == 5, "all three answered from the flight"
    report = await flight.close()
    assert report.answered == 3 and report.wasted_bytes == 0


async def test_without_a_validator_the_rest_of_a_first_piece_is_never_asked(server: Server,
                                                                            service: FetchService) -> None:
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=_anywhere)
    flight.start([Planned(f"{server.url}/plain.png", IMAGE, "image", confident=True)])
    await flight.wait()
    assert [h.get("Range") for p, h in server.seen] == [f"bytes=0-{PIECE_BYTES - 1}"]
    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([_browser("png", f"{server.url}/plain.png", IMAGE)], sink, PAGE)
    got = sink.got["png"]
    assert got.body == PHOTO and got.report is not None and got.report.cache == "none", "fetched whole for it"
    assert [h.get("Range") for p, h in server.seen][1:] == [None]
    report = await flight.close()
    assert report.answered == 0 and report.wasted_bytes == PIECE_BYTES, "only the first piece, thrown away"


async def test_a_first_pieces_rest_the_budget_cannot_hold_is_never_asked(server: Server,
                                                                         service: FetchService) -> None:
    # Held whole until joined, pieces could not be cut midway: the budget weighs the told size before the rest goes
    flight = Flight(service, PAGE, Ledger(Limits(speculative=32 * 1024, total=256 * 1024)), split_where=_anywhere)
    flight.start([Planned(f"{server.url}/huge.png", IMAGE, "image", confident=True)])
    await flight.wait()
    assert [h.get("Range") for p, h in server.seen] == [f"bytes=0-{PIECE_BYTES - 1}"], "no rest asked"
    report = await flight.close()
    assert report.answered == 0 and report.wasted_bytes == PIECE_BYTES


async def test_a_first_piece_answered_whole_streams_so_the_budget_can_cut_it(server: Server,
                                                                            service: FetchService) -> None:
    # big.bin ignores Range: its 1 MiB comes as the first piece's 200, handed on as it arrives; a guess is cut at the
    # page's limit for guesses, not held whole
    flight = Flight(service, PAGE, Ledger(Limits(speculative=32 * 1024, total=4 * 1024 * 1024)), split_where=_anywhere)
    flight.start([Planned(f"{server.url}/big.bin", IMAGE, "image", confident=False)])
    await flight.wait()
    assert [h.get("Range") for p, h in server.seen] == [f"bytes=0-{PIECE_BYTES - 1}"]
    report = await flight.close()
    assert report.cancelled_by_budget == 1
    assert 32 * 1024 < report.wasted_bytes < len(BIG) // 2, "cut as it came, not held to its end"


async def test_a_first_piece_answered_whole_is_the_answer(server: Server, service: FetchService) -> None:
    flight = Flight(service, PAGE, Ledger(Limits(speculative=32 * 1024, total=4 * 1024 * 1024)), split_where=_anywhere)
    flight.start([Planned(f"{server.url}/whole.png", IMAGE, "image", confident=True)])
    await flight.wait()
    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([_browser("png", f"{server.url}/whole.png", IMAGE)], sink, PAGE)
    got = sink.got["png"]
    assert got.body == PHOTO and got.head is not None and got.head.status == 200
    assert got.report is not None and got.report.cache == "prefetch" and server.count("/whole.png") == 1
    report = await flight.close()
    assert report.answered == 1 and report.wasted_bytes == 0


async def test_a_server_that_ignores_range_gives_the_whole_answer_once(server: Server, service: FetchService) -> None:
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=_anywhere)
    flight.start([Planned(f"{server.url}/whole.png", IMAGE, "image", confident=True, expected_size=len(PHOTO))])
    await flight.wait()  # ends although two pieces' answers never came: they were cancelled at the first 200
    assert 2 <= server.count("/whole.png") <= 3
    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([_browser("png", f"{server.url}/whole.png", IMAGE)], sink, PAGE)
    got = sink.got["png"]
    assert got.body == PHOTO and got.head is not None and got.head.status == 200
    assert got.report is not None and got.report.cache == "prefetch"
    report = await flight.close()
    assert report.wasted_bytes == 0, "nothing of the cancelled pieces came"
    assert report.answered == 1 and report.claimed_bytes == len(PHOTO)


async def test_a_connection_closed_beside_one_owing_only_cancelled_pieces_is_not_replaced(
        server: Server, service: FetchService, caplog: pytest.LogCaptureFixture) -> None:
    # As above: the first piece's request got the whole answer, the other two pieces (cancelled) are owed by the
    # other connection, whose server holds them. The server then closes the idle connection (its keep-alive
    # timeout): nothing is queued, so no connection is opened (one was, for the cancelled pieces it could never
    # take: it idled until the engine's idle timeout, and held the aiohttp server's cleanup as long).
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=_anywhere)
    flight.start([Planned(f"{server.url}/whole.png", IMAGE, "image", confident=True, expected_size=len(PHOTO))])
    await flight.wait()
    (pool,) = service.engine._pools.values()
    (idle,) = [c for c in pool.connections if c.open and not c.unanswered()]
    (owing,) = [c for c in pool.connections if c.unanswered()]
    assert isinstance(owing, Connection) and all(f.token.finished for f in owing.state.in_flight)
    assert idle.transport is not None
    server.transports[idle.transport.writer.get_extra_info("sockname")[1]].close()
    await until(lambda: idle not in pool.connections, "the closed connection gone from the pool")
    assert pool.connections == {owing}, "nothing queued: no connection opened"
    with caplog.at_level(logging.INFO, logger="lanefetch.engine"):
        owing.abort()  # its end asks nothing again: the pieces it owed were cancelled
        await until(lambda: not pool.connections, "the other connection gone")
    assert not [r.getMessage() for r in caplog.records if "asked again" in r.getMessage()]
    await flight.close()


async def _font_with_5000_left(service: FetchService) -> tuple[OriginPool, Connection]:
    """The pool of tail.woff2's origin and the connection carrying it, once its head and all but its last 5 000 bytes
    are in."""
    await until(lambda: bool(service.engine._pools), "the font's pool")
    (pool,) = service.engine._pools.values()
    await until(lambda: any(isinstance(c, Connection) and c.state.in_flight
                            and c.state.in_flight[0].parser.body_remaining == 5000 for c in pool.connections),
                "the font's head and all but its last 5 000 bytes in")
    (conn,) = [c for c in pool.connections if isinstance(c, Connection) and c.state.in_flight]
    return pool, conn


def _one_connection_asking_the_font(server: Server) -> tuple[FetchService, Collect, asyncio.Task[BatchResult], Flight]:
    """A service with one connection per origin asking the browser's tail.woff2 (into the sink returned), and a
    flight of its page not started yet."""
    service = FetchService(ServiceConfig(EngineConfig(connections_per_origin=1)))
    sink = Collect()
    asking = asyncio.create_task(service.fetch([FetchRequest("font", "GET", f"{server.url}/tail.woff2", FONT,
                                                             resource_type="font")], sink, PAGE))
    return service, sink, asking, Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)))


async def _warm(service: FetchService) -> tuple[OriginPool, Connection]:
    """_font_with_5000_left, on a link with room (as measured on `sat` late in a load) and a connection whose window
    is a large document's."""
    pool, conn = await _font_with_5000_left(service)
    pool.policy.link_bdp = 1_000_000
    conn.warmth = Warmth(1_000_000)
    return pool, conn


async def test_a_connection_is_weighed_for_a_flights_pieces_by_what_its_answer_has_still_to_come(
        server: Server, service: FetchService) -> None:
    # pool_plan.left_to_come through the pool: the browser's own font (size not known) on the only connection busy.
    # Once its head told 5 000 bytes are left, the connection is weighed by those
    sink = Collect()
    asking = asyncio.create_task(service.fetch([FetchRequest("font", "GET", f"{server.url}/tail.woff2", FONT,
                                                             resource_type="font")], sink, PAGE))
    try:
        pool, conn = await _font_with_5000_left(service)
        weighed = pool._bin(conn, 0.0, None)
        assert weighed.load == 5000, "weighed by what is left"
        # and ready: what is left and a piece more come within the window the 95 kB it received grew
        # (pool_plan.comes_within_window)
        assert weighed.ready and weighed.window > 5000 + PIECE_BYTES
    finally:
        server.release.set()
        await asyncio.wait_for(asking, 10)
    assert sink.got["font"].body == PHOTO


async def test_a_warm_connection_takes_a_flights_image_behind_a_font_whose_rest_it_carries_in_a_round_trip(
        server: Server) -> None:
    # pool_plan.comes_within_window through the pool: the browser's own font (render-blocking, size not known when
    # asked) on the origin's only connection, its head in and 5 000 bytes left. With the connection's window large
    # (a document's connection late in a load), a flight's image of known size is pipelined behind the font at once
    # instead of waiting for it to end (its reserve), past the browser's own image waiting at the queue's head: the
    # flight's image is written before the font's end.
    service, sink, asking, flight = _one_connection_asking_the_font(server)
    try:
        pool, conn = await _warm(service)
        assert pool._bin(conn, 0.0, None).ready
        conn.state.in_flight[0].held = True  # were its place not proven, what went behind it would hold it back
        assert not pool._bin(conn, 0.0, None).ready
        conn.state.in_flight[0].held = False
        # the browser's own image, size not known: ahead of the flight's in the queue, it waits for the connection
        # (not pipelined while the page lays out, a font in flight); the flight's goes past it (pool._balanced_behind)
        own = asyncio.create_task(service.fetch([FetchRequest("own", "GET", f"{server.url}/c.png", IMAGE,
                                                              resource_type="image")], sink, PAGE))
        await until(lambda: pool.queued() == 1, "the browser's image queued")
        flight.start([Planned(f"{server.url}/small.png", IMAGE, "image", confident=True, expected_size=len(PNG))])
        # (the test server reads a pipelined request only once it has answered the one before: the connection says)
        await until(lambda: [f.token.request.url.rsplit("/", 1)[-1] for f in conn.state.in_flight]
                    == ["tail.woff2", "small.png"], "the image asked behind the font, before its end")
        assert server.count("/small.png") == 0
        assert pool.queued() == 1, "the browser's image still waits"
    finally:
        server.release.set()
        await asyncio.wait_for(asking, 10)
        await flight.wait()
    await asyncio.wait_for(own, 10)
    assert sink.got["font"].error is None and sink.got["font"].body == PHOTO
    assert sink.got["own"].error is None and sink.got["own"].body == PNG
    answers = FlightAnswers(service, lambda page: flight)
    got = Collect()
    await answers.fetch([_browser("png", f"{server.url}/small.png", IMAGE)], got, PAGE)
    assert got.got["png"].body == PNG and got.got["png"].report is not None
    assert got.got["png"].report.cache == "prefetch"
    await flight.close()
    await service.aclose()


async def test_work_reserved_for_a_busy_connection_goes_once_its_window_carries_it_behind_what_is_aboard(
        server: Server) -> None:
    # pool._take_reserved by the same rule as the balanced taker (pool_plan.bin_for): a flight's image reserved for the
    # only connection while the font aboard is not in step (held: what went behind would keep it held) is written
    # once the font is in step and the window carries the image behind it, before the font's end
    service, sink, asking, flight = _one_connection_asking_the_font(server)
    try:
        pool, conn = await _warm(service)
        conn.state.in_flight[0].held = True
        flight.start([Planned(f"{server.url}/small.png", IMAGE, "image", confident=True, expected_size=len(PNG))])
        await until(lambda: bool(pool._reserved.get(conn.id)), "the image reserved for the font's connection")
        assert len(conn.state.in_flight) == 1, "not written behind a font that is not in step"
        conn.state.in_flight[0].held = False
        weighed = pool._bin(conn, 0.0, None)  # the reserved image counts as aboard, in load and out of room
        assert weighed.room is not None and weighed.room == weighed.window - weighed.load
        assert weighed.load == 5000 + len(PNG) + 512
        conn.wakeup.set()
        await until(lambda: len(conn.state.in_flight) == 2, "the image written behind the font, before its end")
    finally:
        server.release.set()
        await asyncio.wait_for(asking, 10)
        await flight.wait()
    assert sink.got["font"].body == PHOTO
    report = await flight.close()
    assert report.sent == 1 and server.count("/small.png") == 1
    await service.aclose()


async def test_pieces_of_two_versions_are_never_joined_the_browsers_request_is_fetched_whole(
        server: Server, service: FetchService) -> None:
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=_anywhere)
    flight.start([Planned(f"{server.url}/flip.png", IMAGE, "image", confident=True, expected_size=len(PHOTO))])
    await flight.wait()
    assert server.count("/flip.png") == 3
    answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
    sink = Collect()
    await answers.fetch([_browser("png", f"{server.url}/flip.png", IMAGE)], sink, PAGE)
    got = sink.got["png"]
    assert got.body == PHOTO and got.head is not None and got.head.status == 200
    assert got.report is not None and got.report.cache == "none", "fetched for the browser's own request"
    assert server.count("/flip.png") == 4 and "Range" not in server.seen[-1][1]
    report = await flight.close()
    assert report.answered == 0 and report.wasted_bytes == len(PHOTO), "the three pieces' bytes, thrown away"


async def test_where_the_link_has_no_room_a_large_image_is_asked_whole(server: Server, service: FetchService) -> None:
    # The service says where a link carries two first flights or more per round trip (its origins' learned link_bdp)
    assert not await service.link_room(f"{server.url}/photo.png", PAGE)  # nothing learned of it yet
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)),
                    split_where=service.link_room)
    flight.start([Planned(f"{server.url}/photo.png", IMAGE, "image", confident=True, expected_size=len(PHOTO))])
    await flight.wait()
    assert [h.get("Range") for p, h in server.seen if p == "/photo.png"] == [None]
    await flight.close()
    from lanefetch.engine.engine import policy_key
    from lanefetch.engine.pool_plan import BALANCE_BDP
    from lanefetch.engine.request import parse_target
    service.policies[policy_key(parse_target(server.url + "/").origin, PAGE)].link_bdp = BALANCE_BDP
    assert await service.link_room(f"{server.url}/photo.png", PAGE)


async def test_a_browser_request_the_prefetch_can_never_answer_leaves_it_to_the_budget(server: Server,
                                                                                       service: FetchService) -> None:
    # A guess of unknown size (held.woff2, 1 MiB) is under way when the browser asks for its URL with a Cookie the
    # prefetch never carried: refused on its fields at once (fidelity.request_refusal), before the prefetch's head,
    # so the request neither lifts the budget off the guess (cut at its limit, not 1 MiB wasted) nor waits for it.
    limits = Limits(speculative=32 * 1024, total=4 * 1024 * 1024)
    flight = Flight(service, PAGE, Ledger(limits))
    flight.start([Planned(f"{server.url}/held.woff2", IMAGE, "font", confident=False, expected_size=None)])
    await until(lambda: server.count("/held.woff2") == 1, "the guess sent", seconds=5, seen=lambda: server.seen)
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    asking = asyncio.create_task(answers.fetch(
        [_browser("font", f"{server.url}/held.woff2", [*IMAGE, ("Cookie", "sid=1")])], sink, PAGE))
    for _ in range(50):  # bounded: let the request reach the flight before the guess's body is released
        await asyncio.sleep(0)
    server.release.set()
    await asyncio.wait_for(asking, 10)
    assert sink.got["font"].body == BIG and sink.got["font"].report is not None
    assert sink.got["font"].report.cache == "none"  # refused, fetched for the browser with its Cookie
    report = await flight.close()
    assert report.refused_by_fidelity == {"header:cookie": 1}
    assert report.wasted_bytes <= limits.speculative + 256 * 1024, report  # the guess's limit and one read


@pytest.mark.parametrize(("name", "learned"), [
    ("huge.png", 100_000),  # 1 MiB now, learned at 100 kB: its last piece, asked open-ended, would fetch it all
    ("big.bin", 60_000),  # ignores Range: a piece's 200 is the whole 1 MiB, streamed so that the budget cuts it
])
async def test_a_known_split_never_fetches_past_the_budget(server: Server, service: FetchService, name: str,
                                                           learned: int) -> None:
    limits = Limits(speculative=32 * 1024, total=256 * 1024)
    flight = Flight(service, PAGE, Ledger(limits), split_where=_anywhere)
    flight.start([Planned(f"{server.url}/{name}", IMAGE, "image", confident=True, expected_size=learned)])
    await flight.wait()
    report = await flight.close()
    assert report.wasted_bytes <= limits.total + 256 * 1024, report  # the limits and one read in flight


async def test_a_prefetch_answered_with_a_passing_server_error_does_not_answer_the_browser(
        server: Server, service: FetchService) -> None:
    """A 503 (or 5xx, 429, 408) says the server could not answer then, not what the resource is: the flight's burst
    may be what overloaded it. The browser's own request, made later, goes to the server and gets the script; before,
    the page was given the flight's 503."""
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=1024 * 1024)))
    flight.start([Planned(f"{server.url}/busy.js", SCRIPT, "script")])
    await flight.wait()
    assert server.count("/busy.js") == 1
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    await answers.fetch([_browser("js", f"{server.url}/busy.js", SCRIPT)], sink, PAGE)
    got = sink.got["js"]
    assert got.head is not None and got.head.status == 200 and got.body == JS
    assert got.report is not None and got.report.cache == "none"
    assert server.count("/busy.js") == 2
    report = await flight.close()
    assert report.answered == 0 and report.refused_by_fidelity == {"status-transient": 1}


class Count(Collect):
    """Collect, counting body bytes instead of keeping them (bodies of many MiB)."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[str, int] = {}
        self.largest: int = 0

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.sizes[request.id] = self.sizes.get(request.id, 0) + len(data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        assert body_bytes == self.sizes.get(request.id, 0)


async def test_a_prefetch_the_browser_waits_for_never_holds_more_than_one_answer_may_be(
        server: Server, service: FetchService) -> None:
    """A prefetch the browser asked for is not cut by the page's budget (budget.py), but it is still held whole in
    the helper's memory until it ended: a body decoding without end (24 kB of gzip to 24 MiB here; zstd turns 8 KiB
    into 256 MiB) filled the helper's memory while the browser waited, where its own request streams through and the
    extension refuses what passes its 8 MiB. Past HOLD_CEILING it is cut and the browser's request is fetched as
    usual."""
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)))
    flight.start([Planned(f"{server.url}/bomb.js", SCRIPT, "script")])
    await until(lambda: server.count("/bomb.js") == 1, "the prefetch sent", seconds=5, seen=lambda: server.seen)
    answers = FlightAnswers(service, lambda page: flight)
    sink = Count()
    asking = asyncio.create_task(answers.fetch([_browser("js", f"{server.url}/bomb.js", SCRIPT)], sink, PAGE))
    await until(lambda: "js" in answers._waiting, "the browser request waits on the prefetch", seconds=5,
                seen=lambda: sink.got)
    server.release.set()
    await asyncio.wait_for(asking, 20)
    got = sink.got["js"]
    assert got.report is not None and got.report.cache == "none"  # not the flight's: fetched for the browser
    assert sink.sizes["js"] == BOMB_SIZE
    assert server.count("/bomb.js") == 2
    report = await flight.close()
    assert report.answered == 0 and report.cancelled_by_budget == 1
    # counted decoded, what came after the cut too (its coded bytes had all crossed the link); none of it held
    assert report.wasted_bytes > HOLD_CEILING and all(not h.body for h in flight._held.values())


async def test_a_prefetch_the_browser_asked_for_in_time_is_not_too_old_once_its_long_body_ended(
        server: Server, service: FetchService) -> None:
    """The age limit is the prefetch's age when the browser asked for it: a large body on a slow link can take longer
    than the limit to arrive after its head, the browser's request waiting for it all along. Judged at its end, it
    was refused as too old and the browser's request fetched the whole body a second time."""
    clock = Clock()
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)), clock=clock)
    flight.start([Planned(f"{server.url}/held.woff2", IMAGE, "font")])
    await until(lambda: any(h.head is not None for h in flight._held.values()), "the prefetch's head came",
                seconds=5, seen=lambda: server.seen)
    clock.t += 5  # the browser asks while the body comes
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    asking = asyncio.create_task(answers.fetch([_browser("font", f"{server.url}/held.woff2", IMAGE)], sink, PAGE))
    await until(lambda: "font" in answers._waiting, "the browser request waits on the prefetch", seconds=5,
                seen=lambda: sink.got)
    clock.t += 40  # the rest comes past the age limit
    server.release.set()
    await asyncio.wait_for(asking, 10)
    got = sink.got["font"]
    assert got.body == BIG and got.report is not None and got.report.cache == "prefetch"
    assert server.count("/held.woff2") == 1
    report = await flight.close()
    assert report.answered == 1 and not report.refused_by_fidelity

    # a request that comes only after the limit is still refused, however long it would have waited
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=4 * 1024 * 1024)), clock=clock)
    flight.start([Planned(f"{server.url}/b.js", SCRIPT, "script")])
    await flight.wait()
    clock.t += 31
    sink = Collect()
    await FlightAnswers(service, lambda page: flight).fetch([_browser("js", f"{server.url}/b.js", SCRIPT)], sink,
                                                            PAGE)
    assert sink.got["js"].report is not None and sink.got["js"].report.cache == "none"
    assert (await flight.close()).refused_by_fidelity == {"age": 1}


async def test_a_request_answered_by_one_of_two_prefetches_of_its_url_is_no_refusal(
        server: Server, service: FetchService) -> None:
    """A page may ask one URL in two ways (a script preloaded no-cors and run as a module, cors): the flight holds a
    prefetch of each. The cors request, coming first, is answered by its own; the other prefetch not answering it
    is no refusal. Counted as one, it distrusted the flight (nothing more sent for the page) and the page's report
    said a prefetch was refused for a request the flight answered."""
    cors = [*[(k, "cors" if k == "Sec-Fetch-Mode" else v) for k, v in SCRIPT], ("Origin", server.url)]
    flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=1024 * 1024)))
    flight.start([Planned(f"{server.url}/b.js", SCRIPT, "script"), Planned(f"{server.url}/b.js", cors, "script")])
    await flight.wait()
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    await answers.fetch([_browser("module", f"{server.url}/b.js", cors)], sink, PAGE)
    assert sink.got["module"].report is not None and sink.got["module"].report.cache == "prefetch"
    assert not flight.distrusted and not flight.report.refused_by_fidelity
    sink = Collect()
    await answers.fetch([_browser("classic", f"{server.url}/b.js", SCRIPT)], sink, PAGE)
    assert sink.got["classic"].report is not None and sink.got["classic"].report.cache == "prefetch"
    assert server.count("/b.js") == 2  # the two prefetches, nothing more
    report = await flight.close()
    assert report.answered == 2 and not report.refused_by_fidelity


@pytest.mark.parametrize("case", ["chromium", "firefox", "no_room", "validation"])
async def test_the_browsers_own_image_of_unknown_size_is_asked_in_pieces_through_the_flight(
        server: Server, service: FetchService, case: str) -> None:
    """A large document is read whole only at its end, when Chromium gets it too and its parser races the read for
    what it names (page_loads._adopt): an image of unknown size the browser asked for first is asked through the
    load's flight, a first piece and the rest in pieces, as the flight's own are, and answered whole, from that
    flight, to the browser's request alone. Not in Firefox (its proxy streams answers as they come), not where the
    link's room is unknown, and not for a validation (a range of it would mean something else): asked whole there."""
    from lanefetch.prefetch.discover_worker import Discoverer
    from lanefetch.prefetch.load_log import load_key
    from lanefetch.prefetch.page_loads import LoadEnded, PageLoads

    async def ended(_: LoadEnded) -> None:
        pass

    async def nowhere(url: str, page: Page) -> bool:
        return False

    loads = PageLoads(service, service.cache_for, ended, discoverer=Discoverer(use_process=False),
                      link_room=nowhere if case == "no_room" else _anywhere, documents_whole=case != "firefox")
    page = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/book/print.html")
    assert loads.navigation(page)
    fields = IMAGE + ([("If-None-Match", '"photo-0"')] if case == "validation" else [])
    sink = Collect()
    try:
        request = FetchRequest("photo", "GET", f"{server.url}/photo.png", list(fields), resource_type="image")
        await loads.fetch([request], sink, page)
        got = sink.got["photo"]
        assert got.error is None and got.head is not None
        asked = [h.get("Range", "") for p, h in server.seen if p == "/photo.png"]
        if case == "chromium":
            assert got.head.status == 200 and got.body == PHOTO
            assert asked[0] == f"bytes=0-{PIECE_BYTES - 1}" and len(asked) == 3, asked
            assert got.report is not None and got.report.cache == "prefetch"
            load = loads._loads[load_key(page)]  # type: ignore[index]
            assert load.flight is not None
            report = await load.flight.close()
            assert report.answered == 1 and report.wasted_bytes == 0
        else:
            assert asked == [""], "asked whole, as the browser sent it"
            assert got.report is not None and got.report.cache != "prefetch"
            if case != "validation":
                assert got.head.status == 200 and got.body == PHOTO
    finally:
        await loads.end_all()
