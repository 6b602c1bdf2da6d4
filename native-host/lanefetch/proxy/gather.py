"""Requests that arrive together on the browser's many proxy connections go to the engine together, so
its per-origin pools see the whole set at once (priority order, fair spread over pipelined connections).
A group is sent 3 ms after its last request arrived, or 15 ms after its first at the latest."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from ..engine import FetchRequest

QUIET_S = 0.003
MAX_WAIT_S = 0.015

T = TypeVar("T")


class Gatherer(Generic[T]):
    """Groups (request, whatever answers it) pairs; `flush` gets each group."""

    def __init__(self, flush: Callable[[list[tuple[FetchRequest, T]]], Coroutine[Any, Any, None]],
                 quiet_s: float = QUIET_S, max_wait_s: float = MAX_WAIT_S) -> None:
        self._flush = flush
        self._quiet = quiet_s
        self._max_wait = max_wait_s
        self._items: list[tuple[FetchRequest, T]] = []
        self._first = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, request: FetchRequest, sink: T) -> None:
        loop = asyncio.get_running_loop()
        if not self._items:
            self._first = loop.time()
        self._items.append((request, sink))
        if self._timer is not None:
            self._timer.cancel()
        delay = min(self._quiet, max(0.0, self._first + self._max_wait - loop.time()))
        self._timer = loop.call_later(delay, self._send)

    def _send(self) -> None:
        self._timer = None
        items, self._items = self._items, []
        if items:
            task = asyncio.create_task(self._flush(items))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._items.clear()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
