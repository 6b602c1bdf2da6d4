"""The asyncio shell around one H2Session (h2_session.py): one TLS connection on which the server chose h2.

It has Connection's outward shape (connection.py's Carrier: run(), open, carries(), abort(), abandon(), the
same ConnectionOwner), so the pool treats both alike; unlike an HTTP/1.1 connection it takes every request the
pool offers while the peer's stream limit allows (`take` until none), and a request that is cancelled has only
its stream reset. All decisions live in h2_session.py; this moves bytes, time and sink calls.

Backpressure: events are handled one at a time and the sink is awaited before the next read, and received data
is acknowledged to the server only once the sink took it, so a slow consumer slows the server (for the whole
connection: its streams share one reader).

A server whose SETTINGS allow no stream (MAX_CONCURRENT_STREAMS 0) may raise the limit soon (RFC 9113 §5.1.2:
it should hold 0 only briefly), so the connection waits for that, but no longer than a stall (`stall_timeout`)
while the pool has work queued: PINGs or other frames keep a connection alive without answering anything, and
the requests otherwise waited for their total timeout. Then it goes (GOAWAY) with `refused` set, and the pool
fails its queue with that reason unless another connection serves it (OriginPool.connection_closed): a new
connection to the same server would be refused alike. Nothing was sent for the queued requests, so none is
retried or sent twice."""

from __future__ import annotations

import asyncio
import contextlib

from .connection import ConnectionOwner
from .errors import FetchError
from .exchange import Exchange
from .h2_session import WINDOW, H2Event, H2Request, H2Session, StreamFailed, StreamsReturned
from .pipeline import ConnectionEnded, ResponseBody, ResponseComplete, ResponseStarted
from .pool_plan import roomy_bdp
from .request import urgency
from .timing import ConnectionInfo, ConnectTiming, now
from .transport import Transport

READ_SIZE = 64 * 1024


