"""A `tcp` preconnect (the extension's, for an https page whose protocol is not known yet) opens one TCP
connection, reports its round trip at once, and holds the TLS handshake until the connection is needed: a request
for the origin, or a `full` preconnect (the browser got HTTP/1.1 there). Real TLS (a throwaway CA) behind a
loopback relay that counts what each connection's client sent (pool_plan.preconnect_plan)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.engine import Engine, EngineConfig, FetchRequest, Page
from lanefetch.engine.engine import policy_key
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState
from lanefetch.engine.request import Origin
from local_app import serve_app
from test_remembered_protocol import Collect
from tls_pki import make_test_pki

PAGE = Page(address_space="loopback", top_site="https://site.test")
# Absence has no moment to be seen at: a connection that was going to send its ClientHello sends it in the loop turn
# its TCP connect completes (microseconds on loopback); this is a thousand times that.
QUIET_S = 0.3


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_pki(tmp_path_factory.mktemp("pki"), "lanefetch test CA")


class CountingRelay:
    """Loopback TCP relay to the TLS server: counts connections and the bytes each client sent."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.close_first = False  # the first connection is closed at once, as a server closes one that says nothing
        self.closed = asyncio.Event()
        self.sent: list[int] = []  # bytes from the client, per connection in order of arrival
        self.first_bytes = asyncio.Event()
        self.accepted = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int | None) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if index is not None:
                    self.sent[index] += len(data)
                    self.first_bytes.set()
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _client(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        index = len(self.sent)
        self.sent.append(0)
        self.accepted.set()
        if self.close_first and index == 0:
            c_writer.close()
            self.closed.set()
            return
        s_reader, s_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        await asyncio.gather(self._pipe(c_reader, s_writer, index), self._pipe(s_reader, c_writer, None))

    def handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._client(r, w))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def relay(pki: Path) -> AsyncIterator[tuple[CountingRelay, int]]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.set_alpn_protocols(["http/1.1"])  # an HTTPS origin without HTTP/2: a `full` preconnect opens six

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=f"secure {request.path}")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as upstream:
        counting = CountingRelay(upstream)
        server = await asyncio.start_server(counting.handle, "127.0.0.1", 0)
        try:
            yield counting, server.sockets[0].getsockname()[1]
        finally:
            server.close()
            await counting.aclose()
            await server.wait_closed()


@pytest.fixture
async def engine(pki: Path) -> AsyncIterator[tuple[Engine, asyncio.Queue[tuple[Origin, float]]]]:
    e = Engine(EngineConfig(ca_file=str(pki / "ca.pem"), connect_timeout=10))
    rtts: asyncio.Queue[tuple[Origin, float]] = asyncio.Queue()
    e.on_connected = lambda origin, rtt: rtts.put_nowait((origin, rtt))
    try:
        yield e, rtts
    finally:
        await e.aclose()


async def held_connection(engine: Engine, rtts: asyncio.Queue[tuple[Origin, float]], relay: CountingRelay,
                          port: int) -> None:
    """A `tcp` preconnect: its round trip reported, one connection, and nothing sent on it."""
    assert engine.preconnect(f"https://localhost:{port}/page", PAGE, "tcp")
    origin, rtt = await asyncio.wait_for(rtts.get(), 10)
    assert origin == Origin("https", "localhost", port) and rtt >= 0
    await asyncio.wait_for(relay.accepted.wait(), 10)
    assert not engine.preconnect(f"https://localhost:{port}/other", PAGE, "tcp"), "one is opening already"
    await asyncio.sleep(QUIET_S)
    assert relay.sent == [0], f"the held connection sent {relay.sent} bytes (a TLS handshake nobody needed)"


async def test_a_tcp_preconnect_holds_tls_until_a_request_needs_the_connection(
    relay: tuple[CountingRelay, int], engine: tuple[Engine, asyncio.Queue[tuple[Origin, float]]]
) -> None:
    counting, port = relay
    e, rtts = engine
    await held_connection(e, rtts, counting, port)
    sink = Collect()
    await asyncio.wait_for(e.fetch([FetchRequest(id="r1", method="GET", url=f"https://localhost:{port}/a",
                                                 headers=[])], sink, PAGE), 20)
    assert sink.ended == {"r1"} and not sink.errors, sink.errors
    assert len(counting.sent) == 1 and counting.sent[0] > 0, "the request went on the held connection"
    assert rtts.empty(), "no other connection was opened, so no other round trip reported"


