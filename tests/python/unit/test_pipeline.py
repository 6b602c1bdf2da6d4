"""The sans-I/O pipeline state machine and the per-origin pipelining policy, without sockets."""

from __future__ import annotations

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st
from lanefetch.engine.origin_policy import START_DEPTH, OriginPolicy, PipelineState
from lanefetch.engine.pipeline import (
    ConnectionEnded,
    Misbehaviour,
    PipelineConnection,
    ResponseBody,
    ResponseComplete,
    ResponseStarted,
    ResponsesVerified,
)
from lanefetch.engine.response_check import Expectation, refuses
from lanefetch.engine.response_parser import Framing, ResponseHead
from lanefetch.prefetch.flight_pieces import PIECE_BYTES, first_range


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
    assert p.allowed_depth() == START_DEPTH == 4  # unproven, yet pipelined: its answers are held until proven
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
    assert p.state is PipelineState.PROBING and p.allowed_depth() == 4
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=True)
    assert p.state is PipelineState.GREEN and p.allowed_depth() == 8
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
    assert p.allowed_depth() == 1
    p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
    assert p.allowed_depth() == 1


def test_policy_start_depth_never_exceeds_the_configured_maximum() -> None:
    for max_depth in (1, 2, 3, 4, 16):
        p = OriginPolicy(max_depth=max_depth)
        assert p.allowed_depth() == min(START_DEPTH, max_depth)
        p.on_response(_head(), Framing.LENGTH, keep_alive=True, pipelined=False)
        assert p.allowed_depth() == min(START_DEPTH, max_depth)


# ------------------------------------------------------------------------- proving answers in step (integrity)


def _body(token: str) -> bytes:
    return f"<{token}>".encode()


def _delivered(events: list[object]) -> dict[str, bytes]:
    """What a shell would hand the sink: answers not held at once, held ones once ResponsesVerified names them."""
    bodies: dict[str, bytes] = {}
    held: set[str] = set()
    out: dict[str, bytes] = {}
    for e in events:
        if isinstance(e, ResponseStarted) and e.held:
            held.add(e.token)
        elif isinstance(e, ResponseBody):
            bodies[e.token] = bodies.get(e.token, b"") + e.data
        elif isinstance(e, ResponseComplete) and not e.held:
            out[e.token] = bodies.get(e.token, b"")
        elif isinstance(e, ResponsesVerified):
            for r in e.responses:
                out[r.token] = bodies.get(r.token, b"")
        elif isinstance(e, ConnectionEnded):
            for t in [*e.suspect, *e.retry]:
                bodies.pop(t, None)
    return out


def test_an_answer_alone_on_the_connection_is_in_step_at_once() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a")
    events = conn.receive(ok(b"A"))
    started = [e for e in events if isinstance(e, ResponseStarted)]
    done = [e for e in events if isinstance(e, ResponseComplete)]
    assert not started[0].held and not done[0].held and not conn.unverified


def test_pipelined_answers_are_held_until_the_idle_connection_is_quiet() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b", "c")
    events = conn.receive(ok(b"A") + ok(b"B") + ok(b"C"))
    assert all(e.held for e in events if isinstance(e, ResponseStarted | ResponseComplete))
    assert _delivered(list(events)) == {}
    verified = conn.quiet()
    assert len(verified) == 1 and isinstance(verified[0], ResponsesVerified)
    assert [r.token for r in verified[0].responses] == ["a", "b", "c"]
    assert conn.quiet() == []  # once


def test_quiet_proves_nothing_while_a_request_is_out() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    conn.receive(ok(b"A"))
    assert conn.quiet() == []
    send(conn, "c")  # sent while a's answer is unproven: its answer is held too, even alone
    events = conn.receive(ok(b"B") + ok(b"C"))
    assert all(e.held for e in events if isinstance(e, ResponseComplete))


def test_a_clean_close_with_nothing_owed_proves_what_was_held() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    conn.receive(ok(b"A") + ok(b"B"))
    events = conn.receive_eof()
    assert isinstance(events[0], ResponsesVerified) and [r.token for r in events[0].responses] == ["a", "b"]
    assert isinstance(events[-1], ConnectionEnded) and events[-1].suspect == []


