"""stream/decode.py decoded_prefix: what a discovery reader takes of a coded body. For every coding the helper
undoes, the decoded prefix of what arrived so far is the start of the body, never more than the limit however much
the body expands (a body of 64 MiB of zeros sent as a few kilobytes reads as the limit, no more), and data that is
not of the coding it claims is an error."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine import FetchError
from lanefetch.stream.decode import decoded_prefix

CODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
    "identity": lambda b: b,
}


@settings(max_examples=60)
@given(st.sampled_from(sorted(CODERS)), st.binary(max_size=20000), st.integers(1, 30000), st.data())
def test_the_prefix_of_what_arrived_is_the_start_of_the_body(coding: str, body: bytes, limit: int,
                                                           data: st.DataObject) -> None:
    coded = CODERS[coding](body)
    assert decoded_prefix(coding, coded, limit) == body[:limit]
    cut = data.draw(st.integers(0, len(coded)))
    part = decoded_prefix(coding, coded[:cut], limit) if cut else b""
    assert body.startswith(part) and len(part) <= limit


def test_two_codings_are_undone_in_reverse() -> None:
    body = b"p{margin:0}" * 300
    assert decoded_prefix("gzip, br", brotli.compress(gzip.compress(body)), 10_000) == body[:10_000]


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_bomb_reads_as_the_limit_and_is_never_expanded_whole(coding: str) -> None:
    bomb = CODERS[coding](bytes(64 << 20))
    assert len(bomb) < 300_000
    tracemalloc.start()
    try:
        assert decoded_prefix(coding, bomb, 1 << 20) == bytes(1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak} bytes held while reading 1 MiB of a 64 MiB body"


def test_raw_deflate_and_concatenated_gzip_members_read_as_their_body() -> None:
    body = b"a stylesheet " * 500
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert decoded_prefix("deflate", raw.compress(body) + raw.flush(), 100_000) == body
    assert decoded_prefix("gzip", gzip.compress(body[:3000]) + gzip.compress(body[3000:]), 100_000) == body


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd", "compress"])
def test_data_not_of_its_coding_is_an_error(coding: str) -> None:
    with pytest.raises(FetchError):
        decoded_prefix(coding, b"this is not compressed at all, not even a little" * 3, 1000)
