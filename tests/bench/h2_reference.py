"""lanefetch's h2 engine next to reference HTTP/2 clients on the `engine-h2` link. A measurement, not a test.

    python -m bench.h2_reference [ROUNDS] [PCAP_PREFIX]     (from tests/, root: the lab; curl, nghttp, tcpdump)

The `engine-h2` scenario's 100 × 2 KB from nginx over TLS 1.3 + h2 through the 200 ms / 2 Mbit/s / 512 kbit/s link,
fetched by `lanefetch fetch` (cold), `bench.warm_fetch` (the batch on a preconnected connection), `curl --http2
--parallel` and `nghttp` (each request a stream of one connection), variants in turn; prints each run's seconds and
the link's counters (drops at the drop-tail queue, packets, bytes) as JSON. curl's and nghttp's times include their
process start (tens of ms); lanefetch's are its own clock (`elapsed_s`). With PCAP_PREFIX, the first round of each
variant is captured in the client namespace (`PREFIX-VARIANT.pcap`, TCP port 443): the packet timeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli_fetch import PIPELINED, fetch
from bench.netlab import PROFILES, Lab
from bench.servers import start_nginx

OBJECTS, SIZE = 100, 2048


def main(rounds: int, pcap: str | None) -> dict[str, list[dict[str, Any]]]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "python"))  # the tests' throwaway PKI
    from tls_pki import make_test_pki

    with tempfile.TemporaryDirectory() as docroot, tempfile.TemporaryDirectory() as pkidir, Lab() as lab:
        for i in range(OBJECTS):
            Path(docroot, f"o{i:03d}.bin").write_bytes(os.urandom(SIZE))
        server, client = lab.host("server"), lab.host("client")
        link = lab.link(client, server, PROFILES["bench2"])
        pki = make_test_pki(Path(pkidir), "lanefetch bench CA", ips=(link.b_ip,))
        Path(pkidir).chmod(0o755)
        start_nginx(server, docroot, link.b_ip, 443, tls=(pki / "srv.pem", pki / "srv.key"), http2=True)
        ca = str(pki / "ca.pem")
        urls = [f"https://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)]
        sizes = dict.fromkeys(urls, SIZE)
        fetch(client, urls[:1], [*PIPELINED, "--ca-file", ca])  # the server's page cache

        def timed(argv: list[str]) -> float:
            t = time.monotonic()
            client.run(argv, timeout=120)
            return time.monotonic() - t

        variants: dict[str, Callable[[], float]] = {
            "lanefetch cold": lambda: float(fetch(client, urls, [*PIPELINED, "--ca-file", ca], sizes)["elapsed_s"]),
            "lanefetch warm": lambda: float(fetch(client, urls, [*PIPELINED, "--ca-file", ca], sizes,
                                                  warm=True)["elapsed_s"]),
            "curl": lambda: timed(["curl", "-sf", "--http2", "--parallel", "--parallel-max", str(OBJECTS),
                                   "--cacert", ca, *[a for u in urls for a in (u, "-o", "/dev/null")]]),
            "nghttp": lambda: timed(["nghttp", "-n", "--no-dep", "-w", "24", "-W", "24", *urls]),
        }
        out: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
        for r in range(rounds):
            for name, run in variants.items():
                cap = None
                if pcap and r == 0:
                    path = f"{pcap}-{name.replace(' ', '-')}.pcap"
                    cap = client.popen(["tcpdump", "-i", "any", "-n", "-s", "128", "-w", path, "tcp port 443"],
                                       stderr=subprocess.DEVNULL)
                    time.sleep(1)  # tcpdump is listening
                before = link.stats() or {}
                seconds = run()
                after = link.stats() or {}
                if cap is not None:
                    time.sleep(1)
                    cap.terminate()
                    cap.wait(10)
                out[name].append({"s": round(seconds, 3), **{
                    d: {k: after[d][k] - before[d][k] for k in ("dropped_queue", "late_packets", "packets", "bytes")}
                    for d in ("up", "down") if d in after and d in before}})
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, sys.argv[2] if len(sys.argv) > 2 else None),
                     indent=1))
