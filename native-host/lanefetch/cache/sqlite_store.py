"""The persistent store: one SQLite database (WAL) in the user's cache directory.

Crash safety: an entry's head and body go into one row in one transaction, written only once the
body is complete, so a crash (or kill) mid-write leaves the previous state: the entry is absent,
never partial. Each row also carries a SHA-256 over head and body, checked on every read; a row that
fails it (disk corruption, a tampered file) is deleted and counts as a miss. A file that is not a
database at all, or a damaged one (its quick_check at open), is moved aside and a new one started: it
is a cache. Only such a file: a database another process holds locked (busy) is the live one, and an
open that cannot wait for it fails (the cache steps aside) rather than start a second file beside it.
Opening a database whose schema is current writes nothing, so it never waits for another process's
write.

Size: the sum of heads and bodies is kept at or below max_bytes by deleting the least recently used
entries (reads count as use) in the same transaction that stores a new one (or refreshes one with a larger
head); the file is shrunk with incremental vacuum (wholly after a clear; the pages an eviction frees
are mostly reused by the entries stored next). Several helper processes (one per browser, the CLI) may
share the file: SQLite serialises their writes.

Clears: the `meta` table counts them (`clears`: the generation). A helper keeps in memory what it learned this
session (origin policies, the page loads under way) and writes it later, so a clear by another process must not
be undone by what a running helper learned before it: a write of learned records (learn, keep_pages) names the
generation its learning belongs to and is made only while the database is still at it, checked in the write's own
transaction (http_cache.HttpCache.submit_learned says what the helper does when it is not).

Origin records (origin_memory.py) are kept until they expire: a learn drops the expired ones (at the store's first
learn, then at most every PRUNE_ORIGINS_EVERY_S), so a database used for months does not keep every origin its pages
ever met. Learned pages are bounded by count and bytes instead (keep_pages)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from ..engine.origin_policy import PipelineState
from .entry import StoredEntry, StoredHead
from .origin_memory import BAD_TTL, RECORD_TTL
from .store import StoreStats
from .validation import same_version

SCHEMA_VERSION = 1
DB_NAME = "cache.sqlite3"
BUSY_TIMEOUT_S = 10.0  # how long a write waits for another process's (one per browser, the CLI)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    partition TEXT NOT NULL,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    variant TEXT NOT NULL,
    head TEXT NOT NULL,
    body BLOB NOT NULL,
    size INTEGER NOT NULL,
    checksum BLOB NOT NULL,
    last_used REAL NOT NULL,
    UNIQUE (partition, method, url, variant)
);
CREATE INDEX IF NOT EXISTS entries_lru ON entries (last_used, id);
CREATE TABLE IF NOT EXISTS origins (
    partition TEXT NOT NULL,
    origin TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (partition, origin)
);
CREATE TABLE IF NOT EXISTS pages (
    partition TEXT NOT NULL,
    page TEXT NOT NULL,
    record TEXT NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (partition, page)
);
CREATE INDEX IF NOT EXISTS pages_age ON pages (updated);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""
# Learned page records (prefetch/learned.py) kept at most (count and bytes, outside the cache's max_bytes):
# the least recently updated go first.
MAX_PAGES = 5000
MAX_PAGE_BYTES = 32 * 1024 * 1024
# Expired origin records are dropped at a store's first learn, then at most this often (each drop reads them all).
PRUNE_ORIGINS_EVERY_S = 3600.0


# What an open may meet that says nothing of the file: another process's lock, no permission, the disk.
_NOT_THE_FILES_FAULT = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM",
                        "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_NOMEM", "SQLITE_INTERRUPT")


def _broken(e: sqlite3.DatabaseError) -> bool:
    """Whether an error opening the database says the file is at fault: not a database, a damaged one, another
    program's (its tables not ours); not when it is busy, unreadable, or the disk fails."""
    name = getattr(e, "sqlite_errorname", None) or ""
    return not any(name == n or name.startswith(n + "_") for n in _NOT_THE_FILES_FAULT)


def checksum(head_json: str, body: bytes) -> bytes:
    h = hashlib.sha256(head_json.encode("utf-8"))
    h.update(b"\0")
    h.update(body)
    return h.digest()


