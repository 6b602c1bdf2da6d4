"""stream/decode.py read as Chromium reads coded bodies (net/filter/*_source_stream.cc), the default for what the
helper delivers in debugger mode: round trips in any pieces, a body cut at every byte delivering the start of what
it holds and no error, gzip's first member only (trailer unchecked, what follows ignored), deflate with or without
its zlib wrapper, br drained of what its decoder holds, zstd's window bounded as Chromium bounds it; `strict=True`
keeps the stricter reading (every member, checksums, a cut body fails at its end)."""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine import FetchError
from lanefetch.stream.decode import Decoder, chromium_refuses, decoder_for, decodes


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


CODERS = {
    "gzip": lambda b: gzip.compress(b, mtime=0),
    "deflate": zlib.compress,
    "raw-deflate": raw_deflate,
    "br": brotli.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}


def label(coding: str) -> str:
    return "deflate" if coding == "raw-deflate" else coding


def run(decoder: Decoder | None, coded: bytes, step: int) -> bytes:
    assert decoder is not None
    out = b""
    for i in range(0, len(coded), step):
        out += b"".join(decoder.pieces(coded[i : i + step]))
    return out + decoder.finish()


def chromium(coding: str, coded: bytes, step: int = 1 << 20) -> bytes:
    return run(decoder_for(label(coding)), coded, step)


def member(body: bytes, *, flags: int = 0, header_extra: bytes = b"", crc: int | None = None,
           size: int | None = None) -> bytes:
    """A gzip member built by hand (RFC 1952), its optional header parts and trailer as given."""
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff" + header_extra
    trailer = struct.pack("<II", zlib.crc32(body) if crc is None else crc, len(body) if size is None else size)
    return head + raw_deflate(body) + trailer


bodies = st.one_of(st.binary(max_size=5000), st.text(max_size=3000).map(str.encode))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(CODERS)), bodies, st.integers(1, 6000))
def test_a_whole_body_decodes_to_itself_in_any_pieces(coding: str, body: bytes, step: int) -> None:
    assert chromium(coding, CODERS[coding](body), step) == body


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(CODERS)), st.binary(max_size=300))
def test_a_body_cut_at_any_byte_delivers_the_start_of_what_it_holds_and_no_error(coding: str, body: bytes) -> None:
    """Chromium ends a coded body that stops before its coding does without an error: gzip and deflate stop
    inflating, br and zstd only note it in a histogram; the page gets what decoded."""
    coded = CODERS[coding](body)
    for cut in range(len(coded) + 1):
        got = chromium(coding, coded[:cut])
        assert body.startswith(got), (cut, got)
    assert chromium(coding, coded) == body


@pytest.mark.parametrize("coding", sorted(CODERS))
def test_strict_fails_a_body_cut_short_at_its_end(coding: str) -> None:
    coded = CODERS[coding](os.urandom(3000))
    decoder = decoder_for(label(coding), strict=True)
    assert decoder is not None
    decoder.decode(coded[: len(coded) // 2])
    with pytest.raises(FetchError):
        decoder.finish()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=2000), min_size=2, max_size=4), st.integers(1, 3000))
def test_gzip_is_its_first_member_only(parts: list[bytes], step: int) -> None:
    """Chromium inflates the first member and ignores every byte after it (gzip_source_stream.cc,
    STATE_IGNORING_EXTRA_BYTES); the helper delivered all the members, a body the page never sees. Strictly (proxy
    mode's counts, where Firefox decodes) all of them are read."""
    coded = b"".join(gzip.compress(p) for p in parts)
    assert chromium("gzip", coded, step) == parts[0]
    assert run(decoder_for("gzip", strict=True), coded, step) == b"".join(parts)


@pytest.mark.parametrize("trailing", [b"", b"\0", b"garbage after the member", b"\x1f\x8b\x08 not a member"])
def test_what_follows_the_first_gzip_member_is_ignored(trailing: bytes) -> None:
    body = b"<p>hello</p>\n" * 300
    assert chromium("gzip", gzip.compress(body) + trailing) == body


