"""The split as a fetcher around another, with fake split fetchers: which lanes a split request runs on when the
interface policy changes while it starts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lanefetch.engine import EngineConfig, FetchRequest, Page
from lanefetch.engine.fetcher import BatchResult
from lanefetch.lanes import splitting_fetcher
from lanefetch.lanes.splitting_fetcher import SplittingFetcher


class FakeSplit:
    """Stands for a SplitFetcher: records whether a request ran on it after it was closed."""

    def __init__(self) -> None:
        self.closed = False
        self.fetched_while_closed = False
        self.release = asyncio.Event()
        self.on_lane_bytes: Any = None

    async def fetch(self, request: FetchRequest, sink: Any, page: Page) -> None:
        self.fetched_while_closed |= self.closed
        await self.release.wait()
        self.fetched_while_closed |= self.closed

    async def cancel(self, request_id: str) -> bool:
        return False

    async def aclose(self) -> None:
        self.closed = True
        await asyncio.sleep(0)


class Inner:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = False

    async def fetch(self, requests: list[FetchRequest], sink: Any, page: Page) -> BatchResult:
        self.entered = True
        await self.release.wait()
        return BatchResult(0, 0)

    def preconnect(self, url: str, page: Page, handshake: str = "full") -> bool:
        return False

    async def cancel(self, request_ids: list[str]) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_policy_change_as_a_split_request_starts_keeps_its_lanes_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """The options page changed the policy just after a batch handed a split request to the lanes, before that
    request's task first ran: the lanes were closed at once (not busy yet), and the request then ran on closed
    lanes (whose connections nobody closed after)."""
    made: list[FakeSplit] = []

    def make(*args: object, **kw: object) -> FakeSplit:
        made.append(FakeSplit())
        return made[-1]

    monkeypatch.setattr(splitting_fetcher, "make_fetcher", make)
    inner = Inner()
    sf = SplittingFetcher(inner, EngineConfig(), None)  # type: ignore[arg-type]
    sf.splitter()  # built on an earlier split request
    req = FetchRequest(id="big", method="GET", url="http://example.org/big.bin", split=True)
    batch = asyncio.create_task(sf.fetch([req], None, Page()))  # type: ignore[arg-type]
    await asyncio.sleep(0)  # the batch's task handed the request to a task of its own, which has not run yet
    assert inner.entered
    await sf.lanes_changed()
    made[0].release.set()
    inner.release.set()
    await asyncio.wait_for(batch, 5)
    assert not made[0].fetched_while_closed
    await sf.aclose()
    assert made[0].closed  # closed once the request ended


async def test_a_split_request_cancelled_before_it_ran_leaves_its_lanes_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch failed before its split request's task ran: the lanes are not counted busy for ever (a policy
    change then closes them at once)."""
    made: list[FakeSplit] = []
    monkeypatch.setattr(splitting_fetcher, "make_fetcher", lambda *a, **kw: made.append(FakeSplit()) or made[-1])

    class Failing(Inner):
        async def fetch(self, requests: list[FetchRequest], sink: Any, page: Page) -> BatchResult:
            raise OSError("inner failed")

    sf = SplittingFetcher(Failing(), EngineConfig(), None)  # type: ignore[arg-type]
    req = FetchRequest(id="big", method="GET", url="http://example.org/big.bin", split=True)
    with pytest.raises(OSError):
        await sf.fetch([req], None, Page())  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)
    await sf.lanes_changed()
    assert made[0].closed
    await sf.aclose()
