"""The cap on the helper's connections over all origins and engines: one `ConnectionCap` per helper process,
given to every Engine it builds (the service's, each split-fetch lane's, the Firefox proxy's), so together they
never hold more than its limit (pool_plan.connection_cap) however many engines there are. Before, each engine
counted its own, and the lanes and the proxy could each hold a cap's worth of sockets beside the main engine.

A thin shell over two pure decisions: pool_plan.room_under_cap (how many may open, and which idle connection of
another origin to close for room) and cap_turns.Line (whose turn it is when room comes). It counts each connection
(connecting ones included) from when its pool opens it until the pool hears it closed or failed, by an id it hands
out itself (unique in the process, so connections of different engines never share one); a pool that closes
forgets its connections here all at once (`forget`), whatever its tasks' ends reported.
"""

from __future__ import annotations

import itertools
import logging
from typing import Protocol

from .cap_turns import Line
from .pool_plan import Evictable, room_under_cap

log = logging.getLogger("lanefetch.engine")


class CapMember(Protocol):
    """What the cap asks of a pool (pool.py OriginPool)."""

    def wanted(self) -> int:
        """How many more connections its work calls for now."""

    def take_turn(self) -> bool:
        """Open one connection now (its turn under the cap: wanted() was above 0); False if it opened none."""

    def evictable(self) -> list[Evictable]:
        """Its open connections that carry nothing, when it has nothing queued: closing one for room loses nothing
        but a handshake (pool_plan.Evictable). None otherwise."""

    def evict(self, conn_id: int) -> None:
        """Close that idle connection for room under the cap."""


class ConnectionCap:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._ids = itertools.count(1)
        self._counted: dict[int, CapMember] = {}  # connection id -> its pool
        self._line: Line[CapMember] = Line()

    @property
    def count(self) -> int:
        """Connections counted now (open or opening), over every engine given this cap."""
        return len(self._counted)

    def waiting(self) -> tuple[CapMember, ...]:
        """The pools in line for room, first first (cap_turns.Line)."""
        return self._line.waiting

    def next_id(self) -> int:
        return next(self._ids)

    def admit(self, pool: CapMember, wanted: int, wait: bool = True, evict: bool = True) -> int:
        """How many of `wanted` new connections `pool` may open now (it counts each as it opens it: `counted`).
        Under the cap with nobody in line this is one comparison. Else, with nobody in line, pool_plan.room_under_cap
        decides (idle connections of other pools closed for room where `evict`); with others in line, the pool gets
        none by asking (cap_turns.Line: nobody jumps the line). Where `wait`, a pool left short joins the line and
        is served a connection at a time as room comes (take_turn)."""
        wanted = max(0, wanted)
        if not self._line and len(self._counted) + wanted <= self.limit:
            return wanted
        if self._line:
            if wanted and wait:
                self._line = self._line.join(pool)
            self.serve()
            return 0
        room = room_under_cap(len(self._counted), wanted, self.limit, self._evictable(pool) if evict else ())
        self._evict(room.evict)
        if room.open < wanted and wait:
            self._line = self._line.join(pool)
        return room.open

    def counted(self, pool: CapMember, conn_id: int) -> None:
        self._counted[conn_id] = pool

    def released(self, pool: CapMember, conn_id: int) -> None:
        """A counted connection of `pool` is gone (failed to connect, or closed): its room goes to whoever is next in
        line, but not to `pool` itself (cap_turns: not one's own loss)."""
        if self._counted.pop(conn_id, None) is not None:
            self.serve(but=pool)

    def forget(self, pool: CapMember) -> None:
        """`pool` closed: its place in line and whatever of its connections is still counted go (a task cancelled
        while connecting reports no end), and the room goes to the line."""
        self._line = self._line.leave(pool)
        for conn_id in [i for i, p in self._counted.items() if p is pool]:
            del self._counted[conn_id]
        self.serve()

    def serve(self, but: CapMember | None = None) -> None:
        """Room may have come (a connection closed, or went idle where it may be closed for room): the line is
        served a connection at a time, in turn (cap_turns.Line), while there is room for the one next."""
        while (pool := self._line.next_in_line(but)) is not None:
            if pool.wanted() <= 0:
                self._line = self._line.leave(pool)  # its work was served meanwhile, or is gone
                continue
            room = room_under_cap(len(self._counted), 1, self.limit, self._evictable(pool))
            if not room.open:
                return
            self._evict(room.evict)
            opened = pool.take_turn()
            self._line = self._line.served(pool, opened and pool.wanted() > 0)

    def _evictable(self, asker: CapMember) -> list[Evictable]:
        owners = dict.fromkeys(p for p in self._counted.values() if p is not asker)
        return [e for p in owners for e in p.evictable() if e.id in self._counted]

    def _evict(self, ids: tuple[int, ...]) -> None:
        for conn_id in ids:
            owner = self._counted.pop(conn_id)  # its socket is closed now: the room is the asker's at once
            owner.evict(conn_id)