def test_an_extra_answer_drops_every_held_one_unseen() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b", "c")
    # the server answers a twice: b gets a's second answer, c gets b's, and c's own arrives with nothing out
    events = conn.receive(ok(b"A") + ok(b"A") + ok(b"B") + ok(b"C"))
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC
    assert end.suspect == ["a", "b", "c"] and _delivered(list(events)) == {}


def test_a_skipped_request_drops_every_held_one_when_the_connection_stalls() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b", "c")
    events = conn.receive(ok(b"B") + ok(b"C"))  # a was never answered
    end = conn.stalled()
    assert end.suspect == ["a", "b"] and end.retry == ["c"] and end.misbehaviour is Misbehaviour.STALL
    assert _delivered([*events, end]) == {}


def test_a_head_that_cannot_answer_its_request_is_a_desync() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", destination="stylesheet"))
    conn.sent("img", "GET", Expectation("GET", destination="image"))
    events = conn.receive(ok(b"p{}", "Content-Type: image/png\r\n"))
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC
    assert end.retry == ["css", "img"] and end.partial == []


def test_blank_lines_between_answers_are_not_a_desync() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a")
    events = conn.receive(ok(b"A") + b"\r\n")
    assert not any(isinstance(e, ConnectionEnded) for e in events)


def test_post_waits_for_held_answers_to_be_proven() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, "a", "b")
    conn.receive(ok(b"A") + ok(b"B"))
    assert not conn.can_send("POST", 8), "a POST's answer could not be fetched again were it held"
    conn.quiet()
    assert conn.can_send("POST", 8)


def _with_fault(answers: list[bytes], fault: str, at: int, stray: bytes) -> list[bytes]:
    """The answers as a server with one fault writes them: `extra` one answer too many after the at-th (an
    application writing twice, a short length), `skip` the at-th never written, `twice` the at-th written twice,
    `swap` the at-th and the next in each other's place."""
    answers = list(answers)
    if fault == "extra":
        answers.insert(at + 1, stray)
    elif fault == "skip":
        del answers[at]
    elif fault == "twice":
        answers.insert(at, answers[at])
    elif fault == "swap" and at + 1 < len(answers):
        answers[at], answers[at + 1] = answers[at + 1], answers[at]
    return answers


def _play(conn: PipelineConnection[str], wire: bytes, cuts: list[int], end: str) -> list[object]:
    """The events of conn receiving wire, written all at once and cut by the network anywhere (`cuts`), then its
    end: `eof` the server closes; otherwise (`quiet`, `stall`) the shell's timer, a stall if a request is out."""
    events: list[object] = []
    pos = 0
    for cut in [*cuts, len(wire)]:
        events += conn.receive(wire[pos : pos + cut])
        pos += cut
        if pos >= len(wire):
            break
    if end == "eof":
        events += conn.receive_eof()
    else:
        events += [conn.stalled()] if conn.in_flight else conn.quiet()
    return events


@st.composite
def _server_scripts(draw: st.DrawFn) -> tuple[int, str, int, list[int]]:
    n = draw(st.integers(1, 8))
    fault = draw(st.sampled_from(["none", "extra", "skip", "twice"]))
    at = draw(st.integers(0, n - 1))
    cuts = draw(st.lists(st.integers(1, 400), max_size=6))
    return n, fault, at, cuts


@given(_server_scripts(), st.sampled_from(["quiet", "eof", "stall"]))
@settings(max_examples=400, deadline=None)
def test_no_answer_is_ever_delivered_to_another_request(script: tuple[int, str, int, list[int]], end: str) -> None:
    """Whatever one server fault shifts and however the bytes are cut, every answer a shell would deliver is the
    request's own; when nothing went wrong, every request is answered."""
    n, fault, at, cuts = script
    tokens = [f"t{i}" for i in range(n)]
    conn: PipelineConnection[str] = PipelineConnection()
    send(conn, *tokens)
    answers = _with_fault([ok(_body(t)) for t in tokens], fault, at, ok(b"<stray>"))
    events = _play(conn, b"".join(answers), cuts, end)
    delivered = _delivered(events)
    for token, body in delivered.items():
        assert body == _body(token), (fault, at, token, body)
    if fault == "none":
        assert set(delivered) == set(tokens)
    ended = [e for e in events if isinstance(e, ConnectionEnded)]
    # nothing is lost: what was not delivered is handed back to be fetched again
    handed_back = {t for e in ended for t in [*e.retry, *e.suspect, *e.failed]}
    assert set(tokens) <= set(delivered) | handed_back


