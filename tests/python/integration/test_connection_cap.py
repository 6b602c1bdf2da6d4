"""The cap over all origins (EngineConfig.max_connections, pool_plan.room_under_cap, connection_cap.py), in the real
engine against scripted HTTP/1.1 servers on 127.0.0.1 (one origin per port): never more connections than the cap,
an idle connection of another origin closed for room (never a busy one), work waiting (never failing) until room
comes, in the order it came (cap_turns.py), no reconnect loop between origins that all have work, and one cap for
every engine of the helper (two engines, a split fetch's lane, the Firefox proxy's service)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from h2_misbehaving_server import H2Server, H2ServerConn
from lanefetch.bridge.host import Host
from lanefetch.engine import EngineConfig, FetchRequest
from lanefetch.engine.connection_cap import CapMember, ConnectionCap
from lanefetch.engine.engine import Engine
from lanefetch.engine.pool import OriginPool
from lanefetch.protocol import PROTOCOL_VERSION
from lanefetch.service import FetchService, ServiceConfig
from misbehaving_servers import LOOPBACK, RecordingSink, ScriptedServer, content, held, well_behaved
from tls_pki import make_test_pki
from waits import until
from watch_cap import watch_cap


def _config(cap: int) -> EngineConfig:
    return EngineConfig(connections_per_origin=2, max_connections=cap, connect_timeout=3, stall_timeout=5,
                        idle_timeout=30, total_timeout=30)


def _watch_cap(engine: Engine, cap: int) -> list[int]:
    """Records the count each time a connection is counted, and fails at once if it ever goes over the cap."""
    return watch_cap(engine.cap, cap)


def _path_content(r: FetchRequest) -> bytes:
    return content("/" + r.url.split("/", 3)[3])


def _gets(srv: ScriptedServer, name: str, n: int) -> list[FetchRequest]:
    return [FetchRequest(f"{name}{i}", "GET", srv.url(f"/{name}/{i}.png"), resource_type="image") for i in range(n)]


async def test_an_idle_connection_of_another_origin_is_closed_for_room_and_a_busy_one_never() -> None:
    async with AsyncExitStack() as stack:
        busy = await stack.enter_async_context(ScriptedServer(held()))
        idle = await stack.enter_async_context(ScriptedServer(well_behaved()))
        third = await stack.enter_async_context(ScriptedServer(well_behaved()))
        engine = Engine(_config(2))
        stack.push_async_callback(engine.aclose)
        seen = _watch_cap(engine, 2)
        sink = RecordingSink()
        held_req = FetchRequest("h", "GET", busy.url("/hold/a.png"), resource_type="image")
        busy_batch = asyncio.create_task(engine.fetch([held_req], sink, LOOPBACK))
        await until(lambda: busy.state.get("holding") is True, "the busy origin's request at its server")
        first = _gets(idle, "i", 1)
        await engine.fetch(first, sink, LOOPBACK)  # its connection stays open, idle
        assert len(idle.connections) == 1 and not idle.connections[0].ended
        later = _gets(third, "t", 1)
        await asyncio.wait_for(engine.fetch(later, sink, LOOPBACK), 10)
        sink.check_exact(first + later, _path_content)
        await until(lambda: idle.connections[0].ended, "the idle origin's connection closed for room")
        assert not busy_batch.done(), "the busy origin's request ended: its connection was closed"
        busy.state["release"].set()  # type: ignore[attr-defined]
        await asyncio.wait_for(busy_batch, 10)
        sink.check_exact([held_req], lambda r: content("/hold/a.png"))
        assert len(busy.connections) == 1, "the busy origin's request was asked again on another connection"
        assert max(seen) <= 2


async def test_work_waits_for_room_and_is_served_when_a_connection_goes_idle() -> None:
    async with AsyncExitStack() as stack:
        busy = await stack.enter_async_context(ScriptedServer(held()))
        other = await stack.enter_async_context(ScriptedServer(well_behaved()))
        engine = Engine(_config(1))
        stack.push_async_callback(engine.aclose)
        seen = _watch_cap(engine, 1)
        sink = RecordingSink()
        held_req = FetchRequest("h", "GET", busy.url("/hold/a.png"), resource_type="image")
        busy_batch = asyncio.create_task(engine.fetch([held_req], sink, LOOPBACK))
        await until(lambda: busy.state.get("holding") is True, "the busy origin's request at its server")
        waiting = _gets(other, "w", 2)
        waiting_batch = asyncio.create_task(engine.fetch(waiting, sink, LOOPBACK))
        await asyncio.sleep(0.2)  # (a chance to go wrong: nothing may connect or fail meanwhile)
        assert not other.connections and not waiting_batch.done(), "work went past the cap, or failed for it"
        busy.state["release"].set()  # type: ignore[attr-defined]
        await asyncio.wait_for(asyncio.gather(busy_batch, waiting_batch), 10)
        sink.check_exact([held_req], lambda r: content("/hold/a.png"))
        sink.check_exact(waiting, _path_content)
        assert seen and max(seen) <= 1


async def test_origins_with_work_at_the_cap_take_turns_without_a_reconnect_loop() -> None:
    async with AsyncExitStack() as stack:
        servers = [await stack.enter_async_context(ScriptedServer(well_behaved())) for _ in range(3)]
        engine = Engine(_config(1))
        stack.push_async_callback(engine.aclose)
        seen = _watch_cap(engine, 1)
        sink = RecordingSink()
        for _ in range(3):  # the same origins again: each visit's work opens connections anew, a few at most
            reqs = [r for i, s in enumerate(servers) for r in _gets(s, f"o{i}-{len(seen)}-", 4)]
            await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), 15)
            sink.check_exact(reqs, _path_content)
        accepted = sum(len(s.connections) for s in servers)
        # one connection per origin and visit at most (fewer where the last origin's stayed open): a connection
        # closed for room before it took its work would show up as more, and a loop as many more
        assert accepted <= 3 * 3, f"{accepted} connections for 9 origin visits"
        assert max(seen) <= 1


async def test_an_idle_h2_connection_is_closed_for_room_too(tmp_path: Path) -> None:
    pki = make_test_pki(tmp_path, "lanefetch connection cap CA")
    async with AsyncExitStack() as stack:
        h2 = await stack.enter_async_context(H2Server(_serve_h2, pki))
        h1 = await stack.enter_async_context(ScriptedServer(well_behaved()))
        config = _config(1)
        config.ca_file = str(pki / "ca.pem")
        engine = Engine(config)
        stack.push_async_callback(engine.aclose)
        seen = _watch_cap(engine, 1)
        sink = RecordingSink()
        first = [FetchRequest("h2", "GET", h2.url("/r/a/2000"), resource_type="image")]
        await asyncio.wait_for(engine.fetch(first, sink, LOOPBACK), 10)
        later = _gets(h1, "l", 2)
        await asyncio.wait_for(engine.fetch(later, sink, LOOPBACK), 10)
        sink.check_exact(first + later, _path_content)
        await until(lambda: h2.connections[0].closed.is_set(), "the idle h2 connection closed for room")
        assert len(h2.connections) == 1 and max(seen) <= 1


async def _serve_h2(conn: H2ServerConn) -> None:
    await conn.serve_rest(timeout=20)


async def test_two_engines_given_one_cap_never_exceed_it_together() -> None:
    """One cap per helper (connection_cap.py): an engine's connections leave no room for another's under it, whose
    work waits (never fails) and is served when the first's free."""
    async with AsyncExitStack() as stack:
        busy = await stack.enter_async_context(ScriptedServer(held()))
        other = await stack.enter_async_context(ScriptedServer(well_behaved()))
        cap = ConnectionCap(2)
        seen = watch_cap(cap, 2)
        first, second = Engine(_config(2), cap), Engine(_config(2), cap)
        stack.push_async_callback(first.aclose)
        stack.push_async_callback(second.aclose)
        sink = RecordingSink()
        held_reqs = [FetchRequest(f"h{i}", "GET", busy.url(f"/hold/{i}.png"), resource_type="image") for i in range(2)]
        busy_batch = asyncio.create_task(first.fetch(held_reqs, sink, LOOPBACK))
        await until(lambda: len(busy.requests) == 2 and len(busy.connections) == 2,
                    "the first engine's two requests at their server, on two connections")
        waiting = _gets(other, "w", 2)
        waiting_batch = asyncio.create_task(second.fetch(waiting, sink, LOOPBACK))
        await asyncio.sleep(0.2)  # (a chance to go wrong: nothing may connect or fail meanwhile)
        assert not other.connections and not waiting_batch.done(), "the second engine went past the shared cap"
        assert cap.count == 2
        busy.state["release"].set()  # type: ignore[attr-defined]
        await asyncio.wait_for(asyncio.gather(busy_batch, waiting_batch), 10)
        sink.check_exact(held_reqs, _path_content)
        sink.check_exact(waiting, _path_content)
        assert seen and max(seen) <= 2


