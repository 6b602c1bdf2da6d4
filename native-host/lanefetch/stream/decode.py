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
- br: the stream; the decoder is drained of what it holds (the Python binding may return with output inside), and
  whatever follows the end of the stream is ignored (brotli_source_stream.cc drops input after
  BROTLI_DECODER_RESULT_SUCCESS). The binding fails a call that reaches the end with input left, losing that call's
  output and its decoder, and says no more where the end was: the coded bytes fed so far are held (references, up
  to _HOLD_MAX), and on such a failure fed again to fresh decoders, the last read in ever smaller steps, until one
  stops exactly at the end (or fails on data that is corrupt, as Chromium fails it); output already given is not
  given again. That costs nothing until a body has bytes after its end.
- zstd: one frame after another; a window above 8 MiB fails (Chromium's windowLogMax 23, RFC 8878 §3.1.1.1.2).
  Bytes after the last frame are read as the next frame, here as in zstd_source_stream.cc: a skippable frame is
  skipped, anything else fails.
- A stream cut short (the body ended before the coding did) is no error for any of them: Chromium shows what
  decoded so far (gzip/deflate stop; br and zstd note it in a histogram only). Corrupt data fails, as there.
- The value (chromium_codings): any item Chromium does not undo (`identity`, an empty one as in `gzip,`, a name it
  does not know) has it pass the whole body through undecoded (URLRequestHttpJob::SetUpSourceStream), the codings
  named before it included: decoder_for gives None, and the decoding sink delivers the body as it came, with its
  fields. What Chromium fails before reading the body (HttpNetworkTransaction::ContentEncodingsValid: a coding the
  request's Accept-Encoding did not offer, a value it cannot parse) is chromium_refuses.
What still differs from Chromium is in docs/architecture.md ("Decoding").

`strict=True` is the stricter reading proxy-mode callers keep (the browser there is Firefox, which decodes itself;
the helper only counts or reads): every gzip member, zlib's own CRC32/ISIZE and header checks, raw deflate told by
its first byte, bytes after a br stream fail, `identity` is skipped and a coding the helper cannot undo is a
FetchError, and a stream cut short fails at `finish` (response_tally.py counts its decoded size as unknown)."""

from __future__ import annotations

import io
import itertools
import re
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
# A br body's coded bytes are held (to find its end again, _Brotli._replay) up to this many: past it, bytes after
# the end fail the body. The extension fulfils at most 8 MiB decoded (response-assembler.ts), which brotli never
# codes into more than this, so only a body the browser gets anyway is past it.
_HOLD_MAX = 16 * 1024 * 1024
_REPLAY_STEPS = (4096, 64, 1)  # the replay's steps: a few fresh decoders, each at most `step` calls per piece


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


def _prefix_by_pieces(decoder: Decoder, data: bytes, limit: int) -> bytes:
    """Decoder.prefix for a decoder whose `pieces` bound each output: its pieces until `limit` bytes came."""
    out = b""
    for piece in decoder.pieces(data, max(1, min(limit, PIECE))):
        out += piece
        if len(out) >= limit:
            break
    return out[:limit]


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
        return _prefix_by_pieces(self, data, limit)


class _Brotli:
    def __init__(self, *, strict: bool = False) -> None:
        self._d = brotli.Decompressor()
        self._strict = strict
        self._any = False  # an empty body under the label (an empty redirect) is empty, as with the other codings
        # Chromium's reading: the coded bytes fed so far (references, no copies), to find the stream's end again
        # when a read holds it with bytes after it (_replay); None strictly, and past _HOLD_MAX
        self._held: list[bytes] | None = None if strict else []
        self._held_bytes = 0
        self._out = 0  # decoded bytes yielded so far

    def decode(self, data: bytes) -> bytes:
        return b"".join(self.pieces(data))

    def pieces(self, data: bytes, size: int = PIECE) -> Iterator[bytes]:
        self._any = self._any or bool(data)
        if self._strict:
            yield from _drained(self._d, data, size)
            return
        if self._d.is_finished():
            return  # whatever follows the end of the stream is ignored, as Chromium ignores it
        try:
            for out in _drained(self._d, data, size):
                self._out += len(out)
                yield out
        except brotli.error:
            # Corrupt data, or the stream ended inside `data` with bytes after it: the binding fails that too, and
            # its decoder is gone with the output of its last call. Only a decoder fed again from the start, the
            # end's read a few bytes at a time, tells which (and gives that output).
            if self._held is None:
                raise
            self._held.append(data)
            body, self._held = b"".join(self._held), None
            yield from self._replay(body, len(body) - len(data), size)
            return
        if self._held is not None and not self._d.is_finished():
            self._held.append(data)
            self._held_bytes += len(data)
            if self._held_bytes > _HOLD_MAX:
                self._held = None

    def _replay(self, body: bytes, good: int, size: int) -> Iterator[bytes]:
        """`body`: every coded byte fed; its first `good` bytes were fed without reaching the end or an error.
        Fed to fresh decoders in ever smaller steps (the binding fails only a call that reaches the end with input
        left), until one ends exactly where the stream ends; output already yielded is not yielded again."""
        for step in _REPLAY_STEPS:
            d = brotli.Decompressor()
            produced = 0
            # (lazily: one step a call, never a list as long as the body)
            bounds = itertools.chain([(0, good)], ((i, min(i + step, len(body))) for i in range(good, len(body), step)))
            try:
                for lo, hi in bounds:
                    for out in _drained(d, body[lo:hi], size):
                        produced += len(out)
                        if produced > self._out:
                            out = out[len(out) - (produced - self._out) :]
                            self._out = produced
                            yield out
                    if d.is_finished():
                        self._d = d
                        return
                    good = hi
            except brotli.error:
                if step == 1:
                    raise  # corrupt data where the stream should go on, as Chromium fails it
                continue
            self._d = d  # (all of it fed without an error nor the end: the stream goes on)
            return

    def finish(self) -> bytes:
        out = b"".join(self.pieces(b""))  # drained (pieces drains too: this is what a caller left inside)
        if self._strict and self._any and not self._d.is_finished():
            raise FetchError("decode_failed", "brotli body ends early")
        return out

    def prefix(self, data: bytes, limit: int) -> bytes:
        if self._strict:
            return bytes(self._d.process(data, output_buffer_limit=limit))[:limit]
        return _prefix_by_pieces(self, data, limit)


def _drained(d: brotli.Decompressor, data: bytes, size: int) -> Iterator[bytes]:
    """What `data` decodes to, in pieces of about `size`. The binding may return with output still inside, even
    short of the limit and with all input taken (a piece of an uncompressed meta-block): asked again with no input
    until it gives none, so nothing decoded waits for the next read, nor is lost at the end of the body."""
    if not data and d.is_finished():
        return
    out = bytes(d.process(data, output_buffer_limit=size))
    while out:
        yield out
        out = bytes(d.process(b"", output_buffer_limit=size))


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


# What Chromium undoes (FilterSourceStream::ParseEncodingType): any other name, `identity` and an empty item included,
# has it pass the whole body through undecoded
_CHROMIUM_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd"})


def chromium_codings(content_encoding: str) -> list[str] | None:
    """The codings Chromium undoes for this Content-Encoding value (every line of the field, one list), in the order
    they were applied; None where it passes the whole body through as it came: when any item is one it does not undo
    (URLRequestHttpJob::SetUpSourceStream stops at the first such and decodes nothing, the codings before it
    included). Items are split on commas and trimmed of spaces and tabs, compared without case; an empty one (`gzip,`,
    `,gzip`, `gzip,,br`) is the empty coding, passed through too (Chromium 156 shows `gzip,` over a gzip body as the
    gzip bytes)."""
    codings = [c.strip(" \t").lower() for c in content_encoding.strip(" \t").split(",")]
    if any(c not in _CHROMIUM_CODINGS for c in codings):
        return None
    return codings


_REDIRECTS = (301, 302, 303, 307, 308)


def chromium_refuses(content_encoding: str | None, accept_encoding: str | None, *, status: int,
                     location: str | None) -> str | None:
    """Why Chromium fails this response with ERR_CONTENT_DECODING_FAILED before any of its body
    (HttpNetworkTransaction::ContentEncodingsValid), None where it does not: a Content-Encoding it cannot parse (a
    quote, `=`, `;` or `*`, an item with a space inside), or one naming a coding it undoes (or an empty item between
    commas) that the request's Accept-Encoding did not offer, unless that is absent (everything offered) or the
    response is a redirect (crbug.com/714514). A coding it does not know is never refused (it passes through)."""
    if content_encoding is None:
        return None
    allowed = _accepted(accept_encoding or "")
    if allowed is None:
        return f"an Accept-Encoding Chromium cannot parse: {accept_encoding!r}"
    if any(ch in content_encoding for ch in '"=;*'):
        return f"a Content-Encoding Chromium cannot parse: {content_encoding!r}"
    used = set()
    for token in (t for t in content_encoding.split(",") if t):  # (base::StringTokenizer skips empty tokens)
        item = token.strip(" \t")
        if " " in item or "\t" in item:
            return f"a Content-Encoding Chromium cannot parse: {content_encoding!r}"
        used.add(item.lower())
    if "*" in allowed or (status in _REDIRECTS and location):
        return None
    unasked = sorted(c for c in used if (c in _CHROMIUM_CODINGS or not c) and c not in allowed)
    return f"Content-Encoding {unasked[0]!r} was not offered" if unasked else None


def _accepted(accept_encoding: str) -> set[str] | None:
    """The codings an Accept-Encoding offers as Chromium reads it (HttpUtil::ParseAcceptEncoding): those with a
    q-value above zero; `*` when it names none; identity always; gzip and x-gzip as one. None where it cannot parse
    it."""
    if '"' in accept_encoding:
        return None
    allowed: set[str] = set()
    for token in (t for t in accept_encoding.split(",") if t):
        entry = token.strip(" \t")
        name, semicolon, params = entry.partition(";")
        name = name.strip(" \t")
        if " " in name or "\t" in name:
            return None
        if not semicolon:
            allowed.add(name.lower())
            continue
        key, equals, q = params.strip(" \t").partition("=")
        q = q.strip(" \t")
        if not equals or key.strip(" \t").lower() != "q" or not re.fullmatch(r"1(\.0{0,3})?|0(\.\d{1,3})?", q):
            return None
        if q.startswith("1") or q.strip("0.") != "":
            allowed.add(name.lower())
    if not allowed:
        return {"*"}
    allowed.add("identity")
    if allowed & {"gzip", "x-gzip"}:
        allowed |= {"gzip", "x-gzip"}
    return allowed


def decoder_for(content_encoding: str | None, *, strict: bool = False) -> Decoder | None:
    """A decoder for the header value, None where the body is delivered as it came. Chromium's reading of the body
    (the module's docstring): None also for a value naming anything it does not undo (chromium_codings). With
    `strict`, the stricter one: `identity` is skipped, and a coding the helper cannot undo is FetchError."""
    if not content_encoding or not content_encoding.strip():
        return None
    if strict:
        codings: list[str] | None = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    else:
        codings = chromium_codings(content_encoding)
    if codings is None:
        return None
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
    error? Its output is counted away a piece at a time, never held. A body Chromium passes through as it came (a
    coding it does not know) has nothing to fail: True."""
    decoder = decoder_for(content_encoding)
    if decoder is None:
        return True
    try:
        for _ in decoder.pieces(body):
            pass
        decoder.finish()
    except Exception:  # zlib.error, brotli.error, zstd errors, FetchError: all mean a body that does not decode
        return False
    return True
