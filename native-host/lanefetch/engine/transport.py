"""Opening one TCP (and TLS) connection with the timing points DevTools shows."""

from __future__ import annotations

import _ssl
import asyncio
import contextlib
import contextvars
import errno
import socket
import ssl
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from . import chromium_distrust, client_certificates, system_trust, tls_diagnosis, tls_records
from .errors import FetchError
from .timing import ConnectTiming, now

STREAM_LIMIT = 256 * 1024  # bytes buffered per connection before the socket is paused (backpressure)
# The receive room every connection starts with (Linux): what a download may have in flight before the window we
# advertise, not the server's slow start, ends a round trip's flight (grow_receive_buffer).
RECEIVE_ROOM = 1 << 20


class DataBeforeErrorReader(asyncio.StreamReader):
    """A StreamReader that hands out the bytes that arrived before a reset, then ends; the error is kept
    in `transport_error`. (The stock reader raises a reset before returning buffered data, so a complete
    last response followed by an RST, as nginx does at its keep-alive limit, would be lost.)"""

    transport_error: BaseException | None = None

    def set_exception(self, exc: BaseException) -> None:
        self.transport_error = exc
        self.feed_eof()


@dataclass
class _Handshake:
    """What the connection being opened asks in its TLS handshake: the session it offers (session_tickets.py) and
    whether it asks for small records (tls_records.py; set to False by wrap_bio where that could not be done, so
    the connection's timing says what it really asked)."""

    session: ssl.SSLSession | None = None
    small_records: bool = False


# asyncio's SSL transport makes its SSLObject with the context's wrap_bio and passes no session, so
# SessionOfferingContext reads the connection's _Handshake from here.
_OFFERED: contextvars.ContextVar[_Handshake | None] = contextvars.ContextVar("lanefetch_offered_session",
                                                                           default=None)


class SessionOfferingContext(ssl.SSLContext):
    """An SSLContext whose client connections offer the TLS session open_transport chose for them (and ask for
    small records where it said so)."""

    def wrap_bio(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, server_side: bool = False,
                 server_hostname: str | bytes | None = None, session: ssl.SSLSession | None = None) -> ssl.SSLObject:
        asked = _OFFERED.get()
        tls = super().wrap_bio(incoming, outgoing, server_side, server_hostname,
                               session or (asked.session if asked is not None else None))
        if asked is not None and asked.small_records:
            asked.small_records = tls_records.ask_small_records(tls, self)
        return tls


def offers_sessions(tls: ssl.SSLContext | None) -> bool:
    """Do this context's connections resume sessions (make_tls_context)?"""
    return isinstance(tls, SessionOfferingContext)


