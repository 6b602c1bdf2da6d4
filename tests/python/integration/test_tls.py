"""TLS toward origins: strict verification, SNI, ALPN — against a real TLS server with a test CA. (HTTP/2 over
TLS against real nginx: test_h2_nginx.py.)"""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

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
from waits import until


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


async def test_a_fully_qualified_host_is_named_and_verified_without_its_final_dot(
        https_origin: tuple[int, list[str]], pki: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """https://localhost.:port/ is the host localhost, written fully qualified: its certificate (for localhost) is
    valid for it, as browsers hold, and SNI names it without the dot (RFC 6066 §3). Before, the helper asked
    OpenSSL to match "localhost." literally and refused the certificate. (The resolver is told the name here: this
    machine's resolves no fully qualified localhost.)"""
    port, sni = https_origin
    loop = asyncio.get_running_loop()
    resolve = loop.getaddrinfo

    async def resolve_fully_qualified(host: str, *args: Any, **kwargs: Any) -> Any:
        return await resolve("localhost" if host == "localhost." else host, *args, **kwargs)

    monkeypatch.setattr(loop, "getaddrinfo", resolve_fully_qualified)
    sink = await fetch([f"https://localhost.:{port}/a"], pki / "ca.pem", http2=False)
    assert sink.errors == {}
    assert sink.bodies == {"0": b"secure /a"}
    assert sni == ["localhost"]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["tls1.3", "tls1.2"])
async def test_a_tls13_finished_waits_in_the_kernel_for_the_first_request(
        pki: Path, version: ssl.TLSVersion, monkeypatch: pytest.MonkeyPatch) -> None:
    """TLS 1.3: the client's Finished is held (TCP_CORK) until the connection's first write, which leaves with it,
    so the server reads the two together. TLS 1.2: the client's second flight is never held (the server must
    answer it before the handshake ends). A server sees the same bytes either way."""
    import socket

    from lanefetch.engine import transport
    from lanefetch.engine.timing import ConnectTiming

    monkeypatch.setattr(transport, "FINISHED_HOLD", 60.0)  # only the first write releases it here
    got: list[bytes] = []
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.maximum_version = version

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.readexactly(5))
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        t = await transport.open_transport(
            [(socket.AF_INET, ("127.0.0.1", port))], server_hostname="localhost",
            tls=transport.make_tls_context(str(pki / "ca.pem")), timing=ConnectTiming(), connect_timeout=5)
        sock = t.writer.get_extra_info("socket")
        assert t.writer.get_extra_info("ssl_object").version() == {
            ssl.TLSVersion.TLSv1_3: "TLSv1.3", ssl.TLSVersion.TLSv1_2: "TLSv1.2"}[version]
        corked = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK)
        assert corked == (1 if version == ssl.TLSVersion.TLSv1_3 else 0)
        t.writer.write(b"hello")
        await t.writer.drain()
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0, "released with the first write"
        await until(lambda: bool(got), "the server reading the first write", seconds=5)
        assert got == [b"hello"]
        t.close()
    finally:
        server.close()
        await server.wait_closed()


def test_only_a_tls13_finished_flight_is_held() -> None:
    from lanefetch.engine.transport import ends_tls13_client_handshake

    assert ends_tls13_client_handshake(bytes([0x14, 3, 3, 0, 1, 1, 0x17, 3, 3]))  # compat CCS, then Finished
    assert ends_tls13_client_handshake(bytes([0x17, 3, 3, 0, 0x35]))
    assert not ends_tls13_client_handshake(bytes([0x16, 3, 1, 2, 0]))  # a ClientHello
    assert not ends_tls13_client_handshake(bytes([0x16, 3, 3, 0, 0x46]))  # TLS 1.2: ClientKeyExchange first
    assert not ends_tls13_client_handshake(bytes([0x14, 3, 3, 0, 1, 1, 0x16, 3, 3]))  # compat CCS, ClientHello
    assert not ends_tls13_client_handshake(b"")


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["tls1.3", "tls1.2"])
async def test_a_later_connection_resumes_the_tls_session_within_its_partition_only(
        pki: Path, version: ssl.TLSVersion) -> None:
    """A server that closes every connection after one answer: each request needs a new connection. The second
    and later of one top-level site's resume the session an earlier one received (the server sends no certificate
    again); another top-level site's, or a private window's of the same site, handshake in full, as in the
    browser, whose session cache is partitioned the same way."""
    resumed: list[tuple[str, bool]] = []
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.maximum_version = version

    async def handler(request: web.Request) -> web.Response:
        tls = request.transport.get_extra_info("ssl_object") if request.transport else None
        assert isinstance(tls, ssl.SSLObject)
        resumed.append((request.path, tls.session_reused))
        response = web.Response(text="x")
        response.force_close()
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as port:
        sink = Collect()
        engine = Engine(EngineConfig(ca_file=str(pki / "ca.pem"), connect_timeout=5))
        try:
            for name, page in [("a1", Page("loopback", "a.test")), ("a2", Page("loopback", "a.test")),
                               ("b1", Page("loopback", "b.test")), ("a3", Page("loopback", "a.test")),
                               ("p1", Page("loopback", "a.test", private_browsing=True)),
                               ("a4", Page("loopback", "a.test"))]:
                await asyncio.wait_for(engine.fetch(
                    [FetchRequest(name, "GET", f"https://localhost:{port}/{name}")], sink, page), 30)
        finally:
            await engine.aclose()
    assert sink.errors == {}
    assert resumed == [("/a1", False), ("/a2", True), ("/b1", False), ("/a3", True), ("/p1", False),
                       ("/a4", True)]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["tls1.3", "tls1.2"])
