"""Benchmark reports: what ran where (machine, versions, link), and Markdown tables of side-by-side ratios."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import random
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results")


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "absent"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else "?"


def environment() -> list[str]:
    from lanefetch import __version__

    return [
        f"- date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
        f"- python {platform.python_version()}, lanefetch {__version__}, {_version(['nginx', '-v'])}",
        # Ratios are measured side by side, but a busy machine starves the link emulator and the browsers.
        "- load average at the end of the run (1/5/15 min): {:.2f} / {:.2f} / {:.2f}".format(*os.getloadavg()),
    ]


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def write(name: str, title: str, lines: Sequence[str]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    text = "\n".join([f"# {title}", "", *environment(), "", *lines, ""])
    path.write_text(text)
    print(text)
    return path


def save_figure(fig: Any, name: str) -> Path:
    """A matplotlib figure as results/NAME.png."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def quantile(xs: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-quantile (0 < q ≤ 1): the least of the values that a share q of them is at or below
    (p90 of 12 runs is the 11th: 10 of 12 is only 83 %). A value that was measured, never one interpolated."""
    if not xs or not 0 < q <= 1:
        raise ValueError(f"values and 0 < q ≤ 1 needed: {len(xs)} values, q {q}")
    return sorted(xs)[math.ceil(q * len(xs) - 1e-9) - 1]  # 1e-9: 0.55 × 100 is 55.00000000000001 in floats


def ratio_interval(off: Sequence[float], on: Sequence[float], level: float = 0.9, resamples: int = 2000,
                   seed: int = 0) -> tuple[float, float]:
    """A bootstrap interval (percentile, `level`) for median(off) / median(on): each side resampled with
    replacement on its own, as the runs are. Says how far a speed-up measured in a few noisy runs can be trusted."""
    if not off or not on:
        raise ValueError("both variants need runs")
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(off, k=len(off))) / statistics.median(rng.choices(on, k=len(on)))
        for _ in range(resamples)
    )
    tail = (1 - level) / 2
    return ratios[int(tail * (resamples - 1))], ratios[int((1 - tail) * (resamples - 1))]
