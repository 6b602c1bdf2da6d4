"""The CPU a page load cost the browser and the helper, from samples of the driver's process tree (bench/tree_cpu.py):
stat lines parsed, the tree split into browser and helper, and growth summed sample by sample with processes that
ended counted once, against a simulated tree whose every tick is known."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import pytest
from bench.tree_cpu import BROWSER, HELPER, ProcStat, TreeCpu, parse_stat, parts
from hypothesis import given, settings
from hypothesis import strategies as st


def _line(pid: int, comm: str, ppid: int, utime: int, stime: int, cutime: int, cstime: int, start: int) -> str:
    rest = ["S", ppid, pid, pid, 0, -1, 4194560, 10, 0, 0, 0, utime, stime, cutime, cstime, 20, 0, 1, 0, start,
            1000, 10, 0]
    return f"{pid} ({comm}) " + " ".join(str(x) for x in rest) + "\n"


def test_a_stat_line_gives_parent_own_and_reaped_times_and_start() -> None:
    p = parse_stat(_line(42, "lanefetch-host", 7, 120, 30, 8, 2, 99_000))
    assert p == ProcStat(pid=42, comm="lanefetch-host", ppid=7, own_ticks=150, children_ticks=10, start_ticks=99_000)


def test_a_comm_with_spaces_and_parentheses_ends_at_the_last_one() -> None:
    p = parse_stat(_line(9, "Web Content) (x", 3, 1, 2, 3, 4, 5))
    assert (p.comm, p.ppid, p.own_ticks, p.children_ticks, p.start_ticks) == ("Web Content) (x", 3, 3, 7, 5)


def test_this_processs_own_stat_line_parses() -> None:
    with open("/proc/self/stat") as f:
        p = parse_stat(f.read())
    assert p.pid == os.getpid() and p.ppid == os.getppid()


@pytest.mark.parametrize("line", ["", "42", "42 (x) S 1 2", "(x) S 1 " + "0 " * 30, "x (y) " + "0 " * 30])
def test_what_is_not_a_stat_line_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        parse_stat(line)


def _p(pid: int, ppid: int, comm: str = "chromium", own: int = 0, reaped: int = 0, start: int = 0) -> ProcStat:
    return ProcStat(pid=pid, comm=comm, ppid=ppid, own_ticks=own, children_ticks=reaped, start_ticks=start)


TREE = [_p(1, 0, "init"), _p(100, 1, "node"), _p(101, 100), _p(102, 101), _p(103, 102),
        _p(110, 101, "lanefetch-host"), _p(111, 110, "python3"), _p(112, 111, "python3"), _p(200, 1, "firefox")]


def test_the_helper_is_the_host_and_all_under_it_the_browser_the_rest_below_the_driver() -> None:
    got = {pid: part for (pid, _), part in parts(TREE, 100).items()}
    assert got == {101: BROWSER, 102: BROWSER, 103: BROWSER, 110: HELPER, 111: HELPER, 112: HELPER}


def _seconds(samples: list[tuple[list[ProcStat], float, bool]], root: int = 100) -> dict[str, float]:
    t = TreeCpu(root, ticks_per_s=100)
    for procs, at, counting in samples:
        t.sample(procs, at, counting)
    return t.seconds()


def test_growth_counts_only_between_samples_that_say_so() -> None:
    def at(browser: int, helper: int) -> list[ProcStat]:
        return [_p(100, 1, "node", own=5000), _p(101, 100, own=browser), _p(110, 101, "lanefetch-host", own=helper)]

    got = _seconds([(at(1000, 50), 10.0, False), (at(1100, 80), 10.5, True),  # +1.0 / +0.3
                    (at(1500, 90), 11.0, False),  # the driver reading the page: not counted
                    (at(1520, 100), 11.5, True)])  # +0.2 / +0.1
    assert got == {BROWSER: pytest.approx(1.2), HELPER: pytest.approx(0.4)}


def test_a_process_born_since_the_last_sample_counts_whole_and_one_missed_from_now_on() -> None:
    base = [_p(100, 1, "node"), _p(101, 100, own=100)]
    got = _seconds([(base, 10.0, False),
                    ([*base, _p(102, 101, own=40, start=1005), _p(103, 101, own=70, start=900)], 10.2, True),
                    ([*base, _p(102, 101, own=50, start=1005), _p(103, 101, own=75, start=900)], 10.4, True)])
    assert got[BROWSER] == pytest.approx(0.40 + 0.10 + 0.05)


def test_an_ended_child_counts_its_last_sample_and_its_tail_from_its_parents_cutime_once() -> None:
    got = _seconds([([_p(100, 1), _p(101, 100, own=100), _p(102, 101, own=10, start=5)], 1.0, False),
                    ([_p(100, 1), _p(101, 100, own=110), _p(102, 101, own=30, start=5)], 1.1, True),
                    # 102 ended at 35 ticks (its last 5 after the sample) and 101 reaped it; 101 also reaped a
                    # child born and ended between the samples (7 ticks).
                    ([_p(100, 1), _p(101, 100, own=120, reaped=35 + 7)], 1.2, True)])
    assert got[BROWSER] == pytest.approx((10 + 20) / 100 + (10 + 5 + 7) / 100)


def test_a_reused_pid_is_another_process() -> None:
    got = _seconds([([_p(100, 1), _p(101, 100, own=100), _p(102, 101, own=500, start=5)], 1.0, False),
                    ([_p(100, 1), _p(101, 100, own=100, reaped=500), _p(102, 101, own=20, start=195)], 2.0, True)])
    assert got[BROWSER] == pytest.approx(0.20)


# A simulated tree: every tick of CPU known, ended processes reaped by their parent (which adds their final own and
# reaped times to its cutime, as wait() does), samples taken at some steps, counting or not.

@dataclass
class _Proc:
    pid: int
    ppid: int
    comm: str
    start: int
    own: int = 0
    reaped: int = 0
    alive: bool = True
    children: list[int] = field(default_factory=list)


Op = tuple[str, int, int]
_ops = st.lists(st.one_of(
    st.tuples(st.just("spawn"), st.integers(0, 50), st.integers(0, 1)),
    st.tuples(st.just("burn"), st.integers(0, 50), st.integers(1, 40)),
    st.tuples(st.just("exit"), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("sample"), st.integers(0, 1), st.just(0)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_ops)
def test_the_sum_over_samples_is_every_tick_spent_while_counting(ops: list[Op]) -> None:
    procs = {100: _Proc(100, 1, "node", 0), 101: _Proc(101, 100, "chromium", 0),
             110: _Proc(110, 101, "lanefetch-host", 0)}
    procs[101].children.append(110)

    def part(pid: int) -> str:
        while pid in procs:
            if procs[pid].comm == "lanefetch-host":
                return HELPER
            pid = procs[pid].ppid
        return BROWSER

    tree = TreeCpu(100, ticks_per_s=100)
    pending = {BROWSER: 0, HELPER: 0}  # spent since the last sample
    truth = {BROWSER: 0, HELPER: 0}
    sampled = False
    for step, (kind, a, b) in enumerate(ops, start=1):
        live = [p for p in procs.values() if p.alive and p.pid != 100]
        if kind == "spawn":
            parent = live[a % len(live)]
            pid = 1000 + step
            procs[pid] = _Proc(pid, parent.pid, "python3" if b else "chromium", start=step * 100)
            parent.children.append(pid)
        elif kind == "burn":
            p = live[a % len(live)]
            p.own += b
            pending[part(p.pid)] += b
        elif kind == "exit":  # a leaf below the browser and the helper (they run for the whole load)
            leaves = [p for p in live if p.pid not in (101, 110) and not any(procs[c].alive for c in p.children)]
            if leaves:
                p = leaves[a % len(leaves)]
                p.alive = False
                procs[p.ppid].reaped += p.own + p.reaped
        else:
            counting = bool(a)
            snapshot = [ProcStat(p.pid, p.comm, p.ppid, p.own, p.reaped, p.start) for p in procs.values() if p.alive]
            tree.sample(snapshot, step + 0.5, counting)  # between step's events and the next step's
            if counting and sampled:
                truth = {k: truth[k] + pending[k] for k in truth}
            pending = {BROWSER: 0, HELPER: 0}
            sampled = True
    assert tree.seconds() == {k: pytest.approx(v / 100) for k, v in truth.items()}


def test_a_process_the_tree_left_keeps_what_was_counted() -> None:
    """A child orphaned to init (its parent not reaping it) leaves the tree: not counted again, not taken back."""
    kept = _p(102, 101, own=60, start=5)
    got = _seconds([([_p(100, 1), _p(101, 100), kept], 1.0, False),
                    ([_p(100, 1), _p(101, 100), replace(kept, own_ticks=80)], 1.1, True),
                    ([_p(100, 1), _p(101, 100), replace(kept, own_ticks=95, ppid=1)], 1.2, True)])
    assert got[BROWSER] == pytest.approx(0.20)


def test_a_child_and_its_parent_that_both_ended_are_the_grandparents_to_count_once() -> None:
    t = TreeCpu(100, ticks_per_s=100)
    t.sample([_p(100, 1), _p(101, 100), _p(102, 101, own=10, start=5), _p(103, 102, own=20, start=6)], 1.0, False)
    # 103 ended at 25 (102 reaped it: 102's cutime 25), then 102 at 12 (101 reaped 12 + 25).
    t.sample([_p(100, 1), _p(101, 100, reaped=12 + 25)], 1.1, True)
    assert t.seconds()[BROWSER] == pytest.approx((2 + 5) / 100) and t.ended == 2
