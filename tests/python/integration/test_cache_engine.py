"""The cache inside the engine, against a real aiohttp server on 127.0.0.1: fresh hits never reach the
server, stale entries are revalidated with If-None-Match / If-Modified-Since and a 304 serves the stored
body with refreshed headers, hard reloads revalidate, no-store bypasses, Vary and partitions keep entries
apart, private browsing never touches the disk, decode=True/False are served from one stored entry, and
`lanefetch cache stats|clear` and `fetch --cache` work from the command line."""

from __future__ import annotations

import asyncio
import gzip
import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.cache.sqlite_store import DB_NAME
from lanefetch.engine import (
    DeliveredHead,
    Engine,
    EngineConfig,
    FetchError,
    FetchRequest,
    Page,
    TimingReport,
)
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app

REPO = Path(__file__).resolve().parents[3]
LANEFETCH = Path(sys.executable).parent / "lanefetch"
LAST_MODIFIED = formatdate(1_600_000_000, usegmt=True)
TEXT = b"The quick brown fox jumps over the lazy dog. " * 200


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


@dataclass
class Origin:
    url: str
    seen: list[Seen] = field(default_factory=list)
    etag: str = '"v1"'

    def hits(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    state = Origin("")

    async def handler(request: web.Request) -> web.StreamResponse:
        state.seen.append(Seen(request.path, dict(request.headers)))
        name = request.match_info["name"]
        if name == "etag":  # always revalidated (no-cache), ETag only
            if request.headers.get("If-None-Match") == state.etag:
                return web.Response(status=304, headers={"ETag": state.etag, "X-Refreshed": "yes",
                                                         "Cache-Control": "no-cache", "Set-Cookie": "seen=1"})
            return web.Response(body=TEXT, headers={"ETag": state.etag, "Cache-Control": "no-cache",
                                                    "X-Refreshed": "no", "Content-Type": "text/plain"})
        if name == "lm":  # stale at once, Last-Modified only
            if request.headers.get("If-Modified-Since") == LAST_MODIFIED:
                return web.Response(status=304, headers={"Cache-Control": "max-age=0"})
            return web.Response(body=b"lm body", headers={"Last-Modified": LAST_MODIFIED, "Cache-Control": "max-age=0"})
        if name == "fresh":
            return web.Response(body=b"fresh " + str(len(state.hits(request.path))).encode(),
                                headers={"Cache-Control": "max-age=600", "ETag": '"f"'})
        if name == "gzip":
            return web.Response(body=gzip.compress(TEXT), headers={"Content-Encoding": "gzip",
                                                                   "Cache-Control": "max-age=600"})
        if name == "vary":
            lang = request.headers.get("Accept-Language", "none")
            return web.Response(body=f"lang={lang}".encode(), headers={"Cache-Control": "max-age=600",
                                                                      "Vary": "Accept-Language"})
        if name == "state":  # fields that act on the browser's state: live only, never replayed from the store
            if request.headers.get("If-None-Match") == '"s"':
                return web.Response(status=304, headers={"ETag": '"s"', "Clear-Site-Data": '"storage"'})
            return web.Response(body=b"state", headers={
                "ETag": '"s"', "Cache-Control": "no-cache", "Content-Type": "text/css",
                "Strict-Transport-Security": "max-age=600", "Clear-Site-Data": '"cookies"'})
        if name == "nostore":
            return web.Response(body=b"secret", headers={"Cache-Control": "no-store"})
        if name == "cookie":  # a validator but no explicit freshness: stored, but never fresh by heuristic
            return web.Response(body=b"per user", headers={"Last-Modified": LAST_MODIFIED,
                                                           "Set-Cookie": "session=abc"})
        return web.Response(status=404)

    async def post(request: web.Request) -> web.StreamResponse:
        state.seen.append(Seen(request.path, dict(request.headers)))
        return web.Response(body=b"posted")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    app.router.add_post("/{name}", post)
    async with serve_app(app) as port:
        state.url = f"http://127.0.0.1:{port}"
        yield state


@dataclass
class Got:
    head: DeliveredHead | None = None
    body: bytes = b""
    error: FetchError | None = None
    report: TimingReport | None = None
    ended: int = 0

    def header(self, name: str) -> str | None:
        assert self.head is not None
        return next((v for k, v in self.head.headers if k.lower() == name.lower()), None)


class Collect:
    def __init__(self) -> None:
        self.got: dict[str, Got] = {}

    def _g(self, r: FetchRequest) -> Got:
        return self.got.setdefault(r.id, Got())

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        g = self._g(request)
        assert g.head is None
        g.head = head

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self._g(request).body += data

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        g = self._g(request)
        g.ended += 1
        assert body_bytes == len(g.body)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self._g(request).error = error

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self._g(request).report = report


async def get(engine: Engine, url: str, page: Page | None = None, headers: list[tuple[str, str]] | None = None,
              decode: bool = False, method: str = "GET", resource_type: str = "other") -> Got:
    sink = Collect()
    body = b"x" if method == "POST" else None
    request = FetchRequest("r", method, url, headers or [], body=body, decode=decode, resource_type=resource_type)
    await engine.fetch([request], sink, page)
    g = sink.got["r"]
    assert g.error is None, g.error
    assert g.ended == 1 and g.report is not None
    return g


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = FetchService(ServiceConfig(EngineConfig(connections_per_origin=2), cache_dir=tmp_path / "cache"))
    yield e
    await e.aclose()


SITE = Page(address_space="loopback", top_site="https://site.test")


def db_rows(directory: Path) -> int:
    with sqlite3.connect(directory / DB_NAME) as db:
        return int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])


