"""stream/decoding_sink.py: a coded body reaches the consumer decoded, its head without Content-Encoding and
Content-Length, and still marked when its pipeline place was not proven (whoever stores answers above it, a
prefetch flight's claimed answer kept in the cache, must see that)."""

from __future__ import annotations

import gzip

import brotli
import pytest
import zstandard
from lanefetch.engine import DeliveredHead, FetchError, FetchRequest, TimingReport
from lanefetch.stream.decoding_sink import DecodingSink


class Collect:
    def __init__(self) -> None:
        self.heads: list[DeliveredHead] = []
        self.data = b""

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        self.heads.append(head)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.data += data

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        pass

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        raise AssertionError(error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        pass


@pytest.mark.parametrize("unproven", [False, True])
async def test_a_decoded_head_keeps_whether_its_place_was_proven(unproven: bool) -> None:
    text = b"body { color: red }\n" * 200
    coded = gzip.compress(text)
    out = Collect()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/a.css", [], decode=True)
    headers = [("Content-Type", "text/css"), ("Content-Encoding", "gzip"), ("Content-Length", str(len(coded)))]
    await sink.head(request, DeliveredHead(200, "OK", "1.1", headers, False, unproven))
    await sink.body(request, coded)
    await sink.end(request, len(coded), [])
    (head,) = out.heads
    assert head.decoded and head.unproven is unproven
    assert head.headers == [("Content-Type", "text/css")]
    assert out.data == text


def _bomb(coding: str, size: int) -> bytes:
    zeros = bytes(size)
    if coding == "gzip":
        return gzip.compress(zeros, 1)
    if coding == "br":
        return brotli.compress(zeros, quality=1)
    return zstandard.ZstdCompressor(level=3).compress(zeros)


class Sizes(Collect):
    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[int] = []

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.pieces.append(len(data))


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
async def test_a_piece_that_expands_enormously_reaches_the_consumer_in_bounded_pieces(coding: str) -> None:
    """One read of a coded body can decode to thousands of times its size (zstd: 8 KiB to 256 MiB): decoded whole
    it was held in memory at once, a read of a hostile or merely very compressible answer taking gigabytes."""
    size = 128 * 1024 * 1024
    coded = _bomb(coding, size)
    out = Sizes()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/zeros", [], decode=True)
    await sink.head(request, DeliveredHead(200, "OK", "1.1", [("Content-Encoding", coding)], False))
    await sink.body(request, coded)
    await sink.end(request, len(coded), [])
    assert sum(out.pieces) == size
    assert max(out.pieces) <= 4 * 1024 * 1024, max(out.pieces)


class Errors(Collect):
    def __init__(self) -> None:
        super().__init__()
        self.errors: list[FetchError] = []
        self.ended = False

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        self.ended = True

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self.errors.append(error)


@pytest.mark.parametrize("split", [None, 1, 7, 33, 1000])
async def test_a_zstd_body_of_several_frames_is_decoded_whole(split: int | None) -> None:
    """A zstd body is one or more frames (RFC 8878 §3.1), decoded one after another, as the browsers decode it
    (and as decoded_prefix reads it): only the first frame was delivered, the rest dropped, and the response ended
    as complete, a script or style sheet cut short without an error."""
    parts = [b"first frame " * 50, b"second frame " * 70, b"third " * 30]
    coded = b"".join(zstandard.ZstdCompressor().compress(p) for p in parts)
    out = Errors()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/a.js", [], decode=True)
    await sink.head(request, DeliveredHead(200, "OK", "1.1", [("Content-Encoding", "zstd")], False))
    step = split or len(coded)
    for i in range(0, len(coded), step):
        await sink.body(request, coded[i : i + step])
    await sink.end(request, len(coded), [])
    assert not out.errors
    assert out.ended and out.data == b"".join(parts)


async def test_a_zstd_body_cut_inside_a_later_frame_is_delivered_as_far_as_it_decodes() -> None:
    """Chromium (zstd_source_stream.cc) ends a zstd body cut inside a frame without an error, the page getting what
    decoded (the cut noted in a histogram only): the helper failed it as `decode_failed`, where the browser shows it."""
    compressor = zstandard.ZstdCompressor()
    second = b"cut " * 400
    coded = compressor.compress(b"whole " * 40) + compressor.compress(second)[:-5]
    out = Errors()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/a.js", [], decode=True)
    await sink.head(request, DeliveredHead(200, "OK", "1.1", [("Content-Encoding", "zstd")], False))
    await sink.body(request, coded)
    await sink.end(request, len(coded), [])
    assert not out.errors and out.ended
    assert out.data.startswith(b"whole " * 40) and (b"whole " * 40 + second).startswith(out.data)


@pytest.mark.parametrize("lines", [["gzip", "br"], ["br", "gzip"]])
async def test_content_encoding_on_several_field_lines_is_one_list(lines: list[str]) -> None:
    """Field lines of one name are one comma-separated list (RFC 9110 §5.3), as Chromium reads Content-Encoding:
    only the first line was read, so a body coded twice failed."""
    text = b"console.log('decoded');\n" * 100
    coded = text
    for coding in lines:
        coded = gzip.compress(coded) if coding == "gzip" else brotli.compress(coded) if coding == "br" else coded
    out = Errors()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/a.js", [], decode=True)
    headers = [("Content-Type", "text/javascript")] + [("Content-Encoding", c) for c in lines]
    await sink.head(request, DeliveredHead(200, "OK", "1.1", headers, False))
    await sink.body(request, coded)
    await sink.end(request, len(coded), [])
    assert not out.errors
    (head,) = out.heads
    assert head.decoded and head.headers == [("Content-Type", "text/javascript")]
    assert out.data == text


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
@pytest.mark.parametrize("status", [200, 302])
async def test_an_empty_body_under_a_content_encoding_is_an_empty_body(coding: str, status: int) -> None:
    """Servers that compress every answer label empty ones too (a redirect, an empty 200 with Content-Length: 0):
    nothing arrived, so nothing is cut. gzip, deflate and zstd took it so; br failed it as `decode_failed` (the
    redirect lost)."""
    out = Errors()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/go", [], decode=True)
    headers = [("Location", "/there"), ("Content-Encoding", coding), ("Content-Length", "0")]
    await sink.head(request, DeliveredHead(status, "", "1.1", headers, False))
    await sink.end(request, 0, [])
    assert not out.errors
    assert out.ended and out.data == b""
    assert out.heads[0].headers == [("Location", "/there")]


@pytest.mark.parametrize("lines", [["foo"], ["identity"], ["gzip", "foo"], ["identity", "gzip"], ["br, x-custom"]])
async def test_a_coding_chromium_does_not_undo_is_delivered_as_it_came_with_its_fields(lines: list[str]) -> None:
    """Chromium passes a body whose Content-Encoding names anything it does not undo through undecoded, the codings
    before it included (URLRequestHttpJob::SetUpSourceStream), and shows the page its fields: the helper failed it
    (`decode_failed`), or skipped `identity` and decoded the gzip. Now it goes as it came, Content-Encoding and
    Content-Length kept, marked decoded (the extension fulfils it as it is)."""
    body = gzip.compress(b"<p>as it came</p>")
    out = Collect()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "GET", "http://example.test/a.html", [], decode=True)
    headers = [("Content-Type", "text/html"), *(("Content-Encoding", c) for c in lines),
               ("Content-Length", str(len(body)))]
    await sink.head(request, DeliveredHead(200, "OK", "1.1", headers, False))
    await sink.body(request, body)
    await sink.end(request, len(body), [])
    (head,) = out.heads
    assert head.decoded and head.headers == headers
    assert out.data == body


