"""When a response that stopped mid-body is cut (engine/body_stall.py): table-driven and by property, plus the
kernel's loaded round trips on a real loopback socket (engine/transport.py)."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.body_stall import (
    HELD_LIMIT_FACTOR,
    IDLE_CUT_MAX_HELD,
    SENDER_MIN_RTO,
    STALL_ROUND_TRIPS,
    BodyProgress,
    StreamWait,
    cut_now,
    may_cut,
    quiet_limit,
    starved_streams,
)
from lanefetch.engine.transport import kernel_loaded_rtts, kernel_out_of_order_packets

START = BodyProgress(delivered=1000, held=False, resumable=True, cuts=0)


@pytest.mark.parametrize(("progress", "cut"), [
    (START, True),
    (None, False),  # no response began: the server may be thinking; the ordinary stall timeout decides
    (BodyProgress(0, False, True, 0), False),  # a head and no body byte: nothing would be saved by a range
    (BodyProgress(1000, True, True, 0), False),  # held: the page has none of it, a cut would fetch it whole
    (BodyProgress(1000, False, False, 0), False),  # no strong validator: its rest cannot be proven the same
    (BodyProgress(1000, False, True, 1), False),  # cut once already: never into a loop
])
def test_what_may_be_cut(progress: BodyProgress | None, cut: bool) -> None:
    assert may_cut(progress) is cut


@pytest.mark.parametrize(("floor", "rtts", "limit"), [
    (2.0, [0.4, 1.3, 1.1], 3 * 1.3),  # wcdma loaded: three of the largest round trip the queue shows
    (2.0, [0.0002, 0.0001], 2.0),  # loopback: the floor
    (2.0, [], 2.0),  # no figure at all (not Linux)
    (2.0, [None, 0.6, None], 2.0),  # sat idle: 1.8 s is under the floor
    (0.5, [-1.0, 0.0, float("nan"), 1e9, 0.3], 0.9),  # nonsense is passed over
])
def test_quiet_limit(floor: float, rtts: list[float | None], limit: float) -> None:
    assert quiet_limit(floor, rtts) == pytest.approx(limit)


rtt = st.one_of(st.none(), st.floats(-10, 1e5), st.just(float("nan")), st.just(float("inf")))


@given(st.floats(0, 60), st.lists(rtt, max_size=5), rtt)
def test_never_under_the_floor_nor_a_live_connections_gap(floor: float, rtts: list[float | None],
                                                          extra: float | None) -> None:
    limit = quiet_limit(floor, rtts)
    assert limit >= floor
    for r in rtts:
        if r is not None and 0 < r < 3600:
            assert limit >= STALL_ROUND_TRIPS * r
    # another round trip known can only make the wait longer: a loaded link is given more time, never less
    assert quiet_limit(floor, [*rtts, extra]) >= limit


@pytest.mark.parametrize(("quiet", "link_quiet", "rtts", "cut"), [
    (4.1, 0.0, [0.4, 0.9], True),  # the floor, however busy the link
    (3.9, 0.0, [0.4, 0.9], False),  # other connections' bytes still arrive: maybe queued behind them, or recovering
    (1.9, 0.95, [0.4, 0.9], True),  # ... nothing arrives anywhere: waiting on the server's timer
    (1.5, 0.5, [0.4, 0.9], True),  # the queue empty for an unloaded round trip, the body quiet for 0.9 + 0.4 + 0.2 s
    (1.45, 0.5, [0.4, 0.9], False),  # the server's first retransmission may still be on its way
    (1.9, 0.45, [0.4, 0.9], False),  # idle for less than an eighth of the floor (and the unloaded round trip)
    (1.9, 0.65, [0.7, 0.9], False),  # ... or less than the unloaded round trip
    (2.0, 0.5, [0.4, 1.4], True),  # wcdma, flask-tutorial's icon: cut 0.8 s sooner than by two loaded round trips
    (2.7, 1.3, [None, 1.4], False),  # no round trip but a loaded one known: two of it and the sender's floor
    (3.0, 1.4, [None, 1.4], True),
    (1.1, 0.6, [0.4, 0.45], True),  # a quarter of the floor on an idle link of short round trips
    (0.9, 0.9, [0.4, 0.45], False),
    (4.1, 0.0, [1.5], False),  # 4.5 s: a live connection on this link may be that quiet
])
def test_when_a_body_is_cut(quiet: float, link_quiet: float, rtts: list[float | None], cut: bool) -> None:
    assert cut_now(quiet, link_quiet, 4.0, rtts) is cut


@pytest.mark.parametrize(("quiet", "link_quiet", "held", "cut"), [
    (1.9, 0.95, None, True),  # the kernel does not say: as before
    (1.9, 0.95, 0, True),  # a tail loss: nothing waits beyond the hole
    (1.9, 0.95, IDLE_CUT_MAX_HELD, True),
    (1.9, 0.95, IDLE_CUT_MAX_HELD + 1, False),  # a window waits beyond the hole: a cut would carry it twice
    (4.1, 0.0, 30, False),  # a window waits beyond the hole: the floor's rule waits twice as long
    (8.1, 0.0, 30, True),  # ... and then a doubled timer costs more than the window
    (4.1, 0.0, IDLE_CUT_MAX_HELD, True),
])
def test_a_cut_throws_away_no_window_held_beyond_a_hole_unless_long_quiet(quiet: float, link_quiet: float,
                                                                   held: int | None, cut: bool) -> None:
    assert cut_now(quiet, link_quiet, 4.0, [0.4, 0.9], held) is cut


@given(st.floats(0, 30), st.floats(0, 30), st.floats(0.1, 10), st.lists(rtt, max_size=4), st.integers(0, 100))
def test_packets_held_beyond_a_hole_only_ever_delay_a_cut(quiet: float, link_quiet: float, floor: float,
                                                          rtts: list[float | None], held: int) -> None:
    if cut_now(quiet, link_quiet, floor, rtts, held):
        assert cut_now(quiet, link_quiet, floor, rtts, 0) and cut_now(quiet, link_quiet, floor, rtts)
        assert held <= IDLE_CUT_MAX_HELD or quiet >= HELD_LIMIT_FACTOR * quiet_limit(floor, rtts)


@given(st.floats(0, 30), st.floats(0, 30), st.floats(0.1, 10), st.lists(rtt, max_size=4))
def test_cut_never_before_a_quarter_of_the_floor_nor_on_a_busy_link_before_the_floor(
        quiet: float, link_quiet: float, floor: float, rtts: list[float | None]) -> None:
    cut = cut_now(quiet, link_quiet, floor, rtts)
    if cut:
        assert quiet >= floor / 4
        assert quiet >= quiet_limit(floor, rtts) or link_quiet >= floor / 8
        known = [r for r in rtts if r is not None and 0 < r < 3600]
        if known and quiet < quiet_limit(floor, rtts):  # by the idle rule: the link quiet for the unloaded round
            # trip, the body for a loaded one more and the sender's least retransmission timeout
            assert link_quiet >= min(known) and quiet >= max(known) + min(known) + SENDER_MIN_RTO - 1e-9
    # monotone: longer silence, of the body or of the link, never un-cuts
    assert not cut or cut_now(quiet + 1, link_quiet + 1, floor, rtts)


def test_the_kernel_reports_loaded_round_trips_of_a_live_connection() -> None:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        client = socket.create_connection(srv.getsockname())
        peer, _ = srv.accept()
        try:
            client.sendall(b"GET / HTTP/1.1\r\n\r\n")
            peer.recv(100)
            peer.sendall(b"x" * 10000)
            got = 0
            while got < 10000:
                got += len(client.recv(65536))
            rtts = kernel_loaded_rtts(client)
            held = kernel_out_of_order_packets(client)
            assert held is None or held == 0, held  # loopback loses and reorders nothing
            if hasattr(socket, "TCP_INFO"):
                assert len(rtts) == 2, rtts
                assert rtts[0] is not None and 0 < rtts[0] < 1, rtts  # loopback: well under a second
                assert rtts[1] is None or 0 < rtts[1] < 1, rtts
            else:
                assert rtts == []
        finally:
            client.close()
            peer.close()
    assert kernel_loaded_rtts(None) == []
    assert kernel_out_of_order_packets(None) is None


waits = st.lists(st.tuples(st.integers(0, 7), st.floats(0, 100)), max_size=8).map(
    lambda xs: [StreamWait(2 * i + 1, (u, 2 * i + 1), p) for i, (u, p) in enumerate(xs)])


@given(waits, st.floats(0, 200), st.floats(0.5, 30), st.booleans())
def test_a_starved_stream_got_nothing_for_a_stall_and_nothing_ahead_of_it_did(
        streams: list[StreamWait], t: float, stall: float, window_open: bool) -> None:
    starved = starved_streams(t, streams, stall, window_open)
    if not window_open:
        assert starved == [], "starved while the server had no window to send in"
    for s in streams:
        ahead = [a for a in streams if a.order < s.order]
        quiet = t - max([s.last_progress, *(a.last_progress for a in ahead)])
        assert (s.id in starved) == (window_open and quiet >= stall), (s, ahead, t)
    # and it stays starved later, with nothing new
    assert set(starved) <= set(starved_streams(t + 1, streams, stall, window_open))


def test_a_stream_behind_one_still_answered_waits_its_turn() -> None:
    streams = [StreamWait(1, (1, 1), 20.0), StreamWait(3, (3, 3), 0.0), StreamWait(5, (3, 5), 0.0)]
    assert starved_streams(30.0, streams, 15.0, True) == []
    assert starved_streams(35.0, streams, 15.0, True) == [1, 3, 5]
