"""Whose turn it is for room under the helper's cap on connections (EngineConfig.max_connections), pure.

Theory of operation. The cap (pool_plan.room_under_cap) says how many connections may open; this file says who
gets one when room comes while several origins wait for it. Before, every waiting origin was woken at once and
asked again, and whoever asked first took the room: an origin planning often (a busy one, its answers coming in)
could take each freed connection ahead of an origin that had waited longer, for as long as its work lasted.

- **A line, first come first served.** An origin left short of the connections its work calls for joins the back
  of `Line`; one already in it keeps its place when it asks again. When room comes (a connection closed, or went
  idle where it may be closed for room), the origin at the head gets one connection, and goes to the back if it
  still wants more, or leaves the line if not. One connection per turn (round robin): an origin waiting for its
  first connection is not held behind another's sixth.
- **Nobody jumps the line.** While anyone waits, an origin that is not at the head gets no room by asking: it
  joins the line (or, a preconnect or a render reserve, which never wait, goes without). So between an origin
  joining the line and its turn, every other origin is served at most once: whoever is served goes behind it.
  That bounds how often a waiting origin is passed over: fewer times than there are other origins waiting, but
  for the next rule.
- **Not one's own loss.** Room freed by an origin's own connection closing (or failing to connect) is not handed
  to that origin by the line (`next_in_line(but=...)`): it decides on its own what its loss calls for, and an
  origin whose connects fail at once would otherwise connect again and again at the cap. It keeps its place, and
  the room goes to the next in line, who goes behind it. So each other origin passes a waiting one at most once,
  plus once for each of the waiting one's own connections lost while it waits (it opens none meanwhile: at most
  the connections it had when it began to wait, its per-origin limit).
- **Keys are opaque** (the shell's pools: connection_cap.py); the line holds each at most once, in order of when
  it began waiting for its next connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K")


@dataclass(frozen=True)
class Line(Generic[K]):
    """The origins waiting for room, the one waiting longest for its next connection first."""

    waiting: tuple[K, ...] = ()

    def __len__(self) -> int:
        return len(self.waiting)

    def __contains__(self, key: object) -> bool:
        return key in self.waiting

    def join(self, key: K) -> Line[K]:
        """`key` is short of room: at the back of the line, or where it is if it waits already."""
        return self if key in self.waiting else Line((*self.waiting, key))

    def leave(self, key: K) -> Line[K]:
        """`key` wants no room any more (its work is served or gone, its pool closed)."""
        return Line(tuple(k for k in self.waiting if k != key)) if key in self.waiting else self

    def next_in_line(self, but: K | None = None) -> K | None:
        """Whose turn it is for the next connection of room: the head, passing over `but` (whose own connection
        freed the room), who keeps its place."""
        return next((k for k in self.waiting if k != but), None)

    def served(self, key: K, wants_more: bool) -> Line[K]:
        """`key` got a connection: behind everyone else if it `wants_more`, else out of the line."""
        rest = tuple(k for k in self.waiting if k != key)
        return Line((*rest, key) if wants_more else rest)
