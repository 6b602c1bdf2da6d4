"""An in-memory store with the same rules as the SQLite one (one entry per key, LRU by size), for
private browsing: it lives and dies with the engine and never touches the disk."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass

from .entry import StoredEntry, StoredHead
from .store import StoreStats
from .validation import same_version


@dataclass
class _Row:
    key: tuple[str, str, str, str]
    head: StoredHead
    body: bytes

    @property
    def size(self) -> int:
        return len(self.head.to_json()) + len(self.body)


class MemoryStore:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._rows: OrderedDict[int, _Row] = OrderedDict()  # least recently used first
        self._by_key: dict[tuple[str, str, str, str], int] = {}
        self._ids = itertools.count(1)
        self._total = 0
        self._origins: dict[tuple[str, str], str] = {}
        self._pages: dict[tuple[str, str], str] = {}
        self._generation = 0  # clears (the store's own only: nothing else shares it)

    def lookup(self, partition: str, method: str, url: str) -> list[StoredEntry]:
        return [StoredEntry(i, r.head) for i, r in self._rows.items() if r.key[:3] == (partition, method, url)]

    def body(self, entry_id: int, as_of: StoredHead | None = None) -> bytes | None:
        row = self._rows.get(entry_id)
        return None if row is None or (as_of is not None and row.head != as_of) else row.body

    def put(self, partition: str, method: str, url: str, variant: str, head: StoredHead, body: bytes) -> None:
        row = _Row((partition, method, url, variant), head, body)
        if row.size > self.max_bytes:
            return
        old = self._by_key.get(row.key)
        if old is not None:
            self.delete(old)
        entry_id = next(self._ids)
        self._rows[entry_id] = row
        self._by_key[row.key] = entry_id
        self._total += row.size
        while self._total > self.max_bytes:
            self.delete(next(iter(self._rows)))

    def update_head(self, entry_id: int, head: StoredHead) -> None:
        row = self._rows.get(entry_id)
        if row is not None and same_version(row.head, head):  # as SqliteStore: never another version's body
            self._total -= row.size
            row.head = head
            self._total += row.size
            self._rows.move_to_end(entry_id)
            while self._total > self.max_bytes:  # a refreshed head may be larger than the one it replaces
                self.delete(next(iter(self._rows)))

    def touch(self, entry_ids: list[int]) -> None:
        for i in entry_ids:
            if i in self._rows:
                self._rows.move_to_end(i)

    def delete(self, entry_id: int) -> None:
        row = self._rows.pop(entry_id, None)
        if row is not None:
            self._total -= row.size
            del self._by_key[row.key]

    def delete_url(self, partition: str, url: str) -> None:
        for i in [i for i, r in self._rows.items() if r.key[0] == partition and r.key[2] == url]:
            self.delete(i)

    def stats(self) -> StoreStats:
        return StoreStats(len(self._rows), self._total, "memory")

    def learned(self, partition: str, origins: list[str]) -> dict[str, str]:
        return {o: self._origins[(partition, o)] for o in origins if (partition, o) in self._origins}

    def site_learned(self, partition: str, limit: int) -> dict[str, str]:
        # The latest learned first, as SqliteStore: learn moves a record to the end.
        return dict([(o, r) for (p, o), r in reversed(self._origins.items()) if p == partition][:limit])

    def learn(self, partition: str, records: dict[str, str], generation: int | None = None) -> bool:
        if generation is not None and generation != self._generation:
            return False
        for o, r in records.items():
            self._origins.pop((partition, o), None)
            self._origins[(partition, o)] = r
        return True

    def pages(self, partition: str, keys: list[str]) -> dict[str, str]:
        return {k: self._pages[(partition, k)] for k in keys if (partition, k) in self._pages}

    def keep_pages(self, partition: str, records: dict[str, str], now: float, generation: int | None = None) -> bool:
        if generation is not None and generation != self._generation:
            return False
        self._pages.update({(partition, k): r for k, r in records.items()})
        return True

    def generation(self) -> int:
        return self._generation

    def clear(self) -> int:
        self._generation += 1
        n = len(self._rows)
        self._rows.clear()
        self._by_key.clear()
        self._total = 0
        self._origins.clear()
        self._pages.clear()
        return n

    def close(self) -> None:
        self.clear()
