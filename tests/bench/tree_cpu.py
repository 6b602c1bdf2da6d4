"""CPU seconds a page load cost the browser and lanefetch's helper, from samples of their process tree (pure: the
lines of /proc/<pid>/stat and the sample times in, seconds per part out; `cpu_sampler.py` reads /proc).

Theory of operation. On a machine of two cores the helper's CPU competes with the page's parsing and layout, so the
real-pages bench records, per load, the CPU (user + system) both spent while the load ran. Everything runs under the
page driver (node): the browser it launched, and under the browser the helper the browser started (the native host,
`lanefetch-host`; in Firefox it is the proxy too) with its discovery worker and the forkserver that started it.
The extension runs in the browser's processes: ON, the browser's part holds lanefetch's extension too.

- A sample is every process's stat line. The tree is the driver's descendants (the driver itself, node running
  Playwright or puppeteer, is neither part); a process is the helper's when it or an ancestor is `lanefetch-host`
  (the comm of the host script the manifest names), else the browser's.
- A process is keyed by pid and start time (a pid used again is another process). Its own time (utime + stime: all
  its threads, the ended ones too) counts by how much it grew since the last sample that saw it; a process born
  since the last sample counts whole. One seen before but not now ended: what it had at its last sample stays
  counted; its last moments after that sample only its parent knows. The parent, once it reaped it, holds its final
  times in cutime + cstime (with those of any child too short-lived to be sampled): a parent's growth there beyond
  what its vanished children last had is counted for the parent's part, the rest (already counted) is not counted
  twice.
  A child whose parent never waits for it (reaped automatically, or orphaned to init) loses only its tail.
- Each sample says whether the time since the previous one counts (the load: navigation call → load event, then the
  bench's quiet wait) or not (between them: the driver reading the page, taking its screenshot).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

HELPER_COMM = "lanefetch-host"  # bridge/install.py HOST_EXECUTABLE: the comm of the process the manifest starts
BROWSER, HELPER = "browser", "helper"


@dataclass(frozen=True)
class ProcStat:
    """What one /proc/<pid>/stat line says that matters here; times in clock ticks."""

    pid: int
    comm: str
    ppid: int
    own_ticks: int  # utime + stime
    children_ticks: int  # cutime + cstime: the children it waited for
    start_ticks: int  # since boot

    @property
    def key(self) -> tuple[int, int]:
        return self.pid, self.start_ticks


def parse_stat(line: str) -> ProcStat:
    """One /proc/<pid>/stat line (proc(5)). The comm is between the first "(" and the last ")": it may hold spaces
    and parentheses. ValueError when the line is not one."""
    opened, closed = line.find("("), line.rfind(")")
    if opened < 1 or closed < opened:
        raise ValueError(f"not a stat line: {line[:80]!r}")
    rest = line[closed + 1:].split()
    if len(rest) < 20:
        raise ValueError(f"stat line too short: {line[:80]!r}")
    # rest[0] is field 3 (state): field n is rest[n - 3].
    utime, stime, cutime, cstime = (int(rest[n - 3]) for n in (14, 15, 16, 17))
    return ProcStat(pid=int(line[:opened]), comm=line[opened + 1:closed], ppid=int(rest[1]),
                    own_ticks=utime + stime, children_ticks=cutime + cstime, start_ticks=int(rest[19]))


def parts(procs: Iterable[ProcStat], root: int) -> dict[tuple[int, int], str]:
    """Each descendant of `root` (not root itself) → BROWSER or HELPER."""
    children: dict[int, list[ProcStat]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out: dict[tuple[int, int], str] = {}
    todo = [(c, BROWSER) for c in children.get(root, [])]
    while todo:
        p, part = todo.pop()
        if p.key in out:
            continue  # a cycle in a torn sample (a pid reused between reads): each once
        part = HELPER if part == HELPER or p.comm == HELPER_COMM else BROWSER
        out[p.key] = part
        todo += [(c, part) for c in children.get(p.pid, []) if c.pid != p.pid]
    return out


@dataclass
class _Seen:
    stat: ProcStat
    part: str


class TreeCpu:
    """Accumulates, sample by sample, the CPU seconds the tree under `root` spent in the intervals that count."""

    def __init__(self, root: int, ticks_per_s: int = 100) -> None:
        self.root = root
        self.ticks_per_s = ticks_per_s
        self._seen: dict[tuple[int, int], _Seen] = {}
        self._last_s: float | None = None
        self._ticks = {BROWSER: 0, HELPER: 0}
        #: Processes of the tree that ended (or left it) while counting.
        self.ended = 0

    def sample(self, procs: Iterable[ProcStat], now_boot_s: float, counting: bool) -> None:
        """One sample, taken at `now_boot_s` (seconds since boot, the clock of the start times); `counting`: the
        time since the previous sample is the load's."""
        procs = list(procs)
        now_parts = parts(procs, self.root)
        now = {p.key: _Seen(p, now_parts[p.key]) for p in procs if p.key in now_parts}
        if self._last_s is not None and counting:
            self._count(now, self._last_s)
        # Kept beyond this sample only if still there: an ended process's last sample was counted.
        self._seen = now
        self._last_s = now_boot_s

    def _count(self, now: Mapping[tuple[int, int], _Seen], last_s: float) -> None:
        gone = [s for k, s in self._seen.items() if k not in now]
        self.ended += len(gone)
        # Each ended process's last times, filed under its nearest ancestor still there (a child and its parent
        # that both ended: the grandparent reaped the lot).
        was = {s.stat.pid: s for s in self._seen.values()}
        present = {s.stat.pid for s in now.values()}
        gone_by_reaper: dict[int, int] = {}
        for s in gone:
            up, hops = s.stat.ppid, 0
            while up not in present and up in was and hops < len(was):
                up, hops = was[up].stat.ppid, hops + 1
            gone_by_reaper[up] = gone_by_reaper.get(up, 0) + s.stat.own_ticks + s.stat.children_ticks
        for key, s in now.items():
            before = self._seen.get(key)
            if before is None:
                # Born since the last sample (a tick's grace: the start time is rounded down to a tick): all of it
                # is this interval's. Else a process the last sample missed: from now on.
                born_since = s.stat.start_ticks >= (last_s * self.ticks_per_s) - 1
                own = s.stat.own_ticks if born_since else 0
                reaped = s.stat.children_ticks if born_since else 0
            else:
                own = s.stat.own_ticks - before.stat.own_ticks
                reaped = s.stat.children_ticks - before.stat.children_ticks
            # What its ended children last had was counted while they ran: only the rest of what it reaped counts.
            reaped -= min(max(reaped, 0), gone_by_reaper.get(s.stat.pid, 0))
            self._ticks[s.part] += max(own, 0) + max(reaped, 0)

    def seconds(self) -> dict[str, float]:
        """BROWSER and HELPER: the CPU seconds counted so far."""
        return {part: ticks / self.ticks_per_s for part, ticks in self._ticks.items()}
