"""engine/h2_session.py against h2's own server side, in process: every request answered exactly once, whatever
the frame boundaries, and when the server goes away, resets or closes at any point no request is lost or
answered twice, and only GET/HEAD are offered for retry."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from random import Random

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import DataReceived, RequestReceived, StreamEnded, StreamReset
from h2.settings import SettingCodes
from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, RstStreamFrame, WindowUpdateFrame
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine.h2_session import WINDOW, H2Request, H2Session, StreamFailed, StreamsReturned, tree_parent
from lanefetch.engine.pipeline import ConnectionEnded, ResponseBody, ResponseComplete, ResponseStarted
from lanefetch.engine.receive_window import MIN_GRANT
from lanefetch.engine.request import FetchRequest, urgency


def body_for(path: str) -> bytes:
    return (path.encode() * 3000)[: 100 + 37 * len(path) * len(path)]


class Server:
    """h2's server side: collects requests; answers them when told."""

    def __init__(self, max_streams: int | None = None) -> None:
        self.h2 = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.h2.initiate_connection()
        if max_streams is not None:
            self.h2.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: max_streams})
        self.requests: dict[int, dict[str, str]] = {}
        self.bodies: dict[int, bytes] = {}
        self.ended: set[int] = set()
        self.reset: set[int] = set()
        self.weights: dict[int, tuple[int | None, int | None]] = {}  # stream -> RFC 7540 (weight, depends on)
        self.exclusive: dict[int, bool | None] = {}

    def receive(self, data: bytes) -> None:
        for ev in self.h2.receive_data(data):
            if isinstance(ev, RequestReceived):
                self.requests[ev.stream_id] = dict(ev.headers)  # type: ignore[arg-type]
                if ev.priority_updated is not None:
                    self.weights[ev.stream_id] = (ev.priority_updated.weight, ev.priority_updated.depends_on)
                    self.exclusive[ev.stream_id] = ev.priority_updated.exclusive
                self.bodies[ev.stream_id] = b""
            elif isinstance(ev, DataReceived):
                self.bodies[ev.stream_id] += ev.data
                self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, StreamEnded):
                self.ended.add(ev.stream_id)
            elif isinstance(ev, StreamReset):
                self.reset.add(ev.stream_id)

    def answer(self, sid: int, status: int = 200) -> None:
        path = self.requests[sid][":path"]
        body = body_for(path) if self.requests[sid][":method"] != "HEAD" else b""
        self.h2.send_headers(sid, [(":status", str(status)), ("content-length", str(len(body)))],
                             end_stream=not body)
        if body:
            self.h2.send_data(sid, body, end_stream=True)

    def out(self) -> bytes:
        return bytes(self.h2.data_to_send())


@dataclass
class Client:
    session: H2Session[str] = field(default_factory=H2Session)
    started: dict[str, int] = field(default_factory=dict)
    bodies: dict[str, bytes] = field(default_factory=dict)
    complete: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    retry: dict[str, int] = field(default_factory=dict)
    ended: bool = False

    def feed(self, data: bytes) -> None:
        for ev in self.session.receive(data):
            self.on(ev)

    def on(self, ev: object) -> None:
        if isinstance(ev, ResponseStarted):
            assert not ev.held and ev.head.http_version == "2"
            self.started[ev.token] = self.started.get(ev.token, 0) + 1
            self.bodies[ev.token] = b""
        elif isinstance(ev, ResponseBody):
            self.bodies[ev.token] += ev.data
            self.session.consumed(ev.token, len(ev.data))
        elif isinstance(ev, ResponseComplete):
            self.complete[ev.token] = self.complete.get(ev.token, 0) + 1
        elif isinstance(ev, StreamFailed):
            self.failed[ev.token] = self.failed.get(ev.token, 0) + 1
        elif isinstance(ev, (StreamsReturned, ConnectionEnded)):
            for t in ev.retry:
                self.retry[t] = self.retry.get(t, 0) + 1
            for t in ev.failed:
                self.failed[t] = self.failed.get(t, 0) + 1
            if isinstance(ev, ConnectionEnded):
                self.ended = True


def reqs(n: int, methods: list[str] | None = None) -> list[H2Request[str]]:
    out = []
    for i in range(n):
        method = (methods or ["GET"])[i % len(methods or ["GET"])]
        out.append(H2Request(f"r{i}", method, "https", "example.test", f"/f{i}", [("accept", "*/*")],
                             b"x" * 10 if method == "POST" else None))
    return out


def handshake(client: Client, server: Server, batch: list[H2Request[str]]) -> None:
    client.session.start()
    client.session.send(batch)
    server.receive(client.session.data_to_send())
    client.feed(server.out())
    server.receive(client.session.data_to_send())


def test_every_request_answered_once_with_exact_bodies() -> None:
    client, server = Client(), Server()
    batch = reqs(60)
    handshake(client, server, batch)
    assert len(server.requests) == 60
    for sid in server.requests:
        server.answer(sid)
    client.feed(server.out())
    assert client.complete == {r.token: 1 for r in batch}
    assert all(client.bodies[r.token] == body_for(r.path) for r in batch)
    assert client.session.open_streams() == 0 and not client.retry and not client.failed