async def _streams(
    sock: socket.socket, tls: ssl.SSLContext | None, server_hostname: str | None, handshake_timeout: float,
    asked: _Handshake | None = None,
) -> tuple[DataBeforeErrorReader, asyncio.StreamWriter]:
    """asyncio.open_connection with our reader (over TLS asking what `asked` says, where the context is a
    SessionOfferingContext)."""
    loop = asyncio.get_running_loop()
    reader = DataBeforeErrorReader(limit=STREAM_LIMIT, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    if tls is None:
        transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
    else:
        offered = _OFFERED.set(asked)
        try:
            transport, _ = await loop.create_connection(
                lambda: protocol, sock=sock, ssl=tls, server_hostname=server_hostname,
                ssl_handshake_timeout=handshake_timeout,
            )
        finally:
            _OFFERED.reset(offered)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


# TLS record content types (RFC 8446 §5.1)
_CHANGE_CIPHER_SPEC, _APPLICATION_DATA = 0x14, 0x17
FINISHED_HOLD = 0.05  # seconds a TLS 1.3 client Finished may wait for the connection's first request


def ends_tls13_client_handshake(data: bytes) -> bool:
    """Is this write the client's last handshake flight of TLS 1.3 (its Finished, encrypted: an application_data
    record, after the middlebox-compatibility ChangeCipherSpec if any)? A TLS 1.2 client's second flight starts
    with a handshake record (ClientKeyExchange) and a retried ClientHello is one too: the server must answer those
    before anything else can be sent, so they are never held."""
    if data[:1] == bytes([_CHANGE_CIPHER_SPEC]) and len(data) > 6:
        data = data[6:]  # the compatibility record is 6 bytes: 0x14 0x03 0x03 0x00 0x01 0x01
    return data[:1] == bytes([_APPLICATION_DATA])


class FinishedWithRequestSocket(socket.socket):
    """A TCP socket whose TLS 1.3 client Finished waits in the kernel (TCP_CORK, Linux) for the connection's first
    request, at most FINISHED_HOLD, so the two leave in one segment, as a browser's do.

    Why: written apart (the helper's request followed its Finished by 2 ms, the event loop's turns between the
    handshake's end and the pool's first write), nginx answered the Finished alone (two session tickets and its
    SETTINGS, three small packets) and the request in a second pass (its SETTINGS ACK and the response's HEADERS
    in one more small packet): eleven packets where the server's initial window (IW10) holds ten, and a 9.4 kB
    document's last 745 bytes came a round trip later (django-tutorial07 over `sat`: 0.6 s). Chromium's Finished
    and request arrive together and its answer fits."""

    _held = False
    _sends = 0

    def send(self, data: bytes, flags: int = 0) -> int:  # type: ignore[override]
        self._sends += 1
        if self._held:
            n = super().send(data, flags)
            self.release()  # the first request (or whatever came first) goes with the Finished
            return n
        # The write after the ClientHello: a TLS 1.3 Finished, or a flight the server must answer first.
        if self._sends == 2 and hasattr(socket, "TCP_CORK") and ends_tls13_client_handshake(bytes(data[:7])):
            with contextlib.suppress(OSError):
                self.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                self._held = True
                asyncio.get_running_loop().call_later(FINISHED_HOLD, self.release)
        return super().send(data, flags)

    def release(self) -> None:
        """Send what is held now."""
        if self._held:
            self._held = False
            if self.fileno() != -1:
                with contextlib.suppress(OSError):
                    self.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)


@dataclass
class Transport:
    reader: DataBeforeErrorReader
    writer: asyncio.StreamWriter
    local_address: str | None
    remote_address: str | None
    interface: str | None
    alpn: str | None = None  # the protocol the server chose in the TLS handshake ("h2", "http/1.1"), None if none
    tls: ssl.SSLContext | None = None  # the context it was made with (its sessions are resumed under that one only)

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()


def _fmt(addr: tuple[object, ...]) -> str:
    host, port = str(addr[0]), addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def make_tls_context(ca_file: str | None = None, http2: bool = True) -> ssl.SSLContext:
    """Strict verification against the system trust store, or only ca_file when given (tests with their own CA:
    never both, so a test CA is never trusted in normal use). ALPN offers h2 first when http2 (the server picks; the
    pool runs whichever it chose). On Linux OpenSSL verifies against the store as read now (the locations
    truststore reads; system_trust.py reads them again when they change), and its connections resume TLS sessions
    (SessionOfferingContext), as with ca_file. On macOS and Windows truststore verifies the chain after the
    handshake with the platform's verifier, and a resumed handshake carries no chain to verify, so there every
    handshake is a full one."""
    if ca_file is not None:
        ctx: ssl.SSLContext = SessionOfferingContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cafile=ca_file)
    elif sys.platform.startswith("linux"):
        # Not truststore's context: it reads the bundle again as each connection's handshake begins (25 ms of the
        # event loop for Debian's), and still trusts a CA removed from it since.
        ctx = SessionOfferingContext(ssl.PROTOCOL_TLS_CLIENT)
        system_trust.load_system_store(ctx)
    else:
        import truststore

        ctx = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["h2", "http/1.1"] if http2 else ["http/1.1"])
    client_certificates.stop_when_asked(ctx)  # the browser answers a request for a client certificate, never us
    return ctx


