"""Per-request timing points, kept on the monotonic clock and reported as epoch milliseconds."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields


def now() -> float:
    return time.monotonic()


def wall_offset() -> float:
    """Wall clock minus monotonic clock, now. Read at each report, not once per process: the monotonic clock stands
    still while the machine sleeps (Linux's CLOCK_MONOTONIC) and ignores wall-clock steps, so an anchor taken at start
    put every point after a suspend that long before the browser's Date.now() of the same moment (the panel clamped
    the phases away, Firefox's records began an hour early)."""
    return time.time() - time.monotonic()


def epoch_ms(mono: float | None, offset: float | None = None) -> float | None:
    """`offset`: one wall_offset() for all the points of a report, so that they keep their order and spacing."""
    if mono is None:
        return None
    return round((mono + (wall_offset() if offset is None else offset)) * 1000.0, 3)


@dataclass
class ConnectTiming:
    dns_start: float | None = None
    dns_end: float | None = None
    connect_start: float | None = None
    connect_end: float | None = None
    tls_end: float | None = None
    #: The SYN → SYN-ACK round trip as the kernel measured it (Linux), free of the event loop's delays.
    handshake_rtt: float | None = None
    #: The TLS handshake waited for the connection to be needed (a `tcp` preconnect's; pool.py).
    held: bool = False
    #: The TLS handshake resumed a session of an earlier connection (session_tickets.py).
    tls_resumed: bool = False
    #: The TLS handshake asked for records of at most 4 KiB (tls_records.py).
    small_records: bool = False


@dataclass
class RequestTiming:
    queued: float
    dns_start: float | None = None
    dns_end: float | None = None
    connect_start: float | None = None
    connect_end: float | None = None
    tls_end: float | None = None
    sent: float | None = None
    first_byte: float | None = None
    last_byte: float | None = None

    def take_connect(self, c: ConnectTiming) -> None:
        self.dns_start, self.dns_end = c.dns_start, c.dns_end
        self.connect_start, self.connect_end, self.tls_end = c.connect_start, c.connect_end, c.tls_end

    def reset_for_retry(self) -> None:
        for f in fields(self):
            if f.name != "queued":
                setattr(self, f.name, None)

    def as_epoch_ms(self) -> dict[str, float | None]:
        offset = wall_offset()
        return {f.name: epoch_ms(getattr(self, f.name), offset) for f in fields(self)}


@dataclass
class LaneReport:
    """What one lane did for a split response (epoch ms like the timing points)."""

    interface: str | None
    bytes: int  # received on this lane, duplicates of stolen tails included
    requests: int
    rtt_ms: float | None
    throughput_bps: float | None  # bits per second while receiving
    first_byte: float | None
    last_byte: float | None
    down: str | None  # why the lane was given up, if it was


@dataclass
class ConnectionInfo:
    id: int
    local_address: str | None
    remote_address: str | None
    interface: str | None
    reused: bool
    pipeline_position: int  # HTTP/2: the stream's index among the connection's streams
    pipeline_depth: int  # HTTP/2: streams open when it was sent, this one included
    protocol: str = "http/1.1"  # or "h2"
    stream_id: int | None = None  # HTTP/2 only
