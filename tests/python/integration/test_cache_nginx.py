"""The cache against real nginx in a network namespace: ETag and Last-Modified revalidation answered
with 304 (seen in nginx's access log) deliver the stored bytes with the stored content fields, fresh entries
never reach nginx, a hard reload is fetched in full, and the revalidations ride pipelined connections like any
other request."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.netlab import Lab
from bench.servers import ServerHandle, start_nginx
from lanefetch.engine import Engine, EngineConfig, FetchRequest, Page
from lanefetch.service import FetchService, ServiceConfig
from test_cache_engine import Collect

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces"),
    pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx not installed"),
]

PAGE = Page(address_space="loopback", top_site="https://lab.test")
FILES = {f"f{i}.css": bytes([65 + i]) * (1000 + 997 * i) for i in range(8)}
EXTRA = """
    location /etag/ { alias DOCROOT/; add_header Cache-Control "no-cache"; }
    location /lm/ { alias DOCROOT/; etag off; add_header Cache-Control "no-cache"; }
    location /fresh/ { alias DOCROOT/; expires 1h; }
    location /gzip/ {
        alias DOCROOT/; gzip on; gzip_types text/css; gzip_min_length 1; add_header Cache-Control "no-cache";
    }
"""


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[ServerHandle]:
    root = tmp_path / "www"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    with Lab() as lab:
        server = lab.host("server")
        link = lab.link(lab.root, server)
        yield start_nginx(server, root, link.b_ip, 80, extra_conf=EXTRA.replace("DOCROOT", str(root)))


async def fetch_all(engine: Engine, base: str, prefix: str) -> Collect:
    sink = Collect()
    reqs = [FetchRequest(name, "GET", f"{base}/{prefix}/{name}") for name in FILES]
    await engine.fetch(reqs, sink, PAGE)
    for cache in engine._caches.values():  # let the stores finish
        await asyncio.gather(*list(cache._pending))
    return sink


@pytest.mark.parametrize(("prefix", "validator"), [("etag", "ETag"), ("lm", "Last-Modified")])
async def test_revalidation_against_nginx(nginx: ServerHandle, tmp_path: Path, prefix: str, validator: str) -> None:
    engine = FetchService(ServiceConfig(EngineConfig(connections_per_origin=1), cache_dir=tmp_path / "cache"))
    try:
        base = nginx.url("").rstrip("/")
        first = await fetch_all(engine, base, prefix)
        assert all(first.got[n].body == data and first.got[n].header(validator) for n, data in FILES.items())
        if prefix == "lm":
            assert all(first.got[n].header("ETag") is None for n in FILES)
        second = await fetch_all(engine, base, prefix)
        for name, data in FILES.items():
            g = second.got[name]
            assert g.body == data and g.error is None and g.head is not None and g.head.status == 200
            assert g.report is not None and g.report.cache == "revalidated"
        log = nginx.access_log(wait_for=2 * len(FILES))
        assert [r.status for r in log] == [200] * len(FILES) + [304] * len(FILES)
        assert {r.body_bytes for r in log[len(FILES):]} == {0}
        assert any(r.pipelined for r in log[len(FILES):]), "revalidations should be pipelined"
    finally:
        await engine.aclose()


async def test_a_compressed_answer_s_weakened_etag_is_revalidated_by_nginx_s_304(
        nginx: ServerHandle, tmp_path: Path) -> None:
    """nginx weakens the ETag of a body it compresses (W/"x") and names the version "x" in its 304, which has no
    body to compress: the 304 refreshes the stored gzip body all the same (weak comparison), rather than failing
    the request as "resource_changed"."""
    engine = FetchService(ServiceConfig(EngineConfig(connections_per_origin=1), cache_dir=tmp_path / "cache"))
    try:
        base = nginx.url("").rstrip("/")

        async def fetch() -> Collect:
            sink = Collect()
            await engine.fetch([FetchRequest(n, "GET", f"{base}/gzip/{n}", decode=True) for n in FILES], sink, PAGE)
            for cache in engine._caches.values():
                await asyncio.gather(*list(cache._pending))
            return sink

        first = await fetch()
        assert all((first.got[n].header("ETag") or "").startswith('W/"') for n in FILES), "nginx compressed them"
        second = await fetch()
        for name, data in FILES.items():
            g = second.got[name]
            assert g.error is None and g.body == data and g.report is not None and g.report.cache == "revalidated"
        log = nginx.access_log(wait_for=2 * len(FILES))
        assert [r.status for r in log] == [200] * len(FILES) + [304] * len(FILES)
    finally:
        await engine.aclose()


@pytest.mark.parametrize("prefix", ["etag", "lm", "gzip"])
async def test_nginx_s_304_keeps_the_stored_content_fields(nginx: ServerHandle, tmp_path: Path, prefix: str) -> None:
    """nginx's 304 carries no Content-Type, Content-Length or Content-Encoding (and no body): the refreshed response
    is served, and stored, with the fields the 200 had (RFC 9111 §3.2, §4.3.4), its ETag included (the gzip body's
    weak one, not the strong tag nginx names in the 304), never with the 304's framing."""
    engine = FetchService(ServiceConfig(EngineConfig(connections_per_origin=1), cache_dir=tmp_path / "cache"))
    content = ("Content-Type", "Content-Length", "Content-Encoding", "ETag", "Last-Modified")
    try:
        base = nginx.url("").rstrip("/")

        async def fetch() -> Collect:
            sink = Collect()
            reqs = [FetchRequest(n, "GET", f"{base}/{prefix}/{n}", [("Accept-Encoding", "gzip")]) for n in FILES]
            await engine.fetch(reqs, sink, PAGE)
            for cache in engine._caches.values():
                await asyncio.gather(*list(cache._pending))
            return sink

        first = await fetch()
        for name in FILES:
            assert first.got[name].header("Content-Type") == "text/css"
            assert (first.got[name].header("Content-Encoding") == "gzip") == (prefix == "gzip")
        for _ in range(2):  # the 304's refresh as served, then as stored and refreshed again
            again = await fetch()
            for name in FILES:
                g = again.got[name]
                assert g.error is None and g.report is not None and g.report.cache == "revalidated"
                assert g.body == first.got[name].body
                assert {f: g.header(f) for f in content} == {f: first.got[name].header(f) for f in content}
        log = nginx.access_log(wait_for=3 * len(FILES))
        assert [r.status for r in log] == [200] * len(FILES) + [304] * (2 * len(FILES))
    finally:
        await engine.aclose()


