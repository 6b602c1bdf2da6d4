"""The benchmark scenarios' method, without the lab: each scenario run against a fake lab, fake servers and fake
clients (no namespaces, no root, no browsers), to check what the reports say is how the runs were made: variants in
alternating order, each load's log lines and link counters its own, quantiles at their rank."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from bench import __main__ as bench_main
from bench import page_load, report, scenario_delay, scenario_engine, scenario_grid, scenario_hol, scenario_real_pages
from bench.cli_fetch import BASELINE, IP_OVERHEAD, PIPELINED
from bench.servers import AccessRecord
from bench.tree_cpu import ProcStat, parse_stat


class _Host:
    ip = "10.231.0.1"
    ns = None


class _Link:
    b_ip = "10.231.1.2"

    def stats(self) -> dict[str, Any]:
        return {d: {"packets": 0, "bytes": 0, "dropped_queue": 0, "late_packets": 0} for d in ("up", "down")}


class _Lab:
    def __enter__(self) -> _Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def host(self, name: str) -> _Host:
        return _Host()

    def link(self, a: _Host, b: _Host, profile: object) -> _Link:
        return _Link()

    def links(self, a: _Host, b: _Host, profiles: Sequence[object]) -> list[_Link]:
        return [_Link() for _ in profiles]


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """What the scenario's report would have said, by name (nothing written to results/)."""
    out: dict[str, list[str]] = {}

    def write(name: str, title: str, lines: Sequence[str]) -> Path:
        out[name] = list(lines)
        return Path(f"{name}.md")

    monkeypatch.setattr(report, "write", write)
    yield out


def _fetcher(order: list[str]) -> Any:
    """A fake `cli_fetch.fetch`: records which variant ran (by its arguments), answers every URL."""
    names = {tuple(PIPELINED): "lanefetch", tuple(BASELINE): "baseline"}

    def fetch(client: object, urls: list[str], extra: list[str], sizes: object = None, **kw: object) -> dict[str, Any]:
        if len(urls) > 1:  # not the page-cache warm-up
            order.append(names[tuple(extra)])
        return {"elapsed_s": 1.0, "max_concurrent_connections": 4,
                "requests": [{"url": u, "status": 200, "bytes": 2048, "wire_bytes": 2300} for u in urls]}
    return fetch


def _rounds(order: list[str], variants: int) -> list[list[str]]:
    return [order[i:i + variants] for i in range(0, len(order), variants)]


def test_engine_alternates_the_order_of_its_variants_round_by_round(
        monkeypatch: pytest.MonkeyPatch, written: dict[str, list[str]]) -> None:
    order: list[str] = []
    monkeypatch.setattr(scenario_engine, "Lab", _Lab)
    monkeypatch.setattr(scenario_engine, "start_nginx", lambda *a, **k: None)
    monkeypatch.setattr(scenario_engine, "fetch", _fetcher(order))
    scenario_engine.run(4)
    assert _rounds(order, 2) == [["lanefetch", "baseline"], ["baseline", "lanefetch"]] * 2
    # The report says by how much T_min scales the bytes for IP+TCP headers: what cli_fetch.t_min does.
    assert IP_OVERHEAD == 1500 / 1448 and "scaled by 1500/1448 for IP+TCP headers" in " ".join(written["engine"])


def test_grid_alternates_the_order_of_its_variants_round_by_round(
        monkeypatch: pytest.MonkeyPatch, written: dict[str, list[str]]) -> None:
    order: list[str] = []
    monkeypatch.setattr(scenario_grid, "Lab", _Lab)
    monkeypatch.setattr(scenario_grid, "start_nginx", lambda *a, **k: None)
    monkeypatch.setattr(scenario_grid, "fetch", _fetcher(order))
    monkeypatch.setattr(scenario_grid, "_plot", lambda results: Path("seed000-grid.png"))
    monkeypatch.setattr(scenario_grid, "COUNTS", [20])
    monkeypatch.setattr(scenario_grid, "SIZES", {"2 KB": 2048})
    scenario_grid.run(3)
    assert _rounds(order, 2) == [["lanefetch", "baseline"], ["baseline", "lanefetch"], ["lanefetch", "baseline"]]
    assert "seed000-grid" in written


