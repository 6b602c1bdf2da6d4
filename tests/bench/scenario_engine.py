"""Engine benchmark (issue 2): 100 × 2 KB objects from nginx over an emulated link with 200 ms RTT,
2 Mbit/s down, 512 kbit/s up: lanefetch pipelined vs the browser-like baseline (6 connections, one
request at a time each) vs the physical limit T_min. Variants alternate round by round."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.cli_fetch import BASELINE, PIPELINED, fetch, t_min
from bench.netlab import PROFILES, Lab
from bench.servers import start_nginx

OBJECTS = 100
SIZE = 2048


def run(rounds: int) -> int:
    profile = PROFILES["bench2"]
    assert profile.rtt_ms and profile.down_kbit and profile.up_kbit
    variants = {
        "lanefetch (pipelined, 4 conns)": PIPELINED,
        "baseline (6 conns, no pipelining)": BASELINE,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    conns: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as docroot, Lab() as lab:
        for i in range(OBJECTS):
            Path(docroot, f"o{i:03d}.bin").write_bytes(os.urandom(SIZE))
        server = lab.host("server")
        client = lab.host("client")
        link = lab.link(client, server, profile)
        start_nginx(server, docroot, link.b_ip)
        urls = [f"http://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)]
        sizes = dict.fromkeys(urls, SIZE)
        fetch(client, urls[:1], [])  # warm the server's page cache
        last: dict[str, Any] = {}
        for _ in range(rounds):
            for name, extra in variants.items():
                data = fetch(client, urls, extra, sizes)
                times[name].append(data["elapsed_s"])
                conns[name] = data["max_concurrent_connections"]
                last = data
        tmin = t_min(last, profile)
    lf = report.median(times["lanefetch (pipelined, 4 conns)"])
    base = report.median(times["baseline (6 conns, no pipelining)"])
    rows = [
        [name, f"{report.median(ts):.3f}", f"{min(ts):.3f}–{max(ts):.3f}", conns[name],
         f"{report.median(ts) / tmin:.2f}"]
        for name, ts in times.items()
    ]
    rows.append(["T_min (physical limit)", f"{tmin:.3f}", "", "", "1.00"])
    lines = [
        f"Link: RTT {profile.rtt_ms} ms, {profile.down_kbit} kbit/s down, {profile.up_kbit} kbit/s up "
        f"(packet-level emulation, drop-tail queue). Server: nginx. {OBJECTS} objects × {SIZE} B. "
        f"{rounds} rounds, variants alternating; each run is a fresh `lanefetch fetch` process "
        "(pipelining learned from scratch every time).",
        "",
        *report.table(["variant", "median s", "range s", "max concurrent conns", "× T_min"], rows),
        "",
        f"**Pipelined vs baseline: {base / lf:.2f}× faster** (goal ≥ 2×); "
        f"**pipelined / T_min: {lf / tmin:.2f}** (goal ≤ 1.5, aim 1.2).",
        "",
        "T_min = connect RTT + 1 RTT + max(bytes up / up rate, bytes down / down rate), with the HTTP bytes "
        "actually exchanged scaled by 1500/1460 for IP+TCP headers.",
    ]
    report.write("engine", "Engine benchmark: pipelining over a 200 ms / 2 Mbit/s link", lines)
    return 0
