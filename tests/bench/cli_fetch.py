"""Running `lanefetch fetch` inside a lab host, and the physical lower bound T_min for what it fetched."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.netlab import Host, LinkProfile

LANEFETCH = str(Path(sys.executable).parent / "lanefetch")
IP_OVERHEAD = 1500 / 1448  # IPv4 + TCP headers with timestamps per full segment: the link carries packets

PIPELINED = ["--connections", "4"]
BASELINE = ["--no-pipeline", "--connections", "6"]  # what a browser does over HTTP/1.1


def fetch(client: Host, urls: list[str], extra: list[str], sizes: dict[str, int] | None = None,
          timeout: float = 600) -> dict[str, Any]:
    """One fresh `lanefetch fetch --json` run; checks every response is 200 with the expected size."""
    out = client.run([LANEFETCH, "fetch", "--json", "--as-page", "private", *extra, *urls], timeout=timeout)
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
