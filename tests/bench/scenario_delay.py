"""seed003-delay: how many connections a server holds under 100 clients when each client has its own, realistic
round-trip delay, compared with one constant delay for all and with none; and what lanefetch's pipelining does to
that number.

nginx serves a page's 20 objects × 2 KB. 100 clients arrive over 30 s (Poisson, one seeded schedule for every
variant); each is its own `lanefetch fetch` process with its own source address, fetching the 20 objects either
browser-like (6 connections, one request at a time each) or as lanefetch does (4 connections, pipelined), then
closing. Per-client delays go through the link emulator as a fixed table (address → extra RTT), the same for both
client variants: "realistic" draws them from a log-normal (median 80 ms, σ 0.9), "constant" gives everyone the
median, "none" gives 0. A sampler in the server's namespace counts the connections nginx holds (ESTABLISHED or
CLOSE_WAIT on port 80) every 20 ms.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.cli_fetch import BASELINE, PIPELINED
from bench.netlab import ClientDelay, Host, Lab, Link, LinkProfile
from bench.servers import start_nginx

CLIENTS = 100
OBJECTS, SIZE = 20, 2048
ARRIVAL_S = 30.0  # clients arrive over this window (slow enough that 2 cores keep up with 100 clients)
MEDIAN_MS, SIGMA = 80.0, 0.9
SAMPLE_S = 0.02
UID_BASE = 61000  # client i runs as uid UID_BASE + i (policy routing picks its source address)
TABLE_BASE = 100  # routing tables inside the client namespace (tables are per namespace)
CLIENT_NET = "10.231.255"  # client source addresses, inside our namespaces only (netlab links use .1-.254)
ADDRESSES = [f"{CLIENT_NET}.{10 + i}" for i in range(CLIENTS)]
TESTS = Path(__file__).resolve().parents[1]
NAME = "seed003-delay"

CLIENT_VARIANTS = {
    "browser-like (6 conns, no pipelining)": BASELINE,
    "lanefetch (4 conns, pipelined)": PIPELINED,
}


def _delays() -> dict[str, list[float]]:
    rng = random.Random(3)
    realistic = [rng.lognormvariate(0.0, SIGMA) * MEDIAN_MS for _ in range(CLIENTS)]
    return {
        "realistic (log-normal)": realistic,
        f"constant {MEDIAN_MS:g} ms": [MEDIAN_MS] * CLIENTS,
        "none": [0.0] * CLIENTS,
    }


def _schedule() -> list[float]:
    rng = random.Random(7)
    t, out = 0.0, []
    for _ in range(CLIENTS):
        out.append(t)
        t += rng.expovariate(CLIENTS / ARRIVAL_S)
    return [x * ARRIVAL_S / t for x in out]  # stretched so the last arrival is at ~ARRIVAL_S


def _client_addresses(client: Host, server: Host, link: Link) -> None:
    """Client i gets CLIENT_NET.(10+i) on the client end of the link, used as source by uid UID_BASE + i; the
    server routes the block back over the link. (Fixed addresses, inside our own namespaces only, so the
    emulator's delay table can be written before the link exists.)"""
    cmds = []
    for i, addr in enumerate(ADDRESSES):
        table = TABLE_BASE + i
        cmds += [
            f"addr add {addr}/32 dev {link.a_dev}",
            f"route add {link.b_ip} dev {link.a_dev} src {addr} table {table}",
            f"rule add uidrange {UID_BASE + i}-{UID_BASE + i} lookup {table} pref 100",
        ]
    for host, batch in ((client, cmds), (server, [f"route add {CLIENT_NET}.0/24 dev {link.b_dev}"])):
        assert host.ns is not None
        subprocess.run(["ip", "-n", host.ns, "-batch", "-"], input="\n".join(batch) + "\n", text=True, check=True,
                       capture_output=True, timeout=30)


def _one(client: Host, server: Host, urls: list[str], extra: list[str], work: Path) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(dir=work))
    out.chmod(0o777)  # clients write their results after dropping root
    sampler = server.popen([sys.executable, "-m", "bench.server_connections", "80", str(SAMPLE_S)], cwd=str(TESTS),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    config = {"uid_base": UID_BASE, "schedule": _schedule(), "out": str(out),
              "args": ["fetch", "--json", "--as-page", "private", *extra, *urls]}
    runner = client.run([sys.executable, "-m", "bench.delay_clients", json.dumps(config)], timeout=900)
    clients = json.loads(runner.stdout.strip().splitlines()[-1])["clients"]
    samples_text, _ = sampler.communicate(input="", timeout=30)
    results = []
    for i, c in enumerate(clients):
        if c["rc"] != 0:
            raise RuntimeError(f"client {i} failed ({c['rc']}): {(out / f'{i}.json').read_text()[-500:]}"
                               f"{runner.stderr[-1000:]}")
        data = json.loads((out / f"{i}.json").read_text())
        if any(r["status"] != 200 or r["bytes"] != SIZE for r in data["requests"]):
            raise RuntimeError(f"client {i}: wrong responses")
        results.append(data)
    first = min(c["start"] for c in clients)
    last = max(c["end"] for c in clients)
    samples = [(float(t), int(n)) for t, n in (ln.split() for ln in samples_text.splitlines() if ln.strip())]
    active = [(t, n) for t, n in samples if first <= t <= last]
    conn_s = sum(n * (t1 - t0) for (t0, n), (t1, _) in itertools.pairwise(active))
    return {
        "peak": max(n for _, n in active),
        "mean": statistics.fmean(n for _, n in active),
        "conn_s": conn_s,
        "page_s": [c["end"] - c["start"] for c in clients],
        "connections": sum(d["connections"] for d in results),
        "span_s": last - first,
        "series": [(t - first, n) for t, n in samples if t >= first - 0.5],
    }


def _plot(series: dict[tuple[str, str], list[tuple[float, int]]], means: dict[tuple[str, str], float]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    delays = list(dict.fromkeys(d for d, _ in series))
    clients = list(dict.fromkeys(c for _, c in series))
    for k, d in enumerate(delays):
        for c, style in zip(clients, ("-", "--"), strict=False):
            xs, ys = zip(*series[(d, c)], strict=True)
            ax_t.plot(xs, ys, style, color=f"C{k}", lw=1, label=f"{d}, {c.split(' (')[0]}")
    ax_t.set(xlabel="seconds since the first client arrived", ylabel="connections nginx holds",
             title=f"{CLIENTS} clients arriving over {ARRIVAL_S:g} s (last round)")
    ax_t.legend(fontsize=7)
    width = 0.8 / len(clients)
    for j, c in enumerate(clients):
        xs = [i + (j - (len(clients) - 1) / 2) * width for i in range(len(delays))]
        ax_b.bar(xs, [means[(d, c)] for d in delays], width, label=c, color=f"C{j + 5}")
    ax_b.set_xticks(range(len(delays)), [d.replace(" (", "\n(") for d in delays], fontsize=8)
    ax_b.set(ylabel="mean connections held (median of rounds)", title="Server connections by delay model")
    ax_b.legend(fontsize=7)
    return report.save_figure(fig, NAME)


def run(rounds: int) -> int:
    delays = _delays()
    urls_path = [f"/o{i:02d}.bin" for i in range(OBJECTS)]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="lf-bench-delay-") as work_dir:
        work = Path(work_dir)
        work.chmod(0o755)
        docroot = work / "www"
        docroot.mkdir()
        for p in urls_path:
            (docroot / p.lstrip("/")).write_bytes(os.urandom(SIZE))
        for delay_name, ms in delays.items():
            with Lab() as lab:
                server, client = lab.host("server"), lab.host("client")
                delay = ClientDelay(table=dict(zip(ADDRESSES, ms, strict=True)))
                link = lab.link(client, server, LinkProfile(per_client_delay=delay))
                _client_addresses(client, server, link)
                srv = start_nginx(server, docroot, link.b_ip, keepalive_requests=1000)
                urls = [srv.url(p) for p in urls_path]
                for r in range(rounds):
                    order = list(CLIENT_VARIANTS.items())
                    for client_name, extra in (order if r % 2 == 0 else order[::-1]):
                        d = _one(client, server, urls, extra, work)
                        results.setdefault((delay_name, client_name), []).append(d)
                        print(f"[{delay_name}] round {r + 1} {client_name}: peak {d['peak']}, mean {d['mean']:.1f} "
                              f"connections held, {d['connections']} opened, page median "
                              f"{statistics.median(d['page_s']):.2f} s, span {d['span_s']:.1f} s", flush=True)
    return _report(results, delays, rounds)


def _report(results: dict[tuple[str, str], list[dict[str, Any]]], delays: dict[str, list[float]],
            rounds: int) -> int:
    med = {k: {m: report.median([d[m] for d in v]) for m in ("peak", "mean", "conn_s", "connections")}
           for k, v in results.items()}
    pages = {k: report.median([x for d in v for x in d["page_s"]]) for k, v in results.items()}
    rows = []
    for (delay_name, client_name), m in med.items():
        rows.append([delay_name, client_name, f"{m['peak']:g}", f"{m['mean']:.1f}", f"{m['conn_s']:.0f}",
                     f"{m['connections']:g}", f"{pages[(delay_name, client_name)]:.2f}"])
    names = list(delays)
    base, lf = list(CLIENT_VARIANTS)
    real, const, none = names
    ratio_rows = []
    for c in (base, lf):
        ratio_rows.append([c, f"{med[(real, c)]['conn_s'] / med[(const, c)]['conn_s']:.2f}×",
                           f"{med[(real, c)]['mean'] / med[(const, c)]['mean']:.2f}×",
                           f"{med[(real, c)]['peak'] / med[(const, c)]['peak']:.2f}×",
                           f"{med[(real, c)]['conn_s'] / med[(none, c)]['conn_s']:.2f}×"])
    lf_rows = [[d, f"{med[(d, lf)]['mean'] / med[(d, base)]['mean']:.2f}",
                f"{med[(d, lf)]['peak'] / med[(d, base)]['peak']:.2f}",
                f"{med[(d, lf)]['conn_s'] / med[(d, base)]['conn_s']:.2f}"] for d in names]
    last = {k: v[-1]["series"] for k, v in results.items()}
    plot = _plot(last, {k: m["mean"] for k, m in med.items()})
    r = delays[real]
    lines = [
        (__doc__ or "").split("\n\n", 1)[1].replace("\n", " ").strip(),
        "",
        f"Drawn realistic delays (extra RTT per client): median {statistics.median(r):.0f} ms, mean "
        f"{statistics.fmean(r):.0f} ms, p90 {report.quantile(r, 0.9):.0f} ms, max {max(r):.0f} ms. "
        f"{rounds} rounds per delay model, client variants alternating; medians over rounds.",
        "",
        *report.table(["delays", "clients", "peak conns held", "mean conns held", "connection-seconds",
                       "connections opened", "median page s"], rows),
        "",
        "**Realistic vs constant delay**: connection-seconds (the server's cost: connections held × time), mean "
        "and peak connections held while clients were active:",
        "",
        *report.table(["clients", "realistic / constant (conn-s)", "realistic / constant (mean)",
                       "realistic / constant (peak)", "realistic / none (conn-s)"], ratio_rows),
        "",
        "**What lanefetch does to it** (lanefetch / browser-like):",
        "",
        *report.table(["delays", "mean conns held", "peak conns held", "connection-seconds"], lf_rows),
        "",
        f"![connections over time]({plot.name})",
    ]
    report.write(NAME, "seed003-delay: connections a server holds under 100 clients with per-client delays", lines)
    return 0