@pytest.mark.parametrize(("crc", "size"), [(0, None), (None, 7), (0xDEADBEEF, 0)])
def test_a_gzip_trailer_that_does_not_match_is_not_checked(crc: int | None, size: int | None) -> None:
    """Chromium skips the trailer's 8 bytes unread: a body whose CRC32 or ISIZE is wrong (a proxy that rewrote the
    body and not the trailer) is shown. zlib's gzip mode fails it: so did the helper, the page losing the body."""
    body = b"console.log('checked by no one');\n" * 200
    coded = member(body, crc=crc, size=size)
    assert chromium("gzip", coded) == body
    with pytest.raises(zlib.error):
        zlib.decompress(coded, 16 + zlib.MAX_WBITS)


@pytest.mark.parametrize(("flags", "extra"), [
    (0x02, b"\0\0"),  # FHCRC, a header CRC that is wrong: Chromium skips it, zlib checks it
    (0xE0, b""),  # reserved bits: Chromium ignores them, zlib refuses
    (0x01 | 0x04 | 0x08 | 0x10 | 0x02, b"\x03\0abc" + b"name\0" + b"comment\0" + b"\xff\xff"),
    (0x04, b"\0\0"),  # an empty extra field
])
def test_a_gzip_header_is_read_as_chromium_reads_it(flags: int, extra: bytes) -> None:
    body = b"body { margin: 0 }\n" * 100
    coded = member(body, flags=flags, header_extra=extra)
    for step in (1, 2, 3, 7, len(coded)):
        assert chromium("gzip", coded, step) == body


@pytest.mark.parametrize("start", [b"\x1f\x8c", b"\x1f\x8b\x07", b"<html>", b"\x8b\x1f"])
def test_a_body_that_does_not_start_as_gzip_fails(start: bytes) -> None:
    with pytest.raises(FetchError) as e:
        chromium("gzip", start + b"\0" * 40)
    assert e.value.code == "decode_failed"


def test_a_gzip_body_cut_inside_its_header_is_empty() -> None:
    coded = member(b"x" * 100, flags=0x08, header_extra=b"a-long-file-name.txt\0")
    for cut in range(0, 30):
        assert chromium("gzip", coded[:cut]) == b""


@settings(max_examples=40, deadline=None)
@given(bodies, st.integers(1, 3000), st.sampled_from([b"", b"x", b"trailing bytes"]))
def test_deflate_with_its_zlib_wrapper_ignores_what_follows_its_end(body: bytes, step: int, trailing: bytes) -> None:
    assert chromium("deflate", zlib.compress(body) + trailing, step) == body


@settings(max_examples=60, deadline=None)
@given(bodies, st.integers(1, 3000), st.integers(0, 9))
def test_raw_deflate_is_sniffed_as_chromium_sniffs_it(body: bytes, step: int, level: int) -> None:
    """Chromium inflates a deflate body as zlib-wrapped and, where zlib refuses its start before any output, puts a
    zlib header before it and inflates it all again (crbug.com/677001): any raw deflate body, whatever its first
    byte, in any pieces, the sniffed bytes given back."""
    c = zlib.compressobj(level, wbits=-zlib.MAX_WBITS)
    coded = c.compress(body) + c.flush()
    assert chromium("deflate", coded, step) == body


def test_a_zlib_wrapped_body_whose_checksum_is_wrong_fails_as_in_chromium() -> None:
    """zlib checks the Adler-32 of a zlib-wrapped body, in Chromium as here: Z_DATA_ERROR, the load failed."""
    coded = bytearray(zlib.compress(b"checksummed " * 100))
    coded[-1] ^= 0xFF
    with pytest.raises(zlib.error):
        chromium("deflate", bytes(coded))


def test_raw_deflate_sniffed_past_many_empty_stored_blocks() -> None:
    """Raw deflate that begins with empty stored blocks (a flush before any data) has no output for a while: the
    sniffed bytes must be replayed whole once zlib refuses them."""
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    coded = b"".join(c.flush(zlib.Z_SYNC_FLUSH) for _ in range(3)) + c.compress(b"late " * 50) + c.flush()
    for step in (1, 5, len(coded)):
        assert chromium("deflate", coded, step) == b"late " * 50


