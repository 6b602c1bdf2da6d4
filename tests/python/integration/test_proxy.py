"""Proxy mode (Firefox): the helper's forward proxy. Sans-I/O parts without sockets; then the real
`lanefetch-host` process started as Firefox would start it, with browser-like clients on many proxy
connections against a real origin on loopback, and against nginx in a network namespace (pipelining seen in
nginx's own log)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import itertools
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from bench.netlab import Lab
from bench.servers import ServerHandle, start_nginx
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.config import EngineConfig
from lanefetch.engine.exchange import DeliveredHead
from lanefetch.engine.request import FetchRequest, urgency
from lanefetch.engine.response_parser import BodyData, HeadReceived, MessageEnd, ResponseParser
from lanefetch.proxy.request_meta import priority, resource_type
from lanefetch.proxy.request_reader import BadRequest, RequestHead, RequestReader
from lanefetch.proxy.response_writer import ResponseWriter
from local_app import serve_app
from test_bridge import HostProcess, host, running_host  # noqa: F401  (fixture)

# -- sans-I/O ------------------------------------------------------------------------------------------------

STREAM = (
    b"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nSec-Fetch-Dest: style\r\n\r\n"
    b"POST http://a.test/form HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello"
    b"CONNECT b.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n\x16\x03\x01"
)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), unique=True, max_size=12))
def test_requests_come_out_whole_however_the_bytes_are_cut(cuts: list[int]) -> None:
    reader = RequestReader()
    got = []
    edges = [0, *sorted(cuts), len(STREAM)]
    for a, b in itertools.pairwise(edges):
        reader.feed(STREAM[a:b])
        while len(got) < 3 and (req := reader.next_request()) is not None:
            got.append(req)
    assert [(r.head.method, r.head.target, r.body) for r in got] == [
        ("GET", "http://a.test/x", None), ("POST", "http://a.test/form", b"hello"), ("CONNECT", "b.test:443", None)]
    assert reader.take_rest() == b"\x16\x03\x01"


@pytest.mark.parametrize(("data", "status"), [
    (b"GARBAGE\r\n\r\n", 400),
    (b"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
    (b"POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    (b"GET http://a/ HTTP/1.1\r\nX: " + b"y" * 70_000, 431),
])
def test_bad_requests_get_a_status(data: bytes, status: int) -> None:
    reader = RequestReader()
    reader.feed(data)
    with pytest.raises(BadRequest) as e:
        reader.next_request()
    assert e.value.status == status


def head(*fields: tuple[str, str], version: str = "1.1") -> RequestHead:
    return RequestHead("GET", "http://a.test/", version, list(fields))


def test_type_and_priority_from_the_request_fields() -> None:
    assert resource_type(head(("Sec-Fetch-Dest", "style"))) == "stylesheet"
    assert resource_type(head(("Sec-Fetch-Dest", "empty"))) == "fetch"
    assert resource_type(head(("Accept", "image/avif,image/webp,*/*"))) == "image"
    assert resource_type(head(("Accept", "*/*"))) == "other"
    # Over plain http:// Firefox sends no Sec-Fetch-*: a font says so in Accept, a script only in its path
    assert resource_type(head(("Accept", "application/font-woff2;q=1.0,application/font-woff;q=0.9,*/*;q=0.8"))) \
        == "font"
    at = RequestHead("GET", "http://a.test/static/highlight.js?v=2", "1.1", [("Accept", "*/*")])
    assert resource_type(at) == "script"
    assert resource_type(RequestHead("GET", "http://a.test/api/data.json", "1.1", [("Accept", "*/*")])) == "other"
    assert resource_type(RequestHead("GET", "http://a.test/x.js", "1.1", [("Sec-Fetch-Dest", "empty")])) == "fetch"
    assert priority(head(("Priority", "u=2"))) == "Medium"
    assert priority(head(("Priority", "u=4, i"))) == "VeryLow"
    assert priority(head()) is None
    assert not head(("Connection", "close")).keep_alive and not head(version="1.0").keep_alive


def test_firefoxs_coarse_urgency_puts_stylesheets_then_blocking_scripts_before_preloaded_fonts() -> None:
    # What Firefox 153 sends for rust-std's head (all u=2), its defer scripts (no field) and its images.
    def request(dest: str, prio: str | None) -> FetchRequest:
        h = head(("Sec-Fetch-Dest", dest), *([("Priority", prio)] if prio else []))
        return FetchRequest(id=dest, method="GET", url="https://a.test/", resource_type=resource_type(h),
                            priority=priority(h))

    order = [request("font", "u=2"), request("style", "u=2"), request("script", "u=2"), request("script", None),
             request("image", "u=5, i"), request("style", "u=4")]
    ranked = sorted(order, key=lambda r: urgency(r)[0])
    assert [(r.resource_type, r.priority) for r in ranked] == [
        ("stylesheet", "VeryHigh"), ("script", "High"), ("font", "Medium"), ("script", None),
        ("stylesheet", "VeryLow"), ("image", "VeryLow")]
    assert urgency(ranked[0])[0] < urgency(ranked[1])[0] < urgency(ranked[2])[0]


def test_answers_are_reframed_for_the_browser_with_the_coding_untouched() -> None:
    gz = [("Content-Encoding", "gzip"), ("Content-Length", "3")]
    w = ResponseWriter("GET", "1.1")
    assert w.head(DeliveredHead(200, "OK", "1.1", gz, False)).endswith(b"Content-Length: 3\r\n\r\n")
    assert w.body(b"abc") == b"abc" and w.end([]) == b"" and w.keep_alive
    w = ResponseWriter("GET", "1.1")
    assert b"Transfer-Encoding: chunked" in w.head(DeliveredHead(200, "OK", "1.1", [], False))
    assert w.body(b"abc") + w.end([("T", "1")]) == b"3\r\nabc\r\n0\r\nT: 1\r\n\r\n"
    w = ResponseWriter("GET", "1.0")
    assert b"Connection: close" in w.head(DeliveredHead(200, "OK", "1.1", [], False)) and not w.keep_alive
    w = ResponseWriter("HEAD", "1.1")
    assert b"chunked" not in w.head(DeliveredHead(200, "OK", "1.1", [], False))


# -- the real host process, as Firefox uses it ----------------------------------------------------------------

GZ = gzip.compress(b"console.log('zipped');" * 50)
BIG = os.urandom(2 * 1024 * 1024 + 3)


async def chunked_parts(request: web.Request) -> web.StreamResponse:
    """An answer without Content-Length (chunked from the origin): "part0;part1;part2;"."""
    resp = web.StreamResponse()
    await resp.prepare(request)
    for i in range(3):
        await resp.write(f"part{i};".encode())
    await resp.write_eof()
    return resp


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name == "gz":
            return web.Response(body=GZ, headers={"Content-Encoding": "gzip", "Content-Type": "text/javascript"})
        if name == "big":
            return web.Response(body=BIG)
        if name == "stream":  # no Content-Length: chunked from the origin
            return await chunked_parts(request)
        if name == "cookie":
            resp = web.Response(text=request.headers.get("Cookie", "-"))
            resp.set_cookie("seen", "1", httponly=True)
            return resp
        if name == "redirect":
            raise web.HTTPFound("/target")
        if name == "echo-post":
            return web.Response(body=await request.read())
        return web.Response(text=f"hello {name}")

    app = web.Application()
    app.router.add_route("*", "/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}"


class Answer:
    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.body = b""

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


async def through_proxy(port: int, method: str, url: str, headers: list[tuple[str, str]],
                        body: bytes = b"") -> Answer | None:
    """One request on a fresh proxy connection, as a browser sends it; None if closed without an answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        lines = [f"{method} {url} HTTP/1.1", f"Host: {url.split('/')[2]}", *[f"{k}: {v}" for k, v in headers]]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        parser = ResponseParser(method)
        answer = Answer()
        while not parser.done:
            data = await asyncio.wait_for(reader.read(65536), 20)
            events = parser.feed(data) if data else parser.feed_eof() if parser.started else None
            if events is None:
                return None
            for ev in events:
                if isinstance(ev, HeadReceived):
                    answer.status, answer.headers = ev.head.status, ev.head.headers
                elif isinstance(ev, BodyData):
                    answer.body += ev.data
                elif isinstance(ev, MessageEnd):
                    pass
        return answer
    finally:
        writer.close()