async def test_a_split_fetchs_lane_counts_under_the_services_cap() -> None:
    """The service's engine and its split fetches' lane engines share one cap (FetchService.cap): at the cap, a split
    request's lane waits for the main engine's connection to free rather than opening beside it."""
    async with AsyncExitStack() as stack:
        busy = await stack.enter_async_context(ScriptedServer(held()))
        big = await stack.enter_async_context(ScriptedServer(well_behaved()))  # Range ignored: the 200 as it is
        service = FetchService(ServiceConfig(_config(1), lanes=[]))
        stack.push_async_callback(service.aclose)
        seen = watch_cap(service.cap, 1)
        sink = RecordingSink()
        held_req = FetchRequest("h", "GET", busy.url("/hold/a.png"), resource_type="image")
        busy_batch = asyncio.create_task(service.fetch([held_req], sink, LOOPBACK))
        await until(lambda: busy.state.get("holding") is True, "the held request at its server")
        split = FetchRequest("big", "GET", big.url("/r/bulk/300000"), split=True)
        split_batch = asyncio.create_task(service.fetch([split], sink, LOOPBACK))
        await asyncio.sleep(0.2)  # (a chance to go wrong: nothing may connect or fail meanwhile)
        assert not big.connections and not split_batch.done(), "the split fetch's lane went past the service's cap"
        busy.state["release"].set()  # type: ignore[attr-defined]
        await asyncio.wait_for(asyncio.gather(busy_batch, split_batch), 30)
        sink.check_exact([held_req], _path_content)
        sink.check_exact([split], _path_content)
        assert seen and max(seen) <= 1


