"""A scripted HTTP/2 server over TLS on 127.0.0.1 for the h2 misbehaviour matrix (integration/test_h2_misbehaving.py):
python-hyper h2's server side over asyncio + ssl, with the throwaway test PKI (tls_pki.py).

    async with H2Server(scenario, pki) as srv:        # ephemeral port; ALPN offers only h2
        ... engine.fetch([FetchRequest(..., srv.url("/r/a/1000"))], sink, LOOPBACK) ...
        srv.received[("GET", "/r/a/1000")]             # how often the server saw (and processed) a request

Every accepted connection gets an H2ServerConn and one call of the scenario coroutine, which decides what is
answered, when, and how the connection ends (GOAWAY, RST_STREAM, raw frames h2 itself would refuse to send, a TCP
reset). A background reader feeds h2 and queues each request once its body is complete; streams beyond
`enforce_streams` are refused (REFUSED_STREAM) as a real server does with a client that opened them before it
knew the limit. Bodies are misbehaving_servers.content(path), so the tests compare bytes (SHA) exactly; a POST
is answered with its own request body (echo).

"Processed" is what the server handed to its scenario (`received`); a refused stream or one above a GOAWAY's
last stream id never is: that is what "the server provably did not process it" means in the tests."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes
from hyperframe.frame import Frame, HeadersFrame, PushPromiseFrame, SettingsFrame
from misbehaving_servers import content, etag

H2Scenario = Callable[["H2ServerConn"], Awaitable[None]]


@dataclass
class H2Req:
    stream_id: int
    method: str
    path: str
    body: bytearray = field(default_factory=bytearray)
    complete: asyncio.Event = field(default_factory=asyncio.Event)
    reset_by_client: bool = False


class H2ServerConn:
    def __init__(self, server: H2Server, index: int, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.index = index
        self.reader = reader
        self.writer = writer
        self.h2 = H2Connection(H2Configuration(client_side=False, header_encoding=None,
                                               validate_outbound_headers=False, normalize_outbound_headers=False))
        self.streams: dict[int, H2Req] = {}
        self.ready: asyncio.Queue[H2Req] = asyncio.Queue()
        self.window_opened = asyncio.Event()
        self.closed = asyncio.Event()
        self.refused: list[int] = []
        self.max_open = 0  # the most streams the server was processing at once
        self.enforce_streams: int | None = server.max_streams  # refuse streams beyond this many open
        self.ack_settings = server.ack_settings
        self.grant_window = server.grant_window  # hand back received request-body bytes at once
        self.tasks: set[asyncio.Task[bool]] = set()  # answers under way (answer_soon)

    # -- set-up --------------------------------------------------------------------------------------------

    def start(self) -> None:
        self.h2.initiate_connection()
        if self.server.settings:
            self.h2.update_settings(self.server.settings)
        self.flush()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if not self.ack_settings:
            data = _without_settings_acks(data)
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def raw(self, frame: Frame) -> None:
        if not self.writer.is_closing():
            self.writer.write(frame.serialize())

    def open_streams(self) -> int:
        return sum(1 for s in self.streams.values() if not self._done(s.stream_id))

    def _done(self, sid: int) -> bool:
        try:
            return bool(self.h2._get_stream_by_id(sid).closed)
        except H2Error:
            return True

    # -- the reader ----------------------------------------------------------------------------------------

    async def read_loop(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                try:
                    events = self.h2.receive_data(data)
                except H2Error:
                    self.flush()
                    break
                for ev in events:
                    self._event(ev)
                self.flush()
        except (OSError, ssl.SSLError):
            pass
        finally:
            self.closed.set()
            self.window_opened.set()

    def _event(self, ev: object) -> None:
        if isinstance(ev, RequestReceived) and ev.stream_id is not None:
            hdrs = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                    for k, v in ev.headers or []}
            req = H2Req(ev.stream_id, hdrs.get(":method", ""), hdrs.get(":path", ""))
            if self.enforce_streams is not None and self.open_streams() >= self.enforce_streams:
                self.refused.append(ev.stream_id)
                self.h2.reset_stream(ev.stream_id, ErrorCodes.REFUSED_STREAM)
                return
            self.streams[ev.stream_id] = req
            self.max_open = max(self.max_open, self.open_streams())
            if ev.stream_ended is not None:
                self._ready(req)
        elif isinstance(ev, DataReceived) and ev.stream_id is not None:
            req = self.streams.get(ev.stream_id)
            if req is not None:
                req.body += ev.data or b""
            n = ev.flow_controlled_length or 0
            if n and self.grant_window:
                with contextlib.suppress(H2Error):
                    self.h2.increment_flow_control_window(n)
                    if req is not None and not self._done(ev.stream_id):
                        self.h2.increment_flow_control_window(n, ev.stream_id)
        elif isinstance(ev, StreamEnded) and ev.stream_id is not None:
            req = self.streams.get(ev.stream_id)
            if req is not None:
                self._ready(req)
        elif isinstance(ev, StreamReset) and ev.stream_id is not None:
            req = self.streams.get(ev.stream_id)
            if req is not None:
                req.reset_by_client = True
            self.window_opened.set()
        elif isinstance(ev, (WindowUpdated, ConnectionTerminated)):
            self.window_opened.set()

    def _ready(self, req: H2Req) -> None:
        if req.complete.is_set():
            return  # h2 reports a request's end twice: in RequestReceived.stream_ended and as StreamEnded
        self.server.received[(req.method, req.path)] += 1
        req.complete.set()
        self.ready.put_nowait(req)

    # -- what a scenario does ------------------------------------------------------------------------------

    async def next_request(self, timeout: float = 10.0) -> H2Req | None:
        """The next request whose headers and body arrived, or None once the connection is gone or none came."""
        get = asyncio.ensure_future(self.ready.get())
        closed = asyncio.ensure_future(self.closed.wait())
        done, _ = await asyncio.wait({get, closed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        if get in done:
            return get.result()
        get.cancel()
        return None

    async def requests(self, n: int, timeout: float = 10.0) -> list[H2Req]:
        """The next n requests (fewer only if the connection ends or they do not come within timeout each)."""
        out: list[H2Req] = []
        while len(out) < n and (req := await self.next_request(timeout)) is not None:
            out.append(req)
        return out

    def answer_for(self, req: H2Req) -> bytes:
        return bytes(req.body) if req.method == "POST" else content(req.path)

    def send_head(self, req: H2Req, status: str = "200", *, end: bool = False) -> None:
        body = self.answer_for(req)
        headers = [(":status", status), ("content-length", "0" if req.method == "HEAD" else str(len(body))),
                   ("etag", etag(req.path)), ("content-type", "application/octet-stream")]
        with contextlib.suppress(H2Error):
            self.h2.send_headers(req.stream_id, headers, end_stream=end or req.method == "HEAD")
        self.flush()

    async def send_body(self, req: H2Req, data: bytes, *, end: bool = True) -> bool:
        """Send data on the stream as the client's flow-control windows allow; False if the stream or the
        connection ended first."""
        while True:
            if self.closed.is_set() or self._done(req.stream_id) or req.reset_by_client:
                return False
            try:
                room = min(self.h2.local_flow_control_window(req.stream_id), self.h2.max_outbound_frame_size)
            except H2Error:
                return False
            if room <= 0 and data:
                self.window_opened.clear()
                await self.window_opened.wait()
                continue
            piece, data = data[:room], data[room:]
            try:
                self.h2.send_data(req.stream_id, piece, end_stream=end and not data)
            except H2Error:
                return False
            self.flush()
            await self.writer.drain()
            if not data:
                if end:
                    self.server.answered[(req.method, req.path)] += 1
                return True

    async def respond(self, req: H2Req) -> bool:
        self.send_head(req)
        if req.method == "HEAD":
            self.server.answered[(req.method, req.path)] += 1
            return True
        return await self.send_body(req, self.answer_for(req))

    def reset_stream(self, req: H2Req, code: ErrorCodes) -> None:
        with contextlib.suppress(H2Error):
            self.h2.reset_stream(req.stream_id, code)
        self.flush()

    def goaway(self, last_stream_id: int, code: ErrorCodes = ErrorCodes.NO_ERROR) -> None:
        self.h2.close_connection(error_code=code, last_stream_id=last_stream_id)
        self.flush()

    def raw_headers(self, stream_id: int, headers: list[tuple[str, str]], *, end: bool = True) -> None:
        """A HEADERS frame h2 would refuse to send (a stream the client never opened), HPACK'd with this
        connection's own encoder so the client's table stays in step."""
        f = HeadersFrame(stream_id)
        f.data = self.h2.encoder.encode(headers)
        f.flags.add("END_HEADERS")
        if end:
            f.flags.add("END_STREAM")
        self.raw(f)

    def raw_push_promise(self, req: H2Req, promised: int) -> None:
        f = PushPromiseFrame(req.stream_id)
        f.promised_stream_id = promised
        f.data = self.h2.encoder.encode([(":method", "GET"), (":scheme", "https"),
                                         (":authority", f"localhost:{self.server.port}"), (":path", "/pushed")])
        f.flags.add("END_HEADERS")
        self.raw(f)

    async def drain(self) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            await self.writer.drain()

    def tcp_reset(self) -> None:
        """A TCP reset (SO_LINGER 0), no TLS close_notify."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    def answer_soon(self, req: H2Req) -> None:
        """Answer in a task of its own, so a stream waiting for window does not hold up the others."""
        t = asyncio.create_task(self.respond(req))
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    def answer_soon_data(self, req: H2Req, data: bytes) -> None:
        """Send these bytes as the stream's body (its head already sent), in a task of its own."""
        t = asyncio.create_task(self.send_body(req, data))
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    async def serve_rest(self, timeout: float = 10.0) -> None:
        """Behave: answer every request as it comes until the client goes."""
        while (req := await self.next_request(timeout)) is not None:
            self.answer_soon(req)


