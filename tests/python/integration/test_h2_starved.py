"""An h2 stream the server never answers while it keeps the connection alive (PINGs every 0.2 s, the other streams
answered): after a stall (stall_timeout) with nothing for it, the stream is reset (RST_STREAM CANCEL) and the
request asked again on a new connection, where it is answered; the other requests are answered once each.
Own h2 server on loopback (h2_misbehaving_server.py). The stall's timing itself is tested with an injected clock
(unit/test_h2_session.py, unit/test_body_stall.py); here only what happens, each wait bounded."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

import pytest
from h2.exceptions import H2Error
from h2_misbehaving_server import H2Req, H2Server, H2ServerConn
from lanefetch.engine import Engine, EngineConfig, FetchRequest
from misbehaving_servers import LOOPBACK, RecordingSink, content
from tls_pki import make_test_pki

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch h2 starved CA")


async def _starve_one_keep_alive(conn: H2ServerConn) -> None:
    """The first connection answers everything but /r/starve..., and PINGs the client every 0.2 s meanwhile;
    the others answer everything."""
    if conn.index != 0:
        await conn.serve_rest()
        return
    starved: list[H2Req] = []
    conn.server.state["starved"] = starved
    for _ in range(150):  # at most 30 s
        if conn.closed.is_set():
            return
        with contextlib.suppress(TimeoutError):
            req = await asyncio.wait_for(conn.ready.get(), 0.2)
            if req.path.startswith("/r/starve"):
                starved.append(req)
            else:
                conn.answer_soon(req)
        with contextlib.suppress(H2Error):
            conn.h2.ping(b"keepaliv")
        conn.flush()


async def test_a_stream_starved_on_a_live_connection_is_reset_and_asked_again_elsewhere(pki: Path) -> None:
    engine = Engine(EngineConfig(connect_timeout=5, stall_timeout=1, idle_timeout=10, total_timeout=30,
                                 max_retries=3, h2_connections=1, ca_file=str(pki / "ca.pem")))
    try:
        async with H2Server(_starve_one_keep_alive, pki) as srv:
            reqs = [FetchRequest("css", "GET", srv.url("/r/css/3000"), resource_type="stylesheet"),
                    FetchRequest("starve", "GET", srv.url("/r/starve/5000"), resource_type="image"),
                    FetchRequest("img", "GET", srv.url("/r/img/40000"), resource_type="image")]
            sink = RecordingSink()
            await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), 20)
            sink.check_exact(reqs, lambda r: content("/" + r.url.split("/", 3)[3]))
            starved = srv.state["starved"]
            assert isinstance(starved, list) and len(starved) == 1
            assert starved[0].reset_by_client, "the starved stream was not reset"
            assert len(srv.connections) == 2
            report = sink.records["starve"].report
            assert report is not None and report.retries == 1
            assert report.connection is not None and report.connection.id != sink.records["css"].report.connection.id  # type: ignore[union-attr]
            assert srv.received[("GET", "/r/css/3000")] == 1 and srv.received[("GET", "/r/img/40000")] == 1
    finally:
        await engine.aclose()
