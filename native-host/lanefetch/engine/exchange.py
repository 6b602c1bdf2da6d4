"""One request's life from queue to sink: it delivers a head, body pieces and an end (or one error)
exactly once, even when the request is retried on another connection after part of the body was
already delivered (resumed with Range + If-Range from a strong validator, or a whole new answer that is
provably the same representation with the delivered prefix skipped: resume.py).

A response the pipeline holds (its place on the connection not yet proven, pipeline.py) is kept here,
whole, until the connection proves it (`release`: delivered as if it had just arrived) or drops it
(`withdraw`: fetched again, the sink never heard of it). A held response larger than HOLD_MAX is let
through unproven rather than buffered without bound; its head says so (`DeliveredHead.unproven`), and the
cache never stores it.

Bodies leave as the server coded them: decoding and the cache are sinks and fetchers around the engine
(stream/decoding_sink.py, cache/caching_fetcher.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Protocol

from .body_stall import BodyProgress
from .errors import FetchError
from .fields import FieldLookup, Headers
from .pool_plan import queue_order
from .request import FetchRequest, Target, priority_key
from .response_parser import Framing, ResponseHead
from .resume import continues, range_end, replaces, resume_headers
from .timing import ConnectionInfo, LaneReport, RequestTiming, now

_log = logging.getLogger("lanefetch.engine")

HOP_BY_HOP_RESPONSE = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
     "proxy-authenticate"}
)
HOLD_MAX = 16 * 1024 * 1024  # body bytes a held response may buffer before it is let through unproven
# Times a request the server did not process (an HTTP/2 stream refused, or above a GOAWAY's last stream id) is sent
# again without counting as a retry: a server cycling connections (keep-alive limits) must not use up the
# retries of the requests it never looked at, but one refusing everything must not loop until the total timeout.
MAX_SENT_BACK = 16


@dataclass
class _Held:
    """A response complete or arriving whose pipeline place is not proven yet."""

    head: ResponseHead
    framing: Framing
    body: list[bytes] = field(default_factory=list)
    size: int = 0
    end: tuple[Headers, int] | None = None  # trailers and wire bytes once complete


@dataclass(frozen=True)
class DeliveredHead(FieldLookup):
    status: int
    reason: str
    http_version: str
    headers: Headers
    decoded: bool
    unproven: bool = False  # passed on before its pipeline place was proven (too large to hold): never cache it
    # The body comes from the helper's HTTP cache (a fresh hit, or a 304 that validated the stored response): none of
    # it crosses the link (a flight's budget counts link bytes, prefetch/flight.py)
    stored: bool = False


@dataclass
class TimingReport:
    timing: RequestTiming
    connection: ConnectionInfo | None
    retries: int
    wire_bytes: int
    cache: str = "none"
    lanes: list[LaneReport] | None = None  # a split response: one entry per lane


class Sink(Protocol):
    """Where responses go. Awaiting a call is the backpressure: the engine reads no more from that
    connection until the sink has taken the piece."""

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None: ...
    async def body(self, request: FetchRequest, data: bytes) -> None: ...
    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None: ...
    async def error(self, request: FetchRequest, error: FetchError) -> None: ...
    async def timing(self, request: FetchRequest, report: TimingReport) -> None: ...


def delivered_head(head: ResponseHead) -> DeliveredHead:
    """The head as the consumer gets it: the server's, without the fields that belonged to the connection."""
    drop = HOP_BY_HOP_RESPONSE | head.connection_tokens()
    if head.get_all("transfer-encoding"):
        # The body is delivered dechunked, and a Content-Length beside Transfer-Encoding is not its length (RFC 9112
        # §6.3: the transfer coding overrides it; a hop that forwards it must remove it). Kept, the browser's side of
        # the proxy framed the dechunked body by it and read the rest as the next answer.
        drop = drop | {"content-length"}
    headers = [(k, v) for k, v in head.headers if k.lower() not in drop]
    return DeliveredHead(head.status, head.reason, head.http_version, headers, False)


def _consumer_error(e: Exception) -> FetchError:
    """What a request ends with when its consumer raised taking a head or a body: its own FetchError (a head too large
    to forward), else `internal` naming the failure. The engine's batch ends whatever a consumer does: an exception
    out of a sink would otherwise end the connection's reader, and with it the answers of every request on it, and a
    batch waiting for this request's end would wait forever."""
    return e if isinstance(e, FetchError) else FetchError("internal", f"the consumer failed: {e!r}")


