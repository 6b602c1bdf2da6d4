"""A `*.localhost` URL reaches this machine (engine/host_names.py), as in Chromium, through the engine and through
the proxy's CONNECT tunnel: this machine's resolver (glibc with /etc/hosts and DNS) does not know `foo.localhost`,
and the hostile one played here answers every name with a public address. Neither is asked: the loopback server
answers, and a public page still may not reach it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from aiohttp import web
from lanefetch.engine import Engine, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.engine.address_policy import AddressSpace
from lanefetch.proxy.server import ProxyListener, basic_credentials
from local_app import serve_app
from misbehaving_servers import RecordingSink

WAIT_S = 10.0  # generous bound for what takes milliseconds; reaching it fails the test
PUBLIC = "93.184.216.34"


@pytest.fixture
async def hostile_resolver(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The loop's getaddrinfo answers every name with a public address; the names it was asked are returned."""
    asked: list[str] = []
    loop = asyncio.get_running_loop()

    async def answer(host: str, port: int, *args: Any, **kwargs: Any) -> Sequence[Any]:
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (PUBLIC, port))]

    monkeypatch.setattr(loop, "getaddrinfo", answer)
    return asked


@pytest.fixture
async def loopback_origin() -> AsyncIterator[tuple[int, list[str]]]:
    hosts: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        hosts.append(request.headers.get("Host", ""))
        return web.Response(text=f"local {request.path}")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app) as port:
        yield port, hosts


async def fetch(url: str, space: AddressSpace) -> RecordingSink:
    sink = RecordingSink()
    engine = Engine(EngineConfig(connect_timeout=5))
    try:
        await asyncio.wait_for(engine.fetch([FetchRequest("0", "GET", url)], sink, Page(address_space=space)), WAIT_S)
    finally:
        await engine.aclose()
    return sink


@pytest.mark.parametrize("name", ["foo.localhost", "a.b.LocalHost", "foo.localhost.", "localhost"])
async def test_a_localhost_url_reaches_the_loopback_server_whatever_the_resolver_says(
        loopback_origin: tuple[int, list[str]], hostile_resolver: list[str], name: str) -> None:
    port, hosts = loopback_origin
    sink = await fetch(f"http://{name}:{port}/x", "loopback")
    assert sink.records["0"].error is None and sink.records["0"].body == b"local /x"
    assert hosts == [f"{name.lower()}:{port}"]
    assert hostile_resolver == []


async def test_a_localhost_url_reaches_the_loopback_server_with_this_machines_resolver(
        loopback_origin: tuple[int, list[str]]) -> None:
    port, hosts = loopback_origin
    sink = await fetch(f"http://foo.localhost:{port}/y", "loopback")
    assert sink.records["0"].error is None and sink.records["0"].body == b"local /y"
    assert hosts == [f"foo.localhost:{port}"]


@pytest.mark.parametrize("space", ["public", "private"])
async def test_a_more_public_page_may_not_reach_a_localhost_name(
        loopback_origin: tuple[int, list[str]], hostile_resolver: list[str], space: AddressSpace) -> None:
    port, hosts = loopback_origin
    sink = await fetch(f"http://foo.localhost:{port}/secret", space)
    r = sink.records["0"]
    assert r.error is not None and r.error.code == "blocked_address" and r.head is None and not r.body
    assert hosts == [] and hostile_resolver == []


class Quiet:
    async def proxied(self, context_id: str, request: FetchRequest) -> None: ...
    async def failed(self, request: FetchRequest, error: FetchError) -> None: ...
    async def timing(self, request: FetchRequest, report: TimingReport, response: object = None) -> None: ...


@pytest.fixture
async def echo_origin() -> AsyncIterator[int]:
    """A loopback server that echoes what a tunnel carries to it."""
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(b"echo " + data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(("space", "reached"), [("loopback", True), ("public", False)])
async def test_a_tunnel_to_a_localhost_name_goes_to_this_machine_and_only_for_a_loopback_page(
        echo_origin: int, hostile_resolver: list[str], space: AddressSpace, reached: bool) -> None:
    engine = Engine(EngineConfig())
    proxy = ProxyListener(engine, Page(address_space=space), "s3cret", Quiet(), "c1", connect_timeout=5)
    await proxy.start()
    target = f"foo.localhost:{echo_origin}"
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: "
                     f"{basic_credentials('s3cret')}\r\n\r\n".encode())
        await writer.drain()
        if reached:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S)
            assert head.startswith(b"HTTP/1.1 200 "), head
            writer.write(b"hello")
            await writer.drain()
            assert await asyncio.wait_for(reader.readexactly(10), WAIT_S) == b"echo hello"
        else:
            # closed without an answer: Firefox fails over to direct, where the browser judges it itself
            assert await asyncio.wait_for(reader.read(), WAIT_S) == b""
        assert hostile_resolver == []
    finally:
        writer.close()
        await proxy.close()
        await engine.aclose()
