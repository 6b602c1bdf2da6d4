"""Firefox's proxy mode learns a page and flies it: the real ProxyService (its listener, the Firefox side of the host)
with the host's cache database for its records, against aiohttp on 127.0.0.1. Each navigation the extension names
(`ProxyService.navigation`, the preconnect's context_id) makes the context's requests that page's load; two loads
teach it; the third navigation fetches the page's stable subresources before Firefox asks, and Firefox's requests
are answered from that flight, as the server coded them, without reaching the server. A page never loaded has its
document read as it streams through (gzip-coded: the tap decodes it) and what it names flown, with Firefox's own
Accept-Encoding. A request with other fields is fetched anew; private browsing learns nothing; an https page starts
a load only where its CONNECT is ended here; Firefox's pages are kept apart from Chromium's."""

from __future__ import annotations

import dataclasses
import gzip
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.engine import EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.engine.request import Origin, parse_target
from lanefetch.prefetch.page_loads import LoadEnded
from lanefetch.prefetch.page_memory import PageMemory
from lanefetch.proxy.server import basic_credentials
from lanefetch.proxy.service import FIREFOX_PAGES, ProxyService
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app
from test_proxy import through_proxy
from waits import until

DOC = b"<!doctype html><link rel=stylesheet href=/s.css><img src=/i.png>"
OTHER = b"<!doctype html><link rel=stylesheet href=/o.css><img src=/o.png>"
CSS = gzip.compress(b"p{margin:0}" * 400)
IMAGE = b"\x89PNG" * 2000
FIREFOX = [("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"),
           ("Accept-Language", "en-US,en;q=0.5"), ("Accept-Encoding", "gzip, deflate")]
