"""pool_plan.room_under_cap, the cap over all origins' connections: on its own, and driving a model of the engine's
use of it (engine.admit) through any sequence of origins asking for connections, connections going idle, busy and
closing: never above the cap, never a busy (or still wanted) connection closed for room, and work that waits is
served once a connection frees."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.pool_plan import Evictable, Room, connection_cap, room_under_cap

evictables = st.lists(st.builds(Evictable, st.integers(0, 50), st.floats(0, 100)), max_size=12,
                      unique_by=lambda e: e.id)


@given(st.integers(0, 20), st.integers(0, 20), st.integers(1, 20), evictables)
def test_never_above_the_cap_and_the_least_recently_used_go_first(counted: int, wanted: int, cap: int,
                                                                  idle: list[Evictable]) -> None:
    room = room_under_cap(min(counted, cap), wanted, cap, idle)
    counted = min(counted, cap)
    assert 0 <= room.open <= wanted
    assert counted - len(room.evict) + room.open <= cap
    assert set(room.evict) <= {e.id for e in idle} and len(set(room.evict)) == len(room.evict)
    if counted + wanted <= cap:
        assert room == Room(wanted), "under the cap nothing is closed and everything opens"
    else:
        assert len(room.evict) == min(len(idle), counted + wanted - cap), "only as many closed as needed"
        assert room.open == min(wanted, cap - counted + len(room.evict))
        kept = [e for e in idle if e.id not in room.evict]
        gone = [e for e in idle if e.id in room.evict]
        assert all(g.last_used <= k.last_used for g in gone for k in kept), "least recently used first"


@dataclass
class _Conn:
    id: int
    origin: int
    busy: bool = False
    last_used: float = 0.0


@dataclass
class _Model:
    """engine.admit's bookkeeping over pool_plan.room_under_cap: origins with work queued ask for connections; a
    connection is evictable when open, idle, and its origin has nothing queued; an origin left with none waits."""

    cap: int
    conns: dict[int, _Conn] = field(default_factory=dict)
    queued: dict[int, int] = field(default_factory=dict)  # origin -> requests waiting
    waiting: list[int] = field(default_factory=list)
    next_id: int = 0
    t: float = 0.0
    evicted_busy: list[int] = field(default_factory=list)

    def mine(self, origin: int) -> list[_Conn]:
        return [c for c in self.conns.values() if c.origin == origin]

    def ask(self, origin: int) -> None:
        wanted = max(0, min(6, self.queued.get(origin, 0)) - len(self.mine(origin)))
        if not wanted:
            return
        idle = [Evictable(c.id, c.last_used) for c in self.conns.values()
                if c.origin != origin and not c.busy and not self.queued.get(c.origin)]
        room = room_under_cap(len(self.conns), wanted, self.cap, idle)
        for cid in room.evict:
            if self.conns[cid].busy or self.queued.get(self.conns[cid].origin):
                self.evicted_busy.append(cid)
            del self.conns[cid]
        for _ in range(room.open):
            self.next_id += 1
            self.conns[self.next_id] = _Conn(self.next_id, origin, last_used=self.t)
        if room.open == 0 and not self.mine(origin) and origin not in self.waiting:
            self.waiting.append(origin)
        assert len(self.conns) <= self.cap

    def wake(self) -> None:
        waiting, self.waiting = self.waiting, []
        for origin in waiting:
            self.ask(origin)

    def serve(self) -> None:
        """Every idle connection takes a request of its origin, if one waits; a busy one may finish."""
        for c in list(self.conns.values()):
            if not c.busy and self.queued.get(c.origin):
                self.queued[c.origin] -= 1
                c.busy = True
                c.last_used = self.t


@given(st.integers(1, 6), st.lists(st.tuples(st.sampled_from(["work", "finish", "close", "tick"]),
                                             st.integers(0, 5), st.integers(1, 4)), max_size=60))
def test_a_model_engine_never_exceeds_the_cap_nor_closes_busy_work_and_serves_every_waiting_origin(
        cap: int, ops: list[tuple[str, int, int]]) -> None:
    m = _Model(cap)
    for op, origin, n in ops:
        m.t += 1
        if op == "work":
            m.queued[origin] = m.queued.get(origin, 0) + n
            m.ask(origin)
        elif op == "finish":  # a busy connection's answer is in: it is idle, room may have come
            for c in m.conns.values():
                if c.busy and c.origin == origin:
                    c.busy = False
                    c.last_used = m.t
                    break
            m.wake()
        elif op == "close":  # a connection closes (server, idle timeout): its room goes to the waiting
            victim = next((c for c in m.conns.values() if c.origin == origin and not c.busy), None)
            if victim is not None:
                del m.conns[victim.id]
                m.wake()
        m.serve()
        assert len(m.conns) <= cap
        assert not m.evicted_busy, f"closed for room while busy or wanted: {m.evicted_busy}"
    # Afterwards every answer comes in, one at a time: all the queued work is served, none waits for good.
    for _ in range(10 * (sum(m.queued.values()) + len(m.conns) + 1)):
        for c in m.conns.values():
            if c.busy:
                c.busy = False
                m.t += 1
                c.last_used = m.t
                m.wake()
                break
        for origin in [o for o, q in m.queued.items() if q and not m.mine(o) and o not in m.waiting]:
            m.ask(origin)  # (an origin's own connection closed: the pool plans again, connection_closed)
        m.serve()
        assert len(m.conns) <= cap and not m.evicted_busy
    assert not any(m.queued.values()), f"work left waiting: {m.queued}, connections {m.conns}"
    assert not m.waiting


def test_the_cap_leaves_half_the_file_limit_for_everything_else() -> None:
    assert connection_cap(256, None) == 256
    assert connection_cap(256, 1024) == 256
    assert connection_cap(256, 256) == 128, "macOS's default soft limit"
    assert connection_cap(256, 1) == 1