def test_windows_are_large_and_priority_is_sent() -> None:
    client, server = Client(), Server()
    img = H2Request("img", "GET", "https", "e.test", "/i.png", [], urgency=5, incremental=True)
    css = H2Request("css", "GET", "https", "e.test", "/a.css", [], urgency=0)
    handshake(client, server, [img, css])
    # Each stream's window is opened by a WINDOW_UPDATE with its HEADERS (not SETTINGS, which h2 applies only
    # once acknowledged), and the connection's by one after the preface.
    assert server.h2.outbound_flow_control_window == WINDOW
    assert all(server.h2.local_flow_control_window(sid) == WINDOW for sid in server.requests)
    by_path = {h[":path"]: (sid, h) for sid, h in server.requests.items()}
    assert by_path["/a.css"][1]["priority"] == "u=0" and by_path["/i.png"][1]["priority"] == "u=5, i"
    assert by_path["/a.css"][0] < by_path["/i.png"][0], "the render-blocking request is opened first"
    # ... and the RFC 7540 tree nginx and Apache act on (they ignore the RFC 9218 field): one chain in urgency
    # order, the image under the stylesheet.
    css_sid, img_sid = by_path["/a.css"][0], by_path["/i.png"][0]
    assert server.weights == {css_sid: (256, 0), img_sid: (8, css_sid)}
    assert server.exclusive == {css_sid: True, img_sid: True}


def test_a_later_urgent_stream_goes_ahead_of_the_open_images_in_the_tree() -> None:
    """Asked once images are streaming (an @import found a round trip later), a stylesheet depends on the last
    open stream as urgent as it (the script), exclusively: the images, the script's dependants, become its own."""
    client, server = Client(), Server()
    script = H2Request("js", "GET", "https", "e.test", "/a.js", [], urgency=0)
    img = H2Request("img", "GET", "https", "e.test", "/i.png", [], urgency=5, incremental=True)
    handshake(client, server, [script, img])
    client.session.send([H2Request("css", "GET", "https", "e.test", "/b.css", [], urgency=0)])
    server.receive(client.session.data_to_send())
    sid = {h[":path"]: sid for sid, h in server.requests.items()}
    assert server.weights[sid["/b.css"]] == (256, sid["/a.js"]) and server.exclusive[sid["/b.css"]]


@given(st.lists(st.one_of(st.integers(0, 7), st.just(-1)), max_size=40), st.randoms())
def test_the_priority_tree_stays_one_chain_in_urgency_order(ops: list[int], rnd: Random) -> None:
    """Streams opened (an urgency) and closed (-1: a random open one) in any order, each opened with an exclusive
    dependency on tree_parent and each closed one's dependants given to its parent (RFC 7540 §5.3.3-5.3.4): the tree
    is one chain, and walked from the root it lists the open streams by urgency, first opened first within one."""
    parent: dict[int, int] = {}
    urg: dict[int, int] = {}
    opened: list[int] = []
    for n, op in enumerate(ops, start=1):
        if op < 0:
            if opened:
                gone = opened.pop(rnd.randrange(len(opened)))
                for k, p in parent.items():
                    if p == gone:
                        parent[k] = parent[gone]
                del parent[gone], urg[gone]
            continue
        dep = tree_parent(op, [(s, urg[s]) for s in opened])
        for k, p in parent.items():
            if p == dep:
                parent[k] = n  # exclusive: the parent's dependants become the new stream's
        parent[n], urg[n] = dep, op
        opened.append(n)
    chain, at = [], 0
    for _ in range(len(opened) + 1):
        kids = [k for k, p in parent.items() if p == at]
        assert len(kids) <= 1, "one chain"
        if not kids:
            break
        at = kids[0]
        chain.append(at)
    assert chain == sorted(opened, key=lambda s: (urg[s], opened.index(s)))


def test_urgency_from_type_and_priority() -> None:
    def u(kind: str, prio: str) -> tuple[int, bool]:
        return urgency(FetchRequest("a", "GET", "https://e/", resource_type=kind, priority=prio))

    assert u("stylesheet", "VeryHigh") == (0, False)
    assert u("image", "Low") == (5, True)
    assert u("other", "VeryLow") == (7, False)


def test_peer_stream_limit_is_respected() -> None:
    client, server = Client(), Server(max_streams=5)
    client.session.start()
    server.receive(client.session.data_to_send())
    client.feed(server.out())
    assert client.session.stream_limit() == 5
    sent = client.session.send(reqs(8)).streams
    assert len(sent) == 5 and not client.session.can_open()


def test_post_body_is_sent_and_refused_get_is_retried() -> None:
    client, server = Client(), Server()
    batch = reqs(2, ["POST", "GET"])
    handshake(client, server, batch)
    post_sid = next(s for s, h in server.requests.items() if h[":method"] == "POST")
    get_sid = next(s for s, h in server.requests.items() if h[":method"] == "GET")
    assert server.bodies[post_sid] == b"x" * 10 and post_sid in server.ended
    server.h2.reset_stream(get_sid, ErrorCodes.REFUSED_STREAM)
    server.answer(post_sid)
    client.feed(server.out())
    assert client.retry == {"r1": 1} and client.complete == {"r0": 1} and not client.ended