async def firefox_hello(h: HostProcess) -> str:
    await h.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"})
    hello = await h.recv()
    assert hello["compatible"] and "proxy" in hello["capabilities"] and "browser_fields" in hello["capabilities"]
    secret: str = hello["proxy_secret"]
    return "Basic " + base64.b64encode(f"lanefetch:{secret}".encode()).decode()


async def open_context(h: HostProcess, cid: str, space: str) -> int:
    await h.send({"type": "proxy_open", "context_id": cid, "page": {"address_space": space, "top_site": "http://t"}})
    ready = await h.recv()
    assert ready["type"] == "proxy_ready" and ready["context_id"] == cid and ready["host"] == "127.0.0.1"
    port: int = ready["port"]
    return port


async def test_chromium_hello_offers_no_proxy_but_takes_the_browser_s_fields(host: HostProcess) -> None:  # noqa: F811
    await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
    hello = await host.recv()
    assert "proxy" not in hello["capabilities"] and "proxy_secret" not in hello
    assert "browser_fields" in hello["capabilities"]  # Chromium's probe: the offscreen document's paused requests
    await host.send({"type": "proxy_open", "context_id": "c", "page": {"address_space": "public"}})
    refused = await host.recv()
    assert refused["type"] == "error" and refused["code"] == "bad_message" and refused["id"] == "c"
    await host.send({"type": "browser_fields", "user_agent": "UA/1",
                     "accept": [{"destination": "image", "mode": "no-cors", "value": "*/*"}]})
    await host.send({"type": "ping", "nonce": "after"})
    assert await host.recv() == {"type": "pong", "nonce": "after"}  # taken for the batches' loads: no answer