FIELDS = {"css": [("Accept", "text/css,*/*;q=0.1")], "png": [("Accept", "image/avif,image/webp,*/*")],
          "html": [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")]}


class Reports:
    """The proxy's observer (what the extension's timing records hear) and the loads' reports."""

    def __init__(self) -> None:
        self.cache: dict[str, str] = {}  # the last timing's cache field, by URL
        self.ended: list[LoadEnded] = []

    async def proxied(self, context_id: str, request: FetchRequest) -> None:
        pass

    async def failed(self, request: FetchRequest, error: FetchError) -> None:
        pass

    async def timing(self, request: FetchRequest, report: TimingReport, response: object = None) -> None:
        self.cache[request.url] = report.cache

    async def page_ended(self, ended: LoadEnded) -> None:
        self.ended.append(ended)


@pytest.fixture
async def origin() -> AsyncIterator[tuple[str, Counter[str]]]:
    seen: Counter[str] = Counter()

    async def handler(request: web.Request) -> web.StreamResponse:
        seen[request.path] += 1
        if request.path.endswith(".css"):
            return web.Response(body=CSS, headers={"Content-Type": "text/css", "Content-Encoding": "gzip"})
        if request.path.endswith(".png"):
            return web.Response(body=IMAGE, content_type="image/png")
        if request.path == "/new":  # a page never loaded, its document gzip-coded
            return web.Response(body=gzip.compress(DOC), headers={"Content-Type": "text/html",
                                                                  "Content-Encoding": "gzip"})
        return web.Response(body=OTHER if request.path == "/other" else DOC, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}", seen


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[tuple[ProxyService, Reports]]:
    host = FetchService(ServiceConfig(EngineConfig(), cache_dir=tmp_path / "cache"))  # the host's cache database
    reports = Reports()
    svc = ProxyService(EngineConfig(), reports, https_data=tmp_path / "data", records=host.cache_for,
                       page_ended=reports.page_ended)
    try:
        yield svc, reports
    finally:
        await svc.aclose()
        await host.aclose()


async def page_load(svc: ProxyService, port: int, base: str, *, extra: list[tuple[str, str]] | None = None,
                    context: str = "c1", page: str = "/page", named: tuple[str, str] = ("/s.css", "/i.png"),
                    ) -> dict[str, bytes | None]:
    """One page as Firefox loads it through the context's listener: the navigation named, the document, then its
    stylesheet and image (the answers' bodies as written to Firefox, by path; None: none)."""
    await svc.navigation(context, f"{base}{page}")
    auth = [("Proxy-Authorization", basic_credentials(svc.secret))]
    out: dict[str, bytes | None] = {}
    for path, kind in ((page, "html"), (named[0], "css"), (named[1], "png")):
        answer = await through_proxy(port, "GET", base + path, [*FIREFOX, *FIELDS[kind], *(extra or []), *auth])
        assert answer is None or answer.status == 200
        out[path] = None if answer is None else answer.body
        if kind == "css":
            assert answer is not None and answer.header("Content-Encoding") == "gzip", "not delivered as coded"
    return out


async def test_a_page_firefox_loaded_twice_is_flown_at_its_next_navigation(
        proxy: tuple[ProxyService, Reports], origin: tuple[str, Counter[str]]) -> None:
    svc, reports = proxy
    base, seen = origin
    listener = await svc.open("c1", Page(address_space="loopback", top_site="http://t"))
    for _ in range(2):  # two loads teach the page
        assert await page_load(svc, listener.port, base) == {"/page": DOC, "/s.css": CSS, "/i.png": IMAGE}
    assert seen == Counter({"/page": 2, "/s.css": 2, "/i.png": 2})
    await svc.navigation("c1", f"{base}/page")  # the third: the page's flight leaves at once
    await until(lambda: seen["/s.css"] == 3 and seen["/i.png"] == 3, "the flight's requests at the server",
                seen=lambda: dict(seen))
    bodies = await page_load(svc, listener.port, base)
    assert bodies["/s.css"] == CSS and bodies["/i.png"] == IMAGE  # CSS as the server coded it (gzip)
    assert seen == Counter({"/page": 3, "/s.css": 3, "/i.png": 3}), "Firefox's requests reached the server again"
    assert reports.cache[f"{base}/s.css"] == "prefetch" and reports.cache[f"{base}/i.png"] == "prefetch"
    # Another value of a field the server could vary on: fetched anew, never answered from the flight
    await page_load(svc, listener.port, base, extra=[("Accept-Language", "fr")])
    await until(lambda: seen["/s.css"] >= 5, "the fourth load's stylesheet fetched anew", seen=lambda: dict(seen))
    assert reports.cache[f"{base}/s.css"] == "none"
    await svc.aclose()
    flown = [e.flight for e in reports.ended if e.flight is not None]
    assert flown and flown[0].answered == 2 and flown[0].wasted_bytes == 0, flown
    assert any(f.refused_by_fidelity for f in flown[1:]), flown


async def test_a_page_never_loaded_has_its_coded_document_read_and_what_it_names_flown(
        proxy: tuple[ProxyService, Reports], origin: tuple[str, Counter[str]]) -> None:
    svc, reports = proxy
    base, seen = origin
    listener = await svc.open("c1", Page(address_space="loopback", top_site="http://t"))
    # Another page of the site, once: Firefox's fields for stylesheets and images (its field profile) are learned
    await page_load(svc, listener.port, base, page="/other", named=("/o.css", "/o.png"))
    await svc.loads.end_all()
    await svc.navigation("c1", f"{base}/new")  # never loaded: nothing learned of it
    auth = [("Proxy-Authorization", basic_credentials(svc.secret))]
    document = await through_proxy(listener.port, "GET", f"{base}/new", [*FIREFOX, *FIELDS["html"], *auth])
    assert document is not None and document.header("Content-Encoding") == "gzip", "the document not as coded"
    await until(lambda: seen["/s.css"] == 1 and seen["/i.png"] == 1, "what the document names, flown",
                seen=lambda: dict(seen))
    for path, kind in (("/s.css", "css"), ("/i.png", "png")):
        answer = await through_proxy(listener.port, "GET", base + path, [*FIREFOX, *FIELDS[kind], *auth])
        assert answer is not None and answer.status == 200
    assert seen["/s.css"] == 1 and seen["/i.png"] == 1, "Firefox's requests reached the server again"
    assert reports.cache[f"{base}/s.css"] == "prefetch" and reports.cache[f"{base}/i.png"] == "prefetch"


async def test_private_browsing_learns_nothing(
        proxy: tuple[ProxyService, Reports], origin: tuple[str, Counter[str]]) -> None:
    svc, reports = proxy
    base, seen = origin
    listener = await svc.open("p1", Page(address_space="loopback", top_site="http://t", private_browsing=True))
    for _ in range(3):
        await page_load(svc, listener.port, base, context="p1")
    await svc.aclose()
    assert seen == Counter({"/page": 3, "/s.css": 3, "/i.png": 3}), "something was prefetched in private browsing"
    assert "prefetch" not in reports.cache.values(), "a private page answered from a flight"
    assert not reports.ended, "a private page's load was recorded"


TLS_ORIGIN = Origin("https", "t.example", 443)  # as a CONNECT to t.example:443 names it


class OptedIn:
    """The TLS terminator's answers for a site opted into HTTPS (its own tests make real certificates)."""

    def __init__(self) -> None:
        self.rejected: set[str] = set()

    def context_for(self, host: str) -> object | None:
        return object() if host == "t.example" else None

    def is_rejected(self, origin: str) -> bool:
        return origin in self.rejected

    def covers(self, origin: Origin) -> bool:
        return self.context_for(origin.host) is not None and not self.is_rejected(str(origin))


async def test_an_https_page_starts_a_load_only_where_its_connect_is_ended_here(
        proxy: tuple[ProxyService, Reports]) -> None:
    svc, _ = proxy
    listener = await svc.open("c1", Page(address_space="public", top_site="https://t.example"))
    tls = OptedIn()
    listener.tls = tls  # type: ignore[assignment]
    h2 = {TLS_ORIGIN: False}

    async def speaks_h2(url: str, page: Page) -> bool:
        return h2.get(parse_target(url).origin, False)

    listener.speaks_h2 = speaks_h2
    assert await svc.navigation("c1", "https://t.example/page") is True  # opted in, ended here
    assert listener.page_url == "https://t.example/page"
    h2[TLS_ORIGIN] = True  # a handshake of this session found the origin speaking h2
    listener._ending[TLS_ORIGIN] = 1  # but a tunnel to it ended here is open: the page goes on here
    assert await svc.navigation("c1", "https://t.example/next") is True
    del listener._ending[TLS_ORIGIN]  # none open: Firefox's own h2 carries the next page
    assert await svc.navigation("c1", "https://t.example/third") is False
    assert listener.page_url is None
    h2[TLS_ORIGIN] = False
    tls.rejected.add("https://t.example")  # its certificate was just rejected: its CONNECT is closed
    assert await svc.navigation("c1", "https://t.example/page") is False
    assert await svc.navigation("c1", "https://other.example/page") is False  # not opted in: tunnelled untouched
    assert await svc.navigation("c1", "http://t.example/page") is True  # plain http always comes here
    assert listener.page_url == "http://t.example/page"
    svc.navigation_elsewhere("c1")  # the tab's next document went direct (step-aside)
    assert listener.page_url is None
    assert await svc.navigation("gone", "http://t.example/page") is False


async def test_firefoxs_pages_are_kept_apart_from_chromiums(
        proxy: tuple[ProxyService, Reports], origin: tuple[str, Counter[str]], tmp_path: Path) -> None:
    """One cache database serves both browsers' helpers: a page Firefox taught is no page Chromium's flights know
    (each replays its own browser's fields)."""
    svc, _ = proxy
    base, _ = origin
    page = Page(address_space="loopback", top_site="http://t")
    listener = await svc.open("c1", page)
    for _ in range(2):
        await page_load(svc, listener.port, base)
    await svc.loads.end_all()
    records = svc.fetcher.records_for(page)
    assert records is not None
    url = f"{base}/page"
    at = dataclasses.replace(page, url=url)
    firefox = await PageMemory(lambda _: records, namespace=FIREFOX_PAGES).recall(at, url)
    chromium = await PageMemory(lambda _: records).recall(at, url)
    assert firefox.exact is not None and len(firefox.exact.loads) == 2
    assert chromium.exact is None

