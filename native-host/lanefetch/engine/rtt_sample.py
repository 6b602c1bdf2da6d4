"""Which number a new connection reports as its origin's round trip (origin_rtt), pure.

Theory of operation. The extension steps aside for a host whose round trip is below 15 ms (host-speed.ts): a sample
that is too small hands a whole tab to the browser, one too large only costs a page the few milliseconds lanefetch
adds. So a sample is trusted only where it cannot be too small.

Two measures of the TCP handshake are at hand: the connect time seen from Python (SYN sent → connected, as the
event loop saw it) and the kernel's smallest RTT on the socket (TCP_INFO tcpi_min_rtt, taken from the SYN-ACK). The
kernel's figure lies inside the connect time, so it can only be smaller; the difference is what Python's view adds:
the event loop's and the scheduler's delay on a busy machine (15 ms and more while the browser starts), which would
make a LAN host look slow. So the kernel's figure is used when it is at most SCHEDULING_SLACK below the connect
time. When it is further below, the handshake took far longer than the kernel's round trip plus any scheduling
delay, and a link whose connect took 400 ms did not have a 4 ms round trip: the kernel's figure is not this
handshake's round trip (a sample from elsewhere, a middlebox answering the SYN), and the connect time stands. A
connect time is never too small: the SYN-ACK had to come back.
"""

from __future__ import annotations

SCHEDULING_SLACK = 0.1  # s: the most a busy machine's event loop adds to a connect time as Python sees it


def handshake_round_trip(connect_s: float, kernel_min_rtt_s: float | None) -> float:
    """The round trip (s) a new connection shows: the kernel's measure where it explains the connect time, else the
    connect time."""
    if kernel_min_rtt_s is None or not 0 < kernel_min_rtt_s <= connect_s:
        return connect_s
    if connect_s - kernel_min_rtt_s > SCHEDULING_SLACK:
        return connect_s  # far below a handshake that took this long: not its round trip
    return kernel_min_rtt_s