def test_pipelined_ranges_that_prove_themselves_are_not_held() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    for i in range(3):
        conn.sent(f"r{i}", "GET", Expectation.of("GET", [("Range", f"bytes={2 * i}-{2 * i + 1}")], "other"))
    events = conn.receive(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-1/6\r\nContent-Length: 2\r\n\r\nAB")
    started = [e for e in events if isinstance(e, ResponseStarted)]
    assert not started[0].held, "a lane's range would wait for its whole pipeline to drain"
    events = conn.receive(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-1/6\r\nContent-Length: 2\r\n\r\nAB")
    end = events[-1]  # the first range again, where the second was asked for: out of step
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC


def test_a_range_asked_twice_on_a_connection_proves_nothing() -> None:
    # Two bodies' first pieces (a flight's images, prefetch/flight_pieces.py) ask the same bytes 0-1: the first answer
    # to arrive could be either's, so it is held until the connection drains, like any pipelined answer.
    conn: PipelineConnection[str] = PipelineConnection()
    for token in ("a", "b"):
        conn.sent(token, "GET", Expectation.of("GET", [("Range", "bytes=0-1")], "image"))
    events = conn.receive(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-1/6\r\nContent-Length: 2\r\n\r\nAB")
    started = [e for e in events if isinstance(e, ResponseStarted)]
    assert started[0].held, "the other body's answer would prove itself here, shifted by one"
    events += conn.receive(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-1/8\r\nContent-Length: 2\r\n\r\nCD")
    assert [e for e in events if isinstance(e, ResponseStarted)][1].held
    assert not any(isinstance(e, ResponsesVerified) for e in events)  # proven only at the sync point
    assert any(isinstance(e, ResponsesVerified) for e in conn.quiet())


def test_a_fetchers_first_pieces_pipelined_together_each_prove_their_place() -> None:
    # ... so the flight asks each first piece to end on a byte of its own (flight_pieces.first_range): each head is
    # handed on as it comes, and its rest is asked then, not at the sync point after both bodies.
    conn: PipelineConnection[str] = PipelineConnection()
    asked = {token: first_range(k) for k, token in enumerate(("a", "b"))}
    for token, (first, last) in asked.items():
        conn.sent(token, "GET", Expectation.of("GET", [("Range", f"bytes={first}-{last}")], "image"))
    total = PIECE_BYTES + 9_000
    for token, (_, last) in asked.items():
        assert last is not None
        events = conn.receive(f"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-{last}/{total}\r\n"
                              f"Content-Length: {last + 1}\r\n\r\n".encode())
        started = [e for e in events if isinstance(e, ResponseStarted)]
        assert started and started[0].token == token and not started[0].held, token
        conn.receive(b"x" * (last + 1))


def test_a_short_body_answered_in_another_first_pieces_place_proves_nothing() -> None:
    # Bodies smaller than both first pieces: the server answers each `0-(total-1)/total`, which fits either request.
    # a's answer skipped, b's 800 bytes come in a's place: held, never handed to a as its own.
    conn: PipelineConnection[str] = PipelineConnection()
    for token, (first, last) in (("a", first_range(0)), ("b", first_range(1))):
        conn.sent(token, "GET", Expectation.of("GET", [("Range", f"bytes={first}-{last}")], "image"))
    events = conn.receive(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-799/800\r\nContent-Length: 800\r\n\r\n"
                          + b"b" * 800)
    started = [e for e in events if isinstance(e, ResponseStarted)]
    assert started[0].token == "a" and started[0].held, "b's answer would prove itself in a's place"


# ---------------------------------------------------------------- answers that prove their place by exclusion

_MEDIA = {"stylesheet": "text/css", "script": "text/javascript", "font": "font/woff2", "image": "image/png",
          "other": "text/html"}


def _send_to(conn: PipelineConnection[str], *pairs: tuple[str, str]) -> None:
    for token, destination in pairs:
        conn.sent(token, "GET", Expectation("GET", destination=destination))


def _typed(token: str, destination: str) -> bytes:
    return ok(_body(token), f"Content-Type: {_MEDIA[destination]}; charset=utf-8\r\n")


def test_a_stylesheet_with_a_font_behind_it_is_in_step_at_once() -> None:
    # Only the stylesheet may take a text/css body: the font behind it refuses one, so a shift cannot bring it here.
    conn: PipelineConnection[str] = PipelineConnection()
    _send_to(conn, ("css", "stylesheet"), ("font", "font"))
    events = conn.receive(_typed("css", "stylesheet"))
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [False]
    assert _delivered(list(events)) == {"css": b"<css>"}, "the stylesheet would wait for the whole font"
    # Sent behind it, the font waits for the sync point: an extra copy of the stylesheet's answer would come here.
    events = conn.receive(_typed("font", "font"))
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [True]
    verified = conn.quiet()
    assert isinstance(verified[0], ResponsesVerified) and [r.token for r in verified[0].responses] == ["font"]


def test_an_extra_answer_behind_one_proven_by_exclusion_is_caught() -> None:
    conn: PipelineConnection[str] = PipelineConnection()
    _send_to(conn, ("css", "stylesheet"), ("font", "font"))
    # the application wrote the stylesheet twice: the copy comes at the font's place, the font with nothing out
    events = conn.receive(_typed("css", "stylesheet") + _typed("css", "stylesheet") + _typed("font", "font"))
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC
    assert _delivered(list(events)) == {"css": b"<css>"} and end.retry == ["font"]


def test_exclusion_proves_nothing_where_another_request_could_take_the_body() -> None:
    cases = [
        [("css", "stylesheet"), ("css2", "stylesheet")],  # two stylesheets: either could be answered first
        [("css", "stylesheet"), ("xhr", "other")],  # a fetch takes any media type
        [("img", "image"), ("img2", "image")],
    ]
    for pairs in cases:
        conn: PipelineConnection[str] = PipelineConnection()
        _send_to(conn, *pairs)
        events = conn.receive(_typed(pairs[0][0], pairs[0][1]))
        assert [e.held for e in events if isinstance(e, ResponseStarted)] == [True], pairs


def test_exclusion_counts_answers_held_before_it() -> None:
    # css1 answered and held behind nothing proven; css2's text/css body could be css1's, swapped: held.
    conn: PipelineConnection[str] = PipelineConnection()
    _send_to(conn, ("css1", "stylesheet"), ("css2", "stylesheet"), ("font", "font"))
    events = conn.receive(_typed("css1", "stylesheet") + _typed("css2", "stylesheet"))
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [True, True]


def test_exclusion_needs_a_plain_200_with_a_media_type_its_request_takes() -> None:
    no_type = ok(b"p{}")
    not_found = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/css\r\nContent-Length: 0\r\n\r\n"
    octet = ok(b"p{}", "Content-Type: application/octet-stream\r\n")
    for wire in (no_type, not_found, octet):
        conn: PipelineConnection[str] = PipelineConnection()
        _send_to(conn, ("css", "stylesheet"), ("font", "font"))
        events = conn.receive(wire)
        assert [e.held for e in events if isinstance(e, ResponseStarted)] == [True], wire
    conn = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", conditional=True, destination="stylesheet"))
    conn.sent("font", "GET", Expectation("GET", destination="font"))
    events = conn.receive(_typed("css", "stylesheet"))
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [True]


def test_a_stylesheet_with_an_images_first_piece_behind_it_is_in_step_at_once() -> None:
    # An image's first piece (Range) may take a 200 too, but never a text/css one: the stylesheet streams at once,
    # and the piece's 206 of exactly its range proves itself behind it (pool_plan.behind_lone_leader).
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", destination="stylesheet"))
    conn.sent("img", "GET", Expectation.of("GET", [("Range", "bytes=0-9")], "image"))
    events = conn.receive(_typed("css", "stylesheet"))
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [False]
    assert _delivered(list(events)) == {"css": b"<css>"}
    events = conn.receive(b"HTTP/1.1 206 Partial\r\nContent-Type: image/png\r\nContent-Range: bytes 0-9/90\r\n"
                          b"Content-Length: 10\r\n\r\n0123456789")
    assert [(e.token, e.held) for e in events if isinstance(e, ResponseStarted)] == [("img", False)]


def test_a_stylesheet_behind_which_a_ranged_request_could_take_its_body_is_held() -> None:
    # A ranged fetch (destination "other") takes any media type: exclusion proves nothing.
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", destination="stylesheet"))
    conn.sent("xhr", "GET", Expectation.of("GET", [("Range", "bytes=0-99")], "other"))
    events = conn.receive(_typed("css", "stylesheet"))
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [True]


@given(st.lists(st.sampled_from(sorted(_MEDIA)), min_size=2, max_size=5),
       st.lists(st.integers(0, 250), min_size=4, max_size=4),
       st.sampled_from(["none", "extra", "twice", "skip"]), st.integers(0, 4),
       st.lists(st.integers(1, 300), min_size=1, max_size=8), st.sampled_from(sorted(_MEDIA)),
       st.sampled_from(["quiet", "eof"]))
@example(["stylesheet", "image"], [79, 0, 0, 0], "twice", 0, [300], "font", "quiet")  # the image sent mid-body
@settings(max_examples=600, deadline=None)
def test_no_answer_goes_to_a_request_sent_while_earlier_ones_streamed(
        destinations: list[str], send_at: list[int], fault: str, at: int, cuts: list[int], stray: str,
        end: str) -> None:
    """Requests pipelined while earlier answers are arriving (each next one written once some of the server's bytes
    were read, as the pool sends a follower behind a stylesheet whose head is in), a server with one fault (an
    answer duplicated, one too many, one skipped), which writes an answer only once its request has come: no
    request is handed an answer of another's."""
    n = len(destinations)
    tokens = [f"t{i}" for i in range(n)]
    at = min(at, n - 1)
    answers = [_typed(t, d) for t, d in zip(tokens, destinations, strict=True)]
    owners = list(range(n))  # the request whose arrival lets the server write each answer
    if fault == "extra":
        answers.insert(at + 1, _typed("stray", stray))
        owners.insert(at + 1, at)
    elif fault == "twice":
        answers.insert(at, answers[at])
        owners.insert(at, at)
    elif fault == "skip":
        del answers[at]
        del owners[at]
    starts = [sum(len(a) for a in answers[:i]) for i in range(len(answers))]
    wire = b"".join(answers)
    # request r (r >= 1) is written after send_at[r - 1] bytes were read, or before the first answer it lets come
    due = [0] + [min([send_at[r - 1], *(st_ for st_, o in zip(starts, owners, strict=True) if o >= r)])
                 for r in range(1, n)]
    due = [max(due[: r + 1]) for r in range(n)]  # in order
    bounds = sorted({0, len(wire), *due, *itertools.accumulate(cuts)} - {x for x in due if x > len(wire)})
    conn: PipelineConnection[str] = PipelineConnection()
    events: list[object] = []
    sent = 0
    depth: dict[str, int] = {}
    for lo, hi in itertools.pairwise(b for b in bounds if b <= len(wire)):
        if conn.ended or conn.closing:
            break
        while sent < n and due[sent] <= lo:
            expect = Expectation("GET", destination=destinations[sent])
            depth[tokens[sent]] = conn.sent(tokens[sent], "GET", expect).depth
            sent += 1
        events += conn.receive(wire[lo:hi])
    if not conn.ended:
        events += conn.receive_eof() if end == "eof" else ([conn.stalled()] if conn.in_flight else conn.quiet())
    for token, body in _delivered(events).items():
        # An answer written twice, late, after the connection went idle and the next request out alone: what a
        # browser on a keep-alive connection takes for the next answer too. Behind another answer, never.
        assert body == _body(token) or depth[token] == 1, (fault, at, due, token, body)


def test_a_request_sent_behind_an_answer_already_streaming_is_at_risk() -> None:
    # The stylesheet's head came alone (in step, nothing at risk); an image is then pipelined behind its body. The
    # server writes the stylesheet twice: the copy comes at the image's place, with the image's request alone on
    # the connection. Sent behind another answer, it is still at risk: the copy is caught, never the image's.
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", destination="stylesheet"))
    wire = _typed("css", "stylesheet")
    events = conn.receive(wire[:-2])
    assert [e.held for e in events if isinstance(e, ResponseStarted)] == [False]
    conn.sent("img", "GET", Expectation.of("GET", [("Range", "bytes=0-99")], "image"))
    events = conn.receive(wire[-2:] + wire)
    assert "img" not in _delivered(list(events)), "the stylesheet's copy went to the image"
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC and end.retry == ["img"]


def test_an_extra_answer_of_another_status_behind_a_streaming_answer_is_never_in_step() -> None:
    # The stylesheet's head came alone; an image is pipelined behind its body; the server writes a stray 404 after
    # the stylesheet. It comes at the image's place with the image alone by then: held, never the image's at once.
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", destination="stylesheet"))
    wire = _typed("css", "stylesheet")
    conn.receive(wire[:-2])
    conn.sent("img", "GET", Expectation("GET", destination="image"))
    stray = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!"
    events = conn.receive(wire[-2:] + stray)
    assert [(e.token, e.held) for e in events if isinstance(e, ResponseStarted)] == [("img", True)]
    assert "img" not in _delivered(list(events))


def test_a_copy_of_the_oldest_answer_a_request_was_sent_behind_is_caught() -> None:
    # Three deep: a stylesheet, then two images pipelined while it streams; the stylesheet's answer written twice
    # comes at the first image's place, the first image's at the second's: neither is delivered as its own.
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("css", "GET", Expectation("GET", destination="stylesheet"))
    wire = _typed("css", "stylesheet")
    conn.receive(wire[:-2])
    conn.sent("a", "GET", Expectation("GET", destination="image"))
    conn.sent("b", "GET", Expectation("GET", destination="image"))
    events = conn.receive(wire[-2:] + wire + _typed("a", "image"))
    delivered = _delivered(list(events))
    assert "a" not in delivered and "b" not in delivered


def test_a_lanes_range_answered_whole_behind_its_pieces_is_in_step() -> None:
    # A lane asks its next range while the last streams; the file changed, so If-Range gets a 200, alone by then. A
    # 200 is no copy of the 206 it was sent behind: in step, so the lane sees it and restarts (held, it would wait
    # for a drain that a lane with its next range queued never makes).
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("r0", "GET", Expectation.of("GET", [("Range", "bytes=0-9")], "other", "http://o.test/big"))
    piece = b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-9/90\r\nContent-Length: 10\r\n\r\n0123456789"
    conn.receive(piece[:-2])
    conn.sent("r1", "GET", Expectation.of("GET", [("Range", "bytes=10-19")], "other", "http://o.test/big"))
    events = conn.receive(piece[-2:] + ok(b"new body"))
    assert [(e.token, e.held) for e in events if isinstance(e, ResponseStarted)] == [("r1", False)]


def test_an_image_sent_behind_another_streaming_one_waits_for_the_sync_point() -> None:
    # Alike, an image behind an image whose head was in: its answer is held until the connection drains and stays
    # quiet (a copy of the first image's answer would look like its own).
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("a", "GET", Expectation("GET", destination="image"))
    wire = _typed("a", "image")
    conn.receive(wire[:-2])
    conn.sent("b", "GET", Expectation("GET", destination="image"))
    events = conn.receive(wire[-2:] + _typed("b", "image"))
    assert [(e.token, e.held) for e in events if isinstance(e, ResponseStarted)] == [("b", True)]
    verified = conn.quiet()
    assert isinstance(verified[0], ResponsesVerified) and [r.token for r in verified[0].responses] == ["b"]


@st.composite
def _typed_server_scripts(draw: st.DrawFn) -> tuple[list[str], list[bool], str, int, list[int], str]:
    destinations = draw(st.lists(st.sampled_from(sorted(_MEDIA)), min_size=1, max_size=6))
    n = len(destinations)
    # some requests ask for a range (a flight's first pieces) or are conditional: answered 200 all the same here
    kinds = draw(st.lists(st.sampled_from(["plain", "ranged", "conditional"]), min_size=n, max_size=n))
    fault = draw(st.sampled_from(["none", "extra", "skip", "twice", "swap"]))
    at = draw(st.integers(0, n - 1))
    cuts = draw(st.lists(st.integers(1, 400), max_size=6))
    stray = draw(st.sampled_from(sorted(_MEDIA)))
    return destinations, kinds, fault, at, cuts, stray


@given(_typed_server_scripts(), st.sampled_from(["quiet", "eof", "stall"]))
@settings(max_examples=600, deadline=None)
def test_no_answer_proven_by_exclusion_is_another_requests(
        script: tuple[list[str], list[str], str, int, list[int], str], end: str) -> None:
    """Requests of mixed destinations, some ranged or conditional, each answer a 200 typed as its own destination's
    (a stray one typed at random): whatever one fault shifts, swaps or duplicates, an answer a shell would deliver
    (at once, proven by exclusion, or at a sync point) is the request's own; with no fault every request is
    answered, and nothing is lost."""
    destinations, kinds, fault, at, cuts, stray = script
    tokens = [f"t{i}" for i in range(len(destinations))]
    conn: PipelineConnection[str] = PipelineConnection()
    for token, destination, kind in zip(tokens, destinations, kinds, strict=True):
        conn.sent(token, "GET", Expectation("GET", ranged=kind == "ranged", conditional=kind == "conditional",
                                            destination=destination))
    answers = _with_fault([_typed(t, d) for t, d in zip(tokens, destinations, strict=True)], fault, at,
                          _typed("stray", stray))
    events = _play(conn, b"".join(answers), cuts, end)
    delivered = _delivered(events)
    for token, body in delivered.items():
        # two answers swapped, each of a type the other's request takes, are invisible to a pipeline that holds
        # them (order is all it has): any other body delivered to another request is a misdelivery
        if body != _body(token):
            assert fault == "swap", (fault, at, token, body)
            other = destinations[tokens.index(body.decode().strip("<>"))]
            assert not refuses(destinations[tokens.index(token)], _MEDIA[other]), (token, body)
    if fault == "none":
        assert set(delivered) == set(tokens)
    handed_back = {t for e in events if isinstance(e, ConnectionEnded) for t in [*e.retry, *e.suspect, *e.failed]}
    assert set(tokens) <= set(delivered) | handed_back


def test_no_request_is_written_behind_a_head_that_announced_close() -> None:
    # RFC 9112 §9.6: once a response said it is the connection's last (Connection: close, or HTTP/1.0 without
    # keep-alive), no request may follow it, though its body is still coming: one written there is lost.
    for head in (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 10\r\n\r\nabc",
                 b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nabc"):
        conn: PipelineConnection[str] = PipelineConnection()
        conn.sent("a", "GET")
        assert conn.can_send("GET", 8)
        conn.receive(head)
        assert not conn.can_send("GET", 8)


def test_an_answer_framed_both_chunked_and_by_length_is_the_connections_last() -> None:
    # Transfer-Encoding and Content-Length both (RFC 9112 §6.3 item 3): chunked frames it, but where it ends is in
    # doubt, so nothing after it is matched by order: what was pipelined behind it is asked again.
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("a", "GET")
    conn.sent("b", "GET")
    events = conn.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB")
    assert not any(isinstance(e, ResponseComplete) and e.token == "b" for e in events)
    assert conn.closing and any(isinstance(e, ConnectionEnded) and "b" in e.retry for e in events)


def test_a_408_on_a_reused_connection_is_asked_again_not_delivered() -> None:
    # The server timed the idle connection out as the request crossed: as Chromium does, the request goes again on
    # a fresh connection and the page never sees that 408. On a connection's first request a 408 is the answer.
    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("a", "GET")
    conn.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA")
    conn.sent("b", "GET")
    events = conn.receive(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
    assert not any(isinstance(e, ResponseStarted) for e in events)
    (ended,) = [e for e in events if isinstance(e, ConnectionEnded)]
    assert ended.retry == ["b"] and ended.misbehaviour is None
    fresh: PipelineConnection[str] = PipelineConnection()
    fresh.sent("b", "GET")
    events = fresh.receive(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
    assert any(isinstance(e, ResponseComplete) and e.token == "b" and e.head.status == 408 for e in events)


def test_an_announced_last_answer_proves_nothing_until_the_close_or_the_quiet() -> None:
    # The answer in the last request's place says Connection: close with nothing owed after it: a server's word, not
    # its close. Were it a's answer written twice, b's own follows in the next segment; until 2026-12-02 a and b were
    # proven on that word and b was handed a's body, the bytes after it never read.
    for last in ("Connection: close\r\n", ""):
        conn: PipelineConnection[str] = PipelineConnection()
        send(conn, "a", "b")
        head = b"HTTP/1.1" if last else b"HTTP/1.0"
        events = conn.receive(ok(b"<a>") + ok(b"<a>", last).replace(b"HTTP/1.1", head, 1))
        assert _delivered(list(events)) == {} and not any(isinstance(e, ConnectionEnded) for e in events)
        assert not conn.can_send("GET", 8)
        events += conn.receive(ok(b"<b>"))
        end = events[-1]
        assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC
        assert end.suspect == ["a", "b"] and _delivered(list(events)) == {}
    # In step, the close (or the quiet, should the server keep it open; or a reset where the close was due: nginx)
    # proves them, and ends the connection.
    for finish in ("eof", "quiet", "reset"):
        conn = PipelineConnection()
        send(conn, "a", "b")
        events = conn.receive(ok(b"<a>") + ok(b"<b>", "Connection: close\r\n"))
        events += conn.receive_eof() if finish == "eof" else conn.quiet() if finish == "quiet" else conn.reset("RST")
        assert _delivered(list(events)) == {"a": b"<a>", "b": b"<b>"}, finish
        assert isinstance(events[-1], ConnectionEnded) and events[-1].misbehaviour is None and conn.ended
    # With nothing held, the announced last answer ends the connection at once, as before.
    conn = PipelineConnection()
    send(conn, "a")
    events = conn.receive(ok(b"<a>", "Connection: close\r\n"))
    assert _delivered(list(events)) == {"a": b"<a>"} and isinstance(events[-1], ConnectionEnded) and conn.ended


def test_revalidations_answered_out_of_order_are_caught_by_their_entity_tags() -> None:
    # Two conditional requests pipelined, their 304s written in each other's place: the same status, no body, no
    # type, and nothing owed after them, so no sync point can tell. A 304 names the version it found unchanged
    # (RFC 9110 §13.1.2, §15.4.5): one naming a version its request did not ask about is not its answer.
    def revalidation(token: str) -> None:
        conn.sent(token, "GET", Expectation.of("GET", [("If-None-Match", f'W/"{token}-v1", "{token}-v0"')], "image"))

    def not_modified(token: str) -> bytes:
        return f'HTTP/1.1 304 Not Modified\r\nETag: "{token}-v1"\r\n\r\n'.encode()

    conn: PipelineConnection[str] = PipelineConnection()
    revalidation("a")
    revalidation("b")
    events = conn.receive(not_modified("b") + not_modified("a"))
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC
    assert end.retry == ["a", "b"] and _delivered(list(events)) == {}
    # In order, each 304 names a version its request listed (weakly compared: W/"a-v1" is "a-v1"): believed.
    conn = PipelineConnection()
    revalidation("a")
    revalidation("b")
    events = conn.receive(not_modified("a") + not_modified("b")) + conn.quiet()
    assert set(_delivered(list(events))) == {"a", "b"}


def test_a_range_answered_whole_behind_another_bodys_piece_is_held() -> None:
    # A flight pipelines pieces of several bodies on one connection: y's first piece, then x's second while y's
    # streams. y's handler writes its 206 and then its whole 200 too (a range handler that falls through). That 200
    # comes at x's place, x alone by then and sent behind nothing but 206s: no lane's restart (those are one URL's
    # pieces), it is held, and x's own answer after it shows the shift. Until 2026-12-02 x got y's body at once.
    def piece(first: int, last: int, total: int) -> bytes:
        body = bytes(last - first + 1)
        return (f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{total}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    conn: PipelineConnection[str] = PipelineConnection()
    conn.sent("y0", "GET", Expectation.of("GET", [("Range", "bytes=0-99")], "image", "http://o.test/y.png"))
    first = piece(0, 99, 500)
    events = conn.receive(first[:-2])
    conn.sent("x1", "GET", Expectation.of("GET", [("Range", "bytes=100-199")], "image", "http://o.test/x.png"))
    events += conn.receive(first[-2:] + ok(b"<y whole>", "Content-Type: image/png\r\n"))
    assert [(e.token, e.held) for e in events if isinstance(e, ResponseStarted)] == [("y0", False), ("x1", True)]
    events += conn.receive(piece(100, 199, 800))
    assert "x1" not in _delivered(list(events))
    end = events[-1]
    assert isinstance(end, ConnectionEnded) and end.misbehaviour is Misbehaviour.DESYNC and end.suspect == ["x1"]