async def test_a_full_preconnect_releases_the_held_handshake_and_opens_the_rest(
    relay: tuple[CountingRelay, int], engine: tuple[Engine, asyncio.Queue[tuple[Origin, float]]]
) -> None:
    counting, port = relay
    e, rtts = engine
    await held_connection(e, rtts, counting, port)
    e.preconnect(f"https://localhost:{port}/page", PAGE, "full")  # the browser's document came over HTTP/1.1
    await asyncio.wait_for(counting.first_bytes.wait(), 10)
    # The handshake chose HTTP/1.1: the other connections a page of this origin may have follow it.
    connections = e.config.connections_per_origin
    for _ in range(connections - 1):
        await asyncio.wait_for(rtts.get(), 10)
    assert len(counting.sent) == connections and counting.sent[0] > 0


async def count_plain_http_connections(e: Engine, rtts: asyncio.Queue[tuple[Origin, float]], page: Page,
                                       expected: int, learned: bool = False) -> None:
    """A `tcp` preconnect for `page` to a plain-http origin (`learned`: one whose record an earlier session left
    under the site) opens `expected` connections, no more."""
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda r, w: accepted.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        if learned:
            e.policies[policy_key(Origin("http", "127.0.0.1", port), page)] = OriginPolicy(
                e.config.effective_depth, PipelineState.GREEN, 4, learned_at=time.time())
        assert e.preconnect(f"http://127.0.0.1:{port}/", page, "tcp")
        for _ in range(expected):
            await asyncio.wait_for(rtts.get(), 10)
        assert not e.preconnect(f"http://127.0.0.1:{port}/", page, "tcp"), "open already: none more"
        await asyncio.sleep(QUIET_S)
        assert len(accepted) == expected and rtts.empty(), f"{len(accepted)} connections, {expected} expected"
    finally:
        for w in accepted:
            w.close()
        server.close()
        await server.wait_closed()


async def test_a_tcp_preconnect_to_a_plain_http_origin_opens_every_connection(
    engine: tuple[Engine, asyncio.Queue[tuple[Origin, float]]]
) -> None:
    """No TLS to hold, and every request of the origin comes to the helper: a learned page's flight, which starts
    with the navigation, finds its connections open (pool_plan.preconnect_plan)."""
    e, rtts = engine
    assert e.config.connections_per_origin > 1
    page = dataclasses.replace(PAGE, url="http://site.test/page")
    await count_plain_http_connections(e, rtts, page, e.config.connections_per_origin)


async def test_a_probe_ahead_of_any_page_opens_one_connection_to_an_origin_nothing_taught(
    engine: tuple[Engine, asyncio.Queue[tuple[Origin, float]]]
) -> None:
    """A site just turned on with no tab showing it is probed over http by its name (the extension's just-enabled
    rule): one TCP connection, its round trip reported. A site served over https only had six TCP connections to its
    port 80 that carried nothing."""
    e, rtts = engine
    await count_plain_http_connections(e, rtts, PAGE, 1)


async def test_a_probe_ahead_of_any_page_opens_every_connection_to_an_origin_the_site_used(
    engine: tuple[Engine, asyncio.Queue[tuple[Origin, float]]]
) -> None:
    """The site's earlier loads used the origin (its record was read): its learned page's flight will need them."""
    e, rtts = engine
    await count_plain_http_connections(e, rtts, PAGE, e.config.connections_per_origin, learned=True)


async def test_a_held_connection_the_server_closed_meanwhile_costs_no_request(
    relay: tuple[CountingRelay, int], engine: tuple[Engine, asyncio.Queue[tuple[Origin, float]]]
) -> None:
    counting, port = relay
    counting.close_first = True
    e, rtts = engine
    assert e.preconnect(f"https://localhost:{port}/page", PAGE, "tcp")
    await asyncio.wait_for(rtts.get(), 10)
    await asyncio.wait_for(counting.closed.wait(), 10)
    sink = Collect()
    await asyncio.wait_for(e.fetch([FetchRequest(id="r1", method="GET", url=f"https://localhost:{port}/a",
                                                 headers=[])], sink, PAGE), 20)
    assert sink.ended == {"r1"} and not sink.errors, sink.errors
    assert len(counting.sent) == 2 and counting.sent[1] > 0, f"a fresh connection carried it: {counting.sent}"
