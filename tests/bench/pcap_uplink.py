"""Bytes up per TCP connection in the pcaps `LANEFETCH_BENCH_PCAP=DIR` wrote (page_load.PageLab._capture):

    python -m bench.pcap_uplink DIR        (from tests/; tcpdump reads the files)

Per file: each connection to the server (client port → server port), its IP bytes up and down, packets up, when
it opened (s after the capture's first SYN), and whether it carried data up beyond the handshake; then the total up.
The link's own counters count the same IP bytes; this says which connection they belong to (the browser's, the
helper's preconnect, a probe)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

_HEAD = re.compile(r"^(\d+\.\d+) .*proto TCP \(6\), length (\d+)\)")
_ADDR = re.compile(r"^\s+(\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\].*?length (\d+)")
_SERVER_PORTS = {80, 443, 8080, 8443}


def connections(pcap: Path) -> list[dict[str, float | int | str]]:
    text = subprocess.run(["tcpdump", "-r", str(pcap), "-n", "-tt", "-v"], capture_output=True, text=True,
                          check=True).stdout
    conns: dict[tuple[str, int, int], dict[str, float | int | str]] = defaultdict(
        lambda: {"up": 0, "down": 0, "packets_up": 0, "payload_up": 0, "opened": -1.0, "syn": 0})
    at, length = 0.0, 0
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head:
            at, length = float(head.group(1)), int(head.group(2))
            continue
        addr = _ADDR.match(line)
        if not addr:
            continue
        src, sport, dst, dport, flags, payload = (addr.group(1), int(addr.group(2)), addr.group(3),
                                                 int(addr.group(4)), addr.group(5), int(addr.group(6)))
        up = dport in _SERVER_PORTS
        key = (src, sport, dport) if up else (dst, dport, sport)
        c = conns[key]
        if up:
            c["up"] = int(c["up"]) + length
            c["packets_up"] = int(c["packets_up"]) + 1
            c["payload_up"] = int(c["payload_up"]) + payload
            if flags == "S":
                c["opened"], c["syn"] = at, int(c["syn"]) + 1
        else:
            c["down"] = int(c["down"]) + length
    first = min((float(c["opened"]) for c in conns.values() if float(c["opened"]) >= 0), default=0.0)
    out = []
    for (client, port, server_port), c in sorted(conns.items(), key=lambda kv: float(kv[1]["opened"])):
        out.append({"conn": f"{client}:{port}>{server_port}", **c,
                    "opened": round(float(c["opened"]) - first, 3) if float(c["opened"]) >= 0 else -1.0})
    return out


def main(argv: list[str]) -> int:
    for pcap in sorted(Path(argv[0]).glob("*.pcap")):
        rows = connections(pcap)
        print(f"{pcap.name}: up {sum(int(r['up']) for r in rows)} B in {len(rows)} connections")
        for r in rows:
            print(f"  {r['conn']:<28} opened {r['opened']:>7} s  up {r['up']:>6} B ({r['packets_up']} pkts, "
                  f"{r['payload_up']} B payload)  down {r['down']:>7} B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
