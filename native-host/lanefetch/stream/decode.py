"""Streaming decoders for Content-Encoding (gzip, deflate, br, zstd) to identity.

Debugger-mode delivery needs identity bodies: Chromium does not decode a fulfilled body itself. Reading a body for
what it names (prefetch discovery: in proxy mode bodies reach the helper as the server coded them) needs only its
start, bounded however much it expands: decoded_prefix, one call on what arrived so far.

Delivering and counting are bounded too: one piece of a coded body can decode to thousands of times its size (zstd
turns 8 KiB into 256 MiB, so a 64 KiB read into 2 GiB), so `pieces` yields what a piece decodes to a bounded piece
at a time (about PIECE bytes) and `decode` is only for what is known to be small."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from typing import Protocol

import brotli
import zstandard

from ..engine.errors import FetchError

PIECE = 256 * 1024  # decoded bytes `pieces` yields at a time (zstd's may be up to ~1 MiB more: _Zstd)
# zstd's API has no output limit: its input is fed this many bytes at a time. A block of 128 KiB needs at least 4
# coded bytes (an RLE block), so one feed decodes to at most ~9 blocks.
_ZSTD_FEED = 32


class Decoder(Protocol):
    def decode(self, data: bytes) -> bytes:
        """What `data` decodes to, whole: only for bodies known to be small (`pieces` otherwise)."""
        ...

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        """What `data` decodes to, as non-empty pieces of about `size` bytes each (never all at once)."""
        ...

    def finish(self) -> bytes: ...
    def prefix(self, data: bytes, limit: int) -> bytes:
        """What `data` (the start of a body, whole or not) decodes to, at most `limit` bytes; a fresh decoder's
        one call (it is not used after)."""
        ...


class _Zlib:
    def __init__(self, wbits: int, *, deflate: bool = False) -> None:
        self._wbits = wbits
        self._deflate = deflate  # "deflate" is zlib-wrapped by the RFC, raw in some servers: detect
        self._first = True
        self._d = zlib.decompressobj(wbits)

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        if self._first and data:
            self._first = False
            if self._deflate and (data[0] & 0x0F) != 8:
                self._d = zlib.decompressobj(-zlib.MAX_WBITS)
        while True:
            out = self._d.decompress(data, size)
            if out:
                yield out
            if self._d.eof:
                if self._d.unused_data and self._wbits == 16 + zlib.MAX_WBITS:
                    # concatenated gzip members
                    data = self._d.unused_data
                    self._d = zlib.decompressobj(self._wbits)
                    continue
                return
            data = self._d.unconsumed_tail
            if not data and len(out) < size:  # (a full piece may leave output inside: asked again with no input)
                return

    def finish(self) -> bytes:
        out = self._d.flush()
        if not self._d.eof and not self._first:
            raise FetchError("decode_failed", "compressed body ends early")
        return out

    def prefix(self, data: bytes, limit: int) -> bytes:
        if self._deflate and data and (data[0] & 0x0F) != 8:
            self._d = zlib.decompressobj(-zlib.MAX_WBITS)
        out = b""
        while data and len(out) < limit:
            out += self._d.decompress(data, limit - len(out))
            # concatenated gzip members follow the first's end
            data = self._d.unused_data if self._d.eof and self._wbits == 16 + zlib.MAX_WBITS else b""
            if data:
                self._d = zlib.decompressobj(self._wbits)
        return out


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()
        self._any = False  # an empty body under the label (an empty redirect) is empty, as with the other codings

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        self._any = self._any or bool(data)
        out = bytes(self._d.process(data, output_buffer_limit=size))
        while True:
            if out:
                yield out
            # A piece cut at the limit (it may pass it, up to about twice) may leave output inside even once the
            # input is taken: asked again with no input until a piece comes short and the input is all taken.
            if not out or (len(out) < size and self._d.can_accept_more_data()):
                return
            out = bytes(self._d.process(b"", output_buffer_limit=size))

    def finish(self) -> bytes:
        if self._any and not self._d.is_finished():
            raise FetchError("decode_failed", "brotli body ends early")
        return b""

    def prefix(self, data: bytes, limit: int) -> bytes:
        return bytes(self._d.process(data, output_buffer_limit=limit))[:limit]


class _Zstd:
    def __init__(self) -> None:
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._any = False

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        self._any = self._any or bool(data)
        got: list[bytes] = []
        held = 0
        for i in range(0, len(data), _ZSTD_FEED):
            feed = data[i : i + _ZSTD_FEED]
            while feed:
                if self._d.eof:
                    # A body is one or more frames (RFC 8878 §3.1), decoded one after another as the browsers do
                    # (and as `prefix` reads them); a decompressobj ends with its frame, so the next gets one of
                    # its own. Whatever follows that is not a frame fails as a corrupt body.
                    self._d = zstandard.ZstdDecompressor().decompressobj()
                out = self._d.decompress(feed)
                feed = self._d.unused_data if self._d.eof else b""
                if out:
                    got.append(out)
                    held += len(out)
                    if held >= size:
                        yield b"".join(got)
                        got, held = [], 0
        if got:
            yield b"".join(got)

    def finish(self) -> bytes:
        if self._any and not self._d.eof:
            raise FetchError("decode_failed", "zstd body ends early")
        return b""

    def prefix(self, data: bytes, limit: int) -> bytes:
        # The reader yields output as asked, so a body that expands without end stops at the limit
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        out = b""
        try:
            while len(out) < limit and (chunk := reader.read(limit - len(out))):
                out += chunk
        except zstandard.ZstdError:
            if not out:
                raise
        return out


class _Chain:
    """Codings applied in order are undone in reverse (RFC 9110 §8.4)."""

    def __init__(self, decoders: list[Decoder]) -> None:
        self._decoders = decoders

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        return self._through(0, data, size)

    def _through(self, i: int, data: bytes, size: int) -> Iterator[bytes]:
        if i == len(self._decoders):
            yield data
            return
        for piece in self._decoders[i].pieces(data, size):
            yield from self._through(i + 1, piece, size)

    def finish(self) -> bytes:
        out = b""
        for d in self._decoders:
            out = d.decode(out) + d.finish()
        return out

    def prefix(self, data: bytes, limit: int) -> bytes:
        for d in self._decoders:
            data = d.prefix(data, limit)
        return data


def _one(coding: str) -> Decoder | None:
    if coding in ("gzip", "x-gzip"):
        return _Zlib(16 + zlib.MAX_WBITS)
    if coding == "deflate":
        return _Zlib(zlib.MAX_WBITS, deflate=True)
    if coding == "br":
        return _Brotli()
    if coding == "zstd":
        return _Zstd()
    if coding == "identity":
        return None
    raise FetchError("decode_failed", f"unsupported Content-Encoding {coding!r}")


def decoder_for(content_encoding: str | None) -> Decoder | None:
    """A decoder for the header value, None for identity; FetchError for a coding we cannot undo."""
    if not content_encoding:
        return None
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    decoders = [d for d in (_one(c) for c in reversed(codings)) if d is not None]
    if not decoders:
        return None
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)



def decoded_prefix(content_encoding: str | None, data: bytes, limit: int) -> bytes:
    """What the start of a coded body (`data`: the whole body or what arrived of it) decodes to, at most `limit`
    bytes, however much it would expand: for reading a body, not delivering it (a cut stream yields what it holds
    so far). FetchError for a coding the helper cannot undo or data that is not of it."""
    decoder = decoder_for(content_encoding)
    if decoder is None:
        return data[:limit]
    try:
        return decoder.prefix(data, limit)[:limit]
    except (zlib.error, brotli.error, zstandard.ZstdError) as e:
        raise FetchError("decode_failed", f"cannot decode the body: {e}") from e