def test_large_body_without_our_settings_acknowledged() -> None:
    # A server that never acknowledges our SETTINGS (but honours them) may still send a stream WINDOW bytes.
    client, server = Client(), Server()
    handshake(client, server, reqs(1))
    (sid,) = server.requests
    body = bytes(range(256)) * 4096  # 1 MiB: far over the 64 KiB h2 would expect without an acknowledgement
    server.h2.send_headers(sid, [(":status", "200"), ("content-length", str(len(body)))])
    for i in range(0, len(body), 16384):
        server.h2.send_data(sid, body[i:i + 16384], end_stream=i + 16384 >= len(body))
    client.feed(_without_settings_ack(server.out()))
    assert client.complete == {"r0": 1} and client.bodies["r0"] == body and not client.ended


def _without_settings_ack(data: bytes) -> bytes:
    out, i = bytearray(), 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        if not (data[i + 3] == 0x4 and data[i + 4] & 1):
            out += data[i:i + 9 + n]
        i += 9 + n
    return bytes(out)


def test_a_post_waits_for_the_servers_settings() -> None:
    # Over the server's stream limit before its SETTINGS arrive, a stream is refused; a POST is not sent again
    # then, so it waits for them (a GET need not).
    client = Client()
    client.session.start()
    assert client.session.may_open("GET") and not client.session.may_open("POST")
    client.feed(Server().out())
    assert client.session.may_open("POST") and client.session.peer_settings


@pytest.mark.parametrize("status", [[(":status", "abc")], [(":status", "99")], [(":status", "2000")], [],
                                    [(":status", "200"), (":status", "200")], [(":status", "200"), (":path", "/")],
                                    [(":status", "200"), ("Upper", "x")], [(":status", "200"), ("connection", "x")],
                                    [(":status", "200"), ("x", "a\r\nb")]])
def test_malformed_response_ends_its_stream_only(status: list[tuple[str, str]]) -> None:
    client, server = Client(), Server()
    batch = reqs(3)
    handshake(client, server, batch)
    bad, *good = sorted(server.requests)
    raw = HeadersFrame(bad)
    raw.data = server.h2.encoder.encode(status)
    raw.flags.add("END_HEADERS")  # a body would follow: the client resets the stream
    for sid in good:
        server.answer(sid)
    client.feed(raw.serialize() + server.out())
    assert client.failed == {"r0": 1} and client.complete == {"r1": 1, "r2": 1} and not client.ended
    server.receive(client.session.data_to_send())
    assert bad in server.reset  # RST_STREAM PROTOCOL_ERROR for that stream alone


@pytest.mark.parametrize("status", [b"2\xb20", b"\xb900", b"20\xb3"])
def test_a_status_of_non_ascii_digits_fails_its_stream_alone(status: bytes) -> None:
    # "²", "¹", "³" (latin-1 0xb2, 0xb9, 0xb3) are digits to str.isdigit but not to int(): a :status made of them is
    # malformed (RFC 9110 §15: three ASCII digits), its stream alone fails; the answers read with it are delivered.
    client, server = Client(), Server()
    handshake(client, server, reqs(3))
    bad, *good = sorted(server.requests)
    for sid in good:
        server.answer(sid)
    raw = HeadersFrame(bad)
    raw.data = server.h2.encoder.encode([(b":status", status), (b"content-length", b"1")])
    raw.flags.add("END_HEADERS")
    client.feed(server.out() + raw.serialize())
    assert client.failed == {"r0": 1} and client.complete == {"r1": 1, "r2": 1} and not client.ended
    assert "r0" not in client.started


@pytest.mark.parametrize("sent", [b"x" * 20, b"x" * 5, b"x" * 9 + b"y" * 2])
def test_body_off_its_content_length_ends_its_stream_only(sent: bytes) -> None:
    client, server = Client(), Server()
    handshake(client, server, reqs(3))
    bad, *good = sorted(server.requests)
    server.h2.send_headers(bad, [(":status", "200"), ("content-length", "10")])
    server.h2.send_data(bad, sent[:8])
    server.h2.send_data(bad, sent[8:], end_stream=True)
    for sid in good:
        server.answer(sid)
    client.feed(server.out())
    assert client.failed == {"r0": 1} and client.complete == {"r1": 1, "r2": 1} and not client.ended
    server.receive(client.session.data_to_send())  # the client's answer is well-formed for the server's h2


def test_ping_measures_rtt() -> None:
    client, server = Client(), Server()
    client.session.start(at=10.0)
    server.receive(client.session.data_to_send())
    client.session.receive(server.out(), at=10.25)
    assert client.session.rtt == 0.25


def test_cancelled_stream_is_reset_and_others_continue() -> None:
    client, server = Client(), Server()
    batch = reqs(3)
    handshake(client, server, batch)
    client.session.cancel("r1")
    server.receive(client.session.data_to_send())
    for sid in server.requests:
        if sid not in server.reset:
            server.answer(sid)
    client.feed(server.out())
    assert client.complete == {"r0": 1, "r2": 1} and "r1" not in client.started


def accounted(client: Client, batch: list[H2Request[str]]) -> None:
    """Every request is either answered once, failed once, or offered for retry once: never lost, never twice."""
    for r in batch:
        outcomes = client.complete.get(r.token, 0) + client.failed.get(r.token, 0) + client.retry.get(r.token, 0)
        assert outcomes == 1, (r.token, client)
        if client.retry.get(r.token):
            assert r.method in ("GET", "HEAD")