class SqliteStore:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.path = directory / DB_NAME
        self.max_bytes = max_bytes
        self.max_pages = MAX_PAGES
        self.max_page_bytes = MAX_PAGE_BYTES
        self._origins_pruned: float | None = None  # (time.monotonic) when expired origin records were last dropped
        # The pages visited and their bodies: the user's alone (a directory made here is 0700, the database 0600;
        # SQLite gives its -wal and -shm files the database's mode).
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._make_private()
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as e:
            if not _broken(e):  # busy, locked, unreadable, a full disk: the file is not at fault, and is kept
                raise
            # Not a database (or one beyond repair): keep it aside for a post-mortem, start anew.
            for suffix in ("", "-wal", "-shm"):
                p = Path(str(self.path) + suffix)
                if p.exists():
                    p.replace(Path(str(p) + ".broken"))
            self._make_private()
            self._db = self._open()

    def _make_private(self) -> None:
        """The database file made (or, left by an earlier version, made again) readable by the user only."""
        with contextlib.suppress(OSError):  # (one that cannot be made is SQLite's to report)
            os.close(os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o600))
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):  # absent, or not this user's to change
                os.chmod(str(self.path) + suffix, 0o600)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # with WAL: consistent after any crash
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                # Another version's (a newer one's, after a downgrade): every table of ours may be laid out otherwise
                # (a column this version does not fill), and all are a cache: started afresh.
                for table in ("entries", "origins", "pages", "meta"):
                    db.execute(f"DROP TABLE IF EXISTS {table}")
            if version != SCHEMA_VERSION:
                db.execute("PRAGMA auto_vacuum = INCREMENTAL")
                db.execute("VACUUM")  # auto_vacuum takes effect on an empty database only after this
            db.executescript(_SCHEMA)  # (writes nothing where the tables are there)
            if version != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            # Damage SQLite can open past (an index's page garbled) is reported as rows, not raised: left in use,
            # every write through it would fail "malformed", at every start.
            found = db.execute("PRAGMA quick_check").fetchone()
            if found is None or found[0] != "ok":
                raise sqlite3.DatabaseError(f"damaged: {found[0] if found else 'no answer'}")
        except BaseException:
            db.close()
            raise
        return db

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            # A disk that failed (full, an I/O error) may have had SQLite roll the transaction back already: a
            # ROLLBACK then raised "no transaction is active" in place of the error that says what happened.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- reads ---------------------------------------------------------------------------------------------

    def lookup(self, partition: str, method: str, url: str) -> list[StoredEntry]:
        rows = self._db.execute(
            "SELECT id, head FROM entries WHERE partition = ? AND method = ? AND url = ?", (partition, method, url)
        ).fetchall()
        out = []
        for entry_id, head_json in rows:
            try:
                out.append(StoredEntry(int(entry_id), StoredHead.from_json(head_json)))
            except (ValueError, KeyError, TypeError):
                self.delete(int(entry_id))
        return out

    def body(self, entry_id: int, as_of: StoredHead | None = None) -> bytes | None:
        # One statement reads head and body together: a put by another process between our lookup and this
        # read keeps the row's id (ON CONFLICT DO UPDATE) and replaces both, so the head is compared here.
        row = self._db.execute("SELECT head, body, checksum FROM entries WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            return None
        head_json, body, stored_sum = row
        if checksum(head_json, body) != stored_sum:
            self.delete(entry_id)
            return None
        # Compared as heads, not as text: the same head may be spelled differently (a time of 1 read back 1.0).
        if as_of is not None and StoredHead.from_json(head_json) != as_of:
            return None
        return bytes(body)

    def stats(self) -> StoreStats:
        count, total = self._db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM entries").fetchone()
        return StoreStats(int(count), int(total), str(self.path))

    # -- writes --------------------------------------------------------------------------------------------

    def put(self, partition: str, method: str, url: str, variant: str, head: StoredHead, body: bytes) -> None:
        head_json = head.to_json()
        size = len(head_json) + len(body)
        if size > self.max_bytes:
            return
        with self._write() as db:
            db.execute(
                "INSERT INTO entries (partition, method, url, variant, head, body, size, checksum, last_used)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (partition, method, url, variant) DO UPDATE SET head = excluded.head,"
                " body = excluded.body, size = excluded.size, checksum = excluded.checksum,"
                " last_used = excluded.last_used",
                (partition, method, url, variant, head_json, body, size, checksum(head_json, body), time.time()),
            )
            self._evict(db)
        self._db.execute("PRAGMA incremental_vacuum")

    def _evict(self, db: sqlite3.Connection) -> None:
        total = int(db.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()[0])
        while total > self.max_bytes:
            victims = db.execute("SELECT id, size FROM entries ORDER BY last_used, id LIMIT 64").fetchall()
            if not victims:
                return
            for entry_id, size in victims:
                db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
                total -= int(size)
                if total <= self.max_bytes:
                    return

    def update_head(self, entry_id: int, head: StoredHead) -> None:
        head_json = head.to_json()
        with self._write() as db:
            row = db.execute("SELECT body, head FROM entries WHERE id = ?", (entry_id,)).fetchone()
            if row is None:
                return
            try:
                current = StoredHead.from_json(str(row[1]))
            except (ValueError, KeyError, TypeError):
                return  # not a head of ours: the checksum check of the next read deletes the row
            if not same_version(current, head):
                return  # a newer response was stored under this key meanwhile (validation.same_version)
            body = bytes(row[0])
            db.execute(
                "UPDATE entries SET head = ?, size = ?, checksum = ?, last_used = ? WHERE id = ?",
                (head_json, len(head_json) + len(body), checksum(head_json, body), time.time(), entry_id),
            )
            self._evict(db)  # a refreshed head may be larger than the one it replaces

    def touch(self, entry_ids: list[int]) -> None:
        if not entry_ids:
            return
        t = time.time()
        with self._write() as db:
            db.executemany("UPDATE entries SET last_used = ? WHERE id = ?", [(t, i) for i in entry_ids])

    def delete(self, entry_id: int) -> None:
        with self._write() as db:
            db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))

    def delete_url(self, partition: str, url: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM entries WHERE partition = ? AND url = ?", (partition, url))

    def learned(self, partition: str, origins: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for origin in origins:
            row = self._db.execute("SELECT record FROM origins WHERE partition = ? AND origin = ?",
                                   (partition, origin)).fetchone()
            if row is not None:
                out[origin] = str(row[0])
        return out

    def site_learned(self, partition: str, limit: int) -> dict[str, str]:
        # The latest learned first (a replaced record gets a new rowid): by the key's order, the first `limit` were
        # the origins named early in the alphabet, however long expired, and the site's own could be left out.
        rows = self._db.execute("SELECT origin, record FROM origins WHERE partition = ? ORDER BY rowid DESC LIMIT ?",
                                (partition, limit)).fetchall()
        return {str(o): str(r) for o, r in rows}

    def generation(self) -> int:
        return self._generation(self._db)

    @staticmethod
    def _generation(db: sqlite3.Connection) -> int:
        row = db.execute("SELECT value FROM meta WHERE name = 'clears'").fetchone()
        return 0 if row is None else int(row[0])

    def learn(self, partition: str, records: dict[str, str], generation: int | None = None) -> bool:
        with self._write() as db:
            # Read in the write's own transaction: no clear can come between it and the write.
            if generation is not None and self._generation(db) != generation:
                return False
            db.executemany("INSERT OR REPLACE INTO origins (partition, origin, record) VALUES (?, ?, ?)",
                           [(partition, o, r) for o, r in records.items()])
            at = time.monotonic()
            if self._origins_pruned is None or at - self._origins_pruned >= PRUNE_ORIGINS_EVERY_S:
                self._origins_pruned = at
                self._prune_origins(db, time.time())
        return True

    @staticmethod
    def _prune_origins(db: sqlite3.Connection, now: float) -> None:
        """Drop the origin records origin_memory.policy_from ignores for their age (a demotion after BAD_TTL, any other
        verdict after RECORD_TTL): else kept for ever, every origin a page ever met. A record that is not JSON, or
        names no time, is left (policy_from ignores it; a CASE, as SQLite does not promise to stop at a false AND)."""
        db.execute("DELETE FROM origins WHERE CASE WHEN NOT json_valid(record) THEN 0"
                   " WHEN json_extract(record, '$.state') = ? THEN json_extract(record, '$.learned_at') < ?"
                   " ELSE json_extract(record, '$.learned_at') < ? END",
                   (PipelineState.RED.value, now - BAD_TTL, now - RECORD_TTL))

    def pages(self, partition: str, keys: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key in keys:
            row = self._db.execute("SELECT record FROM pages WHERE partition = ? AND page = ?",
                                   (partition, key)).fetchone()
            if row is not None:
                out[key] = str(row[0])
        return out

    def keep_pages(self, partition: str, records: dict[str, str], now: float, generation: int | None = None) -> bool:
        with self._write() as db:
            if generation is not None and self._generation(db) != generation:  # (as learn)
                return False
            db.executemany("INSERT OR REPLACE INTO pages (partition, page, record, updated) VALUES (?, ?, ?, ?)",
                           [(partition, k, r, now) for k, r in records.items()])
            db.execute("DELETE FROM pages WHERE rowid IN (SELECT rowid FROM (SELECT rowid, ROW_NUMBER() OVER w AS n,"
                       " SUM(length(record)) OVER w AS running FROM pages WINDOW w AS (ORDER BY updated DESC,"
                       " rowid DESC)) WHERE n > ? OR running > ?)", (self.max_pages, self.max_page_bytes))
        return True

    def clear(self) -> int:
        with self._write() as db:
            n = int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
            db.execute("DELETE FROM entries")
            db.execute("DELETE FROM origins")
            db.execute("DELETE FROM pages")
            db.execute("INSERT INTO meta (name, value) VALUES ('clears', 1)"
                       " ON CONFLICT (name) DO UPDATE SET value = value + 1")
        # Each step of the statement gives back one page, and execute() takes one step only (its steps have no
        # columns: Python takes the first for the end): executescript steps to the end, the file shrinking to what
        # is left instead of keeping the cleared bodies' pages.
        self._db.executescript("PRAGMA incremental_vacuum;")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def close(self) -> None:
        self._db.close()
