"""What the cache needs from storage, whatever keeps the entries (SQLite on disk, or memory for
private browsing). Keys are (partition, method, URL) plus the variant (the request's values of the
fields the response varies on); one entry per key. Implementations are synchronous: the asyncio
shell (http_cache.py) runs them on one worker thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .entry import StoredEntry, StoredHead


@dataclass(frozen=True)
class StoreStats:
    entries: int
    bytes: int  # bodies and heads as stored
    location: str  # a path, or "memory"


class EntryStore(Protocol):
    max_bytes: int

    def lookup(self, partition: str, method: str, url: str) -> list[StoredEntry]: ...

    def body(self, entry_id: int, as_of: StoredHead | None = None) -> bytes | None:
        """The entry's body, or None if it is gone or fails its integrity check (then it is removed), or if its
        head is no longer `as_of` (the head a lookup found): another process replaced or refreshed the entry in
        between, and this body may be another response's, never to be paired with that head."""
        ...

    def put(self, partition: str, method: str, url: str, variant: str, head: StoredHead, body: bytes) -> None:
        """Store (or replace) one complete entry, then evict least recently used ones beyond max_bytes."""
        ...

    def update_head(self, entry_id: int, head: StoredHead) -> None: ...
    def touch(self, entry_ids: list[int]) -> None: ...
    def delete(self, entry_id: int) -> None: ...
    def delete_url(self, partition: str, url: str) -> None: ...
    def stats(self) -> StoreStats: ...

    def learned(self, partition: str, origins: list[str]) -> dict[str, str]:
        """What was learned about these origins under this partition (origin_memory.py's records, as JSON)."""
        ...

    def site_learned(self, partition: str, limit: int) -> dict[str, str]:
        """Every origin record kept under this partition (at most `limit` of them, the latest learned first): a site's
        known origins."""
        ...

    def learn(self, partition: str, records: dict[str, str], generation: int | None = None) -> bool:
        """Keep these origins' records (JSON), replacing what was there; only while the clear generation is still
        `generation` (None: whatever it is). Returns whether they were kept. The persistent store drops expired
        records meanwhile (sqlite_store.py)."""
        ...

    def pages(self, partition: str, keys: list[str]) -> dict[str, str]:
        """Learned page records (prefetch/learned.py, as JSON) kept under these keys in this partition."""
        ...

    def keep_pages(self, partition: str, records: dict[str, str], now: float, generation: int | None = None) -> bool:
        """Keep these page records, replacing what was there, the oldest beyond a bound dropped; only while the clear
        generation is still `generation` (None: whatever it is). Returns whether they were kept."""
        ...

    def generation(self) -> int:
        """How many clears the store has seen, by whichever process (several share one database): what a process
        learned while it read one generation is never kept under another (http_cache.HttpCache.submit_learned)."""
        ...

    def clear(self) -> int:
        """Remove every entry, every learned origin record and every learned page, and move the generation on by
        one; returns how many entries there were."""
        ...
    def close(self) -> None: ...
