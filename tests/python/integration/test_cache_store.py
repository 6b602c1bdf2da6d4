"""The stores: LRU eviction by size, a kill mid-write leaves no entry (and no corrupt one), an entry
that fails its checksum is dropped, a file that is not a database is replaced, partitions keep the same
URL apart; the in-memory store for private browsing follows the same rules; the cache directory per
platform."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lanefetch.cache.entry import StoredHead
from lanefetch.cache.location import default_cache_dir
from lanefetch.cache.memory_store import MemoryStore
from lanefetch.cache.origin_memory import BAD_TTL, RECORD_TTL, record_of
from lanefetch.cache.sqlite_store import DB_NAME, SqliteStore
from lanefetch.cache.store import EntryStore
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState

REPO = Path(__file__).resolve().parents[3]
HEAD = StoredHead(200, "OK", "1.1", [("ETag", '"e"')], 1.0, 2.0, {"accept": "x"}, True)
HEAD_BYTES = len(HEAD.to_json())


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> EntryStore:
    limit = 10 * (1000 + HEAD_BYTES)  # room for exactly ten 1000-byte entries
    s: EntryStore = SqliteStore(tmp_path, limit) if request.param == "sqlite" else MemoryStore(limit)
    return s


def urls(store: EntryStore, partition: str = "p") -> list[str]:
    return [u for u in (f"http://o/{i}" for i in range(40)) if store.lookup(partition, "GET", u)]


def test_put_lookup_body_and_variants(store: EntryStore) -> None:
    store.put("p", "GET", "http://o/a", "v1", HEAD, b"one")
    store.put("p", "GET", "http://o/a", "v2", HEAD, b"two")
    store.put("p", "GET", "http://o/a", "v1", HEAD, b"uno")  # same key: replaced
    found = store.lookup("p", "GET", "http://o/a")
    assert len(found) == 2 and found[0].head == HEAD
    assert sorted(store.body(e.id) or b"" for e in found) == [b"two", b"uno"]
    assert store.stats().entries == 2 and store.stats().bytes == 2 * (3 + HEAD_BYTES)


def test_partitions_keep_the_same_url_apart(store: EntryStore) -> None:
    store.put("https://a.test", "GET", "http://o/x", "", HEAD, b"for a")
    assert store.lookup("https://b.test", "GET", "http://o/x") == []
    assert [store.body(e.id) for e in store.lookup("https://a.test", "GET", "http://o/x")] == [b"for a"]
    store.delete_url("https://b.test", "http://o/x")
    assert store.lookup("https://a.test", "GET", "http://o/x")
    store.delete_url("https://a.test", "http://o/x")
    assert not store.lookup("https://a.test", "GET", "http://o/x")


def test_lru_eviction_by_size(store: EntryStore) -> None:
    for i in range(10):
        store.put("p", "GET", f"http://o/{i}", "", HEAD, bytes(1000))
    assert store.stats().entries == 10 and store.stats().bytes == store.max_bytes
    store.touch([store.lookup("p", "GET", "http://o/0")[0].id])  # 0 is now the most recently used
    store.put("p", "GET", "http://o/10", "", HEAD, bytes(1000))
    assert urls(store) == ["http://o/0", *[f"http://o/{i}" for i in range(2, 11)]]
    store.put("p", "GET", "http://o/big", "", HEAD, bytes(3500))  # needs four entries' room
    left = urls(store)
    assert "http://o/0" in left and len(left) == 6 and store.stats().bytes <= store.max_bytes
    store.put("p", "GET", "http://o/huge", "", HEAD, bytes(store.max_bytes))  # larger than the whole cache
    assert not store.lookup("p", "GET", "http://o/huge") and len(urls(store)) == 6
    assert store.clear() == 7 and store.stats().entries == 0


def test_update_head_and_delete(store: EntryStore) -> None:
    store.put("p", "GET", "http://o/a", "", HEAD, b"body")
    (e,) = store.lookup("p", "GET", "http://o/a")
    newer = StoredHead(200, "OK", "1.1", [("ETag", '"e"'), ("X", "y")], 5.0, 6.0, {}, True)
    store.update_head(e.id, newer)
    (e2,) = store.lookup("p", "GET", "http://o/a")
    assert e2.head == newer and store.body(e2.id) == b"body"
    store.delete(e2.id)
    assert store.lookup("p", "GET", "http://o/a") == [] and store.body(e2.id) is None


def test_a_refreshed_head_that_grew_keeps_the_store_within_its_bound(store: EntryStore) -> None:
    # A 304 adds fields to the head it refreshes (a hostile server: new ones every time); the store must stay at or
    # below max_bytes, least recently used entries going as for a put, the refreshed one kept.
    for i in range(10):
        store.put("p", "GET", f"http://o/{i}", "", HEAD, bytes(1000))
    assert store.stats().bytes == store.max_bytes
    (e,) = store.lookup("p", "GET", "http://o/5")
    grown = StoredHead(200, "OK", "1.1", [("ETag", '"e"'), ("X-Pad", "x" * 1500)], 5.0, 6.0, {"accept": "x"}, True)
    store.update_head(e.id, grown)
    assert store.stats().bytes <= store.max_bytes
    assert [x.head for x in store.lookup("p", "GET", "http://o/5")] == [grown]
    assert "http://o/0" not in urls(store)


def test_a_refreshed_head_never_lands_on_a_newer_version_stored_meanwhile(tmp_path: Path) -> None:
    # Two processes on one file (SqliteStore), or a flight's kept answer (MemoryStore too): our revalidation of
    # version "a" is out when another writer stores version "b" under the same key; the 304's refreshed head of
    # "a" must not be written over "b"'s body (validation.same_version).
    old = StoredHead(200, "OK", "1.1", [("ETag", '"a"'), ("Content-Length", "3")], 1.0, 2.0, {}, True)
    new = StoredHead(200, "OK", "1.1", [("ETag", '"b"'), ("Content-Length", "5")], 3.0, 4.0, {}, True)
    refreshed = StoredHead(200, "OK", "1.1", [("ETag", '"a"'), ("Content-Length", "3")], 5.0, 6.0, {}, True)
    first, second = SqliteStore(tmp_path, 10**6), SqliteStore(tmp_path, 10**6)
    for ours, theirs in ((first, second), (MemoryStore(10**6), None)):
        ours.put("p", "GET", "http://o/a", "", old, b"AAA")
        (e,) = ours.lookup("p", "GET", "http://o/a")
        (theirs or ours).put("p", "GET", "http://o/a", "", new, b"BBBBB")
        ours.update_head(e.id, refreshed)
        (now,) = ours.lookup("p", "GET", "http://o/a")
        assert (now.head.get("etag"), ours.body(now.id)) == ('"b"', b"BBBBB")
    first.close()
    second.close()


def test_entries_persist_across_processes(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path, 10**6)
    s.put("p", "GET", "http://o/a", "", HEAD, b"kept")
    s.close()
    code = f"""
        from pathlib import Path
        from lanefetch.cache.sqlite_store import SqliteStore
        s = SqliteStore(Path({str(tmp_path)!r}), 10**6)
        (e,) = s.lookup("p", "GET", "http://o/a")
        print(s.body(e.id).decode())
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         cwd=REPO / "native-host", check=True)
    assert out.stdout.strip() == "kept"


