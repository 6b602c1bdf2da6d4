"""The proxy's HTTP/2 server side (proxy/h2_server.py): a browser that chooses h2 inside a terminated tunnel sends a
page's requests at once on one connection and gets each answer on its own stream, however the flow-control windows
cut the bodies; a stream for another host is refused alone; a reset stream cancels its fetch; a request that fails
before its answer is refused (REFUSED_STREAM) and the connection ends gracefully, the streams it kept still answered.
The browser's side is python-hyper's h2 as a client, the origin a real HTTPS server (aiohttp), the helper's side the
real proxy listener and engine."""

from __future__ import annotations

import asyncio
import gzip
import os
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
)
from h2.settings import SettingCodes, Settings
from lanefetch.engine import Engine, EngineConfig, Page
from lanefetch.proxy import ca_firefox
from lanefetch.proxy.ca_certs import Site, make_authority, make_leaf
from lanefetch.proxy.ca_sites import HttpsSites
from lanefetch.proxy.server import ProxyListener, basic_credentials
from lanefetch.proxy.tls_terminator import TlsTerminator, _load_chain
from local_app import serve_app
from test_firefox_https import NOW, Quiet, profile  # noqa: F401  (fixture)
from test_proxy import chunked_parts
from waits import until

pytestmark = pytest.mark.skipif(not ca_firefox.certutil_available(), reason="certutil (libnss3-tools) not installed")

SECRET = "s" * 24
BODIES = {f"/n/{i}": os.urandom(100 + 7919 * i) for i in range(30)}  # up to 230 kB: many windows' worth
GZ = gzip.compress(b"body { color: red }\n" * 400)


@dataclass
class Origin:
    port: int
    seen: list[str] = field(default_factory=list)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Setting:
    proxy: int
    origin: Origin
    lanefetch_ca: Path
    listener: ProxyListener


@pytest.fixture
async def setting(tmp_path: Path, profile: Path) -> AsyncIterator[Setting]:  # noqa: F811
    upstream_ca = make_authority(Site("domain", "127.0.0.1"), NOW)
    (tmp_path / "upstream-ca.pem").write_bytes(upstream_ca.cert_pem())
    leaf = make_leaf(upstream_ca, "127.0.0.1", NOW, check_coverage=False)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_chain(server_ctx, leaf.chain_pem, leaf.key)
    origin = Origin(0)

    async def handler(request: web.Request) -> web.StreamResponse:
        origin.seen.append(f"{request.method} {request.path_qs}")
        if request.path in BODIES:
            return web.Response(body=BODIES[request.path], content_type="application/octet-stream")
        if request.path == "/gz":
            return web.Response(body=GZ, headers={"Content-Encoding": "gzip", "Content-Type": "text/css"})
        if request.path == "/cookie":
            return web.Response(text=request.headers.get("Cookie", "-"))
        if request.path == "/echo":
            return web.Response(body=await request.read())
        if request.path == "/chunked":  # no Content-Length from the origin
            return await chunked_parts(request)
        if request.path == "/gated":  # answers when the test says so
            await origin.gate.wait()
            return web.Response(body=BODIES["/n/5"])
        if request.path == "/stall":  # a trickle, until the helper gives it up
            resp = web.StreamResponse(headers={"Content-Length": str(10**7)})
            await resp.prepare(request)
            try:
                for _ in range(3000):  # 30 s at most
                    await resp.write(b"x" * 100)
                    await asyncio.sleep(0.01)
            except ConnectionError:
                origin.cancelled.set()
            return resp
        if request.path == "/drop":  # the connection closed before any answer
            assert request.transport is not None
            request.transport.abort()
            await asyncio.sleep(1)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    async with serve_app(app, server_ctx) as port:
        origin.port = port
        sites = HttpsSites(tmp_path / "data", ca_firefox.RunningFirefox(profile, time.time() - 5), home=tmp_path)
        sites.sync([Site("domain", "127.0.0.1")])
        sites.firefox = ca_firefox.RunningFirefox(profile, time.time() + 1)  # "restarted": the site's CA trusted
        assert [x.state for x in sites.sync([Site("domain", "127.0.0.1")]).sites] == ["active"]
        engine = Engine(EngineConfig(ca_file=str(tmp_path / "upstream-ca.pem")))
        listener = ProxyListener(engine, Page(address_space="loopback", top_site="https://127.0.0.1"), SECRET,
                                 Quiet(), "c1", tls=TlsTerminator(sites))
        proxy = await listener.start()
        auth = sites.authority_for("127.0.0.1")
        assert auth is not None
        (tmp_path / "lanefetch-ca.pem").write_bytes(auth.cert_pem())
        try:
            yield Setting(proxy, origin, tmp_path / "lanefetch-ca.pem", listener)
        finally:
            origin.gate.set()
            await listener.close()
            await engine.aclose()


