"""chromium-debugger-cost: what a chrome.debugger session costs a page by itself in real Chromium, without lanefetch
taking any request: no session vs a session with no domain vs + Fetch.enable (every request continued from the
extension's worker) vs + Network.enable vs both, on seed000-pages' 77 × 1.2 KB page (LANEFETCH_BENCH_PROFILES,
default `lan,lte`). Explains why stepping aside per request was not enough on `lan` (docs/performance.md)."""

from __future__ import annotations

import json
import os
import subprocess

from bench import report
from bench.netlab import PROFILES
from bench.page_load import REPO, PageLab, PageShape

NAME = "chromium-debugger-cost"
SHAPE = PageShape(77, 1200)
VARIANTS = ("detached", "attached", "fetch", "network", "fetch-network", "fetch-documents")
DRIVER = REPO / "tests/bench/debugger_cost_driver.ts"


def _load(pl: PageLab, variant: str) -> float:
    argv = ["node", "--import", "tsx", str(DRIVER), pl.url(SHAPE), str(SHAPE.images), variant]
    proc = pl.client.popen(argv, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=180)
    line = next((x for x in out.splitlines() if x.startswith("{")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"driver ({variant}) failed: {err.strip()[-2000:]}")
    return float(json.loads(line)["load_s"])


def run(rounds: int) -> int:
    names = os.environ.get("LANEFETCH_BENCH_PROFILES", "lan,lte").split(",")
    variants = os.environ.get("LANEFETCH_BENCH_VARIANTS", ",".join(VARIANTS)).split(",")
    rows: list[list[str]] = []
    load_before = os.getloadavg()
    for name in names:
        with PageLab(PROFILES[name], [SHAPE]) as pl:
            times: dict[str, list[float]] = {v: [] for v in variants}
            for r in range(rounds):
                for v in variants if r % 2 == 0 else variants[::-1]:
                    times[v].append(_load(pl, v))
                    print(f"[{name}] round {r + 1} {v}: {times[v][-1]:.3f} s", flush=True)
        base = report.median(times[variants[0]])
        for v in variants:
            med = report.median(times[v])
            rows.append([name, v, f"{med:.3f}", f"{min(times[v]):.3f}–{max(times[v]):.3f}", f"{med / base:.2f}×"])
    load_after = os.getloadavg()
    report.write(NAME, f"{NAME}: a debugger session's own cost on a page in real Chromium", [
        f"Page {SHAPE.name} (seed000-pages' first shape) from nginx, headless Chromium with the built extension and "
        "no site enabled, fresh profile every run; the session is opened from the extension's service worker before "
        f"the navigation. {rounds} runs per variant, order alternating. Load average (1 min) "
        f"{load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end.",
        "",
        *report.table(["link", "variant", "median load s", "range s", f"× {variants[0]}"], rows),
    ])
    return 0
