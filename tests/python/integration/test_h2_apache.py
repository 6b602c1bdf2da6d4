"""HTTP/2 against real Apache (mod_http2 + mod_ssl, tests/bench/servers.py start_apache with tls and http2) on
loopback with a throwaway CA: a batch byte-exact over ONE h2 connection (Apache's access log: one client port,
every request line ending in HTTP/2.0), with a 404 and a HEAD; and the same Apache without h2 still served over
TLS, HTTP/1.1, through the same pool."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.netlab import Lab
from bench.servers import ServerHandle, start_apache
from lanefetch.engine import Engine, EngineConfig, FetchRequest, Page
from misbehaving_servers import RecordingSink, sha
from tls_pki import make_test_pki

pytestmark = [
    pytest.mark.skipif(shutil.which("apache2") is None or shutil.which("openssl") is None,
                       reason="needs apache2 and openssl"),
    pytest.mark.skipif(not Path("/usr/lib/apache2/modules/mod_http2.so").exists(), reason="needs mod_http2"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the lab that runs (and stops) Apache"),
]

LOOPBACK = Page(address_space="loopback")
FILES = {f"/f{i:02d}.js": hashlib.shake_256(f"apache {i}".encode()).digest(300 + 6151 * i) for i in range(50)}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch apache h2 test CA")


@pytest.fixture(scope="module")
def docroot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("www")
    for path, data in FILES.items():
        (root / path.lstrip("/")).write_bytes(data)
    return root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _apache(pki: Path, docroot: Path, http2: bool) -> Iterator[ServerHandle]:
    with Lab() as lab:  # the root namespace only: Apache listens on loopback; the lab stops it by pid
        yield start_apache(lab.root, docroot, "127.0.0.1", _free_port(), tls=(pki / "srv.pem", pki / "srv.key"),
                           http2=http2, max_keepalive_requests=1000)


@pytest.fixture
def apache_h2(pki: Path, docroot: Path) -> Iterator[ServerHandle]:
    yield from _apache(pki, docroot, http2=True)


@pytest.fixture
def apache_h1(pki: Path, docroot: Path) -> Iterator[ServerHandle]:
    yield from _apache(pki, docroot, http2=False)


def url(srv: ServerHandle, path: str) -> str:
    return f"https://localhost:{srv.port}{path}"  # the certificate names localhost


async def fetch(pki: Path, reqs: list[FetchRequest], **kw: object) -> tuple[RecordingSink, int]:
    # One h2 connection (`--h2-connections 1`) unless a test says otherwise: the default's second one is
    # test_h2_nginx's and test_h2_misbehaving's subject.
    cfg = EngineConfig(ca_file=str(pki / "ca.pem"), connect_timeout=5, stall_timeout=20, h2_connections=1)
    for k, v in kw.items():
        setattr(cfg, k, v)
    engine = Engine(cfg)
    sink = RecordingSink()
    try:
        result = await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), 60)
    finally:
        await engine.aclose()
    return sink, result.connections


async def test_batch_over_one_h2_connection(apache_h2: ServerHandle, pki: Path) -> None:
    reqs = [FetchRequest(p, "GET", url(apache_h2, p), resource_type="script") for p in FILES]
    reqs += [FetchRequest("missing", "GET", url(apache_h2, "/missing.css")),
             FetchRequest("head", "HEAD", url(apache_h2, "/f07.js"))]
    sink, connections = await fetch(pki, reqs)
    sink.check_once(reqs)
    assert connections == 1
    for path, data in FILES.items():
        r = sink.records[path]
        assert r.error is None and sha(bytes(r.body)) == sha(data) and len(r.body) == len(data), path
        assert r.head is not None and r.head.status == 200 and r.head.http_version == "2"
        assert r.report is not None and r.report.connection is not None and r.report.connection.protocol == "h2"
    assert sink.records["missing"].head is not None and sink.records["missing"].head.status == 404
    head = sink.records["head"]
    assert head.error is None and head.head is not None and head.head.status == 200 and not head.body
    log = apache_h2.access_log(wait_for=len(reqs), timeout=10)
    assert len(log) == len(reqs)
    assert {rec.request.rsplit(" ", 1)[1] for rec in log} == {"HTTP/2.0"}, "Apache's %r says HTTP/2.0"
    assert len({rec.connection for rec in log}) == 1, "one client connection in Apache's log"


async def test_apache_without_h2_is_http11_through_the_same_pool(apache_h1: ServerHandle, pki: Path) -> None:
    reqs = [FetchRequest(p, "GET", url(apache_h1, p)) for p in list(FILES)[:30]]
    sink, _ = await fetch(pki, reqs, connections_per_origin=2)
    sink.check_exact(reqs, lambda r: FILES["/" + r.url.split("/", 3)[3]])
    for r in reqs:
        rec = sink.records[r.id]
        assert rec.head is not None and rec.head.http_version == "1.1"
    log = apache_h1.access_log(wait_for=len(reqs), timeout=10)
    assert {rec.request.rsplit(" ", 1)[1] for rec in log} == {"HTTP/1.1"}
