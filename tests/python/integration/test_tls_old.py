"""An origin that speaks only TLS 1.1 or older (issue 15): the error says so, instead of an empty message. Real
TLS servers on loopback restricted to TLS 1.0–1.1 (OpenSSL here allows them at security level 0), one that
answers with the protocol-version alert and one that resets the connection; then the words for the errors alone."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from lanefetch.engine.tls_diagnosis import REQUIRED, closed_without_a_word, handshake_failure
from test_tls import fetch, pki  # noqa: F401  (fixture)


def old_server_context(pki: Path) -> ssl.SSLContext:  # noqa: F811
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            ctx.minimum_version = ssl.TLSVersion.TLSv1
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    except (ValueError, ssl.SSLError) as e:
        pytest.skip(f"this OpenSSL cannot serve TLS 1.1: {e}")
    return ctx


@pytest.fixture
async def resetting_server(pki: Path) -> AsyncIterator[int]:  # noqa: F811
    """asyncio's TLS server: a handshake it cannot do ends in a reset, no alert reaches the client."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=old_server_context(pki))
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def alerting_server(pki: Path) -> Iterator[int]:  # noqa: F811
    """A blocking OpenSSL server in a thread: it answers an offer of TLS 1.2+ with the protocol-version alert."""
    ctx = old_server_context(pki)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except OSError:
                pass
            finally:
                conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(10)
        listener.close()
        assert not thread.is_alive()


async def check_named(port: int, pki: Path, alert: bool) -> None:  # noqa: F811
    sink = await fetch([f"https://localhost:{port}/x"], pki / "ca.pem")
    error = sink.errors["0"]
    assert error.code == "tls_failed" and "0" not in sink.bodies
    # After a reset the probe found the version; an alert names the cause without one.
    named = "localhost offers only TLS 1.1 or older" if alert else "localhost offers only TLSv1.1 or older"
    assert named in error.message and REQUIRED in error.message, error.message


async def test_a_tls_1_1_only_origin_that_resets_is_named_as_such(resetting_server: int, pki: Path) -> None:  # noqa: F811
    await check_named(resetting_server, pki, alert=False)


async def test_a_tls_1_1_only_origin_that_alerts_is_named_as_such(alerting_server: int, pki: Path) -> None:  # noqa: F811
    await check_named(alerting_server, pki, alert=True)


def _ssl_error(reason: str) -> ssl.SSLError:
    e = ssl.SSLError(1, f"[SSL: {reason}] ...")
    e.reason = reason
    return e


@pytest.mark.parametrize(("error", "old", "words"), [
    (_ssl_error("TLSV1_ALERT_PROTOCOL_VERSION"), None, "a.test offers only TLS 1.1 or older; " + REQUIRED),
    (_ssl_error("UNSUPPORTED_PROTOCOL"), None, "a.test offers only TLS 1.1 or older; " + REQUIRED),
    (ConnectionResetError(), "TLSv1", "a.test offers only TLSv1 or older; " + REQUIRED),
    (ConnectionResetError(), None, "a.test closed the connection during the TLS handshake (ConnectionResetError)"),
    (ssl.SSLEOFError(8, "EOF occurred in violation of protocol"), None, "a.test closed the connection during the"),
    (TimeoutError(), None, "TLS handshake with a.test timed out"),
    (_ssl_error("SSLV3_ALERT_HANDSHAKE_FAILURE"), None, "TLS handshake with a.test failed: [SSL: SSLV3_ALERT"),
    (OSError(), None, "a.test closed the connection during the TLS handshake (OSError)"),
])
def test_the_words_for_each_failure_are_never_empty(error: BaseException, old: str | None, words: str) -> None:
    assert handshake_failure(error, "a.test", old).startswith(words)


def test_only_a_wordless_close_is_probed() -> None:
    assert closed_without_a_word(ConnectionResetError()) and closed_without_a_word(ssl.SSLEOFError())
    assert not closed_without_a_word(TimeoutError())  # a silent server would keep the probe waiting as long
    assert not closed_without_a_word(_ssl_error("TLSV1_ALERT_PROTOCOL_VERSION"))  # the alert says it already


async def test_a_silent_origin_times_out_and_is_not_probed(pki: Path) -> None:  # noqa: F811
    """A server that takes the connection and never answers the ClientHello: the error says the handshake timed
    out, and no probe for an old TLS version follows (it would only wait as long again). asyncio ends a handshake
    past its ssl_handshake_timeout with a ConnectionAbortedError, which read as a close: "closed the connection
    during the TLS handshake; it may not speak TLS", after a second connection and a second timeout."""
    from lanefetch.engine import FetchError, transport
    from lanefetch.engine.timing import ConnectTiming

    accepted: list[asyncio.Task[object]] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(asyncio.current_task())  # type: ignore[arg-type]
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the client gives up
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(FetchError) as failed:
            await transport.open_transport(
                [(socket.AF_INET, ("127.0.0.1", port))], server_hostname="localhost",
                tls=transport.make_tls_context(str(pki / "ca.pem")), timing=ConnectTiming(), connect_timeout=0.3)
        assert failed.value.code == "tls_failed"
        assert failed.value.message == "TLS handshake with localhost timed out"
        assert len(accepted) == 1, "no probe connection"
    finally:
        server.close()
        await server.wait_closed()
        if accepted:
            await asyncio.wait(accepted, timeout=5)  # each ends once its client closed
        assert all(t.done() for t in accepted)