async def test_fresh_entries_never_reach_nginx_and_hard_reload_fetches_in_full(
    nginx: ServerHandle, tmp_path: Path
) -> None:
    """A hard reload (no-cache) of a fresh entry goes to nginx without the stored validator and is answered 200 in
    full (it used to be revalidated and answered 304, keeping the copy the user reloaded to be rid of: Chromium's
    cache never sends conditionals for it); its answer is stored, and answers the next request."""
    engine = FetchService(ServiceConfig(cache_dir=tmp_path / "cache"))
    try:
        base = nginx.url("").rstrip("/")
        await fetch_all(engine, base, "fresh")
        second = await fetch_all(engine, base, "fresh")
        assert all(g.report is not None and g.report.cache == "hit" for g in second.got.values())
        assert all(second.got[n].body == d for n, d in FILES.items())
        assert len(nginx.access_log(wait_for=len(FILES))) == len(FILES)
        sink = Collect()
        name = next(iter(FILES))
        hard = [("Cache-Control", "no-cache"), ("Pragma", "no-cache")]
        await engine.fetch([FetchRequest("r", "GET", f"{base}/fresh/{name}", hard)], sink, PAGE)
        assert sink.got["r"].report is not None and sink.got["r"].report.cache == "none"
        assert sink.got["r"].body == FILES[name]
        log = nginx.access_log(wait_for=len(FILES) + 1)
        assert len(log) == len(FILES) + 1 and log[-1].status == 200 and log[-1].body_bytes == len(FILES[name])
        for cache in engine._caches.values():
            await asyncio.gather(*list(cache._pending))
        after = Collect()
        await engine.fetch([FetchRequest("r", "GET", f"{base}/fresh/{name}")], after, PAGE)
        assert after.got["r"].report is not None and after.got["r"].report.cache == "hit"
        assert after.got["r"].body == FILES[name] and len(nginx.access_log()) == len(FILES) + 1
    finally:
        await engine.aclose()
