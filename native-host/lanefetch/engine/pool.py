"""Per-origin pool: a priority queue of exchanges and up to N connections that pull from it.

The pool spreads work evenly (a connection takes no more than its fair share of what is
outstanding, so the last responses do not all queue behind one connection), pipelines nothing behind
a response still carrying a bulk body (the request goes on another connection, and the bulk one's
receive window is clamped near the link's BDP, bulk_window.py: bulk never blocks small), opens
connections while there is work, re-queues what a broken connection did not answer, and fails the
queue only when no connection can be had at all.

HTTP/2 is a second kind of connection under the same pool: when a TLS handshake chooses h2, the connection
hands its transport over (`serve_h2`) and an H2Connection runs in its place. The origin's policy remembers
the protocol, so an h2 origin gets one connection, or two on a long link (pool_plan.connection_limit) that share
the queued requests within their stream limits and one receive-window cap; depth, bulk and budget are HTTP/1.1
pipelining matters and do not apply to them."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import heapq
import logging
import ssl
import time
import weakref
from collections.abc import Sequence
from typing import Protocol

from .address_policy import AddressSpace, may_connect
from .config import EngineConfig
from .connection import Carrier, Connection
from .errors import FetchError
from .exchange import Exchange
from .h2_connection import H2Connection
from .host_link import HostLink
from .host_names import AddrInfo, answered_here, resolve
from .inflight_budget import LINK_WINDOW_RTTS, InflightBudget
from .origin_policy import OriginPolicy, PipelineState
from .pipeline import ConnectionEnded
from .pool_plan import (
    BALANCE_BDP,
    LONG_BYTES,
    RENDER_BLOCKING,
    Ahead,
    Bin,
    Candidate,
    Evictable,
    Handshake,
    Packing,
    allowed_depth,
    asked_bytes,
    balanced_taker,
    balances,
    behind_lone_leader,
    beside_reserve_takes,
    bin_for,
    carries_bulk,
    connection_limit,
    connections_ahead,
    connections_to_open,
    cooled,
    drains_soon,
    expected_long,
    follows_unknown_font,
    h2_for_reserve,
    h2_may_take,
    h2_opens_late,
    h2_render_reserve,
    h2_reserve_beside,
    h2_reserve_from_opening,
    left_to_come,
    long_answer,
    may_join,
    may_wait_for_draining,
    may_wait_for_settling,
    mixes_fonts,
    over_budget,
    packing_taker,
    pipelining_taker,
    preconnect_plan,
    preferred_taker,
    receiving,
    takes_now,
    window_ceiling,
    window_for,
)
from .request import Origin
from .response_check import Expectation, may_prove_by_exclusion
from .session_tickets import SessionTickets
from .timing import ConnectTiming, now
from .transport import Transport, offers_sessions, open_transport

log = logging.getLogger("lanefetch.engine")

# How long the reserve beside a document's connection waits for that connection's TLS ticket, in round trips
# (OriginPool._await_ticket): it comes one round trip after the ALPN the reserve waited for.
RESUME_WAIT_RTTS = 1.5
RESUME_WAIT_FLOOR_S = 0.25  # (the reserve is opened only where the round trip is long or not known yet)
Weighed = tuple[dict[int, Connection], list[Bin]]  # the connections by id, and their bins (OriginPool._weighed)


class PoolOwner(Protocol):
    """What a pool needs from the engine that owns it (engine.py): settings, connection ids, and where to report
    connections opening and closing (the batch's connection counts, the round-trip samples)."""

    config: EngineConfig
    last_arrival: float  # when response bytes last arrived on any of the engine's connections (monotonic s)
    host_link: HostLink  # the host's interfaces: has the link been quiet, not only the engine's connections?

    def next_connection_id(self) -> int: ...
    def tls_context(self) -> ssl.SSLContext: ...
    def tcp_connected(self, origin: Origin, timing: ConnectTiming, policy: OriginPolicy) -> None: ...
    def policy_changed(self, policy: OriginPolicy) -> None: ...
    def connection_opened(self, conn: Carrier) -> None: ...
    def connection_closed(self, conn: Carrier) -> None: ...
    # The cap over all origins and engines (connection_cap.py, shared by every engine of the helper).
    def admit(self, pool: OriginPool, wanted: int, wait: bool = True, evict: bool = True) -> int: ...
    def connection_counted(self, pool: OriginPool, conn_id: int) -> None: ...
    def connection_released(self, pool: OriginPool, conn_id: int) -> None: ...
    def room_may_have_come(self) -> None: ...
    def pool_closed(self, pool: OriginPool) -> None: ...



class OriginPool:
    def __init__(
        self, engine: PoolOwner, origin: Origin, address_space: AddressSpace, policy: OriginPolicy,
        tls: ssl.SSLContext | None,
    ) -> None:
        self.engine = engine
        self.config: EngineConfig = engine.config
        self.origin = origin
        self.address_space = address_space
        self.policy = policy
        self.tls = tls
        self.connections: set[Connection | H2Connection] = set()
        # Connections opened once the origin was known to speak h2 and another was up (take: no share).
        self._opened_late: weakref.WeakSet[Connection] = weakref.WeakSet()
        # The id of the h2 connection a page's document opened beside its own for render-blocking work
        # (pool_plan.h2_render_reserve); it keeps its id when its TLS handshake makes it an H2Connection.
        self._render_reserve: int | None = None
        # The reserve opened beside the document's connection to an origin of unknown protocol (pool_plan.
        # h2_reserve_beside): it asks for TLS records as the first does and resumes the first's session, so its
        # handshake waits for the first's ticket (at most RESUME_WAIT_RTTS round trips; _await_ticket).
        self._resumes_first: ConnectTiming | None = None
        self._ticket_seen: asyncio.Event | None = None
        self.budget = InflightBudget()
        self._queue: list[tuple[tuple[int, int, int, int], Exchange]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._dns: tuple[float, list[tuple[int, tuple[object, ...]]]] | None = None
        self._dns_lock = asyncio.Lock()
        self._ahead = False  # a preconnect waits for the TLS handshake's protocol to open the rest
        self._deferred: set[Connection] = set()  # refused the queue's head for a warmer idle connection
        # A flight's balanced work that pool_plan.balanced_taker gave to a connection still busy with render-blocking
        # answers: it waits there for that connection, by id, while the queue goes on for the others.
        self._reserved: dict[int, list[Exchange]] = {}
        # Set once the origin's connections are needed (work came, or a `full` preconnect): a connection opened
        # by a `tcp` preconnect holds its TLS handshake until then (pool_plan.preconnect_plan).
        self._needed = asyncio.Event()
        # Over TLS to an origin whose protocol is not known yet, the first connection's handshake says it; those
        # opened with it hold their TLS handshake until then (_await_protocol).
        self._alpn_first: ConnectTiming | None = None
        self._protocol_known = asyncio.Event()
        self.protocol_waits = 0  # connections that held their TLS handshake for another's ALPN (for the tests)
        # The TLS sessions this pool's connections received, for its next connections to resume (one pool per
        # origin, address space and top-level site: partitioned as the browser's own session cache).
        # Kept apart by whether their connection asked for small records: a session resumed by a connection that
        # does not ask the same makes OpenSSL fail the handshake (the server answers with the session's
        # max_fragment_length: "unsolicited extension").
        self._tickets: dict[bool, SessionTickets[ssl.SSLSession]] = {False: SessionTickets(), True: SessionTickets()}
        # A connection of this pool asks for small TLS records (tls_records.py): the first one opened while none is,
        # which carries a page's document and first wave; cleared when the pool has no connection left.
        self._small_records_asked = False
        self._closing = False  # aclose: connections that end now are not replaced
        # A connect failed while other connections were up (connection_failed): the bulk rule opens no other for
        # the waiting work until something changes (work comes, a connection opens or closes). It asks at every
        # piece of a bulk body, and a server refusing new connections got a connect per piece, for work that
        # waits for the bulk connection anyway.
        self._connect_failed_beside = False
        # Connections in a row that ended with work queued and no answer completed (reset by any answer): a server
        # that ends every connection right after its preface (or refuses them with a GOAWAY) otherwise got a new
        # one for as long as work waited, and work no connection took (a POST waits for an h2 server's SETTINGS)
        # until its total timeout (connection_closed).
        self._fruitless = 0

    # -- work in ------------------------------------------------------------------------------------------

    def submit(self, ex: Exchange) -> None:
        heapq.heappush(self._queue, (ex.sort_key(), ex))
        self._connect_failed_beside = False
        self._needed.set()
        self._plan()
        if ex.request.resource_type != "document":
            return
        have_one = self._reserve() is not None
        # a reserve is a second h2 connection: only where the origin may have two (pool_plan.connection_limit)
        h2_connections = min(self.config.h2_connections, self.config.connections_per_origin)
        if h2_render_reserve(self.policy.protocol if self._may_speak_h2() else None, h2_connections,
                             self.budget.min_rtt, have_one):
            serving = [c for c in self.connections if not _draining(c)]
            if len(serving) < self._limit() and self.engine.admit(self, 1, wait=False):
                self._render_reserve = self._open().id  # after _plan: the document's own connection is opened first
            elif free := [c.id for c in serving if not c.unanswered()]:
                # The origin has its connections already (a page's preconnect opened them all): the newest that
                # carries nothing yet is the reserve, as h2_reserve_from_opening adopts one. Opened beside them, the
                # reserve took the origin over its limit (Firefox preconnects a page's origin in full).
                self._render_reserve = max(free)
        elif h2_reserve_from_opening(self._may_speak_h2(), self.policy.protocol, h2_connections,
                                     self.budget.min_rtt, have_one, len(self.connections)):
            # The last opened: the first's handshake says the protocol and takes the document (a reserve that turns
            # out HTTP/1.1 is an ordinary connection: only h2 connections consult it).
            self._render_reserve = max(c.id for c in self.connections)
        elif (h2_reserve_beside(self._may_speak_h2(), self.policy.protocol, h2_connections, self.budget.min_rtt,
                                have_one, len(self.connections))
              and sum(not _draining(c) for c in self.connections) < self._limit()
              and self.engine.admit(self, 1, wait=False)):
            # Only the document's connection (Chromium's preconnect opens one): one beside it, its TLS handshake
            # after the first's ALPN (_await_protocol) and its ticket (_await_ticket), the reserve should the origin
            # speak h2.
            beside = self._open()
            self._render_reserve, self._resumes_first = beside.id, beside.connect_timing

    def _requeue(self, ex: Exchange) -> None:
        # A retried request keeps its place: same sort key as when it first came.
        heapq.heappush(self._queue, (ex.sort_key(), ex))

    def queued(self) -> int:
        return sum(1 for _, ex in self._queue if not ex.finished) + sum(
            1 for waiting in self._reserved.values() for ex in waiting if not ex.finished)

    def outstanding(self) -> int:
        return self.queued() + sum(c.unanswered() for c in self.connections)

    def delivered(self, t: float, nbytes: int, released: bool = False, loaded_rtt: float | None = None) -> None:
        """nbytes of answers arrived at time t on one of the origin's connections: the in-flight budget's rate, and
        the link's bandwidth-delay product the origin's policy keeps (remembered across sessions). released: the
        kernel held them beyond a hole until now; loaded_rtt: the receiver's round trip as they came
        (inflight_budget.received)."""
        self.budget.received(t, nbytes, released, loaded_rtt)
        if self._ticket_seen is not None and not self._ticket_seen.is_set() and self._first_ticket():
            self._ticket_seen.set()  # (a TLS 1.3 ticket is read with the answer's first bytes)
        self.engine.last_arrival = max(self.engine.last_arrival, t)
        bdp = self.budget.link_bdp()
        if bdp is not None and (self.policy.link_bdp is None or bdp > self.policy.link_bdp):
            if bdp >= BALANCE_BDP > (self.policy.link_bdp or 0):
                # Once per origin and session: the estimate that lets a flight's answers come in pieces, and why.
                log.info(
                    "%s: the link carries %d bytes per round trip (%.0f bytes/s at its best over %.2f s, round trip "
                    "%.3f s)", self.origin, bdp, self.budget.peak_rate, LINK_WINDOW_RTTS * (self.budget.min_rtt or 0),
                    self.budget.min_rtt or 0)
            self.policy.link_bdp = bdp

    # -- connections pull -----------------------------------------------------------------------------------

    def take(self, conn: Carrier) -> Exchange | None:
        if isinstance(conn, Connection) and conn.id in self._reserved:
            if self.carries_bulk(conn):
                # Its answer turned out bulk (larger than the page's earlier loads said): bulk never blocks small,
                # what waited for it goes back to the queue for the others (it waited for the whole body there).
                self._release_reserved(conn)
                for c in self.connections:
                    c.wakeup.set()
                return self._take_h1(conn)  # (takes nothing: opens a connection for the work, if it may)
            mine = self._take_reserved(conn)
            if mine is not None:
                return mine
        while self._queue and self._queue[0][1].finished:
            heapq.heappop(self._queue)  # cancelled while queued
        if not self._queue:
            return None
        if isinstance(conn, H2Connection):
            reserve = self._reserve()
            if reserve is not None and not any(c is not reserve and not _draining(c) for c in self.connections):
                # The only connection left (the other closed or draining; or the round trip proved short and no
                # second is opened): an ordinary one again, else the work it does not take would wait for none.
                self._render_reserve = None
                reserve = None
            if reserve is not None and not isinstance(reserve, H2Connection):
                reserve = None  # still in its handshakes: the others take everything meanwhile
            if reserve is not None:
                # The render reserve takes render-blocking work that would otherwise queue behind other work's
                # bytes, and its share of what the others are free for (pool_plan.h2_for_reserve); the others defer
                # that to it, and it takes nothing else.
                head = self._queue[0][1]
                to_reserve = h2_for_reserve(head.sort_key()[0], (
                    (c.session.can_open(), c.open_classes(), c.unanswered(), c.received, c.unanswered_bytes())
                    for c in self.connections
                    if isinstance(c, H2Connection) and c is not reserve and not _draining(c)), reserve.unanswered(),
                    reserve.received,
                ) and (reserve.connect_timing is not self._resumes_first
                       or beside_reserve_takes(head.request.resource_type))
                if conn is reserve:
                    if not to_reserve or not conn.can_take(head):
                        return None
                    for c in self.connections:
                        if c is not conn:
                            c.wakeup.set()  # the queue's next head may be theirs
                    return heapq.heappop(self._queue)[1]
                if to_reserve and reserve.session.can_open():
                    reserve.wakeup.set()
                    return None
            # Streams multiplex: no depth, no bulk, no order to keep; only the peer's stream limit, and with
            # several h2 connections configured, this one's share (pool_plan.h2_share) among those up and those
            # opened with them. One opened once the origin was known to speak h2 and another was up (its TCP and
            # TLS handshakes still ahead) has no share kept for it: the open one takes the work (over `sat` a second
            # connection opened at the first's ALPN held an @import stylesheet and the page's images 1.2-1.8 s
            # while the first had room: flask-tutorial's first visit a round trip slower than the browser alone).
            if self.config.h2_connections > 1:
                serving = [c for c in self.connections
                           if not _draining(c) and c not in self._opened_late and c.id != self._render_reserve]
                outstanding = self.queued() + sum(c.unanswered() for c in serving)
                up = [c for c in serving if isinstance(c, H2Connection)]
                sized = self._queue[0][1].request.link_bytes is not None
                # The least loaded among those that may open a stream now (one at the server's stream limit would
                # otherwise hold every other back until its streams end); only a sized request is taken by bytes.
                least = min((c.unanswered_bytes() for c in up if c is conn or c.session.can_open()),
                            default=0) if sized else 0
                if not h2_may_take(conn.unanswered(), outstanding, conn.unanswered_bytes(), least, len(serving),
                                   sized, handshaking=len(up) < len(serving)):
                    return None
            return heapq.heappop(self._queue)[1] if conn.can_take(self._queue[0][1]) else None
        assert isinstance(conn, Connection)
        taken = self._take_h1(conn)
        if taken is not None or not self._queue or self._queue[0][1].sort_key()[0] == RENDER_BLOCKING:
            return taken  # render-blocking work waits for a connection: nothing goes past it
        return self._balanced_behind(conn)

    def _take_h1(self, conn: Connection) -> Exchange | None:
        """take() for an HTTP/1.1 connection, by the queue's head (the pool's rules: module docstrings)."""
        if self.carries_bulk(conn):
            if not self._connect_failed_beside:
                self._open_for_work()  # bulk never blocks small: the request waits for (or gets) another connection
            return None
        ex = self._queue[0][1]
        if self.policy.request_limit is not None:
            cap = self.policy.request_limit
            conn.state.request_cap = cap if conn.state.request_cap is None else min(conn.state.request_cap, cap)
        # A flight's images (and their pieces) are spread over the connections by bytes (pool_plan.balanced_taker);
        # what goes to a connection busy with render-blocking answers waits for it there, not at the queue's head:
        # held at the head, it kept every later piece from the connections free now, a round trip each
        # (apache-rewrite's second visit on `sat`: four of its pieces sent at once, the other seven 0.62 s later).
        by_bytes = self._reserve_for_busy(ex)
        if by_bytes is None and not self._queue:
            return None
        ex = self._queue[0][1]
        if by_bytes is not None:
            if by_bytes is not conn:
                self._deferred.add(conn)  # that connection takes it now
                by_bytes.wakeup.set()
                return None
            return self._pop() if self._may_add_known(conn, ex.method) else None  # the budget checked there
        # A flight's small answers share a busy connection where all of it comes in one flight, and leave the idle
        # ones to answers that need more round trips (pool_plan.fits_first_flight).
        packer = self._packer(ex)
        if packer is not None and packer is not conn:
            self._deferred.add(conn)  # a busy connection takes it into its first flight (pool_plan.packing_taker)
            packer.wakeup.set()
            return None
        packs = packer is conn
        taker = None if packs else self._preferred_taker(ex)
        if taker is None and not packs:
            # None is idle: the warmest that may pipeline it takes it (pool_plan.pipelining_taker).
            taker = self._pipelining_taker(ex, conn)
            if taker is conn:
                return self._pop_for(conn)  # _may_add said yes for it there
        if taker is not None and taker is not conn:
            # Warmest first (pool_plan.preferred_taker): that one takes it (a draining one once its answer is in:
            # request_finished wakes it); this one is woken again when the queue's next request is up.
            self._deferred.add(conn)
            taker.wakeup.set()
            return None
        return self._pop_for(conn) if self._may_add(conn, ex, packs) else None

    def _may_add(self, conn: Connection, ex: Exchange, packs: bool = False, laying_out: bool | None = None) -> bool:
        """May conn take ex now: its depth (packed answers come in one flight: the fair share, which keeps a batch's
        last answers from queueing behind one connection, does not bound them; pool_plan.allowed_depth) and, where
        it carries answers, the pipelining rules (pool_plan.may_join)? The in-flight budget is _pop_for's.
        `laying_out`: _laying_out() where the caller already has it (asking for every connection in turn)."""
        depth = allowed_depth(self.policy.allowed_depth(), self.config.effective_depth,
                              None if packs else self.outstanding(), len(self.connections))
        if not conn.state.can_send(ex.method, depth):
            return False
        aboard = self._aboard(conn)
        carried = {x.sort_key()[0] for x in aboard}
        # On a connection that carries nothing may_join always says yes: the scans of the queue and of every
        # connection for render-blocking work are paid only when a request would be pipelined.
        if not carried or packs:
            return True
        idle = sum(1 for c in self.connections if c is not conn and isinstance(c, Connection) and c.open
                   and not c.state.in_flight and not c.state.unverified)
        long_here = long_answer((f.token.timing.sent for f in conn.state.in_flight), now(), self.budget.min_rtt) \
            or expected_long(f.token.request.link_bytes for f in conn.state.in_flight)
        # A font and other work would share the pipeline (fonts go with fonts only, or behind a lone stylesheet), or
        # a font would wait behind a font whose size is not known.
        in_flight = [f.token.request.resource_type for f in conn.state.in_flight]
        held = [r.token.request.resource_type for r in conn.state.unverified]
        # what it carries went out with nothing before it, as a request whose answer may prove its place by
        # exclusion (a conditional stylesheet's never does: it would be held behind the font or image)
        sent_alone = all(f.depth == 1 and may_prove_by_exclusion(f.expect) for f in conn.state.in_flight)
        font = mixes_fonts(in_flight, held, ex.request.resource_type, self.policy.link_bdp, sent_alone) \
            or follows_unknown_font([(f.token.request.resource_type, f.token.request.link_bytes)
                                     for f in conn.state.in_flight], ex.request.resource_type)
        # An image behind a lone stylesheet or script: that answer still streams to the page at once.
        asked = asked_bytes(ex.request.link_bytes,
                            Expectation.of(ex.method, ex.request.headers, ex.request.resource_type).byte_range)
        after_leader = behind_lone_leader(in_flight, held, ex.request.resource_type, self.policy.link_bdp, sent_alone,
                                          asked)
        return may_join(carried, ex.sort_key()[0], idle, long_here,
                        self._laying_out() if laying_out is None else laying_out, font, after_leader)

    def _pop_for(self, conn: Connection) -> Exchange | None:
        """The queue's head for conn, unless the origin has asked for enough answers already (the in-flight budget)."""
        budget = self.budget.max_unanswered(now()) if self.config.inflight_budget else None
        if over_budget(len(conn.state.in_flight), sum(c.unanswered() for c in self.connections), budget):
            return None
        return self._pop()

    def _pop(self) -> Exchange:
        """The queue's head, taken; connections that deferred to its taker look at the next one."""
        ex = heapq.heappop(self._queue)[1]
        if self._deferred and self._queue:
            for c in self._deferred:
                c.wakeup.set()
            self._deferred.clear()
        return ex

    def _reserve_for_busy(self, ex: Exchange) -> Connection | None:
        """From the queue's head on, balanced work whose taker is busy with render-blocking answers goes to that
        connection's reserve; returns the balanced taker of the new head, which may take it now, or None when the head
        is not balanced work or the queue is empty."""
        for _ in range(len(self._queue)):
            balanced = self._balanced_taker(ex)
            if balanced is None:
                return None
            if balanced[1]:
                return balanced[0]
            heapq.heappop(self._queue)
            self._reserved.setdefault(balanced[0].id, []).append(ex)
            while self._queue and self._queue[0][1].finished:
                heapq.heappop(self._queue)
            if not self._queue:
                return None
            ex = self._queue[0][1]
        return None

    def _balanced_behind(self, conn: Connection) -> Exchange | None:
        """A flight's balanced work queued behind a head that waits (the browser's own images, not pipelined while
        the page lays out, which queue_order puts ahead of a flight's known sizes), for a connection that carries a
        non-balanced answer the head could not go behind and is ready for balanced work by its window
        (pool_plan.comes_within_window): the first such request whose balanced taker is conn, taken out of the
        queue; None if there is none. A connection with only balanced work aboard takes none this way, so that it
        drains and goes to the head's request as before. Only the head's balanced work was weighed
        (_reserve_for_busy): rust-book-print's first visit on `sat` had the rest of four large images wait 0.63 s
        behind five of its SVG icons for the document's connection, ready for them 0.35 s into that wait (the page's
        icon font's head in)."""
        if self._balance_ready(self._aboard(conn)) or not self._may_add_known(conn, "GET"):
            return None
        weighed = self._weighed()  # once, for a whole piece: shared by the requests weighed here
        if not any(b.id == conn.id and b.load is not None and b.ready for b in weighed[1]):
            return None
        for item in sorted(self._queue):
            ex = item[1]
            chosen = None if ex.finished else self._balanced_taker(ex, weighed)
            if chosen is None or not chosen[1]:
                continue
            if chosen[0] is conn:
                self._queue.remove(item)
                heapq.heapify(self._queue)
                return ex
            chosen[0].wakeup.set()  # that one takes it now
        return None

    def _take_reserved(self, conn: Connection) -> Exchange | None:
        """The next exchange reserved for conn, once nothing render-blocking or of unknown size is aboard, or all
        of it is known and comes within its window (pool_plan.bin_for), and it may send it (depth, budget); None
        otherwise (it waits there)."""
        waiting = [x for x in self._reserved.get(conn.id, []) if not x.finished]
        if not waiting:
            self._reserved.pop(conn.id, None)
            return None
        self._reserved[conn.id] = waiting
        # free of what held it, or that comes soon (bin_for), weighed for this request (not counting it as aboard)
        size = waiting[0].request.link_bytes or 0
        weighed = self._bin(conn, now(), self.budget.min_rtt, size or LONG_BYTES, taking=waiting[0])
        if not takes_now(weighed, size) or not self._may_add_known(
                conn, waiting[0].method):
            return None
        ex = waiting.pop(0)
        if not waiting:
            del self._reserved[conn.id]
        return ex

    def _release_reserved(self, conn: Carrier) -> None:
        """A connection gone: what was reserved for it goes back to the queue, in its place."""
        for ex in self._reserved.pop(conn.id, []):
            if not ex.finished:
                self._requeue(ex)

    def _balanced_taker(self, ex: Exchange, weighed: Weighed | None = None) -> tuple[Connection, bool] | None:
        """The connection that should take ex by bytes (pool_plan.balanced_taker) and whether it may now; None where
        that rule does not apply: ex is not a flight's balanced work, or no connection may send more. `weighed`: the
        connections' bins where the caller has them (_weighed), else weighed now."""
        if not balances(ex.sort_key()[0], ex.request.link_bytes, self.policy.link_bdp):
            return None
        size = ex.request.link_bytes or 0
        # bins weighed for this request where none were given: room beside a warm connection's last bytes for it
        conns, bins = self._weighed(size or LONG_BYTES) if weighed is None else weighed
        taker = balanced_taker(bins, size)
        return None if taker is None else (conns[taker.id], takes_now(taker, size))

    def _weighed(self, incoming: int = LONG_BYTES) -> Weighed:
        """The origin's HTTP/1.1 connections by id and each one's Bin now (what balanced_taker weighs), for a request
        of link size `incoming` (a piece where the caller weighs several)."""
        t, rtt = now(), self.budget.min_rtt
        conns = {c.id: c for c in self.connections if isinstance(c, Connection)}
        return conns, [self._bin(c, t, rtt, incoming) for c in conns.values()]

    def _bin(self, c: Connection, t: float, rtt: float | None, incoming: int = LONG_BYTES,
             taking: Exchange | None = None) -> Bin:
        if not self._may_send_more(c) or self.carries_bulk(c):
            return Bin(c.id, None)
        aboard = self._aboard(c)
        sizes = left_to_come(((f.parser.body_remaining, f.token.request.link_bytes) for f in c.state.in_flight),
                             len(c.state.unverified))
        # the window as the warmest-first rules see it (cooled while idle, growing while receiving: _candidate)
        window = window_for(self._candidate(c, t, rtt).window, self.policy.link_bdp)
        # every answer aboard in step, its head in: what is pipelined behind it holds none of them back (bin_for)
        told = not c.state.unverified and all(f.parser.body_remaining is not None and not f.held
                                              for f in c.state.in_flight)
        b = dataclasses.replace(bin_for(c.id, sizes, self._balance_ready(aboard), window, told, incoming),
                                ceiling=window_ceiling(self.policy.link_bdp))
        # what waits in its reserve counts as aboard: in its load, and out of a window-ready bin's room
        held_back = sum(x.request.link_bytes or 0 for x in self._reserved.get(c.id, [])
                        if not x.finished and x is not taking)  # `taking`: the one being weighed out of it
        if b.load is None or not held_back:
            return b
        return dataclasses.replace(b, load=b.load + held_back, room=None if b.room is None else b.room - held_back)

    @staticmethod
    def _balance_ready(aboard: list[Exchange]) -> bool:
        """Nothing render-blocking and nothing of unknown size aboard: balanced work may be pipelined behind it."""
        return not any(x.sort_key()[0] == RENDER_BLOCKING or x.request.link_bytes is None for x in aboard)

    def _may_add_known(self, c: Connection, method: str) -> bool:
        """May c take one more of a flight's requests of known size now: its learned depth, without a fair share
        (pool_plan.allowed_depth: such answers come in one flight), and the in-flight budget?"""
        depth = allowed_depth(self.policy.allowed_depth(), self.config.effective_depth, None, len(self.connections))
        budget = self.budget.max_unanswered(now()) if self.config.inflight_budget else None
        return c.state.can_send(method, depth) and not over_budget(
            len(c.state.in_flight), sum(x.unanswered() for x in self.connections), budget)

    @staticmethod
    def _aboard(conn: Connection) -> list[Exchange]:
        """The exchanges whose answers conn has in flight or holds unverified (pipeline.py)."""
        return [f.token for f in conn.state.in_flight] + [r.token for r in conn.state.unverified]

    def _packer(self, ex: Exchange) -> Connection | None:
        """The busy connection that should take ex, of known size, into the same first flight as the answers it
        carries (pool_plan.packing_taker); None if none may."""
        if ex.request.link_bytes is None:
            return None
        conns = {c.id: c for c in self.connections if isinstance(c, Connection) and c.open and self._aboard(c)}
        taker = packing_taker((Packing(
            c.id, tuple(x.request.link_bytes for x in self._aboard(c)),
            self._may_send_more(c) and not self.carries_bulk(c) and self._may_add_known(c, ex.method))
            for c in conns.values()), ex.request.link_bytes)
        return None if taker is None else conns[taker]

    def _laying_out(self) -> bool:
        """Render-blocking work of the origin is queued or in flight: the page is still laying out."""
        return any(not q.finished and q.sort_key()[0] == RENDER_BLOCKING for _, q in self._queue) or any(
            f.token.sort_key()[0] == RENDER_BLOCKING for c in self.connections if isinstance(c, Connection)
            for f in c.state.in_flight)

    def _preferred_taker(self, ex: Exchange) -> Connection | None:
        """The connection that should take ex, the queue's head (pool_plan.preferred_taker), None if none is
        preferred. The scan for render-blocking work runs only when a draining connection could be waited for."""
        t, rtt = now(), self.budget.min_rtt
        conns = {c.id: c for c in self.connections if isinstance(c, Connection) and c.open}
        candidates = [self._candidate(c, t, rtt) for c in conns.values()]
        may_wait = any(c.draining for c in candidates) and may_wait_for_draining(ex.sort_key()[0], self._laying_out())
        taker = preferred_taker(candidates, may_wait, may_wait_for_settling(ex.sort_key()[0]))
        return None if taker is None else conns[taker]

    def _pipelining_taker(self, ex: Exchange, asker: Connection) -> Connection | None:
        """With none idle, the busy connection that should pipeline ex, the queue's head (pool_plan.pipelining_taker):
        of those that may take it now (not tied up by a bulk body, _may_add), the warmest; the asker among equals."""
        t, rtt, laying_out = now(), self.budget.min_rtt, self._laying_out()  # one scan of the queue, not one each
        conns = {c.id: c for c in self.connections if isinstance(c, Connection) and c.open}
        candidates = [dataclasses.replace(self._candidate(c, t, rtt), may_pipeline=not self.carries_bulk(c)
                                          and self._may_add(c, ex, laying_out=laying_out))
                      for c in conns.values()]
        taker = pipelining_taker(candidates, asker.id)
        return None if taker is None else conns[taker]

    def _candidate(self, c: Connection, t: float, rtt: float | None) -> Candidate:
        s = c.state
        if self._idle(c):
            return Candidate(c.id, True, cooled(c.warmth, t, rtt))
        front = s.in_flight[0] if s.in_flight else None
        if front is None and s.unverified and self._may_send_more(c):  # its answers in, their check's quiet to come
            return Candidate(c.id, False, cooled(c.warmth, t, rtt), settling=True)
        remaining = None if front is None or self.carries_bulk(c) else front.parser.body_remaining
        if front is None or remaining is None or front.token.timing.first_byte is None:
            return Candidate(c.id, False, cooled(c.warmth, t, rtt))
        window = receiving(c.warmth, front.token.timing.first_byte, front.parser.consumed, remaining, rtt)
        return Candidate(c.id, False, window,
                         drains_soon(len(s.in_flight), len(s.unverified), remaining, window) and self._may_send_more(c))

    def _idle(self, c: Connection) -> bool:
        """c carries nothing and may take any request now (PipelineConnection.can_send for an empty connection)."""
        return not c.state.in_flight and not c.state.unverified and self._may_send_more(c)

    def _may_send_more(self, c: Connection) -> bool:
        """c is not closing and below its request cap, the origin's learned request limit included."""
        s = c.state
        cap = self.policy.request_limit if s.request_cap is None else (
            s.request_cap if self.policy.request_limit is None else min(s.request_cap, self.policy.request_limit))
        return not s.closing and not s.ended and (cap is None or s.requests_sent < cap)

    # -- connection lifecycle --------------------------------------------------------------------------------

    def _plan(self) -> None:
        """Open connections while there is work for them; wake the open ones."""
        for c in self.connections:
            c.wakeup.set()
        self._open_for_work()

    def _open_for_work(self) -> None:
        # Under the cap over all origins (connection_cap.py): what cannot open now waits its turn in the cap's line,
        # which opens a connection at a time for it as room comes (take_turn); its open connections, if any, serve
        # its queue meanwhile.
        wanted = self._work_wants()
        for _ in range(self.engine.admit(self, wanted) if wanted else 0):
            self._open()

    def wanted(self) -> int:
        """How many more connections the queued work would take a turn in the cap's line for (connection_cap.
        CapMember): none after a connect failed beside connections that are up (they serve the queue; a turn at each
        connection freed elsewhere would be a connect each, as the bulk rule's were: connection_failed) until
        something changes (work comes, a connection opens or closes: the pool plans and asks again)."""
        return 0 if self._connect_failed_beside else self._work_wants()

    def _work_wants(self) -> int:
        """How many more connections the queued work calls for now."""
        # A connection busy with a bulk response neither takes work nor counts against the limit: at most
        # connections_per_origin serve the other requests, and bulk downloads get connections of their own.
        # An h2 connection that got a GOAWAY takes no new streams: it does not serve the queue either.
        # Nothing queued, nothing to open: what is in flight is owed by its own connection (a new one could take
        # none of it), and may be answers nobody wants any more (cancelled pieces a server holds); counted as work
        # when a connection ended, they opened one that took nothing and idled until its timeout.
        queued = self.queued()
        if not queued or self._closing or self._fruitless > self.config.max_retries:
            return 0  # (the last: connections kept ending before answering; connection_closed fails the queue)
        serving = [c for c in self.connections
                   if not self.carries_bulk(c) and not _draining(c)]
        limit = self._limit()
        if self.policy.protocol == "h2":
            up = [c for c in serving if isinstance(c, H2Connection)]
            room = sum(c.session.stream_room() for c in up)
            if not h2_opens_late(len(up), room, queued, self._limit(sized=False), limit):
                return 0  # the up connections take it now; a new one would be up two round trips later
        work = queued + sum(c.unanswered() for c in serving)
        return connections_to_open(len(serving), work, limit)

    def _may_speak_h2(self) -> bool:
        return self.tls is not None and self.config.http2

    def _limit(self, sized: bool = True) -> int:
        """Connections the origin may have serving it (pool_plan.connection_limit); `sized` False: not counting
        what the queued work's known bytes add (h2_connections_for)."""
        sized_bytes = sum(ex.request.link_bytes or 0 for _, ex in self._queue) \
            if sized and self.policy.protocol == "h2" else 0
        return connection_limit(self.config.connections_per_origin, self.policy.protocol, self._may_speak_h2(),
                                self.config.h2_connections, self.budget.min_rtt, sized_bytes, self.policy.link_bdp)

    def h2_receiving(self) -> int:
        """The origin's h2 connections that share its receive cap (h2_connection.py `_cap`): those with streams open
        (at least 1: the one asking). An idle one needs none of it: counted, it halved the cap of the one carrying
        a whole flight (rust-std's second visit over `sat`: the server's window grew 1.5x a round trip instead of
        slow start's 2x, and 615 kB took 4.4 s on a 10 Mbit/s link). Nor does the render reserve take a share
        (pool_plan.h2_render_reserve): it carries a few render-blocking answers for a round trip or so, and halving
        the flight's connection's cap for them would cost the flight more than they weigh."""
        return max(1, sum(1 for c in self.connections
                          if isinstance(c, H2Connection) and not c.draining and c.session.open_streams()
                          and c.id != self._render_reserve))

    def _reserve(self) -> Connection | H2Connection | None:
        """The render reserve (pool_plan.h2_render_reserve) while it is open and takes new streams."""
        if self._render_reserve is None:
            return None
        return next((c for c in self.connections if c.id == self._render_reserve and not _draining(c)), None)

    def carries_bulk(self, conn: Carrier) -> bool:
        """The connection is receiving a response with more than BULK_BYTES still to come: anything
        pipelined behind it would wait for all of that. (Never an h2 connection: its streams do not wait.)"""
        if not isinstance(conn, Connection):
            return False
        return carries_bulk((f.parser.body_remaining for f in conn.state.in_flight), self.config.separate_bulk)

    def preconnect(self, handshake: Handshake = "full", for_page: bool = True) -> bool:
        """Connect ahead of a page. `full`: as many connections as the origin may have serving it (pool_plan.
        connections_ahead), so the page's first wave finds them open instead of paying a handshake each, as the
        browser's own requests would on its warm document connection; a TLS origin whose protocol is not known yet
        gets one, and its handshake says whether the others follow (h2: none). `tcp`, to a TLS origin not known to
        speak HTTP/1.1 only: one connection whose TLS handshake waits until the origin's connections are needed
        (pool_plan.preconnect_plan; otherwise as `full`). `for_page` False: ahead of any page, where a plain-http
        origin no earlier load of the site used gets one connection, a round-trip probe. False when none was
        started."""
        # (known: its record was read, or this session judged its pipelining)
        known = self.policy.learned_at is not None or self.policy.state is not PipelineState.UNKNOWN
        plan = preconnect_plan(handshake, self.tls is not None, self.policy.protocol, for_page=for_page,
                               known=known)
        if plan is Ahead.ALL:
            self._needed.set()  # a held handshake goes on
            self._ahead = True
            return self._open_ahead()
        if self.connections:
            return False
        if not self.engine.admit(self, 1, wait=False, evict=False):
            return False  # no room under the cap over all origins: the page's work opens one when it comes
        if self._needed.is_set() and not self._queue:
            self._needed = asyncio.Event()  # needed before, and none left since: held again until needed anew
        self._open()
        return True

    def _open_ahead(self) -> bool:
        if self.policy.protocol is not None or not self._may_speak_h2():
            self._ahead = False  # the limit is final: nothing more to open once the handshake answers
        n = connections_ahead(len(self.connections), self._limit())
        # ahead of a page: only where there is room under the cap, never closing another origin's connection for it
        n = self.engine.admit(self, n, wait=False, evict=False) if n else 0
        for _ in range(n):
            self._open()
        return n > 0

    def _open(self) -> Connection:
        """A new connection, counted under the cap over all origins (admitted there by the caller: engine.admit)."""
        conn = Connection(self, self.engine.next_connection_id())
        self.connections.add(conn)
        self.engine.connection_counted(self, conn.id)
        if self.policy.protocol == "h2" and any(
                c.connect_timing.tls_end is not None and not _draining(c) for c in self.connections):
            # Late: another connection's handshakes are done and it can take the work now. Connections opened
            # together before any was up (a remembered h2 origin's preconnect) share it as equals: a second
            # visit's flight otherwise all went on the first to finish its handshake, 14 ms ahead of the other,
            # and the server's slow start had one initial window to grow from instead of two.
            self._opened_late.add(conn)
        task = asyncio.create_task(conn.run(), name=f"lanefetch-conn-{conn.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return conn

    async def _tcp_up(self, timing: ConnectTiming) -> None:
        """TCP is up: its connect time is the origin's round trip (reported now, not a TLS handshake later); a
        TLS handshake then waits until the origin's connections are needed, at most an idle connection's life, and
        until the origin's protocol is known if another connection's handshake is about to say it."""
        if timing.connect_start is not None and timing.connect_end is not None:
            self.budget.observe_rtt(timing.connect_end - timing.connect_start)  # the handshake is one round trip
        self.engine.tcp_connected(self.origin, timing, self.policy)
        if self.tls is None:
            return
        if not self._needed.is_set():
            needed = self._needed
            timing.held = True
            try:
                await asyncio.wait_for(needed.wait(), self.config.idle_timeout)
            except TimeoutError:
                if not needed.is_set():
                    raise FetchError("timeout", "a preconnected connection was not needed; closed unused") from None
        await self._await_protocol(timing)
        if timing is self._resumes_first:
            await self._await_ticket()

    def _first_ticket(self) -> bool:
        """Has a connection that asked for small TLS records (the pool's first) a session with a ticket now?"""
        return any(c.connect_timing.small_records and (tls := self._resumable_tls(c)) is not None
                   and tls.session is not None and tls.session.has_ticket for c in self.connections)

    async def _await_ticket(self) -> None:
        """The reserve beside the document's connection (pool_plan.h2_reserve_beside) resumes that connection's TLS
        session: a full handshake put ~2.5 kB more on the downlink (jinja-templates' first visit over `sat`: 1.021
        × the browser alone's, over issue 17's 1.02). A TLS 1.3 server sends its ticket right after the handshake,
        so it comes with the document's first bytes, a round trip after the ALPN this connection waited for; at most
        RESUME_WAIT_RTTS round trips are waited, then it handshakes in full."""
        if self.policy.protocol != "h2" or self._first_ticket():
            return
        if self._ticket_seen is None or self._ticket_seen.is_set():
            self._ticket_seen = asyncio.Event()
        seen = self._ticket_seen
        bound = max(RESUME_WAIT_FLOOR_S, RESUME_WAIT_RTTS * (self.budget.min_rtt or 1.0))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(seen.wait(), bound)

    async def _await_protocol(self, timing: ConnectTiming) -> None:
        """The origin's protocol is not known: the first connection to get here handshakes at once, and the others
        (opened with it: pool_plan.connection_limit counts what h2 would have) wait for its ALPN, their TCP already
        up, so only the TLS round trip is left. If it says h2 they go on as the origin's further h2 connections; if
        HTTP/1.1, as its HTTP/1.1 connections, no earlier than the ones it opens then (two connections starting
        their pipelined bursts together, before the protocol was known, lost the tail of a batch to a
        retransmission timeout on the engine benchmark over TLS: 2.0 → 2.5 s). A failed first handshake lets
        them go too; the wait is bounded by the connect timeout."""
        if self.policy.protocol is not None:
            return
        if self._alpn_first is None or self._alpn_first is timing:
            self._alpn_first = timing
            return
        known = self._protocol_known
        self.protocol_waits += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(known.wait(), self.config.connect_timeout)

    async def open_transport(self, timing: ConnectTiming) -> Transport:
        addresses = await self._resolve(timing)
        try:
            transport = await open_transport(
                addresses,
                server_hostname=self.origin.host if self.tls is not None else None,
                tls=self._current_tls(),
                timing=timing,
                connect_timeout=self.config.connect_timeout,
                interface=self.config.interface,
                setup=self.config.socket_setup,
                tcp_up=lambda: self._tcp_up(timing),
                session=self._session_to_offer,
                small_records=lambda: self._asks_small_records(timing),
            )
        finally:
            if self._alpn_first is timing:  # its handshake answered (or failed): the ones waiting for it go on
                self._alpn_first = None
                self._protocol_known.set()
                self._protocol_known = asyncio.Event()
        if self.tls is not None:
            known = self.policy.protocol
            self.policy.learn_protocol(transport.alpn)
            if known is None and (self.policy.protocol != "h2" or self.config.h2_connections > 1):
                self._plan()  # HTTP/1.1 (or several h2): the connections held back for the answer may open now
                if self._ahead:
                    self._open_ahead()  # and those a page's preconnect asked for
        return transport

    def _current_tls(self) -> ssl.SSLContext | None:
        """The context a connection about to be made uses: the engine's now, made again when the trust store
        changed (system_trust.py). The sessions received under an earlier one are dropped: a resumed handshake
        verifies no certificate chain, so one would carry an origin's old verdict past the change."""
        if self.tls is not None and (tls := self.engine.tls_context()) is not self.tls:
            self.tls = tls
            self._tickets = {False: SessionTickets(), True: SessionTickets()}
        return self.tls

    def _session_to_offer(self, small_records: bool) -> ssl.SSLSession | None:
        """The session a connection about to handshake offers: the newest its siblings (open or closed) that asked
        for small records as it does received."""
        for c in self.connections:
            self._keep_session(c)
        return self._tickets[small_records].take(time.time())

    def _asks_small_records(self, timing: ConnectTiming) -> bool:
        """Does the connection about to handshake ask for small TLS records? The pool's first one only, and the
        reserve that resumes its session (_await_ticket: a session is offered only to a connection asking as its
        own did)."""
        if timing is self._resumes_first:
            self._small_records_asked = True
            return True
        first, self._small_records_asked = not self._small_records_asked, True
        return first

    def _resumable_tls(self, conn: Carrier) -> ssl.SSLObject | None:
        """conn's TLS, if the pool's next connections may resume its session."""
        if conn.transport is None or conn.transport.tls is not self.tls or not offers_sessions(self.tls):
            return None  # (a connection made before the trust store changed: its session is not resumed)
        tls = conn.transport.writer.get_extra_info("ssl_object")
        return tls if isinstance(tls, ssl.SSLObject) else None

    def _keep_session(self, conn: Carrier) -> None:
        """Keep the TLS session conn holds now (its latest ticket), for the pool's next connections."""
        if (tls := self._resumable_tls(conn)) is not None and (session := tls.session) is not None:
            self._tickets[conn.connect_timing.small_records].keep(session, time.time(),
                                                                  reusable=tls.version() == "TLSv1.2")

    async def serve_h2(self, conn: Connection, transport: Transport) -> None:
        """conn's TLS handshake chose h2: run its transport as an H2Connection in its place (in conn's task)."""
        self.connections.discard(conn)
        h2 = H2Connection(self, conn.id, transport, conn.connect_timing)
        self.connections.add(h2)
        await h2.run()

    async def _resolve(self, timing: ConnectTiming) -> list[tuple[int, tuple[object, ...]]]:
        async with self._dns_lock:
            if self._dns is not None and now() - self._dns[0] < self.config.dns_ttl:
                return self._dns[1]
            timing.dns_start = now()
            loop = asyncio.get_running_loop()
            try:
                # IP literals and localhost names are answered without the resolver (host_names.py), and without a
                # turn of the loop: wait_for's task would let other work run between a connection's decision and
                # its connect (pieces planned for a connection found it not yet opening)
                here = answered_here(self.origin.host, self.origin.port)
                infos: Sequence[AddrInfo] = here if here is not None else await asyncio.wait_for(
                    resolve(self.origin.host, self.origin.port, loop.getaddrinfo), self.config.connect_timeout)
            except (OSError, TimeoutError, ValueError) as e:  # ValueError: UnicodeError of the resolver's IDNA step
                raise FetchError("dns_failed", f"cannot resolve {self.origin.host}: {e}") from None
            finally:
                timing.dns_end = now()
            allowed: list[tuple[int, tuple[object, ...]]] = [
                (fam, addr) for fam, _, _, _, addr in infos if may_connect(self.address_space, str(addr[0]))
            ]
            if not allowed:
                found = ", ".join(sorted({str(i[4][0]) for i in infos}))
                raise FetchError(
                    "blocked_address",
                    f"{self.origin.host} resolves to {found}; a {self.address_space} page may not reach "
                    "a more private address through the helper",
                )
            self._dns = (now(), allowed)
            return allowed

    def connection_opened(self, conn: Carrier) -> None:
        self._connect_failed_beside = False
        self.engine.connection_opened(conn)  # (its round trip was observed at TCP connect: _tcp_up)

    async def connection_failed(self, conn: Carrier, error: FetchError) -> None:
        self.connections.discard(conn)
        self.engine.connection_released(self, conn.id)
        if not self.connections:
            self._small_records_asked = False
        self._release_reserved(conn)
        if any(c.open or c.transport is None for c in self.connections):
            # Others are up or still connecting: they serve the queue, woken to look at it again (one may have
            # left a flight's work to this connection while it connected: pool_plan.balanced_taker counts it).
            self._connect_failed_beside = True
            for c in self.connections:
                c.wakeup.set()
            return
        if conn.connect_timing.held and self._queue:
            # Its TCP connection sat idle until work came, and a server may close one that sends nothing: a fresh
            # connection (never held: the work is here) gets the queue; only its own failure fails the requests.
            self._plan()
            return
        # Nobody can serve this origin: every queued request fails with the reason (and work that comes later tries
        # connections anew).
        self._fruitless = 0
        while self._queue:
            _, ex = heapq.heappop(self._queue)
            await ex.fail(error)

    async def connection_ended(self, conn: Carrier, ended: ConnectionEnded[Exchange]) -> None:
        before = (self.policy.state, self.policy.request_limit)
        self.policy.on_connection_ended(ended.misbehaviour, conn.responses_completed)
        if (self.policy.state, self.policy.request_limit) != before:
            self.engine.policy_changed(self.policy)  # kept now: the batches may all have returned (engine.py)
        # What a connection's end costs (a request asked again is asked of the server twice): the log says which,
        # so a load with paths asked twice can be traced to the end that caused it. Not the finished ones (cancelled
        # while their answers were owed): nothing more is done for them.
        costs = [(what, live) for what, exs in (("asked again:", ended.retry), ("held, asked again:", ended.suspect),
                                                ("failed:", ended.failed))
                 if (live := [ex for ex in exs if not ex.finished])]
        if costs and log.isEnabledFor(logging.INFO):
            log.info("connection %d to %s ended (%s): %s", conn.id, self.origin, ended.reason,
                     "; ".join(f"{what} {' '.join(ex.request.url for ex in exs)}" for what, exs in costs))
        for ex in ended.failed:
            await ex.fail(FetchError("connection_lost", f"{ended.reason}; {ex.method} is not retried"))
        for ex in ended.suspect:
            ex.withdraw()  # its held answer was never delivered: fetch it again like an unanswered request
        for ex in [*ended.suspect, *ended.retry]:
            if ex.may_retry():
                self._requeue(ex)
            else:
                await ex.fail(FetchError("connection_lost", f"{ended.reason} (after {ex.retries - 1} retries)"))
        if isinstance(conn, H2Connection) and conn.open and (ended.retry or ended.suspect):
            self._plan()  # it lives on, taking no new stream (a starved stream's GOAWAY): a new one takes them

    async def not_processed(self, conn: Carrier, reason: str, again: list[Exchange], failed: list[Exchange]) -> None:
        """The server did not process these (HTTP/2: refused, or above a GOAWAY's last stream id) and the
        connection lives on: `again` go back to the queue without counting a retry (while they may), `failed`
        (not GET/HEAD) fail."""
        for ex in failed:
            await ex.fail(FetchError("connection_lost", f"{reason}; {ex.method} is not sent again"))
        rest = [ex for ex in again if not ex.may_send_again()]
        for ex in again:
            if ex not in rest:
                self._requeue(ex)
        if rest:
            await self.connection_ended(conn, ConnectionEnded(reason, None, rest))
        self._plan()

    async def connection_closed(self, conn: Carrier) -> None:
        self._connect_failed_beside = False
        if conn.responses_completed == 0 and self.queued() and not self._closing:
            self._fruitless += 1
        self._keep_session(conn)
        self.connections.discard(conn)
        self.engine.connection_released(self, conn.id)
        if not self.connections:
            self._small_records_asked = False
        self._release_reserved(conn)
        self.engine.connection_closed(conn)
        if isinstance(conn, H2Connection) and conn.refused is not None:
            # It went because the server allowed no stream for a stall's time: a new connection to it would fare
            # no better, so none is opened for the queue; the others serve it, or it fails with that reason.
            await self.connection_failed(conn, conn.refused)
            return
        if self._fruitless > self.config.max_retries:
            # As many connections as a request has tries, each ended before answering anything: one more would
            # fare no better. Like a failed connect: the others serve the queue, or it fails with this reason.
            await self.connection_failed(conn, FetchError(
                "connection_lost", f"the server ended {self._fruitless} connections in a row before answering "
                                   "anything"))
            return
        self._plan()

    def link_quiet(self, t: float, loopback: bool) -> float:
        """Seconds since response bytes last arrived on any of the engine's connections and, where the host says,
        on its interfaces that carry a connection to a loopback peer or to any other (body_stall.py, host_link.py)."""
        host = self.engine.host_link.quiet(t, loopback)
        return t - self.engine.last_arrival if host is None else min(host, t - self.engine.last_arrival)

    def request_finished(self) -> None:
        self._fruitless = 0
        for c in self.connections:
            c.wakeup.set()
        self.engine.room_may_have_come()  # (nothing to do unless a pool waits for room under the cap)

    def connection_idle(self) -> None:
        """An HTTP/1.1 connection's held answers were proven and it carries nothing now: room for a waiting pool."""
        self.engine.room_may_have_come()

    def take_turn(self) -> bool:
        """Its turn in the cap's line (connection_cap.py): one connection for the work that waits for room."""
        if self.wanted() <= 0:
            return False
        self._open()
        return True

    def evictable(self) -> list[Evictable]:
        """Open connections that carry nothing and may take work, while nothing is queued here (pool_plan.Evictable):
        closing one for room under the cap loses nothing but its handshake."""
        if self.queued():
            return []
        return [Evictable(c.id, c.last_activity) for c in self.connections
                if c.open and not _draining(c) and not c.unanswered()
                and (not isinstance(c, Connection) or (not c.state.unverified and not c.state.closing))]

    def evict(self, conn_id: int) -> None:
        """Closed for room under the cap over all origins (connection_cap.py): it carries nothing and nothing is
        queued."""
        conn = next((c for c in self.connections if c.id == conn_id), None)
        if conn is None:
            return
        log.info("connection %d to %s closed for room under the cap on the helper's connections", conn.id,
                 self.origin)
        conn.evict()

    def stop_opening(self) -> None:
        """Its engine is closing (Engine.aclose): no connection is opened any more, not even a turn under the cap
        another closing pool's room would give it."""
        self._closing = True

    async def aclose(self) -> None:
        self._closing = True  # a connection that ends below (its task's cleanup) must not open another
        # Abort the sockets first: a read that completes just as its task is cancelled swallows the cancel
        # (asyncio.wait_for in Python 3.11), and the connection would read on until the server stops.
        for c in self.connections:
            c.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.engine.pool_closed(self)  # its room under the cap is the other pools' (a cancelled connect reports none)


def _draining(conn: Carrier) -> bool:
    """An h2 connection that got a GOAWAY (or ended): it takes no new streams, so it serves no queued work."""
    return isinstance(conn, H2Connection) and conn.draining