def test_checksum_failure_is_a_miss_and_drops_the_entry(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path, 10**6)
    s.put("p", "GET", "http://o/a", "", HEAD, b"A" * 5000)
    (e,) = s.lookup("p", "GET", "http://o/a")
    with sqlite3.connect(tmp_path / DB_NAME) as db:  # flip bytes behind the store's back
        db.execute("UPDATE entries SET body = ? WHERE id = ?", (b"A" * 4999 + b"B", e.id))
    assert s.body(e.id) is None
    assert s.lookup("p", "GET", "http://o/a") == []


def test_a_file_that_is_not_a_database_is_replaced(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_bytes(b"this is not sqlite" * 100)
    s = SqliteStore(tmp_path, 10**6)
    s.put("p", "GET", "http://o/a", "", HEAD, b"ok")
    assert s.stats().entries == 1
    assert (tmp_path / (DB_NAME + ".broken")).read_bytes().startswith(b"this is not sqlite")


def test_a_database_a_newer_version_made_is_started_afresh(tmp_path: Path) -> None:
    """A database a newer helper made (its user_version higher; the user went back to an older release, or runs an
    older CLI beside a newer helper) may hold tables of the same names laid out otherwise: this version's tables
    start afresh, every one of them, so its writes of learned records do not fail at every start."""
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("CREATE TABLE pages (partition TEXT NOT NULL, page TEXT NOT NULL, record TEXT NOT NULL,"
                   " updated REAL NOT NULL, hits INTEGER NOT NULL, PRIMARY KEY (partition, page))")
        db.execute("CREATE TABLE origins (partition TEXT NOT NULL, origin TEXT NOT NULL, record TEXT NOT NULL,"
                   " site TEXT NOT NULL, PRIMARY KEY (partition, origin))")
        db.execute("INSERT INTO pages VALUES ('s', 'k', 'newer', 1.0, 3)")
        db.execute("PRAGMA user_version = 2")
    s = SqliteStore(tmp_path, 10**6)
    s.keep_pages("s", {"k": "ours"}, 2.0)
    s.learn("s", {"https://o.test": "ours"})
    s.put("p", "GET", "http://o/a", "", HEAD, b"ok")
    assert (s.pages("s", ["k"]), s.learned("s", ["https://o.test"])) == ({"k": "ours"}, {"https://o.test": "ours"})
    s.close()


def test_another_programs_database_is_replaced(tmp_path: Path) -> None:
    """A SQLite database that is not ours (tables of the same names, other columns): set aside, a new one started."""
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("CREATE TABLE entries (name TEXT, value TEXT)")
        db.execute("INSERT INTO entries VALUES ('theirs', 'kept')")
    s = SqliteStore(tmp_path, 10**6)
    s.put("p", "GET", "http://o/a", "", HEAD, b"ok")
    assert s.stats().entries == 1
    s.close()
    with sqlite3.connect(tmp_path / (DB_NAME + ".broken")) as db:
        assert db.execute("SELECT value FROM entries").fetchall() == [("kept",)]


# A writer that stores complete entries, then starts a large one and is killed inside that transaction:
# SQLite's progress handler runs between VM instructions; once the uncommitted body has spilled into
# the WAL (the statements after the INSERT, before COMMIT) it tells the parent, which SIGKILLs it there.
WRITER = """
import os, sys
from pathlib import Path
from lanefetch.cache.entry import StoredHead
from lanefetch.cache.sqlite_store import SqliteStore
s = SqliteStore(Path(sys.argv[1]), 1 << 30)
head = StoredHead(200, "OK", "1.1", [], 1.0, 2.0, {}, True)
for i in range(3):
    s.put("p", "GET", f"http://o/{i}", "", head, bytes([i]) * 100_000)
s._db.execute("PRAGMA cache_size = 10")  # spill the big entry's pages to the WAL before commit
wal = Path(sys.argv[1]) / "cache.sqlite3-wal"
state = {"told": False}
def progress():
    if not state["told"] and wal.stat().st_size > (4 << 20):
        state["told"] = True
        os.write(1, b"inside\\n")
        import time
        time.sleep(60)
    return 0
s._db.set_progress_handler(progress, 1)
s.put("p", "GET", "http://o/big", "", head, os.urandom(8 << 20))
os.write(1, b"committed\\n")
"""


def test_kill_mid_write_leaves_no_entry_and_no_corruption(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE,
                            cwd=REPO / "native-host")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"inside\n"
        wal = tmp_path / (DB_NAME + "-wal")
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        assert wal.stat().st_size > 1 << 20  # uncommitted pages of the big body really reached the disk
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    s = SqliteStore(tmp_path, 1 << 30)
    assert s.lookup("p", "GET", "http://o/big") == []
    for i in range(3):
        (e,) = s.lookup("p", "GET", f"http://o/{i}")
        assert s.body(e.id) == bytes([i]) * 100_000
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert s.stats().entries == 3


def test_default_cache_dir_per_platform(tmp_path: Path) -> None:
    home = Path("/home/u")
    assert default_cache_dir("linux", {}, home) == home / ".cache" / "lanefetch"
    assert default_cache_dir("linux", {"XDG_CACHE_HOME": "/xdg"}, home) == Path("/xdg/lanefetch")
    assert default_cache_dir("linux", {"XDG_CACHE_HOME": "rel"}, home) == home / ".cache" / "lanefetch"
    assert default_cache_dir("darwin", {}, home) == home / "Library" / "Caches" / "lanefetch"
    assert default_cache_dir("win32", {"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, home) == Path(
        "C:/Users/u/AppData/Local/lanefetch/Cache")


def test_learned_pages_are_partitioned_persisted_and_cleared(store: EntryStore, tmp_path: Path) -> None:
    """prefetch/learned.py's records: kept per top-level site, replaced, gone with the cache."""
    store.keep_pages("site-a", {"u:http://o/p": "A1", "t:http://o/*#x": "T"}, 1.0)
    store.keep_pages("site-b", {"u:http://o/p": "B1"}, 1.0)
    store.keep_pages("site-a", {"u:http://o/p": "A2"}, 2.0)
    assert store.pages("site-a", ["u:http://o/p", "t:http://o/*#x", "u:http://o/q"]) == {
        "u:http://o/p": "A2", "t:http://o/*#x": "T"}
    assert store.pages("site-b", ["u:http://o/p"]) == {"u:http://o/p": "B1"}
    if isinstance(store, SqliteStore):
        store.close()
        store = SqliteStore(tmp_path, store.max_bytes)
        assert store.pages("site-a", ["u:http://o/p"]) == {"u:http://o/p": "A2"}
    store.clear()
    assert store.pages("site-a", ["u:http://o/p"]) == {}
    assert store.pages("site-b", ["u:http://o/p"]) == {}


def test_learned_pages_are_bounded_oldest_first(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path, 10_000)
    store.max_pages = 3
    store.max_page_bytes = 25
    for i in range(5):
        store.keep_pages("s", {f"k{i}": "x" * 5}, float(i))
    assert sorted(store.pages("s", [f"k{i}" for i in range(5)])) == ["k2", "k3", "k4"]  # by count
    store.keep_pages("s", {"big": "y" * 20}, 10.0)
    assert sorted(store.pages("s", ["k2", "k3", "k4", "big"])) == ["big", "k4"]  # by bytes: 20 + 5 <= 25
    store.close()


def test_a_body_replaced_after_the_lookup_is_never_paired_with_the_head_it_found(tmp_path: Path) -> None:
    # Another helper process stores a newer response under the same key between our lookup and our body read: the
    # row keeps its id (ON CONFLICT DO UPDATE), so the body read by id is the newer one. Asked as of the head we
    # found, the store says "gone" (a miss), never pairing "a"'s head (its encoding, its length) with "b"'s body.
    old = StoredHead(200, "OK", "1.1", [("ETag", '"a"'), ("Content-Encoding", "br")], 1.0, 2.0, {}, True)
    new = StoredHead(200, "OK", "1.1", [("ETag", '"b"')], 3.0, 4.0, {}, True)
    first, second = SqliteStore(tmp_path, 10**6), SqliteStore(tmp_path, 10**6)
    for ours, theirs in ((first, second), (MemoryStore(10**6), None)):
        ours.put("p", "GET", "http://o/a", "", old, b"AAA")
        (e,) = ours.lookup("p", "GET", "http://o/a")
        assert ours.body(e.id, as_of=e.head) == b"AAA"
        (theirs or ours).put("p", "GET", "http://o/a", "", new, b"BBBBB")
        assert ours.body(e.id, as_of=e.head) is None
        (now,) = ours.lookup("p", "GET", "http://o/a")
        assert ours.body(now.id, as_of=now.head) == b"BBBBB"
    first.close()
    second.close()


async def test_a_write_queued_before_a_plan_is_seen_by_it(tmp_path: Path) -> None:
    # The helper invalidates a URL (a POST to it went to the browser) and, in the same turn of the loop, plans the
    # next batch, which asks for that URL: the plan runs after the delete, so the stored response is not served.
    import time
    from email.utils import formatdate

    from lanefetch.cache.http_cache import HttpCache
    from lanefetch.cache.policy import Hit, Miss

    t = time.time()  # the store's entry as just fetched: max-age counts from the wall clock, as it must
    fresh = StoredHead(200, "OK", "1.1", [("Cache-Control", "max-age=3600"), ("Date", formatdate(t, usegmt=True))],
                       t, t, {}, True)
    cache = HttpCache(lambda: SqliteStore(tmp_path, 10**6), 10**6)
    try:
        await cache.run(lambda s: s.put("p", "GET", "http://o/a", "", fresh, b"AAA"))
        (plan,) = await cache.plan([("GET", "http://o/a", [])], "p") or []
        assert isinstance(plan[0], Hit)
        cache.writes("p").delete_url("http://o/a")
        (plan,) = await cache.plan([("GET", "http://o/a", [])], "p") or []
        assert isinstance(plan[0], Miss)
    finally:
        await cache.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_a_no_cache_request_drops_every_variant_before_it_goes(tmp_path: Path, kind: str) -> None:
    # A hard reload (Cache-Control: no-cache) of a URL stored in two variants (Vary: Accept-Language): the plan
    # drops both before the request leaves, as Chromium dooms its entry, so neither answers again whatever the
    # fetch brings (here: nothing stored after it, as when it fails or is too large to keep).
    import time
    from email.utils import formatdate

    from lanefetch.cache.http_cache import HttpCache
    from lanefetch.cache.policy import Hit, Miss

    t = time.time()
    fields = [("Cache-Control", "max-age=3600"), ("Date", formatdate(t, usegmt=True)), ("Vary", "Accept-Language")]
    cache = HttpCache(lambda: SqliteStore(tmp_path, 10**6) if kind == "sqlite" else MemoryStore(10**6), 10**6)
    try:
        for lang in ("en", "de"):
            head = StoredHead(200, "OK", "1.1", fields, t, t, {"accept-language": lang}, True)
            await cache.run(lambda s, h=head, v=lang: s.put("p", "GET", "http://o/a", f"accept-language:={v}", h, b"A"))
        (plan,) = await cache.plan([("GET", "http://o/a", [("Accept-Language", "de")])], "p") or []
        assert isinstance(plan[0], Hit)
        reload = [("Accept-Language", "en"), ("Cache-Control", "no-cache"), ("Pragma", "no-cache")]
        # a prefetch's look at what is stored drops nothing (no request of the page goes yet)
        (plan,) = await cache.plan([("GET", "http://o/a", reload)], "p", look_only=True) or []
        assert plan == (Miss(drop=True), None)
        assert len(await cache.run(lambda s: s.lookup("p", "GET", "http://o/a"))) == 2
        (plan,) = await cache.plan([("GET", "http://o/a", reload)], "p") or []
        assert plan == (Miss(drop=True), None)
        assert await cache.run(lambda s: s.lookup("p", "GET", "http://o/a")) == []
        for lang in ("en", "de"):
            (plan,) = await cache.plan([("GET", "http://o/a", [("Accept-Language", lang)])], "p") or []
            assert plan == (Miss(), None)
    finally:
        await cache.aclose()


async def test_an_invalidation_the_store_failed_leaves_nothing_served(tmp_path: Path) -> None:
    # The delete after a POST (or after a full answer replaced the entry) fails in the store (the file locked by
    # another helper past the busy timeout, the disk full): the cache steps aside, as for any failing store, rather
    # than serve the response the write was to remove, also to a plan asked in the same turn of the loop.
    import time
    from email.utils import formatdate

    from lanefetch.cache.http_cache import HttpCache
    from lanefetch.cache.policy import Hit

    class Locked(MemoryStore):
        def delete_url(self, partition: str, url: str) -> None:
            raise sqlite3.OperationalError("database is locked")

    t = time.time()
    fresh = StoredHead(200, "OK", "1.1", [("Cache-Control", "max-age=3600"), ("Date", formatdate(t, usegmt=True))],
                       t, t, {}, True)
    cache = HttpCache(lambda: Locked(10**6), 10**6)
    try:
        await cache.run(lambda s: s.put("p", "GET", "http://o/a", "", fresh, b"AAA"))
        cache.writes("p").delete_url("http://o/a")
        plans = await cache.plan([("GET", "http://o/a", [])], "p")
        assert plans is None or not isinstance(plans[0][0], Hit)
        plans = await cache.plan([("GET", "http://o/a", [])], "p")
        assert plans is None or not isinstance(plans[0][0], Hit)
    finally:
        await cache.aclose()


def test_a_head_spelled_otherwise_when_read_back_is_still_as_of_itself(tmp_path: Path) -> None:
    # A head whose times are whole numbers is stored as "1" and read back as 1.0: the same head, so its body is
    # served (compared as text, every such entry was a miss for good).
    whole = StoredHead(200, "OK", "1.1", [("ETag", '"w"')], 1, 2, {}, True)
    for s in (SqliteStore(tmp_path, 10**6), MemoryStore(10**6)):
        s.put("p", "GET", "http://o/w", "", whole, b"W")
        (e,) = s.lookup("p", "GET", "http://o/w")
        assert s.body(e.id, as_of=e.head) == b"W"
        s.close()


async def test_a_write_after_the_cache_closed_is_dropped_not_raised(tmp_path: Path) -> None:
    # A response's tap may still write as the helper shuts down: the write is logged and dropped, never raised
    # into the fetch that made it.
    from lanefetch.cache.http_cache import HttpCache

    cache = HttpCache(lambda: MemoryStore(10**6), 10**6)
    await cache.aclose()
    cache.writes("p").put("http://o/a", "", HEAD, b"A")


async def _tapped(cache: object, request: list[tuple[str, str]], status: int, response: list[tuple[str, str]],
                  body: bytes, revalidating: tuple[object, bytes] | None = None) -> object:
    """One response through the cache's tap, as the caching fetcher runs it; the substitute a 304 gave, if any."""
    import time

    from lanefetch.cache.http_cache import HttpCache
    from lanefetch.cache.tap import CacheTap
    from lanefetch.engine.response_parser import ResponseHead

    assert isinstance(cache, HttpCache)
    tap = CacheTap(cache.writes("p"), "GET", "http://o/a", request, time.time(), 10**6,
                   revalidating)  # type: ignore[arg-type]
    got = tap.on_head(ResponseHead(status, "OK", "1.1", response))
    tap.on_body(body)
    tap.on_complete([])
    await cache.run(lambda s: None)  # the writes queued before it are done
    return got


def _fresh_hits(entries: list[object], request: list[tuple[str, str]], at: float) -> list[object]:
    from lanefetch.cache.policy import Hit, decide

    return [d for d in [decide("GET", request, entries, at)] if isinstance(d, Hit)]  # type: ignore[arg-type]


@pytest.mark.parametrize("case", ["304 no-store", "reload answered no-store", "Vary began", "304 Vary began",
                                  "304 Vary *"])
async def test_what_a_browser_cache_drops_is_dropped_here_too(case: str) -> None:
    # A review against Chromium's cache: a 304 that says no-store, a full answer that may not be stored (to a hard
    # reload), and a copy stored before the server began to vary each leave nothing that would answer later.
    import time
    from email.utils import formatdate

    from lanefetch.cache.http_cache import HttpCache

    old = formatdate(time.time() - 30 * 86400, usegmt=True)
    cases = {
        "304 no-store": [([], 200, [("Cache-Control", "no-cache"), ("ETag", '"v1"'), ("Last-Modified", old)], b"A"),
                         ([], 304, [("Cache-Control", "no-store"), ("ETag", '"v1"')], b"")],
        "reload answered no-store": [([], 200, [("Cache-Control", "max-age=3600")], b"A"),
                                     ([("Cache-Control", "no-cache")], 200, [("Cache-Control", "no-store")], b"B")],
        "Vary began": [([("Accept-Language", "en")], 200, [("Cache-Control", "max-age=3600")], b"A"),
                       ([("Accept-Language", "en"), ("Cache-Control", "no-cache")], 200,
                        [("Cache-Control", "max-age=3600"), ("Vary", "Accept-Language")], b"en")],
        # A 304 whose Vary the stored response did not have: the refreshed entry varies as the 304 says (Chromium
        # keys it on the revalidating request's values), and `Vary: *` never matches.
        "304 Vary began": [([("Accept-Language", "en")], 200, [("Cache-Control", "no-cache"), ("ETag", '"v1"')], b"A"),
                           ([("Accept-Language", "en")], 304,
                            [("Cache-Control", "max-age=3600"), ("ETag", '"v1"'), ("Vary", "Accept-Language")], b"")],
        "304 Vary *": [([], 200, [("Cache-Control", "no-cache"), ("ETag", '"v1"')], b"A"),
                       ([], 304, [("Cache-Control", "max-age=3600"), ("ETag", '"v1"'), ("Vary", "*")], b"")],
    }
    cache = HttpCache(lambda: MemoryStore(10**6), 10**6)
    try:
        for request, status, response, body in cases[case]:
            stored = await cache.run(lambda s: s.lookup("p", "GET", "http://o/a"))
            revalidating = (stored[0], b"A") if status == 304 else None
            await _tapped(cache, request, status, response, body, revalidating)
        entries = await cache.run(lambda s: s.lookup("p", "GET", "http://o/a"))
        later = [("Accept-Language", "fr")] if case in ("Vary began", "304 Vary began") else []
        assert not _fresh_hits(entries, later, time.time() + 60), case
    finally:
        await cache.aclose()


async def test_a_newer_answer_too_large_to_keep_leaves_no_older_copy_to_answer() -> None:
    # A hard reload (no validator stored: fetched in full) answered with a body past the entry limit: the page got
    # the new version; the old copy, still fresh by its own headers, must not answer the next request with the old
    # body (the browser's cache drops it as soon as it writes the new answer).
    import time

    from lanefetch.cache.http_cache import HttpCache
    from lanefetch.cache.tap import CacheTap
    from lanefetch.engine.response_parser import ResponseHead

    cache = HttpCache(lambda: MemoryStore(10**6), 10)
    try:
        for request, body in (([], b"old"), ([("Cache-Control", "no-cache")], b"a newer, larger body")):
            tap = CacheTap(cache.writes("p"), "GET", "http://o/a", request, time.time(), cache.max_entry_bytes)
            tap.on_head(ResponseHead(200, "OK", "1.1", [("Cache-Control", "max-age=3600")]))
            tap.on_body(body)
            tap.on_complete([])
            await cache.run(lambda s: None)  # the writes queued before it are done
        entries = await cache.run(lambda s: s.lookup("p", "GET", "http://o/a"))
        assert not _fresh_hits(entries, [], time.time() + 60)
    finally:
        await cache.aclose()


def test_the_cache_and_its_page_records_are_readable_by_the_user_only(tmp_path: Path) -> None:
    """The database holds the pages visited and their bodies: the directory made for it is the user's alone, and
    the database (with its WAL and shared-memory files) is mode 0600 whatever the umask; one an earlier version
    left readable by others is made private when opened."""
    import stat

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    old = os.umask(0o022)
    try:
        directory = tmp_path / "cache" / "lanefetch"
        s = SqliteStore(directory, 1 << 20)
        s.put("p", "GET", "http://o/secret", "", HEAD, b"body")
        s.keep_pages("site-a", {"u:http://o/visited": "A"}, 1.0)
        files = sorted(directory.iterdir())
        assert {f.name for f in files} >= {DB_NAME, DB_NAME + "-wal"}
        assert mode(directory) == 0o700
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
        s.close()

        earlier = tmp_path / "earlier"
        earlier.mkdir()
        sqlite3.connect(earlier / DB_NAME).close()
        (earlier / DB_NAME).chmod(0o644)
        s = SqliteStore(earlier, 1 << 20)
        s.put("p", "GET", "http://o/secret", "", HEAD, b"body")
        assert {f.name: mode(f) for f in earlier.iterdir()} == {f.name: 0o600 for f in earlier.iterdir()}
        s.close()
    finally:
        os.umask(old)


# Another process (the other browser's helper, the CLI) inside a write transaction, as long as the test wants: it
# says "holding" once it has the write lock, and ends it (committing one entry) when told on stdin.
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


def _hold_write_lock(path: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"holding\n"
    return proc


def _release(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def test_a_store_opened_while_another_process_writes_shares_its_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper starting while another process holds the write lock (a long write, a CLI stopped with ^Z) opens the
    same database, never writing at open when the schema is current; where it must write (a database yet to be set
    up) and the lock outlasts the busy timeout, it fails with "database is locked" (the cache steps aside, logged),
    never taking a busy database for a broken one and moving it aside: the two processes would go on with two
    files, the other's entries lost to this one, and a clear in one leaving the other's behind."""
    from lanefetch.cache import sqlite_store

    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.2, raising=False)
    s = SqliteStore(tmp_path, 10**6)
    s.put("p", "GET", "http://o/a", "", HEAD, b"kept")
    s.close()
    holder = _hold_write_lock(tmp_path / DB_NAME)
    try:
        ours = SqliteStore(tmp_path, 10**6)
        (e,) = ours.lookup("p", "GET", "http://o/a")
        assert ours.body(e.id) == b"kept"
        ours.close()
    finally:
        _release(holder)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".broken")] == []

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    sqlite3.connect(fresh / DB_NAME).close()  # made by a process still setting it up: user_version 0
    holder = _hold_write_lock(fresh / DB_NAME)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            SqliteStore(fresh, 10**6)
    finally:
        _release(holder)
    assert [p.name for p in fresh.iterdir() if p.name.endswith(".broken")] == []


def test_a_damaged_database_is_moved_aside_and_started_afresh(tmp_path: Path) -> None:
    """A database whose structure is damaged (a disk error in an index: SQLite opens it, reads may work, every
    write that touches the index fails "malformed") is set aside when opened and a new one started, as a file that
    is not a database is: kept, the cache failed at every helper start's first write, for good."""
    s = SqliteStore(tmp_path, 10**7)
    for i in range(300):
        s.put("p", "GET", f"http://o/{i}", "", HEAD, b"b" * 200)
    s._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = s._db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'entries_lru'").fetchone()
    page = s._db.execute("PRAGMA page_size").fetchone()[0]
    s.close()
    with open(tmp_path / DB_NAME, "r+b") as f:  # the index's root page: its header kept, its cells garbage
        f.seek((root - 1) * page + 8)
        f.write(b"\xa5" * (page - 8))
    s = SqliteStore(tmp_path, 10**7)
    s.put("p", "GET", "http://o/new", "", HEAD, b"new")
    (e,) = s.lookup("p", "GET", "http://o/new")
    assert s.body(e.id) == b"new"
    assert (tmp_path / (DB_NAME + ".broken")).exists()
    s.close()


def test_a_clear_gives_the_disk_space_back(tmp_path: Path) -> None:
    """After a clear the database file is small again: every page the cleared entries used is given back (an
    incremental vacuum runs one page per step, each step to be asked for), not one page of them, the file left at
    its full size (up to the cache's 512 MiB) with the cleared bodies' pages in it."""
    s = SqliteStore(tmp_path, 10**8)
    for i in range(40):
        s.put("p", "GET", f"http://o/{i}", "", HEAD, bytes([i]) * 100_000)
    s.keep_pages("site", {f"u:http://o/{i}": "r" * 5000 for i in range(40)}, 1.0)
    s._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert (tmp_path / DB_NAME).stat().st_size > 4_000_000
    s.clear()
    assert s._db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert (tmp_path / DB_NAME).stat().st_size < 100_000
    s.close()


def test_a_sites_origin_records_past_the_limit_give_the_latest_learned(store: EntryStore) -> None:
    """site_learned (what a navigation preconnects to: service.preconnect_site) returns the records learned last when
    a site has more than `limit`: records are never dropped, so a site met over months gathers hundreds (ad and
    tracker origins, expired ones among them), and the first `limit` by name (the table's key order) were those of
    origins named early in the alphabet, long expired, the site's own origin not among them: nothing preconnected."""
    store.learn("s", {f"https://a{i:03}.test": f"old{i}" for i in range(300)})
    store.learn("s", {"https://www.site.test": "fresh"})
    store.learn("s", {"https://a005.test": "again"})  # relearned: as recent as any
    got = store.site_learned("s", 256)
    assert len(got) == 256
    assert got["https://www.site.test"] == "fresh"
    assert got["https://a005.test"] == "again"
    assert "https://a000.test" not in got  # the oldest learned go first


def test_expired_origin_records_are_dropped_not_kept_forever(tmp_path: Path) -> None:
    """Origin records a helper will never use again (origin_memory.policy_from: a verdict older than RECORD_TTL, a
    demotion older than BAD_TTL) were kept for ever: every origin a page ever met, months of them, in the database
    and in what a site's navigation reads (site_learned). A helper's store drops them as it learns."""
    now = time.time()

    def record(state: str, age: float) -> str:
        policy = OriginPolicy(16, PipelineState(state), 4)
        kept = record_of(policy, now - age)
        assert kept is not None
        return json.dumps(kept)

    day = 24 * 3600.0
    SqliteStore(tmp_path, 10**6).close()
    with contextlib.closing(sqlite3.connect(tmp_path / DB_NAME)) as db, db:  # earlier sessions' (expired since)
        db.executemany("INSERT INTO origins (partition, origin, record) VALUES ('s', ?, ?)", [
            ("https://old.test", record("green", RECORD_TTL + day)),
            ("https://old-red.test", record("red", BAD_TTL + 3600)),
            ("https://week.test", record("green", RECORD_TTL - day)),
            ("https://red.test", record("red", BAD_TTL - 3600)),
            ("https://not-ours.test", "not json")])
    s = SqliteStore(tmp_path, 10**6)
    s.learn("s", {"https://new.test": record("green", 0)})
    assert set(s.site_learned("s", 100)) == {"https://new.test", "https://week.test", "https://red.test",
                                             "https://not-ours.test"}
    s.close()


# A store whose disk fills up mid-write (a file size limit stands for the full disk: the write of a large entry's
# pages fails) says why its write failed, then stores again once there is room.
FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from lanefetch.cache.entry import StoredHead
from lanefetch.cache.sqlite_store import SqliteStore
head = StoredHead(200, "OK", "1.1", [], 1.0, 2.0, {}, True)
s = SqliteStore(Path(sys.argv[1]), 1 << 30)
s.put("p", "GET", "http://o/small", "", head, b"x")
s._db.execute("PRAGMA cache_size = 5")  # the large body's pages go to the WAL as the INSERT runs
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.RLIM_INFINITY))
try:
    s.put("p", "GET", "http://o/large", "", head, b"y" * 2_000_000)
except Exception as e:
    print("failed:", e)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
s.put("p", "GET", "http://o/after", "", head, b"z")
print("entries:", s.stats().entries)
"""


def test_a_write_the_full_disk_failed_says_so(tmp_path: Path) -> None:
    """SQLite rolls a transaction back itself when the disk fails under it: the store's own ROLLBACK then raised
    "cannot rollback - no transaction is active", which replaced the disk's error in the log and in the options
    page's "could not be cleared" (nothing said the disk was full)."""
    proc = subprocess.Popen([sys.executable, "-c", FULL_DISK, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO / "native-host")
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.splitlines() == ["failed: disk I/O error", "entries: 2"]
