"""One request's life from queue to sink: it delivers a head, body pieces and an end (or one error)
exactly once, even when the request is retried on another connection after part of the body was
already delivered (resumed with Range + If-Range from a strong validator, or a whole new answer that is
provably the same representation with the delivered prefix skipped: resume.py).

A response the pipeline holds (its place on the connection not yet proven, pipeline.py) is kept here,
whole, until the connection proves it (`release`: delivered as if it had just arrived, cache included) or
drops it (`withdraw`: fetched again, the sink never heard of it). A held response larger than HOLD_MAX
is let through unproven rather than buffered without bound, and is then never stored in the cache."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Protocol

from .decode import Decoder, decoder_for
from .errors import FetchError
from .fields import Headers
from .request import FetchRequest, Target, priority_key
from .response_parser import Framing, ResponseHead
from .response_tap import ResponseTap
from .resume import continues, replaces, resume_headers
from .timing import ConnectionInfo, LaneReport, RequestTiming, now

_HOP_BY_HOP_RESPONSE = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
     "proxy-authenticate"}
)
HOLD_MAX = 16 * 1024 * 1024  # body bytes a held response may buffer before it is let through unproven


@dataclass
class _Held:
    """A response complete or arriving whose pipeline place is not proven yet."""

    head: ResponseHead
    framing: Framing
    body: list[bytes] = field(default_factory=list)
    size: int = 0
    end: tuple[Headers, int] | None = None  # trailers and wire bytes once complete


@dataclass(frozen=True)
class DeliveredHead:
    status: int
    reason: str
    http_version: str
    headers: Headers
    decoded: bool


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


def delivered_head(head: ResponseHead, framing: Framing, decode: bool) -> tuple[DeliveredHead, Decoder | None]:
    named = head.connection_tokens()
    decoder = None
    if decode and framing is not Framing.NONE:
        decoder = decoder_for(head.get("content-encoding"))
    drop = _HOP_BY_HOP_RESPONSE | named
    if decoder is not None:
        drop = drop | {"content-encoding", "content-length"}
    headers = [(k, v) for k, v in head.headers if k.lower() not in drop]
    return DeliveredHead(head.status, head.reason, head.http_version, headers, decoder is not None), decoder


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
        self.connection: ConnectionInfo | None = None
        self.finished = False
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.wire_bytes = 0
        self._upstream_head: ResponseHead | None = None  # the head we delivered (first attempt that got one)
        self._delivered = 0  # body bytes (after decoding) given to the sink
        self._skip = 0  # bytes of a retried body already delivered by an earlier attempt
        self._received = 0  # body bytes as received (before decoding) that went into what was delivered
        self._resume_at: int | None = None  # a retry asks for the rest from this byte (resume.py)
        self._held: _Held | None = None
        self._decoder: Decoder | None = None
        self.tap: ResponseTap | None = None  # the cache watching this response, if any
        self.cache_status = "none"  # "hit" | "revalidated": reported in the timing

    @property
    def method(self) -> str:
        return self.request.method

    def sort_key(self) -> tuple[int, int, int]:
        return (*priority_key(self.request), self.seq)

    # -- events from the connection ----------------------------------------------------------------------

    async def start_response(self, head: ResponseHead, framing: Framing, *, held: bool = False) -> None:
        if self.finished:
            return
        if held:
            self._held = _Held(head, framing)
            return
        if self._upstream_head is not None:
            await self._continue_response(head, framing)
            return
        substitute = None
        try:
            if self.tap is not None:
                substitute = self.tap.on_head(head)
            if substitute is not None:  # a 304 validated the stored response: deliver that instead
                head, framing = substitute.head, Framing.LENGTH
                self.cache_status = "revalidated"
            out, self._decoder = delivered_head(head, framing, self.request.decode)
        except FetchError as e:
            await self.fail(e)
            return
        self._upstream_head = head
        try:
            await self.sink.head(self.request, out)
        except FetchError as e:  # the consumer cannot take this head (e.g. too large to forward)
            await self.fail(e)
            return
        if substitute is not None:
            await self._decode_and_deliver(substitute.body)

    async def body(self, data: bytes) -> None:
        if self.finished:
            return
        if self._held is not None:
            self._held.body.append(data)
            self._held.size += len(data)
            if self._held.size > HOLD_MAX:
                self.tap = None  # unproven: it may reach the page, never the cache
                await self.release()
            return
        self._received += len(data)
        if self.tap is not None:
            self.tap.on_body(data)
        await self._decode_and_deliver(data)

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

    async def _decode_and_deliver(self, data: bytes) -> None:
        if self._decoder is not None:
            try:
                data = self._decoder.decode(data)
            except FetchError as e:
                await self.fail(e)
                return
            except Exception as e:  # zlib.error, brotli.error, zstd errors: all mean a corrupt body
                await self.fail(FetchError("decode_failed", f"cannot decode body: {e}"))
                return
        await self._deliver(data)

    async def complete(self, trailers: Headers, wire_bytes: int) -> None:
        if self.finished:
            return
        if self.timing.last_byte is None:
            self.timing.last_byte = now()  # when it arrived, also for a held response delivered later
        if self._held is not None:
            self._held.end = (trailers, wire_bytes)
            return
        self.wire_bytes += wire_bytes
        if self._decoder is not None:
            try:
                await self._deliver(self._decoder.finish())
            except FetchError as e:
                await self.fail(e)
                return
            except Exception as e:
                await self.fail(FetchError("decode_failed", f"cannot decode body: {e}"))
                return
        if self._cancelled_meanwhile():
            return
        if self._skip > 0:
            await self.fail(FetchError("resource_changed", "the retried response was shorter than the first"))
            return
        if self.tap is not None:
            self.tap.on_complete(trailers)
        self.finished = True
        await self.sink.end(self.request, self._delivered, trailers)
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
        await self.sink.error(self.request, error)
        await self._report_timing()

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
        if self._upstream_head is not None:
            # The page has this response's head (and maybe part of its body): ask for the rest where that is
            # provably the same representation; otherwise for the whole, judged when it arrives.
            headers = resume_headers(self.request.headers, self._upstream_head, self._received)
            if headers is not None:
                self._resume_at = self._received
                self.wire_request = dataclasses.replace(self.request, headers=headers)
        return True

    # -- internals -----------------------------------------------------------------------------------------

    async def _continue_response(self, head: ResponseHead, framing: Framing) -> None:
        """A retry's answer after the page already has this response's head: the rest of the body (a 206 from
        where it broke), or a whole answer provably the same (its delivered prefix skipped), or an error."""
        first = self._upstream_head
        assert first is not None
        if self._resume_at is not None and head.status == 206:
            why = continues(first, head, self._resume_at)
            if why is not None:
                await self.fail(FetchError("resource_changed", f"the connection broke mid-body and {why}"))
            return  # the same decoder and cache recording go on with the rest
        if not replaces(first, head, self._delivered):
            await self.fail(FetchError(
                "resource_changed",
                "the connection broke mid-body and the retried response cannot be proven the same "
                "(it needs a strong ETag or Last-Modified)",
            ))
            return
        try:
            _, self._decoder = delivered_head(head, framing, self.request.decode)
        except FetchError as e:
            await self.fail(e)
            return
        self._skip = self._delivered
        self._received = 0
        if self.tap is not None:
            self.tap.on_restart()

    async def _deliver(self, data: bytes) -> None:
        if self._skip:
            cut = min(self._skip, len(data))
            data = data[cut:]
            self._skip -= cut
        if data:
            self._delivered += len(data)
            await self.sink.body(self.request, data)

    async def _report_timing(self) -> None:
        report = TimingReport(self.timing, self.connection, self.retries, self.wire_bytes, self.cache_status)
        try:
            await self.sink.timing(self.request, report)
        finally:
            if not self.done.done():
                self.done.set_result(None)

