"""Running `lanefetch fetch` inside a lab host, and physical lower bounds: T_min for what it fetched, the best
possible time of one body over one or several fresh links."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.netlab import Host, LinkProfile

LANEFETCH = str(Path(sys.executable).parent / "lanefetch")
IP_OVERHEAD = 1500 / 1448  # IPv4 + TCP headers with timestamps per full segment: the link carries packets

PIPELINED = ["--connections", "4"]
BASELINE = ["--no-pipeline", "--connections", "6"]  # what a browser does over HTTP/1.1


def compile_bytecode() -> None:
    """Write lanefetch's bytecode, as installing the package does: with PYTHONDONTWRITEBYTECODE set (as on
    this machine) every `lanefetch` process would otherwise compile all its modules first (~0.15 s)."""
    import compileall

    import lanefetch

    compileall.compile_dir(str(Path(lanefetch.__file__).parent), quiet=1)


def fetch(client: Host, urls: list[str], extra: list[str], sizes: dict[str, int] | None = None,
          timeout: float = 600, *, warm: bool = False) -> dict[str, Any]:
    """One fresh `lanefetch fetch --json` run (warm: `bench.warm_fetch`, the same fetch on a connection its
    preconnect opened first); checks every response is 200 with the expected size."""
    program = [sys.executable, "-m", "bench.warm_fetch"] if warm else [LANEFETCH, "fetch", "--json", "--as-page",
                                                                        "private"]
    out = client.run([*program, *extra, *urls], timeout=timeout)
    data: dict[str, Any] = json.loads(out.stdout)
    for r in data["requests"]:
        want = sizes.get(r["url"]) if sizes else None
        if r["status"] != 200 or (want is not None and r["bytes"] != want):
            raise AssertionError(f"wrong response for {r['url']}: {r['status']} {r['bytes']} B {r['error']}")
    return data


def t_min(data: dict[str, Any], profile: LinkProfile) -> float:
    """connect RTT + 1 RTT + max(bytes up / up rate, bytes down / down rate), with the HTTP bytes
    actually exchanged scaled for IP+TCP headers."""
    assert profile.down_kbit and profile.up_kbit
    rtt = profile.rtt_ms / 1000
    down = sum(r["wire_bytes"] for r in data["requests"]) * IP_OVERHEAD * 8
    host = data["requests"][0]["url"].split("/")[2]
    up = sum(len(f"GET /{r['url'].split('/', 3)[3]} HTTP/1.1\r\nHost: {host}\r\n\r\n")
             for r in data["requests"]) * IP_OVERHEAD * 8
    return 2 * rtt + max(up / (profile.up_kbit * 1000), down / (profile.down_kbit * 1000))



INITIAL_WINDOW = 10 * 1448  # bytes: Linux's initial congestion window (IW10, RFC 6928) of full segments


def deliverable(profile: LinkProfile, t: float) -> float:
    """Body bytes (headers of the packets included) one fresh connection over this link can have delivered
    t seconds after it began to connect: nothing for the TCP handshake and the request's round trip, then
    slow start from IW10, doubling each round trip, until a round trip's window holds the link's
    bandwidth-delay product; from then on the link's full rate."""
    assert profile.down_kbit
    rtt, rate = profile.rtt_ms / 1000, profile.down_kbit * 1000 / 8
    tau, window, got = t - 2 * rtt, INITIAL_WINDOW, 0.0
    while tau > 0:
        if window >= rate * rtt:
            return got + rate * tau
        got += min(window, rate * tau)
        tau, window = tau - rtt, window * 2
    return got


def best_possible(size: int, profiles: Sequence[LinkProfile]) -> float:
    """Lower bound in seconds for `size` body bytes over these links at once (one link: pass one): every
    link connects at time 0 and carries what `deliverable` allows, the bytes shared so that all end
    together. Roughly handshake + request round trip + size / Σrate + the slow-start ramp (about 0.14 s at
    5 Mbit/s and 100 ms). Ignores queueing, losses, request overhead and the CPU: runs can only be slower."""
    need = size * IP_OVERHEAD
    lo, hi = 0.0, 1.0
    while sum(deliverable(p, hi) for p in profiles) < need:
        lo, hi = hi, hi * 2
    for _ in range(60):  # bisection to well below a millisecond
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(deliverable(p, mid) for p in profiles) < need else (lo, mid)
    return hi