def test_brotli_is_drained_of_what_its_decoder_holds() -> None:
    """The binding may return with output inside (here an uncompressed meta-block of random bytes), even short of
    the limit: the helper took the first piece and returned, so a body cut short (or at its end) lost what the
    decoder held, about 17 KiB here, that Chromium's decoder pushes out."""
    body = os.urandom(100_000) + b"compressible " * 10_000
    coded = brotli.compress(body)
    cut = len(coded) // 2
    got = chromium("br", coded[:cut])
    assert body.startswith(got) and len(got) >= cut - 64, (len(got), cut)
    assert chromium("br", coded, 4096) == body


def test_brotli_pieces_leave_nothing_inside_for_the_next_read() -> None:
    body = os.urandom(100_000)
    coded = brotli.compress(body)
    decoder = decoder_for("br")
    assert decoder is not None
    got = b"".join(decoder.pieces(coded[:60_000]))
    assert len(got) >= 60_000 - 64
    assert got + b"".join(decoder.pieces(coded[60_000:])) + decoder.finish() == body


@settings(max_examples=60, deadline=None)
@given(body=bodies, trailing=st.binary(min_size=1, max_size=3000), step=st.integers(1, 6000))
def test_brotli_ignores_whatever_follows_the_end_of_its_stream(body: bytes, trailing: bytes, step: int) -> None:
    """Chromium's BrotliSourceStream takes what follows BROTLI_DECODER_RESULT_SUCCESS and drops it; the Python
    binding fails a call that reaches the end with input left (its output lost), so the helper failed such a body
    (`decode_failed`) where Chromium shows it. In any pieces, the bytes after the end in the same read or later."""
    assert chromium("br", brotli.compress(body) + trailing, step) == body


def test_brotli_bytes_after_the_end_of_a_long_body_in_one_read() -> None:
    """The end found again in a body of many reads, the last holding the end and more, and output the binding
    gave before it failed is not given twice."""
    body = b"".join(b"line %d\n" % i for i in range(100_000))
    coded = brotli.compress(body) + os.urandom(50_000)
    assert chromium("br", coded, 1 << 16) == body
    assert chromium("br", coded) == body


def test_strict_brotli_still_fails_bytes_after_its_end() -> None:
    """Proxy mode's reading (response_tally.py counts it for Firefox) is not Chromium's: unchanged."""
    with pytest.raises(brotli.error):
        run(decoder_for("br", strict=True), brotli.compress(b"x" * 100) + b"more", 1 << 20)


def test_corrupt_brotli_data_after_a_good_start_still_fails() -> None:
    body = b"".join(b"%d " % i for i in range(50_000))
    coded = bytearray(brotli.compress(body))
    coded[len(coded) // 2 :] = bytes(len(coded) - len(coded) // 2)  # (zeros: a code the decoder refuses, later on)
    with pytest.raises(brotli.error):
        chromium("br", bytes(coded), 1000)


@pytest.mark.parametrize("value", ["foo", "identity", "gzip, foo", "foo, gzip", "br, identity", "gzip, , br",
                                   "GZIP, x-custom", "gzip,", ",gzip", "gzip,,br"])
def test_a_coding_chromium_does_not_undo_passes_the_whole_body_through(value: str) -> None:
    """URLRequestHttpJob::SetUpSourceStream: an item it does not know (identity and an empty one included) has it
    return the raw body, the codings named before it included; the helper failed it (`decode_failed`), or skipped
    `identity` and empty items and decoded the rest. (Chromium 156 shows `gzip,` over a gzip body as its bytes.)"""
    assert decoder_for(value) is None
    assert decodes(value, b"anything")


@pytest.mark.parametrize(("value", "strict_ok"), [("foo", False), ("identity", True), ("gzip, foo", False)])
def test_strict_reading_of_unknown_codings_is_unchanged(value: str, strict_ok: bool) -> None:
    if strict_ok:
        assert decoder_for(value, strict=True) is None
    else:
        with pytest.raises(FetchError):
            decoder_for(value, strict=True)


@pytest.mark.parametrize("value", ["gzip", "x-gzip, br", "GZip ,deflate", " gzip\t", "zstd,br"])
def test_codings_chromium_knows_are_decoded(value: str) -> None:
    assert decoder_for(value) is not None


def test_a_zstd_frame_whose_window_is_above_8_mib_fails_as_in_chromium() -> None:
    """Chromium sets windowLogMax 23 (RFC 8878's 8 MiB recommendation): a frame asking more fails there
    (ERR_ZSTD_WINDOW_SIZE_TOO_BIG), so here too; strictly it is read."""
    params = zstandard.ZstdCompressionParameters(window_log=24)
    body = os.urandom(1 << 16) * 200
    coded = zstandard.ZstdCompressor(compression_params=params).compress(body)
    with pytest.raises(zstandard.ZstdError):
        chromium("zstd", coded)
    assert run(decoder_for("zstd", strict=True), coded, 1 << 16) == body
    small = zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters(window_log=23))
    assert chromium("zstd", small.compress(body), 1 << 16) == body


