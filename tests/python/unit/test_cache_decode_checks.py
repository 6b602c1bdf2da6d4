"""cache/caching_fetcher.py's check of stored bodies before a decoding request uses them: one that does not decode
as Chromium would is made a miss and its entry deleted (a 304 must not revalidate it, a hit must not serve it); one
that does is decoded again only when its entry changed, not at every hit; requests that do not decode, and bodies
without a content coding, are never checked."""

from __future__ import annotations

import dataclasses
import gzip

import pytest
from lanefetch.cache import caching_fetcher
from lanefetch.cache.caching_fetcher import _DecodeChecks
from lanefetch.cache.entry import StoredEntry, StoredHead
from lanefetch.cache.http_cache import Plan
from lanefetch.cache.policy import Hit, Miss, Revalidate
from lanefetch.engine import FetchRequest

GOOD = gzip.compress(b"fine " * 100)
BROKEN = GOOD[:10] + b"\xff" * 20


class Writes:
    def __init__(self) -> None:
        self.deleted: list[int] = []

    def put(self, url: str, variant: str, head: StoredHead, body: bytes) -> None: ...
    def update_head(self, entry_id: int, head: StoredHead) -> None: ...
    def delete_url(self, url: str) -> None: ...

    def delete(self, entry_id: int) -> None:
        self.deleted.append(entry_id)


def entry(entry_id: int, coding: str | None = "gzip", response_time: float = 1000.0) -> StoredEntry:
    headers = [("Content-Type", "text/css")] + ([("Content-Encoding", coding)] if coding else [])
    return StoredEntry(entry_id, StoredHead(200, "OK", "1.1", headers, 999.0, response_time))


def request(rid: str, *, decode: bool = True) -> FetchRequest:
    return FetchRequest(rid, "GET", f"http://example.test/{rid}.css", [], decode=decode)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    seen: list[bytes] = []
    real = caching_fetcher.decodes

    def counting(coding: str | None, body: bytes) -> bool:
        seen.append(body)
        return real(coding, body)

    monkeypatch.setattr(caching_fetcher, "decodes", counting)
    return seen


async def test_a_stored_body_that_does_not_decode_becomes_a_miss_and_is_deleted(checked: list[bytes]) -> None:
    checks, writes = _DecodeChecks(), Writes()
    plans: list[Plan] = [(Hit(entry(1), 0.0), BROKEN), (Revalidate(entry(2), [("If-None-Match", '"x"')]), BROKEN),
                         (Hit(entry(3), 0.0), GOOD)]
    got = await checks.without_undecodable([request("a"), request("b"), request("c")], plans, writes)
    assert isinstance(got[0][0], Miss) and got[0][1] is None
    assert isinstance(got[1][0], Miss) and got[1][1] is None
    assert got[2] == plans[2]
    assert writes.deleted == [1, 2]


async def test_a_body_found_sound_is_checked_again_only_when_its_entry_changed(checked: list[bytes]) -> None:
    checks, writes = _DecodeChecks(), Writes()
    hit: Plan = (Hit(entry(7), 0.0), GOOD)
    for _ in range(3):
        assert await checks.without_undecodable([request("a")], [hit], writes) == [hit]
    assert len(checked) == 1
    refreshed = entry(7, response_time=2000.0)  # a 304 refreshed it (or the id was given to a new answer)
    await checks.without_undecodable([request("a")], [(Hit(refreshed, 0.0), GOOD)], writes)
    assert len(checked) == 2 and writes.deleted == []


async def test_requests_that_do_not_decode_and_uncoded_bodies_are_not_checked(checked: list[bytes]) -> None:
    checks, writes = _DecodeChecks(), Writes()
    plans: list[Plan] = [(Hit(entry(1), 0.0), BROKEN), (Hit(entry(2, None), 0.0), b"plain"),
                         (Hit(entry(3), 0.0), BROKEN)]
    head = dataclasses.replace(request("c"), method="HEAD")
    got = await checks.without_undecodable([request("a", decode=False), request("b"), head], plans, writes)
    assert got == plans and checked == [] and writes.deleted == []
