"""Learned and discovered together, through the real service (HTTP cache on disk) against aiohttp on 127.0.0.1:
two loads of a page recorded in the cache's database (prefetch/page_memory.py), the next load's document
discovered, planned and flown; the browser's requests for it are answered from the flight without reaching the
server; another page of the same template finds the template's stable assets; private browsing and other
top-level sites learn and recall nothing; clearing the cache forgets the pages."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from lanefetch.engine import DeliveredHead, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.prefetch import page_loads
from lanefetch.prefetch.budget import Ledger, limits_for
from lanefetch.prefetch.discover_html import DocumentRead, discover_html
from lanefetch.prefetch.discover_worker import Discoverer
from lanefetch.prefetch.flight import Flight, FlightAnswers
from lanefetch.prefetch.learned import Observed, observe
from lanefetch.prefetch.load_log import load_key
from lanefetch.prefetch.page_loads import LoadEnded, PageLoads
from lanefetch.prefetch.page_memory import PageMemory, Recalled
from lanefetch.prefetch.plan import Planned, plan
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app
from waits import until

PAGE_HTML = b"""<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/static/site.css"><script src="/static/app.js"></script></head>
<body><img src="/static/logo.png"><img src="/img/%s.png"></body></html>"""
BODIES = {"/static/site.css": b"p{margin:0}" * 200, "/static/app.js": b"void 0;" * 300,
          "/static/logo.png": b"\x89PNG" * 500, "/img/one.png": b"1" * 3000, "/img/two.png": b"2" * 3000,
          "/static/late.js": b"late();" * 10}
FIELDS = {
    "style": [("Accept", "text/css,*/*;q=0.1"), ("Sec-Fetch-Dest", "style")],
    "script": [("Accept", "*/*"), ("Sec-Fetch-Dest", "script")],
    "image": [("Accept", "image/avif,image/webp,*/*"), ("Sec-Fetch-Dest", "image")],
}
COMMON = [("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Site", "same-origin"), ("User-Agent", "UA/2"),
          ("Accept-Language", "en")]


@dataclass
class Server:
    url: str = ""
    seen: list[str] = field(default_factory=list)

    def count(self, path: str) -> int:
        return self.seen.count(path)


@asynccontextmanager
async def counting_server(answer: Callable[[str], web.Response]) -> AsyncIterator[Server]:
    """A loopback server that answers each path with answer(path) and remembers the paths it was asked for."""
    state = Server()

    async def handler(request: web.Request) -> web.StreamResponse:
        state.seen.append(request.path)
        return answer(request.path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app) as port:
        state.url = f"http://127.0.0.1:{port}"
        yield state


def _answer(path: str) -> web.Response:
    if path.startswith("/docs/"):
        name = path.rsplit("/", 1)[1].removesuffix(".html")
        return web.Response(body=PAGE_HTML % name.encode(), content_type="text/html",
                            headers={"Cache-Control": "no-store"})
    if path == "/static/cacheable.js":
        return web.Response(body=b"cacheable();", headers={"Cache-Control": "max-age=600"})
    body = BODIES.get(path)
    if body is None:
        return web.Response(status=404)
    return web.Response(body=body, headers={"Cache-Control": "no-store"})  # only the flight may save a trip


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with counting_server(_answer) as state:
        yield state


class Collect:
    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.cache: dict[str, str] = {}
        self.errors: dict[str, FetchError] = {}

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        self.bodies[request.id] = b""

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.bodies[request.id] += data

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        pass

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self.errors[request.id] = error

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.cache[request.id] = report.cache


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[FetchService]:
    s = FetchService(ServiceConfig(EngineConfig(connections_per_origin=2), cache_dir=tmp_path / "cache"))
    yield s
    await s.aclose()


async def settle(service: FetchService) -> None:
    for cache in service._caches.values():
        await asyncio.gather(*list(cache._pending))


def headers(destination: str) -> list[tuple[str, str]]:
    return [*FIELDS[destination], *COMMON]


def load(base: str, image: str, extra: list[str] | None = None) -> list[Observed]:
    items = [("/static/site.css", "style", 1), ("/static/app.js", "script", 1), ("/static/logo.png", "image", 1),
             (f"/img/{image}.png", "image", 1), *((p, "script", 2) for p in extra or [])]
    return [observe(base + p, d, "no-cors", w, headers(d), len(BODIES[p])) for p, d, w in items]


async def get(service: FetchService, url: str, page: Page) -> bytes:
    sink = Collect()
    await service.fetch([FetchRequest("doc", "GET", url, [], resource_type="document", decode=True)], sink, page)
    assert not sink.errors, sink.errors
    return sink.bodies["doc"]


async def test_learned_and_discovered_page_flies_and_answers(server: Server, service: FetchService) -> None:
    site = Page(address_space="loopback", top_site=server.url)
    memory = PageMemory(service.cache_for)
    page_url = f"{server.url}/docs/one.html"
    sheets = [f"{server.url}/static/site.css"]
    memory.record(site, page_url, sheets, load(server.url, "one", ["/static/late.js"]))
    memory.record(site, page_url, sheets, load(server.url, "one"))
    await settle(service)

    # the next visit: the document arrives, discovery names its stylesheets, the page's histories are recalled
    document = await get(service, page_url, site)
    found = discover_html(document, page_url)
    assert [s.url.removeprefix(server.url) for s in found] == [
        "/static/site.css", "/static/app.js", "/static/logo.png", "/img/one.png"]
    recalled = await memory.recall(site, page_url, [s.url for s in found if s.destination == "style"])
    assert recalled.exact is not None and recalled.template is not None
    p = plan(recalled.exact, recalled.template, [(s, 1) for s in found])
    assert [(i.url.removeprefix(server.url), i.confident) for i in p.items] == [
        ("/static/site.css", True), ("/static/app.js", True), ("/static/logo.png", True), ("/img/one.png", True)]
    # late.js was requested once, by the older load only: neither stable nor the newest load's: not fetched
    server.seen.clear()
    flight = Flight(service, site, Ledger(p.limits))
    flight.start(p.items)
    await flight.wait()
    assert sorted(server.seen) == ["/img/one.png", "/static/app.js", "/static/logo.png", "/static/site.css"]

    # the browser's own requests, with its own fields: all four answered from the flight
    answers = FlightAnswers(service, lambda page: flight if page is site else None)
    sink = Collect()
    batch = [FetchRequest(f"r{i}", "GET", s.url, headers(s.destination), decode=True) for i, s in enumerate(found)]
    await answers.fetch(batch, sink, site)
    assert not sink.errors
    assert [sink.cache[f"r{i}"] for i in range(4)] == ["prefetch"] * 4
    assert [sink.bodies[f"r{i}"] for i in range(4)] == [BODIES[s.url.removeprefix(server.url)] for s in found]
    assert len(server.seen) == 4  # nothing fetched twice
    report = await flight.close()
    assert report.answered == 4 and report.wasted_bytes == 0

    # another page of the same template: its own image is unknown, the template's stable assets are not
    other = f"{server.url}/docs/two.html"
    found = discover_html(await get(service, other, site), other)
    recalled = await memory.recall(site, other, [s.url for s in found if s.destination == "style"])
    assert recalled.exact is None and recalled.template is not None
    # only page one was ever loaded: nothing is stable across the template's pages yet; the discovered requests
    # get the fields the template's loads showed
    items = plan(recalled.exact, recalled.template, [(s, 1) for s in found]).items
    assert [(i.url.removeprefix(server.url), i.confident) for i in items] == [
        ("/static/site.css", True), ("/static/app.js", True), ("/static/logo.png", True), ("/img/two.png", True)]
    # once page two was loaded too, the shared assets are the template's stable ones, page one's image is not
    memory.record(site, other, sheets, load(server.url, "two"))
    await settle(service)
    recalled = await memory.recall(site, f"{server.url}/docs/three.html", sheets)
    assert recalled.exact is None and recalled.template is not None
    assert [i.url.removeprefix(server.url) for i in plan(None, recalled.template, []).items] == [
        "/static/site.css", "/static/app.js", "/static/logo.png"]


async def test_a_prefetch_the_fidelity_rule_refused_is_not_served_from_the_http_cache(
        server: Server, service: FetchService) -> None:
    """The flight goes through the service's HTTP cache, but never stores there: a cacheable prefetch refused to
    a request with a Cookie must not come back to that request through the cache."""
    site = Page(address_space="loopback", top_site=server.url)
    url = f"{server.url}/static/cacheable.js"
    flight = Flight(service, site, Ledger(limits_for(None)))
    flight.start([Planned(url, headers("script"), "script")])
    await flight.wait()
    await settle(service)
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    await answers.fetch([FetchRequest("c", "GET", url, [*headers("script"), ("Cookie", "sid=1")], decode=True)],
                        sink, site)
    assert sink.cache["c"] == "none" and sink.bodies["c"] == b"cacheable();"
    assert server.count("/static/cacheable.js") == 2  # refused by fidelity, fetched anew: not a cache hit
    assert (await flight.close()).refused_by_fidelity == {"header:cookie": 1}
    # the browser's own response was stored as usual: the next request is a hit
    await settle(service)
    sink = Collect()
    await service.fetch([FetchRequest("d", "GET", url, headers("script"), decode=True)], sink, site)
    assert sink.cache["d"] == "hit" and server.count("/static/cacheable.js") == 2


async def test_private_browsing_and_other_sites_learn_nothing_and_clear_forgets(server: Server,
                                                                               service: FetchService) -> None:
    site = Page(address_space="loopback", top_site=server.url)
    private = Page(address_space="loopback", top_site=server.url, private_browsing=True)
    elsewhere = Page(address_space="loopback", top_site="https://other.example")
    memory = PageMemory(service.cache_for)
    page_url = f"{server.url}/docs/one.html"
    memory.record(private, page_url, None, load(server.url, "one"))
    await settle(service)
    assert await memory.recall(site, page_url) == Recalled()
    memory.record(site, page_url, None, load(server.url, "one"))
    await settle(service)
    assert await memory.recall(private, page_url) == Recalled()  # never read for private browsing either
    assert await memory.recall(elsewhere, page_url) == Recalled()  # partitioned by top-level site
    assert (await memory.recall(site, page_url)).exact is not None
    cache = service.cache_for(site)
    assert cache is not None
    await cache.clear()
    assert await memory.recall(site, page_url) == Recalled()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def browser_request(rid: str, url: str, destination: str) -> FetchRequest:
    kind = {"style": "stylesheet", "script": "script", "image": "image"}[destination]
    return FetchRequest(rid, "GET", url, headers(destination), resource_type=kind, decode=True)


def recording_loads(service: FetchService, **kwargs: Any) -> tuple[PageLoads, list[LoadEnded]]:
    """PageLoads over the service, with the loads it ends collected in the list returned beside it."""
    ended: list[LoadEnded] = []

    async def on_end(e: LoadEnded) -> None:
        ended.append(e)

    kwargs.setdefault("discoverer", Discoverer(use_process=False))  # a thread: nothing left running by a test
    return PageLoads(service, service.cache_for, on_end, **kwargs), ended


async def known_browser(loads: PageLoads, service: FetchService, base: str,
                        paths: tuple[tuple[str, str], ...] = (("/static/site.css", "style"),
                                                              ("/static/logo.png", "image"))) -> None:
    """One load of another page of the site: the helper knows the browser's fields (its field profile) after it."""
    other = Page(address_space="loopback", top_site=base, url=f"{base}/docs/one.html")
    assert loads.navigation(other)
    await loads.fetch([browser_request(f"o{i}", base + p, d) for i, (p, d) in enumerate(paths)], Collect(), other)
    await loads.end_all()
    await settle(service)


