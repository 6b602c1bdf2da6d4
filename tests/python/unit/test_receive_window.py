"""engine/receive_window.py: the h2 connection window as a cap on what the server has outstanding. Whatever the
order of arrivals and of the sink's consumption, the server never has more than the cap (or the window every
connection starts with) to send or in flight, and never less than a whole cap once everything was taken: no
stall."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.receive_window import H2_INITIAL_WINDOW, MIN_GRANT, ReceiveWindow

steps = st.lists(st.tuples(st.sampled_from(["receive", "consume", "top_up"]), st.floats(0, 1),
                           st.integers(1, 300_000)), max_size=200)


@given(steps)
def test_the_server_never_has_more_than_the_cap_outstanding_and_never_stalls(ops: list[tuple[str, float, int]]) -> None:
    w = ReceiveWindow()
    for op, share, cap in ops:
        before = w.granted + w.held
        if op == "receive":  # the server sends part of what it may (never more: h2 would end the connection)
            w.received(int(w.granted * share))
        elif op == "consume":  # the sink takes part of what arrived
            w.consumed(int(w.held * share))
        else:
            grant = w.top_up(cap)
            assert grant >= 0
            assert w.granted + w.held <= max(cap, before), "a top-up never takes the server past the cap"
            if before == 0:
                assert grant == cap, "nothing outstanding and nothing held: the whole cap, or it would stall"
            elif grant:
                assert grant >= min(MIN_GRANT, max(1, cap // 4)), "no frame for a crumb"
        assert w.granted >= 0 and w.held >= 0


def test_a_connection_starts_with_h2s_window_and_a_larger_cap_opens_it_at_once() -> None:
    w = ReceiveWindow()
    assert w.granted == H2_INITIAL_WINDOW
    assert w.top_up(32 * 1024) == 0, "a cap below the initial window: nothing to add (a window is never taken back)"
    assert w.top_up(16 * 1024 * 1024) == 16 * 1024 * 1024 - H2_INITIAL_WINDOW


def test_held_bytes_count_until_the_sink_takes_them() -> None:
    w = ReceiveWindow()
    w.received(H2_INITIAL_WINDOW)
    assert w.top_up(100_000) == 100_000 - H2_INITIAL_WINDOW, "what arrived and waits for the sink counts"
    w.consumed(H2_INITIAL_WINDOW)
    assert w.top_up(100_000) == H2_INITIAL_WINDOW
