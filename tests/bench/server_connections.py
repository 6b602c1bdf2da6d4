"""How many TCP connections a server holds, sampled from /proc/net/tcp of the namespace it runs in.

    python -m bench.server_connections PORT INTERVAL_S   # prints "epoch_s count" per sample until stdin closes

Counted: sockets on local PORT in ESTABLISHED or CLOSE_WAIT, i.e. connections the server process still has open
(TIME_WAIT and the FIN states after the server closed hold no server resources)."""

from __future__ import annotations

import select
import sys
import time

_HELD = {"01", "08"}  # ESTABLISHED, CLOSE_WAIT


def held(port: int, table: str) -> int:
    """Connections on local `port` in a /proc/net/tcp text that the server still holds."""
    want = f":{port:04X}"
    n = 0
    for line in table.splitlines()[1:]:
        f = line.split()
        if len(f) > 3 and f[1].endswith(want) and f[3] in _HELD:
            n += 1
    return n


def main(port: int, interval: float) -> int:
    while True:
        with open("/proc/net/tcp") as f:
            n = held(port, f.read())
        print(f"{time.time():.3f} {n}", flush=True)
        if select.select([sys.stdin], [], [], interval)[0] and not sys.stdin.readline():
            return 0  # stdin closed: the caller has what it needs


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), float(sys.argv[2])))
