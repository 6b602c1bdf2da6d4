"""Framing of single and back-to-back responses; property tests split the bytes at every boundary."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine.response_parser import (
    BodyData,
    Framing,
    HeadReceived,
    Informational,
    MessageEnd,
    ParseError,
    ResponseParser,
)


def parse_all(method: str, chunks: list[bytes], eof: bool = False) -> tuple[list[object], ResponseParser]:
    p = ResponseParser(method)
    events: list[object] = []
    for c in chunks:
        events += p.feed(c)
        if p.done:
            break
    if eof and not p.done:
        events += p.feed_eof()
    return events, p


def body_of(events: list[object]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, BodyData))


def test_content_length_and_leftover() -> None:
    events, p = parse_all("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 204"])
    assert body_of(events) == b"hello"
    assert isinstance(events[-1], MessageEnd)
    assert p.leftover() == b"HTTP/1.1 204"
    assert p.keep_alive()


def test_cr_and_nul_inside_field_values_and_the_reason_become_spaces() -> None:
    """RFC 9112 §5.5: a recipient of CR, LF or NUL inside a field value must reject the message or replace each with SP
    before processing or forwarding it. Passed on, a bare CR reads as a line end to a browser that splits lines at
    any CR (a header injected into its response, or on the proxy's connection the framing of the next one), and a
    NUL as the separator of Chromium's binaryResponseHeaders. The reason phrase and trailers alike."""
    raw = (b"HTTP/1.1 200 O\rK\x00\r\nX-A: a\rContent-Length: 0\r\nX-B: b\x00c\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: t\rX-Inject: 1\r\n\r\n")
    events, _ = parse_all("GET", [raw])
    head = next(e for e in events if isinstance(e, HeadReceived)).head
    assert head.reason == "O K "
    assert ("X-A", "a Content-Length: 0") in head.headers and ("X-B", "b c") in head.headers
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.trailers == [("X-T", "t X-Inject: 1")]
    for text in [head.reason, *(v for _, v in head.headers), *(v for _, v in end.trailers)]:
        assert "\r" not in text and "\x00" not in text


def test_chunked_with_trailers_and_extensions() -> None:
    raw = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 9\r\n\r\n")
    events, p = parse_all("GET", [raw])
    assert body_of(events) == b"hello world"
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.trailers == [("X-Sum", "9")]
    assert p.framing is Framing.CHUNKED


def test_informational_responses_are_skipped() -> None:
    events, _ = parse_all("GET", [(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                                  b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")])
    assert [type(e) for e in events] == [Informational, Informational, HeadReceived, BodyData, MessageEnd]


@pytest.mark.parametrize(("method", "status"), [("HEAD", 200), ("GET", 204), ("GET", 304)])
def test_no_body_responses_ignore_content_length(method: str, status: int) -> None:
    events, p = parse_all(method, [f"HTTP/1.1 {status} X\r\nContent-Length: 99\r\n\r\nNEXT".encode()])
    assert isinstance(events[-1], MessageEnd) and body_of(events) == b""
    assert p.leftover() == b"NEXT"


def test_close_delimited_body_ends_at_eof() -> None:
    events, p = parse_all("GET", [b"HTTP/1.0 200 OK\r\n\r\nabc", b"def"], eof=True)
    assert body_of(events) == b"abcdef" and isinstance(events[-1], MessageEnd)
    assert not p.keep_alive()


def test_http10_keep_alive_token() -> None:
    _, p = parse_all("GET", [b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"])
    assert p.keep_alive()
    _, p = parse_all("GET", [b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"])
    assert not p.keep_alive()


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"SSH-2.0-OpenSSH_9\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ],
)
def test_malformed_responses_raise(raw: bytes) -> None:
    with pytest.raises(ParseError):
        parse_all("GET", [raw])


def test_eof_mid_body_is_an_error() -> None:
    with pytest.raises(ParseError):
        parse_all("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"], eof=True)


def test_head_too_large() -> None:
    p = ResponseParser("GET", max_head_bytes=100)
    with pytest.raises(ParseError):
        p.feed(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 200)


def _response(status: int, body: bytes, chunked: bool, trailers: bool) -> bytes:
    if status in (204, 304):
        return f"HTTP/1.1 {status} X\r\n\r\n".encode()
    if chunked:
        out = f"HTTP/1.1 {status} OK\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        for i in range(0, len(body), 7):
            piece = body[i : i + 7]
            out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        return out + b"0\r\n" + (b"T: 1\r\n" if trailers else b"") + b"\r\n"
    return f"HTTP/1.1 {status} OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


responses = st.lists(
    st.tuples(st.sampled_from([200, 204, 304, 404]), st.binary(max_size=60), st.booleans(), st.booleans()),
    min_size=1, max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(responses, st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_back_to_back_responses_split_anywhere(spec: list[tuple[int, bytes, bool, bool]], cuts: list[int]) -> None:
    """Pipelined responses parsed one parser per response, fed in arbitrary pieces, come out exact."""
    stream = b"".join(_response(*s) for s in spec)
    pieces, i, k = [], 0, 0
    while i < len(stream):
        n = cuts[k % len(cuts)]
        pieces.append(stream[i : i + n])
        i, k = i + n, k + 1
    results: list[tuple[int, bytes]] = []
    parser = ResponseParser("GET")
    got = b""
    status = 0
    pending = list(pieces)
    while pending:
        data = pending.pop(0)
        while data:
            for ev in parser.feed(data):
                if isinstance(ev, HeadReceived):
                    status = ev.head.status
                elif isinstance(ev, BodyData):
                    got += ev.data
                elif isinstance(ev, MessageEnd):
                    results.append((status, got))
                    got = b""
            data = b""
            if parser.done:
                data = parser.leftover()
                parser = ResponseParser("GET")
    expected = [(s, b"" if s in (204, 304) else body) for s, body, _, _ in spec]
    assert results == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_never_crashes_with_anything_but_parse_error(data: bytes) -> None:
    p = ResponseParser("GET")
    try:
        p.feed(data)
        p.feed_eof()
    except ParseError:
        pass


@pytest.mark.parametrize("te", ["gzip, chunked", "gzip", "deflate", "chunked, gzip"])
def test_a_transfer_coding_other_than_chunked_is_a_framing_error(te: str) -> None:
    # Nothing decodes them: the body would reach the page still coded, under no Content-Encoding.
    p = ResponseParser("GET")
    with pytest.raises(ParseError):
        p.feed(f"HTTP/1.1 200 OK\r\nTransfer-Encoding: {te}\r\n\r\n".encode())


def test_a_content_length_beside_transfer_encoding_is_not_delivered() -> None:
    # The body is delivered dechunked: the server's Content-Length is not its length (RFC 9112 §6.3), and the
    # proxy's answer to Firefox framed by it would end early and leave the rest as the next answer.
    from lanefetch.engine.exchange import delivered_head

    p = ResponseParser("GET")
    (head_event, *_) = p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
                              b"a\r\n0123456789\r\n0\r\n\r\n")
    assert isinstance(head_event, HeadReceived)
    fields = {k.lower() for k, _ in delivered_head(head_event.head).headers}
    assert "content-length" not in fields and "transfer-encoding" not in fields
