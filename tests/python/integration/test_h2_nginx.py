"""HTTP/2 against real nginx over TLS on loopback, with a throwaway CA: many files byte-exact over ONE h2
connection (nginx's access log says so), a mixed batch with a 404, one stream cancelled mid-body while the others
stay exact, and an HTTP/1.1-only TLS nginx still served through the same pool, pipelined."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lanefetch.engine import (
    DeliveredHead,
    Engine,
    EngineConfig,
    FetchError,
    FetchRequest,
    Page,
    TimingReport,
)
from tls_pki import make_test_pki

pytestmark = pytest.mark.skipif(shutil.which("nginx") is None or shutil.which("openssl") is None,
                                reason="needs nginx and openssl")

PAGE = Page(address_space="loopback")
FILES = {f"f{i:02d}.js": bytes([48 + i % 40]) * (500 + 7919 * i) for i in range(60)}  # 0.5 KB .. 470 KB
BIG = "big.bin"
BIG_BYTES = os.urandom(1024) * 8 * 1024  # 8 MiB: still arriving when it is cancelled


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch h2 test CA")


@dataclass
class Nginx:
    port: int
    work: Path

    def url(self, name: str) -> str:
        return f"https://localhost:{self.port}/{name}"

    def access_log(self, wait_for: int) -> list[list[str]]:
        """Lines as [connection serial, protocol, status, pipelined, request, TLS session resumed ("r" or ".")];
        waits (bounded) for wait_for."""
        deadline = time.monotonic() + 10
        while True:
            lines = [ln.split("\t") for ln in (self.work / "access.log").read_text().splitlines()]
            if len(lines) >= wait_for or time.monotonic() > deadline:
                assert len(lines) >= wait_for, f"nginx logged {len(lines)} of {wait_for} requests"
                return lines
            time.sleep(0.05)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_nginx(tmp: Path, pki: Path, http2: bool, keepalive_requests: int = 1000) -> Iterator[Nginx]:
    root = tmp / "www"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    (root / BIG).write_bytes(BIG_BYTES)
    work = tmp / "nginx"
    work.mkdir()
    port = _free_port()
    user = "user root;" if os.geteuid() == 0 else ""  # pytest's tmp dirs are private: the worker must be us
    (work / "nginx.conf").write_text(f"""
daemon off;
master_process on;
worker_processes 1;
{user}
pid {work}/nginx.pid;
error_log {work}/error.log notice;
events {{ worker_connections 256; }}
http {{
    default_type application/octet-stream;
    log_format t "$connection\\t$server_protocol\\t$status\\t$pipe\\t$request\\t$ssl_session_reused";
    access_log {work}/access.log t;
    keepalive_requests {keepalive_requests};  # over h2: GOAWAY after this many streams on a connection
    client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work};
    uwsgi_temp_path {work}; scgi_temp_path {work};
    server {{
        listen 127.0.0.1:{port} ssl{" http2" if http2 else ""};
        ssl_certificate {pki}/srv.pem;
        ssl_certificate_key {pki}/srv.key;
        root {root};
    }}
}}
""")
    proc = subprocess.Popen(["nginx", "-p", str(work), "-e", str(work / "error.log"), "-c", str(work / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, f"nginx exited: {proc.stderr.read() if proc.stderr else b''!r}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nginx did not listen within 10 s"
                time.sleep(0.05)
        yield Nginx(port, work)
    finally:
        proc.send_signal(signal.SIGTERM)  # the master stops its worker
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture
def nginx_h2(tmp_path: Path, pki: Path) -> Iterator[Nginx]:
    yield from _start_nginx(tmp_path, pki, http2=True)


@pytest.fixture
def nginx_h2_goaway(tmp_path: Path, pki: Path) -> Iterator[Nginx]:
    yield from _start_nginx(tmp_path, pki, http2=True, keepalive_requests=7)


@pytest.fixture
def nginx_h1(tmp_path: Path, pki: Path) -> Iterator[Nginx]:
    yield from _start_nginx(tmp_path, pki, http2=False)


@dataclass
class Got:
    head: DeliveredHead | None = None
    body: bytes = b""
    ended: bool = False
    error: FetchError | None = None
    report: TimingReport | None = None


class Collect:
    def __init__(self) -> None:
        self.got: dict[str, Got] = {}

    async def head(self, r: FetchRequest, h: DeliveredHead) -> None:
        self.got.setdefault(r.id, Got()).head = h

    async def body(self, r: FetchRequest, d: bytes) -> None:
        self.got[r.id].body += d

    async def end(self, r: FetchRequest, n: int, t: list[tuple[str, str]]) -> None:
        assert not self.got[r.id].ended, "ended twice"
        self.got[r.id].ended = True

    async def error(self, r: FetchRequest, e: FetchError) -> None:
        self.got.setdefault(r.id, Got()).error = e

    async def timing(self, r: FetchRequest, t: TimingReport) -> None:
        self.got.setdefault(r.id, Got()).report = t


async def fetch(engine: Engine, reqs: list[FetchRequest], sink: Collect) -> int:
    result = await asyncio.wait_for(engine.fetch(reqs, sink, PAGE), 60)
    return result.connections


def config(pki: Path) -> EngineConfig:
    """One h2 connection (`--h2-connections 1`); test_h2_connections_two_share_a_batch has the default's two."""
    return EngineConfig(ca_file=str(pki / "ca.pem"), connect_timeout=5, stall_timeout=20, h2_connections=1)