def navigate(loads: PageLoads, base: str, path: str) -> tuple[str, Page]:
    """A navigation to base + path begins its load: the page's URL and Page."""
    page_url = base + path
    page = Page(address_space="loopback", top_site=base, url=page_url)
    assert loads.navigation(page)
    return page_url, page


async def flown(loads: PageLoads, site: Page) -> Flight:
    """The flight of the load `loads.navigation(site)` began, once it has started and every prefetch ended."""
    load = loads._loads[load_key(site)]  # type: ignore[index]
    assert load.starting is not None
    await load.starting
    assert load.flight is not None
    await load.flight.wait()
    return load.flight


async def test_page_loads_learn_fly_and_end_when_idle(server: Server, service: FetchService) -> None:
    """The host's wiring (prefetch/page_loads.py) in process, on an injected clock: a load ends when idle (checked
    when the next navigation or batch comes), is recorded and reported; a second navigation message before any
    request of the load continues it (one flight, not two); the next load's batch is answered from its flight,
    except what the helper's HTTP cache holds (a hit, never prefetched)."""
    clock = Clock()
    loads, ended = recording_loads(service, clock=clock)
    site = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/one.html")
    flown = [("/static/site.css", "style"), ("/static/app.js", "script"), ("/static/logo.png", "image")]
    assets = [*flown, ("/static/cacheable.js", "script")]
    for n in range(2):
        assert loads.navigation(site)
        sink = Collect()
        await loads.fetch([browser_request(f"{n}-{i}", server.url + p, d) for i, (p, d) in enumerate(assets)], sink,
                          site)
        assert not sink.errors
        clock.t += 30.0  # quiet for longer than IDLE_S
        loads.navigation(Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/other.html"))
        await asyncio.gather(*list(loads._ending))
        assert [e.recorded for e in ended if e.url == site.url] == [4] * (n + 1)
    await settle(service)

    server.seen.clear()
    assert loads.navigation(site)
    assert loads.navigation(site)  # the probe's preconnect, then the navigation's: one load, one flight
    first = loads._loads[load_key(site)]  # type: ignore[index]
    assert first.starting is not None
    await first.starting
    assert first.flight is not None
    await first.flight.wait()
    assert sorted(server.seen) == sorted(p for p, _ in flown)
    sink = Collect()
    await loads.fetch([browser_request(f"3-{i}", server.url + p, d) for i, (p, d) in enumerate(assets)], sink, site)
    assert sink.cache == {"3-0": "prefetch", "3-1": "prefetch", "3-2": "prefetch", "3-3": "hit"}
    assert sorted(server.seen) == sorted(p for p, _ in flown)
    await loads.end_all()
    report = ended[-1].flight
    assert ended[-1].url == site.url and report is not None
    assert (report.sent, report.answered, report.wasted_bytes) == (3, 3, 0)
    # The load answered from its flight is learned with what each answer put on the link (its prefetch's bytes, head
    # included); the cache hit put nothing there and keeps what it put there when it came over the link.
    await settle(service)
    recalled = await loads._memory.recall(site, site.url)
    assert recalled.exact is not None
    newest = {o.url.removeprefix(server.url): o for o in recalled.exact.loads[0]}
    for path, _ in flown:
        size, wire = newest[path].size, newest[path].wire
        assert size is not None and wire is not None and size < wire < size + 1024, (path, size, wire)
    first = {o.url.removeprefix(server.url): o for o in recalled.exact.loads[-1]}
    assert first["/static/cacheable.js"].wire is not None
    assert newest["/static/cacheable.js"].wire == first["/static/cacheable.js"].wire


async def test_a_request_left_to_the_browsers_warm_connection_is_learned_and_flies_next_time(
        server: Server, service: FetchService) -> None:
    """A script the extension marked `browser_warm` (the browser's own connection was warm) is declined and fetched
    by the browser in both learning loads; it is the page's all the same: the next load's flight fetches it, and the
    browser's request, marked again, is answered from the flight (found on jinja-templates' second visit on `sat`:
    never learned, it cost a round trip after the document)."""
    clock = Clock()
    loads, _ = recording_loads(service, clock=clock)
    site = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/one.html")
    assets = [("/static/site.css", "style"), ("/static/app.js", "script")]

    def batch(n: int) -> list[FetchRequest]:
        requests = [browser_request(f"{n}-{i}", server.url + p, d) for i, (p, d) in enumerate(assets)]
        requests[1].browser_warm = True
        return requests

    for n in range(2):
        assert loads.navigation(site)
        sink = Collect()
        await loads.fetch(batch(n), sink, site)
        assert set(sink.errors) == {f"{n}-1"} and sink.errors[f"{n}-1"].code == "browser_warm"
        clock.t += 30.0
        loads.navigation(Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/other.html"))
        await asyncio.gather(*list(loads._ending))
    await settle(service)
    assert "/static/app.js" not in server.seen, "declined: never sent by the helper"

    assert loads.navigation(site)
    await flown(loads, site)
    assert "/static/app.js" in server.seen, "the flight fetched it"
    sink = Collect()
    await loads.fetch(batch(2), sink, site)
    assert not sink.errors
    assert sink.cache["2-1"] == "prefetch" and sink.bodies["2-1"] == BODIES["/static/app.js"]
    await loads.end_all()


async def test_requests_the_browser_fetched_itself_are_learned_and_fly_next_time(
        server: Server, service: FetchService) -> None:
    """A page without a flight whose origin the browser reaches over h2: its requests go to the browser at once and
    the extension tells the helper (`browser_fetched`); nothing is fetched here, but the page is learned, so the next
    load's flight fetches them and the browser's requests, offered first, are answered from it."""
    clock = Clock()
    loads, _ = recording_loads(service, clock=clock)
    site = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/one.html")
    assets = [("/static/site.css", "style"), ("/static/app.js", "script")]

    def batch(n: int) -> list[FetchRequest]:
        return [browser_request(f"{n}-{i}", server.url + p, d) for i, (p, d) in enumerate(assets)]

    for n in range(2):
        assert loads.navigation(site)
        loads.browser_fetched(batch(n), site)
        clock.t += 30.0
        loads.navigation(Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/other.html"))
        await asyncio.gather(*list(loads._ending))
    await settle(service)
    assert not {"/static/site.css", "/static/app.js"} & set(server.seen), "told, never fetched by the helper"
    loads.browser_fetched(batch(9), Page(address_space="loopback", top_site=server.url, url=f"{server.url}/nowhere"))

    assert loads.navigation(site)
    await flown(loads, site)
    assert {"/static/site.css", "/static/app.js"} <= set(server.seen), "the flight fetched them"
    sink = Collect()
    requests = batch(2)
    for r in requests:
        r.browser_warm = True
    await loads.fetch(requests, sink, site)
    assert not sink.errors
    assert sink.cache["2-1"] == "prefetch" and sink.bodies["2-1"] == BODIES["/static/app.js"]
    await loads.end_all()


async def test_a_prefetch_the_http_cache_answered_fresh_is_a_hit_not_a_prefetch(
        server: Server, service: FetchService) -> None:
    """A flight's prefetch that the helper's cache answered without the network saved nothing: the browser's
    request it answers says "hit" (the panel's cache count stays true); one that crossed the network says
    "prefetch"."""
    site = Page(address_space="loopback", top_site=server.url)
    cached, fetched = f"{server.url}/static/cacheable.js", f"{server.url}/static/app.js"
    sink = Collect()
    await service.fetch([FetchRequest("first", "GET", cached, headers("script"), decode=True)], sink, site)
    await settle(service)
    flight = Flight(service, site, Ledger(limits_for(None)))
    flight.start([Planned(cached, headers("script"), "script"), Planned(fetched, headers("script"), "script")])
    answers = FlightAnswers(service, lambda page: flight)
    sink = Collect()
    await answers.fetch([FetchRequest("c", "GET", cached, headers("script"), decode=True),
                         FetchRequest("f", "GET", fetched, headers("script"), decode=True)], sink, site)
    assert sink.cache == {"c": "hit", "f": "prefetch"}
    assert sink.bodies["c"] == b"cacheable();" and server.count("/static/cacheable.js") == 1
    assert (await flight.close()).answered == 2


async def test_an_idle_load_ends_without_another_message(server: Server, service: FetchService) -> None:
    """The sweep also runs on the event loop's timer: a load nobody navigates away from ends once idle (here
    after 0.05 s), recorded and reported, with no further navigation or batch."""
    loads, ended = recording_loads(service, idle_s=0.05)
    site = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/one.html")
    assert loads.navigation(site)
    await loads.fetch([browser_request("a", f"{server.url}/static/app.js", "script")], Collect(), site)
    await until(lambda: bool(ended), "the idle load's end", seconds=5)
    assert [(e.url, e.recorded) for e in ended] == [(site.url, 1)]
    await loads.end_all()


async def test_a_load_whose_flight_nobody_asked_for_ends_the_flights(server: Server, service: FetchService) -> None:
    """When the browser stops bringing a learned page's requests to the helper (it now fetches them itself: a fast
    origin, its own warm h2 connection), the load that had a flight and saw none of it is remembered as empty, so
    the next visit flies nothing: a flight is never fetched again and again for nobody."""
    clock = Clock()
    loads, _ = recording_loads(service, clock=clock)
    site = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/one.html")
    other = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/other.html")
    assets = [("/static/site.css", "style"), ("/static/app.js", "script")]

    async def visit(n: int, with_requests: bool) -> bool:
        """One visit; whether a flight was fetched for it."""
        assert loads.navigation(site)
        current = loads._loads[load_key(site)]  # type: ignore[index]
        assert current.starting is not None
        await current.starting
        flight = current.flight
        if flight is not None:
            await flight.wait()
        if with_requests:
            await loads.fetch([browser_request(f"{n}-{i}", server.url + p, d) for i, (p, d) in enumerate(assets)],
                              Collect(), site)
        clock.t += 30.0
        loads.navigation(other)
        await asyncio.gather(*list(loads._ending))
        await settle(service)
        return flight is not None

    assert not await visit(0, True)  # nothing learned yet
    await visit(1, True)  # (after one load its requests are guesses: a small flight)
    assert await visit(2, False)  # learned: it flies, and the browser asks the helper for none of it
    server.seen.clear()
    assert not await visit(3, False)  # the empty load was remembered: nothing is fetched for nobody
    assert server.seen == []
    await loads.end_all()


FIRST_HTML = (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=/static/first.css>"
              b"<script src=/static/app.js></script></head><body><img src=/static/logo.png>"
              + b"<p>text</p>" * 400 + b"</body></html>")
FIRST_CSS = (b"@import url(/static/imported.css);\n@font-face{font-family:f;src:url(/static/f.woff2) format('woff2')}"
             b"\nbody{font-family:f}")
FIRST = {"/first/index.html": FIRST_HTML, "/static/first.css": FIRST_CSS, "/static/imported.css": b"p{color:red}",
         "/static/f.woff2": b"wOF2" * 100}


def _first_answer(path: str) -> web.Response:
    if path in ("/first/index.html", "/cookie/index.html"):
        cookie = {"Set-Cookie": "session=1; Path=/"} if path.startswith("/cookie/") else {}
        return web.Response(body=FIRST_HTML, content_type="text/html",
                            headers={"Cache-Control": "no-store", **cookie})
    if path in FIRST:
        return web.Response(body=FIRST[path], content_type="text/css" if path.endswith(".css") else None,
                            headers={"Cache-Control": "no-store"})
    return _answer(path)


def document_request(rid: str, url: str) -> FetchRequest:
    fields = [("Accept", "text/html"), ("Sec-Fetch-Dest", "document"), ("Sec-Fetch-Mode", "navigate"),
              ("Sec-Fetch-Site", "none"), ("User-Agent", "UA/2"), ("Accept-Language", "en")]
    return FetchRequest(rid, "GET", url, fields, resource_type="document", decode=True)


async def test_a_first_visit_flies_what_its_document_and_stylesheets_name(service: FetchService) -> None:
    """Discovery wired (page_loads.py): after the helper saw one load of another page (the browser's field profile:
    field_profile.py), a page it never loaded has its document read as it streams through the helper; its
    stylesheet, script and image are fetched before the browser asks, the prefetched stylesheet is read in turn
    and its @import fetched too (the @font-face source is conditional: not fetched on a first visit); the
    browser's requests are answered from the flight; one with another Accept is fetched anew, after which the
    flight sends nothing more. A page whose
    document set a cookie prefetches nothing of its own site (the browser would send the cookie); private
    browsing reads and flies nothing."""
    async with counting_server(_first_answer) as server:
        discoverer = Discoverer()
        loads, ended = recording_loads(service, discoverer=discoverer)
        try:
            await known_browser(loads, service, server.url, (
                ("/static/site.css", "style"), ("/static/app.js", "script"), ("/static/logo.png", "image")))

            server.seen.clear()
            page_url = f"{server.url}/first/index.html"
            page = Page(address_space="loopback", top_site=server.url, url=page_url)
            assert loads.navigation(page)
            sink = Collect()
            await loads.fetch([document_request("doc", page_url)], sink, page)
            assert sink.bodies["doc"] == FIRST_HTML
            await until(lambda: "/static/imported.css" in server.seen, "the @import's prefetch")
            load = loads._loads[load_key(page)]  # type: ignore[index]
            assert load.flight is not None
            await asyncio.gather(*list(load.tasks))
            await load.flight.wait()
            assert sorted(server.seen) == ["/first/index.html", "/static/app.js", "/static/first.css",
                                           "/static/imported.css", "/static/logo.png"]

            sink = Collect()
            wanted = [("/static/first.css", "style"), ("/static/app.js", "script"), ("/static/imported.css", "style")]
            batch = [browser_request(f"b{i}", server.url + p, d) for i, (p, d) in enumerate(wanted)]
            other_accept = FetchRequest("img", "GET", f"{server.url}/static/logo.png",
                                        [("Accept", "image/png"), *headers("image")[1:]], resource_type="image",
                                        decode=True)
            await loads.fetch([*batch, other_accept], sink, page)
            assert not sink.errors
            assert sink.cache == {"b0": "prefetch", "b1": "prefetch", "b2": "prefetch", "img": "none"}
            assert sink.bodies["b2"] == FIRST["/static/imported.css"]
            assert server.count("/static/first.css") == 1 and server.count("/static/logo.png") == 2
            # after a refusal the flight sends nothing more: the fields proved wrong once
            flight = load.flight
            assert flight.distrusted
            sent = flight.report.sent
            flight.start([Planned(f"{server.url}/static/late.js", headers("script"), "script")])
            assert flight.report.sent == sent and server.count("/static/late.js") == 0
            await loads.end_all()
            report = ended[-1].flight
            assert report is not None and report.answered == 3
            assert report.refused_by_fidelity == {"header:accept": 1}

            # the browser holds a cookie for the site (the document set one): nothing of the site is prefetched
            server.seen.clear()
            cookie_url = f"{server.url}/cookie/index.html"
            cookie_page = Page(address_space="loopback", top_site=server.url, url=cookie_url)
            assert loads.navigation(cookie_page)
            await loads.fetch([document_request("cdoc", cookie_url)], Collect(), cookie_page)
            load = loads._loads[load_key(cookie_page)]  # type: ignore[index]
            await asyncio.gather(*list(load.tasks))
            assert load.flight is None and server.seen == ["/cookie/index.html"]
            await loads.end_all()

            # private browsing: no load, nothing read, nothing flown
            server.seen.clear()
            private = Page(address_space="loopback", top_site=server.url, url=page_url, private_browsing=True)
            assert not loads.navigation(private)
            await loads.fetch([document_request("pdoc", page_url)], Collect(), private)
            assert load_key(private) is None and not loads._loads  # no load: no tap, no discovery, no flight
            assert server.seen == ["/first/index.html"]
        finally:
            await loads.end_all()
            discoverer.close()


async def test_a_new_page_of_a_known_template_flies_the_template_s_stable_assets(server: Server,
                                                                                 service: FetchService) -> None:
    """Two pages of one template (same path shape, same stylesheets) loaded through the helper, each also asking
    for a script no document names (a script inserted it): once a third page's document was read whole, its
    stylesheets make the template key, and the template's stable assets fly too, the inserted script included."""
    loads, _ended = recording_loads(service)
    assets = [("/static/site.css", "style"), ("/static/app.js", "script"), ("/static/logo.png", "image"),
              ("/static/late.js", "script")]
    for name in ("one", "two"):
        page = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/{name}.html")
        assert loads.navigation(page)
        await loads.fetch([document_request(f"{name}-doc", page.url or "")], Collect(), page)
        load = loads._loads[load_key(page)]  # type: ignore[index]
        await until(lambda load=load: load.stylesheets is not None, "the document read whole")
        await loads.fetch([browser_request(f"{name}-{i}", server.url + p, d) for i, (p, d) in enumerate(assets)],
                          Collect(), page)
        await loads.end_all()
    await settle(service)

    server.seen.clear()
    page = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/three.html")
    assert loads.navigation(page)
    await loads.fetch([document_request("doc", page.url or "")], Collect(), page)
    load = loads._loads[load_key(page)]  # type: ignore[index]
    await until(lambda: "/static/late.js" in server.seen, "the template's stable script prefetched")
    assert load.template is not None
    sink = Collect()
    await loads.fetch([browser_request(f"b{i}", server.url + p, d) for i, (p, d) in enumerate(assets)], sink, page)
    assert sink.cache == {f"b{i}": "prefetch" for i in range(4)}
    assert all(server.count(p) == 1 for p, _ in assets)
    await loads.end_all()


async def test_a_new_page_of_a_known_shape_flies_what_its_loads_shared_before_its_document(
        server: Server, service: FetchService) -> None:
    """Two pages of one shape (same origin and path shape) loaded through the helper: a third page's navigation
    flies what both asked for at once, before its document is even requested (its template is not known yet); a page
    of another shape flies nothing; the browser's requests for the shared assets are answered from the flight."""
    loads, _ended = recording_loads(service)
    shared_assets = [("/static/site.css", "style"), ("/static/app.js", "script")]
    for name in ("one", "two"):
        page = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/{name}.html")
        assert loads.navigation(page)
        await loads.fetch([document_request(f"{name}-doc", page.url or "")], Collect(), page)
        own = [(f"/static/{name}.png", "image")]
        await loads.fetch([browser_request(f"{name}-{i}", server.url + p, d)
                           for i, (p, d) in enumerate([*shared_assets, *own])], Collect(), page)
        await loads.end_all()
    await settle(service)

    server.seen.clear()
    other = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/blog/2026/post.html")
    assert loads.navigation(other)
    assert not await loads.flies(other)  # another shape: nothing learned for it
    page = Page(address_space="loopback", top_site=server.url, url=f"{server.url}/docs/three.html")
    assert loads.navigation(page)
    # not a flight of its own: its document should come through the helper, to be read for the page's own assets
    assert not await loads.flies(page)
    await until(lambda: all(p in server.seen for p, _ in shared_assets), "the shape's shared assets prefetched")
    assert sorted(server.seen) == sorted(p for p, _ in shared_assets)  # no document yet, no page's own image
    load = loads._loads[load_key(page)]  # type: ignore[index]
    assert load.template is None and load.shape is not None
    sink = Collect()
    await loads.fetch([browser_request(f"b{i}", server.url + p, d) for i, (p, d) in enumerate(shared_assets)],
                      sink, page)
    assert sink.cache == {"b0": "prefetch", "b1": "prefetch"}
    assert all(server.count(p) == 1 for p, _ in shared_assets)
    await loads.end_all()


@asynccontextmanager
async def one_page_site(service: FetchService, handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                        ) -> AsyncIterator[tuple[str, Clock, PageLoads, list[LoadEnded], Page]]:
    """A server answering every GET with `handler`, and page loads over the service on an injected clock, for
    one page of it: (its origin, the clock, the loads, the loads ended, the page)."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app) as port:
        base = f"http://127.0.0.1:{port}"
        clock = Clock()
        loads, ended = recording_loads(service, clock=clock)
        yield base, clock, loads, ended, Page(address_space="loopback", top_site=base, url=f"{base}/docs/one.html")


@pytest.mark.parametrize("browser_copy", [False, True], ids=["browser-cache-empty", "browser-revalidates"])
async def test_what_the_cache_holds_stale_is_revalidated_at_the_navigation_and_answered_from_the_flight(
        service: FetchService, browser_copy: bool) -> None:
    """A learned page whose assets the helper's cache holds stale (`no-cache`, an ETag; the stylesheet gzipped and
    stored under its Accept-Encoding, `Vary`): at the next navigation the flight sends their revalidations at once,
    before the browser asks; a 304 refreshes the stored response, whose
    body answers the browser's request from the flight (none of the browser's requests reaches the server); an
    asset that changed comes whole in that same flight and answers with its new body. Nothing is fetched in pieces
    or twice. `browser_copy`: the browser holds copies of its own and asks to validate them (If-None-Match, as on
    a return to the page in the same tab): the flight answers those too."""
    versions = {"/static/site.css": b"v1", "/static/app.js": b"v1", "/static/logo.png": b"v1"}
    seen: list[tuple[str, str | None]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append((request.path, request.headers.get("If-None-Match")))
        version = versions.get(request.path)
        if version is None:
            return web.Response(status=404)
        etag = f'"{version.decode()}"'
        cache = {"ETag": etag, "Cache-Control": "no-cache"}
        compressed = request.path.endswith(".css")  # stored under the Accept-Encoding it was asked with (Vary)
        if compressed:
            cache["Vary"] = "Accept-Encoding"
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=cache)
        body = BODIES[request.path] + version
        if compressed and "gzip" in request.headers.get("Accept-Encoding", ""):
            return web.Response(body=gzip.compress(body), headers={**cache, "Content-Encoding": "gzip"})
        return web.Response(body=body, headers=cache)

    async with one_page_site(service, handler) as (base, clock, loads, ended, site):
        assets = [("/static/site.css", "style"), ("/static/app.js", "script"), ("/static/logo.png", "image")]
        for n in range(2):  # learned twice (stable), each load's answers stored by the helper's cache
            assert loads.navigation(site)
            sink = Collect()
            await loads.fetch([browser_request(f"{n}-{i}", base + p, d) for i, (p, d) in enumerate(assets)], sink,
                              site)
            assert not sink.errors
            clock.t += 30.0
            await loads.end_all()
            await settle(service)
        assert sum(1 for _, etag in seen if etag is not None) == 3  # the second load revalidated, as the browser's

        seen.clear()
        versions["/static/app.js"] = b"v2"  # changed on the server since
        assert loads.navigation(site)
        await flown(loads, site)
        assert sorted(seen) == [("/static/app.js", '"v1"'), ("/static/logo.png", '"v1"'), ("/static/site.css", '"v1"')]
        sink = Collect()
        third = [browser_request(f"3-{i}", base + p, d) for i, (p, d) in enumerate(assets)]
        if browser_copy:
            third = [dataclasses.replace(r, headers=[*r.headers, ("If-None-Match", '"v1"')]) for r in third]
        await loads.fetch(third, sink, site)
        assert not sink.errors
        # Answered from the flight; the panel calls a stored response a 304 refreshed what it is (revalidated)
        assert sink.cache == {"3-0": "revalidated", "3-1": "prefetch", "3-2": "revalidated"}
        assert sink.bodies == {"3-0": BODIES["/static/site.css"] + b"v1", "3-1": BODIES["/static/app.js"] + b"v2",
                               "3-2": BODIES["/static/logo.png"] + b"v1"}
        assert len(seen) == 3, "the browser's requests were all answered from the flight"
        await loads.end_all()
        report = ended[-1].flight
        assert report is not None and (report.sent, report.answered) == (3, 3)
        # Only what crossed the link counts: the changed script's body; the two 304s' stored bodies do not
        assert report.claimed_bytes == len(BODIES["/static/app.js"]) + 2 and report.wasted_bytes == 0
        await settle(service)
        seen.clear()
        sink = Collect()  # the changed script, claimed, was stored: the next plain request revalidates "v2"
        await service.fetch([browser_request("4", f"{base}/static/app.js", "script")], sink, site)
        assert seen == [("/static/app.js", '"v2"')] and sink.cache == {"4": "revalidated"}


async def test_a_revalidation_answered_whole_is_held_for_the_page_like_one_answered_304(
        service: FetchService) -> None:
    """A page learned from one load (its requests are guesses, whose limit is 5 % of the page, at least 32 KiB)
    whose responses the helper's cache holds stale, from a server that never answers 304 (Apache's suffixed ETag on
    what it compresses): the flight's revalidations come back whole, 120 kB in all. They are held like the 304s
    would have been, not cut as guesses over their limit: the browser's requests are all answered from the flight,
    and the server sees each path once in that load."""
    paths = ["/static/a.js", "/static/b.js", "/static/c.css"]
    seen: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(request.path)
        # the ETag it sends never matches the If-None-Match it gets back, as Apache's "-gzip" suffix
        headers = {"ETag": f'"{len(seen)}-gzip"', "Cache-Control": "no-cache"}
        return web.Response(body=request.path.encode() * 4000, headers=headers)

    async with one_page_site(service, handler) as (base, clock, loads, ended, site):
        assets = list(zip(paths, ["script", "script", "style"], strict=True))
        assert loads.navigation(site)  # the one load it learns from; its answers stored (stale: no-cache)
        sink = Collect()
        await loads.fetch([browser_request(f"1-{i}", base + p, d) for i, (p, d) in enumerate(assets)],
                          sink, site)
        assert not sink.errors
        clock.t += 30.0
        await loads.end_all()
        await settle(service)

        seen.clear()
        assert loads.navigation(site)
        await flown(loads, site)
        assert sorted(seen) == sorted(paths)  # revalidated, and answered whole
        sink = Collect()
        await loads.fetch([browser_request(f"2-{i}", base + p, d) for i, (p, d) in enumerate(assets)],
                          sink, site)
        assert not sink.errors
        assert sink.bodies == {f"2-{i}": p.encode() * 4000 for i, p in enumerate(paths)}
        assert sorted(seen) == sorted(paths), "the browser's requests were answered from the flight"
        await loads.end_all()
        report = ended[-1].flight
        assert report is not None and (report.sent, report.answered, report.cancelled_by_budget) == (3, 3, 0)


async def test_a_helper_that_never_saw_the_browser_learns_its_fields_from_the_page_s_first_batch(
        service: FetchService) -> None:
    """A fresh helper (no field profile kept: its first page, or the first after a browser update) learns the
    browser's fields during the load, from the page's first batch: the `@import` the browser's stylesheet names flies
    before the browser asks, and answers it (a page whose document the browser loads itself, as on a private
    address: only the stylesheet is read)."""
    async with counting_server(_first_answer) as server:
        loads, ended = recording_loads(service)
        try:
            _page_url, page = navigate(loads, server.url, "/first/index.html")
            sink = Collect()
            batch = [browser_request("css", f"{server.url}/static/first.css", "style"),
                     browser_request("js", f"{server.url}/static/app.js", "script")]
            await loads.fetch(batch, sink, page)
            assert not sink.errors
            await until(lambda: "/static/imported.css" in server.seen, "the @import's prefetch")
            load = loads._loads[load_key(page)]  # type: ignore[index]
            await asyncio.gather(*list(load.tasks))
            assert load.flight is not None
            await load.flight.wait()
            assert "/static/f.woff2" not in server.seen  # a font is conditional: never on a first visit

            sink = Collect()
            await loads.fetch([browser_request("imp", f"{server.url}/static/imported.css", "style")], sink, page)
            assert sink.cache == {"imp": "prefetch"} and sink.bodies["imp"] == FIRST["/static/imported.css"]
            assert server.count("/static/imported.css") == 1
            await loads.end_all()
            report = ended[-1].flight
            assert report is not None and report.answered == 1 and not report.refused_by_fidelity
        finally:
            await loads.end_all()


async def _asked_once_flown(loads: PageLoads, load: Any, page: Page, request: FetchRequest) -> Collect:
    """The browser's request, asked once the load's discovery is done and its flight has nothing under way: what
    answered it."""
    await asyncio.gather(*list(load.tasks))
    assert load.flight is not None
    await load.flight.wait()
    sink = Collect()
    await loads.fetch([request], sink, page)
    return sink


TWO_SHEETS = (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=/static/a.css>"
              b"<link rel=stylesheet href=/static/b.css></head><body>" + b"<p>text</p>" * 300 + b"</body></html>")


def _two_sheets(path: str) -> web.Response:
    if path == "/two/index.html":
        return web.Response(body=TWO_SHEETS, content_type="text/html", headers={"Cache-Control": "no-store"})
    if path in ("/static/a.css", "/static/b.css"):
        return web.Response(body=b"p{margin:0}", content_type="text/css", headers={"Cache-Control": "no-store"})
    return web.Response(status=404)


async def test_what_discovery_found_without_fields_flies_once_a_batch_teaches_them(service: FetchService) -> None:
    """A fresh helper reads a page's document (it fetches it, as for a public page) before the browser asked for
    anything: with no field profile nothing it names can be planned. The browser's first batch (one of the two
    stylesheets) teaches the stylesheet's fields, and the other stylesheet the document named flies then, answering
    the browser's request for it."""
    async with counting_server(_two_sheets) as server:
        loads, ended = recording_loads(service)
        try:
            page_url, page = navigate(loads, server.url, "/two/index.html")
            await loads.fetch([document_request("doc", page_url)], Collect(), page)
            load = loads._loads[load_key(page)]  # type: ignore[index]
            await until(lambda: len(load.found) == 2, "the document read")
            await asyncio.gather(*list(load.tasks))
            assert load.flight is None and server.seen == ["/two/index.html"]  # no fields known: nothing flew

            await loads.fetch([browser_request("a", f"{server.url}/static/a.css", "style")], Collect(), page)
            await until(lambda: "/static/b.css" in server.seen, "b.css flown once the batch taught its fields")
            sink = await _asked_once_flown(loads, load, page, browser_request("b", f"{server.url}/static/b.css",
                                                                              "style"))
            assert sink.cache == {"b": "prefetch"} and server.count("/static/b.css") == 1
            await loads.end_all()
            report = ended[-1].flight
            assert report is not None and report.answered == 1
        finally:
            await loads.end_all()


