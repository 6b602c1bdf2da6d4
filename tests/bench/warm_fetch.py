"""One fetch on an already-open connection, as the helper does it after a page's preconnect: the `engine-h2`
scenario's warm variant, run inside the lab's client namespace.

    python -m bench.warm_fetch --ca-file CA --connections N URL...      (from tests/: prints JSON)

The helper preconnects at navigation (pool.preconnect: one connection for a TLS origin whose protocol is not
known yet, and none more once ALPN says h2), so the page's first batch finds the connection up. This opens it the
same way (`FetchService.preconnect`), waits until it speaks h2 and the server's SETTINGS arrived on it (both
prefaces exchanged, the stream limit known), and only then starts the clock and fetches every URL in one batch,
with the CLI's configuration (`lanefetch fetch --connections N`). The JSON has the CLI's shape (`elapsed_s`,
`requests` with `url`, `status`, `bytes`, `wire_bytes`, `connection`), so cli_fetch.fetch's checks and t_min
apply, plus `connect_s`: how long the preconnect took."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict
from typing import Any

from lanefetch.engine import EngineConfig, FetchRequest, Page
from lanefetch.engine.h2_connection import H2Connection
from lanefetch.service import FetchService, ServiceConfig

CONNECT_DEADLINE = 20.0  # seconds: a preconnect not up by then fails the run loudly


class _Sink:
    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}

    async def head(self, r: FetchRequest, h: Any) -> None:
        self.results[r.id].update(status=h.status)

    async def body(self, r: FetchRequest, d: bytes) -> None:
        self.results[r.id]["bytes"] += len(d)

    async def end(self, r: FetchRequest, n: int, t: Any) -> None: ...

    async def error(self, r: FetchRequest, e: Any) -> None:
        self.results[r.id]["error"] = {"code": e.code, "message": e.message}

    async def timing(self, r: FetchRequest, rep: Any) -> None:
        conn = rep.connection
        self.results[r.id].update(wire_bytes=rep.wire_bytes, connection=None if conn is None else asdict(conn))


def _connected(service: FetchService) -> bool:
    """Every connection the preconnect opened speaks h2 and has the server's SETTINGS (one, or `--h2-connections`:
    opened together)."""
    conns = [c for pool in service.engine._pools.values() for c in pool.connections]
    return bool(conns) and all(isinstance(c, H2Connection) and c.open and c.session.peer_settings for c in conns)


async def _run(urls: list[str], ca_file: str, connections: int, open_window: bool, h2_connections: int
               ) -> dict[str, Any]:
    config = ServiceConfig(EngineConfig(connections_per_origin=connections, ca_file=ca_file,
                                        h2_receive_cap=not open_window, h2_connections=h2_connections),
                           cache_dir=None)
    service = FetchService(config)
    page = Page(address_space="private")
    sink = _Sink()
    try:
        t0 = time.monotonic()
        if not service.preconnect(urls[0], page):
            raise SystemExit("the preconnect started no connection")
        while not _connected(service):
            if time.monotonic() - t0 > CONNECT_DEADLINE:
                raise SystemExit(f"no connection up {CONNECT_DEADLINE} s after the preconnect")
            await asyncio.sleep(0.001)
        connect_s = time.monotonic() - t0
        requests = [FetchRequest(str(i), "GET", url) for i, url in enumerate(urls)]
        for r in requests:
            sink.results[r.id] = {"url": r.url, "status": None, "bytes": 0, "error": None, "wire_bytes": 0,
                                  "connection": None}
        start = time.monotonic()
        result = await service.fetch(requests, sink, page)
        elapsed = time.monotonic() - start
    finally:
        await service.aclose()
    return {"elapsed_s": round(elapsed, 6), "connect_s": round(connect_s, 6), "connections": result.connections,
            "max_concurrent_connections": result.max_concurrent_connections,
            "requests": [sink.results[r.id] for r in requests]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("urls", nargs="+")
    p.add_argument("--ca-file", required=True)
    p.add_argument("--connections", type=int, default=6)
    p.add_argument("--h2-open-window", action="store_true")  # as `lanefetch fetch --h2-open-window`
    p.add_argument("--h2-connections", type=int, default=EngineConfig.h2_connections)  # as `lanefetch fetch`
    args = p.parse_args()
    print(json.dumps(asyncio.run(_run(args.urls, args.ca_file, args.connections, args.h2_open_window,
                                      args.h2_connections)), indent=2))


if __name__ == "__main__":
    main()