async def test_many_files_over_one_h2_connection(nginx_h2: Nginx, pki: Path) -> None:
    engine = Engine(config(pki))
    sink = Collect()
    try:
        reqs = [FetchRequest(n, "GET", nginx_h2.url(n), resource_type="script") for n in FILES]
        assert await fetch(engine, reqs, sink) == 1
    finally:
        await engine.aclose()
    for name, data in FILES.items():
        g = sink.got[name]
        assert g.error is None and g.ended and g.body == data, name
        assert g.head is not None and g.head.status == 200 and g.head.http_version == "2"
        conn = g.report.connection if g.report else None
        assert conn is not None and conn.protocol == "h2" and conn.stream_id is not None
    assert len({sink.got[n].report.connection.id for n in FILES}) == 1  # type: ignore[union-attr]
    log = nginx_h2.access_log(len(FILES))
    assert len(log) == len(FILES)
    assert {line[0] for line in log} == {log[0][0]}, "one connection in nginx's log"
    assert {line[1] for line in log} == {"HTTP/2.0"}
    assert engine.policies[next(iter(engine.policies))].protocol == "h2"


async def test_h2_connections_two_share_a_batch(nginx_h2: Nginx, pki: Path) -> None:
    """The default (`h2_connections=2`) while the origin's round trip is not known: the batch is shared between
    two h2 connections opened together,
    each answer on one of them, every request answered once."""
    engine = Engine(dataclasses.replace(config(pki), h2_connections=EngineConfig().h2_connections))
    sink = Collect()
    try:
        reqs = [FetchRequest(n, "GET", nginx_h2.url(n), resource_type="script") for n in FILES]
        assert await fetch(engine, reqs, sink) == 2
        (pool,) = engine._pools.values()
        assert pool.protocol_waits == 1, "the second held its TLS handshake for the first one's ALPN"
        again = [FetchRequest(f"again-{n}", "GET", nginx_h2.url(n)) for n in FILES]
        await fetch(engine, again, sink)
        assert pool.protocol_waits == 1, "known h2 now: nothing waits"
    finally:
        await engine.aclose()
    for name, data in FILES.items():
        g = sink.got[name]
        assert g.error is None and g.ended and g.body == data, name
        assert g.report is not None and g.report.connection is not None and g.report.connection.protocol == "h2"
    log = nginx_h2.access_log(2 * len(FILES))
    assert len(log) == 2 * len(FILES) and len({line[0] for line in log}) == 2, "two connections in nginx's log"
    # Connected together (pool_plan.connection_limit): the second TCP connect started before the first TLS
    # handshake ended, so only its own TLS round trip was left once the first's ALPN said h2.
    firsts = [g.report.timing for g in sink.got.values()
              if g.report is not None and g.report.timing.connect_start is not None]
    assert len(firsts) == 2, "each connection's first request carries its connect timing"
    starts = sorted(t.connect_start for t in firsts if t.connect_start is not None)
    tls_ends = sorted(t.tls_end for t in firsts if t.tls_end is not None)
    assert len(tls_ends) == 2 and starts[1] < tls_ends[0]


