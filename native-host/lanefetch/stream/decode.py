"""Streaming decoders for Content-Encoding (gzip, deflate, br, zstd) to identity.

Debugger-mode delivery needs identity bodies: Chromium does not decode a fulfilled body itself. Reading a body for
what it names (prefetch discovery: in proxy mode bodies reach the helper as the server coded them) needs only its
start, bounded however much it expands: decoded_prefix, one call on what arrived so far."""

from __future__ import annotations

import io
import zlib
from typing import Protocol

import brotli
import zstandard

from ..engine.errors import FetchError


class Decoder(Protocol):
    def decode(self, data: bytes) -> bytes: ...
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
        if self._first and data:
            self._first = False
            if self._deflate and (data[0] & 0x0F) != 8:
                self._d = zlib.decompressobj(-zlib.MAX_WBITS)
        out = self._d.decompress(data)
        if self._d.unused_data and self._wbits == 16 + zlib.MAX_WBITS:
            # concatenated gzip members
            rest = self._d.unused_data
            self._d = zlib.decompressobj(self._wbits)
            out += self.decode(rest)
        return out

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

    def decode(self, data: bytes) -> bytes:
        return bytes(self._d.process(data))

    def finish(self) -> bytes:
        if not self._d.is_finished():
            raise FetchError("decode_failed", "brotli body ends early")
        return b""

    def prefix(self, data: bytes, limit: int) -> bytes:
        return bytes(self._d.process(data, output_buffer_limit=limit))[:limit]


class _Zstd:
    def __init__(self) -> None:
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._any = False

    def decode(self, data: bytes) -> bytes:
        self._any = self._any or bool(data)
        return bytes(self._d.decompress(data))

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
        for d in self._decoders:
            data = d.decode(data)
        return data

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