async def test_firefox_s_fields_are_taken_without_an_answer(host: HostProcess) -> None:  # noqa: F811
    await firefox_hello(host)
    await host.send({"type": "browser_fields", "user_agent": "UA/1",
                     "accept": [{"destination": "image", "mode": "no-cors", "value": "image/avif,*/*"},
                                {"destination": "font", "mode": "cors", "value": None}]})
    await host.send({"type": "ping", "nonce": "after"})
    assert await host.recv() == {"type": "pong", "nonce": "after"}  # nothing answered it, no error


async def test_only_the_extension_may_use_the_proxy(host: HostProcess, origin: str) -> None:  # noqa: F811
    auth = await firefox_hello(host)
    port = await open_context(host, "c1", "loopback")
    for given_auth in ([], [("Proxy-Authorization", "Basic bGFuZWZldGNoOndyb25n")]):
        a = await through_proxy(port, "GET", f"{origin}/x", given_auth)
        assert a is not None and a.status == 407 and a.header("Proxy-Authenticate") == 'Basic realm="lanefetch"'
    a = await through_proxy(port, "GET", f"{origin}/x", [("Proxy-Authorization", auth)])
    assert a is not None and a.status == 200 and a.body == b"hello x"


async def test_responses_stream_back_as_the_origin_sent_them(host: HostProcess, origin: str) -> None:  # noqa: F811
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    port = await open_context(host, "c1", "loopback")
    cases: list[tuple[str, str, list[tuple[str, str]], bytes]] = [
        ("GET", "gz", [("Sec-Fetch-Dest", "script")], b""), ("GET", "big", [], b""), ("GET", "stream", [], b""),
        ("GET", "cookie", [("Cookie", "a=1")], b""), ("GET", "redirect", [], b""),
        ("POST", "echo-post", [], b"form=1"), ("HEAD", "x", [], b""),
    ]
    answers = await asyncio.gather(*(through_proxy(port, m, f"{origin}/{n}", h + auth, b) for m, n, h, b in cases))
    got = {n: a for (_, n, _, _), a in zip(cases, answers, strict=True)}
    assert all(a is not None for a in answers)
    gz, big, stream = got["gz"], got["big"], got["stream"]
    assert gz is not None and gz.body == GZ and gz.header("Content-Encoding") == "gzip"  # not decoded
    assert big is not None and big.body == BIG
    assert stream is not None and stream.body == b"part0;part1;part2;"
    cookie, redirect, post = got["cookie"], got["redirect"], got["echo-post"]
    assert cookie is not None and cookie.body == b"a=1" and "seen=1" in (cookie.header("Set-Cookie") or "")
    assert redirect is not None and redirect.status == 302 and redirect.header("Location") == "/target"
    assert post is not None and post.body == b"form=1"
    # Every proxied request is reported to the extension: proxied, then its timing.
    msgs: list[dict[str, Any]] = []
    while sum(m["type"] == "timing" for m in msgs) < len(cases):
        msgs.append(await host.recv())
    proxied = {m["id"]: m for m in msgs if m["type"] == "proxied"}
    assert {m["url"].rsplit("/", 1)[1] for m in proxied.values()} == {n for _, n, _, _ in cases}
    assert all(m["context_id"] == "c1" for m in proxied.values())
    assert next(m for m in proxied.values() if m["url"].endswith("/gz"))["resource_type"] == "script"
    assert {m["id"] for m in msgs if m["type"] == "timing"} == set(proxied)
    # What Firefox's webRequest does not show the extension: the request's fields (never the proxy's credentials),
    # and the response as written: head, body as sent (coded) and decoded size.
    gz_id = next(i for i, m in proxied.items() if m["url"].endswith("/gz"))
    assert ["Sec-Fetch-Dest", "script"] in proxied[gz_id]["request_headers"]
    assert all(k.lower() != "proxy-authorization" for m in proxied.values() for k, _ in m["request_headers"])
    gz_timing = next(m for m in msgs if m["type"] == "timing" and m["id"] == gz_id)["response"]
    assert gz_timing["status"] == 200 and ["Content-Encoding", "gzip"] in gz_timing["headers"]
    assert (gz_timing["body_bytes"], gz_timing["decoded_body_bytes"]) == (len(GZ), len(gzip.decompress(GZ)))
    big_id = next(i for i, m in proxied.items() if m["url"].endswith("/big"))
    big_timing = next(m for m in msgs if m["type"] == "timing" and m["id"] == big_id)["response"]
    assert (big_timing["body_bytes"], big_timing["decoded_body_bytes"]) == (len(BIG), len(BIG))


