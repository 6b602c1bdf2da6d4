"""The HTTP/2 misbehaviour matrix: the real engine and pool against a scripted h2 server over TLS on loopback
(h2_misbehaving_server.py) that goes away mid-batch, resets streams, shrinks windows, limits streams, never
acknowledges SETTINGS, resets the TCP connection, answers streams never opened, pushes when push is off and sends
bad :status values.

Every case ends with every request of the batch answered exactly once (the recording sink: one end or one error,
one timing), each GET/HEAD with its own bytes (SHA) unless the case says it must fail, and:
- a POST is never sent twice (the server processed it at most once), and is sent again on no connection at all;
- a request the server provably did not process (REFUSED_STREAM, above a graceful GOAWAY's last stream id) is
  sent again without counting a retry; one it may have processed (a connection lost) counts one.
Waits are bounded (the engine's own timeouts and asyncio.wait_for around each batch)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from h2.errors import ErrorCodes
from h2.exceptions import H2Error
from h2.settings import SettingCodes
from h2_misbehaving_server import H2Req, H2Server, H2ServerConn
from hyperframe.frame import DataFrame
from lanefetch.engine import Engine, EngineConfig, FetchRequest
from lanefetch.engine import pool as pool_module
from lanefetch.engine.connection import Carrier
from lanefetch.engine.engine import policy_key
from lanefetch.engine.h2_connection import H2Connection
from lanefetch.engine.h2_session import WINDOW
from lanefetch.engine.origin_policy import OriginPolicy
from lanefetch.engine.pool_plan import roomy_bdp
from lanefetch.engine.request import Origin
from lanefetch.engine.timing import now
from misbehaving_servers import LOOPBACK, RecordingSink, content, sha
from tls_pki import make_test_pki
from waits import until

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

VICTIM = "/v/victim/150000"  # the stream a case picks on: large enough to be cut mid-body
POST_BODY = bytes(range(256)) * 12  # 3 KB


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch h2 misbehaviour CA")


def batch(srv: H2Server, tag: str = "", *, posts: int = 2, post_body: bytes = POST_BODY) -> list[FetchRequest]:
    sizes = [2048, 200_000, 17, 65536, 1, 9000, 70_001, 0, 4096, 100_000]
    reqs = [FetchRequest(f"g{tag}{i}", "GET", srv.url(f"/r{tag}/g{i}/{s}"), resource_type="script")
            for i, s in enumerate(sizes)]
    reqs.append(FetchRequest(f"victim{tag}", "GET", srv.url(VICTIM + tag), resource_type="image"))
    reqs.append(FetchRequest(f"head{tag}", "HEAD", srv.url(f"/r{tag}/head/5000")))
    reqs += [FetchRequest(f"post{tag}{i}", "POST", srv.url(f"/p{tag}/post{i}"), body=post_body + bytes([i]),
                          headers=[("content-type", "application/octet-stream")]) for i in range(posts)]
    return reqs


def path_of(req: FetchRequest) -> str:
    return "/" + req.url.split("/", 3)[3]


def expected(req: FetchRequest) -> bytes:
    if req.method == "HEAD":
        return b""
    return req.body or b"" if req.method == "POST" else content(path_of(req))


def config(**kw: object) -> EngineConfig:
    """One h2 connection per origin (`--h2-connections 1`): each scenario scripts its first connection with the
    whole batch on it. The default's second connection has its own test (test_two_connections_…)."""
    cfg = EngineConfig(connect_timeout=5, stall_timeout=5, idle_timeout=10, total_timeout=30, max_retries=3,
                       h2_connections=1)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


async def scripted_first(conn: H2ServerConn) -> H2Req | None:
    """A scenario's start where only the first connection is scripted: any other serves everything (None); the
    first connection's first request otherwise."""
    if conn.index != 0:
        await conn.serve_rest()
        return None
    first = await conn.next_request()
    assert first is not None
    return first