async def settle(engine: Engine) -> None:
    """Wait for the cache's queued writes (they run after the sink heard the end)."""
    for cache in engine._caches.values():
        await asyncio.gather(*list(cache._pending))


async def test_fresh_response_is_a_hit_and_never_reaches_the_server(engine: Engine, origin: Origin) -> None:
    first = await get(engine, f"{origin.url}/fresh", SITE)
    assert first.report is not None and first.report.cache == "none" and first.body == b"fresh 1"
    await settle(engine)
    second = await get(engine, f"{origin.url}/fresh", SITE)
    assert second.body == b"fresh 1" and second.head is not None and second.head.status == 200
    assert second.report is not None and second.report.cache == "hit"
    assert second.report.connection is None and second.report.wire_bytes == 0
    assert second.header("Age") is not None and int(second.header("Age") or "x") < 5
    assert second.header("ETag") == '"f"'
    assert len(origin.hits("/fresh")) == 1


async def test_etag_revalidation_304_serves_stored_body_with_updated_headers(engine: Engine, origin: Origin) -> None:
    first = await get(engine, f"{origin.url}/etag", SITE)
    assert first.body == TEXT and first.header("X-Refreshed") == "no"
    await settle(engine)
    second = await get(engine, f"{origin.url}/etag", SITE)
    assert second.report is not None and second.report.cache == "revalidated"
    assert second.head is not None and second.head.status == 200
    assert second.body == TEXT
    assert second.header("X-Refreshed") == "yes"  # updated from the 304
    assert second.header("Set-Cookie") == "seen=1"  # the live 304's cookie reaches the browser (never stored)
    assert second.header("Content-Length") == str(len(TEXT))  # kept from the stored response
    reqs = origin.hits("/etag")
    assert len(reqs) == 2 and "If-None-Match" not in reqs[0].headers
    assert reqs[1].headers["If-None-Match"] == '"v1"'
    await settle(engine)
    third = await get(engine, f"{origin.url}/etag", SITE)  # the refreshed headers were stored
    assert third.header("X-Refreshed") == "yes" and third.report is not None and third.report.cache == "revalidated"
    assert [v for k, v in (third.head.headers if third.head else []) if k.lower() == "set-cookie"] == ["seen=1"]


async def test_changed_resource_replaces_the_entry(engine: Engine, origin: Origin) -> None:
    await get(engine, f"{origin.url}/etag", SITE)
    await settle(engine)
    origin.etag = '"v2"'
    second = await get(engine, f"{origin.url}/etag", SITE)
    assert second.report is not None and second.report.cache == "none" and second.header("ETag") == '"v2"'
    await settle(engine)
    third = await get(engine, f"{origin.url}/etag", SITE)
    assert third.report is not None and third.report.cache == "revalidated"
    assert origin.hits("/etag")[-1].headers["If-None-Match"] == '"v2"'