METHODS = ["GET", "HEAD", "POST", "GET"]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), st.lists(st.integers(1, 400), max_size=40), st.data())
def test_any_frame_boundaries(n: int, cuts: list[int], data: st.DataObject) -> None:
    client, server = Client(), Server()
    batch = reqs(n, METHODS)
    handshake(client, server, batch)
    for sid in server.requests:
        server.answer(sid, data.draw(st.sampled_from([200, 404])))
    wire = server.out()
    pos = 0
    for c in cuts:
        client.feed(wire[pos:pos + c])
        pos += c
    client.feed(wire[pos:])
    accounted(client, batch)
    assert client.complete == {r.token: 1 for r in batch}
    assert all(client.bodies[r.token] == (body_for(r.path) if r.method != "HEAD" else b"") for r in batch)


def test_no_header_value_reaches_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    """hpack would log each header field with its value at DEBUG: a Cookie or Authorization never reaches the
    helper's DEBUG log."""
    caplog.set_level(logging.DEBUG)
    client, server = Client(), Server()
    client.session.start()
    client.session.send([H2Request("r0", "GET", "https", "example.test", "/", [("cookie", "sid=s3cr3t-value"),
                                                                             ("authorization", "Bearer t0ken")])])
    server.receive(client.session.data_to_send())
    assert server.requests and next(iter(server.requests.values()))["cookie"] == "sid=s3cr3t-value"
    assert "s3cr3t" not in caplog.text and "t0ken" not in caplog.text


def test_what_arrived_of_a_data_frame_is_handed_on_before_the_frame_ends() -> None:
    """A server's 8 kB DATA frame of which half arrived (the rest a round trip later, in a slow start): the half
    is the response's body so far, not held until the frame's end; the rest completes it exactly once."""
    client, server = Client(), Server()
    batch = reqs(1)
    handshake(client, server, batch)
    sid = next(iter(server.requests))
    body = bytes(range(256)) * 32
    server.h2.send_headers(sid, [(":status", "200"), ("content-length", str(len(body)))])
    server.h2.send_data(sid, body, end_stream=True)
    wire = server.out()
    frame_at = len(wire) - 9 - len(body)  # the DATA frame is the last thing sent
    assert wire[frame_at + 3] == 0 and int.from_bytes(wire[frame_at:frame_at + 3], "big") == len(body)
    client.feed(wire[:frame_at + 9 + 3000])
    client.feed(b"")
    assert client.bodies["r0"] == body[:3000] and "r0" not in client.complete
    client.feed(wire[frame_at + 9 + 3000:frame_at + 9 + 5000])
    assert client.bodies["r0"] == body[:5000] and "r0" not in client.complete
    client.feed(wire[frame_at + 9 + 5000:])
    assert client.bodies["r0"] == body and client.complete == {"r0": 1}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10), st.data())
def test_failures_at_any_point(n: int, data: st.DataObject) -> None:
    client, server = Client(), Server()
    batch = reqs(n, METHODS)
    handshake(client, server, batch)
    sids = sorted(server.requests)
    answered = data.draw(st.lists(st.sampled_from(sids), unique=True))
    for sid in answered:
        server.answer(sid)
    kind = data.draw(st.sampled_from(["goaway", "rst", "close"]))
    goaway = b""
    if kind == "goaway":
        last = data.draw(st.integers(0, max(sids)))
        code = data.draw(st.sampled_from([ErrorCodes.NO_ERROR, ErrorCodes.INTERNAL_ERROR]))
        # Written by hand: h2's server side sends nothing after its own GOAWAY, a real server (nginx) does.
        goaway = GoAwayFrame(0, last_stream_id=last, error_code=code).serialize()
        if code == ErrorCodes.NO_ERROR:  # graceful: it still answers the streams it kept
            goaway += server.out()
            for sid in sids:
                if sid <= last and sid not in answered:
                    server.answer(sid)
    elif kind == "rst":
        victim = data.draw(st.sampled_from(sids))
        if victim not in answered:
            code = data.draw(st.sampled_from([ErrorCodes.REFUSED_STREAM, ErrorCodes.INTERNAL_ERROR]))
            server.h2.reset_stream(victim, code)
        for sid in sids:
            if sid != victim and sid not in answered:
                server.answer(sid)
    wire = goaway + server.out() if goaway else server.out()
    cut = data.draw(st.integers(0, len(wire))) if kind == "close" else len(wire)
    client.feed(wire[:cut])
    if kind == "close" or client.session.open_streams():
        for ev in client.session.receive_eof():
            client.on(ev)
    accounted(client, batch)
    if kind == "goaway":
        assert client.ended, "a GOAWAY ends the connection once the streams it kept are answered"
        if code == ErrorCodes.NO_ERROR:
            kept = {r.token for r, sid in zip(batch, sids, strict=True) if sid <= last}
            assert {t for t in kept if client.complete.get(t)} == kept, "streams at or below last are still read"
    if kind == "rst":
        assert client.complete.keys() | client.failed.keys() | client.retry.keys() == {r.token for r in batch}


