"""Requests that arrive together on the browser's many proxy connections go to the engine together, so
its per-origin pools see the whole set at once (priority order, fair spread over connections).

Theory of operation. `GatherPlan` (sans-I/O: times are given, nothing is scheduled) decides when the waiting
requests go; `Gatherer` is its asyncio shell (one timer). A group is sent QUIET_S after its last request arrived,
or MAX_WAIT_S after its first at the latest. Most requests go by that rule alone; a held one (the caller says
which: work that is not render-blocking, to an origin that speaks HTTP/2, server.py) also waits for the
render-blocking requests arriving around it (engine/render_quiet.py: until none came for RENDER_QUIET_S, at most
HOLD_MAX_S), so an image Firefox asks a few milliseconds before the head's scripts does not reach the server's
socket ahead of them. A wave without render-blocking requests (an image grid's) is not held.

Why only over HTTP/2: there one connection carries the page (and a render reserve beside it, in its first slow
start), so what it was asked first comes first. Over HTTP/1.1 the pool spreads a wave over six connections and the
scripts take the ones the images left: held there too, Firefox's pages over Apache on `sat` were no faster (the
seven real pages level, session 57; docs/performance.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..engine import FetchRequest
from ..engine.render_quiet import HOLD_MAX_S, RENDER_QUIET_S, held_until, is_render_blocking

QUIET_S = 0.003
MAX_WAIT_S = 0.015

T = TypeVar("T")


@dataclass
class _Waiting(Generic[T]):
    item: T
    arrived: float
    held: bool  # waits for the render-blocking arrivals around it too


class GatherPlan(Generic[T]):
    """The waiting requests and when each goes (sans-I/O: `now` is always given)."""

    def __init__(self, quiet_s: float = QUIET_S, max_wait_s: float = MAX_WAIT_S,
                 render_quiet_s: float = RENDER_QUIET_S, hold_max_s: float = HOLD_MAX_S) -> None:
        self._quiet = quiet_s
        self._max_wait = max_wait_s
        self._render_quiet = render_quiet_s
        self._hold_max = max(hold_max_s, max_wait_s)
        self._waiting: list[_Waiting[T]] = []
        self._last_render_blocking: float | None = None  # the latest render-blocking arrival, sent or not

    def add(self, item: T, now: float, *, render_blocking: bool, held: bool = False) -> None:
        """A request arrived `now`: render-blocking (it moves the held ones' bound) or not, held or not (never both:
        a held render-blocking request is taken as not held)."""
        self._waiting.append(_Waiting(item, now, held and not render_blocking))
        if render_blocking:
            self._last_render_blocking = now

    def waiting(self) -> int:
        return len(self._waiting)

    def _due(self, held: bool) -> float | None:
        """When the waiting requests of this kind go (None: none waits)."""
        group = [w.arrived for w in self._waiting if w.held == held]
        if not group:
            return None
        due = min(max(group) + self._quiet, min(group) + self._max_wait)
        if held:
            due = max(due, held_until(self._last_render_blocking, min(group), self._render_quiet, self._hold_max))
        return due

    def take(self, now: float) -> list[T]:
        """The requests that go now, in arrival order (the ones not held first when both go)."""
        going = [kind for kind in (False, True) if (due := self._due(kind)) is not None and due <= now]
        out = [w.item for kind in going for w in self._waiting if w.held == kind]
        self._waiting = [w for w in self._waiting if w.held not in going]
        return out

    def next_due(self) -> float | None:
        """When `take` next has something to give (None: nothing waits)."""
        dues = [d for kind in (False, True) if (d := self._due(kind)) is not None]
        return min(dues, default=None)

    def clear(self) -> None:
        self._waiting.clear()


class Gatherer(Generic[T]):
    """Groups (request, whatever answers it) pairs; `flush` gets each group (GatherPlan says when)."""

    def __init__(self, flush: Callable[[list[tuple[FetchRequest, T]]], Coroutine[Any, Any, None]],
                 plan: GatherPlan[tuple[FetchRequest, T]] | None = None) -> None:
        self._flush = flush
        self._plan: GatherPlan[tuple[FetchRequest, T]] = plan if plan is not None else GatherPlan()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = 0.0  # the time the timer was set for (the loop may run it a clock tick early)
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, request: FetchRequest, sink: T, *, held: bool = False) -> None:
        """`held`: it waits for the render-blocking requests around it (GatherPlan.add)."""
        loop = asyncio.get_running_loop()
        self._plan.add((request, sink), loop.time(), render_blocking=is_render_blocking(request), held=held)
        self._arm(loop)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        due = self._plan.next_due()
        if due is not None:
            self._armed_for = due
            self._timer = loop.call_at(due, self._send)

    def _send(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        items = self._plan.take(max(loop.time(), self._armed_for))
        if items:
            task = asyncio.create_task(self._flush(items))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._arm(loop)

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._plan.clear()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
