"""No round trip of our own: when a page of a site starts (the extension's `preconnect` for its document), the
real lanefetch-host connects to the origins that site's earlier loads used, as its cache's origin records
(cache/origin_memory.py) say, even after a restart; the page's first batch to them then finds its connection."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from lanefetch.engine.config import EngineConfig
from local_app import serve_app
from test_bridge import HostProcess, running_host

HELLO = {"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"}


@pytest.fixture
async def origins() -> AsyncIterator[list[str]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=f"hello {request.path}")

    async with AsyncExitStack() as stack:
        found = []
        for _ in range(2):
            app = web.Application()
            app.router.add_get("/{name}", handler)
            port = await stack.enter_async_context(serve_app(app))
            found.append(f"http://127.0.0.1:{port}")
        yield found


def page() -> dict[str, Any]:
    return {"address_space": "loopback", "top_site": "http://site.test"}


def batch(bid: str, urls: list[str]) -> dict[str, Any]:
    return {"type": "batch", "batch_id": bid, "page": page(),
            "requests": [{"id": f"{bid}-{i}", "method": "GET", "url": u, "headers": []} for i, u in enumerate(urls)]}


async def connected(host: HostProcess, wanted: set[str]) -> set[str]:
    """origin_rtt messages (one per new connection) until every wanted origin has every connection a preconnect
    opens to a plain-http origin (the per-origin limit); recv fails after 20 s."""
    seen: Counter[str] = Counter()
    while any(seen[o] < EngineConfig().connections_per_origin for o in wanted):
        m = await host.recv()
        assert m["type"] == "origin_rtt", m
        seen[m["origin"]] += 1
    return set(seen)


async def test_a_page_start_connects_to_the_origins_its_sites_earlier_loads_used(
    tmp_path: Path, origins: list[str]
) -> None:
    doc, other = origins
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    async with running_host(env) as first:  # a load of the site: its document's origin and one other
        await first.send(HELLO)
        await first.recv()
        await first.send(batch("b1", [f"{doc}/a", f"{other}/b"]))
        assert not [m for m in await first.until("batch_done") if m["type"] == "error"]
    async with running_host(env) as host:  # a new helper session: only the cache's records remember
        await host.send(HELLO)
        await host.recv()
        await host.send({"type": "preconnect", "url": f"{doc}/next", "page": page()})
        assert await connected(host, {doc, other}) == {doc, other}
        await host.send(batch("b2", [f"{other}/c", f"{doc}/d"]))
        msgs = await host.until("batch_done")
        assert not [m for m in msgs if m["type"] in ("error", "origin_rtt")], "the batch needed no new connection"

