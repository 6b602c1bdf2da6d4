"""Engine settings. Defaults suit a page load over a slow link; the CLI and tests override them."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class EngineConfig:
    connections_per_origin: int = 6  # as the browsers: what a page waiting on an origin gets from them
    # Open connections over all origins (pool_plan.room_under_cap): at the cap an idle connection of another origin
    # is closed for room, else the work waits. Chromium's socket pool allows 256 too; each is a file descriptor.
    max_connections: int = 256
    pipeline_depth: int = 16  # the most requests in flight on one connection once the origin is proven
    pipelining: bool = True
    # Offer HTTP/2 in TLS (ALPN h2): an origin that takes it gets one multiplexed connection (h2_connection.py);
    # http:// origins always speak HTTP/1.1.
    http2: bool = True
    # Keep an origin's unanswered responses near two BDPs (inflight_budget.py). Off by default: it removes the
    # queue drops on slow links but in real Chromium it cost more than it saved (docs/performance.md).
    inflight_budget: bool = False
    # Keep what an h2 server may have outstanding near 1.5 BDPs with the connection's receive window
    # (receive_window.py): on a slow link with a shallow queue its slow start otherwise overshoots and drops.
    h2_receive_cap: bool = True
    # h2 connections per origin where its round trip is long (pool_plan.h2_connection_count; one on a short one):
    # two start their slow starts at twice the initial window, what a long fat link needs (engine benchmark over
    # h2, docs/performance.md); three overflowed its queue. 1: one always, as browsers do.
    h2_connections: int = 2
    separate_bulk: bool = True  # nothing is pipelined behind a large response; others get a connection (pool.py)
    connect_timeout: float = 15.0
    stall_timeout: float = 15.0  # no byte for this long with requests outstanding: give up on the connection
    # A response that stopped mid-body for three loaded round trips, at least body_stall_min, is cut and its rest
    # asked by Range on another connection where that loses nothing (body_stall.py): a lost segment otherwise
    # waits for the server's doubled retransmission timer (10 s and more on a slow link).
    body_stall_cut: bool = True
    # 2 s cut answers in ordinary fast recovery on wcdma (a loaded round trip there is up to 1.4 s and the kernel's
    # estimates run below it): 9 of 15 loads cut, 3–14 % more downlink bytes, apache-rewrite 0.85× (performance.md).
    body_stall_min: float = 4.0
    idle_timeout: float = 30.0  # close a connection idle this long
    # An idle connection silent this long owes no response: the pipelined answers it held are in step
    # (pipeline.py). A shifted pipeline's owed response follows the last one at once (the server wrote it
    # already), so this need not cover a round trip, only the server's gap between two writes.
    sync_quiet: float = 0.03
    total_timeout: float = 300.0  # one request, queue to last byte
    max_retries: int = 3
    dns_ttl: float = 60.0
    ca_file: str | None = None  # tests only: trust exactly this CA instead of the system store
    interface: str | None = None  # a lane's engine: the interface its sockets leave by (reported in timing)
    socket_setup: Callable[[socket.socket], None] | None = None  # ... and how a socket is bound to it

    @property
    def effective_depth(self) -> int:
        return self.pipeline_depth if self.pipelining else 1