async def test_mixed_batch_with_404(nginx_h2: Nginx, pki: Path) -> None:
    engine = Engine(config(pki))
    sink = Collect()
    names = [*list(FILES)[:10], "missing.css", *list(FILES)[10:20]]
    try:
        await fetch(engine, [FetchRequest(n, "GET", nginx_h2.url(n)) for n in names], sink)
        head = FetchRequest("head", "HEAD", nginx_h2.url("f05.js"))
        await fetch(engine, [head], sink)
    finally:
        await engine.aclose()
    for name in names:
        g = sink.got[name]
        assert g.error is None and g.ended and g.head is not None
        if name == "missing.css":
            assert g.head.status == 404
        else:
            assert g.head.status == 200 and g.body == FILES[name]
    g = sink.got["head"]
    assert g.head is not None and g.head.status == 200 and g.body == b"" and g.ended
    log = nginx_h2.access_log(len(names) + 1)
    assert {line[0] for line in log} == {log[0][0]}, "the second batch reuses the h2 connection"


async def test_cancel_one_stream_mid_body(nginx_h2: Nginx, pki: Path) -> None:
    engine = Engine(config(pki))
    cancelled: list[asyncio.Task[None]] = []

    class CancelBig(Collect):
        async def body(self, r: FetchRequest, d: bytes) -> None:
            await super().body(r, d)
            if r.id == BIG and not cancelled:
                cancelled.append(asyncio.create_task(engine.cancel_and_close(BIG)))

    sink = CancelBig()
    names = list(FILES)[:30]
    reqs = [FetchRequest(BIG, "GET", nginx_h2.url(BIG), resource_type="image"),
            *(FetchRequest(n, "GET", nginx_h2.url(n)) for n in names)]
    try:
        await fetch(engine, reqs, sink)
        await asyncio.wait_for(asyncio.gather(*cancelled), 10)
    finally:
        await engine.aclose()
    big = sink.got[BIG]
    assert big.error is not None and big.error.code == "cancelled" and not big.ended
    assert 0 < len(big.body) < len(BIG_BYTES) and BIG_BYTES.startswith(big.body)
    for name in names:
        g = sink.got[name]
        assert g.error is None and g.ended and g.body == FILES[name], name
        assert g.report is not None and g.report.retries == 0  # resetting one stream cost the others nothing
    log = nginx_h2.access_log(len(names) + 1)
    assert {line[0] for line in log} == {log[0][0]}


async def test_http11_only_tls_server_is_pipelined_through_the_same_pool(nginx_h1: Nginx, pki: Path) -> None:
    cfg = config(pki)
    cfg.connections_per_origin = 2
    engine = Engine(cfg)
    sink = Collect()
    names = list(FILES)[:40]
    try:
        await fetch(engine, [FetchRequest(n, "GET", nginx_h1.url(n)) for n in names], sink)
    finally:
        await engine.aclose()
    for name in names:
        g = sink.got[name]
        assert g.error is None and g.ended and g.body == FILES[name], name
        assert g.head is not None and g.head.http_version == "1.1"
        assert g.report is not None and g.report.connection is not None
        assert g.report.connection.protocol == "http/1.1"
    log = nginx_h1.access_log(len(names))
    assert {line[1] for line in log} == {"HTTP/1.1"}
    assert any(line[3] == "p" for line in log), "requests were pipelined"
    assert engine.policies[next(iter(engine.policies))].protocol == "http/1.1"


async def test_goaway_moves_the_rest_to_a_new_h2_connection(nginx_h2_goaway: Nginx, pki: Path) -> None:
    # nginx ends an h2 connection with GOAWAY after 7 streams: h2 reads nothing after a GOAWAY, so what was not
    # complete by then is fetched again on the next connection (resumed or replaced, never spliced or doubled).
    engine = Engine(config(pki))
    sink = Collect()
    names = list(FILES)[:30]
    try:
        connections = await fetch(engine, [FetchRequest(n, "GET", nginx_h2_goaway.url(n)) for n in names], sink)
    finally:
        await engine.aclose()
    for name in names:
        g = sink.got[name]
        assert g.error is None and g.ended and g.body == FILES[name], name
    assert connections >= 2
    log = nginx_h2_goaway.access_log(len(names))
    assert {line[1] for line in log} == {"HTTP/2.0"}
    assert len({line[0] for line in log}) >= 2
    # Each next connection resumed the TLS session its predecessor received (session_tickets.py): nginx sent no
    # certificate again. Not the second: the first asked for small records (a pool's first does, tls_records.py)
    # and a session is resumed only by a connection that asks as its own did.
    resumed = list({line[0]: line[5] for line in log}.values())
    assert len(resumed) >= 3 and resumed[:2] == [".", "."] and set(resumed[2:]) == {"r"}, resumed
