"""Engine benchmark (issue 2): 100 × 2 KB objects from nginx over an emulated link with 200 ms RTT,
2 Mbit/s down, 512 kbit/s up: lanefetch pipelined vs the browser-like baseline (6 connections, one
request at a time each) vs the physical limit T_min. Variants alternate round by round."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.netlab import PROFILES, Host, Lab
from bench.servers import start_nginx

LANEFETCH = str(Path(sys.executable).parent / "lanefetch")
OBJECTS = 100
SIZE = 2048
IP_OVERHEAD = 1500 / 1460  # IPv4 + TCP headers per full segment: the link carries packets, not payload


def fetch(client: Host, urls: list[str], extra: list[str]) -> dict[str, Any]:
    out = client.run([LANEFETCH, "fetch", "--json", "--as-page", "private", *extra, *urls], timeout=120)
    data: dict[str, Any] = json.loads(out.stdout)
    assert all(r["status"] == 200 and r["bytes"] == SIZE for r in data["requests"]), "a response was wrong"
    return data


def t_min(data: dict[str, Any], rtt: float, down_bps: float, up_bps: float) -> float:
    down = sum(r["wire_bytes"] for r in data["requests"]) * IP_OVERHEAD * 8
    # request bytes: method line + Host + blank line, as the CLI sends them
    up = sum(len(f"GET {r['url'].split('/', 3)[3]} HTTP/1.1\r\nHost: x.x.x.x\r\n\r\n") + 1
             for r in data["requests"]) * IP_OVERHEAD * 8
    return rtt + rtt + max(up / up_bps, down / down_bps)


def run(rounds: int) -> int:
    profile = PROFILES["bench2"]
    assert profile.rtt_ms and profile.down_kbit and profile.up_kbit
    variants = {
        "lanefetch (pipelined, 4 conns)": ["--connections", "4"],
        "baseline (6 conns, no pipelining)": ["--no-pipeline", "--connections", "6"],
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
        fetch(client, urls[:1], [])  # warm the server's page cache
        last: dict[str, Any] = {}
        for _ in range(rounds):
            for name, extra in variants.items():
                data = fetch(client, urls, extra)
                times[name].append(data["elapsed_s"])
                conns[name] = data["max_concurrent_connections"]
                last = data
        tmin = t_min(last, profile.rtt_ms / 1000, profile.down_kbit * 1000, profile.up_kbit * 1000)
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
