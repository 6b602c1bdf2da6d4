"""The sans-I/O pipeline state machine and the per-origin pipelining policy, without sockets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState
from lanefetch.engine.pipeline import (
    ConnectionEnded,
    Misbehaviour,
    PipelineConnection,
    ResponseBody,
    ResponseComplete,
    ResponseStarted,
)
from lanefetch.engine.response_parser import Framing, ResponseHead


def ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def send(conn: PipelineConnection[str], *tokens: str, method: str = "GET") -> None:
    for t in tokens:
        conn.sent(t, method)


def test_first_request_alone_then_depth_limit() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    assert conn.can_send("GET", 1)
    send(conn, "a")
    assert not conn.can_send("GET", 1)
    assert conn.can_send("GET", 3)
    send(conn, "b", "c")
    assert not conn.can_send("GET", 3)


def test_non_idempotent_goes_alone() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a")
    assert not conn.can_send("POST", 8)
    conn2: PipelineConnection[str] = PipelineConnection()
    assert conn2.can_send("POST", 8)
    send(conn2, "p", method="POST")
    assert not conn2.can_send("GET", 8)


def test_responses_match_requests_in_order_across_one_read() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b", "c")
    events = conn.receive(ok(b"A") + ok(b"BB") + ok(b"CCC"))
    done = [e for e in events if isinstance(e, ResponseComplete)]
    assert [e.token for e in done] == ["a", "b", "c"]
    bodies: dict[str, bytes] = {}
    for e in events:
        if isinstance(e, ResponseBody):
            bodies[e.token] = bodies.get(e.token, b"") + e.data
    assert bodies == {"a": b"A", "b": b"BB", "c": b"CCC"}
    assert [e.pipelined for e in done] == [False, True, True]
    assert not conn.in_flight


def test_close_after_k_responses_returns_unanswered_for_retry() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b", "c")
    events = conn.receive(ok(b"A"))
    events += conn.receive_eof()
    end = events[-1]
    assert isinstance(end, ConnectionEnded)
    assert end.retry == ["b", "c"] and end.failed == [] and end.partial == []
    assert end.misbehaviour is Misbehaviour.CLOSED_WITH_UNANSWERED


def test_close_mid_body_marks_partial() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a")
    conn.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    end = conn.receive_eof()[-1]
    assert isinstance(end, ConnectionEnded)
    assert end.retry == ["a"] and end.partial == ["a"]
    assert end.misbehaviour is None  # not pipelined: a broken connection, not a pipelining fault


def test_connection_close_mid_pipeline() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    events = conn.receive(ok(b"A", "Connection: close\r\n"))
    assert isinstance(events[-1], ConnectionEnded)
    assert events[-1].misbehaviour is Misbehaviour.CONNECTION_CLOSE and events[-1].retry == ["b"]
    assert not conn.can_send("GET", 8)


def test_http10_answer_is_misbehaviour_when_pipelined() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    events = conn.receive(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nA")
    assert isinstance(events[-1], ConnectionEnded) and events[-1].misbehaviour is Misbehaviour.HTTP10


def test_framing_error_retries_everything_unanswered() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    events = conn.receive(ok(b"A") + b"garbage that is not a response\r\n\r\n")
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.FRAMING_ERROR
    assert end.retry == ["b"]


def test_unsolicited_bytes_are_a_desync() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a")
    events = conn.receive(ok(b"A") + ok(b"surprise"))
    assert isinstance(events[-1], ConnectionEnded) and events[-1].misbehaviour is Misbehaviour.DESYNC


def test_post_in_flight_is_failed_not_retried() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "p", method="POST")
    end = conn.receive_eof()[-1]
    assert isinstance(end, ConnectionEnded) and end.failed == ["p"] and end.retry == []


def test_keep_alive_max_caps_requests() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a")
    conn.receive(ok(b"A", "Keep-Alive: timeout=5, max=2\r\n"))
    assert conn.request_cap == 3
    send(conn, "b", "c")
    assert not conn.can_send("GET", 8)


def test_head_in_pipeline_has_no_body() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("h", "HEAD")
    send(conn, "g")
    events = conn.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n" + ok(b"12345"))
    done = [e.token for e in events if isinstance(e, ResponseComplete)]
    assert done == ["h", "g"]


def test_stall_with_pipeline_is_misbehaviour() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    end = conn.stalled()
    assert end.misbehaviour is Misbehaviour.STALL and end.retry == ["a", "b"]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=8), st.integers(min_value=0, max_value=8), st.binary(max_size=30))
def test_no_request_lost_or_answered_twice(n: int, k: int, tail: bytes) -> None:
    """Whatever the server does after k good responses, every request is answered once or handed back once."""
    conn: PipelineConnection[int] = PipelineConnection()
    for i in range(n):
        conn.sent(i, "GET")
    stream = b"".join(ok(str(i).encode()) for i in range(min(k, n))) + tail
    events = conn.receive(stream) + conn.receive_eof()
    completed = [e.token for e in events if isinstance(e, ResponseComplete)]
    ended = [e for e in events if isinstance(e, ConnectionEnded)]
    handed_back = [t for e in ended for t in e.retry + e.failed]
    assert sorted(completed + handed_back) == list(range(n))
    assert completed == sorted(completed)
    assert len(ended) == 1
    started = [e.token for e in events if isinstance(e, ResponseStarted)]
    assert len(started) == len(set(started))


def _head(version: str = "1.1") -> ResponseHead:
    return ResponseHead(200, "OK", version, [])


def test_policy_learns_and_grows() -> None:
    p = OriginPolicy(max_depth=16)
    assert p.allowed_depth() == 1
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
    assert p.state is PipelineState.PROBING and p.allowed_depth() == 2
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=True)
    assert p.state is PipelineState.GREEN and p.allowed_depth() == 4
    for _ in range(5):
        p.on_response(_head(), Framing.CHUNKED, keep_alive=True, pipelined=True)
    assert p.allowed_depth() == 16


def test_policy_close_delimited_or_closing_does_not_unlock() -> None:
    p = OriginPolicy(max_depth=16)
    p.on_response(_head(), Framing.CLOSE, keep_alive=False, pipelined=False)
    p.on_response(_head(), Framing.LENGTH, keep_alive=False, pipelined=False)
    assert p.state is PipelineState.UNKNOWN


def test_policy_demotes_and_remembers() -> None:
    p = OriginPolicy(max_depth=16)
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
    p.on_connection_ended(Misbehaviour.FRAMING_ERROR, 3)
    assert p.state is PipelineState.RED and p.allowed_depth() == 1
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=True)
    assert p.state is PipelineState.RED
    assert p.demotions == [Misbehaviour.FRAMING_ERROR.value]


def test_policy_http10_demotes() -> None:
    p = OriginPolicy(max_depth=16)
    p.on_response(_head("1.0"), Framing.LENGTH, keep_alive=True, pipelined=False)
    assert p.state is PipelineState.RED


def test_policy_keep_alive_limit_is_learned_not_demoted() -> None:
    p = OriginPolicy(max_depth=16)
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
    p.on_connection_ended(Misbehaviour.CONNECTION_CLOSE, 100)
    assert p.state is PipelineState.PROBING and p.request_limit == 100
    p.on_connection_ended(Misbehaviour.CONNECTION_CLOSE, 1)
    assert p.state is PipelineState.RED


def test_policy_pipelining_off() -> None:
    p = OriginPolicy(max_depth=1)
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
    assert p.allowed_depth() == 1
