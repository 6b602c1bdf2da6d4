"""The round trip a new connection reports (engine/rtt_sample.py): never one too small, table-driven and by property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.rtt_sample import SCHEDULING_SLACK, handshake_round_trip


@pytest.mark.parametrize(("connect", "kernel", "rtt"), [
    (0.0004, 0.0002, 0.0002),  # LAN: the kernel's measure, without the event loop's delay
    (0.018, 0.0003, 0.0003),  # LAN on a busy machine: 18 ms of scheduling in Python's view
    (0.090, 0.0003, 0.0003),  # ... 90 ms of it (a browser starting on two cores)
    (0.052, 0.051, 0.051),  # lte: both agree
    (0.400, 0.004, 0.400),  # the field report: 4 ms from the kernel on a 400 ms link is not this handshake's
    (0.400, 0.009, 0.400),
    (0.400, None, 0.400),  # no TCP_INFO (not Linux) or no sample (the SYN was sent again)
    (0.020, 0.025, 0.020),  # a kernel figure above the connect time explains nothing
    (0.020, 0.0, 0.020),
])
def test_handshake_round_trip(connect: float, kernel: float | None, rtt: float) -> None:
    assert handshake_round_trip(connect, kernel) == rtt


@given(st.floats(0, 5), st.one_of(st.none(), st.floats(0, 5)))
def test_never_below_what_the_connect_time_allows(connect: float, kernel: float | None) -> None:
    rtt = handshake_round_trip(connect, kernel)
    assert connect - SCHEDULING_SLACK <= rtt <= connect