def _without_settings_acks(data: bytes) -> bytes:
    """Drop SETTINGS frames with the ACK flag from what h2 wrote (a server that never acknowledges)."""
    out = bytearray()
    i = 0
    while i + 9 <= len(data):
        length = int.from_bytes(data[i:i + 3], "big")
        frame = data[i:i + 9 + length]
        if not (frame[3] == SettingsFrame.type and frame[4] & 0x1):
            out += frame
        i += 9 + length
    return bytes(out + data[i:])


class H2Server:
    def __init__(self, scenario: H2Scenario, pki: Path, *, settings: dict[SettingCodes, int] | None = None,
                 max_streams: int | None = None, ack_settings: bool = True, grant_window: bool = True) -> None:
        self.scenario = scenario
        self.pki = pki
        self.settings = settings or {}
        self.max_streams = max_streams
        self.ack_settings = ack_settings
        self.grant_window = grant_window
        self.connections: list[H2ServerConn] = []
        self.received: Counter[tuple[str, str]] = Counter()  # processed: handed to the scenario
        self.answered: Counter[tuple[str, str]] = Counter()  # whole answers sent
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.errors: list[BaseException] = []
        self.state: dict[str, object] = {}  # what a scenario noted for its test (e.g. the streams it refused)

    def url(self, path: str) -> str:
        return f"https://localhost:{self.port}{path}"

    async def __aenter__(self) -> Self:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.pki / "srv.pem", self.pki / "srv.key")
        ctx.set_alpn_protocols(["h2"])
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=ctx)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in self.connections:
            conn.writer.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = H2ServerConn(self, len(self.connections), reader, writer)
        self.connections.append(conn)
        conn.start()
        reading = asyncio.create_task(conn.read_loop())
        try:
            await self.scenario(conn)
            await conn.drain()
        except (OSError, ConnectionError, asyncio.CancelledError):
            pass
        except Exception as e:  # a broken scenario must fail its test, not vanish in a server task
            self.errors.append(e)
        finally:
            for t in [*conn.tasks, reading]:
                t.cancel()
            await asyncio.gather(*conn.tasks, reading, return_exceptions=True)
            writer.transport.abort()
            self._tasks.discard(task)