def verified_chain(tls: ssl.SSLObject) -> list[bytes]:
    """The chain OpenSSL verified on this connection (DER, leaf first, trust anchor last); [] where it verified
    none (a resumed handshake) or does not say (Python before 3.13 has it on the _ssl object only)."""
    public = getattr(tls, "get_verified_chain", None)  # Python 3.13: DER bytes
    native = getattr(getattr(tls, "_sslobj", None), "get_verified_chain", None)  # 3.10 to 3.12: _ssl.Certificate
    chain = public() if public is not None else native() if native is not None else None
    return [c if isinstance(c, bytes) else c.public_bytes(_ssl.ENCODING_DER) for c in chain or ()]


def trust_paths(ca_file: str | None) -> list[str]:
    """The files a context of make_tls_context(ca_file) reads its trust from, watched for changes
    (system_trust.py): ca_file, or the system's store where OpenSSL verifies (Linux); none elsewhere (the platform's
    verifier, asked at each handshake, follows its store itself)."""
    if ca_file is not None:
        return [ca_file]
    return system_trust.system_store_paths() if sys.platform.startswith("linux") else []


async def open_transport(
    addresses: list[tuple[int, tuple[object, ...]]],
    *,
    server_hostname: str | None,
    tls: ssl.SSLContext | None,
    timing: ConnectTiming,
    connect_timeout: float,
    interface: str | None = None,
    setup: Callable[[socket.socket], None] | None = None,
    tcp_up: Callable[[], Awaitable[None]] | None = None,
    session: Callable[[bool], ssl.SSLSession | None] | None = None,
    small_records: Callable[[], bool] | None = None,
) -> Transport:
    """Connect to the first address that answers. `server_hostname` is the SNI/verification name (its final dot
    dropped). `tcp_up` is awaited once TCP is connected, before TLS: it reports the round trip, and may hold the
    TLS handshake until the connection is needed (or raise to give it up; the socket is then closed). As the TLS
    handshake starts (a SessionOfferingContext's connections only), `small_records` says whether to ask for TLS
    records of at most 4 KiB (tls_records.py) and `session`, told that answer, which session to offer
    (session_tickets.py)."""
    loop = asyncio.get_running_loop()
    if server_hostname is not None:
        # A fully qualified name's final dot ("example.com.") is no part of the name a certificate holds, nor of the
        # name SNI sends (RFC 6066 §3): browsers drop it for both. Left on, OpenSSL matched it literally and
        # refused every certificate of such a host.
        server_hostname = server_hostname.removesuffix(".")
    last: Exception | None = None
    failures: list[str] = []  # each address's failure, for the error if none answers
    for family, sockaddr in addresses:
        # Making the socket may fail for this address alone: no such family here (EAFNOSUPPORT: IPv6 off), or the
        # helper at its file-descriptor limit (EMFILE, ENFILE). That is this address's connect failure: the next one
        # is tried, and the error names it if none answers (raised from here, it failed the origin's whole queue as
        # an internal error, the other addresses never tried).
        sock: socket.socket | None = None
        try:
            sock = FinishedWithRequestSocket(family, socket.SOCK_STREAM) if tls is not None else socket.socket(
                family, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if setup is not None:  # a lane: bind to its interface
                setup(sock)
        except OSError as e:
            if sock is not None:
                sock.close()
            last = e
            failures.append(f"{_fmt(sockaddr)}: {socket_failure(e)}")
            continue
        timing.connect_start = now()
        try:
            await asyncio.wait_for(loop.sock_connect(sock, sockaddr), connect_timeout)
        except (OSError, TimeoutError) as e:
            sock.close()
            last = e
            failures.append(f"{_fmt(sockaddr)}: {socket_failure(e)}")
            continue
        timing.connect_end = now()
        timing.handshake_rtt = kernel_min_rtt(sock)
        try:
            grow_receive_buffer(sock)
        except OSError as e:  # the socket's receive low-water mark stuck: reads would wait for a MiB
            sock.close()
            last = e
            failures.append(f"{_fmt(sockaddr)}: {socket_failure(e)}")
            continue
        if tcp_up is not None:
            try:
                await tcp_up()
            except BaseException:
                sock.close()
                raise
        local = _fmt(sock.getsockname())
        remote = _fmt(sock.getpeername())
        alpn: str | None = None
        try:
            if tls is not None:
                small = small_records is not None and offers_sessions(tls) and small_records()
                asked = _Handshake(session(small) if session is not None and offers_sessions(tls) else None, small)
                # The handshake's bound is wait_for's: its TimeoutError says the server stayed silent. asyncio's own
                # (ssl_handshake_timeout, beyond it: a backstop) ends the handshake with a ConnectionAbortedError,
                # which reads as the server's close and is probed for an old TLS version (tls_diagnosis.py): a
                # silent server was named as one that "may not speak TLS", after waiting as long again.
                reader, writer = await asyncio.wait_for(
                    _streams(sock, tls, server_hostname, connect_timeout * 1.5, asked), connect_timeout
                )
                timing.small_records = asked.small_records  # what it really asked: its sessions are kept by it
                timing.tls_end = now()
                tls_object = writer.get_extra_info("ssl_object")
                timing.tls_resumed = bool(tls_object.session_reused)
                if not timing.tls_resumed and (why := chromium_distrust.refusal(verified_chain(tls_object))):
                    writer.close()  # a chain the browser refuses (its root store is not the system's)
                    raise FetchError("tls_failed", f"certificate of {server_hostname} refused: {why}")
                alpn = tls_object.selected_alpn_protocol()
                if alpn not in (None, "http/1.1", "h2"):
                    writer.close()
                    raise FetchError("tls_failed", f"server chose ALPN {alpn!r}, expected h2 or http/1.1")
            else:
                reader, writer = await _streams(sock, None, None, connect_timeout)
        except ssl.SSLCertVerificationError as e:
            sock.close()
            raise FetchError("tls_failed", f"certificate of {server_hostname} rejected: {e.verify_message}") from None
        except (ssl.SSLError, OSError, TimeoutError) as e:
            sock.close()
            if client_certificates.asked(e):
                raise FetchError("tls_failed", f"{server_hostname} asks for a client certificate: the browser "
                                 "chooses one") from None
            # An unexplained close may be a server of TLS 1.1 or older: one more handshake asks (tls_diagnosis.py).
            # (Not after a held handshake: a server closes a connection that said nothing for a while.)
            old = (await tls_diagnosis.probe_old_tls(family, sockaddr, server_hostname, connect_timeout, setup)
                   if tls is not None and not timing.held and tls_diagnosis.closed_without_a_word(e) else None)
            detail = tls_diagnosis.handshake_failure(e, server_hostname or remote, old)
            raise FetchError("tls_failed", detail) from None
        return Transport(reader, writer, local, remote, interface, alpn, tls)
    if isinstance(last, TimeoutError) and len(failures) == 1:
        raise FetchError("timeout", f"connecting timed out after {connect_timeout:g} s")
    if not failures:
        raise FetchError("connect_failed", "cannot connect: no address to connect to")
    raise FetchError("connect_failed" if not isinstance(last, TimeoutError) else "timeout",
                     f"cannot connect: {'; '.join(failures)}")


def grow_receive_buffer(sock: socket.socket) -> None:
    """Give a connection room to receive RECEIVE_ROOM in flight from its start, leaving the kernel's autotuning
    free to grow it further.

    Linux starts a connection's receive buffer small (tcp_rmem's default, 128 KiB) and grows it as the reader keeps
    up, one round trip behind. Over a long round trip a server in slow start outran it: a capture of a page's fonts
    over a 600 ms link showed flights of 97 and 130 packets ended by our advertised window, not by the server's
    congestion window, in a third of the loads, each such round trip costing ~0.4 s (docs/performance.md). SO_RCVBUF
    would grow it too, but it locks the size (autotuning stops) and is capped by rmem_max; raising the receive
    low-water mark to RECEIVE_ROOM makes the kernel grow the buffer to hold that much (tcp_set_rcvlowat), without
    the lock, and putting the mark back to 1 keeps the grown buffer while reads return whatever has arrived, as
    before. Where the kernel refuses the first step (not Linux, an old kernel), the socket stays as it was; where it
    refuses the second, the mark would make every read wait for a MiB, and the OSError says so to the caller."""
    if not hasattr(socket, "SO_RCVLOWAT"):
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, RECEIVE_ROOM)
    except OSError:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)


