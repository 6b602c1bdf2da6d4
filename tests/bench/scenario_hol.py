"""seed001-hol (issue 9): small interactive requests while a bulk transfer to the same origin runs.

nginx over one emulated link (5 Mbit/s down, 100 ms RTT). One helper engine (the same one a page uses)
first learns that the origin pipelines, then starts a 4 MB download and, while it runs, fetches 2 KB objects
one after another (each as its own batch, like a page's XHRs). Variants, alternating:
- no bulk: the small requests alone (the floor);
- bulk in the pool, separation off: the download is an ordinary request and small ones may be pipelined
  behind it (EngineConfig(separate_bulk=False));
- bulk in the pool (the default): nothing is pipelined behind a response with more than 256 KB to come,
  and that connection's TCP receive window is clamped near the link's BDP (engine/bulk_window.py);
- bulk as a split request (lanes, here the default route only), on connections of its own.
Small requests always share the link's bandwidth and queue with the download.
The client part runs inside the lab's client namespace (`python -m bench.scenario_hol client ...`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.netlab import LINK_SETS, Lab
from bench.servers import start_nginx

BULK = 4_000_000
SMALL = 2048
N_SMALL = 12
VARIANTS = {
    "none": "no bulk transfer",
    "mixed": "bulk in the origin's pool, separation off (`separate_bulk=False`)",
    "pool": "bulk in the origin's pool (default: nothing pipelined behind it, own connection, window clamped)",
    "split": "bulk as a split request (lanes, here the default route only)",
}


async def _client(base: str, variant: str) -> dict[str, Any]:
    from lanefetch.engine import EngineConfig, FetchRequest, Page
    from lanefetch.service import FetchService, ServiceConfig
    from misbehaving_servers import RecordingSink

    page = Page(address_space="private")
    engine = FetchService(ServiceConfig(EngineConfig(separate_bulk=variant != "mixed"), lanes=[]))
    sink = RecordingSink()
    try:
        warm = [FetchRequest(f"w{i}", "GET", f"{base}/s{i}.bin") for i in range(8)]
        await engine.fetch(warm, sink, page)  # the origin is proven to pipeline
        bulk_task = None
        t_bulk = time.monotonic()
        if variant != "none":
            bulk = FetchRequest("bulk", "GET", f"{base}/bulk.bin", resource_type="media", split=variant == "split")
            bulk_task = asyncio.create_task(engine.fetch([bulk], sink, page))
            await asyncio.sleep(0.5)
        latencies = []
        for i in range(N_SMALL):
            t = time.monotonic()
            req = FetchRequest(f"s{i}", "GET", f"{base}/s{i % 8}.bin?{i}", resource_type="xhr")
            await engine.fetch([req], sink, page)
            if sink.records[req.id].error is not None or len(sink.records[req.id].body) != SMALL:
                raise AssertionError(f"small request failed: {sink.records[req.id].error}")
            latencies.append(time.monotonic() - t)
            await asyncio.sleep(0.1)
        bulk_done = bulk_task.done() if bulk_task else True
        bulk_s = None
        if bulk_task is not None:
            await bulk_task
            bulk_s = time.monotonic() - t_bulk
            rec = sink.records["bulk"]
            if rec.error is not None or hashlib.sha256(rec.body).hexdigest() != _bulk_sha():
                raise AssertionError(f"bulk download wrong: {rec.error}")
        return {"latencies": latencies, "bulk_done_before_small": bulk_done, "bulk_s": bulk_s}
    finally:
        await engine.aclose()


def _bulk() -> bytes:
    return hashlib.shake_256(b"bulk").digest(BULK)


def _bulk_sha() -> str:
    return hashlib.sha256(_bulk()).hexdigest()


def run(rounds: int) -> int:
    variants = list(VARIANTS)
    lat: dict[str, list[float]] = {v: [] for v in variants}
    bulk_s: dict[str, list[float]] = {v: [] for v in variants}
    late: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as d, Lab() as lab:
        Path(d, "bulk.bin").write_bytes(_bulk())
        for i in range(8):
            Path(d, f"s{i}.bin").write_bytes(hashlib.shake_256(str(i).encode()).digest(SMALL))
        server, client = lab.host("server"), lab.host("client")
        (link,) = lab.links(client, server, LINK_SETS["2x5mbit"][:1])
        start_nginx(server, d, "0.0.0.0")
        base = f"http://{server.ip}"
        for r in range(rounds):
            for v in variants[r % len(variants):] + variants[:r % len(variants)]:  # the order rotates
                before = link.stats() or {}
                out = client.run([sys.executable, "-m", "bench.scenario_hol", "client", base, v], timeout=300)
                after = link.stats() or {}
                packets = sum(after[k]["packets"] - before[k]["packets"] for k in ("up", "down"))
                late[v].append(sum(after[k]["late_packets"] - before[k]["late_packets"] for k in ("up", "down"))
                               / max(1, packets))
                data = json.loads(out.stdout.strip().splitlines()[-1])
                lat[v] += data["latencies"]
                if data["bulk_s"] is not None:
                    bulk_s[v].append(data["bulk_s"])
    rows = []
    for v, name in VARIANTS.items():
        xs = sorted(lat[v])
        rows.append([name, f"{statistics.median(xs) * 1000:.0f}", f"{report.quantile(xs, 0.9) * 1000:.0f}",
                     f"{max(xs) * 1000:.0f}", len(xs),
                     f"{statistics.median(bulk_s[v]):.2f}" if bulk_s[v] else "-", f"{max(late[v]) * 100:.0f} %"])
    lines = [
        f"One emulated link, 5 Mbit/s down / 1 Mbit/s up, 100 ms RTT; nginx. A {BULK / 1e6:g} MB download starts, "
        f"0.5 s later {N_SMALL} requests of {SMALL} B follow one after another (0.1 s apart) through the same "
        f"helper engine (4 connections per origin), whose origin is already known to pipeline. {rounds} rounds, "
        "variants in rotating order. Latency = batch handed to the engine → response complete; bulk s = the "
        "download's start to end; late packets = the emulator's packets delivered > 2 ms after due (CPU-starved), "
        "worst round.",
        "",
        *report.table(["variant", "median ms", "p90 ms", "max ms", "requests", "bulk s (median)", "late packets"],
                      rows),
        "",
        "With separation off the origin's pool may pipeline a small request behind the download on the same "
        "connection, where it waits for bulk bytes. With separation (the default) nothing is pipelined behind a "
        "response with more than 256 KB still to come, and that connection does not count against the per-origin "
        "limit; after about a second its receive window is clamped to 1.3 × the measured BDP, so the download "
        "keeps the link busy without filling the drop-tail queue the small requests share. A split request has "
        "connections of its own (its windows are not clamped: lanes aim at throughput). Read the numbers, not "
        "this sentence: the table is what was measured.",
    ]
    report.write("seed001-hol", "seed001-hol: small requests during a bulk transfer to the same origin", lines)
    _plot(lat)
    return 0


def _plot(lat: dict[str, list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.boxplot([[x * 1000 for x in lat[v]] for v in VARIANTS], whis=(0, 100))
    ax.set_xticks(range(1, len(VARIANTS) + 1), ["no bulk", "bulk in pool,\nseparation off", "bulk in pool\n(default)",
                                                  "bulk as split\nrequest"])
    ax.set_ylabel("small request latency, ms")
    ax.set_yscale("log")
    ax.set_title("seed001-hol: 2 KB requests during a 4 MB download")
    report.save_figure(fig, "seed001-hol")


if __name__ == "__main__" and len(sys.argv) >= 4 and sys.argv[1] == "client":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
    print(json.dumps(asyncio.run(_client(sys.argv[2], sys.argv[3]))))