async def test_the_server_is_asked_for_records_of_at_most_4_kib(pki: Path, version: ssl.TLSVersion) -> None:
    """A connection told to ask for 4 KiB records (tls_records.py, RFC 6066 max_fragment_length: a pool's first)
    gets an OpenSSL server's 30 kB in records of that size, where the server writes 16 kB records to one that does
    not ask. The records are read off the wire by a relay between the two."""
    import socket

    from lanefetch.engine import tls_records, transport
    from lanefetch.engine.timing import ConnectTiming

    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    server_ctx.maximum_version = version
    payload = bytes(range(256)) * 120

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(1)
        writer.write(payload)
        await writer.drain()
        writer.close()

    downstream: list[bytearray] = []

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", tls_port)
        seen = bytearray()
        downstream.append(seen)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, log: bytearray | None) -> None:
            while data := await r.read(65536):
                if log is not None:
                    log += data
                w.write(data)
                await w.drain()
            w.close()

        await asyncio.gather(pipe(client_r, server_w, None), pipe(server_r, client_w, seen),
                             return_exceptions=True)

    tls_server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
    tls_port = tls_server.sockets[0].getsockname()[1]
    relay_server = await asyncio.start_server(relay, "127.0.0.1", 0)
    relay_port = relay_server.sockets[0].getsockname()[1]

    async def largest_record(ctx: ssl.SSLContext, small: bool) -> int:
        t = await transport.open_transport(
            [(socket.AF_INET, ("127.0.0.1", relay_port))], server_hostname="localhost", tls=ctx,
            timing=ConnectTiming(), connect_timeout=5, small_records=lambda: small)
        t.writer.write(b"x")
        assert await asyncio.wait_for(t.reader.read(), 10) == payload
        t.close()
        await until(lambda: len(downstream[-1]) > len(payload), "the relay seeing the server's records", seconds=5)
        wire, sizes, at = bytes(downstream[-1]), [], 0
        while at + 5 <= len(wire):
            size = int.from_bytes(wire[at + 3:at + 5], "big")
            if wire[at] == 0x17:  # application data
                sizes.append(size)
            at += 5 + size
        return max(sizes)

    try:
        helper = transport.make_tls_context(str(pki / "ca.pem"))
        assert await largest_record(helper, True) <= tls_records.RECORD_BYTES + 64  # tag, nonce, content type
        assert await largest_record(helper, False) > 16000
    finally:
        for s in (relay_server, tls_server):
            s.close()
            await s.wait_closed()


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["tls1.3", "tls1.2"])
async def test_a_ca_removed_from_the_system_store_is_distrusted_without_a_restart(
        pki: Path, tmp_path: Path, version: ssl.TLSVersion, monkeypatch: pytest.MonkeyPatch) -> None:
    """The system store (SSL_CERT_FILE and SSL_CERT_DIR here, as update-ca-certificates writes them) holds the
    test CA, then loses it (an administrator distrusting it), then gets it back. The same engine follows: the
    connection after the removal is refused, though the server would resume the session an earlier connection
    of the same partition received (a resumed handshake verifies no chain), and the one after the CA came back is
    trusted. Before, the store was the one read when the helper's first TLS connection was made, until restart."""
    from lanefetch.engine import system_trust

    monkeypatch.setattr(system_trust, "CHECK_EVERY", 0.0)  # every new connection looks (the rule: test_system_trust)
    (tmp_path / "other").mkdir()
    other = make_test_pki(tmp_path / "other", "another CA")
    bundle, directory = tmp_path / "ca-certificates.crt", tmp_path / "certs"
    directory.mkdir()
    bundle.write_bytes((pki / "ca.pem").read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("SSL_CERT_DIR", str(directory))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.maximum_version = version
    resumed: list[bool] = []

    async def handler(request: web.Request) -> web.Response:
        tls = request.transport.get_extra_info("ssl_object") if request.transport else None
        assert isinstance(tls, ssl.SSLObject)
        resumed.append(tls.session_reused)
        response = web.Response(text="x")
        response.force_close()  # each request on a new connection
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as port:
        sink = Collect()
        engine = Engine(EngineConfig(connect_timeout=5))  # no ca_file: the system store
        try:
            async def get(name: str) -> None:
                await asyncio.wait_for(engine.fetch(
                    [FetchRequest(name, "GET", f"https://localhost:{port}/{name}")], sink, Page("loopback", "a.test")),
                    30)

            await get("trusted")
            await get("resumed")
            bundle.write_bytes((other / "ca.pem").read_bytes())  # the test CA distrusted
            await get("removed")
            bundle.write_bytes((other / "ca.pem").read_bytes() + (pki / "ca.pem").read_bytes())  # and back
            await get("added")
        finally:
            await engine.aclose()
    assert resumed[:2] == [False, True], "the second connection resumed the first's session"
    assert set(sink.errors) == {"removed"} and sink.errors["removed"].code == "tls_failed"
    assert "removed" not in sink.bodies and sink.bodies["added"] == b"x"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="where OpenSSL verifies against the system's files")
