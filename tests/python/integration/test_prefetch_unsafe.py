"""A page's request of an unsafe method (the browser sends it itself; the extension tells the helper, `invalidate`)
makes what the page's flight fetched for that URL answer nothing more: the page's next GET of it goes to the server
(RFC 9111 §4.4, as the browser's own cache forgets its copy), and the flight's other answers still serve. The URLs
are images the page changes with a POST (an avatar): a page's fetch() or XHR is never answered from a flight at all
(prefetch/fidelity.py), with or without an unsafe request before it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from lanefetch.engine import DeliveredHead, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.prefetch.budget import Ledger, Limits
from lanefetch.prefetch.flight import Flight, FlightAnswers
from lanefetch.prefetch.plan import Planned
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app

PAGE = Page(address_space="loopback", top_site="http://127.0.0.1")
FIELDS = [("Accept", "image/*"), ("Sec-Fetch-Dest", "image"), ("Sec-Fetch-Mode", "no-cors"), ("User-Agent", "UA/1")]


class Caches:
    def __init__(self) -> None:
        self.got: dict[str, str] = {}  # request id -> where its answer came from (its timing's cache)

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        pass

    async def body(self, request: FetchRequest, data: bytes) -> None:
        pass

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        pass

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self.got[request.id] = f"error {error.code}"

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.got[request.id] = report.cache


@pytest.fixture
async def origin() -> AsyncIterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.Response(text=f"{request.path} #{len(seen)}", content_type="image/svg+xml")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}", seen


async def test_an_unsafe_request_of_the_page_makes_the_flights_copy_of_its_url_answer_nothing(
        origin: tuple[str, list[str]]) -> None:
    url, seen = origin
    service = FetchService(ServiceConfig(EngineConfig(connections_per_origin=2)))
    try:
        flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=1024 * 1024)))
        flight.start([Planned(f"{url}/avatar", FIELDS, "image"), Planned(f"{url}/banner", FIELDS, "image")])
        await flight.wait()
        assert sorted(seen) == ["/avatar", "/banner"]
        flight.invalidate(f"{url}/avatar")  # the page posted a new avatar
        assert not flight.holds(f"{url}/avatar") and flight.holds(f"{url}/banner")

        answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
        sink = Caches()
        asked = [FetchRequest(name, "GET", f"{url}/{name}", list(FIELDS), resource_type="image", decode=True)
                 for name in ("avatar", "banner")]
        await answers.fetch(asked, sink, PAGE)
        assert sink.got == {"avatar": "none", "banner": "prefetch"}
        assert sorted(seen) == ["/avatar", "/avatar", "/banner"]
        report = await flight.close()
        assert report.answered == 1 and report.wasted_bytes > 0  # the forgotten copy crossed the link for nothing
    finally:
        await service.aclose()


async def test_an_unsafe_request_that_comes_through_the_helper_invalidates_the_flights_copy_too() -> None:
    # Firefox's proxy sends every method through the helper (no `invalidate` message): a POST to /avatar that comes
    # this way makes the flight's copy of /avatar answer nothing, so the page's next GET sees the avatar it changed.
    avatar = {"state": "old"}

    async def get(request: web.Request) -> web.Response:
        return web.Response(text=avatar["state"], content_type="image/svg+xml")

    async def post(request: web.Request) -> web.Response:
        avatar["state"] = "new"
        return web.Response(status=204)

    app = web.Application()
    app.router.add_get("/avatar", get)
    app.router.add_post("/avatar", post)
    service = FetchService(ServiceConfig(EngineConfig(connections_per_origin=2)))
    try:
        async with serve_app(app) as port:
            url = f"http://127.0.0.1:{port}/avatar"
            flight = Flight(service, PAGE, Ledger(Limits(speculative=64 * 1024, total=1024 * 1024)))
            flight.start([Planned(url, FIELDS, "image")])
            await flight.wait()
            answers = FlightAnswers(service, lambda page: flight if page is PAGE else None)
            bodies = Bodies()
            await answers.fetch([FetchRequest("post", "POST", url, list(FIELDS), body=b"<svg/>", resource_type="other",
                                              decode=True)], bodies, PAGE)
            await answers.fetch([FetchRequest("get", "GET", url, list(FIELDS), resource_type="image", decode=True)],
                                bodies, PAGE)
            assert bodies.got["get"] == "none" and bodies.bodies["get"] == b"new"
            await flight.close()
    finally:
        await service.aclose()


class Bodies(Caches):
    def __init__(self) -> None:
        super().__init__()
        self.bodies: dict[str, bytes] = {}

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.bodies[request.id] = self.bodies.get(request.id, b"") + data
