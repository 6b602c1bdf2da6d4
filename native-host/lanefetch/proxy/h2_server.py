"""The helper's HTTP/2 server side of a terminated tunnel (an opted-in HTTPS site in Firefox, proxy mode).

Why: over HTTP/1.1 Firefox gives the helper at most six requests of an origin at a time (six tunnels, one request
each), so a page's wave of 20 requests reached the helper in four rounds, each an upstream round trip: over a 600 ms
link, nginx with h2, the first page was 0.82-1.00x the browser alone, which speaks h2 itself. Offered h2 by ALPN,
Firefox sends the whole wave at once on one tunnel and the helper's engine (pipelining or h2 upstream) takes it as
one batch.

Theory of operation: python-hyper's h2 (sans-I/O, server side) keeps the framing, HPACK and flow control; this thin
shell feeds it the browser's bytes and writes what it says. A stream's request is taken when it ended (headers, and
a body of at most MAX_BODY_BYTES, held whole as over HTTP/1.1); `answer` serves it (the proxy's one path for every
request) and writes the response through the stream's H2StreamOut, which waits for the browser's flow-control window
and the socket's drain, so the engine reads no faster than the browser takes. A stream the browser resets, or the
connection's end, cancels its fetch (`gone`).

A stream the browser resets before its answer began is just dropped (nothing failed). The browser's own GOAWAY
ends the connection at once (Firefox closes right after it, and h2 sends nothing after it). A request that fails
before its response began is refused (RST_STREAM REFUSED_STREAM: nothing was processed, RFC
9113 §8.7) and the connection is ended gracefully (GOAWAY NO_ERROR with the last stream id seen, every stream at or
below it still answered): Firefox then retries on a new tunnel, as after an HTTP/1.1 tunnel the helper closed
unanswered, and for an origin whose certificate the engine rejected that CONNECT is closed unanswered so Firefox
fails over to a direct connection. The GOAWAY frame is written here, not by h2: after its own GOAWAY h2's connection
state closes and it sends nothing more (python-hyper/h2 issue 1181), which would cut the streams still being
answered."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import H2Error, ProtocolError
from h2.settings import SettingCodes, Settings
from hyperframe.frame import GoAwayFrame

from ..engine.exchange import HOP_BY_HOP_RESPONSE, DeliveredHead
from ..engine.fields import Headers
from .request_reader import MAX_BODY_BYTES, RequestHead

log = logging.getLogger("lanefetch.proxy")

READ_SIZE = 64 * 1024
MAX_STREAMS = 128  # Firefox opens no more at once; a page's requests beyond it wait in Firefox's queue


# -- pure: the browser's request fields in, the origin's response fields out ----------------------------------------

@dataclass(frozen=True)
class H2Request:
    """One stream's request as the proxy takes it, or why it cannot be taken (`refusal`: status, message)."""

    head: RequestHead | None
    refusal: tuple[int, str] | None = None


def request_head(fields: list[tuple[bytes, bytes]], authority: str) -> H2Request:
    """The request of a stream whose fields h2 already checked (pseudo-fields present and first, names lower case).
    Only https requests for the authority this tunnel was opened and certified for; Cookie crumbs joined into one
    field (RFC 9113 §8.2.3: the engine may send it over HTTP/1.1); the target absolute, as the proxy's other
    requests."""
    pseudo: dict[str, str] = {}
    headers: Headers = []
    cookies: list[str] = []
    for k, v in fields:
        name, value = k.decode("latin-1"), v.decode("latin-1")
        if name.startswith(":"):
            pseudo[name] = value
        elif name == "cookie":
            cookies.append(value)
        else:
            headers.append((name, value))
    if cookies:
        headers.append(("cookie", "; ".join(cookies)))
    method = pseudo.get(":method", "")
    if method == "CONNECT":
        return H2Request(None, (501, "CONNECT inside a tunnel is not taken by the helper's proxy"))
    given = pseudo.get(":authority", "").lower()
    if pseudo.get(":scheme") != "https" or given not in (authority, f"{authority}:443"):
        return H2Request(None, (421, f"this connection serves {authority} only"))
    path = pseudo.get(":path", "")
    if not path.startswith("/"):
        return H2Request(None, (400, "the request's :path must start with /"))
    headers.insert(0, ("host", given))
    return H2Request(RequestHead(method, f"https://{authority}{path}", "2", headers))


