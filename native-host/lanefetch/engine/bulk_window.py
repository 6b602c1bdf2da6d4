"""How far the server may run ahead on a connection carrying a bulk response (pure, no I/O).

A bulk download over a slow link keeps the bottleneck's drop-tail queue full: every other request over
that link, to any origin, then waits a queue's worth behind it (100 ms at 5 Mbit/s with a queue of one
bandwidth-delay product) and loses packets when it overflows. Clamping the bulk connection's TCP receive
window to a little more than the BDP keeps the link busy but the queue short (seed001-hol measures it).

The BDP is the connection's delivery rate, averaged over several round trips (single reads come in
bursts when the event loop was busy) once the bulk response has been arriving long enough to fill the
link, times the connection's smallest round trip; it is re-measured once per span. Later samples are
taken while the clamp is in force: with the window at HEADROOM × the measured BDP, a window below the
link's BDP measures a rate that sets the next one HEADROOM times larger, so it climbs back rather than
collapsing, and settles at HEADROOM × the link's BDP."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

HEADROOM = 1.3  # the window in BDPs: 30 % more than the estimate, a short standing queue at most
FLOOR_BYTES = 32 * 1024  # never below about two initial TCP windows
MIN_RTT = 0.010  # seconds: on shorter round trips any queue drains within milliseconds, nothing to clamp
SPAN_RTTS = 5  # the delivery rate is averaged over this many round trips ...
MIN_SPAN = 0.5  # ... and at least this many seconds
SETTLE_SPANS = 2  # spans of a bulk response before its rate is trusted (slow start is over by then)
STEP = 1.05  # a new window only when it differs this much from the one set (a system call each)


@dataclass
class BulkWindow:
    """One connection's received bytes over time and the window it was clamped to."""

    window: int | None = None
    _samples: deque[tuple[float, int]] = field(default_factory=deque)  # (time, bytes) of the last span
    _bytes: int = 0  # the sum over _samples
    _bulk_since: float | None = None  # when the bulk response now arriving began to arrive
    _set_at: float | None = None  # when the window was last set

    def received(self, t: float, nbytes: int, min_rtt: float | None, bulk: bool) -> None:
        """nbytes arrived at time t; bulk: the connection is receiving a bulk response."""
        if not bulk:
            self._bulk_since = None
        elif self._bulk_since is None:
            self._bulk_since = t
        self._samples.append((t, nbytes))
        self._bytes += nbytes
        span = self._span(min_rtt)
        while self._samples[0][0] <= t - span:
            self._bytes -= self._samples.popleft()[1]

    def rate(self, t: float, min_rtt: float | None) -> float | None:
        """Bytes per second over the last span, once the bulk response has been arriving for SETTLE_SPANS
        (its slow start is over, the link is full: the rate is the link's); else None."""
        span = self._span(min_rtt)
        if self._bulk_since is None or t - self._bulk_since < SETTLE_SPANS * span:
            return None
        return self._bytes / span

    def next_window(self, t: float, min_rtt: float | None) -> int | None:
        """The window to clamp to now (bytes), or None to leave it as it is (at most one change per span)."""
        if min_rtt is None or min_rtt < MIN_RTT:
            return None
        rate = self.rate(t, min_rtt)
        if not rate or (self._set_at is not None and t - self._set_at < self._span(min_rtt)):
            return None
        window = max(FLOOR_BYTES, int(HEADROOM * rate * min_rtt))
        if self.window is not None and abs(window - self.window) < self.window * (STEP - 1):
            return None
        self.window, self._set_at = window, t
        return window

    @staticmethod
    def _span(min_rtt: float | None) -> float:
        return max(MIN_SPAN, SPAN_RTTS * (min_rtt or 0.0))