async def test_a_refresh_only_request_revalidates_what_is_stored_and_stores_nothing_new(
        engine: Engine, origin: Origin) -> None:
    """A request that may not store (a flight's prefetch: cache_store False) but may refresh (cache_refresh) sends
    a stale stored entry's validator: a 304 serves the stored body (head marked `stored`: its body never crossed
    the link) and refreshes the entry; a full answer drops the stale entry and is not stored; without a stored
    entry nothing is stored either."""
    async def refresh(path: str) -> Got:
        sink = Collect()
        request = FetchRequest("r", "GET", f"{origin.url}{path}", [], cache_store=False, cache_refresh=True)
        await engine.fetch([request], sink, SITE)
        await settle(engine)
        return sink.got["r"]

    await get(engine, f"{origin.url}/etag", SITE)
    await settle(engine)
    refreshed = await refresh("/etag")
    assert refreshed.error is None and refreshed.body == TEXT and refreshed.head is not None
    assert refreshed.head.status == 200 and refreshed.head.stored and refreshed.header("X-Refreshed") == "yes"
    assert refreshed.report is not None and refreshed.report.cache == "revalidated"
    assert origin.hits("/etag")[-1].headers["If-None-Match"] == '"v1"'
    after = await get(engine, f"{origin.url}/etag", SITE)  # the refreshed head was stored
    assert after.header("X-Refreshed") == "yes" and after.report is not None and after.report.cache == "revalidated"

    origin.etag = '"v2"'
    await settle(engine)
    changed = await refresh("/etag")
    assert changed.report is not None and changed.report.cache == "none" and changed.header("ETag") == '"v2"'
    assert changed.head is not None and not changed.head.stored
    plain = await get(engine, f"{origin.url}/etag", SITE)  # nothing stored: neither the stale entry nor the new one
    assert plain.report is not None and plain.report.cache == "none"
    assert "If-None-Match" not in origin.hits("/etag")[-1].headers

    unknown = await refresh("/lm")  # nothing stored before: nothing stored now
    assert unknown.report is not None and unknown.report.cache == "none" and unknown.body == b"lm body"
    again = await get(engine, f"{origin.url}/lm", SITE)
    assert again.report is not None and again.report.cache == "none"


async def test_last_modified_revalidation(engine: Engine, origin: Origin) -> None:
    await get(engine, f"{origin.url}/lm", SITE)
    await settle(engine)
    second = await get(engine, f"{origin.url}/lm", SITE)
    assert second.report is not None and second.report.cache == "revalidated" and second.body == b"lm body"
    assert origin.hits("/lm")[1].headers["If-Modified-Since"] == LAST_MODIFIED
    assert "If-None-Match" not in origin.hits("/lm")[1].headers


async def test_hard_reload_fetches_in_full_and_replaces_the_entry(engine: Engine, origin: Origin) -> None:
    """A hard reload (Cache-Control and Pragma no-cache) of a fresh entry is fetched in full, without the stored
    validator (Chromium's LOAD_BYPASS_CACHE: a 304 to it would only hand back the copy the user wanted gone), and
    its answer replaces the entry; Pragma alone does the same; a normal reload (max-age=0) revalidates."""
    await get(engine, f"{origin.url}/fresh", SITE)
    await settle(engine)
    reload = await get(engine, f"{origin.url}/fresh", SITE, [("Cache-Control", "no-cache"), ("Pragma", "no-cache")])
    assert reload.report is not None and reload.report.cache == "none" and reload.body == b"fresh 2"
    assert "If-None-Match" not in origin.hits("/fresh")[1].headers
    await settle(engine)
    after = await get(engine, f"{origin.url}/fresh", SITE)
    assert after.report is not None and after.report.cache == "hit" and after.body == b"fresh 2"
    pragma_only = await get(engine, f"{origin.url}/fresh", SITE, [("Pragma", "no-cache")])
    assert pragma_only.report is not None and pragma_only.report.cache == "none" and pragma_only.body == b"fresh 3"
    assert "If-None-Match" not in origin.hits("/fresh")[2].headers
    await settle(engine)
    normal_reload = await get(engine, f"{origin.url}/fresh", SITE, [("Cache-Control", "max-age=0")])
    assert normal_reload.report is not None and normal_reload.report.cache != "hit"
    assert origin.hits("/fresh")[3].headers.get("If-None-Match") == '"f"'
    assert len(origin.hits("/fresh")) == 4