async def relay_holding_second(srv: H2Server, hold: Callable[[], Awaitable[object]],
                               relayed: list[int]) -> tuple[asyncio.Server, int]:
    """A TCP relay in front of srv whose second connection reaches the server only once `hold()` returns: its
    handshakes wait (as a connection opened later, or one whose packets took longer, over a long link). Returns
    the relay and its port; every accepted connection is counted in `relayed`."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relayed.append(len(relayed))
        if len(relayed) > 1:
            await hold()
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", srv.port)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    front = await asyncio.start_server(relay, "127.0.0.1", 0)
    return front, front.sockets[0].getsockname()[1]


def holding_marked(release: asyncio.Event, held: list[H2Req]) -> Scenario:
    """A server that answers every request at once but those whose path starts with /r/hold: those are kept in
    `held` and answered once `release` is set (as answers still under way over a long link keep streams open)."""

    async def scenario(conn: H2ServerConn) -> None:
        while (r := await conn.next_request(timeout=15.0)) is not None:
            if r.path.startswith("/r/hold"):
                held.append(r)

                async def later(req: H2Req = r) -> None:
                    await release.wait()
                    await conn.respond(req)
                t = asyncio.create_task(later())
                conn.tasks.add(t)
                t.add_done_callback(conn.tasks.discard)
            else:
                conn.answer_soon(r)

    return scenario


@dataclass
class Outcome:
    """What a case expects beyond "each answered exactly once": requests that must fail (a clear error), requests
    that may fail (POSTs caught by a connection error), requests sent again without a counted retry."""

    fail: set[str] = field(default_factory=set)
    may_fail: set[str] = field(default_factory=set)
    not_processed: set[str] = field(default_factory=set)  # sent again free: report.retries == 0


async def run_batch(engine: Engine, reqs: list[FetchRequest], timeout: float = 40) -> RecordingSink:
    sink = RecordingSink()
    await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), timeout)
    return sink


def check(sink: RecordingSink, reqs: list[FetchRequest], srv: H2Server, out: Outcome) -> None:
    sink.check_once(reqs)
    assert not srv.errors, f"the scripted server itself failed: {srv.errors!r}"
    for req in reqs:
        r = sink.records[req.id]
        if req.id in out.fail:
            assert r.error is not None, f"{req.id}: should have failed, got {len(r.body)} bytes"
            assert r.error.message, req.id
            continue
        if r.error is not None:
            assert req.id in out.may_fail, f"{req.id} {req.url}: {r.error!r}"
            assert req.method == "POST"
            continue
        want = expected(req)
        assert len(r.body) == len(want) and sha(bytes(r.body)) == sha(want), (
            f"{req.id}: got {len(r.body)} bytes, want {len(want)}")
        assert r.head is not None and r.head.http_version == "2"
        if req.id in out.not_processed:
            assert r.report is not None and r.report.retries == 0, f"{req.id}: a free re-send counted a retry"
    for req in reqs:
        if req.method == "POST":  # never sent again: the server saw it at most once, answered it at most once
            key = ("POST", path_of(req))
            assert srv.received[key] <= 1 and srv.answered[key] <= 1, f"{req.id} reached the server twice"


def ids(reqs: list[FetchRequest], conn: H2ServerConn, streams: list[int]) -> set[str]:
    by_path = {path_of(r): r.id for r in reqs}
    return {by_path[conn.streams[s].path] for s in streams if s in conn.streams}


# ------------------------------------------------------------------------------------------- scenarios
# Each: (scenario for the first connection, later connections serve normally) and how to derive the Outcome.

Scenario = Callable[[H2ServerConn], Awaitable[None]]
N = 14  # requests in a batch


def first_conn(misbehave: Scenario) -> Scenario:
    async def run(conn: H2ServerConn) -> None:
        if conn.index == 0:
            await misbehave(conn)
        else:
            await conn.serve_rest()
    return run


def victim_in(reqs: list[H2Req]) -> H2Req:
    return next(r for r in reqs if r.path.startswith(VICTIM))


async def goaway_graceful(conn: H2ServerConn) -> None:
    """All 14 arrive; GOAWAY(NO_ERROR) keeping the lowest 6 streams; those are answered, the rest never."""
    reqs = await conn.requests(N)
    sids = sorted(r.stream_id for r in reqs)
    last = sids[5]
    conn.server.state["above"] = [s for s in sids if s > last]
    for r in reqs:
        if r.stream_id > last:
            conn.server.received[(r.method, r.path)] -= 1  # arrived, never processed
    conn.goaway(last)
    for r in sorted(reqs, key=lambda r: r.stream_id):
        if r.stream_id <= last:
            await conn.respond(r)
    await conn.closed.wait()


async def goaway_error(conn: H2ServerConn) -> None:
    """Three answered, then GOAWAY(INTERNAL_ERROR) with every stream at or below last: maybe processed."""
    reqs = await conn.requests(N)
    gets = [r for r in reqs if r.method == "GET" and not r.path.startswith(VICTIM)]
    for r in gets[:3]:
        await conn.respond(r)
    conn.goaway(max(r.stream_id for r in reqs), ErrorCodes.INTERNAL_ERROR)
    await conn.drain()


def rst(code: ErrorCodes, when: str, method: str = "GET") -> Scenario:
    """The victim's stream is reset with `code` before its head, after its head, or mid-body; the rest served.
    With method POST, a POST is the victim instead."""
    async def run(conn: H2ServerConn) -> None:
        reqs = await conn.requests(N)
        victim = victim_in(reqs) if method == "GET" else next(r for r in reqs if r.method == "POST")
        if when == "after_head":
            conn.send_head(victim)
        elif when == "mid_body":
            conn.send_head(victim)
            await conn.send_body(victim, conn.answer_for(victim)[:40_000], end=False)
        conn.reset_stream(victim, code)
        if code == ErrorCodes.REFUSED_STREAM and when == "before_head":
            conn.server.received[(victim.method, victim.path)] -= 1  # refused: not processed
        conn.server.state["victim"] = victim.stream_id
        for r in reqs:
            if r is not victim:
                conn.answer_soon(r)
        await conn.serve_rest()
    return run


async def refuse_always(conn: H2ServerConn) -> None:
    """The victim is refused on every connection, every time."""
    while (r := await conn.next_request()) is not None:
        if r.path.startswith(VICTIM):
            conn.server.received[(r.method, r.path)] -= 1
            conn.reset_stream(r, ErrorCodes.REFUSED_STREAM)
        else:
            conn.answer_soon(r)


async def reset_mid_batch(conn: H2ServerConn) -> None:
    """Three GETs answered, the victim's head and 40 KB, then a TCP reset."""
    reqs = await conn.requests(N)
    gets = [r for r in reqs if r.method == "GET" and not r.path.startswith(VICTIM)]
    for r in gets[:3]:
        await conn.respond(r)
    victim = victim_in(reqs)
    conn.send_head(victim)
    await conn.send_body(victim, content(victim.path)[:40_000], end=False)
    conn.tcp_reset()


async def answer_unopened_stream(conn: H2ServerConn) -> None:
    reqs = await conn.requests(N)
    for r in reqs[:2]:
        await conn.respond(r)
    conn.raw_headers(max(r.stream_id for r in reqs) + 40, [(":status", "200"), ("content-length", "0")])
    for r in reqs[2:]:
        conn.answer_soon(r)
    await conn.serve_rest()


async def push_while_disabled(conn: H2ServerConn) -> None:
    reqs = await conn.requests(N)
    conn.raw_push_promise(reqs[0], 2)
    for r in reqs:
        conn.answer_soon(r)
    await conn.serve_rest()


def bad_status(status: str | None) -> Scenario:
    """The victim's HEADERS carry a bad :status (None: none at all), on every connection."""
    async def run(conn: H2ServerConn) -> None:
        while (r := await conn.next_request()) is not None:
            if r.path.startswith(VICTIM):
                hdrs = [("content-length", "5")] if status is None else [(":status", status), ("content-length", "5")]
                conn.raw_headers(r.stream_id, hdrs, end=False)
            else:
                conn.answer_soon(r)
    return run