async def test_the_firefox_proxy_counts_under_the_host_services_cap(tmp_path: Path) -> None:
    """Proxy mode runs a service of its own beside the host's (bridge/host.py): one cap for both, so together they
    hold no more connections than it (the sharing itself: the tests above)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    fetcher = FetchService(ServiceConfig(_config(3), cache_dir=tmp_path / "cache"))
    host = Host(fetcher, send)
    try:
        await host.handle({"type": "hello", "protocol": PROTOCOL_VERSION, "extension_version": "0.1.0",
                           "browser": "firefox"})
        assert sent and sent[-1]["type"] == "hello", sent
        assert host.proxy is not None
        assert host.proxy.fetcher.engine.cap is fetcher.cap and fetcher.engine.cap is fetcher.cap
        assert fetcher.cap.limit == 3
    finally:
        await host.close()


async def test_origins_waiting_at_the_cap_are_served_in_the_order_they_began_waiting() -> None:
    """cap_turns.Line in the real engine: three origins come to a full cap one after another; as the connection
    ahead of them goes idle (closed for room) and each one's answer is in, they get a connection in that order."""
    async with AsyncExitStack() as stack:
        busy = await stack.enter_async_context(ScriptedServer(held()))
        servers = [await stack.enter_async_context(ScriptedServer(well_behaved())) for _ in range(3)]
        engine = Engine(_config(1))
        stack.push_async_callback(engine.aclose)
        counted: list[int] = []  # the port of each connection's origin, as it is counted
        count = engine.cap.counted

        def record(pool: CapMember, conn_id: int) -> None:
            assert isinstance(pool, OriginPool)
            counted.append(pool.origin.port)
            count(pool, conn_id)

        engine.cap.counted = record  # type: ignore[method-assign]
        sink = RecordingSink()
        held_req = FetchRequest("h", "GET", busy.url("/hold/a.png"), resource_type="image")
        batches = [asyncio.create_task(engine.fetch([held_req], sink, LOOPBACK))]
        await until(lambda: busy.state.get("holding") is True, "the held request at its server")
        for i in (2, 0, 1):  # the order they come in: not the order of their ports or servers
            batches.append(asyncio.create_task(engine.fetch(_gets(servers[i], f"o{i}-", 1), sink, LOOPBACK)))
            in_line = len(batches) - 1
            await until(lambda n=in_line: len(engine.cap.waiting()) == n, f"origin {i} in the cap's line")
        busy.state["release"].set()  # type: ignore[attr-defined]
        await asyncio.wait_for(asyncio.gather(*batches), 15)
        assert counted == [busy.port, servers[2].port, servers[0].port, servers[1].port]


async def test_a_closing_engine_hands_no_room_to_its_own_pools() -> None:
    async with AsyncExitStack() as stack:
        busy = await stack.enter_async_context(ScriptedServer(held()))
        other = await stack.enter_async_context(ScriptedServer(well_behaved()))
        engine = Engine(_config(1))
        seen = watch_cap(engine.cap, 1)
        sink = RecordingSink()
        stack.callback(lambda: busy.state["release"].set())  # type: ignore[attr-defined]
        held_req = FetchRequest("h", "GET", busy.url("/hold/a.png"), resource_type="image")
        busy_batch = asyncio.create_task(engine.fetch([held_req], sink, LOOPBACK))
        await until(lambda: busy.state.get("holding") is True, "the held request at its server")
        waiting_batch = asyncio.create_task(engine.fetch(_gets(other, "w", 1), sink, LOOPBACK))
        await until(lambda: len(engine.cap.waiting()) == 1, "the other origin in the cap's line")
        await engine.aclose()
        assert len(seen) == 1, "closing, the engine opened a connection for its waiting origin"
        assert engine.cap.count == 0 and not engine.cap.waiting()
        for batch in (busy_batch, waiting_batch):
            batch.cancel()
        await asyncio.gather(busy_batch, waiting_batch, return_exceptions=True)