class Exchange:
    def __init__(self, request: FetchRequest, target: Target | None, sink: Sink, seq: int, max_retries: int) -> None:
        self.request = request
        self.wire_request = request  # what is sent: the request, or a copy with cache validators added
        self.target = target
        self.sink = sink
        self.seq = seq
        self.max_retries = max_retries
        self.timing = RequestTiming(queued=now())
        self.retries = 0
        self.sent_back = 0
        self.connection: ConnectionInfo | None = None
        self.finished = False
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.wire_bytes = 0
        self._upstream_head: ResponseHead | None = None  # the head we delivered (first attempt that got one)
        self._delivered = 0  # body bytes given to the sink (as the server coded them)
        self._skip = 0  # bytes of a retried body already delivered by an earlier attempt
        self._resume_at: int | None = None  # a retry asks for the rest from this byte (resume.py)
        self._resume_end: int | None = None  # the body's length once a 206 carries its rest (its Content-Range)
        self._held: _Held | None = None
        self._unproven = False  # let through before its place was proven (HOLD_MAX)
        self.body_stall_cuts = 0  # times its connection was cut because its body stopped (body_stall.py)

    @property
    def method(self) -> str:
        return self.request.method

    def sort_key(self) -> tuple[int, int, int, int]:
        return (*queue_order(*priority_key(self.request), self.request.link_bytes,
                             self.request.resource_type == "font"), self.seq)

    # -- events from the connection ----------------------------------------------------------------------

    async def start_response(self, head: ResponseHead, framing: Framing, *, held: bool = False) -> None:
        if self.finished:
            return
        if held:
            self._held = _Held(head, framing)
            return
        if self._upstream_head is not None:
            await self._continue_response(head)
            return
        self._upstream_head = head
        out = delivered_head(head)
        if self._unproven:
            out = dataclasses.replace(out, unproven=True)
        try:
            await self.sink.head(self.request, out)
        except Exception as e:  # the consumer cannot take this head (too large to forward, a write that failed)
            await self.fail(_consumer_error(e))

    async def body(self, data: bytes) -> None:
        if self.finished:
            return
        if self._held is not None:
            self._held.body.append(data)
            self._held.size += len(data)
            if self._held.size > HOLD_MAX:
                self._unproven = True
                await self.release()
            return
        await self._deliver(data)

    async def release(self) -> None:
        """The held response is proven in step (or too large to hold): deliver what arrived as it arrived."""
        held, self._held = self._held, None
        if held is None or self.finished:
            return
        await self.start_response(held.head, held.framing)
        for piece in held.body:
            await self.body(piece)
        if held.end is not None:
            await self.complete(*held.end)

    def withdraw(self) -> None:
        """The held response was never proven: forget it (the request is fetched again)."""
        self._held = None

    async def complete(self, trailers: Headers, wire_bytes: int) -> None:
        if self.finished:
            return
        if self.timing.last_byte is None:
            self.timing.last_byte = now()  # when it arrived, also for a held response delivered later
        if self._held is not None:
            self._held.end = (trailers, wire_bytes)
            return
        self.wire_bytes += wire_bytes
        if self._cancelled_meanwhile():
            return
        if self._skip > 0:
            await self.fail(FetchError("resource_changed", "the retried response was shorter than the first"))
            return
        if self._resume_end is not None and self._delivered != self._resume_end:
            # The 206 framed fewer (or more) bytes than its Content-Range named: the body is not the whole one.
            await self.fail(FetchError("protocol_error", "the retried range's body does not match its Content-Range"))
            return
        self.finished = True
        try:
            await self.sink.end(self.request, self._delivered, trailers)
        except Exception:  # its consumer failed taking the end: the request is over all the same
            _log.warning("%s: the consumer failed at its end", self.request.url, exc_info=True)
        await self._report_timing()

    def _cancelled_meanwhile(self) -> bool:
        # A method, not the attribute: another task may finish this exchange while we await the sink.
        return self.finished

    async def fail(self, error: FetchError) -> None:
        if self.finished:
            return
        self.finished = True
        if self.timing.last_byte is None and self.timing.first_byte is not None:
            self.timing.last_byte = now()
        try:
            await self.sink.error(self.request, error)
        except Exception:
            _log.warning("%s: the consumer failed taking its error", self.request.url, exc_info=True)
        await self._report_timing()

    def body_progress(self) -> BodyProgress | None:
        """How far its response got, for the body-stall rule; None before any response began."""
        if self.finished or (self._upstream_head is None and self._held is None):
            return None
        first = self._upstream_head
        resumable = first is not None and resume_headers(self.request.headers, first, self._delivered) is not None
        return BodyProgress(self._delivered, self._held is not None, resumable, self.body_stall_cuts)

    def may_send_again(self) -> bool:
        """The server did not process this request: may it go back to the queue as if never sent (no retry
        counted)? False once it was sent back MAX_SENT_BACK times, or is over."""
        if self.finished or self._upstream_head is not None or self.sent_back >= MAX_SENT_BACK:
            return False
        self.sent_back += 1
        self.timing.reset_for_retry()
        self.connection = None
        return True

    def may_retry(self) -> bool:
        """Count a retry; False once the request has used up its retries (or is over)."""
        if self.finished or not self.request.idempotent:
            return False
        self.retries += 1
        if self.retries > self.max_retries:
            return False
        self.timing.reset_for_retry()
        self.connection = None
        self._held = None
        self._resume_at = None
        self._resume_end = None
        if self._upstream_head is not None:
            # The page has this response's head (and maybe part of its body): ask for the rest where that is
            # provably the same representation; otherwise for the whole, judged when it arrives.
            headers = resume_headers(self.request.headers, self._upstream_head, self._delivered)
            if headers is not None:
                self._resume_at = self._delivered
                self.wire_request = dataclasses.replace(self.request, headers=headers)
        return True

    # -- internals -----------------------------------------------------------------------------------------

    async def _continue_response(self, head: ResponseHead) -> None:
        """A retry's answer after the page already has this response's head: the rest of the body (a 206 from
        where it broke), or a whole answer provably the same (its delivered prefix skipped), or an error."""
        first = self._upstream_head
        assert first is not None
        if self._resume_at is not None and head.status == 206:
            why = continues(first, head, self._resume_at)
            if why is not None:
                await self.fail(FetchError("resource_changed", f"the connection broke mid-body and {why}"))
                return
            self._resume_end = range_end(head)
            return  # the rest follows the delivered prefix
        if not replaces(first, head, self._delivered):
            await self.fail(FetchError(
                "resource_changed",
                "the connection broke mid-body and the retried response cannot be proven the same "
                "(it needs a strong ETag or Last-Modified)",
            ))
            return
        self._skip = self._delivered  # the same representation: its first bytes are the ones delivered

    async def _deliver(self, data: bytes) -> None:
        if self._skip:
            cut = min(self._skip, len(data))
            data = data[cut:]
            self._skip -= cut
        if data:
            self._delivered += len(data)
            try:
                await self.sink.body(self.request, data)
            except Exception as e:  # a consumer's failed write ends this request, not the connection's reader
                await self.fail(_consumer_error(e))

    async def _report_timing(self) -> None:
        report = TimingReport(self.timing, self.connection, self.retries, self.wire_bytes)
        if _log.isEnabledFor(logging.DEBUG):
            # Where each answer went and when, on the helper's clock (epoch ms): with LANEFETCH_LOG=DEBUG, a bench
            # load's breakdown (the browser's view) can be read against the connections' (docs/performance.md).
            ms = self.timing.as_epoch_ms()
            c = self.connection
            _log.debug("%s: conn %s pos %s/%s, queued %s sent %s first %s last %s ms, %d B on the wire, %d retries",
                       self.request.url, c.id if c else None, c.pipeline_position if c else None,
                       c.pipeline_depth if c else None, *(f"{ms[k]:.0f}" if ms[k] is not None else None
                                                          for k in ("queued", "sent", "first_byte", "last_byte")),
                       self.wire_bytes, self.retries)
        try:
            await self.sink.timing(self.request, report)
        except Exception:  # the request is over: the batch's end must not wait on a consumer that failed
            _log.warning("%s: the consumer failed taking its timing", self.request.url, exc_info=True)
        finally:
            if not self.done.done():
                self.done.set_result(None)

