"""The receive-window clamp of a connection carrying a bulk response (engine/bulk_window.py), against a
simulated bottleneck: it waits for the bulk to settle, settles near HEADROOM × BDP from above and from
below, and leaves short round trips alone."""

from __future__ import annotations

from lanefetch.engine.bulk_window import HEADROOM, BulkWindow

RATE = 625_000.0  # bytes per second: 5 Mbit/s
RTT = 0.1
BDP = RATE * RTT


def run_link(bw: BulkWindow, seconds: float, start_window: float, *, t0: float = 0.0, rtt: float = RTT
             ) -> tuple[float, list[int]]:
    """Reads every 10 ms at min(link rate, window / RTT); the clamp, when set, becomes the window."""
    window, t, set_to = start_window, t0, []
    while t < t0 + seconds:
        t += 0.01
        bw.received(t, int(min(RATE, window / rtt) * 0.01), rtt, bulk=True)
        w = bw.next_window(t, rtt)
        if w is not None:
            window = w
            set_to.append(w)
    return t, set_to


def test_nothing_before_the_bulk_settled_then_near_headroom_bdp() -> None:
    bw = BulkWindow()
    _, early = run_link(bw, 0.9, 4 * BDP)
    assert early == []  # slow start may still be on: the rate is not trusted yet
    _, later = run_link(bw, 3, 4 * BDP, t0=0.9)
    assert later and abs(later[-1] - HEADROOM * BDP) < 0.1 * BDP


def test_a_window_below_the_bdp_climbs_back() -> None:
    bw = BulkWindow()
    _, set_to = run_link(bw, 8, 0.4 * BDP)  # as if an earlier estimate had been far too low
    assert set_to[0] < BDP
    assert set_to == sorted(set_to) and abs(set_to[-1] - HEADROOM * BDP) < 0.1 * BDP


def test_short_round_trips_and_non_bulk_are_left_alone() -> None:
    bw = BulkWindow()
    _, set_to = run_link(bw, 3, 4 * BDP, rtt=0.002)
    assert set_to == []
    idle = BulkWindow()
    for i in range(300):
        idle.received(i * 0.01, 6000, RTT, bulk=False)
        assert idle.next_window(i * 0.01, RTT) is None