async def test_a_fetch_or_xhr_is_never_answered_from_the_cache_alone(engine: Engine, origin: Origin) -> None:
    """A page's fetch() may say cache "no-store", "reload" or "no-cache", which the paused request never shows: a
    fetch()/XHR of a fresh entry is revalidated (the server's 304 vouches for the stored body), never a hit, and
    the lookup's own max-age=0 never reaches the wire; an image of the same URL is still a hit."""
    await get(engine, f"{origin.url}/fresh", SITE, resource_type="fetch")
    await settle(engine)
    for n, resource_type in enumerate(("fetch", "xhr"), start=2):
        again = await get(engine, f"{origin.url}/fresh", SITE, resource_type=resource_type)
        assert again.report is not None and again.report.cache != "hit", resource_type
        sent = origin.hits("/fresh")[n - 1].headers
        assert sent.get("If-None-Match") == '"f"' and "Cache-Control" not in sent
        assert again.body == f"fresh {n}".encode()  # this server answers 200 each time: its answer is delivered
        await settle(engine)
    image = await get(engine, f"{origin.url}/fresh", SITE, resource_type="image")
    assert image.report is not None and image.report.cache == "hit" and image.body == b"fresh 3"
    assert len(origin.hits("/fresh")) == 3


async def test_a_hard_reload_or_an_unsafe_request_drops_every_variant(engine: Engine, origin: Origin) -> None:
    """The URL's stored variants (Vary: Accept-Language) go together: a hard reload of one variant, or a POST to the
    URL, leaves none of the others to answer (a browser's cache, one entry per URL, has none left either)."""
    for invalidate in ("reload", "post"):
        for lang in ("en", "de"):
            await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", lang)])
        await settle(engine)
        de = await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "de")])
        assert de.report is not None and de.report.cache == "hit"
        if invalidate == "reload":
            await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "en"), ("Cache-Control", "no-cache")])
        else:
            await get(engine, f"{origin.url}/vary", SITE, method="POST")
        await settle(engine)
        before = len(origin.hits("/vary"))
        de = await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "de")])
        assert de.report is not None and de.report.cache == "none", invalidate
        assert len(origin.hits("/vary")) == before + 1


async def test_clear_site_data_and_sts_reach_the_page_live_never_from_the_store(engine: Engine, origin: Origin) -> None:
    """Clear-Site-Data and Strict-Transport-Security act when the page receives them: a live answer (the 200, the
    304's own) carries them; the stored head never does (Chromium strips both when it writes an entry), and the
    stored Content-Type stays when the 304 brings none."""
    first = await get(engine, f"{origin.url}/state", SITE)
    assert first.header("Clear-Site-Data") == '"cookies"' and first.header("Strict-Transport-Security") is not None
    await settle(engine)
    second = await get(engine, f"{origin.url}/state", SITE)
    assert second.report is not None and second.report.cache == "revalidated" and second.body == b"state"
    assert second.header("Clear-Site-Data") == '"storage"'  # the 304's, live; the stored one is gone
    assert second.header("Strict-Transport-Security") is None
    assert (second.header("Content-Type") or "").startswith("text/css") and second.header("ETag") == '"s"'
    assert second.header("Content-Length") == "5"


async def test_no_store_request_bypasses_and_no_store_response_is_not_stored(
    engine: Engine, origin: Origin, tmp_path: Path
) -> None:
    await get(engine, f"{origin.url}/fresh", SITE)
    await settle(engine)
    bypass = await get(engine, f"{origin.url}/fresh", SITE, [("Cache-Control", "no-store")])
    assert bypass.report is not None and bypass.report.cache == "none" and len(origin.hits("/fresh")) == 2
    for _ in range(2):
        g = await get(engine, f"{origin.url}/nostore", SITE)
        assert g.report is not None and g.report.cache == "none"
        await settle(engine)
    assert len(origin.hits("/nostore")) == 2
    assert db_rows(tmp_path / "cache") == 1  # only /fresh


async def test_partition_by_top_site(engine: Engine, origin: Origin) -> None:
    await get(engine, f"{origin.url}/fresh", SITE)
    await settle(engine)
    other = await get(engine, f"{origin.url}/fresh", Page("loopback", "https://other.test"))
    assert other.report is not None and other.report.cache == "none" and other.body == b"fresh 2"
    same = await get(engine, f"{origin.url}/fresh", SITE)
    assert same.report is not None and same.report.cache == "hit" and same.body == b"fresh 1"
    assert len(origin.hits("/fresh")) == 2


