"""host_link.py: the host's interfaces say whether the link has been quiet, not only the engine's connections."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.host_link import HostLink, QuietTracker, parse_received, read_received

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed
    lo: 5000      40    0    0    0     0          0         0     5000      40    0    0    0     0       0          0
  eth0: 123456   300    0    0    0     0          0         0    9999       80    0    0    0     0       0          0
 wlan0:    44     1    0    0    0     0          0         0       0        0    0    0    0     0       0          0
"""


def test_the_listing_is_summed_with_loopback_apart() -> None:
    assert parse_received(NET_DEV, loopback=False) == 123456 + 44
    assert parse_received(NET_DEV, loopback=True) == 5000


@pytest.mark.parametrize("text", ["", "not a listing\n", NET_DEV.replace("123456", "12x456"),
                                  NET_DEV + "garbage without a colon\n"])
def test_what_is_not_a_listing_says_nothing(text: str) -> None:
    assert parse_received(text, loopback=False) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's counters are Linux's")
def test_this_hosts_counters_are_read() -> None:
    assert isinstance(read_received(False), int) and isinstance(read_received(True), int)


def test_quiet_counts_from_the_look_that_saw_the_count_move() -> None:
    q = QuietTracker()
    assert q.look(10.0, 100) == 0.0  # the first look knows nothing of the time before
    assert q.look(10.5, 100) == 0.5
    assert q.look(11.0, 160) == 0.0
    assert q.look(12.5, 160) == 1.5
    assert q.look(13.0, None) is None  # not readable: unknown, and the next reading starts afresh
    assert q.look(13.5, 160) == 0.0


@given(st.lists(st.tuples(st.floats(0, 10), st.one_of(st.none(), st.integers(0, 3))), max_size=30))
def test_quiet_is_never_longer_than_the_time_since_the_first_look_or_a_change(
        steps: list[tuple[float, int | None]]) -> None:
    q, t, start, last = QuietTracker(), 0.0, None, None
    for dt, count in steps:
        t += dt
        quiet = q.look(t, count)
        if count is None:
            assert quiet is None
            start = last = None
            continue
        if start is None or count != last:
            start = t
        last = count
        assert quiet == pytest.approx(t - start)


def test_loopback_and_the_other_interfaces_are_tracked_apart() -> None:
    counts = {True: 0, False: 0}
    link = HostLink(read=lambda loopback: counts[loopback])
    assert link.quiet(1.0, True) == 0.0 and link.quiet(1.0, False) == 0.0
    counts[True] += 1  # loopback busy: a loopback peer's link is not quiet, another's still is
    assert link.quiet(2.0, True) == 0.0 and link.quiet(2.0, False) == 1.0
    assert HostLink(read=lambda loopback: None).quiet(5.0, False) is None
