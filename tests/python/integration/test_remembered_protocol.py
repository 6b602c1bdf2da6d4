"""An HTTPS origin that speaks only HTTP/1.1, once learned, opens the connections its waiting requests need in
parallel from the first batch of the next helper session: its protocol is kept with the origin's record
(cache/origin_memory.py), so the pool does not hold back to one connection until a handshake says (pool_plan.
connection_limit). Real TLS (a throwaway CA) behind a loopback relay that holds every answer from the server until
the connections it expects have all arrived: they can only all arrive if none waited for another's handshake."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.engine import DeliveredHead, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app
from tls_pki import make_test_pki

PAGE = Page(address_space="loopback", top_site="https://site.test")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch test CA")


class HoldingRelay:
    """Loopback TCP relay: the client's bytes go through at once; the server's are held until `release` is set."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.release = asyncio.Event()
        self.accepted = 0
        self.arrived: asyncio.Event = asyncio.Event()
        self.want = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, held: bool) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if held:
                    await self.release.wait()
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _client(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.accepted >= self.want:
            self.arrived.set()
        s_reader, s_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        await asyncio.gather(self._pipe(c_reader, s_writer, False), self._pipe(s_reader, c_writer, True))

    def handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._client(r, w))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def relay(pki: Path) -> AsyncIterator[tuple[HoldingRelay, int]]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.set_alpn_protocols(["http/1.1"])  # an HTTPS origin without HTTP/2

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=f"secure {request.path}")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as upstream:
        holding = HoldingRelay(upstream)
        server = await asyncio.start_server(holding.handle, "127.0.0.1", 0)
        try:
            yield holding, server.sockets[0].getsockname()[1]
        finally:
            server.close()
            await holding.aclose()
            await server.wait_closed()


class Collect:
    def __init__(self) -> None:
        self.ended: set[str] = set()
        self.errors: dict[str, FetchError] = {}

    async def head(self, r: FetchRequest, h: DeliveredHead) -> None:
        pass

    async def body(self, r: FetchRequest, d: bytes) -> None:
        pass

    async def end(self, r: FetchRequest, n: int, t: list[tuple[str, str]]) -> None:
        self.ended.add(r.id)

    async def error(self, r: FetchRequest, e: FetchError) -> None:
        self.errors[r.id] = e

    async def timing(self, r: FetchRequest, t: TimingReport) -> None:
        pass


async def fetch(service: FetchService, port: int, n: int, tag: str) -> Collect:
    sink = Collect()
    reqs = [FetchRequest(id=f"{tag}{i}", method="GET", url=f"https://localhost:{port}/{tag}{i}", headers=[])
            for i in range(n)]
    await service.fetch(reqs, sink, PAGE)
    assert not sink.errors and len(sink.ended) == n, sink.errors
    return sink


async def test_a_remembered_http11_https_origin_opens_its_connections_in_parallel(
    relay: tuple[HoldingRelay, int], pki: Path, tmp_path: Path
) -> None:
    holding, port = relay

    def service() -> FetchService:
        engine = EngineConfig(ca_file=str(pki / "ca.pem"), connect_timeout=10)
        return FetchService(ServiceConfig(engine, cache_dir=tmp_path / "cache"))

    holding.release.set()  # an earlier session: one request teaches the origin's protocol (and keep-alive)
    first = service()
    await fetch(first, port, 1, "a")
    await first.aclose()

    connections = first.config.engine.connections_per_origin
    holding.release, holding.arrived, holding.accepted, holding.want = asyncio.Event(), asyncio.Event(), 0, connections
    second = service()  # a new session: the cache's record is all it knows
    batch = asyncio.ensure_future(fetch(second, port, 2 * connections, "b"))
    try:
        # No server byte reaches the helper until every connection the work needs has been opened.
        await asyncio.wait_for(holding.arrived.wait(), 10)
    except TimeoutError:
        raise AssertionError(f"only {holding.accepted} of {connections} connections opened before a handshake "
                             "answered: the others waited for it") from None
    finally:
        holding.release.set()
        await batch
        await second.aclose()
    assert holding.accepted == connections