class _Server:
    """An access log that grows as the fake browser's requests are answered."""

    def __init__(self) -> None:
        self.records: list[AccessRecord] = []

    def access_log(self, wait_for: int = 0, timeout: float = 5.0) -> list[AccessRecord]:
        return list(self.records)


class _Wire:
    """The link's counters (what `Link.stats` answers), moved by the fake browser's requests."""

    def __init__(self) -> None:
        self.bytes = {"up": 0, "down": 0}
        self.late = 0  # packets the emulator delivered late (short of CPU), downlink

    def stats(self) -> dict[str, Any]:
        return {d: {"bytes": n, "dropped_queue": 0, "late_packets": self.late if d == "down" else 0}
                for d, n in self.bytes.items()}


class _Driver:
    """A page driver (bench/page_measure.ts's protocol) whose browser loads `pages` one after the other: the first
    while the caller waits for its line, each next one as soon as the caller says go. As on `lan`, the next load's
    first request is answered (logged, its bytes on the link) before the caller's next step after the go."""

    def __init__(self, server: _Server, wire: _Wire, pages: list[list[str]]) -> None:
        self.server, self.wire, self.pages = server, wire, pages
        self.loads = 0
        self.started: list[str] = []  # the paths of the load under way already asked for
        self.stdin = self
        self.stdout = self
        self.pid = -1  # no process: the CPU sampler finds no tree under it

    def _ask(self, path: str) -> None:
        self.server.records.append(AccessRecord(str(self.loads), 1, False, "10.231.1.1", 40000, 200, 1000,
                                                0.0, 0.0, f"GET {path} HTTP/1.1"))
        self.wire.bytes["up"] += 100
        self.wire.bytes["down"] += 1100
        self.started.append(path)

    def readline(self) -> str:
        page = self.pages[self.loads]
        for path in page[len(self.started):]:
            self._ask(path)
        self.loads += 1
        self.started = []
        return json.dumps({"mode": "on", "load_s": 0.5, "wall_s": 0.6}) + "\n"

    def write(self, line: str) -> None:
        assert line == "go\n"
        self._ask(self.pages[self.loads][0])

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        return 0


class _Client:
    def __init__(self, driver: _Driver) -> None:
        self.driver = driver

    def popen(self, argv: list[str], **kw: object) -> _Driver:
        return self.driver


def test_the_next_pages_log_lines_and_link_bytes_are_all_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """seed000-pages' "next page" (and a repeat or again visit): what the server logged and the link carried from
    the caller's go on is the second load's, even what came before the caller looked."""
    monkeypatch.delenv("LANEFETCH_BENCH_PCAP", raising=False)
    monkeypatch.setattr(page_load.PageLab, "_settled_counters", page_load.PageLab._counters)
    shape = page_load.PageShape(2, 1000)
    first = ["/p2x1000/index.html", "/p2x1000/i000.png", "/p2x1000/i001.png"]
    warm = ["/p2x1000w/index.html", "/p2x1000w/i000.png", "/p2x1000w/i001.png"]
    server, wire = _Server(), _Wire()
    pl = page_load.PageLab.__new__(page_load.PageLab)
    pl.browser, pl.https, pl._trust, pl.ip = "chromium", False, None, "10.231.1.2"
    pl.srv, pl.link = server, wire  # type: ignore[assignment]
    pl.client = _Client(_Driver(server, wire, [first, warm]))  # type: ignore[assignment]
    runs = pl.load(shape, "on", warm=True)
    assert [[r.path for r in d["records"]] for d in runs] == [first, warm]
    assert [(d["all_requests"], d["img_requests"]) for d in runs] == [(3, 2), (3, 2)]
    assert [(d["up_bytes"], d["down_bytes"]) for d in runs] == [(300, 3300), (300, 3300)]


@pytest.mark.parametrize("scenario", sorted(bench_main.SCENARIOS))
def test_every_scenario_npm_run_bench_names_can_be_started(scenario: str) -> None:
    module, _, function = bench_main.SCENARIOS[scenario].partition(":")
    assert callable(getattr(importlib.import_module(module), function or "run"))


