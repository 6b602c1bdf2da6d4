"""Samples a page driver's process tree while a load runs, for `tree_cpu.TreeCpu` (the shell: /proc and a thread).

    with CpuSampler(driver.pid) as cpu:
        cpu.begin()         # the navigation call: what came before is not the load's
        ...                 # a thread samples every INTERVAL_S
        cpu.end()           # the load event: up to here counts, then nothing until the next begin
        cpu.begin()         # the quiet wait
        cpu.end()
        cpu.seconds()       # {"browser": s, "helper": s}

A sample reads every /proc/<pid>/stat (~2 ms of CPU for ~150 processes; every 0.1 s, ~2 % of one core, the same
in both variants): a full scan finds a child the moment it exists, whatever thread of its parent started it.
"""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType
from typing import Self

from bench.tree_cpu import ProcStat, TreeCpu, parse_stat

INTERVAL_S = 0.1


def scan() -> list[ProcStat]:
    """Every process's stat now (those that end while read are left out)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                out.append(parse_stat(f.read()))
        except (OSError, ValueError):
            continue
    return out


class CpuSampler:
    def __init__(self, root: int, interval_s: float = INTERVAL_S) -> None:
        self._tree = TreeCpu(root, os.sysconf("SC_CLK_TCK"))
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._counting = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def _sample(self, counting: bool) -> None:
        procs = scan()
        self._tree.sample(procs, time.clock_gettime(time.CLOCK_BOOTTIME), counting)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            with self._lock:
                if self._counting:
                    self._sample(True)

    def begin(self) -> None:
        """A sample now, from which on the time counts (the samples before it do not)."""
        with self._lock:
            self._sample(False)
            self._counting = True

    def end(self) -> None:
        """A sample now, up to which the time counts; none after it until the next begin()."""
        with self._lock:
            self._sample(True)
            self._counting = False

    def seconds(self) -> dict[str, float]:
        with self._lock:
            return self._tree.seconds()

    @property
    def ended(self) -> int:
        """Processes of the tree that ended (or left it) while counting, so far."""
        with self._lock:
            return self._tree.ended

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
