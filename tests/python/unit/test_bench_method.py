"""The benchmark scenarios' method, without the lab: each scenario run against a fake lab, fake servers and fake
clients (no namespaces, no root, no browsers), to check what the reports say is how the runs were made: variants in
alternating order, each load's log lines and link counters its own, quantiles at their rank."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from bench import report, scenario_engine, scenario_grid
from bench.cli_fetch import BASELINE, PIPELINED


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
    assert "engine" in written


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