class _HolClient(_Host):
    """The client namespace of seed001-hol: each run's 12 small requests took 1, 2, ... 12 ms."""

    def run(self, argv: list[str], **kw: object) -> Any:
        class Done:
            stdout = json.dumps({"latencies": [k / 1000 for k in range(1, 13)], "bulk_s": 2.0}) + "\n"
        return Done()


class _HolLab(_Lab):
    def host(self, name: str) -> _Host:
        return _HolClient()


def test_hol_p90_is_the_latency_nine_in_ten_requests_stay_within(
        monkeypatch: pytest.MonkeyPatch, written: dict[str, list[str]]) -> None:
    monkeypatch.setattr(scenario_hol, "Lab", _HolLab)
    monkeypatch.setattr(scenario_hol, "start_nginx", lambda *a, **k: None)
    monkeypatch.setattr(scenario_hol, "_plot", lambda lat: None)
    scenario_hol.run(1)
    rows = [line.split(" | ") for line in written["seed001-hol"] if line.startswith("| ") and " ms" not in line]
    # Of 12 latencies (1..12 ms), 10 are ≤ 10 ms (83 %): 11 ms is the least that 90 % stay within.
    assert {row[2] for row in rows} == {"11"}
    assert {row[3] for row in rows} == {"12"}


def test_quantile_is_the_least_value_that_share_is_at_or_below() -> None:
    assert report.quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert report.quantile([float(k) for k in range(1, 11)], 0.9) == 9.0
    assert report.quantile([float(k) for k in range(1, 101)], 0.55) == 55.0  # 0.55 × 100 is a little over 55 in floats
    assert report.quantile([float(k) for k in range(1, 13)], 0.9) == 11.0
    assert report.quantile([5.0], 0.9) == report.quantile([5.0], 1.0) == 5.0
    for bad in ((), (1.0,)):
        with pytest.raises(ValueError):
            report.quantile(bad, 0.0 if bad else 0.5)


def test_delay_reports_the_p90_of_the_drawn_delays_at_its_rank(
        monkeypatch: pytest.MonkeyPatch, written: dict[str, list[str]]) -> None:
    monkeypatch.setattr(scenario_delay, "_plot", lambda series, means: Path("seed003-delay.png"))
    delays = {"realistic (log-normal)": [float(ms) for ms in range(1, 101)], "constant 80 ms": [80.0] * 100,
              "none": [0.0] * 100}
    one = {"peak": 10, "mean": 5.0, "conn_s": 100.0, "connections": 120, "page_s": [1.0], "series": [(0.0, 1)]}
    results = {(d, c): [one] for d in delays for c in scenario_delay.CLIENT_VARIANTS}
    scenario_delay._report(results, delays, 1)
    said = next(line for line in written[scenario_delay.NAME] if line.startswith("Drawn realistic delays"))
    assert "p90 90 ms" in said  # 90 of the 100 drawn are ≤ 90 ms; 91 ms is the 91st


def test_a_page_load_says_how_many_packets_the_emulator_delivered_late(monkeypatch: pytest.MonkeyPatch) -> None:
    """A link emulator short of CPU delivers packets late: the link was slower than its profile for that load (both
    variants alike, but T_min and "best possible" assume the profile). Split, hol and engine-h2 report it; every
    page load (seed000-pages, chromium-page, real-pages) says it too."""
    monkeypatch.delenv("LANEFETCH_BENCH_PCAP", raising=False)
    monkeypatch.setattr(page_load.PageLab, "_settled_counters", page_load.PageLab._counters)
    server, wire = _Server(), _Wire()
    page = ["/p2x1000/index.html", "/p2x1000/i000.png", "/p2x1000/i001.png"]

    class Late(_Driver):
        def readline(self) -> str:
            wire.late += 2
            return super().readline()

    pl = page_load.PageLab.__new__(page_load.PageLab)
    pl.browser, pl.https, pl._trust, pl.ip = "chromium", False, None, "10.231.1.2"
    pl.srv, pl.link = server, wire  # type: ignore[assignment]
    pl.client = _Client(Late(server, wire, [page]))  # type: ignore[assignment]
    (d,) = pl.load(page_load.PageShape(2, 1000), "off")
    assert d["late"] == 2
    assert "2 late" in page_load._describe_images(d)
    assert page_load.variant_row("OFF", [d, d])[-1] == "0 / 4"
    assert "2 late" in scenario_real_pages._describe({**d, "records": [], "waves": 0, "decoded": 0, "images": 0}, 0.6)


TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> ProcStat:
    with open(f"/proc/{pid}/stat") as f:
        return parse_stat(f.read())


def _ticks(pid: int) -> int:
    return _stat(pid).own_ticks


def test_a_marked_load_counts_the_cpu_its_browser_and_helper_spent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A driver that marks its navigation call and its load event (page_measure.ts cpuMark) is answered after each
    mark, and the load says how much CPU its process tree spent: here a real process whose two children burn CPU,
    one a browser's, one started as the helper's host (`lanefetch-host`, its comm). What they burned between the
    marks is counted, never more than they burned in all; a driver that does not mark gets no CPU fields."""
    monkeypatch.delenv("LANEFETCH_BENCH_PCAP", raising=False)
    monkeypatch.setattr(page_load.PageLab, "_settled_counters", page_load.PageLab._counters)
    host = tmp_path / "lanefetch-host"
    host.symlink_to(sys.executable)
    spin = '-c "while True: pass"'
    tree = subprocess.Popen(["sh", "-c", f'"{sys.executable}" {spin} & "{host}" {spin} & wait'],
                            start_new_session=True)
    try:
        def children() -> list[int]:
            for _ in range(100):
                with open(f"/proc/{tree.pid}/task/{tree.pid}/children") as f:
                    pids = [int(p) for p in f.read().split()]
                if len(pids) == 2 and all(_stat(p).comm != "sh" for p in pids):
                    return pids
                time.sleep(0.05)
            raise AssertionError("the spinning children did not start in 5 s")

        server, wire = _Server(), _Wire()
        page = ["/p2x1000/index.html", "/p2x1000/i000.png", "/p2x1000/i001.png"]
        acks: list[str] = []
        burnt_from: dict[int, int] = {}

        class Marking(_Driver):
            lines: ClassVar[list[str]] = ['{"cpu":"navigating"}\n', '{"cpu":"loaded"}\n']

            def readline(self) -> str:
                if not self.lines:
                    return super().readline()
                line = self.lines.pop(0)
                if "loaded" in line:  # the load burns at least 0.1 s of CPU in each child (bounded: 20 s)
                    for _ in range(400):
                        if all(_ticks(p) - t >= TICKS_PER_S // 10 for p, t in burnt_from.items()):
                            break
                        time.sleep(0.05)
                    else:
                        raise AssertionError("the children did not burn 0.1 s of CPU in 20 s")
                return line

            def write(self, line: str) -> None:
                acks.append(line)
                if len(acks) == 1:  # the navigation call's sample is taken
                    burnt_from.update({p: _ticks(p) for p in children()})

        pl = page_load.PageLab.__new__(page_load.PageLab)
        pl.browser, pl.https, pl._trust, pl.ip = "chromium", False, None, "10.231.1.2"
        pl.srv, pl.link = server, wire  # type: ignore[assignment]
        driver = Marking(server, wire, [page])
        driver.pid = tree.pid
        pl.client = _Client(driver)  # type: ignore[assignment]
        (d,) = pl.load(page_load.PageShape(2, 1000), "on")
        total = {_stat(p).comm: _ticks(p) / TICKS_PER_S for p in burnt_from}
    finally:
        os.killpg(tree.pid, signal.SIGKILL)
        tree.wait(10)
    assert acks == ["cpu\n", "cpu\n"]
    assert 0.1 <= d["cpu_browser_s"] <= total[Path(sys.executable).name[:15]]
    assert 0.1 <= d["cpu_helper_s"] <= total["lanefetch-host"] and d["cpu_ended"] == 0
    assert "CPU browser" in scenario_real_pages._describe({**d, "records": [], "waves": 0, "decoded": 0, "images": 0},
                                                          0.6)

    pl.client = _Client(_Driver(server, wire, [page]))  # type: ignore[assignment]
    (unmarked,) = pl.load(page_load.PageShape(2, 1000), "on")
    assert "cpu_browser_s" not in unmarked and "cpu_helper_s" not in unmarked