IMG_HTML = (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=/static/a.css></head>"
            b"<body><img src=/static/shot.png>" + b"<p>text</p>" * 300 + b"</body></html>")
IMG_PAGE = {"/img/index.html": IMG_HTML, "/static/a.css": b"p{margin:0}", "/static/shot.png": b"\x89PNG" * 300}


async def _img_page_first_batch(loads: PageLoads, base: str) -> tuple[Page, Any]:
    """IMG_PAGE navigated to, its document read by the helper, then the browser's first batch (its stylesheet)
    fetched: the page and its load (what it planned has been started)."""
    page_url, page = navigate(loads, base, "/img/index.html")
    await loads.fetch([document_request("doc", page_url)], Collect(), page)
    load = loads._loads[load_key(page)]  # type: ignore[index]
    await until(lambda: len(load.found) == 2, "the document read")
    await loads.fetch([browser_request("a", f"{base}/static/a.css", "style")], Collect(), page)
    await asyncio.gather(*list(load.tasks))
    return page, load


@pytest.mark.parametrize("taught", [True, False])
async def test_the_browser_s_accept_taught_ahead_lets_a_first_page_s_image_fly(service: FetchService,
                                                                              taught: bool) -> None:
    """Firefox's fields probe (browser_fields: the Accept of its images, fonts and stylesheets, seen on the
    extension's own requests) reaches a fresh helper before any page: the page's first batch (its stylesheet)
    teaches the rest of the fields, and the image its document names flies then, answering the browser's image
    request. Without it, the image's fields come only with the browser's own image request: nothing flies."""
    async with counting_server(_answer_from(IMG_PAGE)) as server:
        loads, ended = recording_loads(service)
        try:
            if taught:
                await loads.browser_accept("UA/2", {("image", "no-cors"): "image/avif,image/webp,*/*",
                                                    ("empty", "cors"): "not taught: not a kind the probe asks"})
            page, load = await _img_page_first_batch(loads, server.url)
            if load.flight is not None:
                await load.flight.wait()
            assert ("/static/shot.png" in server.seen) is taught
            profile = loads._profiles["UA/2"]  # type: ignore[attr-defined]
            assert profile is not None and ("empty", "cors") not in profile.accept  # not a kind the probe asks
            sink = Collect()
            await loads.fetch([browser_request("img", f"{server.url}/static/shot.png", "image")], sink, page)
            assert sink.cache == {"img": "prefetch" if taught else "none"}
            assert server.count("/static/shot.png") == 1
            await loads.end_all()
            report = ended[-1].flight
            assert (report is not None and report.answered == 1 and not report.refused_by_fidelity) is taught
        finally:
            await loads.end_all()


