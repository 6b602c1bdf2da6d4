"""proxy/gather.py: when the proxied requests go to the engine. Render-blocking ones go as soon as their group is
quiet; held ones (not render-blocking, to an h2 origin: the caller says) wait for the render-blocking requests
arriving around them (RENDER_QUIET_S), never longer than HOLD_MAX_S; others are not held; nothing is lost, doubled
or reordered within its kind."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.engine import FetchRequest
from lanefetch.engine.render_quiet import HOLD_MAX_S, RENDER_QUIET_S
from lanefetch.proxy.gather import MAX_WAIT_S, QUIET_S, Gatherer, GatherPlan

MS = 0.001


def _drive(plan: GatherPlan[str], arrivals: list[tuple[float, str, bool]], *,
           hold: bool = True) -> list[tuple[float, list[str]]]:
    """Feed `arrivals` (time, name, render-blocking; sorted by time) and take at every moment the plan names, as
    the asyncio shell does: what went when. `hold`: the requests that are not render-blocking are held (an h2
    origin's)."""
    sent: list[tuple[float, list[str]]] = []
    pending = list(arrivals)
    for _ in range(10 * len(arrivals) + 10):  # bounded: each step adds a request or sends one group
        due = plan.next_due()
        if pending and (due is None or pending[0][0] < due):
            t, name, blocking = pending.pop(0)
            plan.add(name, t, render_blocking=blocking, held=hold and not blocking)
            continue
        if due is None:
            return sent
        items = plan.take(due)
        assert items, f"the plan named {due} and gave nothing then"
        sent.append((due, items))
    raise AssertionError("the plan did not settle")


def test_images_asked_just_before_the_heads_scripts_go_after_them() -> None:
    # cmake-interaction in Firefox over h2: a stylesheet, then a stylesheet with the body's images 10 ms later, then
    # the head's scripts 14 ms after that.
    arrivals = [(0.0, "pygments.css", True), (10 * MS, "cmake.css", True), (10 * MS, "logo.png", False),
                (10 * MS, "GUI-Source-Binary.png", False), (24 * MS, "jquery.js", True),
                (24 * MS, "underscore.js", True)]
    sent = _drive(GatherPlan(), arrivals)
    order = [name for _, items in sent for name in items]
    assert order == ["pygments.css", "cmake.css", "jquery.js", "underscore.js", "logo.png", "GUI-Source-Binary.png"]
    images_at = next(t for t, items in sent if "logo.png" in items)
    assert images_at == pytest.approx(24 * MS + RENDER_QUIET_S)


def test_requests_not_held_go_as_their_group_is_quiet_whatever_comes_around_them() -> None:
    # an HTTP/1.1 origin's images: the pool spreads them over six connections, the scripts take the others
    arrivals = [(0.0, "a.css", True), (10 * MS, "logo.png", False), (24 * MS, "jquery.js", True)]
    assert _drive(GatherPlan(), arrivals, hold=False) == [(pytest.approx(3 * MS), ["a.css"]),
                                                         (pytest.approx(13 * MS), ["logo.png"]),
                                                         (pytest.approx(27 * MS), ["jquery.js"])]


def test_a_held_render_blocking_request_is_not_held() -> None:
    plan: GatherPlan[str] = GatherPlan()
    plan.add("s.js", 0.0, render_blocking=True, held=True)
    plan.add("a.png", 1 * MS, render_blocking=False, held=True)
    assert plan.next_due() == pytest.approx(QUIET_S)
    assert plan.take(QUIET_S) == ["s.js"]
    assert plan.next_due() == pytest.approx(RENDER_QUIET_S)


def test_a_wave_without_render_blocking_requests_is_not_held() -> None:
    arrivals = [(0.0, "a.png", False), (1 * MS, "b.png", False)]
    assert _drive(GatherPlan(), arrivals) == [(pytest.approx(1 * MS + QUIET_S), ["a.png", "b.png"])]


def test_the_document_a_round_trip_earlier_holds_nothing() -> None:
    arrivals = [(0.0, "index.html", True), (600 * MS, "a.png", False)]
    sent = _drive(GatherPlan(), arrivals)
    assert sent[-1] == (pytest.approx(600 * MS + QUIET_S), ["a.png"])


def test_scripts_that_keep_coming_hold_an_image_no_longer_than_hold_max() -> None:
    arrivals = [(0.0, "a.png", False)] + [(i * 10 * MS, f"s{i}.js", True) for i in range(10)]
    sent = _drive(GatherPlan(), arrivals)
    image_at = next(t for t, items in sent if "a.png" in items)
    assert image_at == pytest.approx(HOLD_MAX_S)


def test_a_render_blocking_request_waits_for_no_image() -> None:
    arrivals = [(0.0, "a.png", False), (2 * MS, "b.png", False), (2 * MS, "s.js", True)]
    sent = _drive(GatherPlan(), arrivals)
    assert sent == [(pytest.approx(2 * MS + QUIET_S), ["s.js"]),
                    (pytest.approx(2 * MS + RENDER_QUIET_S), ["a.png", "b.png"])]


_ARRIVALS = st.lists(st.tuples(st.integers(0, 200), st.booleans()), max_size=30).map(
    lambda xs: [(ms * MS, f"r{i}", blocking) for i, (ms, blocking) in enumerate(sorted(xs, key=lambda x: x[0]))])


@settings(max_examples=300)
@given(_ARRIVALS)
def test_every_request_goes_once_in_time_and_in_order_within_its_kind(arrivals: list[tuple[float, str, bool]]) -> None:
    sent = _drive(GatherPlan(), arrivals)
    went = {name: t for t, items in sent for name in items}
    assert sorted(went) == sorted(name for _, name, _ in arrivals)  # every one, once
    assert sum(len(items) for _, items in sent) == len(arrivals)
    for t, name, blocking in arrivals:
        assert went[name] >= t
        assert went[name] <= t + (MAX_WAIT_S if blocking else HOLD_MAX_S) + 1e-9
    for blocking in (True, False):
        kind = [name for _, name, b in arrivals if b == blocking]
        order = [name for _, items in sent for name in items if name in kind]
        assert order == kind  # arrival order kept within a kind


@settings(max_examples=300)
@given(_ARRIVALS)
def test_an_image_held_goes_only_once_render_blocking_arrivals_are_quiet(
        arrivals: list[tuple[float, str, bool]]) -> None:
    sent = _drive(GatherPlan(), arrivals)
    arrived = {name: (t, blocking) for t, name, blocking in arrivals}
    for t, items in sent:
        held = [arrived[name][0] for name in items if not arrived[name][1]]
        if not held or t >= min(held) + HOLD_MAX_S - 1e-9:
            continue
        # sent before the bound of the first of them: no render-blocking request arrived within RENDER_QUIET_S before
        assert not any(b and t - RENDER_QUIET_S + 1e-9 < a <= t - 1e-9 for a, _, b in arrivals), (items, t)


def _request(url: str, resource_type: str, priority: str) -> FetchRequest:
    return FetchRequest(id=url, method="GET", url=url, headers=[], resource_type=resource_type, priority=priority,
                        decode=False)


async def test_the_shell_sends_a_script_asked_after_an_image_first() -> None:
    groups: list[list[str]] = []
    done = asyncio.Event()

    async def flush(items: list[tuple[FetchRequest, None]]) -> None:
        groups.append([r.url for r, _ in items])
        if sum(len(g) for g in groups) == 2:
            done.set()

    gatherer: Gatherer[None] = Gatherer(flush)
    try:
        gatherer.add(_request("https://example.test/a.png", "image", "Low"), None, held=True)
        gatherer.add(_request("https://example.test/s.js", "script", "High"), None)
        await asyncio.wait_for(done.wait(), 5)
    finally:
        await gatherer.aclose()
    order = [url for g in groups for url in g]
    assert order == ["https://example.test/s.js", "https://example.test/a.png"]