def wrong_length(extra: int) -> Scenario:
    """The victim announces its length and then sends `extra` bytes more (or fewer), on every connection."""
    async def run(conn: H2ServerConn) -> None:
        while (r := await conn.next_request()) is not None:
            if r.path.startswith(VICTIM):
                body = content(r.path)
                conn.h2.send_headers(r.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                conn.answer_soon_data(r, body + bytes(extra) if extra > 0 else body[:extra])
            else:
                conn.answer_soon(r)
    return run


def malformed_victim(kind: str) -> Scenario:
    """The victim's response is malformed in a way h2 itself would make a connection error (RFC 9113 §8.1.1
    makes each a stream error), on every connection; written raw, h2's server side would refuse to send it."""
    async def run(conn: H2ServerConn) -> None:
        while (r := await conn.next_request()) is not None:
            if not r.path.startswith(VICTIM):
                conn.answer_soon(r)
            elif kind == "content-length-not-a-number":
                conn.raw_headers(r.stream_id, [(":status", "200"), ("content-length", "five")], end=False)
            elif kind == "two-content-lengths":
                conn.raw_headers(r.stream_id, [(":status", "200"), ("content-length", "5"),
                                               ("content-length", "6")], end=False)
            elif kind == "1xx-ending-the-stream":
                conn.raw_headers(r.stream_id, [(":status", "103")], end=True)
            elif kind == "data-before-the-head":
                conn.raw(DataFrame(r.stream_id, b"x" * 5))
            else:  # trailers-not-ending-the-stream
                conn.raw_headers(r.stream_id, [(":status", "200"), ("content-length", "5")], end=False)
                conn.raw(DataFrame(r.stream_id, b"x" * 5))
                conn.raw_headers(r.stream_id, [("x-checksum", "1")], end=False)
    return run


def victim_fails_alone(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    """The victim fails; the connection lives on, so nothing else is sent again (no retry counted)."""
    victim = {r.id for r in reqs if r.id.startswith("victim")}
    return Outcome(fail=victim, not_processed={r.id for r in reqs} - victim)


async def informational_then_200(conn: H2ServerConn) -> None:
    while (r := await conn.next_request()) is not None:
        if r.path.startswith(VICTIM):  # raw: h2's server side refuses a 1xx once the request has ended
            conn.raw_headers(r.stream_id, [(":status", "103"), ("link", "</x.css>; rel=preload")], end=False)
        conn.answer_soon(r)


async def zero_then_raised(conn: H2ServerConn) -> None:
    """MAX_CONCURRENT_STREAMS 0: every stream the client opened before it knew is refused (the 12 GETs and HEAD;
    the POSTs wait for the SETTINGS); once all were, the limit is raised to 100 and everything is served."""
    await until(lambda: len(conn.refused) >= N - 2, "the streams opened before the limit was known refused",
                seen=lambda: len(conn.refused))
    assert len(conn.refused) == N - 2, f"{len(conn.refused)} streams refused"
    conn.server.received.clear()
    conn.enforce_streams = None
    conn.h2.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: 100})
    conn.flush()
    await conn.serve_rest()


async def serve(conn: H2ServerConn) -> None:
    await conn.serve_rest()


@dataclass
class Case:
    scenario: Scenario
    outcome: Callable[[list[FetchRequest], H2Server], Outcome]
    server_kw: dict[str, object] = field(default_factory=dict)
    warm_up: bool = False  # a first batch so the client knows the server's SETTINGS before the checked one
    post_body: bytes = POST_BODY
    after: Callable[[H2Server], None] | None = None  # a last check on what the server saw


def never_refused(srv: H2Server) -> None:
    assert all(not c.refused for c in srv.connections), "a stream opened beyond the limit the client knew"