async def test_the_browser_s_accept_is_kept_in_memory_apart_and_survives_a_cleared_cache(
        service: FetchService) -> None:
    """browser_accept opens no database (a helper serving only private browsing creates nothing on disk): the
    Accept fields wait in memory and join the profile when a load reads it; clearing the cache forgets the learned
    profile but not them (they say nothing of the user's browsing)."""
    opened: list[Page] = []

    def records(page: Page) -> Any:
        opened.append(page)
        return service.cache_for(page)

    loads, _ended = recording_loads(service, records_for=records)
    try:
        await loads.browser_accept("UA/2", {("image", "no-cors"): "image/avif,*/*", ("style", "cors"): "x"})
        assert opened == [] and loads._profiles == {}  # type: ignore[attr-defined]
        loads.forget()
        profile = await loads._profile(Page(private_browsing=False), "UA/2")  # type: ignore[attr-defined]
        assert profile is not None and profile.accept == {("image", "no-cors"): "image/avif,*/*"}
        assert not profile.language_known  # the rest is the page's to teach
    finally:
        await loads.end_all()


async def test_the_browser_s_accept_taught_during_a_load_plans_what_it_found(service: FetchService) -> None:
    """The probe's message may come while a page loads (the helper just connected): what the load found and could
    not plan for want of the image's Accept is planned then."""
    async with counting_server(_answer_from(IMG_PAGE)) as server:
        loads, _ended = recording_loads(service)
        try:
            _page, load = await _img_page_first_batch(loads, server.url)
            assert "/static/shot.png" not in server.seen
            await loads.browser_accept("UA/2", {("image", "no-cors"): "image/avif,image/webp,*/*"})
            await until(lambda: "/static/shot.png" in server.seen, "the image flown once its Accept is known")
            profile = loads._profiles["UA/2"]  # type: ignore[attr-defined]
            await loads.browser_accept("UA/2", {("image", "no-cors"): "image/avif,image/webp,*/*"})  # again
            assert loads._profiles["UA/2"] is profile  # type: ignore[attr-defined]  # nothing new: unchanged
            assert load.flight is not None
            await load.flight.wait()
            assert server.count("/static/shot.png") == 1
        finally:
            await loads.end_all()