class H2Connection:
    def __init__(self, pool: ConnectionOwner, conn_id: int, transport: Transport, timing: ConnectTiming) -> None:
        self.pool = pool
        self.id = conn_id
        self.session: H2Session[Exchange] = H2Session()
        self.wakeup = asyncio.Event()
        self.transport: Transport | None = transport
        self.connect_timing = timing
        self._first_request = True
        self._last_activity = now()
        self._taking = 0  # requests taken from the pool for the streams about to open
        self._taking_bytes = 0  # and their answers' expected bytes
        self._starved_since: float | None = None  # since when work waits and the server allows no stream
        self.refused: FetchError | None = None  # why it went without taking the work (the server allows no stream)
        self.received = 0  # bytes read from the server so far (TLS payload): how far its window grew (h2_for_reserve)

    @property
    def open(self) -> bool:
        return self.transport is not None and not self.session.ended

    @property
    def draining(self) -> bool:
        """Takes no new streams (GOAWAY, or ended): the pool opens another connection for new work."""
        return self.session.closing or self.session.ended

    @property
    def responses_completed(self) -> int:
        return self.session.responses_completed

    def unanswered(self) -> int:
        return self.session.open_streams() + self._taking  # those being taken count: the pool's share rule

    def unanswered_bytes(self) -> int:
        """What its open streams' and the requests being taken's answers are expected to put on the link, as far as
        known (FetchRequest.link_bytes; unknown counts 0): the pool's share rule by bytes."""
        return sum(ex.request.link_bytes or 0 for ex in self.session.open_tokens()) + self._taking_bytes

    def open_classes(self) -> list[int]:
        """The priority classes (Exchange.sort_key's first) of its open streams' requests: the pool's render reserve
        rule (pool_plan.h2_for_reserve)."""
        return [ex.sort_key()[0] for ex in self.session.open_tokens()]

    def can_take(self, ex: Exchange) -> bool:
        return self.session.may_open(ex.method)

    def carries(self, ex: Exchange) -> bool:
        return self.session.carries(ex)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.writer.transport.abort()

    def abandon(self, ex: Exchange) -> None:
        """Nobody wants ex's answer: reset its stream (CANCEL); the other streams go on."""
        self.session.cancel(ex)
        self._flush()

    def evict(self) -> None:
        """Close it, idle, for room under the cap over all origins (pool_plan.room_under_cap): GOAWAY, then the
        socket (its read loop ends, and the pool hears of it as of any close)."""
        self.session.close()
        self._flush()
        if self.transport is not None:
            self.transport.close()

    @property
    def last_activity(self) -> float:
        return self._last_activity

    async def run(self) -> None:
        assert self.transport is not None
        self.pool.connection_opened(self)
        self.session.cap = self._cap(now())
        self.session.start(now())
        # The queued requests go in the same write as the preface (RFC 9113 §3.4: a client may send frames right
        # after it, before the server's SETTINGS): one TLS record, no event-loop turn between them.
        unsent = self._send_batch()
        self._flush()
        for ev in unsent:
            await self._handle(ev)
        self.wakeup.set()
        sender = asyncio.create_task(self._send_loop(), name=f"lanefetch-h2-send-{self.id}")
        try:
            await self._read_loop()
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            self.transport.close()
            if self.session.open_streams():
                await self._handle(self.session.abort("connection closed"))
            self.session.ended = True
            await self.pool.connection_closed(self)

    def _cap(self, t: float) -> int:
        """What the server may have outstanding on this connection (receive_window.py), from the origin's delivery
        rate and round trip, shared with the origin's other h2 connections that have streams open; the session's
        full window where the config turns the cap off."""
        unbounded = WINDOW
        if not self.pool.config.h2_receive_cap:
            return unbounded
        return self.pool.budget.h2_window(t, unbounded, self.pool.h2_receiving(), roomy_bdp(self.pool.policy.link_bdp))

    def _flush(self) -> None:
        data = self.session.data_to_send()
        if data and self.transport is not None and not self.transport.writer.is_closing():
            self.transport.writer.write(data)

    def _send_batch(self) -> list[H2Event[Exchange]]:
        """Open a stream for each request the pool hands over (in its priority order) while the session may, into
        the session's outgoing bytes (the caller writes them); returns, as events to handle, the taken requests
        that got no stream (a taken request must never be lost)."""
        assert self.transport is not None
        batch: list[H2Request[Exchange]] = []
        room = self.session.stream_room()
        while len(batch) < room and self.session.can_open() and (ex := self.pool.take(self)) is not None:
            if ex.target is None:
                continue
            u, incremental = urgency(ex.request)
            batch.append(H2Request(ex, ex.method, ex.target.origin.scheme, ex.target.origin.authority(),
                                   ex.target.path, ex.wire_request.headers, ex.wire_request.body, u, incremental))
            self._taking = len(batch)
            self._taking_bytes += ex.request.link_bytes or 0
        self._taking = self._taking_bytes = 0
        if not batch:
            return []
        t = now()
        outcome = self.session.send(batch, t)
        sent = outcome.streams
        for req, sid, depth in sent:
            ex = req.token
            ex.connection = ConnectionInfo(
                id=self.id, local_address=self.transport.local_address,
                remote_address=self.transport.remote_address, interface=self.transport.interface,
                reused=not self._first_request, pipeline_position=(sid + 1) // 2, pipeline_depth=depth,
                protocol="h2", stream_id=sid,
            )
            if self._first_request:
                ex.timing.take_connect(self.connect_timing)
                self._first_request = False
            ex.timing.sent = t
        self.session.ping(t)  # a fresh RTT sample per batch (one PING out at a time)
        self._last_activity = t
        # Sending raised for these (the session returns them as not processed, GET/HEAD to send again).
        events: list[H2Event[Exchange]] = [outcome.returned] if outcome.returned is not None else []
        # Not expected (only what can_open allowed was taken), but never lost: nothing of them went out.
        done = {id(req.token) for req, _, _ in sent}
        if outcome.returned is not None:
            done |= {id(ex) for ex in (*outcome.returned.retry, *outcome.returned.failed)}
        unsent = [r.token for r in batch if id(r.token) not in done]
        if unsent:
            events.append(ConnectionEnded("no stream to send it on", None, unsent))
        return events

    async def _send_loop(self) -> None:
        assert self.transport is not None
        while not self.session.ended:
            await self.wakeup.wait()
            self.wakeup.clear()
            unsent = self._send_batch()
            try:
                self._flush()
                await self.transport.writer.drain()
            except (OSError, RuntimeError):
                for ev in unsent:  # taken but on no stream: they are not the read loop's to re-queue
                    await self._handle(ev)
                return  # the read loop sees the broken connection and re-queues
            for ev in unsent:
                await self._handle(ev)

    async def _read_loop(self) -> None:
        assert self.transport is not None
        cfg = self.pool.config
        while not self.session.ended:
            settings_seen = self.session.settings_changed
            try:
                data = await asyncio.wait_for(self.transport.reader.read(READ_SIZE), cfg.stall_timeout)
            except TimeoutError:
                if self.session.open_streams():
                    await self._handle(self.session.abort("no data from the server in time"))
                elif self._starved(now()):
                    self._refuse_work()
                elif now() - self._last_activity > cfg.idle_timeout:
                    self.session.close()
                    self._flush()
                    self.session.ended = True
                continue
            except (OSError, asyncio.IncompleteReadError) as e:
                await self._handle(self.session.abort(f"connection error: {e}"))
                continue
            t = now()
            self._last_activity = t
            if data:
                self.received += len(data)
                self.pool.delivered(t, len(data))
                self.session.cap = self._cap(t)
                events = self.session.receive(data, t)
            elif self.transport.reader.transport_error is not None:
                events = [self.session.abort(f"connection error: {self.transport.reader.transport_error}")]
            else:
                events = self.session.receive_eof()
            if self.session.rtt is not None:
                self.pool.budget.observe_rtt(self.session.rtt)
            for ev in events:
                await self._handle(ev)
            # A stream that got nothing for a stall while the connection lives (PINGs, other streams) is reset and
            # asked again on a new connection (body_stall.starved_streams).
            if (starved := self.session.starved(t, cfg.stall_timeout)) is not None:
                self._flush()
                await self._handle(starved)
            if self.session.settings_changed != settings_seen:
                self.wakeup.set()  # the stream limit may have grown (or is known at last): send what waits
            if self._starved(t):
                self._refuse_work()
            self._flush()

    def _starved(self, t: float) -> bool:
        """Has work waited a stall's time (stall_timeout) for a stream the server's SETTINGS would not allow?"""
        if not self.session.refuses_streams() or not self.pool.queued():
            self._starved_since = None
            return False
        if self._starved_since is None:
            self._starved_since = t
        return t - self._starved_since >= self.pool.config.stall_timeout

    def _refuse_work(self) -> None:
        """Go (GOAWAY, NO_ERROR: none of our streams is open) and tell the pool why the work was not taken."""
        self.refused = FetchError("connect_failed", f"the server allowed no HTTP/2 streams (SETTINGS_MAX_CONCURRENT_"
                                                    f"STREAMS 0) for {self.pool.config.stall_timeout:g} s")
        self.session.close()
        self._flush()
        self.session.ended = True

    async def _handle(self, ev: H2Event[Exchange]) -> None:
        if isinstance(ev, ResponseStarted):
            ex = ev.token
            if ex.timing.first_byte is None:
                ex.timing.first_byte = now()
            await ex.start_response(ev.head, ev.framing)
            if ex.finished:
                self.abandon(ex)  # cancelled meanwhile, or the sink refused the head
        elif isinstance(ev, ResponseBody):
            ex = ev.token
            await ex.body(ev.data)
            self.session.consumed(ex, len(ev.data))  # the sink took it: the server may send that much more
            if ex.finished:
                self.abandon(ex)
        elif isinstance(ev, ResponseComplete):
            self.pool.budget.response_done(ev.wire_bytes)
            await ev.token.complete(ev.trailers, ev.wire_bytes)
            self.pool.request_finished()
        elif isinstance(ev, StreamFailed):
            await ev.token.fail(FetchError("protocol_error", ev.reason))
            self.pool.request_finished()
        elif isinstance(ev, StreamsReturned):
            await self.pool.not_processed(self, ev.reason, ev.retry, ev.failed)
        elif isinstance(ev, ConnectionEnded):
            await self.pool.connection_ended(self, ev)
        self.wakeup.set()