async def test_proxied_fetches_report_each_new_connections_round_trip(host: HostProcess, origin: str) -> None:  # noqa: F811
    """As in debugger mode: the extension learns the origin's RTT from the proxy's upstream connections (it sends
    the requests of fast origins direct)."""
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    port = await open_context(host, "c1", "loopback")
    a = await through_proxy(port, "GET", f"{origin}/first", auth)
    assert a is not None and a.status == 200
    msgs = [await host.recv() for _ in range(3)]
    (rtt,) = [m for m in msgs if m["type"] == "origin_rtt"]
    assert rtt["origin"] == origin and 0 <= rtt["rtt_ms"] < 1000
    # The connection is kept: the next request on it reports no new round trip.
    a = await through_proxy(port, "GET", f"{origin}/second", auth)
    assert a is not None and a.status == 200
    msgs = [await host.recv() for _ in range(2)]
    assert [m["type"] for m in msgs] == ["proxied", "timing"], msgs


async def test_a_preconnect_opens_the_connection_the_proxied_page_then_uses(host: HostProcess, origin: str) -> None:  # noqa: F811
    """Firefox probes a document's origin before routing it: the connection opened is the one its requests use."""
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    port = await open_context(host, "c1", "loopback")
    await host.send({"type": "preconnect", "url": f"{origin}/", "page": {"address_space": "loopback", "top_site": "http://t"}})
    for _ in range(EngineConfig().connections_per_origin):  # all the origin may have serving it, opened ahead
        rtt = await host.recv()
        assert rtt["type"] == "origin_rtt" and rtt["origin"] == origin
    a = await through_proxy(port, "GET", f"{origin}/doc", auth)
    assert a is not None and a.status == 200
    msgs = [await host.recv() for _ in range(2)]
    assert [m["type"] for m in msgs] == ["proxied", "timing"], msgs  # no origin_rtt: no new connection
    # The next page's probe finds that connection open: its connect time answers at once, no second connection.
    await host.send({"type": "preconnect", "url": f"{origin}/next", "page": {"address_space": "loopback", "top_site": "http://t"}})
    again = await host.recv()
    assert again["type"] == "origin_rtt" and again["origin"] == origin
    a = await through_proxy(port, "GET", f"{origin}/doc2", auth)
    assert a is not None and [(await host.recv())["type"] for _ in range(2)] == ["proxied", "timing"]


async def test_a_firefox_session_starts_from_what_the_last_one_learned(tmp_path: Path, origin: str) -> None:
    """Firefox's proxy keeps what it learned of each origin in the helper's cache database, as Chromium's batches
    do (origin_memory.py): after a restart a page's preconnect is answered with the round trip the last session
    measured before any connect, and the site's other origins are connected ahead of the page."""
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=f"other {request.path}")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    page = {"address_space": "loopback", "top_site": "http://t"}
    async with serve_app(app) as other_port:
        other = f"http://127.0.0.1:{other_port}"
        async with running_host(env) as first:
            auth = [("Proxy-Authorization", await firefox_hello(first))]
            port = await open_context(first, "c1", "loopback")
            for url in (f"{origin}/doc", f"{other}/img"):
                a = await through_proxy(port, "GET", url, auth)
                assert a is not None and a.status == 200
        async with running_host(env) as second:
            await firefox_hello(second)
            await second.send({"type": "preconnect", "url": f"{origin}/next", "page": page})
            remembered = await second.recv()
            assert remembered["type"] == "origin_rtt" and remembered["origin"] == origin, remembered
            assert remembered.get("remembered") is True, "the first answer was not the last session's round trip"
            seen: set[str] = set()
            for _ in range(4 * EngineConfig().connections_per_origin):  # the preconnect's and the site's connections
                m = await second.recv()
                assert m["type"] == "origin_rtt" and "remembered" not in m, m
                seen.add(m["origin"])
                if seen == {origin, other}:
                    break
            assert seen == {origin, other}, "the site's other origin was not connected ahead of its page"


