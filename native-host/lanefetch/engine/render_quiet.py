"""When work that does not block rendering may go: once the browser's render-blocking requests around it are quiet.

Theory of operation. The engine hands out work as it comes, and a server's socket sends first what it was asked
first: an image asked a few milliseconds before the head's scripts puts its bytes ahead of theirs on the only
connection that could have taken them at once (HTTP/2 priorities order what a server has not written yet, not what
its socket holds). Browsers ask for a wave's requests in bursts: Firefox's stylesheets, scripts and fonts of one
wave came 3-35 ms apart in most of 42 loads of the seven real pages over `sat` (58 ms at most), its images and the
helper's flight of them in between. In a third to two thirds of cmake-interaction's loads the flight's images went
9-22 ms before the head's four scripts, to the document's connection, which then was no longer free for
render-blocking work, so the scripts (jquery.js 85 kB among them) all went to the render reserve, still in its
first slow start, and the `@import` chain's head (28 B) came behind them two round trips after it was asked: 5.8 s
instead of 4.9 s (session 55; django-tutorial07 had shown the same at 14 ms, session 36). So work that is not
render-blocking (class > RENDER_BLOCKING of request.priority_key: images, fetches, other) waits until no
render-blocking request has come for RENDER_QUIET_S, never longer than HOLD_MAX_S after it was ready (with 20 ms
one cmake-interaction load in three still lost: its scripts came 24 ms after the stylesheet before them). That is
a fraction of the round trip of every link the proxy and the flight carry pages over (≥ 100 ms: faster ones are
left to the browser), and the render-blocking bytes go ahead of the images anyway. The callers hold only work for
an origin that speaks HTTP/2, and only in Firefox's proxy: over HTTP/1.1 the pool's six connections leave the
scripts room, and the hold gained nothing there (proxy/gather.py); Chromium was not measured with it. Pure: times
are given (seconds, any monotonic clock); the proxy's gather.py and the flight's page_loads.py keep them and wait."""

from __future__ import annotations

from .pool_plan import RENDER_BLOCKING
from .request import FetchRequest, type_class

RENDER_QUIET_S = 0.04
HOLD_MAX_S = 0.08


def is_render_blocking(request: FetchRequest) -> bool:
    """Is this request of the engine's first priority class (document, stylesheet, script, font)?"""
    return blocks_render(request.resource_type)


def blocks_render(resource_type: str) -> bool:
    """Is work of this engine resource type in the first priority class (request.type_class)?"""
    return type_class(resource_type) == RENDER_BLOCKING


def held_until(last_render_blocking: float | None, ready: float, render_quiet_s: float = RENDER_QUIET_S,
               hold_max_s: float = HOLD_MAX_S) -> float:
    """When work ready at `ready` may go, given the latest render-blocking request's arrival (None: none came): not
    before `ready`, RENDER_QUIET_S after that arrival, and no later than HOLD_MAX_S after `ready`."""
    if last_render_blocking is None:
        return ready
    return min(max(ready, last_render_blocking + render_quiet_s), ready + hold_max_s)