class _OrderSeen:
    """A Fetcher around the service that notes the URLs it is asked for, in order (the flight's and the browser's)."""

    def __init__(self, inner: FetchService) -> None:
        self.inner = inner
        self.asked: list[str] = []

    async def fetch(self, requests: list[FetchRequest], sink: Any, page: Page) -> Any:
        self.asked += [r.url.rsplit("/", 1)[-1] for r in requests]
        return await self.inner.fetch(requests, sink, page)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


SCRIPT_IMG_PAGE = {**IMG_PAGE, "/img/index.html": IMG_HTML.replace(
    b"</head>", b"<script src=/static/app.js></script></head>"), "/static/app.js": b"var x = 1;"}


async def _speaks_h2(url: str, page: Page) -> bool:
    return True


async def _not_reported(e: LoadEnded) -> None:
    pass


def _ordered_loads(service: FetchService, **kwargs: Any) -> tuple[PageLoads, _OrderSeen]:
    """PageLoads over the service, noting the order of what it fetches."""
    order = _OrderSeen(service)
    loads = PageLoads(order, service.cache_for, _not_reported, discoverer=Discoverer(use_process=False),  # type: ignore[arg-type]
                      **kwargs)
    return loads, order


async def _script_page_s_first_batch(loads: PageLoads, order: _OrderSeen, server: Any) -> tuple[Page, Any]:
    """SCRIPT_IMG_PAGE's document read, then the browser's first batch (its stylesheet), until the load's image has
    flown or is held; the page and its load."""
    await loads.browser_accept("UA/2", {("image", "no-cors"): "image/avif,image/webp,*/*"})
    page_url, page = navigate(loads, server.url, "/img/index.html")
    await loads.fetch([document_request("doc", page_url)], Collect(), page)
    load = loads._loads[load_key(page)]  # type: ignore[index]
    await until(lambda: len(load.found) == 3, "the document read")
    await loads.fetch([browser_request("a", f"{server.url}/static/a.css", "style")], Collect(), page)
    await until(lambda: "shot.png" in order.asked or load.holding, "the image flown or held")
    return page, load


