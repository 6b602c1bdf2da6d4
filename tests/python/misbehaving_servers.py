"""Scripted raw-socket HTTP/1.1 servers on 127.0.0.1 for the engine tests, and a recording sink.

    async with ScriptedServer(scenario) as srv:        # ephemeral port on 127.0.0.1
        ... engine.fetch([FetchRequest(..., srv.url("/r/a/1000"))], sink, LOOPBACK) ...
        srv.connections[0].received[1].unanswered_at_arrival   # what the server saw, per connection

Every accepted connection gets a ServerConn. A background reader parses the requests as they arrive
and records, for each, how many earlier requests on that connection the server had not yet answered
(so a test proves pipelining from the server's side). The scenario coroutine, called once per
connection, decides byte by byte what is answered, when, and how the connection ends.

Bodies are deterministic functions of the path (``content(path)``), so tests compare bytes exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gzip
import hashlib
import socket
import struct
import termios
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Self

import brotli
import zstandard
from lanefetch.engine import DeliveredHead, FetchError, FetchRequest, Page, TimingReport

LOOPBACK = Page(address_space="loopback")

Headers = list[tuple[str, str]]

# ------------------------------------------------------------------------------------------- bodies


def content(path: str) -> bytes:
    """The body of a resource: ``/<anything>/<size>`` gives <size> deterministic bytes (else 1000).

    The bytes never start with "HTTP/", so a misframed body is noticed where a response should start."""
    path = path.split("?", 1)[0]
    last = path.rstrip("/").rsplit("/", 1)[-1]
    size = int(last) if last.isdigit() else 1000
    data = hashlib.shake_256(path.encode()).digest(size)
    return b"#" + data[1:] if data[:1] == b"H" else data


def etag(path: str) -> str:
    return '"' + hashlib.sha256(content(path)).hexdigest()[:16] + '"'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def encode(data: bytes, coding: str) -> bytes:
    """Apply one Content-Encoding, or a comma-separated list in the order listed (RFC 9110 §8.4)."""
    for c in (c.strip() for c in coding.split(",")):
        if c == "gzip":
            data = gzip.compress(data, mtime=0)  # deterministic: tests re-encode to compare
        elif c == "deflate":  # the RFC's deflate: zlib-wrapped
            data = zlib.compress(data)
        elif c == "rawdeflate":  # what some servers send as "deflate"
            co = zlib.compressobj(wbits=-zlib.MAX_WBITS)
            data = co.compress(data) + co.flush()
        elif c == "br":
            data = brotli.compress(data)
        elif c == "zstd":
            data = zstandard.ZstdCompressor().compress(data)
        elif c == "identity":
            pass
        else:
            data = bytes(b ^ 0x5A for b in data)  # an unknown coding: anything not decodable
    return data


# ----------------------------------------------------------------------------------------- responses


def response(
    status: int = 200,
    body: bytes = b"",
    *,
    headers: Iterable[tuple[str, str]] = (),
    version: str = "1.1",
    reason: str | None = None,
    length: int | bool | None = True,
    chunks: Sequence[int] | None = None,
    trailers: Iterable[tuple[str, str]] | None = None,
    with_body: bool = True,
) -> bytes:
    """Bytes of one response. ``length``: True = Content-Length of the body, an int = that (lying)
    value, None/False = none. ``chunks``: chunked with these chunk sizes (the rest in a last chunk),
    then ``trailers``. ``with_body=False``: the head only (HEAD, 204, 304)."""
    reason = reason if reason is not None else _REASONS.get(status, "Whatever")
    lines = [f"HTTP/{version} {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    payload = body if with_body else b""
    if chunks is not None:
        lines.append("Transfer-Encoding: chunked")
        out = bytearray()
        pos = 0
        for size in [*chunks, max(0, len(body) - sum(chunks))]:
            piece = body[pos : pos + size]
            pos += size
            if piece:
                out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        out += b"0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in trailers or ()).encode() + b"\r\n"
        payload = bytes(out)
    elif length is True:
        lines.append(f"Content-Length: {len(body)}")
    elif isinstance(length, int) and length is not False:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


_REASONS = {100: "Continue", 103: "Early Hints", 200: "OK", 204: "No Content", 304: "Not Modified", 404: "Not Found"}


_TYPED = {"css": "text/css", "js": "text/javascript", "font": "font/woff2", "img": "image/png"}


def ordinary(req: Received, *, extra: Iterable[tuple[str, str]] = (), version: str = "1.1") -> bytes:
    """What a correct server answers to a request, by path:

    * ``/r/<name>/<size>``: 200 with content(path), Content-Length, ETag, as application/octet-stream (``/css/``,
      ``/js/``, ``/font/``, ``/img/`` instead of ``/r/``: typed as a stylesheet, script, font, image);
    * ``/chunked/<name>/<size>``: chunked in uneven pieces, trailers X-Checksum (sha256) and X-Count;
    * ``/hints/<name>/<size>``: 100 Continue and 103 Early Hints, then the 200;
    * ``/status/204``, ``/status/304/<name>``: no body (the 304 carries the representation's Content-Length);
    * ``/enc/<coding>/<name>/<size>``: the content encoded with <coding> (comma list allowed, "x-unknown" for
      a coding nobody can undo), with Content-Encoding and Content-Length.
    HEAD gets the GET's head without a body.
    """
    path = req.path
    extra = list(extra)
    with_body = req.method != "HEAD"
    if path.startswith("/status/204"):
        return response(204, headers=extra, length=None, version=version)
    if path.startswith("/status/304"):
        return response(304, headers=[("ETag", etag(path)), ("Content-Length", "12345"), *extra], length=None,
                        with_body=False, version=version)
    body = content(path)
    hdrs = [("ETag", etag(path)), ("Content-Type", _TYPED.get(path.split("/")[1], "application/octet-stream")),
            *extra]
    if path.startswith("/chunked/"):
        trailers = [("X-Checksum", sha(body)), ("X-Count", str(len(body)))]
        hdrs.append(("Trailer", "X-Checksum, X-Count"))
        if not with_body:
            return response(200, headers=[*hdrs, ("Transfer-Encoding", "chunked")], length=None, with_body=False,
                            version=version)
        return response(200, body, headers=hdrs, chunks=[1, 17, 4096, 3], trailers=trailers, version=version)
    if path.startswith("/hints/"):
        early = response(100, length=None) + response(103, headers=[("Link", "</style.css>; rel=preload")],
                                                         length=None)
        return early + response(200, body, headers=hdrs, with_body=with_body, version=version)
    if path.startswith("/enc/"):
        coding = path.split("/")[2].replace("+", ", ")
        encoded = encode(body, coding)
        label = coding.replace("x-unknown", "x-lanefetch-unknown").replace("rawdeflate", "deflate")
        hdrs.append(("Content-Encoding", label))
        return response(200, encoded, headers=hdrs, with_body=with_body, version=version)
    return response(200, body, headers=hdrs, with_body=with_body, version=version)


# ----------------------------------------------------------------------------------------- the server


@dataclass
class Received:
    conn: int  # index of the connection (accept order, 0-based)
    index: int  # 1-based position among the requests on that connection
    method: str
    target: str
    version: str
    headers: Headers
    body: bytes
    arrived: float  # monotonic
    unanswered_at_arrival: int  # earlier requests on this connection not yet answered when it arrived

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name.lower()]
        return ", ".join(values) if values else None


class ServerConn:
    """One accepted connection: requests in (parsed in the background), scripted bytes out."""

    def __init__(self, server: ScriptedServer, index: int, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.index = index
        self.reader = reader
        self.writer = writer
        self.peer = writer.get_extra_info("peername")
        self.received: list[Received] = []
        self.answered = 0  # responses completely written
        self.outstanding_at_answer: list[int] = []  # per response begun: requests received and not yet answered
        self.bytes_written = 0
        self.client_eof = False  # the client closed (or reset) its side
        self.ended = False  # the server closed this connection
        self.parse_error: str | None = None
        self._queue: asyncio.Queue[Received | None] = asyncio.Queue()
        self._taken = 0
        self._buf = bytearray()
        self.new_request = asyncio.Event()

    # -- what happened --------------------------------------------------------------------------------

    @property
    def max_outstanding(self) -> int:
        return max(self.outstanding_at_answer, default=0)

    def outstanding(self) -> int:
        return len(self.received) - self.answered

    # -- for scenarios ----------------------------------------------------------------------------------

    async def next_request(self, timeout: float = 10.0) -> Received | None:
        """The next request in arrival order; None once the client closed (or timeout)."""
        try:
            req = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
        if req is not None:
            self._taken += 1
        return req

    def waiting(self) -> int:
        """Requests that arrived and the scenario has not taken yet."""
        return self._queue.qsize()

    async def settle(self, seconds: float) -> None:
        """Give the client time to send what it would pipeline before the server answers."""
        await asyncio.sleep(seconds)

    async def answer_first(self, k: int, settle: float) -> bool:
        """Answer the next k requests properly; False if the client went away first."""
        for _ in range(k):
            req = await self.next_request()
            if req is None:
                return False
            await self.settle(settle)
            await self.answer(req)
        await self.settle(settle)
        return True

    async def send(self, data: bytes, *, completes: int = 1, begins: bool = True) -> None:
        """Write bytes. ``begins``: they start a response (recorded for outstanding_at_answer);
        ``completes``: how many responses they finish."""
        if self.ended:
            return
        if begins:
            self.outstanding_at_answer.append(self.outstanding())
        self.writer.write(data)
        self.bytes_written += len(data)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError):
            self.client_eof = True
        self.answered += completes

    async def answer(self, req: Received, data: bytes | None = None) -> None:
        await self.send(ordinary(req) if data is None else data)

    async def close(self, linger: float = 2.0) -> None:
        """A polite close: FIN now, then wait (bounded) for the client to close too."""
        if self.ended:
            return
        self.ended = True
        with contextlib.suppress(OSError, RuntimeError):
            if self.writer.can_write_eof():
                self.writer.write_eof()
        deadline = time.monotonic() + linger
        while not self.client_eof and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.writer.close()

    def reset(self) -> None:
        """An abortive close: RST (SO_LINGER 0)."""
        if self.ended:
            return
        self.ended = True
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def hold(self, seconds: float) -> None:
        """Say nothing for a while (the connection stays open)."""
        await asyncio.sleep(seconds)

    async def wait_client_close(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.client_eof and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    # -- the background reader ----------------------------------------------------------------------------

    async def read_requests(self) -> None:
        try:
            while True:
                try:
                    data = await self.reader.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    self.client_eof = True
                    break
                self._buf += data
                while (req := self._parse_one()) is not None:
                    self.received.append(req)
                    self.server.requests.append(req)
                    self._queue.put_nowait(req)
                    self.new_request.set()
        except _BadRequest as e:
            self.parse_error = str(e)
            self.client_eof = True
        finally:
            self._queue.put_nowait(None)

    def _parse_one(self) -> Received | None:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = bytes(self._buf[:end]).decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ")
        except ValueError:
            raise _BadRequest(f"bad request line {lines[0]!r}") from None
        headers: Headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise _BadRequest(f"bad header line {line!r}")
            headers.append((name, value.strip()))
        length = sum(int(v) for k, v in headers if k.lower() == "content-length")
        if len(self._buf) < end + 4 + length:
            return None
        body = bytes(self._buf[end + 4 : end + 4 + length])
        del self._buf[: end + 4 + length]
        return Received(self.index, len(self.received) + 1, method, target, version, headers, body,
                        time.monotonic(), self.outstanding())


class _BadRequest(Exception):
    pass


Scenario = Callable[[ServerConn], Awaitable[None]]


class ScriptedServer:
    def __init__(self, scenario: Scenario, *, sndbuf: int | None = None) -> None:
        self.scenario = scenario
        self.sndbuf = sndbuf
        self.connections: list[ServerConn] = []
        self.requests: list[Received] = []  # every request, in arrival order, over all connections
        self.state: dict[str, object] = {}  # shared between a scenario's connections
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.errors: list[BaseException] = []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def served(self, path: str, method: str = "GET") -> int:
        return sum(1 for r in self.requests if r.path == path and r.method == method)

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for c in self.connections:
            if not c.ended:
                c.ended = True
                c.writer.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if self.sndbuf is not None and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
        conn = ServerConn(self, len(self.connections), reader, writer)
        self.connections.append(conn)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        rd = asyncio.create_task(conn.read_requests())
        self._tasks.add(rd)
        try:
            await self.scenario(conn)
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            pass  # the server is closing (a re-raise would only be logged by asyncio's start_server)
        except Exception as e:
            self.errors.append(e)
        finally:
            if not conn.ended:
                await conn.close(linger=1.0)
            rd.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await rd
            self._tasks.discard(rd)
            self._tasks.discard(task)


# --------------------------------------------------------------------------------------- scenarios


def well_behaved(settle: float = 0.02, *, extra: Iterable[tuple[str, str]] = ()) -> Scenario:
    """Answers every request correctly, in order, after giving the client ``settle`` s to pipeline."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            await conn.answer(req, ordinary(req, extra=extra))

    return run


# -------------------------------------------------------------------------------------- recording sink


@dataclass
class Record:
    request: FetchRequest
    events: list[str] = field(default_factory=list)
    head: DeliveredHead | None = None
    body: bytearray = field(default_factory=bytearray)
    end_bytes: int | None = None
    trailers: Headers | None = None
    error: FetchError | None = None
    report: TimingReport | None = None


class RecordingSink:
    """Keeps every call per request; ``body_delay`` makes it a slow consumer; ``gate`` (an Event)
    blocks the first body call until set."""

    def __init__(self, body_delay: float = 0.0) -> None:
        self.records: dict[str, Record] = {}
        self.body_delay = body_delay
        self.gate: asyncio.Event | None = None
        self.body_calls = 0

    def rec(self, request: FetchRequest) -> Record:
        return self.records.setdefault(request.id, Record(request))

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        r = self.rec(request)
        r.events.append("head")
        r.head = head

    async def body(self, request: FetchRequest, data: bytes) -> None:
        r = self.rec(request)
        r.events.append("body")
        r.body += data
        self.body_calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.body_delay:
            await asyncio.sleep(self.body_delay)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        r = self.rec(request)
        r.events.append("end")
        r.end_bytes = body_bytes
        r.trailers = list(trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        r = self.rec(request)
        r.events.append("error")
        r.error = error

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        r = self.rec(request)
        r.events.append("timing")
        r.report = report

    # -- checks ---------------------------------------------------------------------------------------

    def check_once(self, requests: Iterable[FetchRequest]) -> None:
        """Every request got exactly one end or one error, then one timing, and nothing after; a head at
        most once and before any body; body bytes add up to what end reported."""
        for req in requests:
            r = self.records.get(req.id)
            assert r is not None, f"{req.id}: the sink never heard of it"
            ev = r.events
            terminals = [e for e in ev if e in ("end", "error")]
            assert len(terminals) == 1, f"{req.id}: terminal events {ev}"
            assert ev[-1] == "timing" and ev.count("timing") == 1, f"{req.id}: events {ev}"
            assert ev.index(terminals[0]) == len(ev) - 2, f"{req.id}: events after the end: {ev}"
            assert ev.count("head") <= 1, f"{req.id}: {ev.count('head')} heads"
            if "body" in ev:
                assert "head" in ev and ev.index("head") < ev.index("body"), f"{req.id}: body before head {ev}"
            if terminals[0] == "end":
                assert "head" in ev, f"{req.id}: end without a head"
                assert r.end_bytes == len(r.body), f"{req.id}: end says {r.end_bytes}, sink got {len(r.body)}"

    def check_exact(self, requests: Iterable[FetchRequest], expected: Callable[[FetchRequest], bytes]) -> None:
        """check_once, and every request ended (no error) with exactly the expected bytes."""
        requests = list(requests)
        self.check_once(requests)
        for req in requests:
            r = self.records[req.id]
            assert r.error is None, f"{req.id} {req.url}: {r.error!r}"
            want = expected(req)
            assert len(r.body) == len(want) and sha(bytes(r.body)) == sha(want), (
                f"{req.id} {req.url}: got {len(r.body)} bytes, want {len(want)}"
            )


def _count(conn: ServerConn, key: str) -> int:
    """A per-server counter, incremented on each call (e.g. how often a broken response was sent)."""
    n = int(conn.server.state.get(key, 0)) + 1  # type: ignore[call-overload]
    conn.server.state[key] = n
    return n


def close_after(k: int, settle: float = 0.02, *, rst: bool = False) -> Scenario:
    """The first connection answers k requests (so the client has pipelined more), then closes
    (FIN, or RST) without a word about the rest. Later connections behave."""
    good = well_behaved(settle)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        if not await conn.answer_first(k, settle):
            return
        conn.server.state["unanswered_at_close"] = conn.outstanding()
        if rst:
            conn.reset()
        else:
            await conn.close()

    return run


def close_mid_body(path: str, cut: int, settle: float = 0.02, *, rst: bool = False, times: int = 1,
                   changed: bool = False, ranges: bool = False, validators: bool = True,
                   same_length_other_body: bool = False, chunked: bool = False, short_range: int = 0,
                   range_body_short: int = 0) -> Scenario:
    """Answers normally, except the first ``times`` responses for ``path``: head and ``cut`` bytes of the
    body, then the connection closes. ``changed``: later answers for path carry another ETag. ``ranges``:
    a later request with Range and a matching If-Range gets a 206 (recorded in state["ranges"]).
    ``validators=False``: answers for path carry neither ETag nor Last-Modified, only Content-Length;
    ``same_length_other_body``: later answers for path are another body of the same length. ``chunked``: the
    200s for path are chunked (no Content-Length). ``short_range``: that 206 stops this many bytes before the
    body's end, as its Content-Range says; ``range_body_short``: its Content-Range runs to the end, but its body
    (framed by its Content-Length) is this many bytes shorter."""

    def answer_for(conn: ServerConn, req: Received) -> bytes:
        body = content(req.path)
        if req.path == path and same_length_other_body and _count(conn, "answers") > 1:
            body = bytes(b ^ 0xFF for b in body)
        headers = [("ETag", etag(req.path))] if validators or req.path != path else []
        if chunked and req.path == path:
            return response(200, body, headers=[*headers, ("Content-Type", "application/octet-stream")],
                            chunks=[4096, 1, 17])
        return response(200, body, headers=[*headers, ("Content-Type", "application/octet-stream")])

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if req.path == path and req.method == "GET":
                n = _count(conn, "broken")
                rng = req.header("Range")
                if ranges and n > times and rng and req.header("If-Range") == etag(path):
                    start = int(rng.removeprefix("bytes=").split("-")[0])
                    body = content(path)
                    conn.server.state.setdefault("ranges", []).append(rng)  # type: ignore[union-attr]
                    last = len(body) - 1 - short_range
                    await conn.answer(req, response(206, body[start:last + 1 - range_body_short], headers=[
                        ("ETag", etag(path)), ("Content-Range", f"bytes {start}-{last}/{len(body)}")]))
                    continue
                if n <= times:
                    full = answer_for(conn, req)
                    head_len = full.index(b"\r\n\r\n") + 4
                    await conn.send(full[: head_len + cut], completes=0)
                    await asyncio.sleep(0.02)
                    conn.server.state["unanswered_at_close"] = conn.outstanding()
                    if rst:
                        conn.reset()
                    else:
                        await conn.close()
                    return
                if changed:
                    await conn.answer(req, ordinary(req, extra=[("ETag", '"changed"')]).replace(
                        f"ETag: {etag(path)}\r\n".encode(), b"", 1))
                    continue
                await conn.answer(req, answer_for(conn, req))
                continue
            await conn.answer(req)

    return run


def pause_mid_body(path: str, cut: int, pause: float, settle: float = 0.02, *, validators: bool = True) -> Scenario:
    """A link that lost a segment and a server waiting for its retransmission timer: the first answer for ``path``
    stops after its head and ``cut`` body bytes, the connection stays open, and the rest follows ``pause`` s later
    (if the client is still there; state["finished_after_pause"] says whether it was). Other requests on that
    connection wait behind it. A request for ``path`` with Range and a matching If-Range gets a 206 (recorded in
    state["ranges"]). ``validators=False``: answers for path carry no ETag (nothing can be resumed)."""

    def whole(req: Received) -> bytes:
        headers = [("ETag", etag(req.path))] if validators else []
        return response(200, content(req.path), headers=[*headers, ("Content-Type", "application/octet-stream")])

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if req.path != path or req.method != "GET":
                await conn.answer(req)
                continue
            rng = req.header("Range")
            if rng and validators and req.header("If-Range") == etag(path):
                start = int(rng.removeprefix("bytes=").split("-")[0])
                body = content(path)
                conn.server.state.setdefault("ranges", []).append(rng)  # type: ignore[union-attr]
                await conn.answer(req, response(206, body[start:], headers=[
                    ("ETag", etag(path)), ("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")]))
                continue
            if _count(conn, "paused") > 1:
                await conn.answer(req, whole(req))
                continue
            full = whole(req)
            head_len = full.index(b"\r\n\r\n") + 4
            await conn.send(full[: head_len + cut], completes=0)
            deadline = time.monotonic() + pause
            while not conn.client_eof and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            conn.server.state["finished_after_pause"] = not conn.client_eof
            if conn.client_eof:
                return
            await conn.send(full[head_len + cut :], begins=False)

    return run


def connection_close_after(k: int, settle: float = 0.02, *, rst: bool = False) -> Scenario:
    """A server keep-alive limit (nginx keepalive_requests): every connection answers k requests, the k-th
    with ``Connection: close``, then closes: FIN (lingering), or RST as nginx may when requests are unread."""

    async def run(conn: ServerConn) -> None:
        for i in range(1, k + 1):
            req = await conn.next_request()
            if req is None:
                return
            await conn.settle(settle)
            await conn.answer(req, ordinary(req, extra=[("Connection", "close")] if i == k else []))
        conn.server.state.setdefault("unanswered_at_close", []).append(conn.outstanding())  # type: ignore[union-attr]
        await asyncio.sleep(0.02)
        if rst:
            conn.reset()
        else:
            await conn.close()

    return run


def http10(*, keep_alive: bool, settle: float = 0.02) -> Scenario:
    """An HTTP/1.0 server: without keep-alive it closes after each response (the body is framed by
    Content-Length here); with ``Connection: keep-alive`` it keeps the connection."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            extra = [("Connection", "keep-alive"), ("Keep-Alive", "timeout=5")] if keep_alive else []
            await conn.answer(req, ordinary(req, extra=extra, version="1.0"))
            if not keep_alive:
                conn.server.state.setdefault("unanswered_at_close", []).append(conn.outstanding())  # type: ignore[union-attr]
                await conn.close()
                return

    return run


def wrong_length(path: str, delta: int, settle: float = 0.02) -> Scenario:
    """A server that gets one resource's Content-Length wrong by ``delta``: too long (it sends the real
    body and closes: the client waits in vain), too short (the rest of the body is garbage where the next
    response should begin)."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if req.path != path:
                await conn.answer(req)
                continue
            body = content(path)
            _count(conn, "broken")
            await conn.answer(req, response(200, body, headers=[("ETag", etag(path))], length=len(body) + delta))
            if delta > 0:
                await asyncio.sleep(0.02)
                await conn.close()
                return

    return run


def stall_then_rst(after: int, stall: float, settle: float = 0.02) -> Scenario:
    """The first connection answers ``after`` requests, then says nothing for ``stall`` s (requests are
    outstanding), then resets. Later connections behave."""
    good = well_behaved(settle)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        if not await conn.answer_first(after, settle):
            return
        conn.server.state["unanswered_at_stall"] = conn.outstanding()
        deadline = time.monotonic() + stall
        while not conn.client_eof and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        conn.server.state["client_gave_up_first"] = conn.client_eof
        conn.reset()

    return run


def rst_when_pipelined(settle: float = 0.03) -> Scenario:
    """A pipelining-hostile server (or middlebox): whenever a request arrives while an earlier one is
    unanswered, it resets the connection. One request at a time is answered correctly."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if conn.outstanding() > 1:
                _count(conn, "resets")
                conn.reset()
                return
            await conn.answer(req)

    return run


def drop_one(after: int, then: str, settle: float = 0.02) -> Scenario:
    """The first connection answers ``after`` requests, then loses the next one and everything pipelined
    behind it (as a buggy server that drops its read buffer would); ``then`` = "stall" (the connection
    stays open, silent) or "close". Later connections behave."""
    good = well_behaved(settle)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        if not await conn.answer_first(after, settle):
            return
        conn.server.state["dropped"] = conn.outstanding()
        if then == "close":
            await conn.close()
        else:
            await conn.wait_client_close()

    return run


def head_get_swapped(settle: float = 0.03) -> Scenario:
    """The first connection answers the first pipelined HEAD + GET pair out of order (the GET's full
    response first, then the HEAD's head), then goes on in order."""

    async def run(conn: ServerConn) -> None:
        swapped = conn.index > 0
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if not swapped and req.method == "HEAD" and conn.waiting():
                nxt = await conn.next_request()
                assert nxt is not None
                if nxt.method == "GET":
                    swapped = True
                    conn.server.state["swapped"] = (req.target, nxt.target)
                    await conn.send(ordinary(nxt) + ordinary(req), completes=2)
                    continue
                await conn.answer(req)
                await conn.answer(nxt)
                continue
            await conn.answer(req)

    return run


def keepalive_max(n: int, settle: float = 0.02) -> Scenario:
    """Apache style: each response says ``Keep-Alive: timeout=5, max=<left>``; the n-th says
    ``Connection: close`` and the server closes. A request beyond n on a connection is never answered."""

    async def run(conn: ServerConn) -> None:
        for i in range(1, n + 1):
            req = await conn.next_request()
            if req is None:
                return
            await conn.settle(settle)
            extra = [("Keep-Alive", f"timeout=5, max={n - i}")] if i < n else [("Connection", "close")]
            await conn.answer(req, ordinary(req, extra=extra))
        await asyncio.sleep(0.02)
        await conn.close()

    return run


def post_dies(settle: float = 0.02, *, first_close_after: int | None = None) -> Scenario:
    """Answers GETs; when a POST arrives it reads it whole and closes without answering. With
    ``first_close_after`` the first connection also closes after that many GET responses with
    pipelined GETs unanswered."""

    async def run(conn: ServerConn) -> None:
        answered = 0
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if req.method == "POST":
                await conn.settle(0.1)  # anything pipelined behind the POST would arrive now
                conn.server.state["after_post"] = conn.waiting()
                await conn.close()
                return
            await conn.answer(req)
            answered += 1
            if conn.index == 0 and first_close_after is not None and answered == first_close_after:
                await conn.settle(settle)
                conn.server.state["unanswered_at_close"] = conn.outstanding()
                await conn.close()
                return

    return run


def held(settle: float = 0.01) -> Scenario:
    """For cancellation: ``/hold/...`` is answered only once ``server.state["release"]`` (an Event) is
    set; ``/half/...`` sends its head and half the body, then waits for the release. The rest is ordinary."""

    async def run(conn: ServerConn) -> None:
        release = conn.server.state.setdefault("release", asyncio.Event())
        assert isinstance(release, asyncio.Event)
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if req.path.startswith("/hold/"):
                conn.server.state["holding"] = True
                await release.wait()
            elif req.path.startswith("/half/"):
                full = ordinary(req)
                cut = full.index(b"\r\n\r\n") + 4 + len(content(req.path)) // 2
                await conn.send(full[:cut], completes=0)
                conn.server.state["holding"] = True
                await release.wait()
                await conn.send(full[cut:], begins=False)
                continue
            await conn.answer(req)

    return run


def bulk(piece: int = 65536) -> Scenario:
    """Writes bodies piece by piece, waiting for the transport to drain each (so ``bytes_written`` shows
    how far the client let the server get)."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            full = ordinary(req)
            head_len = full.index(b"\r\n\r\n") + 4
            await conn.send(full[:head_len], completes=0)
            for i in range(head_len, len(full), piece):
                await conn.send(full[i : i + piece], completes=0, begins=False)
            conn.answered += 1

    return run


def close_delimited(path: str, settle: float = 0.02) -> Scenario:
    """Answers normally, except ``path``: HTTP/1.1 200 with neither Content-Length nor chunked, so the body
    ends when the server closes (it does, right after). Requests pipelined behind it are never answered."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.settle(settle)
            if req.path == path:
                await conn.answer(req, response(200, content(path), headers=[("ETag", etag(path))], length=None))
                await asyncio.sleep(0.02)
                conn.server.state.setdefault("unanswered_at_close", []).append(conn.outstanding())  # type: ignore[union-attr]
                await conn.close()
                return
            await conn.answer(req)

    return run


def always_close(settle: float = 0.02) -> Scenario:
    """A server without keep-alive: every response says ``Connection: close`` and the server closes."""

    async def run(conn: ServerConn) -> None:
        req = await conn.next_request()
        if req is None:
            return
        await conn.settle(settle)
        await conn.answer(req, ordinary(req, extra=[("Connection", "close")]))
        await conn.close()

    return run


def idle_close(idle: float, settle: float = 0.02) -> Scenario:
    """Closes a keep-alive connection after ``idle`` s without a request (keepalive_timeout)."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request(timeout=idle)) is not None:
            await conn.settle(settle)
            await conn.answer(req)
        conn.server.state["idle_closes"] = int(conn.server.state.get("idle_closes", 0)) + 1  # type: ignore[call-overload]
        await conn.close()

    return run


def one_off_close(k: int, settle: float = 0.02) -> Scenario:
    """The first connection says ``Connection: close`` on its k-th response and closes (a graceful reload, a
    restarted worker); every later connection keeps alive without any limit."""
    good = well_behaved(settle)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        for i in range(1, k + 1):
            req = await conn.next_request()
            if req is None:
                return
            await conn.settle(settle)
            await conn.answer(req, ordinary(req, extra=[("Connection", "close")] if i == k else []))
        await asyncio.sleep(0.02)
        await conn.close()

    return run


def unsent_bytes(conn: ServerConn) -> int:
    """Bytes the server wrote that the client's kernel has not acknowledged yet (transport buffer + TIOCOUTQ)."""
    sock = conn.writer.get_extra_info("socket")
    queued = conn.writer.transport.get_write_buffer_size()
    if sock is None:
        return queued
    raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    return queued + int(struct.unpack("i", raw)[0])


def limit_then_rst(k: int, settle: float = 0.02) -> Scenario:
    """nginx at keepalive_requests with pipelined requests unread: the k-th response says ``Connection:
    close``; once the client's kernel has acknowledged every byte of it, the server resets (closing with
    unread data). Nothing the server sent is lost in the network: it is all on the client's side."""

    async def run(conn: ServerConn) -> None:
        for i in range(1, k + 1):
            req = await conn.next_request()
            if req is None:
                return
            await conn.settle(settle)
            await conn.answer(req, ordinary(req, extra=[("Connection", "close")] if i == k else []))
        deadline = time.monotonic() + 3
        while unsent_bytes(conn) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        # nginx resets only when unread requests sit in the socket: give a pipelining client (bounded) time to
        # have sent one past the limit, or the scenario would be a plain close whatever the timing of the run.
        deadline = time.monotonic() + 1
        while not conn.outstanding() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        conn.server.state.setdefault("unsent_at_rst", []).append(unsent_bytes(conn))  # type: ignore[union-attr]
        conn.server.state.setdefault("unanswered_at_close", []).append(conn.outstanding())  # type: ignore[union-attr]
        conn.reset()

    return run


# ------------------------------------------------------------------------------ out of step (integrity)

CACHEABLE = [("Cache-Control", "max-age=3600")]


def _stray(kind: str, req: Received) -> bytes:
    """One request's answer with one complete response too many after it, written as the faulty server would."""
    stray = response(200, content("/stray/777"), headers=[("Content-Type", "application/octet-stream"),
                                                          *CACHEABLE])
    if kind == "app":  # an application that writes a second response
        return ordinary(req, extra=CACHEABLE) + stray
    if kind == "204-body":  # a 204 (or 304) that carries a body, which is a whole response
        return response(204, headers=CACHEABLE, length=None) + stray
    if kind == "short-length":  # a Content-Length too short whose excess parses as a response
        body = content(req.path)
        return response(200, body + stray, headers=[("ETag", etag(req.path)), *CACHEABLE], length=len(body))
    raise ValueError(kind)


async def pipelined_batch(conn: ServerConn, settle: float) -> list[Received]:
    """What the client pipelines at once: the first request, then every one that arrives within ``settle`` s of it
    (empty if the client closed first)."""
    first = await conn.next_request()
    if first is None:
        return []
    await conn.settle(settle)
    reqs = [first]
    while conn.waiting():
        req = await conn.next_request()
        if req is None:
            break
        reqs.append(req)
    return reqs


def out_of_step(fault: str, at: str, settle: float = 0.05) -> Scenario:
    """The first connection waits for what the client pipelines, then writes every answer at once (as a server
    that has them ready does), with one fault at path ``at``: ``app``, ``204-body`` or ``short-length`` add
    one complete response after its answer; ``skip`` leaves it unanswered (later ones are answered, then the
    connection stays open and silent); ``skip-close`` the same, then closes. Later connections behave;
    every answer is cacheable, so a misattributed one would be stored under the wrong URL."""
    good = well_behaved(0.01, extra=CACHEABLE)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        reqs = await pipelined_batch(conn, settle)
        if not reqs:
            return
        wire = b""
        for req in reqs:
            if req.path != at:
                wire += ordinary(req, extra=CACHEABLE)
            elif fault.startswith("skip"):
                conn.server.state["skipped"] = req.path
            else:
                wire += _stray(fault, req)
        await conn.send(wire, completes=len(reqs))
        if fault == "skip-close":
            await conn.close()
        else:
            await conn.wait_client_close()

    return run


def twice_announcing_close(at: str, gap: float = 0.05, settle: float = 0.05) -> Scenario:
    """The first connection waits for what the client pipelines, then answers up to path ``at`` and writes ``at``'s
    answer a second time, with Connection: close, in one segment; the answers still owed follow ``gap`` s later (a
    segment of their own), then it closes. With ``at`` the last but one, that second copy lands in the last request's
    place with nothing owed after it. Later connections behave; every answer is cacheable."""
    good = well_behaved(0.01, extra=CACHEABLE)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        reqs = await pipelined_batch(conn, settle)
        if not reqs:
            return
        cut = next(i for i, r in enumerate(reqs) if r.path == at) + 1
        wire = b"".join(ordinary(r, extra=CACHEABLE) for r in reqs[:cut])
        await conn.send(wire + ordinary(reqs[cut - 1], extra=[*CACHEABLE, ("Connection", "close")]),
                        completes=cut + 1)
        await conn.hold(gap)
        await conn.send(b"".join(ordinary(r, extra=CACHEABLE) for r in reqs[cut:]), completes=len(reqs) - cut)
        await conn.close()

    return run


def swapped(settle: float = 0.05) -> Scenario:
    """The first connection waits for what the client pipelines, then writes every answer at once with the first two
    in each other's place (a server answering pipelined requests out of order), and stays open. Later connections
    behave."""
    good = well_behaved(0.01)

    async def run(conn: ServerConn) -> None:
        if conn.index > 0:
            return await good(conn)
        reqs = await pipelined_batch(conn, settle)
        if not reqs:
            return
        order = [1, 0, *range(2, len(reqs))] if len(reqs) > 1 else [0]
        await conn.send(b"".join(ordinary(reqs[i]) for i in order), completes=len(reqs))
        await conn.wait_client_close()

    return run
