"""Has the host's network been quiet, not only the engine's own connections? (a reader and a pure tracker)

Theory of operation. body_stall.py cuts a quiet body sooner where the link is idle as well: then nothing stands in
the queue in front of the body's bytes, and it waits on the server's retransmission timer. The engine sees only its
own connections. While the browser downloads on connections of its own (a document it fetches itself, a script
left to its warm connection, another tab), the engine's connections go quiet because the link's queue is full of the
browser's bytes, not because the link is idle. Measured on `wcdma` (rust-book-print, a visit the helper learned
nothing of): a 94.6 kB image was cut after 3.0 s "with every connection quiet for 1.6 s" while the browser's own
connection carried highlight.js, and its rest and the requests pipelined behind it were asked again (the server
answered four paths twice in one load, 1.07 × the bytes of the browser alone).

The kernel counts the bytes every network interface received (Linux: /proc/self/net/dev, the helper's own network
namespace). The host is quiet for as long as that count has not moved: the tracker looks at it each time the engine
asks (every BODY_STALL_POLL while a body may be cut), so the quiet is known to a look's precision, and it starts at
zero at the first look (nothing is known of the time before: not quiet). Loopback is counted apart: on it travel the
helper's own deliveries to Firefox in proxy mode and nothing of a link, except where the origin itself is on
loopback (a local server), and then loopback is the link.

Where the counters cannot be read (not Linux, /proc not mounted), the host's quiet is unknown and the engine's own
connections decide as before (HostLink.quiet returns None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

NET_DEV = "/proc/self/net/dev"


def parse_received(text: str, loopback: bool) -> int | None:
    """Bytes received, summed over the interfaces of a /proc/net/dev listing: loopback's alone (loopback=True) or
    every other interface's; None where the text is not such a listing."""
    lines = text.splitlines()
    if len(lines) < 2 or "Receive" not in lines[0] or "bytes" not in lines[1]:
        return None
    total = 0
    for line in lines[2:]:
        name, sep, counters = line.partition(":")
        fields = counters.split()
        if not sep or not fields or not fields[0].isdigit():
            return None
        if (name.strip() == "lo") == loopback:
            total += int(fields[0])
    return total


def read_received(loopback: bool) -> int | None:
    """The kernel's count of bytes received (parse_received), or None where it cannot be read."""
    try:
        with open(NET_DEV, encoding="ascii") as f:
            return parse_received(f.read(), loopback)
    except (OSError, ValueError):
        return None


@dataclass
class QuietTracker:
    """When one byte count last moved, as seen at each look (pure: the caller reads the count and the clock)."""

    last_count: int | None = None
    moved_at: float = 0.0

    def look(self, t: float, count: int | None) -> float | None:
        """Seconds the count has stood still at time t; None where it is unknown."""
        if count is None:
            self.last_count = None
            return None
        if count != self.last_count:
            self.last_count, self.moved_at = count, t
        return max(0.0, t - self.moved_at)


@dataclass
class HostLink:
    """The host's interfaces, loopback apart from the rest (module docstring). `read` is injectable for tests."""

    read: Callable[[bool], int | None] = read_received
    _trackers: dict[bool, QuietTracker] = field(default_factory=lambda: {False: QuietTracker(),
                                                                          True: QuietTracker()})

    def quiet(self, t: float, loopback: bool) -> float | None:
        """Seconds no byte arrived on the interfaces that carry a connection to a loopback peer (loopback=True) or
        to any other (False), as far as the looks tell; None where the host does not say."""
        return self._trackers[loopback].look(t, self.read(loopback))
