"""How many requests one origin may have unanswered at once across its connections (pure, no I/O).

Pipelining lets the helper ask for far more than the link can carry in a round trip. The server then
answers on every connection at once: on a slow link four connections' initial TCP windows
(4 × 10 segments ≈ 58 kB) reach the bottleneck together, overflow a drop-tail queue and cost
retransmission timeouts. Responses asked for beyond about two bandwidth-delay products only wait in
queues, so, like BBR's window (2 × bottleneck bandwidth × minimum RTT), the origin's unanswered
responses are bounded by 2 × (the highest delivery rate seen recently) × (the smallest connect time
seen), never below a floor of about two initial TCP windows. Until anything was delivered, and on
links whose round trip is under 10 ms (a LAN, loopback: any burst drains within milliseconds), the
per-connection pipelining rules (origin_policy.py) are the only bound; every connection may always
have one request out."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

FLOOR_BYTES = 32 * 1024  # about two initial TCP windows (RFC 6928: 10 segments)
GAIN = 2.0  # the window in bandwidth-delay products
# An h2 connection's receive window in bandwidth-delay products: the queue of a slow link may hold no more than
# one BDP (the engine benchmark's does), and 2 BDP of DATA plus its TLS, TCP and IP overhead overflowed it.
H2_GAIN = 1.5
RATE_WINDOW_RTTS = 0.5  # a delivery-rate sample counts the bytes delivered over this many minimum RTTs
MIN_RTT = 0.010  # seconds: below this round trip the origin is not bounded
RATE_MEMORY_RTTS = 10.0  # the highest sample of this many minimum RTTs is the bandwidth estimate
# The link's rate for link_bdp is counted over this many minimum RTTs: one read that gathered what arrived while the
# event loop was busy elsewhere must not pass for a burst of the link's (over half a round trip it made W-CDMA's
# 19 kB per round trip look like four first flights: 96 kB).
LINK_WINDOW_RTTS = 2.0
# A delivery whose receiver's round trip exceeds this many smallest round trips came through a queue: the link is
# full, whatever rate the page's reads show (on W-CDMA, 384 kbit/s at 400 ms, reads ran at twice the link's rate
# for most of a second while the receiver's round trip was 0.8-1.2 s; over `sat` a page's load kept it within 1 %
# of 600 ms). The link's estimate (link_bdp) is what it carries with room to spare, so those deliveries count for no
# peak: pieces and a spread flight only pay where slow start, not the link, is what the page waits on.
QUEUED_RTT_FACTOR = 1.5


@dataclass
class _Delivered:
    """The bytes delivered over a sliding span of time (the last `span` seconds before the newest delivery), and
    the time they took to come."""

    _arrivals: deque[tuple[float, int]] = field(default_factory=deque)
    _bytes: int = 0
    _before: float | None = None  # the newest arrival that left the span

    def add(self, t: float, nbytes: int, span: float) -> int:
        """Count nbytes delivered at t; the bytes delivered in (t - span, t]."""
        self._arrivals.append((t, nbytes))
        self._bytes += nbytes
        while self._arrivals[0][0] <= t - span:
            self._before = self._arrivals[0][0]
            self._bytes -= self._arrivals.popleft()[1]
        return self._bytes

    def took(self, t: float, span: float) -> float:
        """How long the bytes in (t - span, t] took to come: since the arrival before them, at least `span`."""
        return span if self._before is None else max(span, t - self._before)


@dataclass
class InflightBudget:
    floor_bytes: int = FLOOR_BYTES
    min_rtt: float | None = None  # seconds: the smallest TCP connect time seen (SYN → SYN-ACK)
    _deliveries: _Delivered = field(default_factory=_Delivered)  # over the rate window
    _rates: deque[tuple[float, float]] = field(default_factory=deque)  # (time, bytes per second), remembered
    _responses: int = 0
    _response_bytes: int = 0
    peak_rate: float = 0.0  # bytes per second: the highest delivery rate of the session over LINK_WINDOW_RTTS
    _link_deliveries: _Delivered = field(default_factory=_Delivered)  # over the link's window

    def observe_rtt(self, seconds: float) -> None:
        if seconds > 0 and (self.min_rtt is None or seconds < self.min_rtt):
            self.min_rtt = seconds

    def received(self, t: float, nbytes: int, released: bool = False, loaded_rtt: float | None = None) -> None:
        """nbytes of responses arrived at time t (monotonic seconds), on any of the origin's connections. released:
        they were received over the last round trips and held by the kernel beyond a lost segment until its
        retransmission filled the hole, so they count for no rate: as one arrival they passed for a burst of the
        link's. loaded_rtt: the receiver's round trip (the kernel's, from the data as it arrives: the link's queue
        included) when they came, if known; see link_bdp."""
        if self.min_rtt is None or nbytes <= 0 or released:
            return
        window = RATE_WINDOW_RTTS * self.min_rtt
        rate = self._deliveries.add(t, nbytes, window) / window
        while self._rates and (self._rates[-1][1] <= rate or self._rates[0][0] < t - RATE_MEMORY_RTTS * self.min_rtt):
            if self._rates[-1][1] <= rate:
                self._rates.pop()
            else:
                self._rates.popleft()
        self._rates.append((t, rate))  # rates stay in decreasing order: the first is the maximum
        # The link's rate: bytes that come at once after a quiet spell were on their way through it (held beyond a
        # lost segment, behind a busy event loop or a starved link emulator, in a radio link's burst), so they are
        # counted over the time since the arrival before them, never as a burst of the link's.
        link_window = LINK_WINDOW_RTTS * self.min_rtt
        got = self._link_deliveries.add(t, nbytes, link_window)
        if loaded_rtt is None or loaded_rtt <= QUEUED_RTT_FACTOR * self.min_rtt:
            self.peak_rate = max(self.peak_rate, got / self._link_deliveries.took(t, link_window))

    def link_bdp(self) -> int | None:
        """The link's bandwidth-delay product as far as seen (bytes): the session's highest delivery rate over
        LINK_WINDOW_RTTS × the smallest round trip; None before anything was delivered."""
        if self.min_rtt is None or self.peak_rate <= 0:
            return None
        return int(self.peak_rate * self.min_rtt)

    def response_done(self, wire_bytes: int) -> None:
        """A response of wire_bytes (head and body as sent) completed: its size feeds the mean."""
        self._responses += 1
        self._response_bytes += max(0, wire_bytes)

    def best_rate(self, t: float) -> float:
        """The highest delivery rate (bytes per second) of the last RATE_MEMORY_RTTS minimum RTTs; 0 if none."""
        if self.min_rtt is None:
            return 0.0
        while len(self._rates) > 1 and self._rates[0][0] < t - RATE_MEMORY_RTTS * self.min_rtt:
            self._rates.popleft()
        return self._rates[0][1] if self._rates else 0.0

    def budget_bytes(self, t: float) -> int:
        if self.min_rtt is None:
            return self.floor_bytes
        return max(self.floor_bytes, int(GAIN * self.best_rate(t) * self.min_rtt))

    def h2_window(self, t: float, unbounded: int, connections: int = 1, roomy_bdp: int | None = None) -> int:
        """The cap on what the server may have outstanding on one of the origin's `connections` h2 connections
        (receive_window.py): H2_GAIN × the best delivery rate × the minimum round trip, at least the floor, shared
        equally among them (the origin's delivery rate is one link's: each connection capping at all of it would
        let them together overflow its queue); `unbounded` while no round trip is known or on a link too short to
        overflow a queue (as for the budget). `roomy_bdp`: the link's bandwidth-delay product as remembered for
        the origin (OriginPolicy.link_bdp, a lower bound: what it carried with room to spare), given only where it
        is roomy (pool_plan.BALANCE_BDP); the cap is then never below H2_GAIN times it. The best delivery rate
        counts what the server had to send: after a page's document alone (9 kB over `sat`) it held the flight that
        followed at the floor, and django-tutorial07's scripts ended two round trips after they were asked where
        the browser's own took one. A queue that held H2_GAIN × a lower bound of the link's BDP would have to be
        shallower than half a BDP to overflow."""
        if self.min_rtt is None or self.min_rtt < MIN_RTT:
            return unbounded
        floor = self.floor_bytes if roomy_bdp is None else max(self.floor_bytes, int(H2_GAIN * roomy_bdp))
        return max(floor, int(H2_GAIN * self.best_rate(t) * self.min_rtt)) // max(1, connections)

    def max_unanswered(self, t: float) -> int | None:
        """Requests the origin may have unanswered now; None while nothing was delivered yet or the link is short."""
        if self._responses == 0 or self.min_rtt is None or self.min_rtt < MIN_RTT:
            return None
        mean = max(1, self._response_bytes // self._responses)
        return max(1, self.budget_bytes(t) // mean)
