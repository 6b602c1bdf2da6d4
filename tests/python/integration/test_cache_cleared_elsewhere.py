"""A clear of the cache database by another process (the other browser's helper, `lanefetch cache clear` from a
terminal) is honoured by a helper that is running: what it learned before the clear (its origin policies, its page
loads under way, the browser's field profile) is never written back after it, and what it learns after the clear is
kept as before. The clear here is the real CLI, a process of its own on the same database file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from lanefetch.bridge.host import Host
from lanefetch.cache.sqlite_store import DB_NAME
from lanefetch.engine import EngineConfig, Page
from lanefetch.engine.engine import policy_key
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState
from lanefetch.engine.request import parse_target
from lanefetch.proxy.service import ProxyService
from lanefetch.service import FetchService, ServiceConfig
from test_bridge import running_host
from test_prefetch_host import ASSETS, HELLO, load, page
from test_prefetch_host import _answer as host_answer
from test_prefetch_pages import counting_server, settle
from test_proxy_pages import Reports, origin, page_load  # noqa: F401 (origin: the fixture)

REPO = Path(__file__).resolve().parents[3]
SITE = Page(top_site="https://site.test")


async def clear_elsewhere(directory: Path) -> None:
    """`lanefetch cache clear` in a process of its own, as a user runs it while the browsers' helpers run."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lanefetch", "cache", "clear", "--cache-dir", str(directory),
        cwd=REPO / "native-host", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert b"removed" in out


def table(directory: Path, name: str, column: str) -> set[str]:
    with contextlib.closing(sqlite3.connect(directory / DB_NAME)) as db:
        return {str(r[0]) for r in db.execute(f"SELECT {column} FROM {name}")}


def learned(service: FetchService, url: str) -> str:
    """The session learns something of url's origin under SITE (a pipelining verdict), as a batch would teach it."""
    target = parse_target(url).origin
    service.policies[policy_key(target, SITE)] = OriginPolicy(16, PipelineState.GREEN, 16)
    return str(target)


async def test_origin_policies_learned_before_a_clear_elsewhere_are_never_written_back(tmp_path: Path) -> None:
    service = FetchService(ServiceConfig(cache_dir=tmp_path))
    try:
        await service.recall("https://before.test/a.js", SITE)  # a batch's recall: the database is open
        before = learned(service, "https://before.test/a.js")
        service._remember([parse_target("https://before.test/").origin], SITE)  # the batch's end keeps it
        await settle(service)
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") == {before}

        await clear_elsewhere(tmp_path)
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") == set()
        # The next batch using the origin ends, and a connection's end teaches the session something of it: what
        # they would keep was learned before the clear.
        service._remember([parse_target("https://before.test/").origin], SITE)
        await settle(service)
        service._policy_changed(policy_key(parse_target("https://before.test/").origin, SITE))
        await settle(service)
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") == set(), \
            "what the session learned before another process cleared the cache was written back"

        # What the session learns after the clear is kept, as after a clear of its own.
        after = learned(service, "https://after.test/a.js")
        service._remember([parse_target("https://after.test/").origin], SITE)
        await settle(service)
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") == {after}

        # A clear of its own: what it learns after it is kept too (not taken for another process's clear).
        cache = service.records_for(SITE)
        assert cache is not None
        service.forget_learned()
        await cache.clear()
        again = learned(service, "https://again.test/a.js")
        service._remember([parse_target("https://again.test/").origin], SITE)
        await settle(service)
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") == {again}
    finally:
        await service.aclose()


async def test_a_load_under_way_when_another_process_clears_records_nothing(tmp_path: Path) -> None:
    """Through the real host: a page learned (load 1) and loading again (load 2, under way) when the CLI clears the
    database. Load 2 ends at the next navigation: neither its requests, the browser's field profile nor the origin's
    record is written back, and the next load has nothing learned to fly. (Load 3 began before the helper heard of
    the clear, from load 2's end: it is forgotten with what came before, as a clear of the helper's own forgets the
    loads under way. So nothing at all is learned in the end.)"""
    xdg = tmp_path / "xdg"
    where = xdg / "lanefetch"
    async with counting_server(host_answer) as server:
        async with running_host({**os.environ, "XDG_CACHE_HOME": str(xdg)}) as host:
            await host.send(HELLO)
            assert (await host.recv())["type"] == "hello"
            await load(host, server, 1)
            await load(host, server, 2, flies=True)  # load 1 recorded at its navigation; load 2 under way
            assert await asyncio.to_thread(table, where, "pages", "page") != set()
            await clear_elsewhere(where)
            caches, _reports = await load(host, server, 3)  # its navigation ends load 2
            assert set(caches.values()) == {"none"}, "load 2 was recorded after the clear: load 3 flew it"
            p = page(server)
            await host.send({"type": "preconnect", "url": p["url"], "page": p})  # ends load 3
            await host.send({"type": "ping", "nonce": "n"})
            await host.until("pong")
        # (the host has exited: every write it queued is done)
        assert await asyncio.to_thread(table, where, "pages", "page") == set(), "learned pages written back"
        assert await asyncio.to_thread(table, where, "origins", "origin") == set(), "origin records written back"
    assert all(server.seen.count(path) == 3 for path in ASSETS), server.seen


async def test_firefox_s_loads_and_origins_are_forgotten_too(tmp_path: Path,
                                                             origin: tuple[str, Counter[str]]) -> None:  # noqa: F811
    """The host's proxy side (Firefox) keeps its learned pages and origin records in the host's database: a clear by
    another process reaches its loads under way and its session's origin policies as well."""
    base, seen = origin
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    fetcher = FetchService(ServiceConfig(cache_dir=tmp_path))
    host = Host(fetcher, send)
    reports = Reports()
    host.proxy = ProxyService(EngineConfig(), reports, https_data=tmp_path / "data", records=fetcher.cache_for,
                              page_ended=reports.page_ended)
    svc = host.proxy
    try:
        listener = await svc.open("c1", Page(address_space="loopback", top_site="http://t"))
        for _ in range(2):  # load 1, recorded at the second navigation; load 2 under way
            await page_load(svc, listener.port, base)
        await settle(fetcher)
        assert await asyncio.to_thread(table, tmp_path, "pages", "page") != set()
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") != set()
        await clear_elsewhere(tmp_path)
        await page_load(svc, listener.port, base)  # its navigation ends load 2
        assert seen == Counter({"/page": 3, "/s.css": 3, "/i.png": 3}), "load 2 was recorded after the clear: flown"
        await svc.loads.end_all()
        await settle(fetcher)
        assert await asyncio.to_thread(table, tmp_path, "pages", "page") == set(), "learned pages written back"
        assert await asyncio.to_thread(table, tmp_path, "origins", "origin") == set(), "origin records written back"
    finally:
        await host.close()
