"""Sans-I/O client side of one HTTP/2 connection (RFC 9113), built on python-hyper's h2 for framing and HPACK.

It has the same contract as pipeline.py, so the asyncio shell (h2_connection.py) and the exchanges see one kind
of event whichever protocol carries a request: requests go in (`send`), bytes come in (`receive`,
`receive_eof`), events come out, and `data_to_send()` is what the shell writes.

- **Streams, not a pipeline.** Every request is its own stream, opened at once while the peer's
  SETTINGS_MAX_CONCURRENT_STREAMS allows (`can_open`; 100 until its SETTINGS arrive, the floor RFC 9113
  recommends). Each answer is tied to its request by the stream id, never by order: ResponseStarted is never
  `held`, and nothing here needs pipeline.py's sync points.
- **Events.** ResponseStarted (a ResponseHead with http_version "2" and the fields without pseudo-headers),
  ResponseBody, ResponseComplete as in pipeline.py; a stream refused (RST_STREAM REFUSED_STREAM: the server
  did not process it, RFC 9113 §8.7) or above a graceful GOAWAY's last stream id comes back as StreamsReturned to
  be sent again (those at or below it are still read: GOAWAY frames are parsed here, never given to h2, which
  would stop reading); any other reset ends that request alone (StreamFailed); an error GOAWAY, a connection
  error or close ends them all (ConnectionEnded, GET/HEAD to retry, others failed, as pipeline.py does).
- **Flow control.** Stream windows are WINDOW (16 MiB): the 64 KiB default caps a stream at 64 KiB per round
  trip (under 1 Mbit/s at 600 ms). The connection window is what keeps the server's outstanding bytes near
  `cap`, which the shell sets from the origin's delivery rate and round trip (receive_window.py; WINDOW until
  those are known, or on a link too short to overflow a queue). Each stream's window is opened by a WINDOW_UPDATE sent
  with its HEADERS, not by SETTINGS_INITIAL_WINDOW_SIZE: h2 applies our SETTINGS only once the server
  acknowledges them, and a server that never does (but uses the window, as it may) would otherwise overrun the
  64 KiB h2 still expects and end the connection (FLOW_CONTROL_ERROR). Received data is acknowledged only when the
  shell says the sink took it (`consumed`), so a slow consumer still slows the server down (backpressure); the
  connection's share is returned whether or not its stream is still open (a stream's last DATA is consumed after
  it ended), h2's own window managers are not used.
- **Answered early.** A server may answer before it has read the request body (a 413, RFC 9113 §8.1): when a
  response ends while our body is still going out, we stop sending it and reset our side (RST_STREAM NO_ERROR),
  or h2 would count the half-closed stream against the server's stream limit forever (`_stop_upload`). A request
  whose sending raises goes back alone, as not processed (`Sent.returned`), never taking the batch or the
  connection with it.
- **The peer's SETTINGS.** Until the server's first SETTINGS arrive its stream limit is not known, and a stream
  it refuses for being over the limit is sent again only if it is a GET or HEAD; so a request that may not be
  sent twice waits for them (`may_open`), the rest go at once. A limit of 0 with none of our streams open
  (`refuses_streams`) is a connection that can take nothing until the server raises it; how long that is waited
  for is the shell's matter (h2_connection.py).
- **Malformed responses** (a bad or missing :status, a pseudo-header other than :status, an upper-case or
  connection-specific field, CR/LF/NUL in a value, a content-length that is not one number, DATA beyond or short
  of the content-length or before the response's head, an informational response that ends the stream or comes
  after the final one, trailers that do not end it) end that stream alone (RST_STREAM PROTOCOL_ERROR, RFC 9113
  §8.1.1), not the connection: h2 makes any of them a connection error, which would take every other stream with
  it again and again on each new connection. So its header validation is off, its streams are `_LenientStream`s
  (no content-length of their own; the stream-state errors reported, not raised), and the session checks heads
  (`_malformed`) and DATA (`_data_refused`, before h2 sees the frame; frames go to h2 one at a time) itself.
  DATA for a stream already closed (one we reset, or cancelled) is still counted against the connection window
  (`_closed_stream_data`): h2 says nothing of it but hands it back with a WINDOW_UPDATE of its own, which the cap
  counts as granted.
- **Priority.** Requests carry RFC 9218's `priority` field (urgency from the request's type and priority,
  request.py `urgency`; images and media incremental) AND an RFC 7540 priority in their HEADERS (a weight from
  the urgency, `tree_weight`, and an exclusive dependency on the last open stream as urgent or more, `tree_parent`:
  one chain in urgency order, as Chromium sends), because that is what servers act on: nginx 1.22
  and Apache 2.4 ignore RFC 9218 and honour the tree (measured: tests/bench/h2_priority.py, docs/architecture.md).
  The shell hands requests over in the pool's priority order, so render-blocking streams are also opened first.
- **Data as it arrives.** What arrived of a DATA frame still arriving is handed to h2 as a DATA frame of its own
  (`_data_so_far`), so a response's first kilobytes are not held until the end of a large frame that a slow
  start delivers over two round trips (h2 hands out a frame's data only whole; Chromium's framer does not wait).
- **RTT.** A PING goes out with the preface and whenever the shell asks (`ping`); its ACK gives `rtt`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    InformationalResponseReceived,
    PingAckReceived,
    PushedStreamReceived,
    RemoteSettingsChanged,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
)
from h2.exceptions import H2Error
from h2.settings import SettingCodes
from h2.stream import H2Stream, StreamClosedBy
from h2.utilities import is_informational_response

from .body_stall import StreamWait, starved_streams
from .fields import Headers
from .pipeline import PIPELINABLE_METHODS, ConnectionEnded, ResponseBody, ResponseComplete, ResponseStarted
from .receive_window import ReceiveWindow
from .response_parser import MAX_HEAD_BYTES, Framing, ResponseHead

T = TypeVar("T")

WINDOW = 16 * 1024 * 1024  # per stream and per connection: a 10 Mbit/s × 600 ms link needs 750 KB in flight
# hpack logs every header field it codes, with its value, at DEBUG: cookies and Authorization would be written to
# the helper's DEBUG log (LANEFETCH_LOG=DEBUG). That log never holds them: hpack says only what goes wrong.
logging.getLogger("hpack").setLevel(logging.INFO)

_DATA, _RST_STREAM, _GOAWAY = 0x0, 0x3, 0x7  # frame types
_END_STREAM, _PADDED = 0x1, 0x8  # DATA frame flags
STREAMS_BEFORE_SETTINGS = 100  # RFC 9113 §6.5.2: a server should allow at least 100 concurrent streams
_NO_LIMIT = 2**31  # h2 reports "unlimited" (no SETTINGS yet) as 2**32 + 1

# Fields that belong to an HTTP/1.1 connection and are malformed in HTTP/2 (RFC 9113 §8.2.2).
_CONNECTION_FIELDS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "te",
     "content-length", "trailer", "proxy-authorization"}
)


@dataclass(frozen=True)
class H2Request(Generic[T]):
    token: T
    method: str
    scheme: str
    authority: str
    path: str
    headers: Headers
    body: bytes | None = None
    urgency: int = 3  # RFC 9218 u=0..7, lower first
    incremental: bool = False


@dataclass(frozen=True)
class StreamsReturned(Generic[T]):
    """These requests were not processed by the server (refused, or above a GOAWAY's last stream id) and the
    connection lives on: `retry` may be
    sent again (GET/HEAD), `failed` must not be."""

    reason: str
    retry: list[T] = field(default_factory=list)
    failed: list[T] = field(default_factory=list)


@dataclass(frozen=True)
class StreamFailed(Generic[T]):
    """The server reset this request's stream (not a refusal): it ends with an error."""

    token: T
    reason: str


@dataclass(frozen=True)
class Sent(Generic[T]):
    """What `send` did: the streams it opened, as (request, stream id, streams open then, this one included), and
    the requests it could not send (None if none)."""

    streams: list[tuple[H2Request[T], int, int]]
    returned: StreamsReturned[T] | None = None


H2Event = (ResponseStarted[T] | ResponseBody[T] | ResponseComplete[T] | StreamsReturned[T] | StreamFailed[T]
           | ConnectionEnded[T])


@dataclass
class _Stream(Generic[T]):
    token: T
    method: str
    position: int
    body: bytes = b""  # request body not yet sent (waits for the peer's flow-control window)
    uploading: bool = False  # our END_STREAM not sent yet (a request body still going out)
    head: ResponseHead | None = None
    framing: Framing = Framing.LENGTH
    trailers: Headers = field(default_factory=list)
    wire_bytes: int = 0
    expected: int | None = None  # the response's content-length (0 for HEAD), once its head arrived
    data_bytes: int = 0  # DATA payload received so far
    unreturned: int = 0  # stream window taken by DATA the sink consumed, not yet handed back
    urgency: int = 3  # RFC 9218 urgency it was sent with (its place in the priority chain: tree_parent)
    progress: float = 0.0  # when it was sent or anything of its answer last came (body_stall.starved_streams)


class _LenientStream(H2Stream):
    """An h2 stream that leaves a malformed response to the session, as a stream error: h2 raises a connection
    error for each of these (RFC 9113 makes them stream errors, §8.1.1). Content-length is not tracked (the
    session checks it, `_data_refused` and StreamEnded), and an informational response with END_STREAM or
    trailers without it are reported in `malformed` (stream id -> why, shared with the connection) instead of
    raised: the header block is still decoded, so HPACK's table stays in step with the server's. Trailers without
    END_STREAM, and an informational response after the final one, are given to h2 as trailers with it (h2
    accepts no other way), so h2 holds the stream closed while the server may not: the session then writes that
    stream's RST_STREAM itself (`_closed_by_our_reset`)."""

    malformed: dict[int, tuple[str, bool]]  # stream id -> (why, closed for h2 only)

    def _initialize_content_length(self, headers: object) -> None:
        self._expected_content_length = None

    def receive_headers(self, headers: Any, end_stream: bool,
                        header_encoding: bool | str | None) -> tuple[list[Any], list[Any]]:
        fields = list(headers)
        informational = is_informational_response(fields)
        if informational and self.state_machine.headers_received:
            self.malformed[self.stream_id] = ("an informational response (1xx) after the final one", not end_stream)
            fields = [(k, v) for k, v in fields if k not in (b":status", ":status")]
            end_stream = True  # h2 sees trailers as they must be; the session fails the stream
        elif informational and end_stream:
            self.malformed[self.stream_id] = ("an informational response (1xx) that ends the stream", False)
            end_stream = False  # h2 sees an interim response; the session resets the stream
        elif not informational and self.state_machine.headers_received and not end_stream:
            self.malformed[self.stream_id] = ("trailers that do not end the stream", True)
            end_stream = True  # h2 sees trailers as they must be; the session fails the stream
        return super().receive_headers(fields, end_stream, header_encoding)


class _H2Client(H2Connection):
    """h2's connection whose streams are `_LenientStream`s."""

    def __init__(self, config: H2Configuration) -> None:
        super().__init__(config)
        self.malformed: dict[int, tuple[str, bool]] = {}  # stream id -> (why, closed for h2 only): _LenientStream

    def _begin_new_stream(self, stream_id: int, allowed_ids: Any) -> H2Stream:
        s = super()._begin_new_stream(stream_id, allowed_ids)
        # h2 builds its H2Stream itself (no factory to pass): the stream becomes the subclass, which adds
        # behaviour and no state of its own beyond the shared report.
        s.__class__ = _LenientStream
        cast(_LenientStream, s).malformed = self.malformed
        return s


class H2Session(Generic[T]):
    def __init__(self, window: int = WINDOW) -> None:
        # validate_inbound_headers off: malformed heads are checked here (_malformed), as stream errors.
        self._h2 = _H2Client(H2Configuration(client_side=True, header_encoding=None,
                                             validate_inbound_headers=False))
        self._window = window
        self._received = ReceiveWindow()  # the connection window (receive_window.py)
        self.cap = window  # the shell's cap on the server's outstanding bytes; WINDOW: none to speak of
        self._streams: dict[int, _Stream[T]] = {}
        self._by_token: dict[T, int] = {}  # token -> stream id (exchanges hash by identity)
        self._pings: dict[bytes, float] = {}
        self._inbuf = bytearray()  # received bytes not yet a whole frame
        self._own_frames = b""  # frames written here, not by h2 (_reset_by_hand), sent after h2's
        self.requests_sent = 0
        self.responses_completed = 0
        self.closing = False  # no new stream may be opened (GOAWAY received or sent)
        self.ended = False
        self.peer_settings = False  # the server's first SETTINGS arrived: its stream limit is known
        self.settings_changed = 0  # counts the server's SETTINGS frames (the shell wakes its sender on one)
        self.rtt: float | None = None  # the last PING round trip, seconds

    # -- set-up and sending ----------------------------------------------------------------------------------

    def start(self, at: float = 0.0) -> None:
        """The connection preface: our SETTINGS (no push, a header list up to MAX_HEAD_BYTES), the connection
        window up to `cap`, a PING. Stream windows are opened per stream as it is (send)."""
        self._h2.initiate_connection()
        # A response head as large as the HTTP/1.1 path takes (MAX_HEAD_BYTES, 256 KiB: what Chromium advertises
        # and enforces, kSpdyMaxHeaderListSize). h2's decoder otherwise stops at 64 KiB, a connection error (HPACK
        # cannot skip a block) that took every other stream with it, on each new connection again. In force at
        # once: the server may send before it acknowledges our SETTINGS.
        self._h2.update_settings({SettingCodes.ENABLE_PUSH: 0, SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEAD_BYTES})
        self._h2.decoder.max_header_list_size = MAX_HEAD_BYTES
        self._grant()
        self.ping(at)

    def ping(self, at: float) -> None:
        """Measure a round trip (its ACK sets `rtt`); one PING out at a time."""
        if self._pings or self.ended:
            return
        payload = os.urandom(8)
        self._pings[payload] = at
        self._h2.ping(payload)

    def stream_limit(self) -> int:
        limit = self._h2.remote_settings.max_concurrent_streams
        return STREAMS_BEFORE_SETTINGS if limit >= _NO_LIMIT else limit

    def can_open(self) -> bool:
        return not self.closing and not self.ended and len(self._streams) < self.stream_limit()

    def stream_room(self) -> int:
        """Streams the peer's limit leaves room for now (0 at or over it: a limit lowered under our open ones)."""
        return max(0, self.stream_limit() - len(self._streams))

    def refuses_streams(self) -> bool:
        """The server's SETTINGS allow no stream at all (SETTINGS_MAX_CONCURRENT_STREAMS 0) and none of ours is
        open: nothing can be sent here until it raises the limit (RFC 9113 §5.1.2: it should hold 0 only briefly),
        and nothing here is being answered."""
        return self.peer_settings and not self.ended and not self._streams and self.stream_limit() == 0

    def may_open(self, method: str) -> bool:
        """May a request with this method go now? One not sent again when refused waits for the server's SETTINGS."""
        return self.can_open() and (method in PIPELINABLE_METHODS or self.peer_settings)

    def open_streams(self) -> int:
        return len(self._streams)

    def open_tokens(self) -> list[T]:
        """The requests whose streams are open (sent, not yet answered to their end)."""
        return list(self._by_token)

    def carries(self, token: T) -> bool:
        return token in self._by_token

    def send(self, requests: list[H2Request[T]], at: float = 0.0) -> Sent[T]:
        """Open a stream per request, most urgent first, while the peer's limit allows; returns what was sent as
        (request, stream id, streams open then, this one included), and what could not be. Requests beyond the
        limit are not sent (the shell takes only what `can_open` allows, so none should be). A request whose
        sending raises (a field h2 will not encode, a stream limit h2 counts differently from us) goes back alone,
        as not processed (`Sent.returned`: GET/HEAD to send again, others failed): the other requests of the batch
        still go, and the connection lives on."""
        sent: list[tuple[H2Request[T], int, int]] = []
        refused: list[H2Request[T]] = []
        why = ""
        for req in sorted(requests, key=lambda r: r.urgency):  # stable: the pool's order within one urgency
            if not self.can_open():
                break
            try:
                sid = self._open(req, at)
            except Exception as e:  # any: a taken request must be answered, whatever went wrong with it
                refused.append(req)
                why = f"the request could not be sent on this HTTP/2 connection ({type(e).__name__}: {e})"
                continue
            sent.append((req, sid, len(self._streams)))
        self._send_bodies()
        returned = None
        if refused:
            returned = StreamsReturned(
                why,
                retry=[r.token for r in refused if r.method in PIPELINABLE_METHODS],
                failed=[r.token for r in refused if r.method not in PIPELINABLE_METHODS],
            )
        return Sent(sent, returned)

    def _open(self, req: H2Request[T], at: float = 0.0) -> int:
        """Send req's HEADERS on a new stream (its body follows in _send_bodies); returns the stream id."""
        headers = _wire_headers(req)
        sid = self._h2.get_next_available_stream_id()
        self._h2.send_headers(sid, headers, end_stream=not req.body,
                              priority_weight=tree_weight(req.urgency),
                              priority_depends_on=tree_parent(req.urgency, self._open_urgencies()),
                              priority_exclusive=True)
        initial = self._h2.local_settings.initial_window_size
        if self._window > initial:
            self._h2.increment_flow_control_window(self._window - initial, sid)
        self.requests_sent += 1
        self._streams[sid] = _Stream(req.token, req.method, self.requests_sent, req.body or b"",
                                     uploading=bool(req.body), urgency=req.urgency, progress=at)
        self._by_token[req.token] = sid
        return sid

    def _open_urgencies(self) -> list[tuple[int, int]]:
        """(stream id, urgency) of the open streams, in the order they were opened."""
        return [(sid, st.urgency) for sid, st in self._streams.items()]

    def cancel(self, token: T) -> None:
        """We no longer want this answer: reset its stream (CANCEL) and forget it; what still arrives for it is
        acknowledged and dropped."""
        sid = self._by_token.pop(token, None)
        if sid is None or self.ended:
            return
        del self._streams[sid]
        with contextlib.suppress(H2Error):  # already closed on the wire: nothing to reset
            self._h2.reset_stream(sid, ErrorCodes.CANCEL)

    def consumed(self, token: T, nbytes: int) -> None:
        """The sink took nbytes of this stream's body: hand that much window back to the server (the
        connection's as `cap` allows, the stream's if it is still open)."""
        sid = self._by_token.get(token)
        self._ack(nbytes, sid)

    def starved(self, at: float, stall_timeout: float) -> ConnectionEnded[T] | None:
        """Streams that got nothing of their answers for a stall while the connection lives (body_stall.
        starved_streams): each reset (CANCEL) and handed back, GET/HEAD to be asked again (a retry counted: the
        server may have processed them), others to fail; and the connection takes no new stream (GOAWAY), so the
        pool asks them on a new one while the other streams finish here. None when no stream is starved."""
        if self.ended or not self._streams:
            return None
        waits = [StreamWait(sid, (s.urgency, sid), s.progress) for sid, s in self._streams.items() if not s.uploading]
        ids = starved_streams(at, waits, stall_timeout, self._received.granted > 0)
        if not ids:
            return None
        streams = [s for sid in ids if (s := self._forget(sid)) is not None]
        for sid in ids:
            with contextlib.suppress(H2Error):  # already closed on the wire: nothing to reset
                self._h2.reset_stream(sid, ErrorCodes.CANCEL)
        self.close()
        return ConnectionEnded(
            f"no answer on its HTTP/2 stream for {stall_timeout:g} s while the connection lived", None,
            retry=[s.token for s in streams if s.method in PIPELINABLE_METHODS],
            failed=[s.token for s in streams if s.method not in PIPELINABLE_METHODS],
            partial=[s.token for s in streams if s.method in PIPELINABLE_METHODS and s.head is not None],
        )

    def close(self) -> None:
        """Ask the server to end the connection gracefully (GOAWAY, NO_ERROR): no new streams."""
        if not self.ended:
            self.closing = True
            self._h2.close_connection()

    def data_to_send(self) -> bytes:
        out = bytes(self._h2.data_to_send()) + self._own_frames
        self._own_frames = b""
        return out

    def _reset_by_hand(self, sid: int) -> None:
        """RST_STREAM PROTOCOL_ERROR for a stream h2 holds closed and the server open (_LenientStream)."""
        self._own_frames += (4).to_bytes(3, "big") + bytes([_RST_STREAM, 0]) + sid.to_bytes(4, "big") + \
            int(ErrorCodes.PROTOCOL_ERROR).to_bytes(4, "big")

    # -- receiving -----------------------------------------------------------------------------------------

    def receive(self, data: bytes, at: float = 0.0) -> list[H2Event[T]]:
        if self.ended:
            return []
        self._inbuf += data
        out: list[H2Event[T]] = []
        for piece in self._frames():
            if isinstance(piece, tuple):
                out.extend(self._goaway(*piece))
            elif (refused := self._data_refused(piece)) is not None:
                out.append(refused)
            else:
                out.extend(self._receive_frames(piece, at))
            if self._over():
                return out
        self._send_bodies()
        if self.closing and not self._streams:
            out.append(self._end("the server ended the connection (GOAWAY) and every stream it kept is answered"))
        return out

    def _data_refused(self, frame: bytes) -> StreamFailed[T] | None:
        """A DATA frame before its stream's response head, or one that takes its stream past its content-length
        or ends it short: that response is malformed, a stream error (RFC 9113 §8.1.1). Checked here, before h2
        sees the frame, because h2 raises it as a connection error. The frame is not given to h2: its bytes go back
        to the connection window at once (h2 then counts that many more than the server does, which only makes it
        lenient)."""
        if len(frame) < 9 or frame[3] != _DATA:
            return None
        sid = int.from_bytes(frame[5:9], "big") & 0x7FFFFFFF
        s = self._streams.get(sid)
        if s is None:
            return None
        length = int.from_bytes(frame[0:3], "big")
        if s.head is None:
            why = "DATA before the response's head"
        else:
            if s.expected is None:
                return None
            padded = bool(frame[4] & _PADDED) and length > 0
            data = length - (1 + frame[9] if padded else 0)
            ends = bool(frame[4] & _END_STREAM)
            if s.data_bytes + data <= s.expected and not (ends and s.data_bytes + data < s.expected):
                return None
            why = f"content-length {s.expected}, DATA {'ended at' if ends else 'went past it to'} {s.data_bytes + data}"
        self._received.received(length)  # h2 never sees it: its own window stays that much more lenient
        self._ack(length, None)
        return self._malformed_stream(sid, why)

    def _over(self) -> bool:
        return self.ended  # a method: mypy would otherwise keep `ended` narrowed to False across the loop

    def _frames(self) -> list[bytes | tuple[int, int]]:
        """Split what arrived at frame boundaries: each frame for h2 on its own (so a stream error h2 raises is
        known to be that frame's: _receive_frames), and each GOAWAY as (last stream id, error code) for us. h2
        reads nothing after a GOAWAY (its connection state closes: python-hyper/h2 issue 1181), but the streams
        at or below its last stream id are still answered (RFC 9113 §6.8), so h2 never sees it. What arrived of a
        DATA frame still arriving goes to h2 at once as a DATA frame of its own (_data_so_far)."""
        out: list[bytes | tuple[int, int]] = []
        buf = self._inbuf
        while len(buf) >= 9:
            length = int.from_bytes(buf[0:3], "big")
            if length > self._h2.max_inbound_frame_size:
                out.append(bytes(buf))  # h2 rejects it (FRAME_SIZE_ERROR): no need to wait for all of it
                buf.clear()
                break
            if len(buf) < 9 + length:
                if (part := _data_so_far(buf, length)) is not None:
                    out.append(part)
                break
            frame = bytes(buf[: 9 + length])
            del buf[: 9 + length]
            if frame[3] == _GOAWAY and length >= 8 and int.from_bytes(frame[5:9], "big") & 0x7FFFFFFF == 0:
                out.append((int.from_bytes(frame[9:13], "big") & 0x7FFFFFFF, int.from_bytes(frame[13:17], "big")))
            else:
                out.append(frame)
        return out

    def _receive_frames(self, data: bytes, at: float) -> list[H2Event[T]]:
        window_before = self._h2.inbound_flow_control_window
        try:
            h2_events = self._h2.receive_data(data)
        except H2Error as e:
            return [self._end(f"HTTP/2 protocol error: {e}")]
        out: list[H2Event[T]] = []
        malformed = dict(self._h2.malformed)  # this frame's, reported by _LenientStream (which holds the dict)
        self._h2.malformed.clear()
        self._closed_stream_data(data, h2_events, window_before)
        for ev in h2_events:
            if getattr(ev, "stream_id", None) in malformed:
                continue  # the stream fails below: nothing of this frame reaches its request
            if isinstance(ev, ResponseReceived) and ev.stream_id is not None:
                s = self._streams.get(ev.stream_id)
                if s is None:
                    continue  # cancelled by us
                why = _malformed(ev.headers or [])
                if why is not None:
                    out.append(self._malformed_stream(ev.stream_id, why))
                    continue
                s.progress = at
                s.head, s.framing = _head(ev.headers or [], s.method)
                s.expected = 0 if s.framing is Framing.NONE else _content_length(s.head)  # HEAD, 204, 304
                out.append(ResponseStarted(s.token, s.head, s.framing, _content_length(s.head), held=False))
            elif isinstance(ev, InformationalResponseReceived) and ev.stream_id is not None:
                why = _malformed(ev.headers or [], informational=True)
                if why is not None and ev.stream_id in self._streams:
                    out.append(self._malformed_stream(ev.stream_id, why))
                elif (s := self._streams.get(ev.stream_id)) is not None:
                    s.progress = at  # (a 103 Early Hints: the server is at it)
            elif isinstance(ev, RemoteSettingsChanged):
                self.peer_settings = True
                self.settings_changed += 1
            elif isinstance(ev, DataReceived) and ev.stream_id is not None:
                s = self._streams.get(ev.stream_id)
                flow = ev.flow_controlled_length or 0
                data = ev.data or b""
                self._received.received(flow)
                if s is None:
                    self._ack(flow, ev.stream_id)  # a stream we reset: nobody will consume it
                    continue
                s.wire_bytes += flow
                s.data_bytes += len(data)
                s.progress = at
                if flow > len(data):
                    self._ack(flow - len(data), ev.stream_id)  # padding: nothing for the sink to take
                if data:
                    out.append(ResponseBody(s.token, data))
            elif isinstance(ev, TrailersReceived) and ev.stream_id is not None:
                s = self._streams.get(ev.stream_id)
                why = _malformed(ev.headers or [], trailers=True)
                if s is not None and why is not None:
                    out.append(self._malformed_stream(ev.stream_id, why))
                elif s is not None:
                    s.trailers = [(_text(k), _text(v)) for k, v in ev.headers or [] if not _text(k).startswith(":")]
            elif isinstance(ev, StreamEnded) and ev.stream_id is not None:
                s = self._forget(ev.stream_id)
                if s is None:
                    continue
                self._turn_after(s.urgency, ev.stream_id, at)
                if s.uploading:
                    self._stop_upload(ev.stream_id)
                if s.head is None:  # ended without a final response: malformed (RFC 9113 §8.1.1)
                    out.append(StreamFailed(s.token, "the server ended the stream without a response"))
                    continue
                if s.expected is not None and s.data_bytes != s.expected:
                    # Short of its content-length, however the stream ended: END_STREAM on the HEADERS or on
                    # trailers, which no DATA frame tells _data_refused of (RFC 9113 §8.1.1): malformed, and
                    # the body is not delivered as complete.
                    out.append(StreamFailed(s.token, f"malformed response from the server (content-length "
                                                     f"{s.expected}, the stream ended at {s.data_bytes})"))
                    continue
                self.responses_completed += 1
                out.append(ResponseComplete(s.token, s.head, s.trailers, True, False, s.position, s.framing,
                                            s.wire_bytes))
            elif isinstance(ev, StreamReset) and ev.stream_id is not None:
                s = self._forget(ev.stream_id)
                if s is None:
                    continue
                if ev.error_code == ErrorCodes.REFUSED_STREAM and s.head is None:
                    out.append(self._returned("the server refused the stream", [s]))
                else:
                    code = ev.error_code.name if isinstance(ev.error_code, ErrorCodes) else str(ev.error_code)
                    out.append(StreamFailed(s.token, f"the server reset the stream ({code})"))
            elif isinstance(ev, PushedStreamReceived) and ev.pushed_stream_id is not None:
                # We send SETTINGS_ENABLE_PUSH 0, but h2 applies our settings only once the server acknowledged
                # them, and accepts a push that came before: refused, or the pushed stream would stay open (and
                # count against the server's limit) for good. No pushed response ever answers a request here.
                with contextlib.suppress(H2Error):
                    self._h2.reset_stream(ev.pushed_stream_id, ErrorCodes.REFUSED_STREAM)
            elif isinstance(ev, ConnectionTerminated):  # not expected: GOAWAY frames are kept from h2
                return [*out, self._end("the server ended the connection")]
            elif isinstance(ev, PingAckReceived):
                sent_at = self._pings.pop(bytes(ev.ping_data or b""), None)
                if sent_at is not None:
                    self.rtt = max(0.0, at - sent_at)
        for sid, (why, closed_for_h2_only) in malformed.items():
            if sid in self._streams:
                out.append(self._malformed_stream(sid, why))
                if closed_for_h2_only:
                    self._closed_by_our_reset(sid)
        return out

    def _closed_by_our_reset(self, sid: int) -> None:
        """h2 holds the stream closed by the server's END_STREAM (given to it with trailers that had none) while
        the server holds it open. Unless h2 could reset it after all (an upload: h2 held it half-closed), the
        RST_STREAM is written by hand, and h2 is told the stream closed by our reset: what the server sent on it
        before reading that is then a stream error to h2 (dropped, its DATA handed back), not a connection error
        (RFC 9113 §5.1: frames after END_STREAM are STREAM_CLOSED for the connection). h2 has no public call for
        either, hence its internals (h2 4.x: the stream's state machine, or its record of closed streams)."""
        if self._h2._stream_closed_by(sid) == StreamClosedBy.SEND_RST_STREAM:
            return  # h2 sent the reset itself (_malformed_stream)
        stream = self._h2.streams.get(sid)
        if stream is not None:
            stream.state_machine.stream_closed_by = StreamClosedBy.SEND_RST_STREAM
        else:
            self._h2._closed_streams[sid] = StreamClosedBy.SEND_RST_STREAM
        self._reset_by_hand(sid)

    def _closed_stream_data(self, frame: bytes, h2_events: list[Any], window_before: int) -> None:
        """A DATA frame h2 took without a DataReceived: its stream is closed (we reset or cancelled it, or the
        server ended it). The server spent that much connection window all the same, and no sink will take it:
        received and consumed at once. h2 hands such bytes back itself, with a WINDOW_UPDATE of its own once its
        count says so (`_handle_data_on_closed_stream`): what it sent is counted as granted, or the window would be
        handed back twice and the server's grow past the cap for good."""
        if len(frame) < 9 or frame[3] != _DATA or any(isinstance(ev, DataReceived) for ev in h2_events):
            return
        length = int.from_bytes(frame[0:3], "big")
        self._received.received(length)
        self._received.opened_elsewhere(self._h2.inbound_flow_control_window - window_before + length)
        self._ack(length, None)

    def receive_eof(self) -> list[H2Event[T]]:
        if self.ended:
            return []
        return [self._end("the server closed the connection")]

    def abort(self, reason: str) -> ConnectionEnded[T]:
        """The connection is gone (reset, stall, our own close): every open stream goes back."""
        return self._end(reason)

    # -- internals ---------------------------------------------------------------------------------------

    def _goaway(self, last: int, code: int) -> list[H2Event[T]]:
        """The server goes away: streams above `last` were not processed (sent again, GET/HEAD only: being wrong
        about a POST costs more than a retry saves); with NO_ERROR the rest are still answered, so the connection
        lives until they are; with an error code it ends now and they all go back."""
        self.closing = True
        try:
            name = ErrorCodes(code).name
        except ValueError:
            name = str(code)
        if code != ErrorCodes.NO_ERROR:
            return [self._end(f"the server ended the connection ({name}, last stream {last})")]
        unprocessed = [s for sid in sorted(self._streams) if sid > last and (s := self._forget(sid)) is not None]
        return [self._returned(f"the server is going away (last stream {last})", unprocessed)] if unprocessed else []

    def _returned(self, reason: str, streams: list[_Stream[T]]) -> StreamsReturned[T]:
        return StreamsReturned(
            reason,
            retry=[s.token for s in streams if s.method in PIPELINABLE_METHODS],
            failed=[s.token for s in streams if s.method not in PIPELINABLE_METHODS],
        )

    def _end(self, reason: str) -> ConnectionEnded[T]:
        self.ended = True
        self.closing = True
        streams = [self._streams[sid] for sid in sorted(self._streams)]
        self._streams.clear()
        self._by_token.clear()
        return ConnectionEnded(
            reason, None,
            retry=[s.token for s in streams if s.method in PIPELINABLE_METHODS],
            failed=[s.token for s in streams if s.method not in PIPELINABLE_METHODS],
            partial=[s.token for s in streams if s.method in PIPELINABLE_METHODS and s.head is not None],
        )

    def _malformed_stream(self, sid: int, why: str) -> StreamFailed[T]:
        s = self._forget(sid)
        assert s is not None
        with contextlib.suppress(H2Error):
            self._h2.reset_stream(sid, ErrorCodes.PROTOCOL_ERROR)
        return StreamFailed(s.token, f"malformed response from the server ({why})")

    def _turn_after(self, urgency: int, sid: int, at: float) -> None:
        """A stream ended at `at`: those behind it in the priority chain get their turn now, and a stall of theirs
        counts from here (body_stall.starved_streams)."""
        for other_sid, other in self._streams.items():
            if (other.urgency, other_sid) > (urgency, sid) and other.progress < at:
                other.progress = at

    def _forget(self, sid: int) -> _Stream[T] | None:
        s = self._streams.pop(sid, None)
        if s is not None:
            self._by_token.pop(s.token, None)
        return s

    def _ack(self, nbytes: int, sid: int | None) -> None:
        """nbytes of DATA (of stream sid, if it is still open) were taken by the sink or dropped."""
        if nbytes <= 0 or self.ended:
            return
        self._received.consumed(nbytes)
        s = self._streams.get(sid) if sid is not None else None
        if s is not None:
            s.unreturned += nbytes
            if s.unreturned >= self._window // 2:  # a body of many MiB: its stream window needs refilling
                with contextlib.suppress(H2Error):  # closed on the wire meanwhile: nothing to refill
                    self._h2.increment_flow_control_window(s.unreturned, sid)
                s.unreturned = 0
        self._grant()

    def _grant(self) -> None:
        """Top the connection window up towards `cap` (receive_window.py)."""
        increment = self._received.top_up(self.cap)
        if increment and not self.ended:
            with contextlib.suppress(H2Error):  # the connection is closing: no window to hand back
                self._h2.increment_flow_control_window(increment)

    def _send_bodies(self) -> None:
        """Request bodies go out as the peer's windows allow (WindowUpdated makes room; checked on every read)."""
        if self.ended:
            return
        for sid, s in list(self._streams.items()):
            while s.body:
                room = min(self._h2.local_flow_control_window(sid), self._h2.max_outbound_frame_size)
                if room <= 0:
                    break
                piece, s.body = s.body[:room], s.body[room:]
                try:
                    self._h2.send_data(sid, piece, end_stream=not s.body)
                except H2Error:
                    s.body = b""  # still `uploading`: the stream is reset when its answer ends (_stop_upload)
                    break
                s.uploading = bool(s.body)

    def _stop_upload(self, sid: int) -> None:
        """The server ended its side of a stream (a complete answer, or none) while our request body was still
        going out: a server may answer early, a 413 before the upload is read (RFC 9113 §8.1), and we stop
        sending. RST_STREAM (NO_ERROR: nothing went wrong) closes the stream for h2 too: half-closed, h2 would
        go on counting it against the server's SETTINGS_MAX_CONCURRENT_STREAMS (after we forgot it), and the
        stream that then took its place would raise TooManyStreamsError in `send`."""
        with contextlib.suppress(H2Error):  # already closed on the wire: nothing to reset
            self._h2.reset_stream(sid, ErrorCodes.NO_ERROR)


def _data_so_far(buf: bytearray, length: int) -> bytes | None:
    """buf holds the start of a frame of `length` bytes that has not arrived whole. If it is a DATA frame (not
    padded, on a stream), cut what arrived of its data off as a DATA frame of its own, without END_STREAM, and
    leave in buf the header of the rest (its flags kept: END_STREAM ends the stream with the last piece).

    Why: h2 hands out a DATA frame's data only once the whole frame arrived, and servers send large frames (nginx
    8 kB, http2_chunk_size; others 16 kB) that straddle the round trips of a slow start: a document's first
    kilobytes, which name its stylesheets, scripts and fonts, then waited a round trip for the frame's end.
    Chromium's framer hands a DATA frame's data on as it arrives; so does this. The pieces add up to the frame:
    flow control, content-length checks and END_STREAM see the same bytes. A padded frame (its padding length
    first, the padding last) goes whole, as before."""
    arrived = len(buf) - 9
    if arrived <= 0 or buf[3] != _DATA or buf[4] & _PADDED or int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF == 0:
        return None
    flags, sid = buf[4], bytes(buf[5:9])
    part = arrived.to_bytes(3, "big") + bytes([_DATA, flags & ~_END_STREAM]) + sid + bytes(buf[9:])
    buf[:] = (length - arrived).to_bytes(3, "big") + bytes([_DATA, flags]) + sid
    return part


def tree_parent(urgency: int, open_streams: list[tuple[int, int]]) -> int:
    """The stream a new stream of this urgency depends on, exclusively (RFC 7540 §5.3): of the open streams
    (`open_streams`: (id, urgency) in the order opened) as urgent as it or more, the least urgent, the last opened
    among those; 0 (the root) if none. Exclusive, it takes that stream's dependants as its own, so the tree is one
    chain in urgency order, first come first within an urgency: the order a server that follows the tree sends
    them in, and the tree Chromium builds. (Siblings of the root sharing by weight, as before, let a first visit's
    images, asked with its scripts, take part of each round trip from them; over `sat` with nginx 1.22 the chain
    measured the same as the weights alone: its write order is not what held the scripts back, docs/performance.md.)
    """
    best: tuple[int, int] | None = None  # (urgency, id) of the parent so far
    for sid, u in open_streams:
        if u <= urgency and (best is None or u >= best[0]):
            best = (u, sid)
    return 0 if best is None else best[1]


def tree_weight(urgency: int) -> int:
    """RFC 7540 weight (1..256) for an RFC 9218 urgency (0..7): halved per step, u=0 256 .. u=7 2, so a server
    sharing by weight gives a render-blocking stream 32 times an image's share (u=5)."""
    return max(1, 256 >> max(0, min(7, urgency)))


def _text(b: bytes | str) -> str:
    return b.decode("latin-1") if isinstance(b, bytes) else b


def _wire_headers(req: H2Request[T]) -> list[tuple[bytes, bytes]]:
    out = [(b":method", req.method.encode()), (b":scheme", req.scheme.encode()),
           (b":authority", req.authority.encode("ascii")), (b":path", req.path.encode("latin-1"))]
    named = {t.strip().lower() for k, v in req.headers if k.lower() == "connection" for t in v.split(",")}
    for name, value in req.headers:
        lname = name.lower()
        if lname in _CONNECTION_FIELDS or lname in named or lname == "priority":
            continue
        out.append((lname.encode("latin-1"), value.encode("latin-1", errors="replace")))
    out.append((b"priority", f"u={req.urgency}{', i' if req.incremental else ''}".encode()))
    if req.body:
        out.append((b"content-length", str(len(req.body)).encode()))
    return out


_BAD_VALUE = frozenset("\r\n\0")
_HOP_FIELDS = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"})


def _malformed(headers: list[tuple[bytes, bytes]] | list[tuple[str, str]], *, informational: bool = False,
               trailers: bool = False) -> str | None:
    """Why this header block is a malformed response (RFC 9113 §8.1.1, §8.2, §8.3.2), or None. What h2's own
    validation would check for a response, as a stream error instead of a connection one."""
    statuses: list[str] = []
    regular = False
    for k, v in headers:
        name, value = _text(k), _text(v)
        if not name:
            return "an empty field name"
        if name.startswith(":"):
            if name != ":status" or trailers:
                return f"pseudo-header {name!r}"
            if regular:
                return ":status after a regular field"
            statuses.append(value)
            continue
        regular = True
        # RFC 9113 §8.2.1: no control character, space, upper-case letter, DEL or non-ASCII in a name
        if name != name.lower() or ":" in name or any(ord(c) <= 0x20 or ord(c) >= 0x7F for c in name):
            return f"field name {name!r}"
        if name in _HOP_FIELDS:
            return f"connection-specific field {name!r}"
        if _BAD_VALUE & set(value):
            return f"CR, LF or NUL in {name!r}"
        if value[:1] in (" ", "\t") or value[-1:] in (" ", "\t"):  # §8.2.1: no leading or trailing SP or HTAB
            return f"white space around the value of {name!r}"
    if trailers:
        return None
    lengths = {_text(v) for k, v in headers if _text(k) == "content-length"}
    if len(lengths) > 1 or any(not n.isdigit() or not n.isascii() for n in lengths):  # RFC 9110 §8.6: 1*DIGIT
        return f"content-length {', '.join(sorted(lengths))}"
    if len(statuses) != 1:
        return "no :status" if not statuses else "more than one :status"
    status = statuses[0]
    if len(status) != 3 or not status.isascii() or not status.isdigit() or not ("100" <= status <= "599"):
        return f":status {status!r}"
    if informational != status.startswith("1"):
        return f":status {status!r}"
    return None


def _head(headers: list[tuple[bytes, bytes]] | list[tuple[str, str]], method: str) -> tuple[ResponseHead, Framing]:
    status = 0
    fields: Headers = []
    for k, v in headers:
        name, value = _text(k), _text(v)
        if name == ":status":
            status = int(value) if value.isdigit() else 0
        elif not name.startswith(":"):
            fields.append((name, value))
    head = ResponseHead(status, "", "2", fields)
    # HTTP/2 frames bodies itself; Framing only says whether one follows and whether its length is announced.
    if method == "HEAD" or status in (204, 304):
        return head, Framing.NONE
    return head, Framing.LENGTH if head.get("content-length") is not None else Framing.CHUNKED


def _content_length(head: ResponseHead) -> int | None:
    value = head.get("content-length")
    return int(value) if value is not None and value.isdigit() else None