async def test_a_first_page_s_images_wait_for_the_render_blocking_requests_the_browser_asks_just_after_its_first(
        service: FetchService) -> None:
    """Firefox streams its document and asks for a wave in bursts a few milliseconds apart: the images the document
    names fly after the first batch, but only once the browser's render-blocking requests have been quiet for
    render_quiet_s (render_quiet.py). cmake-interaction over `sat`: a first batch of one stylesheet, the flight's
    images 9 ms later and the head's scripts 17 ms after that put 107 kB of scripts behind the images' bytes on a
    cold connection (5.8 s instead of 4.9 s). Here the script asked after the first batch reaches the engine before
    the image; the image still flies and answers the browser's request. (Only where holds_for says: Firefox's
    proxy, for an h2 origin.)"""
    async with counting_server(_answer_from(SCRIPT_IMG_PAGE)) as server:
        loads, order = _ordered_loads(service, render_quiet_s=2.0, hold_max_s=4.0, holds_for=_speaks_h2)
        try:
            page, _load = await _script_page_s_first_batch(loads, order, server)
            await loads.fetch([browser_request("js", f"{server.url}/static/app.js", "script")], Collect(), page)
            await until(lambda: "shot.png" in order.asked, "the image flown once the scripts were quiet")
            assert order.asked.index("app.js") < order.asked.index("shot.png"), order.asked
            sink = Collect()
            await loads.fetch([browser_request("img", f"{server.url}/static/shot.png", "image")], sink, page)
            assert sink.cache == {"img": "prefetch"} and server.count("/static/shot.png") == 1
        finally:
            await loads.end_all()


async def _speaks_http11(url: str, page: Page) -> bool:
    return False


@pytest.mark.parametrize("holds_for", [None, _speaks_http11])
async def test_images_fly_at_once_where_nothing_is_held(
        service: FetchService, holds_for: Callable[[str, Page], Awaitable[bool]] | None) -> None:
    """Without holds_for (Chromium), or where it says no (an HTTP/1.1 origin in Firefox's proxy), the images found
    fly with the first batch, however long render_quiet_s is."""
    async with counting_server(_answer_from(SCRIPT_IMG_PAGE)) as server:
        loads, order = _ordered_loads(service, render_quiet_s=60.0, hold_max_s=120.0, holds_for=holds_for)
        try:
            _page, load = await _script_page_s_first_batch(loads, order, server)
            assert "shot.png" in order.asked and not load.holding, order.asked
        finally:
            await loads.end_all()


# The Accept of images and stylesheets, as Chromium's fields probe tells them (browser_fields)
PROBED_ACCEPT: dict[tuple[str, str], str | None] = {("image", "no-cors"): "image/avif,image/webp,*/*",
                                                    ("style", "no-cors"): "text/css,*/*;q=0.1"}


async def _probed_first_page(loads: PageLoads, base: str, path: str) -> tuple[str, Page, Any]:
    """The probe's Accept told (PROBED_ACCEPT), then a navigation to the page at base + path, never loaded: its URL,
    Page and load."""
    await loads.browser_accept("UA/2", PROBED_ACCEPT)
    page_url, page = navigate(loads, base, path)
    return page_url, page, loads._loads[load_key(page)]  # type: ignore[index]


@pytest.mark.parametrize(("taught", "whole"), [(True, True), (False, True), (True, False)])
async def test_the_accept_taught_ahead_and_the_document_s_own_request_fly_a_first_page_before_any_batch(
        service: FetchService, taught: bool, whole: bool) -> None:
    """Chromium (`documents_whole`): the page's first batch comes only after its whole document, so a new user's
    first page would fly nothing the document names before it. With the Accept of images and stylesheets taught
    ahead (Chromium's probe) the document's own request teaches the rest (field_profile.learn_navigation:
    Sec-Fetch-* sent or not, the language): the stylesheet and the image fly as the document is read, and the
    browser's requests, when they come, are answered from the flight. Without the probe nothing flies before the
    first batch; nor where the browser streams its document (Firefox), whose first batch teaches the rest."""
    async with counting_server(_answer_from(IMG_PAGE)) as server:
        loads, ended = recording_loads(service, documents_whole=whole)
        try:
            if taught:
                await loads.browser_accept("UA/2", PROBED_ACCEPT)
            page_url, page = navigate(loads, server.url, "/img/index.html")
            await loads.fetch([document_request("doc", page_url)], Collect(), page)
            load = loads._loads[load_key(page)]  # type: ignore[index]
            await until(lambda: len(load.found) == 2, "the document read")
            await asyncio.gather(*list(load.tasks))
            if load.flight is not None:
                await load.flight.wait()
            flown = sorted(p for p in server.seen if p != "/img/index.html")
            assert flown == (["/static/a.css", "/static/shot.png"] if taught and whole else [])
            profile = loads._profiles.get("UA/2")  # type: ignore[attr-defined]
            assert (profile is not None and profile.language_known and profile.accept_language == "en") is whole
            if not whole:
                return  # the first batch teaches the rest: test_the_browser_s_accept_taught_ahead_lets_…
            sink = Collect()
            await loads.fetch([browser_request("a", f"{server.url}/static/a.css", "style"),
                               browser_request("img", f"{server.url}/static/shot.png", "image")], sink, page)
            want = "prefetch" if taught else "none"
            assert sink.cache == {"a": want, "img": want}
            assert server.count("/static/a.css") == 1 and server.count("/static/shot.png") == 1
            await loads.end_all()
            report = ended[-1].flight
            assert (report is not None and report.answered == 2 and not report.refused_by_fidelity) is taught
        finally:
            await loads.end_all()


BG_HTML = (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=/static/bg.css>"
           b"<link rel=stylesheet href=/static/print.css media=print></head>"
           b"<body><div class=note>note</div>" + b"<p>text</p>" * 300 + b"</body></html>")
BG = {"/bg/index.html": BG_HTML,
      "/static/bg.css": b".note { background: url(note.png) } .absent { background: url(absent.png) }",
      "/static/print.css": b"div.note { background: url(print.png) }",
      "/static/note.png": b"\x89PNG" * 300, "/static/absent.png": b"\x89PNG" * 300}


def _answer_from(pages: dict[str, bytes]) -> Callable[[str], web.Response]:
    """Answers these paths (HTML, CSS or a PNG by their names, never cacheable), the others as _answer does."""
    def answer(path: str) -> web.Response:
        if path in pages:
            kind = "text/html" if path.endswith(".html") else "text/css" if path.endswith(".css") else "image/png"
            return web.Response(body=pages[path], content_type=kind, headers={"Cache-Control": "no-store"})
        return _answer(path)
    return answer


_bg_answer = _answer_from(BG)


async def first_visit(loads: PageLoads, service: FetchService, server: Server, path: str) -> Page:
    """The helper knows the browser's fields (another page's load); then the page at path is navigated to and its
    document asked for (what the server saw before is forgotten): its Page."""
    await known_browser(loads, service, server.url)
    server.seen.clear()
    page_url, page = navigate(loads, server.url, path)
    await loads.fetch([document_request("doc", page_url)], Collect(), page)
    return page


async def test_a_first_visit_flies_the_background_image_its_document_shows(service: FetchService) -> None:
    """discover_backgrounds.py wired: on a first visit (the browser's fields known from another page's load) the
    helper reads the document and its stylesheet; the stylesheet's background image whose selector matches an
    element of the document flies as a guess and answers the browser's request for it; the one whose selector
    matches nothing is never fetched, nor the one a print stylesheet's rule names."""
    async with counting_server(_bg_answer) as server:
        loads, ended = recording_loads(service)
        try:
            page = await first_visit(loads, service, server, "/bg/index.html")
            await until(lambda: "/static/note.png" in server.seen, "the background image's prefetch",
                        seen=lambda: server.seen)
            load = loads._loads[load_key(page)]  # type: ignore[index]
            await asyncio.gather(*list(load.tasks))
            assert load.flight is not None
            await load.flight.wait()
            sink = Collect()
            await loads.fetch([browser_request("css", f"{server.url}/static/bg.css", "style"),
                               browser_request("img", f"{server.url}/static/note.png", "image")], sink, page)
            assert sink.cache == {"css": "prefetch", "img": "prefetch"}
            assert sink.bodies["img"] == BG["/static/note.png"]
            # the print stylesheet is fetched (browsers fetch it too) but its backgrounds are not the screen's
            assert sorted(server.seen) == ["/bg/index.html", "/static/bg.css", "/static/note.png", "/static/print.css"]
            await loads.end_all()
            report = ended[-1].flight
            assert report is not None and report.answered == 2 and not report.refused_by_fidelity
        finally:
            await loads.end_all()


async def _stylesheet_asked_before_the_document_is_read(loads: PageLoads, service: FetchService, server: Server,
                                                       path: str, css: str) -> tuple[Page, Any]:
    """A first visit (the browser's fields known) to the page at `path`: its document asked for, then the browser's
    request of the stylesheet `css` (with a _DocumentReadLate discoverer, read before the document): its Page and
    load."""
    await known_browser(loads, service, server.url)
    server.seen.clear()
    page_url, page = navigate(loads, server.url, path)
    await loads.fetch([document_request("doc", page_url)], Collect(), page)
    await loads.fetch([browser_request("css", f"{server.url}{css}", "style")], Collect(), page)
    return page, loads._loads[load_key(page)]  # type: ignore[index]


class _DocumentReadLate(Discoverer):
    """A discovery worker whose document reads wait until `release` is set (a busy machine: the document's read, in
    the worker, ends after its stylesheet's)."""

    def __init__(self) -> None:
        super().__init__(use_process=False)
        self.release = asyncio.Event()

    async def html(self, body: bytes, url: str, charset: str | None) -> DocumentRead:
        await self.release.wait()
        return await super().html(body, url, charset)


