"""TLS toward origins: strict verification, SNI, ALPN — against a real TLS server with a test CA. (HTTP/2 over
TLS against real nginx: test_h2_nginx.py.)"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.engine import (
    DeliveredHead,
    Engine,
    EngineConfig,
    FetchError,
    FetchRequest,
    Page,
    TimingReport,
)
from local_app import serve_app
from tls_pki import make_test_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch test CA")


@pytest.fixture(params=[["http/1.1"], ["h2", "http/1.1"]], ids=["alpn-http1", "alpn-h2-too"])
async def https_origin(pki: Path, request: pytest.FixtureRequest) -> AsyncIterator[tuple[int, list[str]]]:
    # aiohttp speaks HTTP/1.1 only: when it (wrongly) offers h2 too, the engine is run with http2=False and must
    # then offer http/1.1 alone, as it did before HTTP/2.
    seen_sni: list[str] = []
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.set_alpn_protocols(request.param)

    def on_sni(sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        seen_sni.append(name or "")

    ctx.sni_callback = on_sni  # type: ignore[assignment]

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=f"secure {request.path}")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as port:
        yield port, seen_sni


class Collect:
    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.errors: dict[str, FetchError] = {}

    async def head(self, r: FetchRequest, h: DeliveredHead) -> None:
        self.bodies[r.id] = b""

    async def body(self, r: FetchRequest, d: bytes) -> None:
        self.bodies[r.id] += d

    async def end(self, r: FetchRequest, n: int, t: list[tuple[str, str]]) -> None:
        pass

    async def error(self, r: FetchRequest, e: FetchError) -> None:
        self.errors[r.id] = e

    async def timing(self, r: FetchRequest, t: TimingReport) -> None:
        if t.connection is not None and not t.connection.reused:
            assert t.timing.tls_end is not None and t.timing.connect_end is not None
            assert t.timing.tls_end >= t.timing.connect_end


async def fetch(urls: list[str], ca: Path | None, http2: bool = True) -> Collect:
    sink = Collect()
    engine = Engine(EngineConfig(ca_file=str(ca) if ca else None, connect_timeout=5, http2=http2))
    try:
        await asyncio.wait_for(engine.fetch(
            [FetchRequest(str(i), "GET", u) for i, u in enumerate(urls)], sink, Page(address_space="loopback")
        ), 30)
    finally:
        await engine.aclose()
    return sink


async def test_verified_with_sni_and_http11(https_origin: tuple[int, list[str]], pki: Path) -> None:
    port, sni = https_origin
    sink = await fetch([f"https://localhost:{port}/a", f"https://localhost:{port}/b"], pki / "ca.pem", http2=False)
    assert sink.errors == {}
    assert sink.bodies == {"0": b"secure /a", "1": b"secure /b"}
    assert "localhost" in sni


async def test_unknown_ca_is_refused(https_origin: tuple[int, list[str]]) -> None:
    port, _ = https_origin
    sink = await fetch([f"https://localhost:{port}/a"], None)  # system trust store: the test CA is not in it
    assert sink.errors["0"].code == "tls_failed" and "0" not in sink.bodies


async def test_wrong_name_is_refused(https_origin: tuple[int, list[str]], pki: Path) -> None:
    port, _ = https_origin
    # the certificate names only localhost: the same server reached by its address must be refused
    sink = await fetch([f"https://127.0.0.1:{port}/a"], pki / "ca.pem")
    assert sink.errors["0"].code == "tls_failed" and "0" not in sink.bodies