def send_what_the_windows_allow(server: Server, rest: dict[int, bytes]) -> None:
    """The server as eager as flow control lets it be: DATA on every stream while its windows have room."""
    progress = True
    while progress:
        progress = False
        for sid, body in list(rest.items()):
            n = min(server.h2.local_flow_control_window(sid), server.h2.max_outbound_frame_size, len(body))
            if n > 0 or not body:
                server.h2.send_data(sid, body[:n], end_stream=n == len(body))
                rest[sid] = body[n:]
                if n == len(body):
                    del rest[sid]
                progress = True


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200_000), st.lists(st.integers(0, 250_000), min_size=1, max_size=6), st.data())
def test_the_connection_window_keeps_the_server_near_the_cap_and_never_stalls(
    cap: int, sizes: list[int], data: st.DataObject
) -> None:
    client = Client()
    client.session.cap = cap
    server = Server()
    batch = reqs(len(sizes))
    handshake(client, server, batch)
    rest: dict[int, bytes] = {}
    for sid, size in zip(sorted(server.requests), sizes, strict=True):
        body = bytes([sid % 251]) * size
        server.h2.send_headers(sid, [(":status", "200"), ("content-length", str(size))], end_stream=not size)
        if size:
            rest[sid] = body
    expected = {r.token: bytes([sid % 251]) * size
                for r, sid, size in zip(batch, sorted(server.requests), sizes, strict=True)}
    for _ in range(10_000):  # bounded: each round the client takes everything and grants the cap again
        send_what_the_windows_allow(server, rest)
        wire = server.out()
        assert server.h2.outbound_flow_control_window <= max(cap, 65_535), "the server may send no more than the cap"
        if not wire and not rest:
            break
        cut = data.draw(st.integers(0, len(wire)))
        client.feed(wire[:cut])
        client.feed(wire[cut:])
        server.receive(client.session.data_to_send())
    assert not rest, f"stalled with {sum(map(len, rest.values()))} bytes the server could not send"
    assert client.complete == {r.token: 1 for r in batch} and client.bodies == expected
    # Everything was taken, a stream's last DATA (consumed after its stream ended) too: the whole cap is back,
    # but for a top-up too small to be worth a frame.
    assert server.h2.outbound_flow_control_window >= cap - min(MIN_GRANT, max(1, cap // 4))


def test_a_post_answered_before_its_body_is_sent_is_reset_and_frees_its_stream() -> None:
    """A 413 before the upload is read (RFC 9113 §8.1): the POST is complete, the client stops sending it and
    resets its side (RST_STREAM NO_ERROR), so h2 no longer counts the stream against the server's limit and two
    more requests fit in a limit of two."""
    client, server = Client(), Server(max_streams=2)
    client.session.start()
    server.receive(client.session.data_to_send())
    client.feed(server.out())  # the server's SETTINGS: at most 2 streams
    server.receive(client.session.data_to_send())
    post = H2Request("post", "POST", "https", "example.test", "/upload", [], b"p" * 100_000)
    client.session.send([post])  # 65,535 bytes go (the server's initial windows), the rest waits
    server.receive(client.session.data_to_send())
    (sid,) = server.requests
    server.h2.send_headers(sid, [(":status", "413"), ("content-length", "0")], end_stream=True)  # early answer
    client.feed(server.out())
    assert client.complete == {"post": 1} and client.session.open_streams() == 0
    server.receive(client.session.data_to_send())
    assert sid in server.reset and len(server.bodies[sid]) < len(post.body or b"")
    sent = client.session.send(reqs(2))
    assert len(sent.streams) == 2 and sent.returned is None
    server.receive(client.session.data_to_send())
    for s in sent.streams:
        server.answer(s[1])
    client.feed(server.out())
    assert client.complete == {"post": 1, "r0": 1, "r1": 1} and not client.ended


def test_a_request_that_cannot_be_sent_goes_back_alone() -> None:
    """Sending one request raises (here: an authority that is not ASCII): that request comes back as not
    processed (a GET to send again, a POST failed) and the rest of the batch goes out on the same connection."""
    client, server = Client(), Server()
    client.session.start()
    sent = client.session.send([H2Request("bad-get", "GET", "https", "\xe9.test", "/a", []),
                                H2Request("bad-post", "POST", "https", "\xe9.test", "/b", [], b"xx"),
                                *reqs(1)])
    assert [req.token for req, _, _ in sent.streams] == ["r0"]
    assert sent.returned is not None and "could not be sent" in sent.returned.reason
    assert sent.returned.retry == ["bad-get"] and sent.returned.failed == ["bad-post"]
    server.receive(client.session.data_to_send())
    (sid,) = server.requests
    client.feed(server.out())
    server.answer(sid)
    client.feed(server.out())
    assert client.complete == {"r0": 1} and not client.ended


def raw_headers(server: Server, sid: int, fields: list[tuple[str, str]], end_stream: bool = False) -> bytes:
    """A HEADERS frame written by hand (h2's server side would refuse to send a malformed one)."""
    f = HeadersFrame(sid)
    f.data = server.h2.encoder.encode(fields)
    f.flags.add("END_HEADERS")
    if end_stream:
        f.flags.add("END_STREAM")
    return bytes(f.serialize())


def raw_data(sid: int, data: bytes, end_stream: bool = False) -> bytes:
    f = DataFrame(sid, data)
    if end_stream:
        f.flags.add("END_STREAM")
    return bytes(f.serialize())


@pytest.mark.parametrize("ending", ["trailers", "headers"])
def test_a_body_short_of_its_content_length_is_malformed_however_the_stream_ends(ending: str) -> None:
    """content-length 10 and the stream ended by trailers after 5 bytes, or by END_STREAM on the HEADERS: no DATA
    frame ends it short, yet the body is short (RFC 9113 §8.1.1): a stream error, not a complete body."""
    client, server = Client(), Server()
    handshake(client, server, reqs(2))
    bad, good = sorted(server.requests)
    head = [(":status", "200"), ("content-length", "10")]
    if ending == "trailers":
        wire = (raw_headers(server, bad, head) + raw_data(bad, b"x" * 5)
                + raw_headers(server, bad, [("x-checksum", "abc")], end_stream=True))
    else:
        wire = raw_headers(server, bad, head, end_stream=True)
    server.answer(good)
    client.feed(wire + server.out())
    assert client.failed == {"r0": 1} and client.complete == {"r1": 1} and not client.ended


def test_a_push_before_our_settings_are_acknowledged_is_refused() -> None:
    # SETTINGS_ENABLE_PUSH 0 counts for h2 only once the server acknowledged it: a push before is accepted by h2,
    # so the session resets it (REFUSED_STREAM), and nothing of it reaches a request.
    from hyperframe.frame import Frame, PushPromiseFrame, RstStreamFrame

    client, server = Client(), Server()
    client.session.start()
    client.session.send(reqs(1))
    server.receive(client.session.data_to_send())
    (sid,) = server.requests
    preface = _without_settings_ack(server.out())  # the server's SETTINGS; its ACK of ours not yet sent
    pp = PushPromiseFrame(sid, promised_stream_id=2)
    pp.data = server.h2.encoder.encode([(":method", "GET"), (":scheme", "https"), (":authority", "example.test"),
                                        (":path", "/pushed.js")])
    pp.flags.add("END_HEADERS")
    pushed = raw_headers(server, 2, [(":status", "200")]) + DataFrame(2, b"p").serialize()
    client.feed(preface + pp.serialize() + pushed)
    out = client.session.data_to_send()
    frames, pos = [], 0
    while pos < len(out):  # bounded: each step moves past one frame
        f, n = Frame.parse_frame_header(memoryview(out[pos:pos + 9]))
        f.parse_body(memoryview(out[pos + 9:pos + 9 + n]))
        frames.append(f)
        pos += 9 + n
    assert not client.started and not client.complete and not client.ended
    resets = [f.error_code for f in frames if isinstance(f, RstStreamFrame) and f.stream_id == 2]
    assert resets[:1] == [ErrorCodes.REFUSED_STREAM]  # then h2's own STREAM_CLOSED for the frames that followed


@pytest.mark.parametrize("name, value", [("x-a\tb", "1"), ("x-\x7fdel", "1"), ("x-caf\xe9", "1"),
                                         ("x-lead", " v"), ("x-trail", "v\t")])
def test_a_field_rfc9113_forbids_makes_the_response_malformed(name: str, value: str) -> None:
    # §8.2.1: no control character, DEL or non-ASCII in a name; no white space around a value. The stream fails,
    # nothing of it reaches the page.
    client, server = Client(), Server()
    handshake(client, server, reqs(1))
    (sid,) = server.requests
    f = HeadersFrame(sid)
    f.data = server.h2.encoder.encode([(b":status", b"200"), (name.encode("latin-1"), value.encode("latin-1"))])
    f.flags.add("END_HEADERS")
    f.flags.add("END_STREAM")
    client.feed(f.serialize())
    assert client.failed == {"r0": 1} and "r0" not in client.started and not client.ended


def _cl(value: str) -> list[tuple[str, str]]:
    return [(":status", "200"), ("content-length", value)]


# Each of these is malformed by RFC 9113 §8.1.1 (or RFC 9110 §8.6 for content-length) and h2 would end the whole
# connection for it; it fails its own stream alone.
MALFORMED_WIRES = {
    "content-length not a number": lambda s, b: raw_headers(s, b, _cl("abc")) + raw_data(b, b"x", True),
    "negative content-length": lambda s, b: raw_headers(s, b, _cl("-1")) + raw_data(b, b"x", True),
    "content-length as a list": lambda s, b: raw_headers(s, b, _cl("1, 1")) + raw_data(b, b"x", True),
    "two content-lengths": lambda s, b: (raw_headers(s, b, [*_cl("1"), ("content-length", "2")])
                                         + raw_data(b, b"x", True)),
    "1xx ending the stream": lambda s, b: raw_headers(s, b, [(":status", "103")], True),
    "trailers not ending the stream": lambda s, b: (raw_headers(s, b, _cl("1")) + raw_data(b, b"x")
                                                    + raw_headers(s, b, [("x-t", "1")])),
    "DATA before the head": lambda s, b: raw_data(b, b"x", True),
    "DATA before the head, then one": lambda s, b: raw_data(b, b"x") + raw_headers(s, b, _cl("1"), True),
    "DATA after a 1xx": lambda s, b: raw_headers(s, b, [(":status", "100")]) + raw_data(b, b"x", True),
    "trailers a 1xx": lambda s, b: (raw_headers(s, b, _cl("1")) + raw_data(b, b"x")
                                    + raw_headers(s, b, [(":status", "103")]) + raw_data(b, b"y", True)),
    "trailers a 1xx ending the stream": lambda s, b: (raw_headers(s, b, _cl("1")) + raw_data(b, b"x")
                                                      + raw_headers(s, b, [(":status", "103")], True)),
}


SERVER_ENDED = {"trailers a 1xx ending the stream"}


@pytest.mark.parametrize("case", sorted(MALFORMED_WIRES))
def test_a_response_h2_would_end_the_connection_for_fails_its_stream_alone(case: str) -> None:
    client, server = Client(), Server()
    handshake(client, server, reqs(2))
    bad, good = sorted(server.requests)
    wire = MALFORMED_WIRES[case](server, bad)
    server.answer(good)
    client.feed(wire + server.out())
    assert client.failed == {"r0": 1} and client.complete == {"r1": 1} and not client.ended
    if not case.startswith("trailers"):  # there the body came before what made it malformed, and it fails
        assert not client.bodies.get("r0")  # nothing of it reached the request
    server.receive(client.session.data_to_send())  # what the client answered is well-formed for h2's server
    # Reset, unless the server ended the stream itself (no frame may be sent on a closed stream, RFC 9113 §5.1).
    assert (bad in server.reset) is (case not in SERVER_ENDED)
    client.session.send([H2Request("r9", "GET", "https", "example.test", "/later", [])])
    server.receive(client.session.data_to_send())
    (later,) = set(server.requests) - {bad, good}
    server.answer(later)
    client.feed(server.out())
    assert client.complete.get("r9") == 1


def test_a_304_with_a_content_length_and_an_empty_last_data_frame_is_complete() -> None:
    # RFC 9110 §8.6: a 304's content-length is the length the 200 would have; its body is empty whatever it says.
    client, server = Client(), Server()
    handshake(client, server, reqs(1))
    (sid,) = server.requests
    client.feed(raw_headers(server, sid, [(":status", "304"), ("content-length", "10")]) + raw_data(sid, b"", True))
    assert client.complete == {"r0": 1} and not client.failed and not client.ended


def test_data_for_a_cancelled_stream_goes_back_to_the_connection_window() -> None:
    # The server sends on until it reads our RST_STREAM: those bytes used its connection window although no
    # request takes them, and h2 reports nothing of them. Handed back, the server's window is whole again; lost,
    # every cancelled download would shrink it for good.
    client, server = Client(), Server()
    client.session.cap = 256 * 1024
    handshake(client, server, reqs(1))
    (sid,) = server.requests
    server.h2.send_headers(sid, [(":status", "200"), ("content-length", str(200_000))])
    server.h2.send_data(sid, b"a" * 16_000)
    client.feed(server.out())
    client.session.cancel("r0")
    for _ in range(8):  # bounded: 8 frames sent before the server reads the reset
        server.h2.send_data(sid, b"b" * 16_000)
    client.feed(server.out())
    server.receive(client.session.data_to_send())
    assert sid in server.reset and "r0" not in client.complete
    assert server.h2.outbound_flow_control_window >= client.session.cap - MIN_GRANT  # a top-up waits for 16 KiB


def sent_frames(data: bytes) -> list[Frame]:
    """What the client wrote, frame by frame."""
    out = []
    while data:
        frame, length = Frame.parse_frame_header(memoryview(data[:9]))
        frame.parse_body(memoryview(data[9:9 + length]))
        out.append(frame)
        data = data[9 + length:]
    return out


def test_data_for_a_cancelled_stream_is_handed_back_once() -> None:
    # h2 hands a closed stream's DATA back with WINDOW_UPDATEs of its own: the session counts them, so the server's
    # window stays within the cap however long it sends before it reads our reset (counted twice, it grew without
    # bound: 806 kB after 400 frames with a 256 kB cap).
    client, server = Client(), Server()
    cap = client.session.cap = 256 * 1024
    handshake(client, server, reqs(1))
    (sid,) = server.requests
    server.h2.send_headers(sid, [(":status", "200")])
    client.feed(server.out())
    window = server.h2.outbound_flow_control_window
    client.session.cancel("r0")
    most = least = window
    for _ in range(400):  # bounded: frames the server had sent before it read the reset
        client.feed(raw_data(sid, b"b" * 16_000))
        window += sum(f.window_increment for f in sent_frames(client.session.data_to_send())
                      if isinstance(f, WindowUpdateFrame) and f.stream_id == 0) - 16_000
        most, least = max(most, window), min(least, window)
    assert most <= cap and least >= 0, (least, most, cap)


def test_headers_after_trailers_that_did_not_end_the_stream_fail_nothing_else() -> None:
    # Trailers without END_STREAM fail their stream (h2 is told it ended, the session resets it by hand); the
    # server may have sent more on it before reading the reset: a stream error, the connection and the other
    # request unharmed.
    client, server = Client(), Server()
    handshake(client, server, reqs(2))
    bad, good = sorted(server.requests)
    client.feed(raw_headers(server, bad, _cl("1")) + raw_data(bad, b"x") + raw_headers(server, bad, [("x-t", "1")]))
    assert client.failed == {"r0": 1} and not client.ended
    client.feed(raw_headers(server, bad, [("x-u", "2")], True) + raw_data(bad, b"late"))
    server.answer(good)
    client.feed(server.out())
    assert not client.ended and client.complete == {"r1": 1} and not client.retry


def test_trailers_without_end_stream_on_an_upload_reset_the_stream_once() -> None:
    # A POST still sending its body: h2 holds the stream half-closed and resets it itself; no second reset by hand.
    client, server = Client(), Server()
    handshake(client, server, [H2Request("up", "POST", "https", "example.test", "/u", [], b"x" * 200_000)])
    (sid,) = server.requests
    client.session.data_to_send()
    client.feed(raw_headers(server, sid, _cl("1")) + raw_data(sid, b"x") + raw_headers(server, sid, [("x-t", "1")]))
    assert client.failed == {"up": 1}
    resets = [f for f in sent_frames(client.session.data_to_send()) if isinstance(f, RstStreamFrame)]
    assert [f.stream_id for f in resets] == [sid]


def test_a_response_head_the_browser_takes_is_taken_and_fails_nothing_else() -> None:
    """A response head of 100 kB (a long Content-Security-Policy or Link field, many cookies): Chromium takes up to
    256 KiB of header list over h2, as this helper does over HTTP/1.1 (response_parser.MAX_HEAD_BYTES); h2's own
    default, 64 KiB, made it a connection error that took every other stream with it (retried, and again on the
    next connection). It is answered, and the streams beside it too."""
    client, server = Client(), Server()
    handshake(client, server, reqs(3))
    sids = sorted(server.requests)
    for sid in sids:
        body = body_for(server.requests[sid][":path"])
        big = [("content-security-policy", "a" * 100_000)] if sid == sids[1] else []
        server.h2.send_headers(sid, [(":status", "200"), ("content-length", str(len(body))), *big])
        server.h2.send_data(sid, body, end_stream=True)
    client.feed(server.out())
    assert client.complete == {"r0": 1, "r1": 1, "r2": 1}, (client.failed, client.retry)
    assert not client.ended and not client.failed and not client.retry


def _ping(server: Server) -> bytes:
    server.h2.ping(b"alive!!!")
    return server.out()


def test_a_stream_starved_while_the_connection_lives_is_reset_and_handed_back() -> None:
    # r0 and r1 go out at t=0 (r1 behind r0 in the priority chain). r0's answer comes slowly, PINGs keep the
    # connection alive; r1 gets nothing. While r0 progresses r1 waits its turn; a stall after r0's last byte r1 is
    # starved: reset (CANCEL), handed back to be asked again (a retry), and the connection takes no new stream.
    client, server = Client(), Server()
    batch = reqs(2)
    client.session.start(at=0.0)
    client.session.send(batch, at=0.0)
    server.receive(client.session.data_to_send())
    sid0, sid1 = sorted(server.requests)
    body = body_for(server.requests[sid0][":path"])
    server.h2.send_headers(sid0, [(":status", "200"), ("content-length", str(len(body)))])
    for t, piece, last in ((5.0, body[:10], False), (12.0, body[10:20], False), (19.0, body[20:], True)):
        server.h2.send_data(sid0, piece, end_stream=last)
        for ev in client.session.receive(server.out(), at=t):
            client.on(ev)
        assert client.session.starved(t, 15.0) is None, f"r1 waited its turn behind r0 at {t}"
    assert client.complete == {"r0": 1}
    for t in (25.0, 33.9):  # the connection lives: PINGs answered, nothing for r1
        client.session.receive(_ping(server), at=t)
        assert client.session.starved(t, 15.0) is None, f"starved before a stall after r0's last byte ({t})"
    ended = client.session.starved(34.0, 15.0)
    assert ended is not None and ended.retry == ["r1"] and not ended.failed and not ended.partial
    assert "15 s" in ended.reason
    assert not client.session.can_open() and client.session.open_streams() == 0
    server.receive(client.session.data_to_send())
    assert sid1 in server.reset, "the starved stream was not reset"
    assert server.h2.state_machine.state.name == "CLOSED", "no GOAWAY"


def test_a_stream_ahead_starved_while_one_behind_it_is_answered_is_starved() -> None:
    client, server = Client(), Server()
    batch = reqs(2)
    client.session.start(at=0.0)
    client.session.send(batch, at=0.0)
    server.receive(client.session.data_to_send())
    _, sid1 = sorted(server.requests)
    server.h2.send_headers(sid1, [(":status", "200"), ("content-length", "100")])
    for t in (4.0, 8.0, 14.0):
        server.h2.send_data(sid1, b"x" * 10)
        for ev in client.session.receive(server.out(), at=t):
            client.on(ev)
    ended = client.session.starved(15.0, 15.0)
    assert ended is not None and ended.retry == ["r0"], "the stream the server passed over was not starved"
    assert client.session.carries("r1")


def test_no_stream_is_starved_while_the_server_has_no_window_to_send_in() -> None:
    # Backpressure is ours: the sink has not taken what came, the connection window is used up.
    client, server = Client(), Server()
    client.session.cap = 65_535  # the connection window stays at its initial size
    batch = reqs(2, ["GET", "POST"])
    client.session.start(at=0.0)
    client.session.send(batch[:1], at=0.0)
    server.receive(client.session.data_to_send())
    client.session.receive(server.out(), at=0.1)
    (sid0,) = server.requests
    server.h2.send_headers(sid0, [(":status", "200"), ("content-length", "200000")])
    for size in (16_384, 16_384, 16_384, 16_383):  # the whole initial connection window, 65,535
        server.h2.send_data(sid0, b"y" * size)
    client.session.receive(server.out(), at=1.0)  # taken by nobody: not consumed
    assert client.session.starved(100.0, 15.0) is None
    client.session.consumed("r0", 65_535)  # the sink took it: the window opens, the server could send again
    assert client.session.starved(100.0, 15.0) is not None
