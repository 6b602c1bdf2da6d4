"""Timing points are taken on the monotonic clock and reported on the wall clock (engine/timing.py): the report
must land where the extension's Date.now() put the same moment, also after the machine slept (Linux's
CLOCK_MONOTONIC, under time.monotonic, stands still during a suspend while the wall clock moves on)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from lanefetch.engine import timing
from lanefetch.engine.timing import RequestTiming


class Clocks:
    def __init__(self) -> None:
        self.wall = 1_800_000_000.0
        self.mono = 5_000.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def both(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> Clocks:
    c = Clocks()
    monkeypatch.setattr(timing, "time", SimpleNamespace(time=c.time, monotonic=c.monotonic))
    return c


def test_points_after_a_suspend_are_reported_at_their_wall_clock_moment(clocks: Clocks) -> None:
    before = RequestTiming(queued=timing.now())
    clocks.both(0.020)
    before.sent = timing.now()
    early = before.as_epoch_ms()
    # An hour asleep: the wall clock moved on, the monotonic one did not.
    clocks.wall += 3600
    clocks.both(0.001)
    after = RequestTiming(queued=timing.now())
    clocks.both(0.005)
    after.first_byte = timing.now()
    late = after.as_epoch_ms()
    assert early["queued"] is not None and late["queued"] is not None
    assert late["queued"] - early["queued"] == pytest.approx(3_600_021.0), "the hour asleep is in the reported times"
    assert late["queued"] == pytest.approx((clocks.wall - 0.005) * 1000)
    assert late["first_byte"] == pytest.approx(clocks.wall * 1000)
    assert early["sent"] is not None
    assert early["sent"] - early["queued"] == pytest.approx(20.0)


def test_one_reports_points_keep_their_order_and_spacing(clocks: Clocks) -> None:
    t = RequestTiming(queued=timing.now())
    t.connect_start = t.queued
    t.connect_end = t.sent = timing.now()
    ms = t.as_epoch_ms()
    assert ms["queued"] == ms["connect_start"]
    assert ms["connect_end"] == ms["sent"]
    assert timing.epoch_ms(None) is None
