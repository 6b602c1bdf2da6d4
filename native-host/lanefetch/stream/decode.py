"""Streaming decoders for Content-Encoding (gzip, deflate, br, zstd) to identity.

Debugger-mode delivery needs identity bodies: Chromium does not decode a fulfilled body itself."""

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


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def decode(self, data: bytes) -> bytes:
        return bytes(self._d.process(data))

    def finish(self) -> bytes:
        if not self._d.is_finished():
            raise FetchError("decode_failed", "brotli body ends early")
        return b""


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


def _prefix_one(coding: str, data: bytes, limit: int) -> bytes:
    if coding in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if coding != "deflate" else (
            zlib.MAX_WBITS if data[:1] and (data[0] & 0x0F) == 8 else -zlib.MAX_WBITS)
        out = zlib.decompressobj(wbits).decompress(data, limit)
        return out
    if coding == "br":
        return bytes(brotli.Decompressor().process(data, output_buffer_limit=limit))[:limit]
    if coding == "zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        out = b""
        try:
            while len(out) < limit:
                chunk = reader.read(limit - len(out))
                if not chunk:
                    break
                out += chunk
        except zstandard.ZstdError:
            if not out:
                raise
        return out
    if coding == "identity":
        return data[:limit]
    raise FetchError("decode_failed", f"unsupported Content-Encoding {coding!r}")


def decoded_prefix(content_encoding: str | None, data: bytes, limit: int) -> bytes:
    """What the start of a coded body (`data`: the whole body or what arrived of it) decodes to, at most `limit`
    bytes, however much it would expand: for reading a body, not delivering it (a truncated stream yields what it
    holds so far). FetchError for a coding we cannot undo or data that is not of it."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    try:
        for coding in reversed(codings):
            data = _prefix_one(coding, data, limit)
    except (zlib.error, brotli.error, zstandard.ZstdError) as e:
        raise FetchError("decode_failed", f"cannot decode the body: {e}") from e
    return data[:limit]
