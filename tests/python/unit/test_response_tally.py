"""What the proxy tells the extension about a response it wrote to Firefox (proxy/response_tally.py): the head, the
body as sent, and the body's decoded size, counted on the side."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
from lanefetch import protocol
from lanefetch.engine import DeliveredHead
from lanefetch.proxy import response_tally
from lanefetch.proxy.response_tally import DeliveredResponse, ResponseTally

TEXT = b"console.log('zipped');" * 50


def tally(headers: list[tuple[str, str]], chunks: list[bytes], status: int = 200) -> DeliveredResponse | None:
    t = ResponseTally()
    t.head(DeliveredHead(status, "OK", "1.1", headers, False))
    for c in chunks:
        t.body(c)
    return t.result()


def test_identity_body_sizes_are_the_bytes_sent() -> None:
    got = tally([("Content-Type", "image/png")], [b"x" * 100, b"y" * 95])
    assert got == DeliveredResponse(200, [("Content-Type", "image/png")], 195, 195)


def test_coded_bodies_report_sent_and_decoded_sizes_across_chunks() -> None:
    codings = (("gzip", gzip.compress(TEXT)), ("br", brotli.compress(TEXT)), ("deflate", zlib.compress(TEXT)))
    for coding, coded in codings:
        got = tally([("Content-Encoding", coding)], [coded[:7], coded[7:]])
        assert got is not None and (got.body_bytes, got.decoded_body_bytes) == (len(coded), len(TEXT)), coding


def test_content_encoding_on_several_field_lines_is_one_list() -> None:
    """Codings named on two field lines are one list (RFC 9110 §5.3), as the decoding sink and Chromium read them: the
    decoded size of gzip-then-br is counted, not left unknown for a br body taken as gzip alone."""
    coded = brotli.compress(gzip.compress(TEXT))
    got = tally([("Content-Encoding", "gzip"), ("Content-Encoding", "br")], [coded[:5], coded[5:]])
    assert got is not None and (got.body_bytes, got.decoded_body_bytes) == (len(coded), len(TEXT))


def test_unknown_sizes_stay_unknown_never_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    r = tally([("Content-Encoding", "gzip")], [b"not gzip at all"])
    assert r is not None and r.decoded_body_bytes is None
    assert (r := tally([("Content-Encoding", "x-custom")], [b"abc"])) is not None and r.decoded_body_bytes is None
    cut = gzip.compress(TEXT)[:-8]
    assert (r := tally([("Content-Encoding", "gzip")], [cut])) is not None and r.decoded_body_bytes is None
    monkeypatch.setattr(response_tally, "DECODE_COUNT_LIMIT", 10)
    big = gzip.compress(TEXT)
    assert (r := tally([("Content-Encoding", "gzip")], [big[:8], big[8:]])) is not None
    assert (r.body_bytes, r.decoded_body_bytes) == (len(big), None)


def test_no_head_no_report_and_a_head_only_response() -> None:
    assert ResponseTally().result() is None
    got = tally([("Content-Encoding", "gzip")], [], status=304)
    assert got == DeliveredResponse(304, [("Content-Encoding", "gzip")], 0, 0)


def test_the_protocol_messages_carry_them_and_validate() -> None:
    from lanefetch.engine import FetchRequest, TimingReport
    from lanefetch.engine.timing import RequestTiming

    request = FetchRequest(id="p1", method="GET", url="http://a.test/app.js", headers=[("Accept", "*/*")],
                           resource_type="script")
    proxied = protocol.proxied("c1", request)
    assert proxied["request_headers"] == [["Accept", "*/*"]]
    assert protocol.check(proxied, "ToExtension") is None
    report = TimingReport(RequestTiming(queued=0.0), None, 0, 300)
    message = protocol.timing("p1", report, DeliveredResponse(200, [("Content-Encoding", "gzip")], 120, 400))
    assert message["response"] == {"status": 200, "headers": [["Content-Encoding", "gzip"]], "body_bytes": 120,
                                   "decoded_body_bytes": 400}
    assert protocol.check(message, "ToExtension") is None
    assert "response" not in protocol.timing("p1", report)


@pytest.mark.parametrize("coding", ["br", "zstd"])
def test_counting_a_body_that_expands_enormously_holds_little_of_it(coding: str) -> None:
    """The decoded size is counted, never kept: one read that decodes to hundreds of MiB (zstd: 8 KiB to 256 MiB)
    must not be held in memory whole to be counted."""
    import tracemalloc

    import zstandard

    size = 128 * 1024 * 1024
    zeros = bytes(size)
    coded = brotli.compress(zeros, quality=1) if coding == "br" else zstandard.ZstdCompressor().compress(zeros)
    del zeros
    tracemalloc.start()
    try:
        got = tally([("Content-Encoding", coding)], [coded])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got is not None and got.decoded_body_bytes == size
    assert peak < 16 * 1024 * 1024, peak


def test_counting_stops_where_the_decoded_size_passes_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoded count's work is bounded too, not only its memory: a body of few coded bytes may decode to GiBs
    (1 KiB gzip members of 1 MiB of zeros, one after another; a 16 MiB zstd body to 512 GiB), and counting them all ran
    on the helper's event loop, every proxied response of every tab waiting. Above the limit the size is unknown."""
    from lanefetch.stream.decode import PIECE, decoder_for

    produced = 0

    class Counting:
        def __init__(self, coding: str | None, *, strict: bool = False) -> None:
            self.inner = decoder_for(coding, strict=strict)

        def pieces(self, data: bytes) -> object:
            nonlocal produced
            assert self.inner is not None
            for piece in self.inner.pieces(data):
                produced += len(piece)
                yield piece

        def finish(self) -> bytes:
            assert self.inner is not None
            return self.inner.finish()

    monkeypatch.setattr(response_tally, "decoder_for", Counting)
    monkeypatch.setattr(response_tally, "DECODED_COUNT_LIMIT", 4 * 1024 * 1024, raising=False)
    member = gzip.compress(bytes(1024 * 1024))
    bomb = member * 1024  # 1 GiB decoded
    got = tally([("Content-Encoding", "gzip")], [bomb[:65536], bomb[65536:]])
    assert got is not None and (got.body_bytes, got.decoded_body_bytes) == (len(bomb), None)
    assert produced <= 4 * 1024 * 1024 + 2 * PIECE, f"{produced} bytes decoded to count a body past the limit"
    monkeypatch.undo()
    ok = tally([("Content-Encoding", "gzip")], [member * 3])  # below the real limit: counted
    assert ok is not None and ok.decoded_body_bytes == 3 * 1024 * 1024