async def test_a_public_page_cannot_reach_loopback_and_the_browser_is_sent_direct(
    host: HostProcess, origin: str  # noqa: F811
) -> None:
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    port = await open_context(host, "pub", "public")
    assert await through_proxy(port, "GET", f"{origin}/secret", auth) is None  # closed: Firefox fails over to direct
    kinds = [(await host.recv())["type"] for _ in range(3)]
    assert kinds == ["proxied", "error", "timing"]
    # Firefox retries on fresh connections before failing over: those close at once, nothing is fetched again.
    assert await through_proxy(port, "GET", f"{origin}/secret", auth) is None
    await host.send({"type": "ping", "nonce": "n"})
    assert await host.recv() == {"type": "pong", "nonce": "n"}


async def test_contexts_close_and_reopen(host: HostProcess, origin: str) -> None:  # noqa: F811
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    port = await open_context(host, "c", "loopback")
    assert await open_context(host, "c", "loopback") == port  # same context, same listener
    await host.send({"type": "proxy_close", "context_id": "c"})
    await host.send({"type": "ping"})
    assert (await host.recv())["type"] == "pong"
    with pytest.raises(OSError):
        await through_proxy(port, "GET", f"{origin}/x", auth)


async def test_a_listener_closed_past_the_limit_is_told_to_the_extension(host: HostProcess) -> None:  # noqa: F811
    """The helper keeps at most MAX_LISTENERS page contexts' listeners: one more closes the oldest. The extension
    still routes that context's tab to its port (closed, or reused by another context's listener, whose page the
    requests would then be fetched as) unless it hears of it: an error naming the context, before the new one's
    proxy_ready."""
    from lanefetch.proxy.service import MAX_LISTENERS

    await firefox_hello(host)
    for n in range(MAX_LISTENERS):
        await open_context(host, f"c{n}", "public")
    await host.send({"type": "proxy_open", "context_id": "new", "page": {"address_space": "public", "top_site": "http://t"}})
    closed = await host.recv()
    assert (closed["type"], closed.get("id"), closed.get("code")) == ("error", "c0", "cancelled"), closed
    ready = await host.recv()
    assert (ready["type"], ready["context_id"]) == ("proxy_ready", "new")
    # A context reopened (or closed) by the extension is not news to it: nothing but its own answer.
    await open_context(host, "c1", "loopback")  # the same context for another page: reopened, none evicted
    await host.send({"type": "proxy_close", "context_id": "c2"})
    await host.send({"type": "ping"})
    assert (await host.recv())["type"] == "pong"


# -- nginx in a namespace: many browser connections, few pipelined helper connections ---------------------------

FILES = {f"i{i}.png": bytes([i]) * (700 + 13 * i) for i in range(40)}


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[ServerHandle]:
    if os.geteuid() != 0 or shutil.which("nginx") is None:
        pytest.skip("needs root (network namespaces) and nginx")
    root = tmp_path / "www"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    with Lab() as lab:
        server = lab.host("server")
        link = lab.link(lab.root, server)
        yield start_nginx(server, root, link.b_ip, 80)


@pytest.mark.netns
async def test_browser_connections_become_pipelined_helper_connections(
    host: HostProcess, nginx: ServerHandle  # noqa: F811
) -> None:
    auth = [("Proxy-Authorization", await firefox_hello(host)), ("Sec-Fetch-Dest", "image")]
    port = await open_context(host, "lab", "private")
    base = nginx.url("").rstrip("/")
    first = await through_proxy(port, "GET", f"{base}/i0.png", auth)  # the origin is learned first
    assert first is not None and first.body == FILES["i0.png"]
    answers = await asyncio.gather(*(through_proxy(port, "GET", f"{base}/{n}", auth) for n in FILES))
    assert [a.body if a else None for a in answers] == list(FILES.values())
    log = nginx.access_log(wait_for=len(FILES) + 1)
    # the engine's pool, not one connection per browser request
    assert len({r.connection for r in log}) <= EngineConfig().connections_per_origin < len(FILES)
    assert any(r.pipelined for r in log), "nginx saw no pipelined request"