def nothing(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    return Outcome()


def posts_may_fail(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    return Outcome(may_fail={r.id for r in reqs if r.method == "POST"})


def posts_fail(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    """The connection was lost with the POSTs unanswered (the server may have processed them): they fail, never
    sent again; the GETs and the HEAD are retried (a counted retry) and exact."""
    return Outcome(fail={r.id for r in reqs if r.method == "POST"})


def victim_fails(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    return Outcome(fail={r.id for r in reqs if r.id.startswith("victim")})


def refused_victim(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    return Outcome(not_processed={r.id for r in reqs if r.id.startswith("victim")})


def refused_post(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    return Outcome(fail={"post0" if srv.received[("POST", "/p/post0")] == 0 else "post1"})


def post_victim_fails(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    victim = srv.connections[0].streams[int(srv.state["victim"])]  # type: ignore[call-overload]
    return Outcome(fail={r.id for r in reqs if path_of(r) == victim.path})


def above_goaway(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    above = ids(reqs, srv.connections[0], list(srv.state["above"]))  # type: ignore[call-overload]
    posts = {i for i in above if i.startswith("post")}
    return Outcome(fail=posts, not_processed=above - posts)


def all_not_processed(reqs: list[FetchRequest], srv: H2Server) -> Outcome:
    return Outcome(not_processed={r.id for r in reqs})


CASES: dict[str, Case] = {
    "goaway-graceful-mid-batch": Case(first_conn(goaway_graceful), above_goaway),
    "goaway-error-mid-batch": Case(first_conn(goaway_error), posts_fail),
    **{f"rst-{code.name}-{when}": Case(first_conn(rst(code, when)),
                                       refused_victim if (code, when) == (ErrorCodes.REFUSED_STREAM, "before_head")
                                       else victim_fails)
       for code in (ErrorCodes.REFUSED_STREAM, ErrorCodes.INTERNAL_ERROR, ErrorCodes.CANCEL)
       for when in ("before_head", "after_head", "mid_body")},
    "rst-REFUSED_STREAM-post": Case(first_conn(rst(ErrorCodes.REFUSED_STREAM, "before_head", "POST")),
                                    post_victim_fails),
    "rst-REFUSED_STREAM-always": Case(refuse_always, victim_fails),
    "window-1-byte": Case(serve, nothing, {"settings": {SettingCodes.INITIAL_WINDOW_SIZE: 1}}, warm_up=True,
                          post_body=POST_BODY[:700]),
    "window-16-KB": Case(serve, nothing, {"settings": {SettingCodes.INITIAL_WINDOW_SIZE: 16384}}, warm_up=True,
                         post_body=POST_BODY * 40),
    "max-streams-1": Case(serve, nothing, {"settings": {SettingCodes.MAX_CONCURRENT_STREAMS: 1}, "max_streams": 1},
                          warm_up=True, after=never_refused),
    "max-streams-1-cold": Case(serve, nothing,
                               {"settings": {SettingCodes.MAX_CONCURRENT_STREAMS: 1}, "max_streams": 1}),
    "max-streams-0-then-raised": Case(
        first_conn(zero_then_raised), all_not_processed,
        {"settings": {SettingCodes.MAX_CONCURRENT_STREAMS: 0}, "max_streams": 0}),
    "settings-never-acked": Case(serve, nothing, {"ack_settings": False}),
    "tcp-reset-mid-batch": Case(first_conn(reset_mid_batch), posts_fail),
    "response-on-unopened-stream": Case(first_conn(answer_unopened_stream), posts_may_fail),
    "push-promise-push-disabled": Case(first_conn(push_while_disabled), posts_may_fail),
    **{f"bad-status-{s}": Case(bad_status(s), victim_fails) for s in ("abc", "99", "2000", "-1", None)},
    "informational-103-then-200": Case(informational_then_200, nothing),
    "content-length-exceeded": Case(wrong_length(10), victim_fails),
    "content-length-short": Case(wrong_length(-10), victim_fails),
    **{f"malformed-{kind}": Case(malformed_victim(kind), victim_fails_alone)
       for kind in ("content-length-not-a-number", "two-content-lengths", "1xx-ending-the-stream",
                    "data-before-the-head", "trailers-not-ending-the-stream")},
}


@pytest.mark.parametrize("name", list(CASES))
async def test_h2_misbehaviour(name: str, pki: Path) -> None:
    case = CASES[name]
    engine = Engine(config(ca_file=str(pki / "ca.pem")))
    try:
        async with H2Server(case.scenario, pki, **case.server_kw) as srv:  # type: ignore[arg-type]
            if case.warm_up:
                warm = [FetchRequest("warm", "GET", srv.url("/warm/10"))]
                sink = await run_batch(engine, warm)
                sink.check_once(warm)
            reqs = batch(srv, post_body=case.post_body)
            assert len(reqs) == N
            sink = await run_batch(engine, reqs)
            check(sink, reqs, srv, case.outcome(reqs, srv))
            if case.after is not None:
                case.after(srv)
    finally:
        await engine.aclose()


@pytest.mark.parametrize("misbehave", ["tcp-reset", "goaway-error"])
async def test_two_connections_one_breaks_mid_batch(misbehave: str, pki: Path) -> None:
    """The default on a link whose round trip is not known yet: two h2 connections opened together share the
    batch (pool_plan.h2_connection_count). The first breaks after answering two of its share (a TCP reset, or
    GOAWAY(INTERNAL_ERROR) covering every stream): every request is still answered exactly once, the GETs and the
    HEAD exact, a POST of the broken share fails, never sent again."""
    assert EngineConfig().h2_connections == 2

    async def scenario(conn: H2ServerConn) -> None:
        first = await scripted_first(conn)
        if first is None:
            return
        reqs = [first]
        while (r := await conn.next_request(timeout=1.0)) is not None:
            reqs.append(r)
        for r in [r for r in reqs if r.method != "POST"][:2]:
            await conn.respond(r)
        conn.server.state["broken"] = len(reqs)
        if misbehave == "tcp-reset":
            conn.tcp_reset()
        else:
            conn.goaway(max(r.stream_id for r in reqs), ErrorCodes.INTERNAL_ERROR)
            await conn.drain()

    engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=EngineConfig().h2_connections))
    try:
        async with H2Server(scenario, pki) as srv:
            reqs = batch(srv)
            sink = await run_batch(engine, reqs)
            check(sink, reqs, srv, posts_may_fail(reqs, srv))
            shared = srv.state["broken"]
            assert isinstance(shared, int) and 1 <= shared < len(reqs), f"the first connection had {shared}: not shared"
            assert len(srv.connections) >= 2
    finally:
        await engine.aclose()


async def second_connection_batch(pki: Path, sizes: list[int], stream_limit: int | None
                                  ) -> tuple[list[int], set[int], int, object]:
    """One request on the origin's first h2 connection, then a batch of `sizes` over `sat`'s round trip (the default's
    two h2 connections), a relay in front of the server holding any second connection until the batch is done, the
    server's answers to the batch held until `stream_limit` (or the whole batch) of it came on the first connection
    (as answers still under way over a slow link keep a connection's streams open). Returns the connections the
    relay accepted, the connections that carried the batch, the first one's id and how many came on it together."""
    release = asyncio.Event()
    relayed: list[int] = []
    together = min(len(sizes), stream_limit or len(sizes))

    async def scenario(conn: H2ServerConn) -> None:
        first = await scripted_first(conn)
        if first is None:
            return
        await conn.respond(first)
        batch: list[H2Req] = []
        while len(batch) < together and (r := await conn.next_request(timeout=5.0)) is not None:
            batch.append(r)
        conn.server.state["together"] = len(batch)
        for r in batch:
            await conn.respond(r)
        await conn.serve_rest()

    settings = {} if stream_limit is None else {SettingCodes.MAX_CONCURRENT_STREAMS: stream_limit}
    async with H2Server(scenario, pki, settings=settings) as srv:
        front, port = await relay_holding_second(srv, release.wait, relayed)
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=EngineConfig().h2_connections))
        try:
            first = [FetchRequest("one", "GET", f"https://localhost:{port}/r/one/100", resource_type="script")]
            before = await run_batch(engine, first)
            (pool,) = engine._pools.values()
            pool.budget.min_rtt = 0.6  # as over `sat`: loopback's round trip would leave the origin one connection
            reqs = [FetchRequest(f"g{i}", "GET", f"https://localhost:{port}/r/g{i}/{s}", resource_type="script")
                    for i, s in enumerate(sizes)]
            sink = await run_batch(engine, reqs, timeout=20)
            sink.check_once(reqs)
            conns = {sink.records[r.id].report.connection.id for r in reqs}  # type: ignore[union-attr]
            first_conn = before.records["one"].report.connection.id  # type: ignore[union-attr]
            return list(relayed), conns, first_conn, srv.state["together"]
        finally:
            release.set()
            await engine.aclose()
            front.close()
            await front.wait_closed()


async def test_a_batch_the_up_h2_connection_has_room_for_opens_no_second_connection(pki: Path) -> None:
    """Two h2 connections are welcome over a long round trip, but one opened once the first is up has its TCP and
    TLS handshakes ahead (two round trips over `sat`) and holds no share until then: the up connection sends the
    whole batch at once, and the second would carry only what came two round trips later (a first visit over `sat`:
    an @import stylesheet or a small script, and its TLS handshake's ~3 kB on the downlink). Not opened."""
    relayed, conns, first_conn, together = await second_connection_batch(
        pki, [2048, 17, 65536, 1, 9000, 0, 4096, 300], stream_limit=None)
    assert len(relayed) == 1, "no second connection for work the first has streams for"
    assert conns == {first_conn} and together == 8, "the whole batch on the connection that was up, at once"


async def test_a_second_connection_opened_once_h2_is_known_holds_no_share(pki: Path) -> None:
    """A batch larger than the up connection's free streams (the server allows 8) opens the second connection; it
    holds no share while its handshakes are ahead: the open connection takes all its streams allow meanwhile, none
    of it waits for the other (the relay holds the second until the batch is done; kept for a share, part of the
    batch waited for it, the server never saw its 8 together and the batch never finished)."""
    relayed, conns, first_conn, together = await second_connection_batch(
        pki, [2048, 17, 65536, 1, 9000, 0, 4096, 300, 700], stream_limit=8)
    assert len(relayed) == 2, "the pool opened its second connection for the batch"
    assert conns == {first_conn}, "every request on the connection that was up"
    assert together == 8, "as much of the batch as its streams allow came on it at once"


async def test_an_idle_h2_connection_takes_no_share_of_the_receive_cap(pki: Path) -> None:
    """The origin's receive cap (what its servers may have outstanding: H2_GAIN x delivery rate x round trip) is
    shared among its h2 connections that have streams open. A connection carrying a whole batch while the other is
    idle gets all of it (counted, the idle one had halved it: a second visit's flight over `sat` then grew 1.5x a
    round trip instead of slow start's 2x); two carrying get half each."""
    release = asyncio.Event()
    held: list[H2Req] = []

    async with H2Server(holding_marked(release, held), pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        try:
            await run_batch(engine, [FetchRequest("one", "GET", srv.url("/r/one/100"), resource_type="script")])
            (pool,) = engine._pools.values()
            pool.budget.min_rtt = 0.6  # as over `sat`: the origin may have a second h2 connection
            # (a page's preconnect opens it: a batch the first has streams for opens none, h2_opens_late)
            assert engine.preconnect(srv.url("/"), LOOPBACK, "full")
            await until(lambda: sum(isinstance(c, H2Connection) for c in pool.connections) == 2,
                        "the second h2 connection up", seconds=5)
            warm = [FetchRequest(f"w{i}", "GET", srv.url(f"/r/w{i}/3000"), resource_type="script") for i in range(8)]
            (await run_batch(engine, warm)).check_once(warm)
            conns = [c for c in pool.connections if isinstance(c, H2Connection)]
            assert len(conns) == 2, "two h2 connections up"

            def caps() -> tuple[int, int, int, int]:
                pool.budget.min_rtt = 0.6  # (loopback's handshakes lowered it again)
                t = now()
                # The link's remembered BDP, as the connections take it: loopback's reads may have made it roomy
                # (pool_plan.roomy_bdp), which raises every cap's floor (a flake in CI, 2026-11-30, when it was
                # left out here: 3942400 per connection against 26623 expected)
                roomy = roomy_bdp(pool.policy.link_bdp)
                return (conns[0]._cap(t), conns[1]._cap(t), pool.budget.h2_window(t, WINDOW, 1, roomy),
                        pool.budget.h2_window(t, WINDOW, 2, roomy))

            one = [FetchRequest("h0", "GET", srv.url("/r/hold0/5000"), resource_type="script")]
            first = asyncio.create_task(run_batch(engine, one))
            await until(lambda: len(held) == 1, "the held request at the server", seconds=5)
            a, b, whole, half = caps()
            assert whole > half > 0, "a cap below the session's window, so that sharing shows"
            carrying = [c for c in conns if c.session.open_streams()]
            assert len(carrying) == 1
            assert (a if carrying[0] is conns[0] else b) == whole, "the only connection carrying gets the whole cap"

            more = [FetchRequest(f"h{i}", "GET", srv.url(f"/r/hold{i}/5000"), resource_type="script")
                    for i in range(1, 9)]
            second = asyncio.create_task(run_batch(engine, more))
            await until(lambda: len(held) == 9, "the second batch at the server", seconds=5)
            assert all(c.session.open_streams() for c in conns), "the batch shared between the two"
            a, b, _, half = caps()  # (now: what was delivered meanwhile moved the rate)
            assert (a, b) == (half, half), "two connections carrying: half each"
            release.set()
            (await first).check_once(one)
            (await second).check_once(more)
        finally:
            release.set()
            await engine.aclose()


async def test_h2_connections_opened_together_share_the_first_batch(pki: Path) -> None:
    """An origin remembered to speak h2 gets its two connections at once (before any is up, as a page's
    preconnect opens them): they share the batch as equals, even where one's handshakes end first (here the relay
    lets the second reach the server 0.3 s later). Marked late like a connection opened once another was up, the
    second got none of a second visit's flight: it all went on the first, whose server started slow start from
    one initial window instead of two."""
    relayed: list[int] = []
    second_asked = asyncio.Event()

    async def scenario(conn: H2ServerConn) -> None:
        if conn.index != 0:
            first = await conn.next_request()
            if first is not None:
                second_asked.set()
                conn.answer_soon(first)
            await conn.serve_rest()
            return
        # The first connection's answers wait until the batch is all on it or the second connection asked too (as
        # answers still under way over a long link keep streams open): loopback would otherwise answer the first
        # share before the second connection is up and leave it nothing to take.
        mine: list[H2Req] = []
        for _ in range(400):  # at most 20 s
            if len(mine) == 8 or second_asked.is_set():
                break
            if (r := await conn.next_request(timeout=0.05)) is not None:
                mine.append(r)
        for r in mine:
            conn.answer_soon(r)
        await conn.serve_rest()

    async with H2Server(scenario, pki) as srv:
        front, port = await relay_holding_second(srv, lambda: asyncio.sleep(0.3), relayed)
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        engine.policies[policy_key(Origin("https", "localhost", port), LOOPBACK)] = OriginPolicy(
            engine.config.effective_depth, protocol="h2")
        try:
            reqs = [FetchRequest(f"g{i}", "GET", f"https://localhost:{port}/r/g{i}/{s}", resource_type="script")
                    for i, s in enumerate([2048, 17, 65536, 1, 9000, 0, 4096, 300])]
            sink = await run_batch(engine, reqs, timeout=20)
            sink.check_once(reqs)
            assert len(relayed) == 2, "two connections opened together"
            carried = Counter(sink.records[r.id].report.connection.id for r in reqs)  # type: ignore[union-attr]
            assert len(carried) == 2 and min(carried.values()) >= 2, f"the batch shared: {dict(carried)}"
        finally:
            await engine.aclose()
            front.close()
            await front.wait_closed()


async def test_a_flight_of_known_bytes_on_a_roomy_link_gets_more_h2_connections(pki: Path) -> None:
    """An origin remembered to speak h2 over a link that carries 178 kB per round trip (as `sat` was learned): a
    flight whose answers are known to put 400 kB on the link gets four connections at once (one per
    pool_plan.H2_CONNECTION_BYTES) instead of the two a long round trip gives any batch; its requests shared over
    them, each answered once."""

    async def scenario(conn: H2ServerConn) -> None:
        await conn.serve_rest()

    async with H2Server(scenario, pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        engine.policies[policy_key(Origin("https", "localhost", srv.port), LOOPBACK)] = OriginPolicy(
            engine.config.effective_depth, protocol="h2", link_bdp=177_788)
        try:
            reqs = [FetchRequest(f"f{i}", "GET", srv.url(f"/r/f{i}/2000"), resource_type="image",
                                 expected_size=100_000, expected_wire=100_000) for i in range(4)]
            sink = await run_batch(engine, reqs, timeout=20)
            sink.check_once(reqs)
            assert len(srv.connections) == 4, f"{len(srv.connections)} connections"
        finally:
            await engine.aclose()


async def test_h2_connections_take_a_flight_of_known_sizes_by_bytes(pki: Path) -> None:
    """Three h2 connections up, a flight of one 90 kB answer and nine of 10 kB (sizes known from earlier loads):
    the connection that took the large one takes nothing more (the least loaded takes the next, largest first), so
    the connections end near together; counted in streams (four each), it would also have carried three small
    ones. The server answers only once the whole flight has come, so nothing ends early and lowers a load."""
    arrived: list[tuple[int, H2Req]] = []
    everything = asyncio.Event()

    async def scenario(conn: H2ServerConn) -> None:
        for _ in range(400):  # at most 20 s
            if everything.is_set():
                break
            r = await conn.next_request(timeout=0.05)
            if r is None:
                continue
            if not r.path.startswith("/r/f"):
                conn.answer_soon(r)  # the warm-up
                continue
            arrived.append((conn.index, r))
            if len(arrived) == 10:
                everything.set()
        await everything.wait()
        for _, r in [(i, r) for i, r in arrived if i == conn.index]:
            conn.answer_soon(r)
        await conn.serve_rest()

    async with H2Server(scenario, pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=3))
        engine.policies[policy_key(Origin("https", "localhost", srv.port), LOOPBACK)] = OriginPolicy(
            engine.config.effective_depth, protocol="h2")
        try:
            warm = [FetchRequest(f"w{i}", "GET", srv.url(f"/r/w{i}/100"), resource_type="image") for i in range(6)]
            (await run_batch(engine, warm)).check_once(warm)
            assert len(srv.connections) == 3, "three connections up"
            sizes = [90_000] + [10_000] * 9
            flight = [FetchRequest(f"f{i}", "GET", srv.url(f"/r/f{i}/{n}"), resource_type="image",
                                   expected_size=n, expected_wire=n) for i, n in enumerate(sizes)]
            sink = await run_batch(engine, flight, timeout=20)
            sink.check_once(flight)
            big = next(i for i, r in arrived if r.path.startswith("/r/f0/"))
            with_big = [r.path for i, r in arrived if i == big]
            assert with_big == ["/r/f0/90000"], f"the large answer's connection also carried {with_big[1:]}"
        finally:
            everything.set()
            await engine.aclose()



def connection_of(sink: RecordingSink, rid: str) -> int:
    report = sink.records[rid].report
    assert report is not None and report.connection is not None
    return report.connection.id


async def css_while_held(engine: Engine, srv: H2Server, held: list[H2Req], release: asyncio.Event,
                         flight: list[FetchRequest], also: list[FetchRequest] | None = None
                         ) -> tuple[RecordingSink, RecordingSink]:
    """The flight sent and held at the server, a stylesheet (and `also`) asked meanwhile (as an `@import` found a
    round trip later) and answered while the flight is still held, then the flight released: (the flight's sink,
    the stylesheet's)."""
    flying = asyncio.create_task(run_batch(engine, flight))
    await until(lambda: len(held) == len(flight), "the flight at the server", seconds=5)
    css = [FetchRequest("css", "GET", srv.url("/r/css/700"), resource_type="stylesheet"), *(also or [])]
    late = await run_batch(engine, css, timeout=10)
    late.check_once(css)
    release.set()
    flown = await flying
    flown.check_once(flight)
    return flown, late


async def document_beside_adopted_reserve(engine: Engine, srv: H2Server, doc_bytes: int
                                         ) -> tuple[pool_module.OriginPool, Carrier, Carrier]:
    """A preconnect opens the origin's connections together (as Firefox's navigation starts), a document of
    doc_bytes is fetched and both connections come up, the last adopted as the render reserve
    (pool_plan.h2_reserve_from_opening): (the pool, the document's connection, the reserve)."""
    assert engine.preconnect(srv.url("/"), LOOPBACK, "full")
    (pool,) = engine._pools.values()
    doc = [FetchRequest("doc", "GET", srv.url(f"/r/doc/{doc_bytes}"), resource_type="document")]
    first = await run_batch(engine, doc)
    first.check_once(doc)
    await until(lambda: sum(isinstance(c, H2Connection) for c in pool.connections) == 2, "both up")
    own = next(c for c in pool.connections if c.id == connection_of(first, "doc"))
    reserve = pool._reserve()
    assert reserve is not None and reserve is not own, "a reserve beside the document's connection"
    return pool, own, reserve


@pytest.mark.parametrize("handshake", ["full", "tcp"])
async def test_a_document_to_an_origin_of_unknown_protocol_gets_a_render_reserve(pki: Path, handshake: str) -> None:
    """Nothing remembered of the origin; the first's ALPN says h2. `full`: a preconnect (as Firefox's navigation
    starts: the extension asks for one before it routes the document) opens its connections together, and the
    document's submit makes the last of them the render reserve (pool_plan.h2_reserve_from_opening; without the
    adoption the second connection took the image's share too). `tcp`: Chromium's preconnect for an https page opens
    one connection, its TLS held, and the submit opens the reserve beside it (pool_plan.h2_reserve_beside; without
    it the origin had one connection). Either way a stylesheet asked while the flight's images are still held (a
    late `@import`) goes to the reserve, not behind the images on the document's connection; the beside reserve
    leaves a font to the document's connection (pool_plan.beside_reserve_takes)."""
    release = asyncio.Event()
    held: list[H2Req] = []

    async with H2Server(holding_marked(release, held), pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        try:
            assert engine.preconnect(srv.url("/"), LOOPBACK, "tcp" if handshake == "tcp" else "full")
            (pool,) = engine._pools.values()
            if handshake == "tcp":
                assert len(pool.connections) == 1, "one connection, its TLS held"
            else:
                assert len(pool.connections) >= 2, "the preconnect opens them together (the protocol is not known)"
            doc = [FetchRequest("doc", "GET", srv.url("/r/doc/3000"), resource_type="document")]
            first = await run_batch(engine, doc)
            first.check_once(doc)
            await until(lambda: sum(isinstance(c, H2Connection) for c in pool.connections) == 2, "both up")
            assert pool.policy.protocol == "h2"
            doc_conn = connection_of(first, "doc")
            reserve = pool._reserve()
            assert reserve is not None and reserve.id != doc_conn, "a reserve beside the document's connection"
            flight = [FetchRequest("img", "GET", srv.url("/r/hold-img/40000"), resource_type="image"),
                      FetchRequest("img2", "GET", srv.url("/r/hold-img2/40000"), resource_type="image")]
            font = [FetchRequest("font", "GET", srv.url("/r/font/900"), resource_type="font")]
            flown, late = await css_while_held(engine, srv, held, release, flight,
                                               also=font if handshake == "tcp" else None)
            assert {connection_of(flown, "img"), connection_of(flown, "img2")} == {doc_conn}, "images on one"
            assert connection_of(late, "css") == reserve.id, "the stylesheet on the reserve, not behind the images"
            if handshake == "tcp":
                # (a page's fonts may be most of its bytes: on the document's connection, whose window has grown)
                assert connection_of(late, "font") == doc_conn, "a font on the document's connection"
        finally:
            release.set()
            await engine.aclose()


async def test_a_connection_that_outgrew_the_reserve_takes_a_late_script(pki: Path) -> None:
    """As above (a preconnect's connections, the last the reserve), but the document is large (320 kB, more than
    pool_plan.RESERVE_OUTGROWN_BYTES): a script asked while the flight's images are held goes to the document's
    connection, whose window has grown, not to the reserve, which brought nothing yet (rust-book-print's 312 kB
    highlight.js in Firefox over `sat` took 3.3 s on the reserve's slow start: pool_plan.h2_for_reserve)."""
    release = asyncio.Event()
    held: list[H2Req] = []

    async with H2Server(holding_marked(release, held), pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        try:
            _, own, _ = await document_beside_adopted_reserve(engine, srv, 320_000)
            doc_conn = own.id
            flight = [FetchRequest("img", "GET", srv.url("/r/hold-img/40000"), resource_type="image")]
            script = [FetchRequest("js", "GET", srv.url("/r/js/900"), resource_type="script")]
            _, late = await css_while_held(engine, srv, held, release, flight, also=script)
            assert connection_of(late, "js") == doc_conn, "the script on the document's grown connection"
            assert connection_of(late, "css") == doc_conn, "so is the stylesheet"
        finally:
            release.set()
            await engine.aclose()


async def test_the_reserve_beside_the_documents_connection_resumes_its_tls_session(
        pki: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reserve opened beside the document's one connection waits for that connection's TLS ticket (it comes
    with the document's first bytes) and resumes its session: no certificate chain again on the downlink (~2.5 kB
    over `sat`, where a full handshake put a small page's first visit over 1.02 × the browser's bytes). The relay
    lets the reserve's bytes reach the server only once the document was answered."""
    # Loopback's round trip would bound the wait for the ticket at the floor; a loaded machine answering the
    # document later than that would make the reserve handshake in full. The wait's bound is not what is tested.
    monkeypatch.setattr(pool_module, "RESUME_WAIT_FLOOR_S", 30.0)
    answered = asyncio.Event()
    relayed: list[int] = []
    async with H2Server(holding_marked(asyncio.Event(), []), pki) as srv:
        front, port = await relay_holding_second(srv, answered.wait, relayed)
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        try:
            assert engine.preconnect(f"https://localhost:{port}/", LOOPBACK, "tcp")
            (pool,) = engine._pools.values()
            doc = [FetchRequest("doc", "GET", f"https://localhost:{port}/r/doc/3000", resource_type="document")]
            first = await run_batch(engine, doc)
            first.check_once(doc)
            answered.set()
            await until(lambda: sum(isinstance(c, H2Connection) for c in pool.connections) == 2, "both up")
            reserve = pool._reserve()
            assert reserve is not None and reserve.id != connection_of(first, "doc")
            own = next(c for c in pool.connections if c.id == connection_of(first, "doc"))
            assert not own.connect_timing.tls_resumed
            assert reserve.connect_timing.tls_resumed, "the reserve resumed the document connection's session"
            assert reserve.connect_timing.small_records == own.connect_timing.small_records
        finally:
            answered.set()
            await engine.aclose()
            front.close()
            await front.wait_closed()


async def test_a_reserve_left_alone_takes_any_work(pki: Path) -> None:
    """The adopted reserve's partner closes (a server's GOAWAY, a failure) and the round trip proved short, so no
    second connection is opened: the reserve, the origin's only connection, takes every request, not only
    render-blocking ones (else an image waited for a connection that would never come)."""
    async with H2Server(holding_marked(asyncio.Event(), []), pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        try:
            pool, own, _ = await document_beside_adopted_reserve(engine, srv, 3000)
            own.abort()
            await until(lambda: own not in pool.connections, "the document's connection gone")
            images = [FetchRequest(f"i{i}", "GET", srv.url(f"/r/i{i}/5000"), resource_type="image") for i in range(3)]
            (await run_batch(engine, images, timeout=10)).check_once(images)
        finally:
            await engine.aclose()


async def test_a_render_blocking_request_goes_to_the_render_reserve_while_the_flight_holds_the_other(
        pki: Path) -> None:
    """A page's document to an origin remembered to speak h2 (round trip not known yet: long) opens a render
    reserve beside its own connection (pool_plan.h2_render_reserve). The flight that follows (two scripts, an image):
    the scripts shared by count (one each: a second slow start for them), the image on the document's connection;
    a stylesheet asked while the image is still coming (as an `@import` found a round trip later) goes to the
    reserve, not behind the image's bytes. Without the reserve all of it went on the document's connection (there
    was no other up)."""
    release = asyncio.Event()
    held: list[H2Req] = []

    async with H2Server(holding_marked(release, held), pki) as srv:
        engine = Engine(config(ca_file=str(pki / "ca.pem"), h2_connections=2))
        engine.policies[policy_key(Origin("https", "localhost", srv.port), LOOPBACK)] = OriginPolicy(
            engine.config.effective_depth, protocol="h2")
        try:
            doc = [FetchRequest("doc", "GET", srv.url("/r/doc/3000"), resource_type="document")]
            first = await run_batch(engine, doc)
            first.check_once(doc)
            await until(lambda: len(srv.connections) == 2, "the reserve's connection at the server")
            (pool,) = engine._pools.values()
            await until(lambda: sum(isinstance(c, H2Connection) for c in pool.connections) == 2, "both up")
            flight = [FetchRequest("s1", "GET", srv.url("/r/hold-s1/2000"), resource_type="script"),
                      FetchRequest("s2", "GET", srv.url("/r/hold-s2/2000"), resource_type="script"),
                      FetchRequest("img", "GET", srv.url("/r/hold-img/40000"), resource_type="image")]
            flown, late = await css_while_held(engine, srv, held, release, flight)
            doc_conn = connection_of(first, "doc")
            assert connection_of(flown, "img") == doc_conn, "the image on the document's connection"
            assert {connection_of(flown, "s1"), connection_of(flown, "s2")} == {
                doc_conn, connection_of(late, "css")}, "shared"
            assert connection_of(late, "css") != doc_conn, "the stylesheet on the reserve, not behind the image"
            assert len(srv.connections) == 2
        finally:
            release.set()
            await engine.aclose()


async def answer_posts_413_early(conn: H2ServerConn) -> None:
    """Answers each POST 413 as soon as its HEADERS arrive, its body unread (RFC 9113 §8.1 lets a server answer
    early), every GET normally."""

    async def watch() -> None:
        answered: set[int] = set()
        while not conn.closed.is_set():
            for sid, req in list(conn.streams.items()):
                if req.method == "POST" and sid not in answered:
                    answered.add(sid)
                    conn.h2.send_headers(sid, [(":status", "413"), ("content-length", "0")], end_stream=True)
                    conn.flush()
            await asyncio.sleep(0.02)

    watcher = asyncio.create_task(watch())
    try:
        await conn.serve_rest(timeout=15)
    finally:
        watcher.cancel()


async def test_requests_after_a_post_answered_early_are_all_answered(pki: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """A POST answered 413 before its upload was sent leaves no stream open behind it: with the server's limit at
    two streams, the GETs that follow on the same connection are all answered, and nothing raises."""
    caplog.set_level(logging.ERROR)
    engine = Engine(config(total_timeout=6, ca_file=str(pki / "ca.pem")))
    try:
        async with H2Server(answer_posts_413_early, pki, settings={SettingCodes.MAX_CONCURRENT_STREAMS: 2},
                            grant_window=False) as srv:
            await run_batch(engine, [FetchRequest("warm", "GET", srv.url("/warm/10"))], timeout=20)
            sink = await run_batch(engine, [FetchRequest("post", "POST", srv.url("/p/upload"), body=b"u" * 200_000)],
                                   timeout=20)
            r = sink.records["post"]
            assert r.head is not None and r.head.status == 413, r.error
            gets = [FetchRequest(f"g{i}", "GET", srv.url(f"/r/g{i}/1000")) for i in range(3)]
            sink = await run_batch(engine, gets, timeout=20)
            assert all(bytes(sink.records[g.id].body) == content(path_of(g)) for g in gets), {
                g.id: sink.records[g.id].error for g in gets}
            assert len(srv.connections) == 1, "the connection lived on"
    finally:
        await engine.aclose()
    assert not [r for r in caplog.records if r.exc_info], caplog.text


async def zero_streams_kept_alive(conn: H2ServerConn) -> None:
    """SETTINGS_MAX_CONCURRENT_STREAMS 0 for good (every stream opened before the client knew is refused), the
    connection kept alive with a PING every 0.2 s: a server that takes no requests and never says so by closing."""
    for _ in range(300):  # at most 60 s
        if conn.closed.is_set():
            return
        with contextlib.suppress(H2Error):
            conn.h2.ping(b"keepaliv")
        conn.flush()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(conn.closed.wait(), 0.2)


@pytest.mark.parametrize("connections", [1, 2])
async def test_a_server_that_allows_no_streams_for_good_fails_the_requests_cleanly(connections: int,
                                                                                  pki: Path) -> None:
    """RFC 9113 §5.1.2: a limit of 0 stops new streams, and a server should keep it only briefly. One that keeps it
    (and the connection alive with PINGs) gets the requests for no longer than a stall: once no stream could be
    opened for stall_timeout with work waiting, the connection goes and, with no other connection to take them, the
    queued requests fail with a clear reason (not the request's total timeout; the extension lets the browser fetch
    them), no new connection opened for each in turn, and a POST never reaches the server."""
    engine = Engine(config(ca_file=str(pki / "ca.pem"), stall_timeout=1, total_timeout=25,
                           h2_connections=connections))
    try:
        async with H2Server(zero_streams_kept_alive, pki, settings={SettingCodes.MAX_CONCURRENT_STREAMS: 0},
                            max_streams=0) as srv:
            reqs = [FetchRequest("g", "GET", srv.url("/r/g/100"), resource_type="script"),
                    FetchRequest("head", "HEAD", srv.url("/r/head/100")),
                    FetchRequest("post", "POST", srv.url("/p/post"), body=b"x" * 100)]
            sink = await run_batch(engine, reqs, timeout=40)
            sink.check_once(reqs)
            for r in reqs:
                error = sink.records[r.id].error
                assert error is not None and error.code != "timeout", f"{r.id}: {error!r}"
                assert "streams" in error.message, f"{r.id}: {error!r}"
            assert srv.received[("POST", "/p/post")] == 0
            assert len(srv.connections) <= connections, f"{len(srv.connections)} connections opened"
    finally:
        await engine.aclose()