async def test_the_system_store_is_read_once_not_at_every_connection(
        pki: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the system's bundle holds the event loop (25 ms for Debian's 144 CAs, on this machine): it is read
    when the context is made, and then only when it changed (system_trust.py). Before, truststore's Linux context
    read it again as each connection's handshake began: three connections, three more reads."""
    bundle, directory = tmp_path / "ca-certificates.crt", tmp_path / "certs"
    directory.mkdir()
    bundle.write_bytes((pki / "ca.pem").read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("SSL_CERT_DIR", str(directory))
    reads: list[str] = []
    default_paths, locations = ssl.SSLContext.set_default_verify_paths, ssl.SSLContext.load_verify_locations

    def read_default_paths(self: ssl.SSLContext) -> None:
        reads.append("default paths")
        default_paths(self)

    def read_locations(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        reads.append("locations")
        locations(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "set_default_verify_paths", read_default_paths)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", read_locations)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    connections: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        connections.append(1)
        response = web.Response(text="x")
        response.force_close()  # each request on a new connection
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as port:
        reads.clear()  # (the server's own context)
        sink = Collect()
        engine = Engine(EngineConfig(connect_timeout=5))  # no ca_file: the system store
        try:
            for name in ("a", "b", "c"):
                await asyncio.wait_for(engine.fetch(
                    [FetchRequest(name, "GET", f"https://localhost:{port}/{name}")], sink, Page("loopback")), 30)
        finally:
            await engine.aclose()
    assert sink.errors == {} and len(connections) == 3
    assert reads == ["default paths"]


async def test_a_chain_to_a_root_the_browser_distrusts_is_refused(
        pki: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The system's store trusts the test CA (ca_file here); Chromium's root store is told not to, then to trust it
    only for certificates issued before a date (chromium_distrust.py). The helper refuses the connection where the
    browser would (the request then goes to the browser), and takes a leaf issued before the date."""
    import datetime
    import socket

    from cryptography import x509
    from lanefetch.engine import chromium_distrust, transport
    from lanefetch.engine.timing import ConnectTiming

    ca = x509.load_pem_x509_certificate((pki / "ca.pem").read_bytes())
    issued = x509.load_pem_x509_certificate((pki / "srv.pem").read_bytes()).not_valid_before_utc
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]

    async def connect(distrusted: dict[str, datetime.datetime | None]) -> FetchError | None:
        monkeypatch.setattr(chromium_distrust, "DISTRUSTED", distrusted)
        try:
            t = await transport.open_transport(
                [(socket.AF_INET, ("127.0.0.1", port))], server_hostname="localhost",
                tls=transport.make_tls_context(str(pki / "ca.pem")), timing=ConnectTiming(), connect_timeout=5)
        except FetchError as e:
            return e
        t.close()
        return None

    try:
        spki = chromium_distrust.spki_sha256(ca)
        never = await connect({spki: None})
        assert never is not None and never.code == "tls_failed" and "lanefetch test CA" in str(never)
        too_late = await connect({spki: issued - datetime.timedelta(days=1)})
        assert too_late is not None and too_late.code == "tls_failed"
        assert await connect({spki: issued + datetime.timedelta(days=1)}) is None, "issued before the cut-off"
        assert await connect({}) is None
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["tls1.3", "tls1.2"])
async def test_a_server_asking_for_a_client_certificate_is_left_to_the_browser(
        pki: Path, version: ssl.TLSVersion) -> None:
    """A server that asks for a client certificate and takes a connection without one (nginx's ssl_verify_client
    optional) answers by who the client is. The browser would choose a certificate (asking the user, or by policy)
    and be answered as that user; the helper has none, and was answered anonymously, an answer delivered for a
    request it does not answer. Now the handshake stops when asked and the request goes to the browser."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    ctx.load_verify_locations(pki / "ca.pem")
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.maximum_version = version

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="anonymous")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app, ssl_context=ctx) as port:
        sink = await fetch([f"https://localhost:{port}/account"], pki / "ca.pem")
    assert "0" not in sink.bodies
    assert sink.errors["0"].code == "tls_failed" and "client certificate" in str(sink.errors["0"])
