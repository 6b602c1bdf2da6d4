"""The engine against real nginx and Apache from Debian, in a network namespace over a veth link.

Pipelining is proven from the server's side (nginx logs ``$pipe`` = "p" for a request it read while an
earlier one on that connection was still being handled; both logs show many requests per connection) and
from the client's timings (request k+1 written before response k's first byte on the same connection)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from bench.netlab import Host, Lab, Link
from bench.servers import AccessRecord, ServerHandle, start_apache, start_nginx
from lanefetch.engine import Engine, EngineConfig, FetchRequest, Page
from lanefetch.engine.engine import policy_key
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState
from lanefetch.engine.request import Origin
from misbehaving_servers import RecordingSink

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces"),
]

PRIVATE = Page(address_space="private")  # the servers live on 10.231.x.y inside the lab
N_FILES = 100
SIZES = [2048, 204_800, 2048, 2048, 31_337, 2048, 65_536, 2048, 1, 204_800]


@dataclass
class Site:
    lab: Lab
    server: Host
    link: Link
    docroot: Path
    files: dict[str, bytes]  # URL path → body


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    docroot = tmp_path_factory.mktemp("docroot")
    files: dict[str, bytes] = {}
    for i in range(N_FILES):
        size = SIZES[i % len(SIZES)]
        data = hashlib.shake_256(f"file {i}".encode()).digest(size)
        name = f"f{i:03d}.bin"
        (docroot / name).write_bytes(data)
        files[f"/{name}"] = data
    with Lab() as lab:
        server = lab.host("server")
        link = lab.link(lab.root, server)
        yield Site(lab, server, link, docroot, files)


def _need(binary: str) -> None:
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed")


def requests_for(srv: ServerHandle, paths: list[str], prefix: str = "") -> list[FetchRequest]:
    return [FetchRequest(f"{prefix}{i}", "GET", srv.url(p), resource_type="image") for i, p in enumerate(paths)]


def body_of(site: Site, req: FetchRequest) -> bytes:
    return site.files["/" + req.url.split("/", 3)[3]]


def policy_of(engine: Engine, srv: ServerHandle) -> OriginPolicy:
    return engine.policies[policy_key(Origin("http", srv.ip, srv.port), PRIVATE)]


async def fetch_all(reqs: list[FetchRequest], cfg: EngineConfig) -> tuple[RecordingSink, Engine]:
    engine = Engine(cfg)
    sink = RecordingSink()
    try:
        await asyncio.wait_for(engine.fetch(reqs, sink, PRIVATE), 60)
    finally:
        await engine.aclose()
    return sink, engine


def pipelined_on_the_wire(sink: RecordingSink, reqs: list[FetchRequest]) -> int:
    """How many requests were written before the previous request on the same connection got its first byte."""
    by_pos: dict[tuple[int, int], tuple[float, float]] = {}
    for r in reqs:
        rep = sink.records[r.id].report
        assert rep is not None and rep.connection is not None
        t = rep.timing
        assert t.sent is not None and t.first_byte is not None and t.last_byte is not None
        assert t.queued <= t.sent <= t.first_byte <= t.last_byte
        by_pos[(rep.connection.id, rep.connection.pipeline_position)] = (t.sent, t.first_byte)
    early = 0
    for (conn, pos), (sent, _) in by_pos.items():
        prev = by_pos.get((conn, pos - 1))
        if prev is not None and sent < prev[1]:
            early += 1
    return early


def check_all_exact(site: Site, sink: RecordingSink, reqs: list[FetchRequest]) -> None:
    sink.check_exact(reqs, lambda r: body_of(site, r))
    assert all(sink.records[r.id].head.status == 200 for r in reqs)  # type: ignore[union-attr]


# ----------------------------------------------------------------------------------------------- nginx


async def test_nginx_100_files_pipelined(site: Site) -> None:
    _need("nginx")
    srv = start_nginx(site.server, site.docroot, site.link.b_ip, 8080)
    try:
        reqs = requests_for(srv, sorted(site.files))
        sink, engine = await fetch_all(reqs, EngineConfig(connections_per_origin=4, pipeline_depth=16))
        check_all_exact(site, sink, reqs)
        assert policy_of(engine, srv).state is PipelineState.GREEN, policy_of(engine, srv).demotions
        log = srv.access_log(wait_for=N_FILES)
        assert len(log) == N_FILES, f"{len(log)} requests in the log: something was fetched twice or not at all"
        assert Counter(rec.path for rec in log) == Counter(list(site.files))
        piped = sum(1 for rec in log if rec.pipelined)
        assert piped >= N_FILES // 2, f"only {piped} of {N_FILES} requests were pipelined according to nginx"
        per_conn = Counter(rec.connection for rec in log)
        assert len(per_conn) <= 4 and max(per_conn.values()) >= 10, per_conn
        assert pipelined_on_the_wire(sink, reqs) >= N_FILES // 2
    finally:
        srv.stop()


async def run_against_keepalive_limit(
    site: Site, srv: ServerHandle
) -> tuple[RecordingSink, list[FetchRequest], Counter[object], list[AccessRecord]]:
    """60 requests on 2 connections to a server that closes each connection after a few: all arrive exactly
    once, byte-exact, and the origin is not demoted for the limit. The answers a connection held when it
    closed with requests unanswered are fetched once more (such a close is also how a server out of step
    ends, pipeline.py); once the limit is learned, no connection runs past it again."""
    paths = sorted(site.files)[:60]
    reqs = requests_for(srv, paths)
    sink, engine = await fetch_all(reqs, EngineConfig(connections_per_origin=2, pipeline_depth=16))
    check_all_exact(site, sink, reqs)
    pol = policy_of(engine, srv)
    assert pol.state is not PipelineState.RED, pol.demotions
    log = srv.access_log(wait_for=60)
    ok = [rec for rec in log if rec.status == 200]
    served = Counter(rec.path for rec in ok)
    assert set(served) == set(paths), "a request was lost"
    assert all(n <= 2 for n in served.values()), served
    assert sum(served.values()) - len(paths) <= 2 * 16, "held answers fetched again beyond the first connections"
    return sink, reqs, Counter(rec.connection for rec in log), log


async def test_nginx_keepalive_requests_limit(site: Site) -> None:
    _need("nginx")
    srv = start_nginx(site.server, site.docroot, site.link.b_ip, 8081, keepalive_requests=10)
    try:
        _, _, per_conn, log = await run_against_keepalive_limit(site, srv)
        assert max(per_conn.values()) <= 10 and len(per_conn) >= 6, per_conn
        assert any(rec.pipelined for rec in log), "nothing was pipelined"
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------- Apache


async def test_apache_100_files_pipelined(site: Site) -> None:
    _need("apache2")
    srv = start_apache(site.server, site.docroot, site.link.b_ip, 8082)
    try:
        reqs = requests_for(srv, sorted(site.files))
        sink, engine = await fetch_all(reqs, EngineConfig(connections_per_origin=4, pipeline_depth=16))
        check_all_exact(site, sink, reqs)
        assert policy_of(engine, srv).state is PipelineState.GREEN, policy_of(engine, srv).demotions
        log = srv.access_log(wait_for=N_FILES)
        assert len(log) == N_FILES
        assert Counter(rec.path for rec in log) == Counter(list(site.files))
        per_conn = Counter(rec.connection for rec in log)
        assert len(per_conn) <= 4 and max(per_conn.values()) >= 10, per_conn
        assert max(rec.request_no for rec in log) >= 10
        # the client wrote request k+1 before response k began, on the same connection
        assert pipelined_on_the_wire(sink, reqs) >= N_FILES // 2
    finally:
        srv.stop()


async def test_apache_max_keepalive_requests_limit(site: Site) -> None:
    _need("apache2")
    srv = start_apache(site.server, site.docroot, site.link.b_ip, 8083, max_keepalive_requests=10)
    try:
        sink, reqs, per_conn, _ = await run_against_keepalive_limit(site, srv)
        # Apache counts keep-alive requests after the first: MaxKeepAliveRequests 10 = 11 per connection
        assert max(per_conn.values()) <= 11 and len(per_conn) >= 6, per_conn
        assert pipelined_on_the_wire(sink, reqs) >= 10
    finally:
        srv.stop()
