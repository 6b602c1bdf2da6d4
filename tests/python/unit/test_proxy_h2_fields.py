"""The proxy's HTTP/2 server side, its pure part (proxy/h2_server.py): a stream's request fields in, the origin's
response fields out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.exchange import DeliveredHead
from lanefetch.proxy.h2_server import bodiless, request_head, response_fields, trailer_fields
from lanefetch.proxy.request_meta import priority, resource_type


def fields(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in pairs]


BASE = (":method", "GET"), (":scheme", "https"), (":path", "/css/site.css?v=2")


def test_a_request_for_the_tunnels_host_becomes_an_absolute_request_with_its_cookie_crumbs_joined() -> None:
    taken = request_head(fields(*BASE, (":authority", "example.org"), ("cookie", "a=1"), ("accept", "text/css"),
                                ("cookie", "b=2"), ("sec-fetch-dest", "style"), ("priority", "u=0")),
                         "example.org")
    assert taken.refusal is None and taken.head is not None
    head = taken.head
    assert (head.method, head.target) == ("GET", "https://example.org/css/site.css?v=2")
    assert head.get_all("cookie") == ["a=1; b=2"], "one field, RFC 9113 §8.2.3"
    assert head.get("host") == "example.org"
    assert (resource_type(head), priority(head)) == ("stylesheet", "VeryHigh")


def test_the_default_port_may_be_named() -> None:
    head = request_head(fields(*BASE, (":authority", "example.org:443")), "example.org").head
    assert head is not None and head.target.startswith("https://example.org/")


def test_another_host_a_plain_scheme_or_a_connect_is_refused() -> None:
    assert request_head(fields(*BASE, (":authority", "evil.example")), "example.org").refusal == (
        421, "this connection serves example.org only")
    plain = [(k, v) if k != ":scheme" else (k, "http") for k, v in BASE]
    assert request_head(fields(*plain, (":authority", "example.org")), "example.org").refusal is not None
    status = request_head(fields((":method", "CONNECT"), (":authority", "example.org:443")), "example.org").refusal
    assert status is not None and status[0] == 501


def test_the_response_keeps_the_origins_fields_but_not_its_connections() -> None:
    head = DeliveredHead(200, "OK", "1.1", [
        ("Content-Type", "text/css"), ("Connection", "keep-alive, X-Hop"), ("Keep-Alive", "timeout=5"),
        ("Transfer-Encoding", "chunked"), ("X-Hop", "1"), ("Content-Encoding", "gzip"), ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"), ("Upgrade", "h2c"), ("ETag", ' "x" ')], decoded=False)
    assert response_fields(head) == [(":status", "200"), ("content-type", "text/css"), ("content-encoding", "gzip"),
                                     ("set-cookie", "a=1"), ("set-cookie", "b=2"), ("etag", '"x"')]
    assert trailer_fields([("Server-Timing", "db;dur=3"), ("Transfer-Encoding", "x")]) == [
        ("server-timing", "db;dur=3")]


@given(st.sampled_from(["GET", "HEAD", "POST"]), st.integers(100, 599))
def test_only_heads_204s_304s_and_informational_answers_are_bodiless(method: str, status: int) -> None:
    assert bodiless(method, status) == (method == "HEAD" or status in (204, 304) or status < 200)
