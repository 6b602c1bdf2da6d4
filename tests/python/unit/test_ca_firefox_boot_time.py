"""The boot time behind a Firefox process's start (ca_firefox.boot_time): a CA installed just before Firefox
started must count as loaded, so the start may not come out earlier than it was."""

from __future__ import annotations

import time

import pytest
from lanefetch.proxy.ca_firefox import boot_time

pytestmark = pytest.mark.skipif(not hasattr(time, "CLOCK_BOOTTIME"), reason="needs CLOCK_BOOTTIME (Linux)")


def _proc_btime() -> int:
    with open("/proc/stat") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("btime "))


def test_boot_time_is_not_truncated_to_the_second() -> None:
    btime = _proc_btime()
    precise = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    got = boot_time(btime)
    assert abs(got - precise) < 0.05  # the sub-second part kept (btime alone is up to 1 s early)
    assert int(got) in (btime, btime + 1)


def test_another_machines_btime_is_taken_as_it_is() -> None:
    assert boot_time(1_000_000) == 1_000_000.0  # a /proc that is not this machine's (a test's, a container's)
