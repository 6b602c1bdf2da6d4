"""The origin's bound on unanswered requests (engine/inflight_budget.py), without sockets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine.inflight_budget import FLOOR_BYTES, H2_GAIN, LINK_WINDOW_RTTS, InflightBudget


def deliver_at_rate(b: InflightBudget, start: float, rate: float, size: int, count: int) -> float:
    """count responses of size bytes arriving back to back at rate bytes/s; returns the last arrival."""
    t = start
    for _ in range(count):
        t += size / rate
        b.received(t, size)
        b.response_done(size)
    return t


def test_nothing_delivered_means_no_bound_yet() -> None:
    b = InflightBudget()
    b.observe_rtt(0.4)
    assert b.max_unanswered(0.0) is None  # the pipelining rules alone decide until responses come back


def test_slow_link_is_bounded_near_two_bdp() -> None:
    """W-CDMA-like: 48 kB/s, 400 ms: BDP 19.2 kB; 2.2 kB responses → the floor (32 kB) rules, ~14 requests,
    not the 64 that 4 connections × depth 16 would put in flight."""
    b = InflightBudget()
    b.observe_rtt(0.41)
    b.observe_rtt(0.40)
    t = deliver_at_rate(b, 0.0, 48_000, 2200, 40)
    assert b.budget_bytes(t) <= 2 * 2 * 48_000 * 0.4  # the rate window may see one response more, never double
    assert b.max_unanswered(t) == max(FLOOR_BYTES, b.budget_bytes(t)) // 2200
    assert 14 <= (b.max_unanswered(t) or 0) <= 35


def test_fast_link_gets_room_for_two_bdp() -> None:
    """LTE-like: 2.5 MB/s, 60 ms: BDP 150 kB → about 300 kB, so 80 small responses go out at once."""
    b = InflightBudget()
    b.observe_rtt(0.06)
    t = deliver_at_rate(b, 0.0, 2_500_000, 2200, 60)
    assert 250_000 <= b.budget_bytes(t) <= 330_000
    assert (b.max_unanswered(t) or 0) >= 80


def test_the_bandwidth_estimate_is_forgotten_after_ten_rtts() -> None:
    b = InflightBudget()
    b.observe_rtt(0.1)
    t = deliver_at_rate(b, 0.0, 2_500_000, 2200, 60)
    assert b.budget_bytes(t) > 400_000
    t = deliver_at_rate(b, t + 0.5, 20_000, 2200, 20)  # the link got slow: 2 s of slow deliveries
    assert b.budget_bytes(t) == FLOOR_BYTES


def test_big_responses_still_leave_one_request_per_origin() -> None:
    b = InflightBudget()
    b.observe_rtt(0.2)
    t = 1.0
    for _ in range(100):  # 5 MB read in 50 kB pieces at 1 MB/s: BDP 200 kB, budget 400 kB
        t += 0.05
        b.received(t, 50_000)
    b.response_done(5_000_000)
    assert b.max_unanswered(t) == 1


def test_short_or_unknown_round_trips_are_not_bounded() -> None:
    b = InflightBudget()
    b.received(1.0, 1000)
    b.response_done(1000)
    assert b.budget_bytes(1.0) == FLOOR_BYTES and b.max_unanswered(1.0) is None  # no RTT known
    b.observe_rtt(0.0002)  # loopback or a LAN: bursts drain in milliseconds
    b.received(1.001, 1000)
    b.response_done(1000)
    assert b.max_unanswered(1.001) is None


@settings(max_examples=200, deadline=None)
@given(rtt=st.floats(0.01, 2.0), events=st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(0, 3_000_000)),
                                                     min_size=1, max_size=60))
def test_budget_between_floor_and_gain_times_arrivals(rtt: float, events: list[tuple[float, int]]) -> None:
    b = InflightBudget()
    b.observe_rtt(rtt)
    t = 0.0
    total = 0
    for gap, size in events:
        t += gap
        b.received(t, size)
        b.response_done(size)
        total += size
        budget = b.budget_bytes(t)
        assert budget >= FLOOR_BYTES
        # a rate sample counts at most everything delivered so far over half an RTT: 2 × rate × RTT ≤ 4 × total
        assert budget <= max(FLOOR_BYTES, 4 * total)
        assert (b.max_unanswered(t) or 0) >= 1


@settings(max_examples=200, deadline=None)
@given(rtt=st.floats(0.01, 2.0), rate=st.floats(1_000, 50_000_000), connections=st.integers(1, 6))
def test_h2_connections_share_one_cap(rtt: float, rate: float, connections: int) -> None:
    """An origin's h2 connections share one link: together they are granted no more than one connection alone
    (else two connections' slow starts overflow the queue a single one was kept under), each a positive part."""
    b = InflightBudget()
    b.observe_rtt(rtt)
    t = deliver_at_rate(b, 0.0, rate, 16_384, 40)
    alone = b.h2_window(t, 1 << 24)
    each = b.h2_window(t, 1 << 24, connections)
    assert 0 < each * connections <= alone
    assert alone - each * connections < connections, "shared equally, nothing lost but the rounding"
    assert b.h2_window(t, 1 << 24, 0) == alone
    b.observe_rtt(0.001)  # a short link is not capped, however many connections
    assert b.h2_window(t, 1 << 24, connections) == 1 << 24


@given(rtt=st.floats(0.01, 2.0), rate=st.floats(1_000, 50_000_000), bdp=st.integers(1, 5_000_000))
def test_a_roomy_links_remembered_bdp_is_the_caps_floor(rtt: float, rate: float, bdp: int) -> None:
    """Given a link's remembered bandwidth-delay product (a roomy one, the caller's test), the cap is never below
    H2_GAIN times it, and otherwise what the delivery rate says: after a document alone the rate is a few kB a
    round trip, and the flight after it was held at the floor."""
    b = InflightBudget()
    b.observe_rtt(rtt)
    t = deliver_at_rate(b, 0.0, rate, 16_384, 4)
    without = b.h2_window(t, 1 << 24)
    with_bdp = b.h2_window(t, 1 << 24, 1, bdp)
    assert with_bdp == max(without, int(H2_GAIN * bdp))
    assert b.h2_window(t, 1 << 24, 2, bdp) == with_bdp // 2


def test_the_links_bdp_is_the_best_rate_of_the_session_times_the_round_trip() -> None:
    from lanefetch.engine.pool_plan import BALANCE_BDP

    b = InflightBudget()
    assert b.link_bdp() is None
    b.observe_rtt(0.40)
    t = deliver_at_rate(b, 0.0, 48_000, 2200, 40)  # W-CDMA-like: 19 kB per round trip
    bdp = b.link_bdp()
    assert bdp is not None and 0.9 * 48_000 * 0.4 <= bdp <= 2 * 48_000 * 0.4 and bdp < BALANCE_BDP
    fast = InflightBudget()
    fast.observe_rtt(0.6)
    t = deliver_at_rate(fast, 0.0, 1_250_000, 14_600, 60)  # satellite-like: 10 Mbit/s at 600 ms
    assert (fast.link_bdp() or 0) >= BALANCE_BDP
    deliver_at_rate(fast, t + 10, 20_000, 2200, 20)  # slow later: the session's best is what the link can do
    assert (fast.link_bdp() or 0) >= BALANCE_BDP


def test_one_read_that_gathered_a_busy_seconds_bytes_is_no_burst_of_the_link() -> None:
    from lanefetch.engine.pool_plan import BALANCE_BDP

    b = InflightBudget()
    b.observe_rtt(0.40)
    t = deliver_at_rate(b, 0.0, 48_000, 2200, 10)
    b.received(t + 1.0, 48_000)  # the event loop was busy for a second: one read of what the link brought meanwhile
    assert (b.link_bdp() or 0) < BALANCE_BDP


def test_what_the_kernel_held_beyond_a_hole_is_no_burst_of_the_link() -> None:
    """A lost segment's retransmission releases the window received behind it in one read: W-CDMA's link, 19 kB per
    round trip, was taken for 42 kB and a flight's answers were asked in pieces."""
    from lanefetch.engine.pool_plan import BALANCE_BDP

    held = InflightBudget()
    held.observe_rtt(0.40)
    t = deliver_at_rate(held, 0.0, 48_000, 2200, 20)
    held.received(t + 0.05, 44_000, released=True)
    deliver_at_rate(held, t + 0.05, 48_000, 2200, 10)
    assert (held.link_bdp() or 0) <= 1.1 * 48_000 * 0.4 < BALANCE_BDP
    counted = InflightBudget()  # the same arrivals taken for the link's own: the estimate the flight was misled by
    counted.observe_rtt(0.40)
    t = deliver_at_rate(counted, 0.0, 48_000, 2200, 20)
    counted.received(t + 0.05, 44_000)
    assert (counted.link_bdp() or 0) >= 1.5 * 48_000 * 0.4


def test_bytes_that_come_at_once_after_a_quiet_spell_are_no_burst_of_the_link() -> None:
    """W-CDMA's link, 19 kB per round trip, stalls for a second and then hands over what it held (a radio link's
    burst, a starved emulator, a hole filled) at once: the estimate stays under the pieces' gate."""

    b = InflightBudget()
    b.observe_rtt(0.40)
    t = deliver_at_rate(b, 0.0, 48_000, 2200, 20)
    b.received(t + 1.0, 48_000)  # a second's bytes, in one arrival
    deliver_at_rate(b, t + 1.0, 48_000, 2200, 20)
    assert (b.link_bdp() or 0) <= 1.1 * 48_000 * 0.4
    assert (b.link_bdp() or 0) >= 0.8 * 48_000 * 0.4  # and it still sees the link's own rate


@given(st.floats(0.05, 1.0), st.floats(10_000, 2_000_000), st.lists(st.floats(0.0, 3.0), min_size=1, max_size=30))
@settings(max_examples=60)
def test_the_links_estimate_never_exceeds_what_arrived_over_the_time_it_took(rtt: float, rate: float,
                                                                             gaps: list[float]) -> None:
    """However a link bunches what a sender sends at a steady `rate`, the estimate is never above that rate (the
    answer's first byte at 0 s: before any arrival, the first ones can only be counted over the window)."""
    b = InflightBudget()
    b.observe_rtt(rtt)
    b.received(0.0, 1)
    t, pending = 0.0, 0
    for gap in gaps:  # the sender sends at `rate` all along; the link hands over what it has after each gap
        t += gap
        pending = int(rate * gap)
        if pending:
            b.received(t, pending)
    assert b.peak_rate <= rate * 1.001 + 1 / (LINK_WINDOW_RTTS * rtt)


def test_deliveries_through_a_queue_say_the_link_is_full_not_how_much_room_it_has() -> None:
    """W-CDMA: reads at twice the link's rate for most of a second while the receiver's round trip was 0.8-1.2 s (the
    queue). Over `sat` a page's load kept it at the round trip: its estimate stands."""
    from lanefetch.engine.inflight_budget import QUEUED_RTT_FACTOR
    from lanefetch.engine.pool_plan import BALANCE_BDP

    full = InflightBudget()
    full.observe_rtt(0.40)
    t = deliver_at_rate(full, 0.0, 48_000, 1448, 10)  # the first flights, before the queue shows
    for i in range(60):  # then reads at twice the link's rate, the receiver's round trip at 1 s
        full.received(t + 0.015 * (i + 1), 1448, loaded_rtt=1.0)
    assert (full.link_bdp() or 0) <= 1.1 * 48_000 * 0.4
    roomy = InflightBudget()
    roomy.observe_rtt(0.60)
    t = 0.0
    for _ in range(200):  # 290 kB at 10 Mbit/s, the receiver's round trip at 0.605 s
        t += 1448 / 1_250_000
        roomy.received(t, 1448, loaded_rtt=0.605)
    assert (roomy.link_bdp() or 0) >= BALANCE_BDP
    edge = InflightBudget()
    edge.observe_rtt(0.60)
    edge.received(0.0, 1)
    edge.received(0.1, 60_000, loaded_rtt=QUEUED_RTT_FACTOR * 0.60 + 0.01)
    assert edge.peak_rate < 2  # a delivery through a queue moves no estimate (the first byte alone counted)
