"""pool_plan.room_under_cap, the cap over all origins' connections, on its own (test_cap_turns.py drives the shell
that uses it, connection_cap.py, through any sequence of origins asking for connections, connections going idle,
busy and closing: never above the cap, never a busy or still-wanted connection closed for room, waiting origins
served in turn)."""

from __future__ import annotations

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


def test_the_cap_leaves_half_the_file_limit_for_everything_else() -> None:
    assert connection_cap(256, None) == 256
    assert connection_cap(256, 1024) == 256
    assert connection_cap(256, 256) == 128, "macOS's default soft limit"
    assert connection_cap(256, 1) == 1