async def test_vary_keeps_variants_apart(engine: Engine, origin: Origin) -> None:
    en = await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "en")])
    await settle(engine)
    de = await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "de")])
    assert (en.body, de.body) == (b"lang=en", b"lang=de")
    await settle(engine)
    en2 = await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "en")])
    de2 = await get(engine, f"{origin.url}/vary", SITE, [("Accept-Language", "de")])
    none = await get(engine, f"{origin.url}/vary", SITE)
    assert (en2.body, de2.body, none.body) == (b"lang=en", b"lang=de", b"lang=none")
    assert [g.report.cache for g in (en2, de2, none) if g.report] == ["hit", "hit", "none"]


async def test_one_stored_entry_serves_decoded_and_raw(engine: Engine, origin: Origin) -> None:
    raw = await get(engine, f"{origin.url}/gzip", SITE)
    assert gzip.decompress(raw.body) == TEXT
    await settle(engine)
    decoded = await get(engine, f"{origin.url}/gzip", SITE, decode=True)
    assert decoded.report is not None and decoded.report.cache == "hit"
    assert decoded.body == TEXT and decoded.head is not None and decoded.head.decoded
    assert decoded.header("Content-Encoding") is None
    raw2 = await get(engine, f"{origin.url}/gzip", SITE)
    assert raw2.body == raw.body and raw2.header("Content-Encoding") == "gzip"
    assert len(origin.hits("/gzip")) == 1


async def test_cookie_response_is_revalidated_not_heuristically_fresh_and_set_cookie_not_replayed(
    engine: Engine, origin: Origin
) -> None:
    first = await get(engine, f"{origin.url}/cookie", SITE, [("Cookie", "a=1")])
    assert first.header("Set-Cookie") == "session=abc"
    await settle(engine)
    # Last-Modified in 2020 would make it heuristically fresh for days; with a Cookie it is not.
    second = await get(engine, f"{origin.url}/cookie", SITE, [("Cookie", "a=1")])
    assert len(origin.hits("/cookie")) == 2
    assert origin.hits("/cookie")[1].headers.get("If-Modified-Since") == LAST_MODIFIED
    # aiohttp answers 200 again (it does not evaluate If-Modified-Since for a handler): a full answer
    assert second.report is not None and second.report.cache == "none"
    without_cookie = await get(engine, f"{origin.url}/cookie", Page("loopback", "https://third.test"))
    await settle(engine)
    heuristic_hit = await get(engine, f"{origin.url}/cookie", Page("loopback", "https://third.test"))
    assert without_cookie.report is not None and heuristic_hit.report is not None
    assert heuristic_hit.report.cache == "hit" and heuristic_hit.header("Set-Cookie") is None


async def test_unsafe_method_invalidates(engine: Engine, origin: Origin) -> None:
    await get(engine, f"{origin.url}/fresh", SITE)
    await settle(engine)
    await get(engine, f"{origin.url}/fresh", SITE, method="POST")
    await settle(engine)
    again = await get(engine, f"{origin.url}/fresh", SITE)
    assert again.report is not None and again.report.cache == "none"


async def test_private_browsing_never_touches_the_persistent_store(
    engine: Engine, origin: Origin, tmp_path: Path
) -> None:
    private = Page("loopback", "https://site.test", private_browsing=True)
    await get(engine, f"{origin.url}/fresh", private)
    await settle(engine)
    hit = await get(engine, f"{origin.url}/fresh", private)
    assert hit.report is not None and hit.report.cache == "hit"  # from memory
    assert not (tmp_path / "cache").exists()  # the persistent store was never even opened
    normal = await get(engine, f"{origin.url}/fresh", SITE)
    assert normal.report is not None and normal.report.cache == "none"  # private entries stay private
    await settle(engine)
    assert db_rows(tmp_path / "cache") == 1
    again_private = await get(engine, f"{origin.url}/fresh", Page("loopback", "https://x.test", private_browsing=True))
    assert again_private.report is not None and again_private.report.cache == "none"