async def test_a_stylesheet_read_before_its_document_keeps_its_background_rules(service: FetchService) -> None:
    """The browser asked for the stylesheet, and the helper read it, before the document's read (in the worker)
    ended: its background rules wait for the read that names it, and once the document's read ends the image they
    expect flies and answers the browser's request. (Before, such a stylesheet's rules were dropped: a real
    Firefox test on a loaded CI machine lost its guess this way.)"""
    async with counting_server(_bg_answer) as server:
        discoverer = _DocumentReadLate()
        loads, _ended = recording_loads(service, discoverer=discoverer)
        try:
            page, load = await _stylesheet_asked_before_the_document_is_read(loads, service, server, "/bg/index.html",
                                                                             "/static/bg.css")
            await until(lambda: f"{server.url}/static/bg.css" in load.unplaced_rules,
                        "the stylesheet read, its rules waiting")
            assert "/static/note.png" not in server.seen and not load.backgrounds
            discoverer.release.set()
            await until(lambda: "/static/note.png" in server.seen, "the background image's prefetch",
                        seen=lambda: server.seen)
            sink = await _asked_once_flown(loads, load, page, browser_request("img", f"{server.url}/static/note.png",
                                                                              "image"))
            assert sink.cache == {"img": "prefetch"} and server.count("/static/note.png") == 1
            assert not load.unplaced_rules
        finally:
            discoverer.release.set()
            await loads.end_all()


