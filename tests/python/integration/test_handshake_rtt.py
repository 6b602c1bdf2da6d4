"""The round trip the helper reports for a new connection (origin_rtt: the extension steps aside below 15 ms) is the
kernel's SYN → SYN-ACK measure where there is one, not the connect time seen from a busy event loop."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from typing import Any

import pytest
from lanefetch.engine import Engine, EngineConfig, Page
from lanefetch.engine.request import Origin

BUSY_S = 0.06  # how late the busy event loop sees a new connection


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_INFO's min RTT is Linux's")
async def test_reported_rtt_holds_no_event_loop_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    loop = asyncio.get_running_loop()
    connect = loop.sock_connect

    async def busy_connect(sock: socket.socket, address: Any) -> None:
        await connect(sock, address)
        time.sleep(BUSY_S)  # noqa: ASYNC251 -- deliberately: a busy machine, the loop sees the connection late

    monkeypatch.setattr(loop, "sock_connect", busy_connect)
    seen: list[tuple[Origin, float]] = []
    done = asyncio.Event()
    engine = Engine(EngineConfig(connections_per_origin=1))  # one connection: one report

    def connected(origin: Origin, rtt: float) -> None:
        seen.append((origin, rtt))
        done.set()

    engine.on_connected = connected
    try:
        assert engine.preconnect(f"http://127.0.0.1:{port}/", Page(address_space="loopback"))
        await asyncio.wait_for(done.wait(), 10)
        ((origin, rtt),) = seen
        assert origin == Origin("http", "127.0.0.1", port)
        # The loop saw the connection at least BUSY_S after it started (busy_connect), so a report below that is
        # not the loop's connect time: it is the kernel's handshake measure (µs on loopback).
        assert 0 < rtt < BUSY_S, f"{rtt} s includes the event loop's delay of {BUSY_S} s"
    finally:
        await engine.aclose()
        srv.close()
