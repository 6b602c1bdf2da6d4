"""The split scheduler without sockets: simulated lanes with their own rate, round trip, death or stall,
driven the way the asyncio shell drives it. Every byte must come out exactly once and in order, the
reordering memory must stay within the window, and the split must follow the lanes' speeds."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.lanes.reassembly import Reassembly
from lanefetch.lanes.schedule import (
    Attempt,
    Cancel,
    Fetch,
    LaneDown,
    LaneState,
    ScheduleConfig,
    SplitSchedule,
    subtract,
)

DT = 0.005  # simulated seconds per step


def body_of(size: int) -> bytes:
    return hashlib.shake_256(str(size).encode()).digest(size) if size else b""


@dataclass
class SimLane:
    """One link + server connection: answers its requests in order, each after one RTT, at `rate` B/s."""

    rate: float
    rtt: float
    dies_at: float | None = None  # from then on it delivers nothing
    dies_loudly: bool = True  # the shell hears an error (connection refused) rather than silence
    queue: list[tuple[Attempt, float]] = field(default_factory=list)  # (attempt, when its bytes may start)
    credit: float = 0.0
    busy_until: float = 0.0

    def dead(self, now: float) -> bool:
        return self.dies_at is not None and now >= self.dies_at


@dataclass
class Run:
    out: bytearray
    schedule: SplitSchedule
    finished_at: float
    downs: list[int]
    max_buffered: int


def simulate(size: int, first: int, lanes: list[SimLane], config: ScheduleConfig | None = None,
             max_seconds: float = 120.0, piece: int = 16384, speculative: int = 0,
             unusable: frozenset[int] = frozenset(), weights: list[float] | None = None) -> Run:
    """speculative: bytes each other lane asked for after the first range before the schedule existed
    (adopted with it); the lanes in `unusable` find theirs unusable when its head arrives (discarded)."""
    body = body_of(size)
    sched = SplitSchedule(size, [LaneState(i, weights[i] if weights else 1.0) for i in range(len(lanes))], config)
    out = bytearray()
    downs: list[int] = []
    max_buffered = 0
    now = 0.0
    discards: list[tuple[float, Attempt]] = []
    if size:
        att = sched.adopt(0, 0, min(first, size), 0.0)
        lanes[0].queue.append((att, lanes[0].rtt))
        start = first
        for i, sim in enumerate(lanes[1:], 1):
            if speculative and start < size:
                att = sched.adopt(i, start, min(start + speculative, size), 0.0)
                if i in unusable:
                    discards.append((sim.rtt, att))
                else:
                    sim.queue.append((att, sim.rtt))
                start += speculative

    def run(cmds: list[Fetch | Cancel | LaneDown]) -> None:
        for c in cmds:
            if isinstance(c, Fetch):
                sim = lanes[c.attempt.lane]
                sim.queue.append((c.attempt, now + sim.rtt))
                if sim.dead(now) and sim.dies_loudly:
                    run(sched.attempt_failed(c.attempt.id, now, "refused"))
            elif isinstance(c, Cancel):
                sim = lanes[c.attempt.lane]
                sim.queue = [(a, t) for a, t in sim.queue if a is not c.attempt]
            else:
                downs.append(c.lane)
                lanes[c.lane].queue.clear()

    while not sched.done and not sched.failed and now < max_seconds:
        for t, att in [d for d in discards if d[0] <= now]:
            discards.remove((t, att))
            sched.discard(att.id)
        run(sched.poll(now))
        now += DT
        for i, sim in enumerate(lanes):
            if sim.dead(now):
                if sim.queue and sim.dies_loudly:
                    att = sim.queue[0][0]
                    sim.queue.clear()
                    run(sched.attempt_failed(att.id, now, "connection reset"))
                continue
            sim.credit = min(sim.credit + sim.rate * DT, sim.rate * DT * 2)
            while sim.queue and sim.credit >= 1:
                att, start = sim.queue[0]
                if now < start:
                    break
                n = int(min(sim.credit, piece, att.end - att.pos))
                if n > 0:
                    data = body[att.pos : att.pos + n]
                    sim.credit -= n
                    out += b"".join(sched.receive(att.id, data, now))
                if att.pos >= att.end:
                    sim.queue.pop(0)
                    sched.attempt_done(att.id, now)
                    if sim.queue:  # the next pipelined response follows at once
                        nxt, t = sim.queue[0]
                        sim.queue[0] = (nxt, max(t, now))
            max_buffered = max(max_buffered, sched.output.buffered)
            del i
    return Run(out, sched, now, downs, max_buffered)


# -------------------------------------------------------------------------------------------- reassembly


def test_reassembly_in_order_once_with_overlaps() -> None:
    r = Reassembly(10)
    assert r.add(5, b"56789") == []
    assert r.add(3, b"345") == []  # overlaps the waiting 5
    assert r.buffered == 7
    assert b"".join(r.add(0, b"0123")) == b"0123456789"
    assert r.complete and r.buffered == 0


@given(st.integers(1, 400), st.lists(st.tuples(st.integers(0, 399), st.integers(1, 120)), max_size=40))
def test_reassembly_any_pieces(size: int, pieces: list[tuple[int, int]]) -> None:
    body = body_of(size)
    r = Reassembly(size)
    out = bytearray()
    for off, n in [*pieces, (0, size)]:
        off = min(off, size - 1)
        out += b"".join(r.add(off, body[off : off + n]))
        assert r.buffered <= size - r.delivered
    assert bytes(out) == body and r.complete


def test_subtract() -> None:
    assert subtract([(0, 10)], [(2, 4), (6, 8)]) == [(0, 2), (4, 6), (8, 10)]
    assert subtract([(0, 10)], [(0, 10)]) == []
    assert subtract([(0, 5), (7, 9)], [(4, 8)]) == [(0, 4), (8, 9)]


# -------------------------------------------------------------------------------------------- scheduling


def test_small_body_needs_no_second_request() -> None:
    run = simulate(15_000, 20_480, [SimLane(600_000, 0.1), SimLane(600_000, 0.1)])
    assert bytes(run.out) == body_of(15_000)
    assert run.schedule.lanes[0].requests == 1 and run.schedule.lanes[1].requests == 0


def test_equal_lanes_share_equally_and_finish_near_the_ideal() -> None:
    size = 4_000_000
    run = simulate(size, 20_480, [SimLane(600_000, 0.1), SimLane(600_000, 0.1)])
    assert bytes(run.out) == body_of(size)
    a, b = run.schedule.lanes[0].bytes, run.schedule.lanes[1].bytes
    assert abs(a - b) < 0.1 * size, (a, b)
    ideal = size / 1_200_000 + 0.2  # summed rate, plus a request round trip and the first exchange
    assert run.finished_at < ideal * 1.1, (run.finished_at, ideal)


def test_unequal_lanes_split_in_proportion() -> None:
    size = 6_000_000
    run = simulate(size, 20_480, [SimLane(1_250_000, 0.08), SimLane(625_000, 0.12)])
    assert bytes(run.out) == body_of(size)
    fast, slow = run.schedule.lanes[0].bytes, run.schedule.lanes[1].bytes
    assert 1.6 < fast / slow < 2.5, (fast, slow)
    assert size / 1_875_000 / run.finished_at > 0.9, run.finished_at  # ≥ 90 % of the summed rate


def test_speculative_ranges_are_used_or_fetched_again() -> None:
    lanes = [SimLane(625_000, 0.1), SimLane(625_000, 0.1), SimLane(625_000, 0.1)]
    run = simulate(1_000_000, 20_480, lanes, speculative=65_536)
    assert bytes(run.out) == body_of(1_000_000)
    spec = [a for a in run.schedule.attempts.values() if a.start in (20_480, 86_016)]
    assert len(spec) == 2 and all(a.pos == a.end for a in spec)  # adopted, delivered, never asked again
    assert sum(1 for a in run.schedule.attempts.values() if a.start <= 20_480 < a.end) == 1
    # one lane's speculative answer cannot be used: its bytes are asked for again, the lane stays up
    lanes = [SimLane(625_000, 0.1), SimLane(625_000, 0.1), SimLane(625_000, 0.1)]
    run = simulate(1_000_000, 20_480, lanes, speculative=65_536, unusable=frozenset({1}))
    assert bytes(run.out) == body_of(1_000_000) and not run.downs
    assert sum(1 for a in run.schedule.attempts.values() if a.start <= 20_480 < a.end) == 2
    assert run.schedule.lanes[1].bytes > 100_000


@pytest.mark.parametrize(("start", "end"), [(0, 1001), (1000, 1064), (5, 5)])
def test_adopt_outside_the_body_is_refused(start: int, end: int) -> None:
    with pytest.raises(ValueError, match="cannot adopt"):
        SplitSchedule(1000, [LaneState(0)]).adopt(0, start, end, 0.0)


def test_slow_lane_tail_is_stolen() -> None:
    size = 2_000_000
    # lane 1 is ten times slower than the estimate a weight would give it: the fast lane steals its tail
    run = simulate(size, 20_480, [SimLane(1_000_000, 0.05), SimLane(100_000, 0.05)])
    assert bytes(run.out) == body_of(size)
    assert any(a.steal_of is not None for a in run.schedule.attempts.values())
    assert run.finished_at < size / 1_100_000 + 0.6


def test_silent_lane_is_given_up_and_its_ranges_reassigned() -> None:
    size = 3_000_000
    run = simulate(size, 20_480, [SimLane(600_000, 0.1), SimLane(600_000, 0.1, dies_at=1.0, dies_loudly=False)])
    assert bytes(run.out) == body_of(size)
    assert run.downs == [1]
    assert not run.schedule.lanes[1].alive and "no data" in (run.schedule.lanes[1].down_reason or "")


def test_all_lanes_dead_fails() -> None:
    run = simulate(3_000_000, 20_480, [SimLane(600_000, 0.1, dies_at=0.5), SimLane(600_000, 0.1, dies_at=0.7)])
    assert run.schedule.failed and not run.schedule.done
    assert bytes(run.out) == body_of(3_000_000)[: len(run.out)]  # what came out is still the right prefix


def test_window_bounds_reordering_memory() -> None:
    cfg = ScheduleConfig(window=256 * 1024, initial_chunk=64 * 1024)
    # the in-order lane is slow: the fast one may not run ahead more than the window
    run = simulate(2_000_000, 20_480, [SimLane(100_000, 0.05), SimLane(2_000_000, 0.05)], cfg)
    assert bytes(run.out) == body_of(2_000_000)
    assert run.max_buffered <= cfg.window


lane_st = st.builds(
    SimLane,
    rate=st.floats(20_000, 2_000_000),
    rtt=st.floats(0.005, 0.4),
    dies_at=st.one_of(st.none(), st.floats(0.0, 5.0)),
    dies_loudly=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(
    size=st.integers(0, 1_500_000),
    first=st.integers(1, 100_000),
    lanes=st.lists(lane_st, min_size=1, max_size=3),
    survivor=st.builds(SimLane, rate=st.floats(50_000, 2_000_000), rtt=st.floats(0.005, 0.4)),
    window=st.integers(64 * 1024, 4 * 1024 * 1024),
    piece=st.integers(1000, 70_000),
    speculative=st.sampled_from([0, 1, 64 * 1024, 300_000]),
    unusable=st.frozensets(st.integers(1, 3)),
    weights=st.lists(st.floats(min_value=0.0, exclude_min=True, allow_infinity=False), min_size=4, max_size=4),
)
def test_every_byte_once_in_order_whatever_lanes_do(
    size: int, first: int, lanes: list[SimLane], survivor: SimLane, window: int, piece: int, speculative: int,
    unusable: frozenset[int], weights: list[float],
) -> None:
    cfg = ScheduleConfig(window=window)
    all_lanes = [*lanes, survivor]  # one lane never dies: the body must arrive
    run = simulate(size, first, all_lanes, cfg, max_seconds=200.0, piece=piece, speculative=speculative,
                   unusable=unusable, weights=weights)
    assert run.schedule.done, (run.finished_at, run.schedule.todo, run.downs)
    assert bytes(run.out) == body_of(size)
    # The window bounds what the schedule hands out (stolen tails included); ranges the shell sent before the
    # schedule existed (speculative ones, adopted) can reach past it by their own size.
    assert run.max_buffered <= window + speculative * len(lanes)
    assert len(run.downs) == len(set(run.downs))  # a lane goes down once
    assert len(all_lanes) - 1 not in run.downs


def test_a_stolen_tail_stays_within_the_window() -> None:
    """Found by the property below: a 1-byte first range and a speculative range past the window on the other lane;
    the idle first lane stole that range's tail beyond the window and the reordering buffer overran it."""
    lanes = [SimLane(rate=24685.0, rtt=0.25), SimLane(rate=50000.0, rtt=0.25)]
    run = simulate(299504, 1, lanes, ScheduleConfig(window=65536), max_seconds=200.0, piece=1000, speculative=300000)
    assert run.schedule.done and bytes(run.out) == body_of(299504)
    assert run.max_buffered <= 65536


@pytest.mark.parametrize(("known", "other"), [(1e-300, 1e6), (1e-310, 1e-310), (1e-310, 2.0)])
def test_weights_far_apart_or_tiny_give_finite_guesses(known: float, other: float) -> None:
    """Weights the policy accepts (any number above 0; the options page up to 1e6) but 1e306 apart, or tiny: the guessed
    rate of a lane without estimates, a known lane's rate per weight times its own, overflowed to inf and int() raised
    out of poll."""
    sched = SplitSchedule(10_000_000, [LaneState(0, known), LaneState(1, other)])
    sched.lanes[0].estimate.rate_sample(1e5)
    sched.lanes[0].estimate.rtt_sample(0.05)
    sched.adopt(0, 0, 20_480, 0.0)
    cmds = sched.poll(0.0)
    assert 1 in [c.attempt.lane for c in cmds if isinstance(c, Fetch)]
    assert all(r is not None and r < float("inf") for r in (sched._rate(ln) for ln in sched.lanes.values()))