async def test_a_load_past_its_background_rules_bound_guesses_nothing_and_still_reads_its_stylesheets(
        service: FetchService, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_BACKGROUND_RULES a load gives its background guesses up (a truncated set would drop the later rules,
    which win ties), and only those: the stylesheet read in the same parse still names its @import, which flies."""
    monkeypatch.setattr(page_loads, "MAX_BACKGROUND_RULES", 1)
    pages = {**BG, "/static/bg.css": b"@import url(more.css); " + BG["/static/bg.css"],
             "/static/more.css": b"p { color: black }"}
    async with counting_server(_answer_from(pages)) as server:
        loads, _ended = recording_loads(service)
        try:
            page = await first_visit(loads, service, server, "/bg/index.html")
            await until(lambda: "/static/more.css" in server.seen, "the @import's prefetch", seen=lambda: server.seen)
            load = loads._loads[load_key(page)]  # type: ignore[index]
            await until(lambda: not load.tasks, "the stylesheets' reads")
            assert load.backgrounds_given_up and not load.expected_backgrounds
            assert "/static/note.png" not in server.seen
        finally:
            await loads.end_all()


LATIN = {"/latin/index.html": b"<!doctype html><html><head><meta charset=windows-1252>"
                               b"<link rel=stylesheet href=/static/latin.css></head><body><div class=note>x</div>",
         "/static/latin.css": b"@import url(caf\xe9.css); .note { background: url(n\xe9.png) }",
         "/static/caf\u00e9.css": b"@import url(d\xe9j\xe0.css);", "/static/d\u00e9j\u00e0.css": b"p { color: red }",
         "/static/n\u00e9.png": b"\x89PNG" * 300}


async def test_a_stylesheet_without_a_charset_is_read_in_its_document_s_encoding(service: FetchService) -> None:
    """CSS decodes a stylesheet without a BOM, a charset in its Content-Type or an @charset in the encoding of what
    linked it: a windows-1252 page's sheet and the sheet it imports are read so, and their non-ASCII references fly
    as the browser asks for them (UTF-8 in the URL); read as UTF-8 they were U+FFFD, and never the browser's URL."""
    async with counting_server(_answer_from(LATIN)) as server:
        loads, _ended = recording_loads(service)
        try:
            await first_visit(loads, service, server, "/latin/index.html")
            wanted = ["/static/caf\u00e9.css", "/static/d\u00e9j\u00e0.css", "/static/n\u00e9.png"]
            await until(lambda: all(p in server.seen for p in wanted), "the non-ASCII references' prefetches",
                        seen=lambda: server.seen)
        finally:
            await loads.end_all()


@pytest.mark.parametrize("sheet_sets_site", [False, True])
async def test_a_cross_origin_stylesheet_s_import_and_background_fly_with_the_site_the_browser_sends(
        service: FetchService, sheet_sets_site: bool) -> None:
    """A page on 127.0.0.1 links a stylesheet on localhost (another site): its @import and its background image fly
    on a first visit, with the Sec-Fetch-Site the browser would send (field_profile.site_for): the page's
    (`cross-site`, Chromium) or, where the browser computes it against the stylesheet (`sheet_sets_site`: Firefox's
    proxy), the sheet's (`same-origin`)."""
    asked: dict[str, str] = {}
    port: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        asked[f"{request.host.split(':')[0]}{request.path}"] = request.headers.get("Sec-Fetch-Site", "")
        if request.path == "/xs/index.html":
            body = BG_HTML.replace(b"/static/bg.css", f"http://localhost:{port[0]}/static/xs.css".encode())
            return web.Response(body=body, content_type="text/html", headers={"Cache-Control": "no-store"})
        if request.path == "/static/xs.css":
            return web.Response(body=b"@import url(more.css); " + BG["/static/bg.css"], content_type="text/css",
                                headers={"Cache-Control": "no-store"})
        if request.path == "/static/more.css":
            return web.Response(body=b"p{}", content_type="text/css", headers={"Cache-Control": "no-store"})
        return _bg_answer(request.path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    loads, _ended = recording_loads(service, sheet_sets_site=sheet_sets_site)
    async with serve_app(app) as p:
        port.append(p)
        base = f"http://127.0.0.1:{p}"
        try:
            await known_browser(loads, service, base)

            page_url, page = navigate(loads, base, "/xs/index.html")
            await loads.fetch([document_request("doc", page_url)], Collect(), page)
            await until(lambda: {"localhost/static/more.css", "localhost/static/note.png"} <= asked.keys(),
                        "the cross-origin sheet's @import and background flown", seen=lambda: asked)
            site = "same-origin" if sheet_sets_site else "cross-site"
            assert asked["localhost/static/more.css"] == site and asked["localhost/static/note.png"] == site
            assert "localhost/static/absent.png" not in asked
        finally:
            await loads.end_all()


class _PrefixLate(Discoverer):
    """A worker whose first document read (a prefix) comes back only after the whole document's read began, and the
    whole read a little later still: the order a busy worker can give them."""

    def __init__(self) -> None:
        super().__init__(use_process=False)
        self.reads = 0
        self.whole_began = asyncio.Event()

    async def html(self, body: bytes, url: str, charset: str | None) -> list[Any]:
        self.reads += 1
        if self.reads == 1:
            await self.whole_began.wait()
        else:
            self.whole_began.set()
            await asyncio.sleep(0.2)
        return await super().html(body, url, charset)


async def test_a_prefix_read_that_ends_after_the_body_is_not_taken_for_the_whole_document(
        service: FetchService) -> None:
    """The document's element a background rule matches comes after its first KiB; the prefix's read is still in the
    worker when the body ends. The background image is matched against the whole document all the same (a prefix
    read once took itself for the whole: the image never flew)."""
    head = (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=/static/bg.css></head><body>"
            + b"<p>text</p>" * 200)

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(request.path)
        if request.path == "/late/index.html":
            response = web.StreamResponse(headers={"Content-Type": "text/html", "Cache-Control": "no-store"})
            await response.prepare(request)
            await response.write(head)
            await asyncio.sleep(0.1)
            await response.write(b"<div class=note>note</div></body></html>")
            await response.write_eof()
            return response
        return _bg_answer(request.path)

    seen: list[str] = []
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    discoverer = _PrefixLate()
    loads, _ended = recording_loads(service, discoverer=discoverer)
    async with serve_app(app) as port:
        base = f"http://127.0.0.1:{port}"
        try:
            await known_browser(loads, service, base)

            page_url, page = navigate(loads, base, "/late/index.html")
            await loads.fetch([document_request("doc", page_url)], Collect(), page)
            await until(lambda: "/static/note.png" in seen, "the background image's prefetch", seconds=5,
                        seen=lambda: seen)
            assert discoverer.reads >= 2
        finally:
            await loads.end_all()


async def test_nothing_flies_whose_request_would_not_come_to_the_helper(service: FetchService) -> None:
    """`reaches_here` (Firefox's proxy: an https origin of a site not opted in is tunnelled to Firefox's own
    connection): a URL it rules out is never prefetched, the others are."""
    async with counting_server(_first_answer) as server:
        loads, _ended = recording_loads(service, reaches_here=lambda url: not url.endswith("/static/imported.css"))
        try:
            await known_browser(loads, service, server.url, (
                ("/static/site.css", "style"), ("/static/app.js", "script"), ("/static/logo.png", "image")))
            server.seen.clear()
            page_url, page = navigate(loads, server.url, "/first/index.html")
            await loads.fetch([document_request("doc", page_url)], Collect(), page)
            await until(lambda: "/static/logo.png" in server.seen, "the document's image prefetched")
            load = loads._loads[load_key(page)]  # type: ignore[index]
            await until(lambda: f"{server.url}/static/first.css" in load.read, "the stylesheet read")
            await asyncio.gather(*list(load.tasks))
            assert load.flight is not None
            await load.flight.wait()
            assert "/static/first.css" in server.seen and "/static/imported.css" not in server.seen
        finally:
            await loads.end_all()


@pytest.mark.parametrize("how", ["whole", "cut", "not_found", "cut_at_once"])
async def test_a_document_the_browser_loads_itself_is_read_from_the_bytes_it_streams(
        service: FetchService, how: str) -> None:
    """Chromium on a private page (`local_document`): the browser loads the document itself, its request is told
    (browser_fetched) and its bytes follow as the browser receives them (browser_document). They are read as a
    document the helper fetched, but what they name is left to the browser (it has those bytes as soon as the
    helper): the stylesheet it asks for is read and the background image its rule gives an element of the streamed
    document flies and answers the browser's request; the server never sees the document from the helper. A stream
    cut short is read as far as it came but never as the whole document (no template key, no document for background
    rules), and one cut before any byte leaves the load without a document; a 404's body is not read; a piece for a
    request that is not the load's document is dropped."""
    html = BG_HTML.replace(b"<body>", b"<body><img src=/static/shot.png>")
    async with counting_server(_answer_from({**BG, "/static/shot.png": IMG_PAGE["/static/shot.png"]})) as server:
        loads, _ended = recording_loads(service, documents_whole=True)
        try:
            page_url, page, load = await _probed_first_page(loads, server.url, "/bg/index.html")
            # Before its request was told: not the document yet, dropped
            loads.browser_document(page, "doc", 200, "text/html", b"<script src=/static/early.js></script>", None)
            loads.browser_fetched([document_request("doc", page_url)], page)
            loads.browser_document(page, "other", 200, "text/html", b"<script src=/static/x.js></script>" * 40, "whole")
            if how == "cut_at_once":  # e.g. redirected: no byte will come, so the load has no document to read
                assert load.reads_document
                loads.browser_document(page, "doc", None, None, b"", "cut")
                assert not load.reads_document and "doc" not in load.taps
                return
            status = 404 if how == "not_found" else 200
            first, rest = html[:1100], html[1100:]
            loads.browser_document(page, "doc", status, "text/html; charset=utf-8", first, None)
            if how == "cut":
                loads.browser_document(page, "doc", None, None, b"", "cut")
            else:
                loads.browser_document(page, "doc", None, None, rest[:500], None)
                loads.browser_document(page, "doc", None, None, rest[500:], "whole")
            if how == "not_found":
                await asyncio.gather(*list(load.tasks))
                assert load.found == {} and "doc" not in load.taps
                assert load.document is None and server.seen == []
                return
            sheets = [f"{server.url}/static/bg.css", f"{server.url}/static/print.css"]
            shot = f"{server.url}/static/shot.png"
            await until(lambda: sorted(load.found) == [*sheets, shot], "the streamed document read")
            await until(lambda: not load.tasks, "the reads done")
            assert "doc" not in load.taps and load.browser_named == set(sheets)
            assert load.stylesheets == (None if how == "cut" else sheets)  # a prefix is never the whole
            assert (load.document is None) is (how == "cut")
            # Its image waits for the browser's first batch: flown before it, it would take the connections that
            # batch's render-blocking stylesheets need
            assert server.seen == [] and shot in load.after_first_batch
            sink = Collect()
            await loads.fetch([browser_request("css", f"{server.url}/static/bg.css", "style")], sink, page)
            assert sink.cache == {"css": "none"}, "what the document names is the browser's to ask for"
            if how == "cut":
                await until(lambda: not load.tasks, "the stylesheet read")
                assert "/static/note.png" not in server.seen, "no document to match its rules against"
                # what the prefix named stands: its image flies once no more of the document will come
                await until(lambda: "/static/shot.png" in server.seen, "the prefix's image flown")
                return
            await until(lambda: "/static/note.png" in server.seen, "the background image flown",
                        seen=lambda: server.seen)
            # (the document's image flies once the batch's render-blocking requests are quiet: render_quiet.py)
            await until(lambda: "/static/shot.png" in server.seen, "the image flown", seen=lambda: server.seen)
            assert load.flight is not None
            await load.flight.wait()
            await loads.fetch([browser_request("img", f"{server.url}/static/note.png", "image"),
                               browser_request("shot", shot, "image")], sink, page)
            assert sink.cache == {"css": "none", "img": "prefetch", "shot": "prefetch"}
            assert sorted(server.seen) == ["/static/bg.css", "/static/note.png", "/static/shot.png"]  # not the document
        finally:
            await loads.end_all()


CSP_META = IMG_HTML.replace(b"<meta charset=utf-8>",
                            b"<meta charset=utf-8><meta http-equiv=Content-Security-Policy content=\"img-src 'self'\">")


@pytest.mark.parametrize("how", ["fetched_field", "streamed_field", "streamed_meta"])
async def test_nothing_discovered_flies_for_a_document_under_a_content_security_policy(
        service: FetchService, how: str) -> None:
    """The browser may refuse to fetch what a page under a Content-Security-Policy names (before any request), so a
    request flown for it on a guess could reach a server the page never would: nothing discovered flies, whether
    the policy came as a field of the document the helper fetched, of the one the browser streamed, or as the
    document's own <meta http-equiv>. What the document names is still found (its read is the same)."""
    csp = {"Content-Security-Policy": "img-src 'self'"} if how == "fetched_field" else {}

    def answer(path: str) -> web.Response:
        if path == "/img/index.html":
            return web.Response(body=IMG_HTML, content_type="text/html", headers={"Cache-Control": "no-store", **csp})
        return _answer_from(IMG_PAGE)(path)

    async with counting_server(answer) as server:
        loads, _ended = recording_loads(service, documents_whole=True)
        try:
            page_url, page, load = await _probed_first_page(loads, server.url, "/img/index.html")
            if how == "fetched_field":
                await loads.fetch([document_request("doc", page_url)], Collect(), page)
            else:
                loads.browser_fetched([document_request("doc", page_url)], page)
                html = CSP_META if how == "streamed_meta" else IMG_HTML
                loads.browser_document(page, "doc", 200, "text/html", html, "whole", policy=how == "streamed_field")
            await until(lambda: len(load.found) == 2, "the document read")
            await until(lambda: not load.tasks, "the reads done")
            assert load.under_policy
            assert load.flight is None or load.flight.report.sent == 0
            assert [p for p in server.seen if p != "/img/index.html"] == []
        finally:
            await loads.end_all()


@pytest.mark.parametrize("meta", [True, False])
async def test_what_a_stylesheet_names_waits_for_the_document_s_head_which_may_set_a_policy(
        service: FetchService, meta: bool) -> None:
    """A <meta http-equiv=Content-Security-Policy> is found only by a read of the document that reaches it. A
    stylesheet the browser asked for can be read first (the document's read, in the worker, ends later): what it
    names (its @import) waits until a read of the document got past the head. With the <meta> there, it never
    flies; without it, it flies once the document's read ends (the wait is never a loss)."""
    policy = b"<meta http-equiv=Content-Security-Policy content=\"style-src 'self'\">" if meta else b""
    html = (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=/static/imp.css>"
            + b"<meta name=filler content=x>" * 60 + policy + b"</head><body><p>text</p></body></html>")
    pages = {"/late/index.html": html, "/static/imp.css": b"@import url(more.css); p { color: red }",
             "/static/more.css": b"p { color: black }"}
    async with counting_server(_answer_from(pages)) as server:
        discoverer = _DocumentReadLate()
        loads, _ended = recording_loads(service, discoverer=discoverer)
        try:
            _page, load = await _stylesheet_asked_before_the_document_is_read(loads, service, server,
                                                                              "/late/index.html", "/static/imp.css")
            more = f"{server.url}/static/more.css"
            await until(lambda: more in load.found, "the stylesheet read, its @import found")
            assert "/static/more.css" not in server.seen and not load.head_read
            discoverer.release.set()
            await until(lambda: load.head_read and not load.tasks, "the document read")
            assert load.under_policy is meta
            if meta:
                assert "/static/more.css" not in server.seen
            else:
                await until(lambda: "/static/more.css" in server.seen, "the @import flown once the head was read",
                            seen=lambda: server.seen)
        finally:
            discoverer.release.set()
            await loads.end_all()


async def test_a_learned_page_s_flight_carries_the_privacy_signal_the_browser_sends_now(
        service: FetchService) -> None:
    """A page learned before the user turned on Global Privacy Control (or Do Not Track) replayed its history's
    fields: its flight's requests reached the servers without the opt-out the browser now sends with every request
    (and were then refused: waste). The browser's field profile, taught by any batch of the browser's since, knows
    the signals it sends now: a flight sends those."""
    seen: list[tuple[str, dict[str, str]]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append((request.path, dict(request.headers)))
        return _answer(request.path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app) as port:
        base = f"http://127.0.0.1:{port}"
        loads, _ended = recording_loads(service)
        try:
            assets = [("/static/site.css", "style"), ("/static/app.js", "script")]
            for n in range(2):  # two loads of the page: its assets are stable
                _url, page = navigate(loads, base, "/docs/one.html")
                await loads.fetch([browser_request(f"{n}-{i}", base + p, d) for i, (p, d) in enumerate(assets)],
                                  Collect(), page)
                await loads.end_all()
            await settle(service)

            # The user turns Global Privacy Control on; the browser's next page (another one) sends it
            def gpc(request: FetchRequest) -> FetchRequest:
                return dataclasses.replace(request, headers=[*request.headers, ("Sec-GPC", "1")])

            _url, other = navigate(loads, base, "/docs/two.html")
            await loads.fetch([gpc(browser_request("o", base + "/static/logo.png", "image"))], Collect(), other)
            await loads.end_all()
            await settle(service)

            seen.clear()
            _url, page = navigate(loads, base, "/docs/one.html")
            await flown(loads, page)
            assert sorted(p for p, _ in seen) == ["/static/app.js", "/static/site.css"]
            assert all(h.get("Sec-GPC") == "1" for _, h in seen), seen  # the opt-out the browser sends now
            sink = Collect()
            await loads.fetch([gpc(browser_request(f"g{i}", base + p, d)) for i, (p, d) in enumerate(assets)], sink,
                              page)
            assert sink.cache == {"g0": "prefetch", "g1": "prefetch"}
        finally:
            await loads.end_all()