@dataclass
class Stream:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    ended: bool = False
    reset: int | None = None


class Browser:
    """The browser's end of one h2 connection through the tunnel (python-hyper's h2, client side)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authority: str,
                 window: int) -> None:
        self.reader, self.writer, self.authority = reader, writer, authority
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        # Small: the helper must wait for WINDOW_UPDATEs (set as the first SETTINGS' values, not as pending ones)
        self.h2.local_settings = Settings(client=True, initial_values={SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.h2.initiate_connection()
        self.streams: dict[int, Stream] = {}
        self.goaway: tuple[int, int] | None = None  # (last stream id, error code)
        self.closed = False
        self._inbuf = bytearray()
        self._flush()

    def _flush(self) -> None:
        self.writer.write(self.h2.data_to_send())

    def request(self, method: str, path: str, extra: list[tuple[str, str]] | None = None, body: bytes = b"",
                authority: str | None = None) -> int:
        sid = self.h2.get_next_available_stream_id()
        fields = [(":method", method), (":scheme", "https"), (":authority", authority or self.authority),
                  (":path", path), *(extra or [])]
        self.h2.send_headers(sid, fields, end_stream=not body)
        for at in range(0, len(body), 16384):  # the smallest max frame size; the body fits the first window
            self.h2.send_data(sid, body[at:at + 16384], end_stream=at + 16384 >= len(body))
        self.streams[sid] = Stream()
        self._flush()
        return sid

    def reset(self, sid: int) -> None:
        self.h2.reset_stream(sid, ErrorCodes.CANCEL)
        self._flush()

    def _without_goaway(self, data: bytes) -> bytes:
        """The frames h2 may see: a GOAWAY is read here (h2 as a client reads nothing after one: python-hyper/h2
        issue 1181, while the streams it keeps are still to be answered)."""
        self._inbuf += data
        out = bytearray()
        while len(self._inbuf) >= 9:
            length = int.from_bytes(self._inbuf[0:3], "big")
            if len(self._inbuf) < 9 + length:
                break
            frame, self._inbuf = self._inbuf[:9 + length], self._inbuf[9 + length:]
            if frame[3] == 0x7:
                self.goaway = (int.from_bytes(frame[9:13], "big") & 0x7FFFFFFF, int.from_bytes(frame[13:17], "big"))
            else:
                out += frame
        return bytes(out)

    async def pump(self, done: object, seconds: float = 30) -> None:
        """Read until done() holds; fails loudly after `seconds`."""
        async with asyncio.timeout(seconds):
            while not done():  # type: ignore[operator]
                data = await self.reader.read(65536)
                if not data:
                    self.closed = True
                    return
                for ev in self.h2.receive_data(self._without_goaway(data)):
                    s = self.streams.get(getattr(ev, "stream_id", 0) or 0)
                    if isinstance(ev, ResponseReceived) and s is not None:
                        hs = {k.decode(): v.decode() for k, v in ev.headers or []}
                        s.status = int(hs.pop(":status"))
                        s.headers = hs
                    elif isinstance(ev, DataReceived) and s is not None:
                        s.body += ev.data or b""
                        self.h2.acknowledge_received_data(ev.flow_controlled_length or 0, ev.stream_id or 0)
                    elif isinstance(ev, StreamEnded | TrailersReceived) and s is not None:
                        s.ended = True
                    elif isinstance(ev, StreamReset) and s is not None:
                        s.reset = int(ev.error_code or 0)
                    elif isinstance(ev, ConnectionTerminated):
                        self.goaway = (int(ev.last_stream_id or 0), int(ev.error_code or 0))
                self._flush()


async def open_h2(s: Setting, window: int = 65535) -> Browser:
    target = f"127.0.0.1:{s.origin.port}"
    reader, writer = await asyncio.open_connection("127.0.0.1", s.proxy)
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: "
                 f"{basic_credentials(SECRET)}\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    ctx = ssl.create_default_context(cafile=str(s.lanefetch_ca))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    await asyncio.wait_for(writer.start_tls(ctx, server_hostname="127.0.0.1"), 20)
    assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2", "the helper offers h2"
    return Browser(reader, writer, target, window)


async def test_a_page_sent_at_once_gets_every_answer_on_its_own_stream(setting: Setting) -> None:
    b = await open_h2(setting, window=16 * 1024)
    ids = {b.request("GET", path, [("accept", "*/*")]): path for path in BODIES}
    gz = b.request("GET", "/gz", [("accept-encoding", "gzip, br")])
    cookie = b.request("GET", "/cookie", [("cookie", "a=1"), ("cookie", "b=2")])  # crumbs, as h2 allows
    head = b.request("HEAD", f"{next(iter(BODIES))}")
    post = b.request("POST", "/echo", [("content-type", "text/plain")], body=b"posted " * 3000)
    chunked = b.request("GET", "/chunked")
    await b.pump(lambda: all(st.ended or st.reset is not None for st in b.streams.values()))
    for sid, path in ids.items():
        st = b.streams[sid]
        assert (st.status, st.ended, bytes(st.body) == BODIES[path]) == (200, True, True), path
        assert st.headers["content-length"] == str(len(BODIES[path]))
    assert b.streams[gz].body == GZ and b.streams[gz].headers["content-encoding"] == "gzip", "the coding untouched"
    assert b.streams[cookie].body == b"a=1; b=2"
    assert b.streams[head].status == 200 and b.streams[head].body == b"" and b.streams[head].ended
    assert b.streams[post].body == b"posted " * 3000
    assert b.streams[chunked].body == b"part0;part1;part2;" and b.streams[chunked].ended
    assert "transfer-encoding" not in b.streams[chunked].headers
    assert not b.closed and b.goaway is None
    assert sorted(setting.origin.seen) == sorted(
        [f"GET {p}" for p in BODIES] + ["GET /gz", "GET /cookie", f"HEAD {next(iter(BODIES))}", "POST /echo",
                                        "GET /chunked"])
    b.writer.close()


async def test_a_stream_for_another_host_is_refused_alone(setting: Setting) -> None:
    b = await open_h2(setting)
    other = b.request("GET", "/n/1", authority="127.0.0.2")
    ok = b.request("GET", "/n/2")
    await b.pump(lambda: b.streams[other].ended and b.streams[ok].ended)
    assert b.streams[other].status == 421 and b"serves 127.0.0.1" in b.streams[other].body
    assert b.streams[ok].status == 200 and b.streams[ok].body == BODIES["/n/2"]
    assert setting.origin.seen == ["GET /n/2"], "nothing for the other host reached any origin"
    b.writer.close()


async def test_a_head_refused_by_the_helper_gets_no_body(setting: Setting) -> None:
    # RFC 9110 §9.3.2: no content in an answer to HEAD, the helper's own refusals included.
    b = await open_h2(setting)
    other = b.request("HEAD", "/n/1", authority="127.0.0.2")
    await b.pump(lambda: b.streams[other].ended or b.streams[other].reset is not None)
    assert (b.streams[other].status, b.streams[other].ended, bytes(b.streams[other].body)) == (421, True, b"")
    b.writer.close()


async def test_a_stream_the_browser_resets_cancels_its_fetch(setting: Setting) -> None:
    b = await open_h2(setting)
    stalled = b.request("GET", "/stall")
    await b.pump(lambda: b.streams[stalled].status == 200)
    b.reset(stalled)
    await asyncio.wait_for(setting.origin.cancelled.wait(), 20)  # the helper gave the origin's answer up
    after = b.request("GET", "/n/3")  # the connection serves on
    await b.pump(lambda: b.streams[after].ended)
    assert b.streams[after].body == BODIES["/n/3"]
    b.writer.close()


async def test_a_request_that_fails_before_its_answer_is_refused_and_the_connection_ends_gracefully(
        setting: Setting) -> None:
    b = await open_h2(setting)
    kept = b.request("GET", "/gated")
    await until(lambda: "GET /gated" in setting.origin.seen, "the gated request at the origin", seconds=20)
    dropped = b.request("GET", "/drop")
    await b.pump(lambda: b.streams[dropped].reset is not None and b.goaway is not None)
    assert b.streams[dropped].reset == ErrorCodes.REFUSED_STREAM, "nothing processed: the browser may retry"
    assert b.goaway == (dropped, 0), "GOAWAY, NO_ERROR, keeping every stream sent so far"
    assert not b.streams[kept].ended
    # A new stream after the GOAWAY, opened and reset in one write (h2 has closed it by the time its HEADERS are
    # read): that event alone is dropped, the kept stream is still answered.
    late = b.h2.get_next_available_stream_id()
    b.h2.send_headers(late, [(":method", "GET"), (":scheme", "https"), (":authority", b.authority), (":path", "/n/1")],
                      end_stream=True)
    b.h2.reset_stream(late, ErrorCodes.CANCEL)
    b._flush()
    setting.origin.gate.set()
    await b.pump(lambda: b.closed)  # the kept stream is answered, then the connection closes
    assert b.streams[kept].ended and b.streams[kept].body == BODIES["/n/5"]
    # A new stream after the GOAWAY would have been refused; the same URL on a new connection fails at once (the
    # proxy's short memory of failed URLs), again refused, so Firefox goes on to its next route.
    b2 = await open_h2(setting)
    again = b2.request("GET", "/drop")
    await b2.pump(lambda: b2.streams[again].reset is not None)
    assert b2.streams[again].reset == ErrorCodes.REFUSED_STREAM
    assert setting.origin.seen.count("GET /drop") >= 1
    b2.writer.close()


async def test_a_browser_without_h2_still_speaks_http11(setting: Setting) -> None:
    target = f"127.0.0.1:{setting.origin.port}"
    reader, writer = await asyncio.open_connection("127.0.0.1", setting.proxy)
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: "
                 f"{basic_credentials(SECRET)}\r\n\r\n".encode())
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)).startswith(b"HTTP/1.1 200")
    ctx = ssl.create_default_context(cafile=str(setting.lanefetch_ca))
    ctx.set_alpn_protocols(["http/1.1"])
    await asyncio.wait_for(writer.start_tls(ctx, server_hostname="127.0.0.1"), 20)
    assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
    writer.write(f"GET /n/4 HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    assert head.startswith(b"HTTP/1.1 200")
    assert await asyncio.wait_for(reader.readexactly(len(BODIES["/n/4"])), 20) == BODIES["/n/4"]
    writer.close()



async def test_request_bodies_held_on_one_connection_are_capped_together(setting: Setting,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from lanefetch.proxy import h2_server

    monkeypatch.setattr(h2_server, "MAX_BODY_BYTES", 50_000)
    b = await open_h2(setting)
    ids = []
    for _ in range(2):  # two uploads on their way at once, 30 kB each: 60 kB held (within one window)
        sid = b.h2.get_next_available_stream_id()
        b.h2.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", b.authority),
                                (":path", "/echo")])
        b.streams[sid] = Stream()
        ids.append(sid)
    for sid in ids:
        b.h2.send_data(sid, b"u" * 15_000)
        b.h2.send_data(sid, b"u" * 15_000)
    for sid in ids:
        b.h2.end_stream(sid)
    b._flush()
    await b.pump(lambda: all(b.streams[s].ended for s in ids))
    first, second = (b.streams[s] for s in ids)
    assert (first.status, bytes(first.body)) == (200, b"u" * 30_000)
    assert second.status == 413 and b"too large" in second.body
    assert setting.origin.seen == ["POST /echo"], "the refused upload never reached the origin"
    b.writer.close()


async def test_a_stream_given_up_before_its_answer_costs_the_connection_nothing(setting: Setting) -> None:
    b = await open_h2(setting)
    first = b.request("GET", "/gated")
    await until(lambda: "GET /gated" in setting.origin.seen, "the request at the origin", seconds=20)
    b.reset(first)  # the browser gives it up before its head: no failure, nothing to refuse
    engine = setting.listener.engine
    await until(lambda: not engine._by_id, "the fetch given up", seconds=20)  # type: ignore[attr-defined]
    setting.origin.gate.set()
    again = b.request("GET", "/gated")
    await b.pump(lambda: b.streams[again].ended or b.streams[again].reset is not None)
    assert (b.streams[again].status, b.streams[again].reset) == (200, None), "not refused as a failed URL"
    assert b.goaway is None, "the connection serves on"
    b.writer.close()


async def test_a_stream_reset_while_its_request_waits_for_its_group_is_never_fetched(setting: Setting) -> None:
    # The proxy gathers requests for a few ms before they go to the engine (gather.py): a stream the browser resets
    # meanwhile had nothing in the engine to cancel, then went to it anyway and its whole answer was read for nobody.
    b = await open_h2(setting)
    stalled = b.request("GET", "/stall")
    b.reset(stalled)  # the same write: h2 reads the request and its reset together
    after = b.request("GET", "/n/3")  # the connection serves on
    await b.pump(lambda: b.streams[after].ended)
    assert b.streams[after].body == BODIES["/n/3"]
    gatherer = setting.listener._gatherer
    await until(lambda: not gatherer._plan.waiting() and not gatherer._tasks, "no fetch left for the reset stream",
                seconds=20)
    assert "GET /stall" not in setting.origin.seen
    b.writer.close()


async def test_the_browsers_goaway_ends_the_connection_and_its_fetches(setting: Setting) -> None:
    b = await open_h2(setting)
    b.request("GET", "/gated")
    await until(lambda: "GET /gated" in setting.origin.seen, "the request at the origin", seconds=20)
    b.h2.close_connection()
    b._flush()
    async with asyncio.timeout(20):  # closed at once: its streams cannot be answered after its GOAWAY
        while await b.reader.read(65536):
            pass
    engine = setting.listener.engine
    await until(lambda: not engine._by_id, "the fetch given up", seconds=20)  # type: ignore[attr-defined]



async def test_a_browser_that_never_reads_does_not_make_the_helper_buffer_without_bound() -> None:
    # h2 answers every PING by itself: a client that sends them and reads nothing made the helper hold the answers
    # (11 MB in a review); now the helper stops reading until the client takes what was written.
    import socket

    from lanefetch.proxy.h2_server import H2BrowserConnection

    helper_side: list[asyncio.StreamWriter] = []

    async def never(*_: object) -> bool:
        raise AssertionError("no request is sent in this test")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        helper_side.append(writer)
        await H2BrowserConnection(reader, writer, "a.test", never).serve()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    _unread, writer = await asyncio.open_connection(sock=sock)  # never read: the point of the test
    try:
        client = H2Connection(H2Configuration(client_side=True))
        client.initiate_connection()
        writer.write(client.data_to_send())
        for _ in range(300):  # bounded: 600 000 PINGs, 10 MB of acknowledgements owed
            for i in range(2000):
                client.ping(i.to_bytes(8, "big"))
            writer.write(client.data_to_send())
            try:
                await asyncio.wait_for(writer.drain(), 0.05)
            except TimeoutError:
                break  # the helper stopped reading: what it owes stays bounded
        await until(lambda: bool(helper_side), "the helper's side of the connection")
        held = helper_side[0].transport.get_write_buffer_size()
        assert held < 1024 * 1024, f"the helper holds {held} bytes for a client that reads nothing"
    finally:
        writer.transport.abort()
        server.close()
        await server.wait_closed()


async def test_response_fields_reach_the_browser_in_the_origins_own_bytes() -> None:
    # The engine reads a field's bytes as latin-1 (one character per byte) and the HTTP/1.1 side writes them back so;
    # h2 encodes a str as UTF-8, so a raw UTF-8 Location (/café: c3 a9) reached Firefox as c3 83 c2 a9, another URL.
    from lanefetch.engine.exchange import DeliveredHead
    from lanefetch.proxy.h2_server import H2BrowserConnection, H2StreamOut
    from lanefetch.proxy.request_reader import RequestHead

    raw = "/caf\u00c3\u00a9"  # the bytes c3 a9 as the engine holds them

    async def answer(head: RequestHead, body: bytes | None, out: H2StreamOut) -> bool:
        await out.head(DeliveredHead(302, "Found", "1.1", [("Location", raw), ("Content-Length", "2")], False))
        await out.body(b"ok")
        await out.end([("X-Trailer", raw), ("X-Nbsp", "1\u00a0")])  # a0 is no SP or HTAB: kept
        return True

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await H2BrowserConnection(reader, writer, "a.test", answer).serve()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        b = Browser(reader, writer, "a.test", 65535)
        trailers: list[tuple[bytes, bytes]] = []
        receive = b.h2.receive_data

        def keep_trailers(data: bytes) -> list[object]:
            events = receive(data)
            trailers.extend(kv for ev in events if isinstance(ev, TrailersReceived) for kv in ev.headers or [])
            return events  # type: ignore[return-value]

        b.h2.receive_data = keep_trailers  # type: ignore[method-assign]
        sid = b.request("GET", "/")
        await b.pump(lambda: b.streams[sid].ended or b.streams[sid].reset is not None, seconds=20)
        assert b.streams[sid].headers["location"].encode("utf-8") == b"/caf\xc3\xa9"
        assert (b"x-trailer", b"/caf\xc3\xa9") in trailers and (b"x-nbsp", b"1\xa0") in trailers
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