async def test_entries_survive_the_engine(tmp_path: Path, origin: Origin) -> None:
    cfg = ServiceConfig(cache_dir=tmp_path / "c")
    first = FetchService(cfg)
    await get(first, f"{origin.url}/fresh", SITE)
    await first.aclose()  # waits for the write
    second = FetchService(cfg)
    try:
        g = await get(second, f"{origin.url}/fresh", SITE)
        assert g.report is not None and g.report.cache == "hit"
    finally:
        await second.aclose()


async def test_batch_of_hits_and_revalidations_together(engine: Engine, origin: Origin) -> None:
    urls = [f"{origin.url}/{n}" for n in ("fresh", "etag", "lm", "gzip")]
    sink = Collect()
    await engine.fetch([FetchRequest(str(i), "GET", u) for i, u in enumerate(urls)], sink, SITE)
    await settle(engine)
    sink2 = Collect()
    await engine.fetch([FetchRequest(str(i), "GET", u) for i, u in enumerate(urls)], sink2, SITE)
    caches = [sink2.got[str(i)].report.cache for i in range(4)]  # type: ignore[union-attr]
    assert caches == ["hit", "revalidated", "revalidated", "hit"]
    for i in range(4):
        assert sink2.got[str(i)].body == sink.got[str(i)].body and sink2.got[str(i)].ended == 1


async def run(*args: str) -> tuple[int, str, str]:
    argv = [str(LANEFETCH)] if LANEFETCH.exists() else [sys.executable, "-m", "lanefetch"]
    proc = await asyncio.create_subprocess_exec(*argv, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_cli_fetch_with_cache_then_stats_and_clear(tmp_path: Path, origin: Origin) -> None:
    where_path = tmp_path / "clicache"
    where = str(where_path)
    url = f"{origin.url}/fresh"
    code, out, err = await run("fetch", "--json", url)
    assert code == 0, err
    assert json.loads(out)["requests"][0]["cache"] == "none"
    assert not await asyncio.to_thread(where_path.exists)  # without --cache nothing is created
    for expected in ("none", "hit"):
        code, out, err = await run("fetch", "--json", "--cache", "--cache-dir", where, url)
        assert code == 0, err
        assert json.loads(out)["requests"][0]["cache"] == expected
    assert len(origin.hits("/fresh")) == 2
    code, out, _ = await run("cache", "stats", "--cache-dir", where)
    assert code == 0 and "entries:  1" in out and where in out
    code, out, _ = await run("cache", "clear", "--cache-dir", where)
    assert code == 0 and "removed 1 entry from" in out
    code, out, _ = await run("cache", "stats", "--cache-dir", where)
    assert "entries:  0" in out and "bytes:    0" in out
    code, out, _ = await run("fetch", "--cache", "--cache-dir", where, "--out", str(tmp_path / "bodies"), url)
    assert code == 0 and "cache" not in out.split()[2:3]  # fetched again: no "cache hit" column


async def test_browser_warm_request_is_answered_from_the_cache_or_declined_never_sent(
        engine: Engine, origin: Origin) -> None:
    """A request the extension marked `browser_warm` (the browser's own connection there is warm and idle): what
    the helper holds answers it (a fresh hit, a revalidation of a stored entry); what only the network could
    answer is declined with the `browser_warm` error, and the server never sees it."""

    async def warm(path: str) -> Got:
        sink = Collect()
        await engine.fetch([FetchRequest("w", "GET", f"{origin.url}{path}", [], browser_warm=True)], sink, SITE)
        return sink.got["w"]

    declined = await warm("/fresh")
    assert declined.error is not None and declined.error.code == "browser_warm" and declined.head is None
    assert declined.report is not None, "a declined request still gets its timing"
    assert origin.hits("/fresh") == [], "declined: not sent"
    await get(engine, f"{origin.url}/fresh", SITE)  # the page's own request (unmarked) stores it
    await get(engine, f"{origin.url}/etag", SITE)
    await settle(engine)
    hit = await warm("/fresh")
    assert hit.error is None and hit.body == b"fresh 1" and hit.report is not None and hit.report.cache == "hit"
    revalidated = await warm("/etag")
    assert revalidated.error is None and revalidated.body == TEXT
    assert revalidated.report is not None and revalidated.report.cache == "revalidated"
    assert origin.hits("/etag")[-1].headers["If-None-Match"] == '"v1"', "the revalidation went out: it is conditional"
    assert len(origin.hits("/fresh")) == 1
