"""seed000-grid: the IE plug-in paper's grid on a W-CDMA-like link (384/64 kbit/s, RTT 400 ms): pages of
1, 20, 40, 80, 100 objects × 256 B, 2 KB, 4 KB, 8 KB, 16 KB from nginx. lanefetch (pipelined) vs the
browser-like baseline vs T_min, side by side in one run; plots like the paper's (time vs objects, one
line per size) plus the ratio plot."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench import report
from bench.cli_fetch import BASELINE, PIPELINED, fetch, t_min
from bench.netlab import PROFILES, Lab
from bench.servers import start_nginx

COUNTS = [1, 20, 40, 80, 100]
SIZES = {"256 B": 256, "2 KB": 2048, "4 KB": 4096, "8 KB": 8192, "16 KB": 16384}


def _plot(results: dict[tuple[str, int], dict[str, float]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs = COUNTS
    for k, label in enumerate(SIZES):
        color = f"C{k}"  # one colour per size: dashed = baseline, solid = lanefetch
        ax_t.plot(xs, [results[(label, n)]["baseline"] for n in xs], "--", color=color, marker="o",
                  label=f"{label} baseline")
        ax_t.plot(xs, [results[(label, n)]["lanefetch"] for n in xs], "-", color=color, marker="s",
                  label=f"{label} lanefetch")
        ax_r.plot(xs, [results[(label, n)]["baseline"] / results[(label, n)]["lanefetch"] for n in xs],
                  color=color, marker="o", label=label)
    ax_t.set(xlabel="objects on the page", ylabel="seconds", title="Page time on wcdma (384/64 kbit/s, 400 ms)")
    ax_t.legend(fontsize=7, ncol=2)
    ax_r.axhline(1.0, color="grey", lw=0.8)
    ax_r.set(xlabel="objects on the page", ylabel="baseline / lanefetch", title="Speed-up")
    ax_r.legend(fontsize=8)
    return report.save_figure(fig, "seed000-grid")


def run(rounds: int) -> int:
    profile = PROFILES["wcdma"]
    results: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as docroot, Lab() as lab:
        for size in SIZES.values():
            for i in range(max(COUNTS)):
                Path(docroot, f"s{size}-{i:03d}.bin").write_bytes(os.urandom(size))
        server = lab.host("server")
        client = lab.host("client")
        link = lab.link(client, server, profile)
        start_nginx(server, docroot, link.b_ip)
        for label, size in SIZES.items():
            for n in COUNTS:
                urls = [f"http://{link.b_ip}/s{size}-{i:03d}.bin" for i in range(n)]
                sizes = dict.fromkeys(urls, size)
                runs: dict[str, list[float]] = {"lanefetch": [], "baseline": []}
                data = {}
                for r in range(rounds):
                    order = [("lanefetch", PIPELINED), ("baseline", BASELINE)]  # reversed every other round
                    for name, extra in (order if r % 2 == 0 else order[::-1]):
                        data = fetch(client, urls, extra, sizes)
                        runs[name].append(data["elapsed_s"])
                cell = {k: report.median(v) for k, v in runs.items()}
                cell["t_min"] = t_min(data, profile)
                results[(label, n)] = cell
                print(f"{label:>6} × {n:3d}: lanefetch {cell['lanefetch']:.2f} s, "
                      f"baseline {cell['baseline']:.2f} s, T_min {cell['t_min']:.2f} s", flush=True)
    plot = _plot(results)
    rows = [
        [label, n, f"{c['lanefetch']:.2f}", f"{c['baseline']:.2f}", f"{c['t_min']:.2f}",
         f"{c['baseline'] / c['lanefetch']:.2f}", f"{c['lanefetch'] / c['t_min']:.2f}"]
        for (label, n), c in results.items()
    ]
    lines = [
        f"Link `wcdma`: RTT {profile.rtt_ms} ms, {profile.down_kbit}/{profile.up_kbit} kbit/s "
        "(packet-level emulation). "
        f"Server nginx. Median of {rounds} rounds per cell, the variants' order reversed every other round; every "
        "run a fresh `lanefetch fetch` process (pipelining learned from scratch).",
        "",
        *report.table(["size", "objects", "lanefetch s", "baseline s", "T_min s", "baseline/lanefetch",
                       "lanefetch/T_min"], rows),
        "",
        f"![time and speed-up]({plot.name})",
    ]
    report.write("seed000-grid", "seed000-grid: objects × sizes on wcdma", lines)
    return 0