def response_fields(head: DeliveredHead) -> list[tuple[str, str]]:
    """The origin's response head as HTTP/2 fields: status first, names lower case, the HTTP/1.1 connection's own
    fields (exchange.HOP_BY_HOP_RESPONSE, as the engine's delivered heads, and any the Connection field names) left
    out, since h2 refuses to send them (RFC 9113 §8.2.2), values trimmed of SP and HTAB (h2 refuses them around a
    value; str.strip() would take NBSP and other bytes of the origin's too). Sent as octets (`octets`)."""
    named = {t.strip().lower() for k, v in head.headers if k.lower() == "connection" for t in v.split(",")}
    out = [(":status", str(head.status))]
    for name, value in head.headers:
        lname = name.lower()
        if lname in HOP_BY_HOP_RESPONSE or lname in named or not lname:
            continue
        out.append((lname, value.strip(" \t")))
    return out


def trailer_fields(trailers: Headers) -> list[tuple[str, str]]:
    return [(k.lower(), v.strip(" \t")) for k, v in trailers
            if k.lower() not in HOP_BY_HOP_RESPONSE and not k.startswith(":")]


def octets(fields: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Fields as the bytes they came as: the engine holds each byte of a field as one latin-1 character (and the
    HTTP/1.1 side writes them back so), while h2 encodes a str as UTF-8: a raw UTF-8 Location (/café, c3 a9) reached
    Firefox as c3 83 c2 a9, another URL."""
    return [(k.encode("latin-1", errors="replace"), v.encode("latin-1", errors="replace")) for k, v in fields]


def bodiless(method: str, status: int) -> bool:
    return method == "HEAD" or status in (204, 304) or status < 200


# -- the asyncio shell ----------------------------------------------------------------------------------------------

class H2StreamOut:
    """Where one stream's response goes. Each write raises ConnectionResetError once the browser reset the stream
    or the connection ended (the proxy's responder then cancels the fetch)."""

    def __init__(self, conn: H2BrowserConnection, stream_id: int, method: str) -> None:
        self._conn = conn
        self.stream_id = stream_id
        self.method = method
        self.ended = False
        self.closed = False  # reset by the browser, or the connection is gone
        self._gone: Callable[[], None] | None = None

    def watch(self, gone: Callable[[], None]) -> None:
        """Call `gone` when the browser gives up on this response."""
        self._gone = gone
        if self.closed:
            gone()

    def lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._gone is not None:
            self._gone()

    def _check(self) -> None:
        if self.closed:
            raise ConnectionResetError(f"stream {self.stream_id} reset by the browser")

    async def head(self, head: DeliveredHead) -> None:
        self._check()
        end = head.status >= 200 and bodiless(self.method, head.status)
        self._conn.h2(lambda c: c.send_headers(self.stream_id, octets(response_fields(head)), end_stream=end))
        self.ended = end
        await self._conn.drain()

    async def body(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self._check()
            if self.ended:
                return  # a HEAD's, 204's or 304's body: none goes out
            window = self._conn.window(self.stream_id)
            if window <= 0:
                await self._conn.window_opened()
                continue
            chunk = bytes(view[:window])
            self._conn.h2(functools.partial(H2Connection.send_data, stream_id=self.stream_id, data=chunk))
            view = view[window:]
        await self._conn.drain()

    async def end(self, trailers: Headers) -> None:
        self._check()
        if not self.ended:
            fields = trailer_fields(trailers)
            if fields:
                self._conn.h2(lambda c: c.send_headers(self.stream_id, octets(fields), end_stream=True))
            else:
                self._conn.h2(lambda c: c.end_stream(self.stream_id))
            self.ended = True
        await self._conn.drain()

    async def respond(self, status: int, message: str) -> None:
        """A whole answer of the proxy itself (421, 413, 501 …), its body as the flow-control windows allow; to a
        HEAD the head alone (a client counts DATA there against content-length 0: a connection error in h2's)."""
        body = (message + "\n").encode()
        self._check()
        end = bodiless(self.method, status)
        self._conn.h2(lambda c: c.send_headers(self.stream_id, [
            (":status", str(status)), ("content-type", "text/plain; charset=utf-8"),
            ("content-length", str(len(body)))], end_stream=end))
        self.ended = end
        await self.body(body)
        await self.end([])

    def refuse(self) -> None:
        """Nothing of this request was processed: the browser may send it again (on a new connection)."""
        if not self.closed and not self.ended:
            self._conn.h2(lambda c: c.reset_stream(self.stream_id, ErrorCodes.REFUSED_STREAM))
            self.closed = True


@dataclass
class _Incoming:
    head: RequestHead | None
    refusal: tuple[int, str] | None
    body: bytearray = field(default_factory=bytearray)
    has_body: bool = False
    method: str = "GET"  # as the browser sent it, for a refusal too (a HEAD's has no body)


# What answers a request: True when its response was begun (False: it failed before it, see the module's doc).
Answer = Callable[[RequestHead, bytes | None, H2StreamOut], Awaitable[bool]]


class H2BrowserConnection:
    """One browser connection that chose h2: reads its streams, answers each by `answer`, until the browser closes it
    or, after a graceful GOAWAY, its last stream is answered."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authority: str,
                 answer: Answer) -> None:
        self._reader = reader
        self._writer = writer
        self._authority = authority
        self._answer = answer
        self._h2 = H2Connection(H2Configuration(client_side=False, header_encoding=None))
        self._h2.local_settings = Settings(client=False, initial_values={
            SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS, SettingCodes.ENABLE_PUSH: 0})
        self._incoming: dict[int, _Incoming] = {}
        self._streams: dict[int, H2StreamOut] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._opened = asyncio.Event()
        self._last_stream: int | None = None  # set once this side sent its GOAWAY
        self._browser_left = False  # its GOAWAY came
        self._held = 0  # request body bytes of the streams being answered (MAX_BODY_BYTES with those arriving)
        self._over = False

    # -- used by the streams --

    def h2(self, step: Callable[[H2Connection], object]) -> None:
        """Run one h2 call and write what it produced; a closed stream or connection reads as the browser gone."""
        if self._over:
            raise ConnectionResetError("the browser's connection ended")
        try:
            step(self._h2)
        except H2Error as e:
            raise ConnectionResetError(f"h2: {e}") from None
        self._send()

    def window(self, stream_id: int) -> int:
        try:
            return min(self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size)
        except H2Error as e:
            raise ConnectionResetError(f"h2: {e}") from None

    async def window_opened(self) -> None:
        if self._over:
            raise ConnectionResetError("the browser's connection ended")
        opened = self._opened
        await opened.wait()

    async def drain(self) -> None:
        await self._writer.drain()

    def _send(self) -> None:
        data = self._h2.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)

    def _wake(self) -> None:
        self._opened.set()
        self._opened = asyncio.Event()

    # -- the connection --

    async def serve(self) -> None:
        self._h2.initiate_connection()
        self._send()
        try:
            while not self._done():
                data = await self._reader.read(READ_SIZE)
                if not data:
                    break
                try:
                    events = self._h2.receive_data(data)
                except ProtocolError as e:
                    log.debug("browser h2 connection ended: %s", e)
                    with contextlib.suppress(H2Error):
                        self._h2.close_connection(ErrorCodes.PROTOCOL_ERROR)
                    self._send()
                    break
                for ev in events:
                    try:
                        self._event(ev)
                    except H2Error as e:  # a stream h2 already closed (a reset crossing ours): that event only
                        log.debug("browser h2 event %s not taken: %s", type(ev).__name__, e)
                self._send()
                try:
                    # Read on only once the browser takes what was written: h2's own answers (PING and SETTINGS
                    # acknowledgements) to a client that never reads would otherwise pile up here without bound.
                    await self._writer.drain()
                except ConnectionError:
                    break
                if self._browser_left:
                    break
        finally:
            self._over = True
            for out in list(self._streams.values()):
                out.lost()
            self._wake()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _done(self) -> bool:
        return self._last_stream is not None and not self._streams and not self._incoming

    def _event(self, ev: object) -> None:
        if isinstance(ev, RequestReceived) and ev.stream_id is not None:
            if self._last_stream is not None and ev.stream_id > self._last_stream:
                self._h2.reset_stream(ev.stream_id, ErrorCodes.REFUSED_STREAM)  # after our GOAWAY: not processed
                return
            fields = list(ev.headers or [])
            taken = request_head(fields, self._authority)
            method = next((v.decode("latin-1") for k, v in fields if k == b":method"), "GET")
            self._incoming[ev.stream_id] = _Incoming(taken.head, taken.refusal, method=method)
            if ev.stream_ended is not None:
                self._start(ev.stream_id)
        elif isinstance(ev, DataReceived) and ev.stream_id is not None:
            self._h2.acknowledge_received_data(ev.flow_controlled_length or 0, ev.stream_id)
            incoming = self._incoming.get(ev.stream_id)
            if incoming is not None:
                incoming.has_body = True
                incoming.body += ev.data or b""
                # Bodies are held whole (as over HTTP/1.1), at most MAX_BODY_BYTES on the whole connection at once:
                # one HTTP/1.1 connection holds one body at a time, an h2 one may have MAX_STREAMS on their way.
                held = self._held + sum(len(i.body) for i in self._incoming.values())
                if held > MAX_BODY_BYTES and incoming.refusal is None:
                    # Answered now and the rest refused (RST_STREAM NO_ERROR once answered, RFC 9113 §8.1), as
                    # over HTTP/1.1 the connection closes with such a body unread.
                    incoming.refusal = (413, "request body too large for the helper's proxy")
                    incoming.body.clear()
                    self._start(ev.stream_id, reset_after=True)
                    return
                if incoming.refusal is not None:
                    incoming.body.clear()
            if ev.stream_ended is not None:
                self._start(ev.stream_id)
        elif isinstance(ev, StreamEnded) and ev.stream_id is not None:
            if ev.stream_id in self._incoming:
                self._start(ev.stream_id)
        elif isinstance(ev, StreamReset) and ev.stream_id is not None:
            self._incoming.pop(ev.stream_id, None)
            out = self._streams.pop(ev.stream_id, None)
            if out is not None:
                out.lost()
                self._wake()
        elif isinstance(ev, WindowUpdated | RemoteSettingsChanged):
            self._wake()
        elif isinstance(ev, ConnectionTerminated):
            # The browser is leaving (Firefox closes right after its GOAWAY); h2 sends nothing after it either.
            self._browser_left = True

    def _start(self, stream_id: int, *, reset_after: bool = False) -> None:
        incoming = self._incoming.pop(stream_id, None)
        if incoming is None or stream_id in self._streams:
            return
        out = H2StreamOut(self, stream_id, incoming.method)
        self._streams[stream_id] = out
        if incoming.refusal is not None or incoming.head is None:
            status, message = incoming.refusal or (400, "bad request")
            self._spawn(self._refuse_stream(out, status, message, reset_after))
            return
        body = bytes(incoming.body) if incoming.has_body else None
        self._spawn(self._serve_stream(incoming.head, body, out))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refuse_stream(self, out: H2StreamOut, status: int, message: str, reset_after: bool) -> None:
        try:
            await out.respond(status, message)
            if reset_after and not out.closed:
                self.h2(lambda c: c.reset_stream(out.stream_id, ErrorCodes.NO_ERROR))  # send no more of it
        except ConnectionResetError:
            pass
        finally:
            self._finished(out)

    def _finished(self, out: H2StreamOut) -> None:
        self._streams.pop(out.stream_id, None)
        if self._done():
            self._writer.close()  # the read loop sees the end

    async def _serve_stream(self, head: RequestHead, body: bytes | None, out: H2StreamOut) -> None:
        held = len(body or b"")
        self._held += held
        try:
            begun = await self._answer(head, body, out)
            if out.closed:
                pass  # the browser reset it (or left): nothing to refuse, the connection serves on
            elif not begun and not self._over:
                out.refuse()
                self._goaway()
            elif not out.ended and not out.closed and not self._over:
                # The fetch failed after its response began: that stream alone is cut.
                self.h2(lambda c: c.reset_stream(out.stream_id, ErrorCodes.INTERNAL_ERROR))
        except ConnectionResetError:
            pass
        except Exception:  # a bug must cut this stream only, never leave it hanging
            log.exception("proxied h2 stream %d failed", out.stream_id)
            with contextlib.suppress(ConnectionResetError):
                if not out.ended and not out.closed and not self._over:
                    self.h2(lambda c: c.reset_stream(out.stream_id, ErrorCodes.INTERNAL_ERROR))
        finally:
            self._held -= held
            self._finished(out)

    def _goaway(self) -> None:
        """No new streams: those at or below the highest one seen are still answered (module doc)."""
        if self._last_stream is not None or self._over:
            return
        self._last_stream = self._h2.highest_inbound_stream_id
        self._send()
        if not self._writer.is_closing():
            self._writer.write(GoAwayFrame(0, last_stream_id=self._last_stream, error_code=0).serialize())
        if self._done():
            self._writer.close()
