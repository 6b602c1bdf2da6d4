"""The real lanefetch-host process uses the persistent cache by default, in $XDG_CACHE_HOME/lanefetch, and
says so in its timing messages; a private-browsing page leaves that file alone."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lanefetch.cache.sqlite_store import DB_NAME
from test_bridge import HostProcess, running_host
from test_cache_engine import Origin, origin  # noqa: F401 (the fixture)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostProcess]:
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}) as h:
        yield h


def batch(bid: str, url: str, private: bool = False) -> dict[str, Any]:
    return {"type": "batch", "batch_id": bid,
            "page": {"address_space": "loopback", "top_site": "https://site.test", "private_browsing": private},
            "requests": [{"id": f"{bid}-r", "method": "GET", "url": url, "headers": []}]}


async def cache_of(host: HostProcess, bid: str, url: str, private: bool = False) -> str:
    await host.send(batch(bid, url, private))
    msgs = await host.until("batch_done")
    (timing,) = [m for m in msgs if m["type"] == "timing"]
    assert not [m for m in msgs if m["type"] == "error"]
    return str(timing["cache"])


def rows(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])


async def wait_rows(path: Path, n: int) -> None:
    """The store is written just after the response went out: wait (bounded) until it has n entries."""
    for _ in range(250):
        if await asyncio.to_thread(rows, path) == n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never held {n} entries")


async def test_host_caches_in_the_user_cache_dir(host: HostProcess, origin: Origin, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "xdg" / "lanefetch" / DB_NAME
    assert await cache_of(host, "p1", f"{origin.url}/fresh", private=True) == "none"
    assert await cache_of(host, "p2", f"{origin.url}/fresh", private=True) == "hit"
    assert not await asyncio.to_thread(db.exists)  # private browsing: the file is never even created
    assert await cache_of(host, "b1", f"{origin.url}/fresh") == "none"
    await wait_rows(db, 1)
    assert await cache_of(host, "b2", f"{origin.url}/fresh") == "hit"
    assert await cache_of(host, "b3", f"{origin.url}/etag") == "none"
    await wait_rows(db, 2)
    assert await cache_of(host, "b4", f"{origin.url}/etag") == "revalidated"
    assert len(origin.hits("/fresh")) == 2 and len(origin.hits("/etag")) == 2


async def cache_command(host: HostProcess, action: str, nonce: str) -> dict[str, Any]:
    await host.send({"type": "cache", "action": action, "nonce": nonce})
    (answer,) = [m for m in await host.until("cache_stats")]
    assert answer["nonce"] == nonce
    return answer


async def test_options_page_stats_and_clear(host: HostProcess, origin: Origin, tmp_path: Path) -> None:  # noqa: F811
    """The options page's protocol pair: stats count both caches without touching the private one's disk
    (there is none); clear empties both, and the next visit goes to the network again."""
    db = tmp_path / "xdg" / "lanefetch" / DB_NAME
    empty = await cache_command(host, "stats", "s0")
    assert (empty["entries"], empty["private_entries"], empty["location"]) == (0, 0, str(db))
    assert await cache_of(host, "b1", f"{origin.url}/fresh") == "none"
    assert await cache_of(host, "b2", f"{origin.url}/etag") == "none"
    assert await cache_of(host, "p1", f"{origin.url}/fresh", private=True) == "none"
    await wait_rows(db, 2)
    full = await cache_command(host, "stats", "s1")
    assert (full["entries"], full["private_entries"]) == (2, 1)
    assert full["bytes"] > 0 and full["private_bytes"] > 0 and "cleared" not in full
    cleared = await cache_command(host, "clear", "c1")
    assert (cleared["cleared"], cleared["entries"], cleared["bytes"], cleared["private_entries"]) == (3, 0, 0, 0)
    assert await asyncio.to_thread(rows, db) == 0
    assert await cache_of(host, "b3", f"{origin.url}/fresh") == "none"
    assert await cache_of(host, "p2", f"{origin.url}/fresh", private=True) == "none"
    assert len(origin.hits("/fresh")) == 4


async def test_cache_command_with_an_unusable_store(tmp_path: Path) -> None:
    """A cache directory that cannot hold the database: the answer says so and the host goes on."""
    (tmp_path / "xdg").write_text("not a directory")
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}) as host:
        answer = await cache_command(host, "clear", "c1")
        assert "could not be cleared" in answer["error"] and "entries" not in answer
        await host.send({"type": "ping", "nonce": "p"})
        assert (await host.until("pong"))[-1]["nonce"] == "p"
