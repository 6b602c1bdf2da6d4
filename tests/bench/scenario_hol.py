"""seed001-hol (issue 9): small interactive requests while a bulk transfer to the same origin runs.

nginx over one emulated link (5 Mbit/s down, 100 ms RTT). One helper engine (the same one a page uses)
first learns that the origin pipelines, then starts a 4 MB download and, while it runs, fetches 2 KB objects
one after another (each as its own batch, like a page's XHRs). Variants, alternating:
- no bulk: the small requests alone (the floor);
- bulk in the origin's pool: the download is an ordinary request, so small ones may be pipelined behind it;
- bulk separated: the download is a split request (lanes, here the default route only), on its own
  connection; small requests still share the link, but never wait behind the bulk response.
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


async def _client(base: str, variant: str) -> dict[str, Any]:
    from lanefetch.engine import Engine, EngineConfig, FetchRequest, Page
    from misbehaving_servers import RecordingSink

    page = Page(address_space="private")
    engine = Engine(EngineConfig(lanes=[]))
    sink = RecordingSink()
    try:
        warm = [FetchRequest(f"w{i}", "GET", f"{base}/s{i}.bin") for i in range(8)]
        await engine.fetch(warm, sink, page)  # the origin is proven to pipeline
        bulk_task = None
        if variant != "none":
            bulk = FetchRequest("bulk", "GET", f"{base}/bulk.bin", resource_type="media", split=variant == "separated")
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
        if bulk_task is not None:
            await bulk_task
            rec = sink.records["bulk"]
            if rec.error is not None or hashlib.sha256(rec.body).hexdigest() != _bulk_sha():
                raise AssertionError(f"bulk download wrong: {rec.error}")
        return {"latencies": latencies, "bulk_done_before_small": bulk_done}
    finally:
        await engine.aclose()


def _bulk() -> bytes:
    return hashlib.shake_256(b"bulk").digest(BULK)


def _bulk_sha() -> str:
    return hashlib.sha256(_bulk()).hexdigest()


def run(rounds: int) -> int:
    variants = ["none", "pool", "separated"]
    lat: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as d, Lab() as lab:
        Path(d, "bulk.bin").write_bytes(_bulk())
        for i in range(8):
            Path(d, f"s{i}.bin").write_bytes(hashlib.shake_256(str(i).encode()).digest(SMALL))
        server, client = lab.host("server"), lab.host("client")
        lab.links(client, server, LINK_SETS["2x5mbit"][:1])
        start_nginx(server, d, "0.0.0.0")
        base = f"http://{server.ip}"
        for _ in range(rounds):
            for v in variants:
                out = client.run([sys.executable, "-m", "bench.scenario_hol", "client", base, v], timeout=300)
                data = json.loads(out.stdout.strip().splitlines()[-1])
                lat[v] += data["latencies"]
    rows = []
    for v, name in (("none", "no bulk transfer"), ("pool", "bulk in the origin's pool (no separation)"),
                    ("separated", "bulk separated (split request, own connection)")):
        xs = sorted(lat[v])
        rows.append([name, f"{statistics.median(xs) * 1000:.0f}", f"{xs[int(len(xs) * 0.9) - 1] * 1000:.0f}",
                     f"{max(xs) * 1000:.0f}", len(xs)])
    lines = [
        f"One emulated link, 5 Mbit/s down / 1 Mbit/s up, 100 ms RTT; nginx. A {BULK / 1e6:g} MB download starts, "
        f"0.5 s later {N_SMALL} requests of {SMALL} B follow one after another (0.1 s apart) through the same "
        f"helper engine, whose origin is already known to pipeline. {rounds} rounds, variants alternating. "
        "Latency = batch handed to the engine → response complete.",
        "",
        *report.table(["variant", "median ms", "p90 ms", "max ms", "requests"], rows),
        "",
        "Without separation the origin's pool may pipeline a small request behind the download on the same "
        "connection (when its fair share of the outstanding work allows), where it waits for bulk bytes; "
        "separated, the download has its own connection and the small requests only share the link's "
        "bandwidth and queue. Read the numbers, not this sentence: the table is what was measured.",
    ]
    report.write("seed001-hol", "seed001-hol: small requests during a bulk transfer to the same origin", lines)
    _plot(lat)
    return 0


def _plot(lat: dict[str, list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.boxplot([[x * 1000 for x in lat[v]] for v in ("none", "pool", "separated")], whis=(0, 100))
    ax.set_xticks([1, 2, 3], ["no bulk", "bulk in pool", "bulk separated"])
    ax.set_ylabel("small request latency, ms")
    ax.set_yscale("log")
    ax.set_title("seed001-hol: 2 KB requests during a 4 MB download")
    fig.tight_layout()
    fig.savefig(report.RESULTS / "seed001-hol.png", dpi=110)


if __name__ == "__main__" and len(sys.argv) >= 4 and sys.argv[1] == "client":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
    print(json.dumps(asyncio.run(_client(sys.argv[2], sys.argv[3]))))