async def test_a_bodiless_answer_under_an_unknown_coding_is_left_as_it_was() -> None:
    """HEAD, 204, 304: no body to pass through; the head goes as before (not marked decoded)."""
    out = Collect()
    sink = DecodingSink(out)
    request = FetchRequest("r1", "HEAD", "http://example.test/a.html", [], decode=True)
    headers = [("Content-Encoding", "foo")]
    await sink.head(request, DeliveredHead(200, "OK", "1.1", headers, False))
    assert out.heads == [DeliveredHead(200, "OK", "1.1", headers, False)]


@pytest.mark.parametrize(("lines", "offered"), [(["br"], "gzip, deflate"), (["gzip", ""], "gzip, deflate, br, zstd"),
                                                (["gzip;q=1"], None)])
async def test_a_content_encoding_chromium_refuses_fails_before_the_body(lines: list[str], offered: str | None) -> None:
    """A coding the request did not offer, an empty item (a second, empty field line), a value Chromium cannot
    parse: Chromium fails the response (ERR_CONTENT_DECODING_FAILED, checked against Chromium 156); the helper
    decoded it, or passed it through. Now `decode_failed`, the browser then fetching it and failing it itself."""
    failed: list[FetchError] = []

    class Failing(Collect):
        async def error(self, request: FetchRequest, error: FetchError) -> None:
            failed.append(error)

    out = Failing()
    sink = DecodingSink(out)
    headers = [] if offered is None else [("Accept-Encoding", offered)]
    request = FetchRequest("r1", "GET", "http://example.test/a.js", headers, decode=True)
    body = gzip.compress(b"x" * 100)
    await sink.head(request, DeliveredHead(200, "OK", "1.1", [("Content-Encoding", c) for c in lines], False))
    await sink.body(request, body)
    await sink.end(request, len(body), [])
    assert not out.heads and not out.data
    assert [e.code for e in failed] == ["decode_failed"]
