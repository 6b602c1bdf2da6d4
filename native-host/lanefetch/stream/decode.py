"""Streaming decoders for Content-Encoding (gzip, deflate, br, zstd) to identity.

Debugger-mode delivery needs identity bodies: Chromium does not decode a fulfilled body itself. Reading a body for
what it names (prefetch discovery: in proxy mode bodies reach the helper as the server coded them) needs only its
start, bounded however much it expands: decoded_prefix, one call on what arrived so far.

Delivering and counting are bounded too: one piece of a coded body can decode to thousands of times its size (zstd
turns 8 KiB into 256 MiB, so a 64 KiB read into 2 GiB), so `pieces` yields what a piece decodes to a bounded piece
at a time (about PIECE bytes) and `decode` is only for what is known to be small.

Two readings of a coded body. By default, Chromium's (net/filter/*_source_stream.cc), since a body delivered in
debugger mode must be exactly what the page would have had from the browser's own fetch, no more an error and no
less one:
- gzip: the first member only. Its header is read as Chromium reads it (gzip_header.py), its deflate data inflated
  raw, its trailer (CRC32, ISIZE) never checked, and whatever follows it (more members, garbage) ignored.
- deflate: zlib-wrapped (its Adler-32 checked by zlib), or, where zlib refuses the start before any output, raw
  deflate: Chromium then puts a zlib header (78 01) before what it read and inflates it all again
  (crbug.com/677001), and so does this. Whatever follows the end of the stream is ignored.
- br: the stream; the decoder is drained of what it holds (the Python binding may return with output inside).
- zstd: one frame after another; a window above 8 MiB fails (Chromium's windowLogMax 23, RFC 8878 §3.1.1.1.2).
- A stream cut short (the body ended before the coding did) is no error for any of them: Chromium shows what
  decoded so far (gzip/deflate stop; br and zstd note it in a histogram only). Corrupt data fails, as there.
Where this still differs from Chromium (br with bytes after its end) is in docs/architecture.md ("Decoding").

`strict=True` is the stricter reading proxy-mode callers keep (the browser there is Firefox, which decodes itself;
the helper only counts or reads): every gzip member, zlib's own CRC32/ISIZE and header checks, raw deflate told by
its first byte, and a stream cut short fails at `finish` (response_tally.py counts its decoded size as unknown)."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from typing import Protocol

import brotli
import zstandard

from ..engine.errors import FetchError
from .gzip_header import GzipHeader, InvalidHeader

PIECE = 256 * 1024  # decoded bytes `pieces` yields at a time (zstd's may be up to ~1 MiB more: _Zstd)
# zstd's API has no output limit: its input is fed this many bytes at a time. A block of 128 KiB needs at least 4
# coded bytes (an RLE block), so one feed decodes to at most ~9 blocks.
_ZSTD_FEED = 32
_ZSTD_WINDOW_MAX = 1 << 23  # Chromium's windowLogMax (zstd_source_stream.cc): larger frames fail there
# Chromium sniffs a deflate body's zlib header until this many bytes went in without output (gzip_source_stream.cc)
_SNIFF_MAX = 1000
_ZLIB_HEADER = b"\x78\x01"  # what Chromium puts before raw deflate to inflate it as zlib-wrapped


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


class _ChromiumZlib:
    """gzip or deflate as Chromium undoes them (gzip_source_stream.cc): see the module's docstring."""

    def __init__(self, *, gzip: bool) -> None:
        self._header = GzipHeader() if gzip else None
        # gzip: raw deflate after the header Chromium reads itself; deflate: zlib-wrapped, until sniffed otherwise
        self._d = zlib.decompressobj(-zlib.MAX_WBITS if gzip else zlib.MAX_WBITS)
        self._sniffing = not gzip
        self._replay = b""  # a deflate body's start while sniffing, inflated again if zlib refuses what follows
        self._done = False  # the (first) stream ended: whatever follows is ignored, as Chromium ignores it

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        if self._done or not data:
            return
        if self._header is not None and not self._header.done:
            try:
                data = data[self._header.feed(data) :]
            except InvalidHeader as e:
                raise FetchError("decode_failed", "the body is not gzip") from e
            if not data:
                return
        out: bytes | None = None  # a piece the sniff already inflated: the loop's first
        if self._sniffing:
            try:
                out = self._d.decompress(data, size)
            except zlib.error:
                # Not zlib-wrapped (no output yet): raw deflate, inflated behind a zlib header from the start
                self._sniffing = False
                self._d = zlib.decompressobj(zlib.MAX_WBITS)
                self._d.decompress(_ZLIB_HEADER)
                data, self._replay = self._replay + data, b""
            else:
                if out or self._d.eof or len(self._replay) + len(data) >= _SNIFF_MAX:
                    self._sniffing, self._replay = False, b""
                else:  # no output and all taken: kept to replay
                    self._replay += data
                    return
        while True:
            if out is None:
                out = self._d.decompress(data, size)
            if out:
                yield out
            if self._d.eof:
                self._done = True
                return
            data = self._d.unconsumed_tail
            if not data and len(out) < size:  # (a full piece may leave output inside: asked again with no input)
                return
            out = None

    def finish(self) -> bytes:
        # A stream cut short is no error (Chromium shows what inflated so far); pieces left nothing inside
        return b"" if self._done else self._d.flush()

    def prefix(self, data: bytes, limit: int) -> bytes:
        out = b""
        for piece in self.pieces(data, max(1, min(limit, PIECE))):
            out += piece
            if len(out) >= limit:
                break
        return out[:limit]


