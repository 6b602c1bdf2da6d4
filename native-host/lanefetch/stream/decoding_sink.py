"""A sink wrapped around the consumer's that decodes Content-Encoding to identity for requests that ask for
it (`decode`: debugger mode, where Chromium does not decode a fulfilled body itself).

The engine below delivers bodies as the server coded them, so the cache stores and a broken body resumes on
the coded bytes (a Range counts coded bytes); decoding happens once, here, on the way to the consumer, as
Chromium would decode the body (decode.py's default reading: the page gets what the browser's own fetch would have
shown, a body cut short included). A body that cannot be decoded ends its request with `decode_failed`; the rest of
its response is dropped here while the engine reads it to the end, so the connection stays in step; so is one whose
Content-Encoding Chromium refuses before its body (decode.chromium_refuses: a coding the request did not offer, a
value it cannot parse), which the browser then fails the same way when it fetches it itself. A body under a
Content-Encoding that names a coding Chromium does not undo (`identity`, an unknown name, alone or in a list) is
Chromium's to show as it came: it goes so, its Content-Encoding and Content-Length kept, marked decoded (what the
consumer delivers as it is).
"""

from __future__ import annotations

from ..engine.errors import FetchError
from ..engine.exchange import DeliveredHead, Sink, TimingReport
from ..engine.fields import Headers
from ..engine.request import FetchRequest
from .decode import Decoder, chromium_refuses, decoder_for

_NO_BODY = (204, 304)


class DecodingSink:
    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._decoders: dict[str, Decoder] = {}
        self._delivered: dict[str, int] = {}
        self._failed: set[str] = set()

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        if request.decode:
            offered = ", ".join(v for k, v in request.headers if k.lower() == "accept-encoding") or None
            why = chromium_refuses(head.get("content-encoding"), offered, status=head.status,
                                   location=head.get("location"))
            if why is not None:
                await self._fail(request, FetchError("decode_failed", why))
                return
        decoder = None
        coding = None
        if request.decode and request.method != "HEAD" and head.status not in _NO_BODY:
            coding = head.get("content-encoding")  # every line of the field: one list (RFC 9110 §5.3), as Chromium
            try:
                decoder = decoder_for(coding or None)
            except FetchError as e:
                await self._fail(request, e)
                return
        if decoder is None:
            if coding and coding.strip():
                # A coding Chromium does not undo (decode.chromium_codings): the body goes as it came, with the
                # fields that say so, as the page has it from the browser's own fetch; decoded, for the consumer
                # takes it as it is (a fulfilled body is never decoded by the browser)
                head = DeliveredHead(head.status, head.reason, head.http_version, head.headers, True, head.unproven,
                                     head.stored)
            await self._sink.head(request, head)
            return
        self._decoders[request.id] = decoder
        self._delivered[request.id] = 0
        drop = ("content-encoding", "content-length")
        headers = [(k, v) for k, v in head.headers if k.lower() not in drop]
        await self._sink.head(request, DeliveredHead(head.status, head.reason, head.http_version, headers, True,
                                                    head.unproven, head.stored))

    async def body(self, request: FetchRequest, data: bytes) -> None:
        if request.id in self._failed:
            return
        decoder = self._decoders.get(request.id)
        if decoder is None:
            await self._sink.body(request, data)
            return
        # A piece at a time (stream/decode.py: one read may decode to gigabytes), each delivered before the next is
        # decoded; a request that ended meanwhile (cancelled while the consumer took a piece) gets no more.
        pieces = decoder.pieces(data)
        while self._decoders.get(request.id) is decoder:
            try:
                out = next(pieces, None)
            except Exception as e:  # zlib.error, brotli.error, zstd errors: all mean a corrupt body
                await self._fail(request, _decode_error(e))
                return
            if out is None:
                return
            self._delivered[request.id] += len(out)
            await self._sink.body(request, out)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        if request.id in self._failed:
            return
        decoder = self._decoders.pop(request.id, None)
        if decoder is None:
            await self._sink.end(request, body_bytes, trailers)
            return
        try:
            out = decoder.finish()
        except Exception as e:
            await self._fail(request, _decode_error(e))
            return
        delivered = self._delivered.pop(request.id) + len(out)
        if out:
            await self._sink.body(request, out)
        await self._sink.end(request, delivered, trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self._decoders.pop(request.id, None)
        self._delivered.pop(request.id, None)
        if request.id not in self._failed:
            await self._sink.error(request, error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self._failed.discard(request.id)  # the request's last call: forget it
        await self._sink.timing(request, report)

    async def _fail(self, request: FetchRequest, error: FetchError) -> None:
        self._decoders.pop(request.id, None)
        self._delivered.pop(request.id, None)
        self._failed.add(request.id)
        await self._sink.error(request, error)


def _decode_error(e: Exception) -> FetchError:
    return e if isinstance(e, FetchError) else FetchError("decode_failed", f"cannot decode body: {e}")