@pytest.mark.parametrize(("coding", "kept"), [("gzip", 10), ("deflate", 2), ("raw-deflate", 0), ("br", 0),
                                             ("zstd", 4)])
def test_data_that_is_not_of_its_coding_fails(coding: str, kept: int) -> None:
    """Past what each reads of its header, bytes its decoder refuses (0xff: a reserved deflate block type, a brotli
    window, a zstd frame header) fail the body, as they fail it in Chromium (ERR_CONTENT_DECODING_FAILED)."""
    coded = CODERS[coding](b"".join(b"%d " % i for i in range(5000)))[:kept] + b"\xff" * 40
    with pytest.raises((FetchError, zlib.error, brotli.error, zstandard.ZstdError)):
        chromium(coding, coded)


@pytest.mark.parametrize(("coding", "body", "ok"), [
    ("gzip", gzip.compress(b"x" * 1000) + b"junk", True),
    ("gzip", member(b"x" * 1000, crc=0), True),
    ("gzip", b"\x1f\x8b\x08\0\0\0\0\0\0\xff" + b"\xff" * 20, False),
    ("br", brotli.compress(b"y" * 1000)[:-2], True),  # cut short: shown as far as it decodes
    ("zstd", b"\x28\xb5\x2f\xfd" + b"\xff" * 20, False),
    ("x-unknown", b"anything", True),  # Chromium shows it as it came
    (None, b"anything", True),
])
def test_decodes_says_whether_a_stored_body_decodes_as_chromium_would(coding: str | None, body: bytes,
                                                                       ok: bool) -> None:
    assert decodes(coding, body) is ok


A4 = "gzip, deflate, br, zstd"


@pytest.mark.parametrize(("coding", "offered", "status", "refused"), [
    ("gzip", A4, 200, False),
    ("gzip,", A4, 200, False),  # (passed through: chromium_codings)
    ("gzip, foo", "gzip", 200, False),  # an unknown coding is never refused
    ("compress", "gzip", 200, False),
    ("br", "gzip, deflate", 200, True),  # not offered: br to a host Chromium does not ask it of
    ("br", "gzip, deflate", 302, False),  # a redirect is let through (crbug.com/714514)
    ("br", None, 200, False),  # no Accept-Encoding: everything offered
    ("zstd", "gzip;q=1.0, zstd;q=0", 200, True),
    ("x-gzip", "gzip", 200, False),
    ("gzip, , br", A4, 200, True),  # the empty item was not offered
    ("gzip;q=1", A4, 200, True),  # cannot be parsed, offered or not
    ("gzip;q=1", None, 200, True),
    ("gzip foo", A4, 200, True),
    ('"gzip"', A4, 200, True),
])
def test_what_chromium_refuses_before_the_body(coding: str, offered: str | None, status: int, refused: bool) -> None:
    """HttpNetworkTransaction::ContentEncodingsValid (ERR_CONTENT_DECODING_FAILED), checked against Chromium 156 for
    `gzip, , br`, `gzip;q=1`, `gzip foo` (failed) and `gzip,` (shown, passed through)."""
    location = "/elsewhere" if status == 302 else None
    assert (chromium_refuses(coding, offered, status=status, location=location) is not None) is refused