class _Brotli:
    def __init__(self, *, strict: bool = False) -> None:
        self._d = brotli.Decompressor()
        self._strict = strict
        self._any = False  # an empty body under the label (an empty redirect) is empty, as with the other codings

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        self._any = self._any or bool(data)
        if not data and self._d.is_finished():
            return
        out = bytes(self._d.process(data, output_buffer_limit=size))
        # The binding may return with output still inside, even short of the limit and with all input taken (a piece
        # of an uncompressed meta-block): asked again with no input until it gives none, so nothing decoded waits for
        # the next read, nor is lost at the end of the body.
        while out:
            yield out
            out = bytes(self._d.process(b"", output_buffer_limit=size))

    def finish(self) -> bytes:
        out = b"".join(self.pieces(b""))  # drained (pieces drains too: this is what a caller left inside)
        if self._strict and self._any and not self._d.is_finished():
            raise FetchError("decode_failed", "brotli body ends early")
        return out

    def prefix(self, data: bytes, limit: int) -> bytes:
        return bytes(self._d.process(data, output_buffer_limit=limit))[:limit]


class _Zstd:
    def __init__(self, *, strict: bool = False) -> None:
        self._strict = strict
        self._d = self._frame()
        self._any = False

    def _frame(self) -> zstandard.ZstdDecompressionObj:
        if self._strict:
            return zstandard.ZstdDecompressor().decompressobj()
        return zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW_MAX).decompressobj()

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
                    self._d = self._frame()
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
        if self._strict and self._any and not self._d.eof:
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


def _one(coding: str, strict: bool) -> Decoder | None:
    if coding in ("gzip", "x-gzip"):
        return _Zlib(16 + zlib.MAX_WBITS) if strict else _ChromiumZlib(gzip=True)
    if coding == "deflate":
        return _Zlib(zlib.MAX_WBITS, deflate=True) if strict else _ChromiumZlib(gzip=False)
    if coding == "br":
        return _Brotli(strict=strict)
    if coding == "zstd":
        return _Zstd(strict=strict)
    if coding == "identity":
        return None
    raise FetchError("decode_failed", f"unsupported Content-Encoding {coding!r}")


def decoder_for(content_encoding: str | None, *, strict: bool = False) -> Decoder | None:
    """A decoder for the header value, None for identity; FetchError for a coding we cannot undo. Chromium's reading
    of the body, or with `strict` the stricter one (the module's docstring)."""
    if not content_encoding:
        return None
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    decoders = [d for d in (_one(c, strict) for c in reversed(codings)) if d is not None]
    if not decoders:
        return None
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)


def decoded_prefix(content_encoding: str | None, data: bytes, limit: int) -> bytes:
    """What the start of a coded body (`data`: the whole body or what arrived of it) decodes to, at most `limit`
    bytes, however much it would expand: for reading a body, not delivering it (a cut stream yields what it holds
    so far). FetchError for a coding the helper cannot undo or data that is not of it. Read strictly (every gzip
    member): its reader is proxy mode's discovery, where the browser is Firefox, not Chromium."""
    decoder = decoder_for(content_encoding, strict=True)
    if decoder is None:
        return data[:limit]
    try:
        return decoder.prefix(data, limit)[:limit]
    except (zlib.error, brotli.error, zstandard.ZstdError) as e:
        raise FetchError("decode_failed", f"cannot decode the body: {e}") from e


def decodes(content_encoding: str | None, body: bytes) -> bool:
    """Does a whole body (a stored one) decode as the default reading decodes it, as Chromium would, without an
    error? Its output is counted away a piece at a time, never held. A coding the helper does not undo is not the
    body's fault (the decoding sink fails it wherever it comes from): True."""
    try:
        decoder = decoder_for(content_encoding)
    except FetchError:
        return True
    if decoder is None:
        return True
    try:
        for _ in decoder.pieces(body):
            pass
        decoder.finish()
    except Exception:  # zlib.error, brotli.error, zstd errors, FetchError: all mean a body that does not decode
        return False
    return True
