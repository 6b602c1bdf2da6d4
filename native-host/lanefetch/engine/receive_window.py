"""The connection-level receive window of an HTTP/2 connection, used as a cap on what the server has out (pure).

Theory of operation. h2 flow control says how many more DATA bytes the server may send on the connection: the
window we grant (65,535 at the start, raised by our WINDOW_UPDATEs) less what it sent. A window far larger than the
link needs (the 16 MiB we used to open at once) leaves the server's TCP slow start alone to find the link's
capacity, and on a slow link with a drop-tail queue it overshoots: on the engine benchmark over h2 (2 Mbit/s,
200 ms, a queue of one BDP) the server's window doubled past the queue at the end of slow start, 15–18 packets
were dropped per run and their recovery cost ~0.3–0.4 s of a 2 s batch (docs/performance.md). Granting only what
keeps the server's outstanding bytes near `cap` (the caller's estimate: GAIN × best delivery rate × minimum round
trip, inflight_budget.py) lets slow start grow up to that and no further, without a drop.

- **What counts against the cap**: the window the server may still use (`granted`: it may be in flight already)
  and what arrived but the sink has not taken yet (`held`: backpressure, as before: a slow consumer slows the
  server). A top-up grants `cap - granted - held` when that is worth a frame (at least a quarter of the cap, or
  16 KiB); never a negative grant (a window is never taken back: the cap may shrink, the server keeps what it has).
- **Never a stall**: once the server used its window and the sink took everything, `granted + held` is 0 and the
  top-up grants the whole cap (> 0), so every byte the server has to send is eventually allowed (property-tested).
- Bytes that reach the connection window but never the sink (padding, a frame dropped as malformed, a cancelled
  stream's data) are `received` and then `consumed` at once by the caller; a grant sent by someone else (h2 hands
  back a closed stream's DATA with its own WINDOW_UPDATE) is `opened_elsewhere`, so it is not granted twice.
"""

from __future__ import annotations

from dataclasses import dataclass

H2_INITIAL_WINDOW = 65_535  # RFC 9113 §6.9.2: every connection starts with this window, whatever SETTINGS say
MIN_GRANT = 16 * 1024  # a smaller top-up is not worth its frame unless the cap itself is small


@dataclass
class ReceiveWindow:
    granted: int = H2_INITIAL_WINDOW  # the server may still send this much (h2's inbound connection window)
    held: int = 0  # arrived, not yet taken by the sink

    def received(self, nbytes: int) -> None:
        """A DATA frame's flow-controlled length (payload and padding) arrived."""
        self.granted -= nbytes
        self.held += nbytes

    def consumed(self, nbytes: int) -> None:
        """The sink took nbytes (or they were dropped): they no longer count against the cap."""
        self.held = max(0, self.held - nbytes)

    def opened_elsewhere(self, nbytes: int) -> None:
        """A WINDOW_UPDATE of nbytes was sent, not by top_up (h2 hands back a closed stream's DATA itself)."""
        self.granted += nbytes

    def top_up(self, cap: int) -> int:
        """The WINDOW_UPDATE increment to send now (0: none) so that the server may have `cap` bytes outstanding."""
        grant = cap - max(0, self.granted) - self.held
        if grant <= 0 or grant < min(MIN_GRANT, max(1, cap // 4)):
            return 0
        self.granted += grant
        return grant
