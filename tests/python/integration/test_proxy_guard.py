"""The proxy ports against any local program (issue 15): credentials are checked on the head before a body is
read, a connection that sends no whole head in time is closed, and idle unauthenticated connections neither
exhaust the helper's descriptors nor keep the browser's authenticated requests out. The admission core alone,
then a listener in this process, then the real lanefetch-host."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from lanefetch.engine import Engine, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.proxy.admission import Admission, Caps
from lanefetch.proxy.request_reader import MAX_BODY_BYTES, RequestReader
from lanefetch.proxy.server import HEAD_TIMEOUT_S, ProxyListener, basic_credentials
from local_app import serve_app
from test_bridge import HostProcess, host  # noqa: F401  (fixture)
from test_proxy import firefox_hello, open_context, through_proxy

# -- sans-I/O ------------------------------------------------------------------------------------------------


def test_unauthenticated_connections_push_out_the_oldest_and_never_an_authenticated_one() -> None:
    a: Admission[str] = Admission(Caps(unauthenticated_per_listener=3, unauthenticated_total=5,
                                       authenticated_per_listener=2, authenticated_total=3))
    assert a.opened("browser", "L1") == []
    assert a.authenticated("browser")
    evicted = [c for i in range(10) for c in a.opened(f"idle{i}", "L1")]
    assert evicted == [f"idle{i}" for i in range(7)]  # oldest first, three left
    assert a.counts("L1") == (3, 1)
    # The total cap spans listeners: L2's newcomers push out L1's oldest idle ones.
    evicted = [c for i in range(3) for c in a.opened(f"other{i}", "L2")]
    assert evicted == ["idle7"] and a.counts() == (5, 1)
    # Authenticated: capped per listener and in total; the newcomer is refused, nothing open is taken away.
    assert a.authenticated("idle9")
    assert not a.authenticated("idle8") and a.counts("L1") == (0, 2)
    assert a.authenticated("other0") and not a.authenticated("other1") and a.counts() == (1, 3)
    assert not a.authenticated("gone")  # closed to make room meanwhile, or never opened
    a.closed("browser")
    assert a.authenticated("other2") and a.counts() == (0, 3)


def test_the_head_is_there_before_the_body() -> None:
    rr = RequestReader()
    rr.feed(b"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\npart")
    head = rr.head()
    assert head is not None and head.method == "POST" and rr.body_length == 1000 and rr.buffered
    assert rr.next_request() is None and rr.head() is head
    rr.feed(b"x" * 996)
    req = rr.next_request()
    assert req is not None and req.head is head and req.body == b"part" + b"x" * 996
    assert not rr.buffered and rr.head() is None


@pytest.mark.parametrize("length", ["\u00b2", "1\u00b9", "\u00b3\u00b3"])
def test_a_content_length_of_digits_that_are_not_ascii_is_a_bad_request(length: str) -> None:
    # str.isdigit() takes superscripts, int() refuses them: checked before the credentials, that crashed the
    # connection's handler (no answer, an error logged) for any local program.
    from lanefetch.proxy.request_reader import BadRequest

    rr = RequestReader()
    rr.feed(f"GET http://a.test/ HTTP/1.1\r\nContent-Length: {length}\r\n\r\n".encode("latin-1"))
    with pytest.raises(BadRequest) as e:
        rr.head()
    assert e.value.status == 400


@pytest.mark.parametrize(("length", "status", "need"), [
    ("9" * 5000, 413, None), ("0" * 5000, None, 0), ("0" * 5000 + "7", None, 7)])
def test_a_content_length_of_thousands_of_digits_is_read_without_raising(length: str, status: int | None,
                                                                         need: int | None) -> None:
    # int() refuses strings of more than 4300 digits (Python's limit on int-from-str conversion): before the
    # credentials, any local program's head raised out of the connection's handler (no answer, an error logged).
    from lanefetch.proxy.request_reader import BadRequest

    rr = RequestReader()
    rr.feed(f"POST http://a.test/ HTTP/1.1\r\nContent-Length: {length}\r\n\r\n".encode())
    if status is None:
        assert rr.head() is not None and rr.body_length == need
        return
    with pytest.raises(BadRequest) as e:
        rr.head()
    assert e.value.status == status


def test_a_head_trickled_in_small_pieces_costs_work_in_proportion_to_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each piece of a head that is not whole yet was searched for the head's end from its first byte: 64 KiB of short
    # lines sent a few bytes at a time cost seconds of the helper's event loop per connection, before the credentials
    # (any local program, on as many connections as the admission caps let it keep).
    from lanefetch.proxy import request_reader

    scanned = 0
    search = request_reader.find_block_end

    def counting(buf: bytearray, start: int = 0) -> tuple[int, int] | None:
        nonlocal scanned
        scanned += len(buf) - start
        return search(buf, start) if start else search(buf)

    monkeypatch.setattr(request_reader, "find_block_end", counting)
    rr = RequestReader()
    lines = [b"GET http://a.test/ HTTP/1.1\r\n", *(b"X-%d: y\r\n" % i for i in range(3000)), b"\r\n"]
    for line in lines:
        for piece in (line[:3], line[3:]):  # the "\r\n" of the last, empty line cut in two as well
            rr.feed(piece)
            head = rr.head()
    assert head is not None and len(head.headers) == 3000
    total = sum(map(len, lines))
    assert scanned <= 4 * total, f"{scanned} bytes searched for a head of {total}"

# -- one listener in this process ------------------------------------------------------------------------------

WAIT_S = 10.0  # generous bound for what takes milliseconds; reaching it fails the test


class Quiet:
    async def proxied(self, context_id: str, request: FetchRequest) -> None: ...
    async def failed(self, request: FetchRequest, error: FetchError) -> None: ...
    async def timing(self, request: FetchRequest, report: TimingReport, response: object = None) -> None: ...


@pytest.fixture
async def origin() -> AsyncIterator[tuple[str, list[int]]]:
    bodies: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        body = await request.read()
        bodies.append(len(body))
        return web.Response(text=f"got {len(body)}")

    app = web.Application(client_max_size=2 * MAX_BODY_BYTES)
    app.router.add_route("*", "/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}", bodies


@pytest.fixture
async def listener() -> AsyncIterator[ProxyListener]:
    engine = Engine(EngineConfig())
    proxy = ProxyListener(engine, Page(address_space="loopback"), "s3cret", Quiet(), "c1", head_timeout=0.5)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
        await engine.aclose()


async def answer_or_close(reader: asyncio.StreamReader, what: str) -> bytes:
    """Everything the proxy sends until it closes; fails loudly if it neither answers nor closes in time."""
    try:
        return await asyncio.wait_for(reader.read(), WAIT_S)
    except TimeoutError:
        raise AssertionError(f"the proxy kept the connection open after {what}") from None


async def test_a_body_is_not_read_before_the_credentials_are_checked(
        listener: ProxyListener, origin: tuple[str, list[int]]) -> None:
    url, bodies = origin
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        # The head announces the largest body taken, and only a little of it follows: the refusal must not wait.
        writer.write(f"POST {url}/x HTTP/1.1\r\nHost: a\r\nContent-Length: {MAX_BODY_BYTES}\r\n\r\n".encode()
                     + b"x" * 1000)
        await writer.drain()
        got = await answer_or_close(reader, "a POST without credentials whose body never ends")
        assert got.startswith(b"HTTP/1.1 407 ") and b"Connection: close" in got, got[:200]
    finally:
        writer.close()
    assert bodies == []
    # With the credentials the same request goes through whole.
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        body = b"y" * 100_000
        writer.write(f"POST {url}/x HTTP/1.1\r\nHost: a\r\nProxy-Authorization: {basic_credentials('s3cret')}\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        got = await answer_or_close(reader, "an authenticated POST")
        assert got.startswith(b"HTTP/1.1 200 ") and got.endswith(b"got 100000"), got[:200]
    finally:
        writer.close()
    assert bodies == [100_000]


@pytest.mark.parametrize("sent", [b"", b"GET http://127.0.0.1/x HTTP/1.1\r\nHost: 127.0.0"])
async def test_a_connection_without_a_whole_head_in_time_is_closed(listener: ProxyListener, sent: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(sent)
        assert await answer_or_close(reader, f"{len(sent)} bytes of a head and silence") == b""
    finally:
        writer.close()


async def test_an_authenticated_connection_may_idle_between_requests_but_not_stall_in_a_head(
        listener: ProxyListener, origin: tuple[str, list[int]]) -> None:
    url, _ = origin
    auth = basic_credentials("s3cret")
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        request = f"GET {url}/a HTTP/1.1\r\nHost: a\r\nProxy-Authorization: {auth}\r\n\r\n".encode()
        writer.write(request)
        first = await asyncio.wait_for(reader.readuntil(b"got 0"), WAIT_S)
        assert first.startswith(b"HTTP/1.1 200 ")
        # Idle for several head timeouts: still open (the event loop's own clock, nothing is measured).
        await asyncio.sleep(listener.head_timeout * 4)
        writer.write(request)
        again = await asyncio.wait_for(reader.readuntil(b"got 0"), WAIT_S)
        assert again.startswith(b"HTTP/1.1 200 ")
        writer.write(request[:20])  # a head that starts and stalls
        assert await answer_or_close(reader, "a stalled head on an authenticated connection") == b""
    finally:
        writer.close()


# -- the real helper -------------------------------------------------------------------------------------------

def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
async def test_idle_sockets_neither_exhaust_the_helper_nor_keep_the_browser_out(
        host: HostProcess, origin: tuple[str, list[int]]) -> None:  # noqa: F811
    from lanefetch.proxy.admission import UNAUTHENTICATED_PER_LISTENER

    url, _ = origin
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    port = await open_context(host, "c1", "loopback")
    warm = await asyncio.wait_for(through_proxy(port, "GET", f"{url}/warm", auth), WAIT_S)
    assert warm is not None and warm.status == 200
    pid = host.proc.pid
    before = open_fds(pid)
    idle: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    try:
        for _ in range(4 * UNAUTHENTICATED_PER_LISTENER):
            r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), WAIT_S)
            readers.append(r)
            idle.append(w)
        # Accepted in order: once this one is answered, the helper has taken (and trimmed) all of the idle ones.
        a = await asyncio.wait_for(through_proxy(port, "GET", f"{url}/after", auth), WAIT_S)
        assert a is not None and a.status == 200 and a.body == b"got 0"
        bound = before + UNAUTHENTICATED_PER_LISTENER + 8  # a few for the request just served and the engine

        def still_open() -> int:
            return sum(1 for r in readers if not r.at_eof())

        # The head timeout closes idle sockets too, after HEAD_TIMEOUT_S: the caps must have done it well before.
        for _ in range(int(HEAD_TIMEOUT_S / 4 / 0.05)):
            if open_fds(pid) <= bound and still_open() <= UNAUTHENTICATED_PER_LISTENER:
                break
            await asyncio.sleep(0.05)
        assert open_fds(pid) <= bound, f"helper holds {open_fds(pid)} descriptors, {before} before the idle sockets"
        assert still_open() <= UNAUTHENTICATED_PER_LISTENER  # the others were closed by the helper, oldest first
        assert all(r.at_eof() for r in readers[:-UNAUTHENTICATED_PER_LISTENER])
    finally:
        for w in idle:
            w.close()


async def test_closing_with_browser_connections_open_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    # At the helper's end Firefox's connections to the proxy are still open: each one's task is cancelled, and Python
    # 3.11's start_server logged each as an error ("Exception in callback … CancelledError"). They end quietly, and
    # their connections are closed.
    engine = Engine(EngineConfig())
    proxy = ProxyListener(engine, Page(address_space="loopback"), "s3cret", Quiet(), "c1", head_timeout=WAIT_S)
    await proxy.start()
    opened = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(3)]
    try:
        for _ in range(1000):  # bounded: each connection's task starts within a few turns of the loop
            if len(proxy._clients) == len(opened):
                break
            await asyncio.sleep(0.001)
        assert len(proxy._clients) == len(opened), "the proxy never took the connections"
        with caplog.at_level(logging.ERROR):
            await proxy.close()
            for _ in range(3):
                await asyncio.sleep(0)  # the servers' done-callbacks of the handlers' tasks
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
        for reader, _ in opened:
            assert await asyncio.wait_for(reader.read(), WAIT_S) == b""  # closed by the proxy
    finally:
        for _, writer in opened:
            writer.close()
        await engine.aclose()


async def test_a_refused_head_request_gets_no_body_on_the_connection_it_keeps(
        listener: ProxyListener, origin: tuple[str, list[int]]) -> None:
    # Firefox asks without credentials first and repeats the request on the same connection: a HEAD's answer has no
    # body (RFC 9110 §9.3.2), so bytes after the 407's head would be read as the start of the next answer.
    url, _ = origin
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(f"HEAD {url}/h HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S)
        assert first.startswith(b"HTTP/1.1 407 ") and b"Connection: close" not in first, first
        writer.write(f"HEAD {url}/h HTTP/1.1\r\nHost: a\r\nProxy-Authorization: {basic_credentials('s3cret')}\r\n"
                     "Connection: close\r\n\r\n".encode())
        rest = await answer_or_close(reader, "an authenticated HEAD")
        assert rest.startswith(b"HTTP/1.1 200 "), rest[:200]
        assert rest.endswith(b"\r\n\r\n"), rest[-200:]  # the HEAD's answer has no body either
    finally:
        writer.close()


async def test_a_tunnel_whose_browser_left_does_not_wait_for_the_origin_forever(listener: ProxyListener) -> None:
    # Firefox closes a tunnel's connection whole; the helper passes the end on (write_eof) and read on from the origin
    # until it closed too. An origin that never does (a hostile one, or one that ignores the half-close) held the
    # tunnel's task, both sockets and an authenticated connection's place (admission.py) for as long as it liked:
    # enough of them and the browser's new connections were refused.
    from waits import until

    held: list[asyncio.StreamWriter] = []
    left = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(65536):
            pass
        left.set()  # the browser's end came through; this origin stays open and silent

    origin = await asyncio.start_server(silent, "127.0.0.1", 0)
    target = f"127.0.0.1:{origin.sockets[0].getsockname()[1]}"
    listener.tunnel_linger = 0.2  # (short, as head_timeout here)
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: "
                     f"{basic_credentials('s3cret')}\r\n\r\n".encode())
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S)).startswith(b"HTTP/1.1 200 ")
        writer.write(b"\x16\x03\x01 a ClientHello, say")
        await writer.drain()
        writer.close()  # the browser is done with the tunnel
        await asyncio.wait_for(left.wait(), WAIT_S)
        await until(lambda: not listener._clients, "the tunnel's end in the helper", seconds=WAIT_S,
                    seen=lambda: listener.admission.counts())
        assert listener.admission.counts() == (0, 0)
    finally:
        writer.close()
        for w in held:
            w.close()
        origin.close()
        await origin.wait_closed()
