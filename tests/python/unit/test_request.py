"""URL validation, request serialization, priorities, address policy, decoding."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
import zstandard
from lanefetch.engine.address_policy import address_space_of, may_connect
from lanefetch.engine.errors import FetchError
from lanefetch.engine.request import (
    FetchRequest,
    parse_target,
    priority_key,
    serialize,
    validate,
)
from lanefetch.stream.decode import decoder_for


def test_serialize_strips_hop_by_hop_and_sets_host() -> None:
    req = FetchRequest("1", "GET", "http://Example.test:8080/a/b?x=1#frag", headers=[
        ("Host", "evil"), ("Connection", "keep-alive, X-Secret"), ("X-Secret", "1"), ("Keep-Alive", "5"),
        ("TE", "trailers"), ("Upgrade", "h2c"), ("Proxy-Authorization", "Basic x"), ("Cookie", "a=1"),
        ("Accept", "*/*"),
    ])
    wire = serialize(req, validate(req)).decode()
    assert wire.startswith("GET /a/b?x=1 HTTP/1.1\r\nHost: example.test:8080\r\n")
    assert "Cookie: a=1\r\n" in wire and "Accept: */*\r\n" in wire
    for dropped in ("evil", "X-Secret", "Keep-Alive", "TE:", "Upgrade", "Proxy-Authorization", "Connection"):
        assert dropped not in wire
    assert wire.endswith("\r\n\r\n")


def test_serialize_body_and_ipv6() -> None:
    req = FetchRequest("1", "POST", "https://[::1]/form", body=b"a=1")
    target = validate(req)
    assert target.origin.port == 443 and target.origin.host == "::1"
    wire = serialize(req, target)
    assert b"Host: [::1]\r\n" in wire and wire.endswith(b"Content-Length: 3\r\n\r\na=1")


@pytest.mark.parametrize("url", ["ftp://x/", "file:///etc/passwd", "javascript:alert(1)", "http:///nohost",
                                 "http://user:pw@host/", "http://[::1/", "data:text/plain,hi"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(FetchError) as e:
        parse_target(url)
    assert e.value.code == "bad_url"


@pytest.mark.parametrize("headers", [[("X", "a\r\nInjected: 1")], [("Bad Name", "1")], [("X", "nul\x00")]])
def test_header_injection_refused(headers: list[tuple[str, str]]) -> None:
    with pytest.raises(FetchError):
        validate(FetchRequest("1", "GET", "http://a.test/", headers=headers))


def test_get_with_body_refused() -> None:
    with pytest.raises(FetchError):
        validate(FetchRequest("1", "GET", "http://a.test/", body=b"x"))


def test_render_blocking_first() -> None:
    kinds = ["image", "other", "script", "fetch", "stylesheet", "font", "media"]
    reqs = [FetchRequest(str(i), "GET", "http://a/", resource_type=k) for i, k in enumerate(kinds)]
    ordered = [r.resource_type for r in sorted(reqs, key=priority_key)]
    assert set(ordered[:3]) == {"script", "stylesheet", "font"}
    assert ordered[3] == "fetch" and ordered[-1] == "other"
    hi = FetchRequest("h", "GET", "http://a/", resource_type="image", priority="High")
    lo = FetchRequest("l", "GET", "http://a/", resource_type="image", priority="Low")
    assert priority_key(hi) < priority_key(lo)


@pytest.mark.parametrize(("address", "space"), [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("0.0.0.0", "loopback"), ("10.1.2.3", "private"),
    ("192.168.1.1", "private"), ("172.16.5.5", "private"), ("169.254.1.1", "private"), ("fe80::1", "private"),
    ("fd00::1", "private"), ("100.64.0.1", "private"), ("::ffff:127.0.0.1", "loopback"), ("8.8.8.8", "public"),
    ("2606:4700::1111", "public"),
])
def test_address_spaces(address: str, space: str) -> None:
    assert address_space_of(address) == space


def test_may_connect_matrix() -> None:
    assert may_connect("public", "8.8.8.8")
    assert not may_connect("public", "10.0.0.1") and not may_connect("public", "127.0.0.1")
    assert may_connect("private", "10.0.0.1") and not may_connect("private", "127.0.0.1")
    assert may_connect("loopback", "127.0.0.1") and may_connect("loopback", "8.8.8.8")


DATA = b"lanefetch " * 5000


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-15)  # some servers send deflate without the zlib wrapper
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(("coding", "encoded"), [
    ("gzip", gzip.compress(DATA)),
    ("deflate", zlib.compress(DATA)),
    ("deflate", raw_deflate(DATA)),
    ("br", brotli.compress(DATA)),
    ("zstd", zstandard.ZstdCompressor().compress(DATA)),
    ("gzip, br", brotli.compress(gzip.compress(DATA))),
    ("identity", DATA),
])
def test_decoders_stream(coding: str, encoded: bytes) -> None:
    d = decoder_for(coding)
    if d is None:
        assert coding == "identity"
        return
    out = b"".join(d.decode(encoded[i : i + 333]) for i in range(0, len(encoded), 333)) + d.finish()
    assert out == DATA


def test_truncated_gzip_detected_when_strict() -> None:
    """Strictly (proxy mode's counts) a gzip body cut short fails at its end; Chromium's reading, the default,
    shows what it holds (test_decode_chromium.py)."""
    d = decoder_for("gzip", strict=True)
    assert d is not None
    d.decode(gzip.compress(DATA)[:100])
    with pytest.raises(FetchError):
        d.finish()


def test_unknown_coding() -> None:
    """Strictly (proxy mode's reading) a coding the helper cannot undo fails; Chromium's reading passes the body
    through as it came (test_decode_chromium.py)."""
    assert decoder_for("compress") is None
    with pytest.raises(FetchError) as e:
        decoder_for("compress", strict=True)
    assert e.value.code == "decode_failed"


def test_accept_encoding_as_the_browser_would_ask() -> None:
    from lanefetch.engine.request import with_accept_encoding

    def ae(req: FetchRequest, scheme: str = "https") -> str | None:
        with_accept_encoding(req, scheme)
        values = [v for k, v in req.headers if k.lower() == "accept-encoding"]
        assert len(values) <= 1
        return values[0] if values else None

    assert ae(FetchRequest("1", "GET", "https://a.test/x", decode=True)) == "gzip, deflate, br, zstd"
    assert ae(FetchRequest("1", "GET", "http://a.test/x", decode=True), "http") == "gzip, deflate"
    # this machine is asked for all four over http too, as Chromium asks it (net::IsLocalhost)
    for url in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://app.localhost./x", "http://[::1]/x"):
        assert ae(FetchRequest("1", "GET", url, decode=True), "http") == "gzip, deflate, br, zstd", url
    assert ae(FetchRequest("1", "GET", "http://127.0.0.1.example/x", decode=True), "http") == "gzip, deflate"
    assert ae(FetchRequest("1", "HEAD", "https://a.test/x", decode=True)) == "gzip, deflate, br, zstd"
    # the consumer takes coded bodies as they are (Firefox's proxy: its own header stands)
    assert ae(FetchRequest("1", "GET", "https://a.test/x")) is None
    assert ae(FetchRequest("1", "GET", "https://a.test/x", [("Accept-Encoding", "identity")], decode=True)) == \
        "identity"
    assert ae(FetchRequest("1", "GET", "https://a.test/x", [("Range", "bytes=0-9")], decode=True)) is None
    assert ae(FetchRequest("1", "GET", "https://a.test/x", decode=True, split=True)) is None
    assert ae(FetchRequest("1", "POST", "https://a.test/x", body=b"x", decode=True)) is None