def socket_failure(e: BaseException) -> str:
    """What went wrong making or connecting one socket, in words that say whose matter it is."""
    if isinstance(e, TimeoutError):
        return "timed out"
    if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
        return f"the helper has too many open files ({e.strerror}): close tabs or raise its file limit"
    if isinstance(e, OSError) and e.errno == errno.EAFNOSUPPORT:
        return f"this address family is not supported here ({e.strerror}; IPv6 turned off?)"
    return str(e)


_TCPI_MIN_RTT = 148  # offset of tcpi_min_rtt (microseconds, u32) in Linux's struct tcp_info
_TCPI_RTT = 68  # tcpi_rtt: the smoothed round trip of what we sent (its ACKs ride the server's data, queue and all)
_TCPI_RCV_RTT = 92  # tcpi_rcv_rtt: the receiver's own estimate, from the data it receives
_TCPI_RCV_OOOPACK = 224  # tcpi_rcv_ooopack (Linux 5.4+): data packets received out of order, ever


def _tcp_info(sock: socket.socket | None) -> bytes | None:
    """The kernel's struct tcp_info of this connection (Linux), or None where it does not say."""
    if sock is None or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return None


def _u32(info: bytes, at: int) -> int | None:
    """The u32 field of tcp_info at offset `at`, or None where this kernel's struct is too short to hold it."""
    return int.from_bytes(info[at : at + 4], sys.byteorder) if len(info) >= at + 4 else None


