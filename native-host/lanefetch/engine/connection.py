"""The asyncio shell around one PipelineConnection: writes what the pool hands it, reads responses,
and turns the state machine's events into exchange calls. All decisions live in pipeline.py.

The protocol is decided after the TLS handshake: when the server chose h2 (ALPN), this connection hands its
transport to the pool (`serve_h2`), which runs it as an H2Connection (h2_connection.py) in its place; both
have the outward shape `Carrier` describes, so the pool and the engine treat them alike."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Protocol

from .address_policy import address_space_of
from .body_stall import cut_now, may_cut
from .bulk_window import BulkWindow
from .config import EngineConfig
from .errors import FetchError
from .exchange import Exchange
from .inflight_budget import InflightBudget
from .origin_policy import OriginPolicy
from .pipeline import (
    ConnectionEnded,
    Event,
    PipelineConnection,
    ResponseBody,
    ResponseComplete,
    ResponseStarted,
    ResponsesVerified,
)
from .pool_plan import Warmth, warmed
from .request import Origin, serialize
from .response_check import Expectation
from .timing import ConnectionInfo, ConnectTiming, now
from .transport import Transport, kernel_loaded_rtts, kernel_min_rtt, kernel_out_of_order_packets, kernel_receiving


class Carrier(Protocol):
    """What the pool and the engine see of a connection, HTTP/1.1 (Connection) or HTTP/2 (H2Connection)."""

    id: int
    pool: ConnectionOwner
    wakeup: asyncio.Event
    transport: Transport | None
    connect_timing: ConnectTiming

    @property
    def open(self) -> bool: ...
    @property
    def responses_completed(self) -> int: ...
    def unanswered(self) -> int: ...
    def carries(self, ex: Exchange) -> bool: ...
    def abort(self) -> None: ...
    def abandon(self, ex: Exchange) -> None: ...
    def evict(self) -> None: ...
    @property
    def last_activity(self) -> float: ...
    async def run(self) -> None: ...


class ConnectionOwner(Protocol):
    """What a connection needs from the pool that owns it (pool.py): work, the origin's shared state, and where
    to report its life. Declared here so the connection depends on this, not on the pool."""

    origin: Origin
    config: EngineConfig
    policy: OriginPolicy
    budget: InflightBudget

    def take(self, conn: Carrier) -> Exchange | None: ...
    def queued(self) -> int: ...
    def delivered(self, t: float, nbytes: int, released: bool = False, loaded_rtt: float | None = None) -> None: ...
    def link_quiet(self, t: float, loopback: bool) -> float: ...
    def carries_bulk(self, conn: Carrier) -> bool: ...
    def h2_receiving(self) -> int: ...
    async def open_transport(self, timing: ConnectTiming) -> Transport: ...
    async def serve_h2(self, conn: Connection, transport: Transport) -> None: ...
    def connection_opened(self, conn: Carrier) -> None: ...
    def connection_idle(self) -> None: ...
    async def connection_failed(self, conn: Carrier, error: FetchError) -> None: ...
    async def connection_ended(self, conn: Carrier, ended: ConnectionEnded[Exchange]) -> None: ...
    async def not_processed(self, conn: Carrier, reason: str, again: list[Exchange], failed: list[Exchange]) -> None:
        ...
    async def connection_closed(self, conn: Carrier) -> None: ...
    def request_finished(self) -> None: ...

READ_SIZE = 64 * 1024
BODY_STALL_POLL = 0.25  # seconds between looks at a body that may be cut for a stall (body_stall.py)


class Connection:
    def __init__(self, pool: ConnectionOwner, conn_id: int) -> None:
        self.pool = pool
        self.id = conn_id
        self.state: PipelineConnection[Exchange] = PipelineConnection()
        self.wakeup = asyncio.Event()
        self.transport: Transport | None = None
        self.connect_timing = ConnectTiming()
        self._first_request = True
        self._last_activity = now()
        self._last_read = self._last_activity  # when the last response bytes were read (body_stall.py)
        self._out_of_order_at_read: int | None = None  # the kernel's out-of-order packet count then (body_stall.py)
        self._loopback_peer = False  # the server is on loopback: then loopback is the link (host_link.py)
        self._bulk_window = BulkWindow()
        self.warmth = Warmth()  # the server's estimated window on this connection (pool_plan: warmest first)
        self._aborted = False  # we dropped it (abort): the end of stream the read loop then sees is ours

    @property
    def open(self) -> bool:
        return self.transport is not None and not self.state.ended

    def carries(self, ex: Exchange) -> bool:
        """Is this exchange's answer owed by this connection (in flight, or held complete)?"""
        return any(f.token is ex for f in self.state.in_flight) or any(r.token is ex for r in self.state.unverified)

    @property
    def responses_completed(self) -> int:
        return self.state.responses_completed

    def unanswered(self) -> int:
        return len(self.state.in_flight)

    def abort(self) -> None:
        """Drop the connection now (RST): the read loop ends, and what it owed goes back to the pool."""
        if self.transport is not None:
            self._aborted = True
            self.transport.writer.transport.abort()

    def abandon(self, ex: Exchange) -> None:
        """Nobody wants ex's answer, which must not be read to its end: HTTP/1.1 can only drop the connection
        (what was pipelined behind it is retried elsewhere)."""
        self.abort()

    def evict(self) -> None:
        """Close it, idle, for room under the cap over all origins (pool_plan.room_under_cap): no request more."""
        self.state.stop_sending()
        self.abort()

    @property
    def last_activity(self) -> float:
        return self._last_activity

    async def run(self) -> None:
        try:
            self.transport = await self.pool.open_transport(self.connect_timing)
        except Exception as e:  # anything else too: a task that died silently left its origin's requests waiting
            if not isinstance(e, FetchError):
                logging.getLogger("lanefetch.engine").exception("connection %d to %s", self.id, self.pool.origin)
                e = FetchError("internal", f"cannot connect to {self.pool.origin}: {e!r}")
            self.state.ended = True
            await self.pool.connection_failed(self, e)
            return
        _log_opened(self.id, self.pool.origin, self.connect_timing, self.transport.alpn)
        if self.transport.alpn == "h2":
            # The server chose HTTP/2: the pool runs this transport as an H2Connection in this one's place.
            transport, self.transport = self.transport, None
            self.state.ended = True
            await self.pool.serve_h2(self, transport)
            return
        self._loopback_peer = self._peer_on_loopback()
        self.pool.connection_opened(self)
        self.wakeup.set()
        sender = asyncio.create_task(self._send_loop(), name=f"lanefetch-send-{self.id}")
        try:
            await self._read_loop()
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            self.transport.close()
            # Whatever is still in flight (cancelled mid-read) goes back to the pool.
            if self.state.in_flight or self.state.unverified:
                await self._handle(self.state.abort("connection closed"))
            self.state.ended = True
            await self.pool.connection_closed(self)

    async def _send_loop(self) -> None:
        assert self.transport is not None
        while not self.state.ended:
            await self.wakeup.wait()
            self.wakeup.clear()
            batch: list[Exchange] = []
            while (ex := self.pool.take(self)) is not None:
                expect = Expectation.of(ex.method, ex.wire_request.headers, ex.request.resource_type, ex.request.url)
                flight = self.state.sent(ex, ex.method, expect)
                ex.connection = ConnectionInfo(
                    id=self.id,
                    local_address=self.transport.local_address,
                    remote_address=self.transport.remote_address,
                    interface=self.transport.interface,
                    reused=not self._first_request,
                    pipeline_position=flight.position,
                    pipeline_depth=flight.depth,
                )
                if self._first_request:
                    ex.timing.take_connect(self.connect_timing)
                    self._first_request = False
                batch.append(ex)
            if not batch:
                continue
            try:
                wire = b"".join(serialize(ex.wire_request, ex.target) for ex in batch if ex.target)
                self.transport.writer.write(wire)
                await self.transport.writer.drain()
            except (OSError, RuntimeError):
                return  # the read loop sees the broken connection and re-queues
            t = now()
            for ex in batch:
                ex.timing.sent = t
            self._last_activity = t

    async def _read_loop(self) -> None:
        assert self.transport is not None
        cfg = self.pool.config
        while not self.state.ended:
            # Idle with answers held: listen only for the sync interval (pipeline.py), then prove them.
            syncing = not self.state.in_flight and bool(self.state.unverified)
            # A body that may be cut for a stall (body_stall.py) is looked at every BODY_STALL_POLL seconds.
            cuttable = not syncing and self._body_may_be_cut()
            try:
                data = await asyncio.wait_for(
                    self.transport.reader.read(READ_SIZE),
                    cfg.sync_quiet if syncing else BODY_STALL_POLL if cuttable else cfg.stall_timeout)
            except TimeoutError:
                if self.state.in_flight and syncing:
                    continue  # a request went out during the short sync wait: listen again, for the stall timeout
                t = now()
                # One look at the link's quiet per poll: it reads the host's counters (host_link.py).
                link_quiet = self.pool.link_quiet(t, self._loopback_peer) if self.state.in_flight and cuttable \
                    else None
                if link_quiet is not None and self._body_stalled(t, link_quiet):
                    stopped = self.state.in_flight[0].token
                    stopped.body_stall_cuts += 1
                    logging.getLogger("lanefetch.engine").info(
                        "connection %d to %s: %s stopped mid-body for %.1f s (the link quiet for %.1f s); "
                        "its rest is asked elsewhere", self.id, self.pool.origin, stopped.request.url,
                        t - self._last_read, link_quiet)
                    await self._handle(self.state.body_stalled())
                elif self.state.in_flight and cuttable and t - self._last_read < cfg.stall_timeout:
                    continue
                elif self.state.in_flight:
                    await self._handle(self.state.stalled())
                elif self.state.unverified:
                    for ev in self.state.quiet():
                        await self._handle(ev)
                elif now() - self._last_activity > cfg.idle_timeout:
                    self.state.stop_sending()
                    self.state.ended = True
                continue
            except (OSError, asyncio.IncompleteReadError) as e:
                for ev in self.state.reset(f"connection error: {e}"):
                    await self._handle(ev)
                continue
            t = now()
            self._last_activity = t
            released, loaded_rtt = False, None
            if data:
                self._last_read = t
                # Packets received beyond a hole since the last read: this read's bytes (some of them) waited in the
                # kernel for the hole's retransmission; they came over the last round trips, not now.
                held_before = self._out_of_order_at_read
                self._out_of_order_at_read, loaded_rtt = kernel_receiving(self._socket())
                released = (held_before is not None and self._out_of_order_at_read is not None
                            and self._out_of_order_at_read > held_before)
            if data and self.state.in_flight:
                front = self.state.in_flight[0]
                if front.token.timing.first_byte is None:
                    front.token.timing.first_byte = t
            if data:
                self.pool.delivered(t, len(data), released, loaded_rtt)
                if self.pool.config.separate_bulk:
                    self._clamp_bulk_window(t, len(data))
                events = self.state.receive(data)
            elif self._aborted:
                # Our own abort reads as an end of stream: not the server's close, which would end a body that
                # runs to the close (delivered as complete, cut short) and prove the answers held.
                events = [self.state.abort("closed by lanefetch")]
            elif self.transport.reader.transport_error is not None:
                events = self.state.reset(f"connection error: {self.transport.reader.transport_error}")
            else:
                events = self.state.receive_eof()
            for ev in events:
                await self._handle(ev)

    def _body_may_be_cut(self) -> bool:
        """May the front response be cut if its body stays quiet (body_stall.may_cut)?"""
        return (self.pool.config.body_stall_cut and bool(self.state.in_flight) and self.transport is not None
                and may_cut(self.state.in_flight[0].token.body_progress()))

    def _body_stalled(self, t: float, link_quiet: float) -> bool:
        """Has the front response's body been quiet long enough to be cut (body_stall.cut_now), the link quiet for
        `link_quiet` s?"""
        sock = self._socket()
        now_held, at_read = kernel_out_of_order_packets(sock), self._out_of_order_at_read
        held = None if now_held is None or at_read is None else max(0, now_held - at_read)
        return cut_now(t - self._last_read, link_quiet, self.pool.config.body_stall_min,
                       [self.pool.budget.min_rtt, *kernel_loaded_rtts(sock)], held)

    def _peer_on_loopback(self) -> bool:
        """Is the server on loopback (address_policy's address spaces), as its socket says once it is open?"""
        sock = self._socket()
        try:
            return sock is not None and address_space_of(str(sock.getpeername()[0])) == "loopback"
        except (OSError, ValueError, IndexError, TypeError):
            return False

    def _socket(self) -> socket.socket | None:
        """The connection's socket (asyncio's view of it: getsockopt works), for the kernel's TCP_INFO."""
        if self.transport is None:
            return None
        sock: socket.socket | None = self.transport.writer.get_extra_info("socket")
        return sock

    def _end_if_used_up(self) -> None:
        """Used up (its request cap reached, every answer in): end it now so the pool opens a fresh one instead
        of waiting for the idle timeout; once its held answers are proven, so they are not dropped with it."""
        if self.state.at_request_cap():
            self.state.stop_sending()
            if not self.state.unverified:
                self.state.ended = True

    def _clamp_bulk_window(self, t: float, nbytes: int) -> None:
        """While this connection carries a bulk response, keep its receive window near the link's BDP
        (bulk_window.py): the link stays busy, but other requests over it do not queue behind the download."""
        if self.transport is None or not hasattr(socket, "TCP_WINDOW_CLAMP"):
            return
        sock = self.transport.writer.get_extra_info("socket")
        min_rtt = kernel_min_rtt(sock) or self.pool.budget.min_rtt
        bulk = self.pool.carries_bulk(self)
        self._bulk_window.received(t, nbytes, min_rtt, bulk)
        if not bulk:
            return
        window = self._bulk_window.next_window(t, min_rtt)
        if window is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, window)

    async def _handle(self, ev: Event[Exchange]) -> None:
        if isinstance(ev, ResponseStarted):
            ex = ev.token
            if ex.timing.first_byte is None:
                ex.timing.first_byte = now()
            await ex.start_response(ev.head, ev.framing, held=ev.held)
        elif isinstance(ev, ResponseBody):
            await ev.token.body(ev.data)
        elif isinstance(ev, ResponseComplete):
            self.pool.policy.on_response(ev.head, ev.framing, ev.keep_alive, ev.pipelined)
            if self.state.request_cap is not None and ev.position == 1:
                self.pool.policy.learn_request_limit(self.state.request_cap)
            self.pool.budget.response_done(ev.wire_bytes)
            t = now()
            self.warmth = warmed(self.warmth, ev.token.timing.first_byte or t, t, ev.wire_bytes,
                                 self.pool.budget.min_rtt)
            await ev.token.complete(ev.trailers, ev.wire_bytes)
            self._end_if_used_up()
            self.pool.request_finished()
        elif isinstance(ev, ResponsesVerified):
            for done in ev.responses:
                await done.token.release()
            self._end_if_used_up()
            if not self.state.in_flight and not self.state.unverified:
                self.pool.connection_idle()
        elif isinstance(ev, ConnectionEnded):
            await self.pool.connection_ended(self, ev)
        # a response finished or the connection ended: the sender may have room, the pool may re-plan
        self.wakeup.set()


def _log_opened(conn_id: int, origin: Origin, t: ConnectTiming, alpn: str | None) -> None:
    """Debug: when a connection's handshakes ran (monotonic ms), so a load's timeline shows what its first requests
    waited for."""
    def ms(x: float | None) -> str:
        return "-" if x is None else str(round(x * 1000))
    notes = (" (held)" if t.held else "") + (" (resumed)" if t.tls_resumed else "")
    logging.getLogger("lanefetch.engine").debug(
        "conn %d to %s open: dns %s-%s, tcp %s-%s, tls end %s%s, alpn %s", conn_id, origin, ms(t.dns_start),
        ms(t.dns_end), ms(t.connect_start), ms(t.connect_end), ms(t.tls_end), notes, alpn)
