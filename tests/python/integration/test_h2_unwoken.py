"""Requests handed to an h2 connection before it is awake (the server's preface and SETTINGS not yet in, the
requests sent with our preface: h2_connection.py) when the server closes or refuses the connection right after
its preface: GET/HEAD go again on another connection, a POST (which waits for the server's SETTINGS) is sent on
a connection that lives, and nothing is lost, answered twice or left hanging; where every connection is closed
that way, every request ends with a clear error and the pool stops connecting. Own h2 server on loopback
(h2_misbehaving_server.py)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from h2_misbehaving_server import H2Server, H2ServerConn
from lanefetch.engine import Engine, EngineConfig, FetchRequest
from misbehaving_servers import LOOPBACK, RecordingSink, content
from tls_pki import make_test_pki

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch h2 unwoken CA")


def _config(pki: Path) -> EngineConfig:
    return EngineConfig(connect_timeout=5, stall_timeout=5, idle_timeout=10, total_timeout=60, max_retries=3,
                        h2_connections=1, ca_file=str(pki / "ca.pem"))


def _requests(srv: H2Server) -> list[FetchRequest]:
    return [FetchRequest("g1", "GET", srv.url("/r/g1/3000"), resource_type="script"),
            FetchRequest("g2", "GET", srv.url("/r/g2/70000"), resource_type="image"),
            FetchRequest("head", "HEAD", srv.url("/r/head/100")),
            FetchRequest("post", "POST", srv.url("/p/post"), body=b"x" * 100)]


def _expected(req: FetchRequest) -> bytes:
    if req.method == "HEAD":
        return b""
    return req.body or b"" if req.method == "POST" else content("/" + req.url.split("/", 3)[3])


async def _close_after_preface(conn: H2ServerConn) -> None:
    # its preface and SETTINGS went out in start(): then the connection ends, nothing read
    await conn.drain()
    conn.writer.close()


async def _goaway_after_preface(conn: H2ServerConn) -> None:
    conn.goaway(0)  # graceful, last stream 0: nothing processed
    await conn.drain()
    conn.writer.close()


async def _reset_after_preface(conn: H2ServerConn) -> None:
    await conn.drain()
    conn.tcp_reset()


def _first_only(misbehave: object) -> object:
    async def scenario(conn: H2ServerConn) -> None:
        if conn.index == 0:
            await misbehave(conn)  # type: ignore[operator]
        else:
            await conn.serve_rest()
    return scenario


@pytest.mark.parametrize("misbehave", [_close_after_preface, _goaway_after_preface, _reset_after_preface])
async def test_requests_on_a_connection_gone_right_after_the_preface_go_on_another(misbehave: object,
                                                                                   pki: Path) -> None:
    engine = Engine(_config(pki))
    try:
        async with H2Server(_first_only(misbehave), pki) as srv:  # type: ignore[arg-type]
            reqs = _requests(srv)
            sink = RecordingSink()
            await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), 30)
            post = sink.records["post"].error
            # a POST is answered, or passed back with a clear error where it may have reached the server (a close
            # without GOAWAY says nothing of what was processed): never sent twice
            sink.check_exact([r for r in reqs if r.method != "POST" or post is None], _expected)
            assert post is None or post.code == "connection_lost", repr(post)
            assert srv.received[("POST", "/p/post")] == (post is None)
            assert 2 <= len(srv.connections) <= 3, f"{len(srv.connections)} connections"
    finally:
        await engine.aclose()


@pytest.mark.parametrize("misbehave", [_close_after_preface, _goaway_after_preface, _reset_after_preface])
async def test_every_connection_gone_after_the_preface_fails_the_requests_and_stops_connecting(
        misbehave: object, pki: Path) -> None:
    engine = Engine(_config(pki))
    try:
        async with H2Server(misbehave, pki) as srv:  # type: ignore[arg-type]
            reqs = _requests(srv)
            sink = RecordingSink()
            await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), 40)
            sink.check_once(reqs)
            for r in reqs:
                error = sink.records[r.id].error
                assert error is not None and error.code != "timeout", f"{r.id}: {error!r}"
            assert srv.received[("POST", "/p/post")] == 0
            opened = len(srv.connections)
            await asyncio.sleep(0.3)  # (a chance to go wrong: no connection may open for work that is over)
            assert len(srv.connections) == opened <= 12, f"{len(srv.connections)} connections"
    finally:
        await engine.aclose()