def kernel_min_rtt(sock: socket.socket | None) -> float | None:
    """The smallest round trip the kernel measured on this connection (Linux), in seconds. Unlike the
    connect time seen from Python, it holds no event-loop or scheduling delay of a busy machine."""
    info = _tcp_info(sock)
    micros = None if info is None else _u32(info, _TCPI_MIN_RTT)
    return micros / 1e6 if micros is not None and 0 < micros < 0xFFFFFFFF else None


def kernel_loaded_rtts(sock: socket.socket | None) -> list[float | None]:
    """The kernel's round trips on this connection as it is loaded now (Linux; the queue's delay included): the
    smoothed one and the receiver's, in seconds; [] where the kernel does not say."""
    info = _tcp_info(sock)
    if info is None:
        return []
    fields = [_u32(info, at) for at in (_TCPI_RTT, _TCPI_RCV_RTT)]
    return [micros / 1e6 if micros else None for micros in fields if micros is not None]


def kernel_receiving(sock: socket.socket | None) -> tuple[int | None, float | None]:
    """What the kernel says of the data it receives on this connection (Linux; None where it does not say): the
    packets received out of order, ever (kernel_out_of_order_packets), and the receiver's own round trip estimate
    in seconds (tcpi_rcv_rtt: from the data as it arrives, so the link's queue included)."""
    info = _tcp_info(sock)
    if info is None:
        return None, None
    rcv_rtt = _u32(info, _TCPI_RCV_RTT)
    return _u32(info, _TCPI_RCV_OOOPACK), (rcv_rtt / 1e6 if rcv_rtt else None)


def kernel_out_of_order_packets(sock: socket.socket | None) -> int | None:
    """How many data packets this connection has received out of order, ever (Linux 5.4+; None where the kernel
    does not say). Packets received beyond a hole wait in the kernel, unreadable, until the hole is filled: a rise
    since the body's last readable bytes means its quiet is a loss the server is recovering, with data behind it
    that closing the connection would throw away (body_stall.py)."""
    return kernel_receiving(sock)[0]
