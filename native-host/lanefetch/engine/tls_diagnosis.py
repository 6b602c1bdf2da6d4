"""Why a TLS handshake with an origin failed, said so that a person can act on it.

Theory of operation. The engine offers TLS 1.2 and newer only. A server that speaks only TLS 1.1 or older fails
the handshake in one of two ways: an OpenSSL-like server answers with a "protocol version" alert (or an old
ServerHello the client refuses as an "unsupported protocol"), which names the cause; many others just close or
reset the connection, which names nothing: such an error has an empty message, and "TLS handshake with x failed: "
was all the user saw. So the known SSL reasons are put in words (`handshake_failure`, pure), and for a handshake
the server closed without a word one more handshake is tried that offers only TLS 1.0 and 1.1 (`probe_old_tls`):
no certificate is checked and nothing is sent after it, it only asks which version the server speaks. If the
server takes it, that is what the error says; if not, it says the server closed the connection during the
handshake. The probe runs only after a failure, so a working origin never sees it."""

from __future__ import annotations

import asyncio
import socket
import ssl
import warnings
from collections.abc import Callable

# OpenSSL's reasons for "no TLS version in common" (the server's alert, or its old version refused here).
_OLD_VERSION_REASONS = frozenset({
    "TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL", "NO_PROTOCOLS_AVAILABLE", "WRONG_SSL_VERSION",
    "VERSION_TOO_LOW",
})
_CLOSED = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
           EOFError)
REQUIRED = "lanefetch requires TLS 1.2 or newer"


def old_version_message(host: str, version: str | None = None) -> str:
    return f"{host} offers only {version or 'TLS 1.1'} or older; {REQUIRED}"


def closed_without_a_word(error: BaseException) -> bool:
    """The server ended the handshake by closing or resetting the connection: the cause is worth a probe. Not a
    timeout (an OSError without words too): a server that stays silent would only keep the probe waiting as long."""
    if isinstance(error, TimeoutError):
        return False
    return isinstance(error, _CLOSED) or (isinstance(error, OSError) and not str(error))


def handshake_failure(error: BaseException, host: str, old_version: str | None = None) -> str:
    """The words for a failed handshake with `host`; `old_version` is what probe_old_tls found, if it ran."""
    if old_version is not None:
        return old_version_message(host, old_version)
    if isinstance(error, ssl.SSLError) and getattr(error, "reason", None) in _OLD_VERSION_REASONS:
        return old_version_message(host)
    if isinstance(error, TimeoutError):
        return f"TLS handshake with {host} timed out"
    if closed_without_a_word(error):
        return (f"{host} closed the connection during the TLS handshake ({type(error).__name__}); it may not "
                f"speak TLS on this port")
    return f"TLS handshake with {host} failed: {str(error) or type(error).__name__}"


def _old_tls_context() -> ssl.SSLContext | None:
    """A client context that offers TLS 1.0 and 1.1 only, verifying nothing; None where OpenSSL has them disabled."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # deprecated versions, on purpose
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.minimum_version = ssl.TLSVersion.TLSv1
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # OpenSSL 3 allows TLS < 1.2 only at security level 0
    except (ValueError, ssl.SSLError):
        return None
    return ctx


async def probe_old_tls(family: int, sockaddr: tuple[object, ...], server_hostname: str | None, within_s: float,
                        setup: Callable[[socket.socket], None] | None = None) -> str | None:
    """The TLS version ('TLSv1.1', 'TLSv1') the server at sockaddr agrees to when offered only old ones, else None.
    The connection is closed right after the handshake."""
    ctx = _old_tls_context()
    if ctx is None:
        return None
    loop = asyncio.get_running_loop()
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    writer: asyncio.StreamWriter | None = None
    try:
        if setup is not None:
            setup(sock)
        async with asyncio.timeout(within_s):
            await loop.sock_connect(sock, sockaddr)
            _, writer = await asyncio.open_connection(sock=sock, ssl=ctx, server_hostname=server_hostname or None,
                                                      ssl_handshake_timeout=within_s)
            ssl_object = writer.get_extra_info("ssl_object")
            version = ssl_object.version() if ssl_object is not None else None
            return str(version) if version else None
    except (OSError, TimeoutError):  # ssl.SSLError is an OSError
        return None
    finally:
        if writer is not None:
            writer.transport.abort()  # no TLS close to wait for: this connection was only a question
        else:
            sock.close()
