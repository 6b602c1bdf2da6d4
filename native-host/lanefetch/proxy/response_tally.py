"""What the browser got of one proxied response, for the extension's timing record: Firefox's webRequest shows the
extension no head and no sizes in proxy mode, so the helper, which wrote the response, says what it wrote: the
status and header fields, the body's bytes as sent (coded, as the origin sent them: the proxy does not decode) and
the body's decoded size (DevTools' and HAR's `content.size`; the panel's "Body"). The decoded size is counted by
running the body through a decoder on the side, only for a coded body and only up to DECODE_COUNT_LIMIT coded bytes
and DECODED_COUNT_LIMIT decoded ones (above either: unknown, null), so a large download costs no decompression the
browser does not need. The decoded bound is what bounds the work: a few coded bytes may decode to GiBs (a 16 MiB zstd
body to 512 GiB), all of it counted on the helper's event loop, which serves every tab's proxied responses."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import DeliveredHead, FetchError
from ..engine.fields import Headers
from ..stream.decode import Decoder, decoder_for

DECODE_COUNT_LIMIT = 16 * 1024 * 1024
DECODED_COUNT_LIMIT = 256 * 1024 * 1024  # about a quarter of a second of decoding, at most, per response


@dataclass(frozen=True)
class DeliveredResponse:
    status: int
    headers: Headers
    body_bytes: int
    decoded_body_bytes: int | None  # None: not known (a coding that failed, or a body above the limit)


class ResponseTally:
    def __init__(self) -> None:
        self._head: DeliveredHead | None = None
        self._body = 0
        self._decoded: int | None = 0
        self._decoder: Decoder | None = None

    def head(self, head: DeliveredHead) -> None:
        self._head = head
        coding = head.get("content-encoding")  # every line of it: one list (RFC 9110 §5.3)
        try:
            # strictly: a body cut short or failing its checksum has no decoded size to show (finish fails)
            self._decoder = decoder_for(coding, strict=True)
        except FetchError:
            self._decoded = None  # a coding the helper does not know: Firefox may; the size stays unknown

    def body(self, data: bytes) -> None:
        self._body += len(data)
        if self._decoded is None:
            return
        if self._decoder is None:
            self._decoded += len(data)
            return
        if self._body > DECODE_COUNT_LIMIT:
            self._decoded, self._decoder = None, None
            return
        try:
            for piece in self._decoder.pieces(data):  # counted, never held whole
                self._decoded += len(piece)
                if self._decoded > DECODED_COUNT_LIMIT:  # the rest is not decoded at all (the generator is left)
                    self._decoded, self._decoder = None, None
                    return
        except Exception:  # zlib.error, brotli.error, zstd errors: a corrupt body; Firefox will say so itself
            self._decoded, self._decoder = None, None

    def result(self) -> DeliveredResponse | None:
        """None before a head was written (the request failed before its response)."""
        if self._head is None:
            return None
        decoded = self._decoded
        if self._decoder is not None and decoded is not None:
            try:
                decoded += len(self._decoder.finish())
            except FetchError:
                decoded = None
        return DeliveredResponse(self._head.status, list(self._head.headers), self._body, decoded)
