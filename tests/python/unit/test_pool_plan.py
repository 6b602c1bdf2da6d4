"""The pool's pure decisions (engine/pool_plan.py), table-driven."""

from __future__ import annotations

import dataclasses
import itertools
import math
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.pool_plan import (
    BALANCE_BDP,
    BULK_BYTES,
    H2_CONNECTION_BYTES,
    HEAD_BYTES,
    INITIAL_SEGMENTS,
    INITIAL_WINDOW,
    LONG_BYTES,
    RENDER_BLOCKING,
    RESERVE_OUTGROWN_BYTES,
    SEGMENT,
    SETTLED_WARMER_OVER,
    SETTLED_WARMER_UNDER,
    WARMER,
    Bin,
    Candidate,
    Handshake,
    Packing,
    Warmth,
    allowed_depth,
    asked_bytes,
    balanced_taker,
    balances,
    behind_lone_leader,
    beside_reserve_takes,
    bin_for,
    bin_load,
    carries_bulk,
    comes_within_window,
    connection_limit,
    connections_to_open,
    cooled,
    drains_soon,
    expected_long,
    first_flight_cost,
    fits_first_flight,
    follows_unknown_font,
    h2_connection_count,
    h2_connections_for,
    h2_for_reserve,
    h2_may_take,
    h2_render_reserve,
    h2_reserve_beside,
    h2_reserve_from_opening,
    left_to_come,
    link_size,
    long_answer,
    may_join,
    may_wait_for_draining,
    may_wait_for_settling,
    mixes_fonts,
    over_budget,
    packing_taker,
    pipelining_taker,
    preferred_taker,
    queue_order,
    receiving,
    rounds_to_carry,
    takes_now,
    warmed,
    window_ceiling,
    window_for,
)


@pytest.mark.parametrize(("policy", "config", "outstanding", "conns", "depth"), [
    (16, 16, 40, 4, 10),  # fair share: 40 over 4 connections
    (16, 16, 100, 4, 16),  # the learned depth caps it
    (2, 16, 100, 4, 2),  # an origin still probing
    (16, 8, 100, 1, 8),  # the configured cap
    (16, 16, 0, 4, 1),  # nothing outstanding: still one may go
    (16, 16, 5, 0, 5),  # no connection yet: the first one's share is everything
    (1, 16, 100, 4, 1),  # demoted: one at a time
])
def test_allowed_depth(policy: int, config: int, outstanding: int, conns: int, depth: int) -> None:
    assert allowed_depth(policy, config, outstanding, conns) == depth


@pytest.mark.parametrize(("remaining", "separate", "bulk"), [
    ([], True, False),
    ([None, 10], True, False),  # chunked or close-delimited (unknown) and small
    ([BULK_BYTES], True, False),  # exactly at the threshold is not bulk
    ([10, BULK_BYTES + 1], True, True),
    ([BULK_BYTES * 10], False, False),  # separation off
])
def test_carries_bulk(remaining: list[int | None], separate: bool, bulk: bool) -> None:
    assert carries_bulk(remaining, separate) is bulk


@pytest.mark.parametrize(("here", "origin", "budget", "wait"), [
    (0, 100, 10, False),  # an idle connection always may take one
    (1, 9, 10, False),
    (1, 10, 10, True),
    (3, 50, None, False),  # no budget
])
def test_over_budget(here: int, origin: int, budget: int | None, wait: bool) -> None:
    assert over_budget(here, origin, budget) is wait


@pytest.mark.parametrize(("serving", "work", "limit", "new"), [
    (0, 10, 4, 4),
    (2, 10, 4, 2),
    (0, 1, 4, 1),  # no more connections than requests
    (4, 10, 4, 0),
    (5, 10, 4, 0),  # over the limit (bulk ones left the serving set and came back): never negative
    (0, 0, 4, 0),
])
def test_connections_to_open(serving: int, work: int, limit: int, new: int) -> None:
    assert connections_to_open(serving, work, limit) == new


@pytest.mark.parametrize(("carried", "incoming", "joins"), [
    (set(), 0, True),
    (set(), 2, True),
    ({0}, 0, True),  # stylesheets and scripts together: the connection drains after a few small answers
    ({0}, 2, False),  # an image behind a stylesheet would hold the stylesheet until the image is in
    ({2}, 0, False),  # a stylesheet behind images would wait for all of them
    ({1, 2}, 2, True),
    ({0, 2}, 0, False),
])
def test_render_blocking_is_pipelined_only_with_its_own(carried: set[int], incoming: int, joins: bool) -> None:
    assert may_join(carried, incoming) is joins


@pytest.mark.parametrize(("carried", "incoming", "idle_elsewhere", "long_here", "joins"), [
    ({0}, 0, 1, False, False),  # a stylesheet goes alone to the idle connection: in step at once, streamed
    ({0}, 0, 0, False, True),  # none idle: behind another short stylesheet beats waiting a round trip for one
    # None idle, but a long answer here (jQuery on a cold connection over `sat`): behind it the stylesheet would
    # wait for all of it (1.2 s); it waits for a free connection instead, as the browser's would.
    ({0}, 0, 0, True, False),
    ({2}, 2, 3, True, True),  # images may pipeline whatever is idle (their answers only wait for the load event)
    (set(), 0, 5, False, True),  # an empty connection is as good as an idle one
])
def test_render_blocking_prefers_an_idle_connection(
    carried: set[int], incoming: int, idle_elsewhere: int, long_here: bool, joins: bool
) -> None:
    assert may_join(carried, incoming, idle_elsewhere, long_here) is joins


@pytest.mark.parametrize(("sent", "t", "rtt", "long"), [
    ([], 10.0, 0.6, False),  # nothing in flight
    ([9.5, None], 10.0, 0.6, False),  # sent half a round trip ago, or not written yet: nothing known
    ([9.3], 10.0, 0.6, True),  # a round trip gone and not in: a short answer would be
    ([9.9, 8.0], 10.0, 0.6, True),  # one long answer is enough
    ([9.99], 10.0, None, True),  # no round trip known: nothing can be told short
])
def test_long_answer(sent: list[float | None], t: float, rtt: float | None, long: bool) -> None:
    assert long_answer(sent, t, rtt) is long


@given(st.lists(st.one_of(st.none(), st.floats(0, 100)), max_size=6), st.floats(0, 100), st.floats(0.001, 10))
def test_long_answer_only_after_a_round_trip(sent: list[float | None], t: float, rtt: float) -> None:
    # Long exactly when some written request is a round trip old; a later clock never makes it short again.
    assert long_answer(sent, t, rtt) is any(s is not None and t - s >= rtt for s in sent)
    if long_answer(sent, t, rtt):
        assert long_answer(sent, t + 1, rtt)

@given(st.sets(st.integers(0, 3), max_size=3), st.integers(0, 3), st.integers(0, 5), st.booleans(), st.booleans())
def test_a_font_never_shares_a_pipeline_with_other_work(carried: set[int], incoming: int, idle: int,
                                                        long_here: bool, laying_out: bool) -> None:
    # When joining would put a font and other work in one pipeline, a connection takes it only carrying nothing.
    assert may_join(carried, incoming, idle, long_here, laying_out, font=True) is (not carried)
    if not carried:
        assert may_join(carried, incoming, idle, long_here, laying_out, font=False)


_TYPES = st.sampled_from(["font", "stylesheet", "script", "image", "fetch", "other"])


@given(st.lists(_TYPES, max_size=4), st.lists(_TYPES, max_size=3), _TYPES,
       st.one_of(st.none(), st.integers(0, 20 * INITIAL_WINDOW)))
def test_a_font_goes_behind_a_lone_stylesheet_or_script_and_nothing_waits_for_a_font(
        in_flight: list[str], held: list[str], incoming: str, link_bdp: int | None) -> None:
    mixes = mixes_fonts(in_flight, held, incoming, link_bdp)
    aboard = [*in_flight, *held]
    roomy = link_bdp is not None and link_bdp >= BALANCE_BDP  # on a thin link fonts go with fonts only
    lone_leader = (roomy and incoming == "font" and not held and len(in_flight) == 1
                   and in_flight[0] in ("stylesheet", "script"))
    # the one exception to "fonts with fonts only": its leader's answer proves its place by exclusion
    assert mixes is (not lone_leader and any((t == "font") != (incoming == "font") for t in aboard))
    if incoming != "font" and "font" in aboard:
        assert mixes, "an answer behind a font (or held until one drains) would wait for all of it"
    if held and incoming == "font" and any(t != "font" for t in aboard):
        assert mixes, "a held answer is proven only when the connection drains: behind the font"
    if any(t != "font" for t in aboard) and incoming == "font":
        # a stylesheet sent behind another answer cannot prove its place by exclusion: it would wait for the font
        assert mixes_fonts(in_flight, held, incoming, link_bdp, sent_alone=False)


_PIECE = 42_928 + HEAD_BYTES


@pytest.mark.parametrize(("in_flight", "held", "incoming", "link_bdp", "sent_alone", "follows"), [
    # apache-rewrite on `sat`: an image's first piece goes behind a lone stylesheet or script at the first wave
    (["stylesheet"], [], "image", BALANCE_BDP, True, True),
    (["script"], [], "font", 10 * BALANCE_BDP, True, True),
    (["stylesheet"], [], "image", BALANCE_BDP - 1, True, False),  # a thin link: it would share the few segments
    (["stylesheet"], [], "image", None, True, False),  # the link not known
    (["stylesheet"], [], "image", BALANCE_BDP, False, False),  # the leader cannot prove its place by exclusion
    (["stylesheet"], [], "fetch", BALANCE_BDP, True, False),  # a fetch takes a text/css body
    (["stylesheet"], [], "stylesheet", BALANCE_BDP, True, False),  # may_join's own rules for its own
    (["stylesheet", "image"], [], "image", BALANCE_BDP, True, False),  # one follower: the leader stays lone
    (["image"], [], "image", BALANCE_BDP, True, False),  # behind an image it would be held
    (["stylesheet"], ["image"], "image", BALANCE_BDP, True, False),  # a held answer proves itself at the drain
    ([], [], "image", BALANCE_BDP, True, False),  # nothing to follow
])
def test_an_image_or_a_font_follows_a_lone_stylesheet_or_script_on_a_roomy_link(
        in_flight: list[str], held: list[str], incoming: str, link_bdp: int | None, sent_alone: bool,
        follows: bool) -> None:
    assert behind_lone_leader(in_flight, held, incoming, link_bdp, sent_alone, _PIECE) is follows


@pytest.mark.parametrize(("link_bytes", "byte_range", "asked"), [
    (None, (0, 42_927), 42_928 + HEAD_BYTES),  # a first visit's probed first piece: its size unknown, its range not
    (20_000, (0, 42_927), 20_000),  # a learned size says more
    (None, (43_000, None), None),  # an open range: up to the body's end
    (None, None, None),  # the browser's own image
])
def test_what_a_request_may_put_on_the_link(link_bytes: int | None, byte_range: tuple[int, int | None] | None,
                                           asked: int | None) -> None:
    assert asked_bytes(link_bytes, byte_range) == asked


@pytest.mark.parametrize(("incoming", "size", "follows"), [
    ("image", asked_bytes(None, (0, 42_927)), True),  # a probed first piece: two round trips at most, cold
    ("image", 300, True),
    ("image", LONG_BYTES + 1, False),
    # the browser's own image, its size unknown: Firefox's rust-book-print had its 241 kB image take a cold
    # connection's slow start behind a stylesheet instead of the warm one freeing a moment later
    ("image", None, False),
    ("font", None, True),  # fonts: mixes_fonts' exception, as before
])
def test_only_an_image_known_short_follows_a_leader(incoming: str, size: int | None, follows: bool) -> None:
    assert behind_lone_leader(["stylesheet"], [], incoming, BALANCE_BDP, True, size) is follows


@given(st.sets(st.integers(0, 3), max_size=3), st.integers(0, 3), st.integers(0, 5), st.booleans(), st.booleans(),
       st.booleans())
def test_after_a_leader_only_work_that_does_not_block_rendering_joins_whatever_the_layout(
        carried: set[int], incoming: int, idle: int, long_here: bool, laying_out: bool, font: bool) -> None:
    joins = may_join(carried, incoming, idle, long_here, laying_out, font, after_leader=True)
    if incoming != RENDER_BLOCKING and carried and not font:
        assert joins, "the image would wait a round trip for a free connection"
    else:  # render-blocking work, or a font's rule, decides as without a leader
        assert joins is may_join(carried, incoming, idle, long_here, laying_out, font)


@pytest.mark.parametrize(("in_flight", "incoming", "follows"), [
    ([("font", None)], "font", True),  # rust-std: FiraSans-Medium behind FiraSans-Regular, sizes unknown
    ([("font", 60_000), ("font", None)], "font", True),  # any font of unknown size ahead
    ([("font", 60_000)], "font", False),  # a flight's, of known size: the size rules weigh it (expected_long)
    ([("stylesheet", None)], "font", False),  # mixes_fonts' to say
    ([("font", None)], "stylesheet", False),  # likewise
    ([], "font", False),
])
def test_a_font_never_waits_behind_a_font_of_unknown_size(in_flight: list[tuple[str, int | None]], incoming: str,
                                                          follows: bool) -> None:
    assert follows_unknown_font(in_flight, incoming) is follows


@given(st.lists(st.one_of(st.none(), st.integers(0, 10 * LONG_BYTES)), max_size=6))
def test_expected_long_only_from_a_known_size_above_the_threshold(sizes: list[int | None]) -> None:
    assert expected_long(sizes) is any(s is not None and s > LONG_BYTES for s in sizes)
    assert not expected_long([None] * len(sizes)), "an unknown size is never taken for long"
    assert LONG_BYTES > 2 * INITIAL_WINDOW, "long: more than a fresh connection's first two round trips carry"


@pytest.mark.parametrize(("per_origin", "protocol", "may_speak_h2", "limit"), [
    (4, "h2", True, 1),  # streams multiplex: one connection
    (4, None, True, 1),  # TLS with h2 offered, protocol not known yet: one until its handshake says
    (4, "http/1.1", True, 4),  # the handshake said HTTP/1.1: the usual limit
    (4, None, False, 4),  # http:// (or http2 off): HTTP/1.1 from the start
    (1, None, True, 1),
])
def test_connection_limit(per_origin: int, protocol: str | None, may_speak_h2: bool, limit: int) -> None:
    assert connection_limit(per_origin, protocol, may_speak_h2) == limit


@given(st.integers(1, 3), st.integers(0, 4_000_000), st.one_of(st.none(), st.integers(0, 2_000_000)),
       st.integers(1, 8))
def test_a_flight_of_known_bytes_gets_h2_connections_by_its_size_and_the_links_room(
        base: int, sized: int, link_bdp: int | None, per_origin: int) -> None:
    """Never fewer than the base count; more only for known bytes on a link of BALANCE_BDP or more per round trip,
    then one per H2_CONNECTION_BYTES, never beyond the per-origin limit nor more initial windows than the link
    carries per round trip; more bytes never fewer connections."""
    n = h2_connections_for(base, sized, link_bdp, per_origin)
    assert n >= base
    if base <= 1 or link_bdp is None or link_bdp < BALANCE_BDP:
        assert n == base
        return
    assert n == base or (n <= per_origin and n * INITIAL_WINDOW <= link_bdp
                         and (n - 1) * H2_CONNECTION_BYTES < sized)
    assert h2_connections_for(base, sized + H2_CONNECTION_BYTES, link_bdp, per_origin) >= n


@given(st.lists(st.integers(1, 200_000), min_size=1, max_size=40), st.integers(1, 6), st.randoms())
def test_h2_connections_take_a_flight_by_bytes_and_end_within_one_answer_of_each_other(
        sizes: list[int], connections: int, rnd: Random) -> None:
    """A flight of known sizes, largest first, taken by `connections` h2 connections, each waking in any order and
    taking the queue's head while h2_may_take says so (nothing answered meanwhile): all of it is taken (while work
    waits some connection may take it), and no connection carries more than another plus one answer."""
    queue = sorted(sizes, reverse=True)
    loads = [0] * connections
    counts = [0] * connections
    for _ in range(len(sizes) * connections + 1):
        if not queue:
            break
        def may(i: int) -> bool:
            return h2_may_take(counts[i], len(queue) + sum(counts), loads[i], min(loads), connections, True)
        willing = [i for i in range(connections) if may(i)]
        assert willing, "work waits and no connection may take it"
        i = rnd.choice(willing)
        while queue and may(i):
            loads[i] += queue.pop(0)
            counts[i] += 1
    assert not queue
    assert max(loads) - min(loads) <= max(sizes)


@given(st.integers(0, 3), st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 3), max_size=4),
                                            st.integers(0, 8), st.integers(0, 1 << 21), st.integers(0, 1 << 21)),
                                  max_size=4), st.integers(0, 8), st.integers(0, 1 << 21))
def test_the_render_reserve_takes_only_render_blocking_work_and_never_strands_it(
        incoming: int, others: list[tuple[bool, list[int], int, int, int]], reserve_streams: int,
        reserve_received: int) -> None:
    """Later work never goes to the reserve; render-blocking work the reserve refuses has some other connection that
    may open a stream and either is free for it (carries only render-blocking work) or has outgrown the reserve
    (received RESERVE_OUTGROWN_BYTES more, with no more than that known to come): it takes the request by its own
    rules, so nothing waits for the reserve. Where none is free or outgrown, the reserve takes it."""
    took = h2_for_reserve(incoming, others, reserve_streams, reserve_received)
    free = [n for may_open, classes, n, _, _ in others if may_open and all(c == RENDER_BLOCKING for c in classes)]
    outgrown = [received for may_open, _, _, received, expected in others
                if may_open and received - reserve_received >= RESERVE_OUTGROWN_BYTES
                and expected <= RESERVE_OUTGROWN_BYTES]
    if incoming != RENDER_BLOCKING:
        assert not took
    elif not took:
        assert outgrown or (free and reserve_streams >= min(free))
    if incoming == RENDER_BLOCKING and not free and not outgrown:
        assert took
    if outgrown:
        assert not took


@given(st.integers(1, 30), st.integers(0, 3), st.randoms())
def test_render_blocking_work_is_shared_by_count_with_the_reserve(n: int, others: int, rnd: Random) -> None:
    """A flight's render-blocking requests, taken one at a time by whichever connection wakes (a free other, or the
    reserve when h2_for_reserve says so), end spread by count: the reserve within one stream of the fewest any free
    connection carries; with no other connection, all on the reserve."""
    counts = [0] * others
    reserve = 0
    for _ in range(n):
        if h2_for_reserve(RENDER_BLOCKING, [(True, [RENDER_BLOCKING] * c, c, 0, 0) for c in counts], reserve, 0):
            reserve += 1
        else:
            least = min(range(others), key=lambda i: (counts[i], rnd.random()))
            counts[least] += 1
    if others == 0:
        assert reserve == n
    else:
        assert min(counts) - 1 <= reserve <= min(counts) + 1


def test_the_render_reserve_example_of_the_first_visit() -> None:
    """The document's connection carries the flight's images: an @import stylesheet goes to the reserve. While it
    carried only render-blocking answers, the reserve took its share of them by count."""
    image = RENDER_BLOCKING + 2
    assert h2_for_reserve(RENDER_BLOCKING, [(True, [RENDER_BLOCKING, image], 2, 40_000, 0)], 0, 0)
    assert h2_for_reserve(RENDER_BLOCKING, [(True, [RENDER_BLOCKING], 1, 20_000, 0)], 0, 0)  # its share
    assert not h2_for_reserve(RENDER_BLOCKING, [(True, [RENDER_BLOCKING], 1, 20_000, 0)], 1, 0)
    assert not h2_for_reserve(RENDER_BLOCKING, [(True, [], 0, 20_000, 0)], 0, 0)  # the document's connection first
    assert not h2_for_reserve(image, [(True, [image], 1, 0, 0)], 0, 0)
    assert h2_for_reserve(RENDER_BLOCKING, [(False, [], 5, 0, 0)], 3, 0)  # the other at its stream limit
    assert h2_for_reserve(RENDER_BLOCKING, [], 4, 0)  # no other up yet


def test_a_connection_that_outgrew_the_reserve_takes_the_render_blocking_work() -> None:
    """rust-book-print in Firefox over `sat`: the document's connection has brought its 392 kB document and carries
    the page's images; the reserve brought the small stylesheets (6 kB). The script named at the document's end
    (312 kB) goes to the document's connection, whose window grew, not to the reserve, back in slow start; while the
    document's connection had brought less, or is known to have a learned flight's bulk still to bring, the
    reserve takes it as before."""
    image = RENDER_BLOCKING + 2
    doc = (True, [image, image], 2, 392_000, 0)
    assert not h2_for_reserve(RENDER_BLOCKING, [doc], 0, reserve_received=6_000)
    assert h2_for_reserve(RENDER_BLOCKING, [(True, [image, image], 2, 120_000, 0)], 0, reserve_received=6_000)
    assert h2_for_reserve(RENDER_BLOCKING, [(True, [image, image], 2, 392_000, 600_000)], 0, reserve_received=6_000)
    assert h2_for_reserve(RENDER_BLOCKING, [doc], 0, reserve_received=300_000)  # the reserve grew too
    assert h2_for_reserve(RENDER_BLOCKING, [(False, [image], 100, 392_000, 0)], 0, 6_000)  # it may open no stream


def test_a_document_opens_a_render_reserve_to_a_remembered_h2_origin_over_a_long_round_trip() -> None:
    assert h2_render_reserve("h2", 2, 0.6, have_one=False)
    assert h2_render_reserve("h2", 2, None, have_one=False)  # an unknown round trip counts as long
    assert not h2_render_reserve("h2", 2, 0.6, have_one=True)
    assert not h2_render_reserve("h2", 2, 0.001, have_one=False)  # a short one: one connection
    assert not h2_render_reserve("h2", 1, 0.6, have_one=False)
    assert not h2_render_reserve(None, 2, 0.6, have_one=False)
    assert not h2_render_reserve("http/1.1", 2, 0.6, have_one=False)


def test_h2_connections_take_unsized_work_by_count() -> None:
    """Without known sizes the share is counted in streams, as h2_share; with them, the least loaded takes."""
    assert h2_may_take(3, 8, 0, 0, 2, sized=False)
    assert not h2_may_take(4, 8, 0, 0, 2, sized=False)
    assert h2_may_take(4, 8, 10, 10, 2, sized=True)
    assert not h2_may_take(0, 8, 60, 10, 2, sized=True)
    assert not h2_may_take(4, 8, 10, 10, 2, sized=True, handshaking=True)  # the other's count share kept for it
    assert h2_may_take(3, 8, 10, 10, 2, sized=True, handshaking=True)


def test_h2_connections_for_the_measured_pages() -> None:
    """The pages that set the rule, their flights' bytes on `sat` (a learned link of 178 kB per round trip): four
    connections for django-tutorial07 (338 kB), six for rust-std (615 kB: the per-origin limit), two for
    flask-tutorial (160 kB); over W-CDMA (19 kB per round trip) two whatever the bytes; HTTP/1.1 and an origin whose
    protocol is not known yet are not concerned."""
    sat, wcdma = 177_788, 19_200
    assert h2_connections_for(2, 338_650, sat, 6) == 4
    assert h2_connections_for(2, 615_550, sat, 6) == 6
    assert h2_connections_for(2, 160_386, sat, 6) == 2
    assert h2_connections_for(2, 615_550, wcdma, 6) == 2
    assert h2_connections_for(1, 615_550, sat, 6) == 1  # a short round trip: one connection
    assert connection_limit(6, "h2", True, 2, 0.6, 338_650, sat) == 4
    assert connection_limit(6, None, True, 2, 0.6, 338_650, sat) == 2  # the protocol not known yet
    assert connection_limit(6, "http/1.1", True, 2, 0.6, 338_650, sat) == 6


@given(st.integers(0, 12), st.integers(0, 100), st.integers(1, 8))
def test_waiting_work_gets_its_connections_at_once_up_to_the_limit(serving: int, work: int, limit: int) -> None:
    """What the waiting work needs is opened in one go (not one per handshake), never beyond the limit or the work."""
    new = connections_to_open(serving, work, limit)
    assert new >= 0
    assert serving + new == max(serving, min(limit, work))


@pytest.mark.parametrize(("protocol", "waiting", "opened"), [
    ("http/1.1", 10, 6),  # remembered HTTP/1.1 over TLS: six handshakes in parallel, as the browser opens them
    (None, 10, 1),  # not known yet: one, whose handshake says (an h2 origin must not get six)
    ("h2", 10, 1),
])
def test_first_batch_to_a_remembered_tls_origin(protocol: str | None, waiting: int, opened: int) -> None:
    assert connections_to_open(0, waiting, connection_limit(6, protocol, True)) == opened


def test_a_preconnect_opens_what_the_origin_may_have_serving_it() -> None:
    from lanefetch.engine.pool_plan import connection_limit, connections_ahead

    # plain http or a known HTTP/1.1 origin: the browser's six; none more when some are open or opening
    assert connections_ahead(0, connection_limit(6, None, may_speak_h2=False)) == 6
    assert connections_ahead(0, connection_limit(6, "http/1.1", may_speak_h2=True)) == 6
    assert connections_ahead(2, connection_limit(6, "http/1.1", may_speak_h2=True)) == 4
    assert connections_ahead(7, connection_limit(6, "http/1.1", may_speak_h2=True)) == 0
    # a TLS origin not known yet: one, whose handshake says; an h2 origin: one
    assert connections_ahead(0, connection_limit(6, None, may_speak_h2=True)) == 1
    assert connections_ahead(0, connection_limit(6, "h2", may_speak_h2=True)) == 1
    assert connections_ahead(1, connection_limit(6, "h2", may_speak_h2=True)) == 0


@pytest.mark.parametrize(("carried", "incoming", "laying_out", "joins"), [
    ({2}, 2, True, False),  # an image behind another while the page lays out: held, it keeps the next ones back
    ({2}, 2, False, True),  # afterwards images pipeline (their answers only wait for the load event)
    (set(), 2, True, True),  # alone on a connection it is in step at once
    ({0}, 0, True, True),  # render-blocking work among its own is not what waits
])
def test_other_work_is_not_pipelined_while_the_page_lays_out(
    carried: set[int], incoming: int, laying_out: bool, joins: bool
) -> None:
    assert may_join(carried, incoming, laying_out=laying_out) is joins


# ------------------------------------------------------------------------------------------ warmest first

_candidates = st.lists(st.builds(Candidate, id=st.integers(0, 50), idle=st.booleans(),
                                 window=st.integers(INITIAL_WINDOW, 10 * INITIAL_WINDOW), draining=st.booleans(),
                                 settling=st.booleans()),
                       max_size=8, unique_by=lambda c: c.id)


def _settled_warmer(window: int, than: int) -> bool:
    return window * SETTLED_WARMER_UNDER >= than * SETTLED_WARMER_OVER


@given(_candidates, st.booleans(), st.randoms(use_true_random=False))
def test_the_taker_is_the_warmest_idle_connection_whatever_the_order(cs: list[Candidate], settle: bool,
                                                                     rnd: Random) -> None:
    taker = preferred_taker(cs, may_wait_settling=settle)
    shuffled = list(cs)
    rnd.shuffle(shuffled)
    assert preferred_taker(shuffled, may_wait_settling=settle) == taker  # not which connection's task came first
    idle = [c for c in cs if c.idle]
    if not idle:
        assert taker is None  # none idle: the busy ones pipeline by the other rules
        return
    chosen = next(c for c in cs if c.id == taker)
    best_idle = max(c.window for c in idle)
    waited_for = [c for c in cs if c.draining and not c.idle and c.window >= WARMER * best_idle]
    if not chosen.idle and chosen.draining and chosen.window >= WARMER * best_idle:
        # a busy connection when it drains within about a round trip and is WARMER times the warmest idle one
        assert all(c.window <= chosen.window for c in waited_for)
        return
    assert not waited_for
    settled = [c for c in cs if settle and c.settling and not c.idle and _settled_warmer(c.window, best_idle)]
    if not chosen.idle:
        # ... or, where the request may wait that long, its answers in and settling, a quarter warmer
        assert chosen in settled and all(c.window <= chosen.window for c in settled)
        return
    assert not settled
    assert chosen.window == best_idle
    assert all(c.id > chosen.id for c in idle if c.window == chosen.window and c is not chosen)


def test_django_s_large_image_waits_for_the_warm_connection_settling_its_pipelined_answers() -> None:
    """django-tutorial07's first visit on `sat` (600 ms): the 72 kB admin10t.png was asked for while the connection
    that had carried underscore.js (19.6 kB) with a small script pipelined behind it held that script for the
    pipelining check's 30 ms quiet, and another had just carried an 11 kB image. Taken by the latter it came in
    1.21 s first to last byte; where the warm one was idle, in 0.64 s."""
    rtt = 0.6
    underscore = warmed(warmed(Warmth(), 63.608, 64.210, 19_639, rtt), 64.210, 64.210, 792, rtt)
    small = warmed(warmed(Warmth(), 63.600, 63.600, 576, rtt), 64.212, 64.217, 10_480, rtt)
    t = 64.218
    cs = [Candidate(5, True, cooled(small, t, rtt)), Candidate(6, False, cooled(underscore, t, rtt), settling=True)]
    assert preferred_taker(cs, may_wait_settling=may_wait_for_settling(2)) == 6
    assert preferred_taker(cs, may_wait_settling=may_wait_for_settling(0)) == 5  # a script or stylesheet: not
    assert preferred_taker(cs) == 5
    # no warmer than the idle one (within a quarter): not waited for
    assert preferred_taker([cs[0], Candidate(6, False, cooled(small, t, rtt), settling=True)], True, True) == 5


_pipeliners = st.lists(st.builds(Candidate, id=st.integers(0, 50), idle=st.just(False),
                                 window=st.integers(INITIAL_WINDOW, 10 * INITIAL_WINDOW), draining=st.booleans(),
                                 may_pipeline=st.booleans()),
                       max_size=8, unique_by=lambda c: c.id)


@given(_pipeliners, st.one_of(st.none(), st.integers(0, 50)), st.randoms(use_true_random=False))
def test_with_none_idle_the_warmest_that_may_pipeline_takes_it_whatever_the_order(
        cs: list[Candidate], asker: int | None, rnd: Random) -> None:
    taker = pipelining_taker(cs, asker)
    shuffled = list(cs)
    rnd.shuffle(shuffled)
    assert pipelining_taker(shuffled, asker) == taker
    able = [c for c in cs if c.may_pipeline]
    if not able:
        assert taker is None  # none may: the request waits for a connection that may
        return
    chosen = next(c for c in cs if c.id == taker)
    assert chosen.may_pipeline and chosen.window == max(c.window for c in able)
    equals = [c.id for c in able if c.window == chosen.window]
    assert taker == (asker if asker in equals else min(equals))  # among equals the asker keeps it


def test_apache_rewrite_s_seventh_image_goes_behind_the_documents_warm_connection() -> None:
    """First visit on `sat`: six connections busy, the document's (warmed by 9 kB and a stylesheet) and one that
    carried a 287 B icon both may pipeline the last image; the document's takes it (pool_plan docstring)."""
    icon = Candidate(6, idle=False, window=INITIAL_WINDOW, may_pipeline=True)
    document = Candidate(1, idle=False, window=INITIAL_WINDOW + 10 * 1448, may_pipeline=True)
    bulk = Candidate(5, idle=False, window=4 * INITIAL_WINDOW, may_pipeline=False)  # may not: not chosen
    assert pipelining_taker([icon, bulk, document]) == 1
    assert pipelining_taker([Candidate(2, idle=True, window=INITIAL_WINDOW, may_pipeline=True)]) is None


@given(_candidates)
def test_a_busy_connection_that_is_not_draining_is_never_the_taker(cs: list[Candidate]) -> None:
    taker = preferred_taker(cs)
    assert taker is None or any(c.id == taker and (c.idle or c.draining) for c in cs)


def test_cmake_interaction_s_last_images_go_to_the_connection_that_carried_jquery() -> None:
    # `sat` (600 ms), ON, the moment the page's last three images were asked for (3.715 s): jQuery (85 kB) had just
    # ended on one connection, underscore (20 kB) 1.2 s before on another, the stylesheet chain's four small answers
    # on a third. Until this rule the first image went to the stylesheet chain's connection (42 kB, 1.4 s first ->
    # last byte), where the browser reuses the one that has just carried 62 kB (0.25 s).
    rtt = 0.6
    jquery = warmed(Warmth(), 1.808, 3.625, 86_000, rtt)
    underscore = warmed(Warmth(), 1.795, 2.507, 20_000, rtt)
    chain = Warmth()
    for first, last, size in [(1.790, 1.790, 900), (2.420, 2.421, 600), (3.041, 3.042, 1800), (3.664, 3.667, 4100)]:
        chain = warmed(chain, first, last, size, rtt)
    assert chain.window == INITIAL_WINDOW  # small answers never filled the window: it did not grow
    t = 3.715
    cs = [Candidate(5, True, cooled(chain, t, rtt)), Candidate(4, True, cooled(jquery, t, rtt)),
          Candidate(1, True, cooled(underscore, t, rtt)), Candidate(3, False, cooled(Warmth(), t, rtt))]
    assert preferred_taker(cs) == 4
    assert preferred_taker([c for c in cs if c.id != 4]) == 1  # halved once (1.2 s idle > one RTO), still warmer


@pytest.mark.parametrize(("idle_s", "rtt", "window"), [
    (0.0, 0.6, 8 * INITIAL_WINDOW),
    (0.79, 0.6, 8 * INITIAL_WINDOW),  # under one RTO (rtt + 200 ms)
    (0.8, 0.6, 4 * INITIAL_WINDOW),  # one RTO: halved
    (2.4, 0.6, INITIAL_WINDOW),  # three: down to the initial window
    (600.0, 0.6, INITIAL_WINDOW),  # never below it
    (0.99, None, 8 * INITIAL_WINDOW),  # no round trip known: an RTO of 1 s
    (1.0, None, 4 * INITIAL_WINDOW),
])
def test_an_idle_connection_cools(idle_s: float, rtt: float | None, window: int) -> None:
    assert cooled(Warmth(8 * INITIAL_WINDOW, 10.0), 10.0 + idle_s, rtt) == window


@given(st.lists(st.tuples(st.floats(0, 5), st.floats(0, 2), st.integers(0, 10**6)), max_size=12),
       st.one_of(st.none(), st.floats(0.001, 2)))
def test_the_estimate_stays_within_what_slow_start_could_do(answers: list[tuple[float, float, int]],
                                                            rtt: float | None) -> None:
    # Never under the initial window, never over it plus every byte delivered; the clock only moves on.
    w, t, total = Warmth(), 0.0, 0
    for gap, length, size in answers:
        first = t + gap
        t = first + length
        before = w
        w = warmed(w, first, t, size, rtt)
        total += size
        assert INITIAL_WINDOW <= w.window <= INITIAL_WINDOW + total
        assert w.last == t
        assert w.window >= cooled(before, first, rtt)  # an answer never cools it


def test_cmake_interaction_s_last_image_waits_for_a_warm_connection_about_to_drain() -> None:
    # The same moment (3.710 s): Choose-Generator took jQuery's connection, VS-Choose-Arch the one that carried
    # underscore. GUI-Add-Entry (33 kB) went to a cold connection: 1.07 s first -> last byte. The connection
    # receiving GUI-Source-Binary (62 kB, first byte at 2.395 s, 55 kB in, 7 kB to come) was done 85 ms later.
    rtt, t = 0.6, 3.710
    cold = Candidate(3, True, cooled(Warmth(), t, rtt))
    window = receiving(Warmth(), 2.395, 55_000, 7_000, rtt)
    assert window == INITIAL_WINDOW + 55_000  # an answer that fills the window grows it as it comes
    source_binary = Candidate(2, False, window, drains_soon(1, 0, 7_000, window))
    assert source_binary.draining
    assert preferred_taker([cold, source_binary]) == 2
    # A draining connection no warmer than the idle one is not waited for; nor one with more than its window to
    # come, a second answer behind, a held answer, or a length not known.
    assert preferred_taker([cold, Candidate(2, False, INITIAL_WINDOW, True)]) == 3
    assert not drains_soon(1, 0, window + 1, window)
    assert not drains_soon(2, 0, 7_000, window)
    assert not drains_soon(1, 1, 7_000, window)
    assert not drains_soon(1, 0, None, window)


def test_a_small_answer_in_progress_does_not_warm_a_connection() -> None:
    assert receiving(Warmth(), 1.0, 3_000, 1_000, 0.6) == INITIAL_WINDOW


@given(_candidates)
def test_render_blocking_work_never_waits_for_a_draining_connection(cs: list[Candidate]) -> None:
    # A stylesheet or script (or anything while the page lays out) goes to the warmest idle connection at once.
    for incoming, laying_out in [(0, False), (0, True), (2, True)]:
        taker = preferred_taker(cs, may_wait_for_draining(incoming, laying_out))
        assert taker is None or any(c.id == taker and c.idle for c in cs)
    assert may_wait_for_draining(2, laying_out=False)


@pytest.mark.parametrize("handshake", ["full", "tcp"])
@pytest.mark.parametrize("tls", [True, False])
@pytest.mark.parametrize("protocol", [None, "h2", "http/1.1"])
@pytest.mark.parametrize("for_page", [True, False])
@pytest.mark.parametrize("known", [True, False])
def test_a_tcp_preconnect_holds_tls_unless_the_origin_is_known_to_need_the_helpers_connections(
    handshake: Handshake, tls: bool, protocol: str | None, for_page: bool, known: bool
) -> None:
    from lanefetch.engine.pool_plan import Ahead, preconnect_plan

    plan = preconnect_plan(handshake, tls, protocol, for_page=for_page, known=known)
    if handshake == "full":
        assert plan is Ahead.ALL  # as before: every connection the origin may have (its limit says how many)
    elif protocol == "http/1.1":
        # An HTTP/1.1-only origin's requests come to the helper: worth having open
        assert plan is Ahead.ALL
    elif not tls:
        # A plain-http one's too (no TLS to hold), for a page or where the site's loads used it; a probe ahead of
        # any page to an origin nothing taught is one connection
        assert plan is (Ahead.ALL if for_page or known else Ahead.ONE_HELD)
    else:  # not known, or h2 (the browser's own connection carries those): one, and no TLS until needed
        assert plan is Ahead.ONE_HELD



def test_h2_connections_and_their_shares() -> None:
    from lanefetch.engine.pool_plan import connection_limit

    assert connection_limit(6, "h2", True) == 1, "one, as browsers, unless configured"
    assert connection_limit(6, "h2", True, h2_connections=2) == 2
    assert connection_limit(6, None, True, h2_connections=2) == 2, "opened together: their handshakes overlap"
    assert connection_limit(6, None, True) == 1, "one until the handshake says which, by default"
    assert connection_limit(1, "h2", True, h2_connections=4) == 1
    assert connection_limit(6, "h2", True, h2_connections=0) == 1


@given(st.integers(0, 10_000), st.integers(1, 8))
def test_h2_shares_cover_the_outstanding_work(outstanding: int, connections: int) -> None:
    from lanefetch.engine.pool_plan import h2_share

    share = h2_share(outstanding, connections)
    assert share >= 1 and share * connections >= outstanding, "together the connections may carry all of it"
    assert (share - 1) * connections < max(outstanding, 1), "and none takes more than its part, rounded up"


@given(st.integers(-1, 8), st.one_of(st.none(), st.floats(0.0, 5.0)), st.integers(1, 8))
def test_h2_connection_count_follows_the_round_trip(configured: int, rtt: float | None, per_origin: int) -> None:
    """Several h2 connections only where slow-start rounds are long (or not known yet: the count matters before
    the first handshake); one on a short link; never above the per-origin limit, never below one."""
    from lanefetch.engine.pool_plan import LONG_RTT, h2_connection_count

    n = h2_connection_count(configured, rtt)
    assert n >= 1
    if rtt is not None and rtt < LONG_RTT:
        assert n == 1, "a short link: the second handshake is not worth its bytes"
    else:
        assert n == max(1, configured)
    for protocol in ("h2", None):
        assert connection_limit(per_origin, protocol, True, configured, rtt) == min(n, per_origin)
    assert connection_limit(per_origin, None, False, configured, rtt) == per_origin, "plain http: HTTP/1.1"
    assert connection_limit(per_origin, "http/1.1", True, configured, rtt) == per_origin


sizes = st.integers(min_value=0, max_value=200_000)


@given(st.lists(st.one_of(st.none(), sizes), max_size=6), st.one_of(st.none(), sizes))
def test_a_flights_answers_share_a_busy_connection_only_when_all_of_it_comes_in_the_first_flight(
        carried: list[int | None], incoming: int | None) -> None:
    fits = fits_first_flight(carried, incoming)
    known = incoming is not None and bool(carried) and all(s is not None for s in carried)
    if not known:
        assert not fits  # an unknown size, or an idle connection (taken by the usual rules)
    else:
        # each answer its own segments (a pipelined server writes them one by one), ten in the first flight
        count = sum(max(1, math.ceil((s or 0) / SEGMENT)) for s in [*carried, incoming])
        assert fits == (count <= INITIAL_SEGMENTS)
        if fits:
            assert sum(s or 0 for s in [*carried, incoming]) <= INITIAL_SEGMENTS * SEGMENT


_packings = st.lists(st.tuples(st.lists(st.one_of(st.none(), st.integers(0, 20_000)), max_size=4), st.booleans()),
                     max_size=6)


@given(_packings, st.one_of(st.none(), st.integers(0, 20_000)), st.randoms(use_true_random=False))
def test_the_packer_is_the_fullest_connection_the_answer_fits_whatever_the_order(
        conns: list[tuple[list[int | None], bool]], incoming: int | None, rnd: Random) -> None:
    packings = [Packing(i, tuple(sizes), may) for i, (sizes, may) in enumerate(conns)]
    taker = packing_taker(packings, incoming)
    shuffled = list(packings)
    rnd.shuffle(shuffled)
    assert packing_taker(shuffled, incoming) == taker  # a function of the states, not of who asks first
    fitting = [p for p in packings if p.may_send and fits_first_flight(p.sizes, incoming)]
    if not fitting:
        assert taker is None
        return
    chosen = packings[taker] if taker is not None else None
    assert chosen in fitting
    assert all(sum(s or 0 for s in p.sizes) <= sum(s or 0 for s in chosen.sizes) for p in fitting)


def test_apache_rewrites_small_answers_pack_on_one_connection_by_their_bytes_on_the_link() -> None:
    # manual.css (5.3 kB gzipped) is on connection 1; prettify.css (1.4 kB) goes with it, not to an idle one, and
    # not to connection 2 carrying prettify.min.js (13.7 kB: it would not fit); one that may send no more is passed.
    busy = [Packing(1, (5_303,)), Packing(2, (13_725,)), Packing(3, (6_000,), may_send=False)]
    assert packing_taker(busy, 1_387) == 1
    assert packing_taker([*busy, Packing(4, (5_303, 1_387))], 1_390) == 4  # the fuller of two that fit
    assert packing_taker(busy, 9_000) is None  # fits nowhere: the idle-connection rules decide


def test_first_flight_examples() -> None:
    assert fits_first_flight([300, 300], 300)  # three small stylesheets: one round trip on one connection
    # django-tutorial07's small stylesheets and scripts as they came on `sat`: seven fit, the eighth would not
    seven = [1214, 358, 661, 576, 1909, 1940, 2260]
    assert fits_first_flight(seven[:-1], seven[-1]) and not fits_first_flight(seven, 792)
    assert link_size(5_303, 22_880) == 5_303 and link_size(None, 22_880) == 22_880 + HEAD_BYTES
    assert link_size(None, None) is None
    assert not fits_first_flight([300], 20_000)  # an image of 20 kB needs a second flight: not behind them
    assert not fits_first_flight([], 300)  # nothing in flight: the idle-connection rules decide
    assert not fits_first_flight([None], 300)  # the browser's own request there, size unknown


@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 3]), st.integers(0, 4), st.one_of(st.none(), sizes),
                          st.booleans()), min_size=2, max_size=12))
def test_queue_order_keeps_class_and_rank_and_puts_a_flights_largest_first(
        items: list[tuple[int, int, int | None, bool]]) -> None:
    ordered = sorted(range(len(items)), key=lambda i: (queue_order(*items[i]), i))
    for a, b in itertools.pairwise(ordered):
        (ca, ra, sa, fa), (cb, rb, sb, fb) = items[a], items[b]
        fa, fb = fa and ca == RENDER_BLOCKING, fb and cb == RENDER_BLOCKING  # a font's place counts where it blocks
        assert (ca, fa, ra) <= (cb, fb, rb)  # class, fonts after the rest of render-blocking work, the browser's rank
        if (ca, fa, ra) != (cb, fb, rb):
            continue
        if ca == RENDER_BLOCKING:
            assert a < b  # the page's order
        elif sa is None:
            assert sb is not None or a < b  # the browser's own (unknown size) first, in arrival order
        else:
            assert sb is not None and (sa > sb or (sa == sb and a < b))  # a flight's largest first


@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 16))
def test_answers_in_one_flight_have_no_fair_share(policy_depth: int, config_depth: int, connections: int) -> None:
    assert allowed_depth(policy_depth, config_depth, None, connections) == min(policy_depth, config_depth)
    assert allowed_depth(policy_depth, config_depth, 1, connections) == 1  # one outstanding: a share of one


@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 10**6)), st.booleans(),
                          st.integers(INITIAL_WINDOW, 10**6)), max_size=8), st.integers(0, 200_000))
def test_balanced_work_goes_where_it_is_carried_soonest_then_to_the_least_loaded(
        bins: list[tuple[int | None, bool, int]], incoming: int) -> None:
    given_bins = [Bin(i, load, ready, window) for i, (load, ready, window) in enumerate(bins)]
    chosen = balanced_taker(given_bins, incoming)
    takers = [b for b in given_bins if b.load is not None]
    if not takers:
        assert chosen is None
        return
    assert chosen is not None and chosen.load is not None

    def rounds(b: Bin) -> int:
        assert b.load is not None
        return rounds_to_carry(b.load + incoming, b.window)
    assert all(rounds(chosen) <= rounds(b) for b in takers)
    level = [b for b in takers if rounds(b) == rounds(chosen)]
    assert all(chosen.load <= b.load for b in level if b.load is not None)
    level = [b for b in level if b.load == chosen.load]
    assert chosen.ready or not any(b.ready for b in level), "a ready one first among the least loaded"
    assert all(chosen.window >= b.window for b in level if b.ready == chosen.ready)
    # windows alike: the least loaded, whatever the request's size (the longest-processing-time rule)
    alike = [dataclasses.replace(b, window=INITIAL_WINDOW) for b in given_bins]
    plain = balanced_taker(alike, incoming)
    assert plain is not None and plain.load == min(b.load for b in alike if b.load is not None)


@given(st.integers(0, 10**8), st.integers(1, 10**7))
def test_slow_start_carries_the_load_in_the_least_round_trips_that_hold_it(load: int, window: int) -> None:
    k = rounds_to_carry(load, window)
    assert window * (2**k - 1) >= load
    assert k == 0 or window * (2 ** (k - 1) - 1) < load


@given(st.integers(0, 10**8), st.integers(INITIAL_WINDOW, 10**7), st.integers(INITIAL_WINDOW, 10**7))
def test_slow_start_stops_growing_at_the_ceiling(load: int, window: int, ceiling: int) -> None:
    k = rounds_to_carry(load, window, ceiling)
    assert k >= rounds_to_carry(load, window)  # never fewer round trips than unbounded growth
    flights, w = [], window
    for _ in range(k):
        flights.append(w)
        w = min(2 * w, max(ceiling, window))
    assert sum(flights) >= load and (k == 0 or sum(flights[:-1]) < load)


def test_a_stale_window_estimate_does_not_take_a_whole_flight() -> None:
    # one connection estimated at 1 MB (it carried a megabyte once, small answers since), five fresh ones; the link
    # measured at 140 kB per round trip: twelve 80 kB images
    assert window_for(1_000_000, None) == 1_000_000 and window_ceiling(None) is None
    assert window_for(1_000_000, 140_000) == 280_000 == window_ceiling(140_000)
    assert window_for(10_000, 140_000) == INITIAL_WINDOW
    loads = dict.fromkeys(range(1, 7), 0)
    for _ in range(12):
        bins = [Bin(1, loads[1], True, window_for(1_000_000, 140_000), window_ceiling(140_000)),
                *(Bin(i, loads[i], True, INITIAL_WINDOW, window_ceiling(140_000)) for i in range(2, 7))]
        taker = balanced_taker(bins, 80_000)
        assert taker is not None
        loads[taker.id] += 80_000
    assert loads[1] <= 7 * 80_000 and all(loads[i] > 0 for i in range(2, 7))
    # without the ceiling's bound it took them all
    unbounded = dict.fromkeys(range(1, 7), 0)
    for _ in range(12):
        taker = balanced_taker([Bin(1, unbounded[1], True, 1_000_000),
                                *(Bin(i, unbounded[i], True) for i in range(2, 7))], 80_000)
        assert taker is not None
        unbounded[taker.id] += 80_000
    assert unbounded[1] == 12 * 80_000


def test_answers_in_already_take_no_segment_of_a_busy_connections_first_flight() -> None:
    # nine segments still to come and two answers held complete: free after its first flight, as with none held
    assert bin_for(1, [9 * SEGMENT, 0, 0], False) == bin_for(1, [9 * SEGMENT], False)
    assert bin_for(1, [9 * SEGMENT], False).load is not None


def test_a_connection_is_weighed_by_what_is_still_to_come() -> None:
    # a font whose head told 2 000 bytes to come, a piece not answered yet, one held complete
    assert left_to_come([(2_000, None), (None, 40_000)], held=1) == [2_000, 40_000, 0]
    assert left_to_come([(None, None)], held=0) == [None]  # the browser's own, its head not in: not known
    # rust-book-print's document connection with its font's last 2 kB to come takes the pieces, pipelined at once:
    # those 2 kB and a piece come in one round trip of its window (comes_within_window)
    warm = bin_for(1, left_to_come([(2_000, None)], 0), False, INITIAL_WINDOW + 392_000, told=True)
    assert warm.load == 2_000 and warm.ready and warm.room == INITIAL_WINDOW + 390_000
    taker = balanced_taker([warm, *(Bin(i, 0, True, INITIAL_WINDOW) for i in range(2, 7))], 39_600)
    assert taker is not None and taker.id == 1


@given(st.lists(st.one_of(st.none(), st.integers(0, 400_000)), max_size=6), st.integers(0, 2_000_000),
       st.integers(1, 200_000), st.booleans())
def test_balanced_work_goes_behind_render_blocking_answers_only_where_they_told_their_size_and_it_fits_the_window(
        sizes: list[int | None], window: int, incoming: int, weighed_for_it: bool) -> None:
    # answers not all in step with their heads in (told False): as before the rule, never ready
    assert bin_for(1, sizes, False, window) == bin_for(1, sizes, False, window, told=False)
    assert not bin_for(1, sizes, False, window).ready
    # weighed for a piece (the default), or for this very request
    fits = incoming if weighed_for_it else LONG_BYTES
    b = bin_for(1, sizes, False, window, told=True, incoming=fits)
    if None in sizes or sum(s or 0 for s in sizes) + fits > window:
        assert b == bin_for(1, sizes, False, window), "no room for it: as before"
        return
    left = sum(s or 0 for s in sizes)
    assert b == Bin(1, left, True, window, room=window - left), "weighed by what is left, room for the rest"
    # a request it has no room for does not go there; one it has room for may
    assert takes_now(b, incoming) == (left + incoming <= window)
    taker = balanced_taker([b, Bin(2, 10**9, True)], incoming)
    assert taker is not None and (taker.id == 1) == (left + incoming <= window)
    # a fresh connection (one initial window, nothing aboard) never has room for a piece beside its answers
    assert not comes_within_window([], INITIAL_WINDOW) and not comes_within_window([], 2 * INITIAL_WINDOW)


def test_a_small_rest_goes_behind_the_image_ending_on_a_warm_connection() -> None:
    # apache-rewrite's first visit on `sat`: a first piece's head tells a rest of 16 kB while feather.png (21 kB, the
    # browser's own size) has 1.5 kB to come on the connection it warmed (window 35 kB); the other ready connection
    # is cold, carrying another rest of 1.2 kB. Weighed as a whole piece the warm one has no room (1.5 + 43 kB),
    # and the rest went to the cold one: two round trips of slow start. Weighed for the rest, it goes behind the
    # image, in one.
    rest = 16_416
    cold = Bin(6, 1_171, True, INITIAL_WINDOW)
    assert bin_for(5, [1_500], False, 34_872, told=True).room is None
    warm = bin_for(5, [1_500], False, 34_872, told=True, incoming=rest)
    assert warm.ready and warm.room is not None and rest <= warm.room
    taker = balanced_taker([cold, warm], rest)
    assert taker is not None and (taker.id, takes_now(taker, rest)) == (5, True)
    taker = balanced_taker([cold, bin_for(5, [1_500], False, 34_872, told=True)], rest)
    assert taker is not None and taker.id == 6  # as before: weighed for a whole piece


def test_the_document_connection_takes_a_pieces_rest_behind_the_font_it_is_ending() -> None:
    # rust-book-print on `sat` (session 39): the document's connection (window capped at twice the link's 140 kB per
    # round trip) carries the page's icon font, its head in, 77 kB to come; the others carry first pieces (sizes
    # from their heads: 20 kB to come) in slow start. The rest's pieces go behind the font, not after it.
    ceiling = window_ceiling(140_725)
    assert ceiling is not None
    doc = bin_for(1, [77_000], False, ceiling, told=True)
    cold = [bin_for(i, [20_000], True, INITIAL_WINDOW) for i in range(2, 7)]
    taker = balanced_taker([doc, *cold], 40_800)
    assert taker is not None and (taker.id, taker.ready) == (1, True)


def test_late_in_a_first_visit_the_warm_connection_takes_the_pieces() -> None:
    # rust-book-print on `sat`: the document's connection has carried 392 kB, the others small stylesheets and icons
    warm, cold = Bin(1, 0, True, INITIAL_WINDOW + 392_000), [Bin(i, 0, True, INITIAL_WINDOW) for i in range(2, 7)]
    loads = {b.id: 0 for b in [warm, *cold]}
    for _ in range(5):  # the rest of a 241 kB image in pieces of 39.6 kB
        bins = [dataclasses.replace(b, load=loads[b.id]) for b in [warm, *cold]]
        taker = balanced_taker(bins, 39_600)
        assert taker is not None
        loads[taker.id] += 39_600
    assert loads[1] == 5 * 39_600, "one round trip there; two on any cold one"


def test_a_connection_carrying_render_blocking_or_unknown_work_counts_it_and_takes_its_share_once_free() -> None:
    assert bin_load([1000, None]) == 1000 + LONG_BYTES
    assert bin_for(3, [40_000], True) == Bin(3, 40_000, True)
    # a stylesheet's connection (5 kB, 4 segments, in at the first flight) is waited for; its window does not grow on
    # so little, so by the end of its second round trip it carries 20 segments less of the flight's work
    css = bin_for(1, [5_000], False)
    assert css == Bin(1, 20 * SEGMENT, False) == Bin(1, first_flight_cost(4), False)
    # apache-rewrite's four stylesheets (9 segments) grow the window as much: 11 segments less; a full first flight 10
    assert bin_for(1, [5_303, 1_387, 1_390, 3_372], False).load == first_flight_cost(9) == 11 * SEGMENT
    assert first_flight_cost(10) == 10 * SEGMENT
    # eight small answers of 9.7 kB in all take 11 segments: their connection is free only after a second flight
    assert bin_for(4, [1214, 358, 661, 576, 1909, 1940, 2260, 792], False).load is None
    chosen = balanced_taker([bin_for(0, [60_000], True), css])
    assert chosen is not None and (chosen.id, chosen.ready) == (1, False)
    # one busy for longer (a 20 kB script, or the browser's own request of unknown size) takes no balanced work
    assert bin_for(2, [20_000], False).load is None and bin_for(2, [None], False).load is None
    chosen = balanced_taker([bin_for(0, [60_000], True), bin_for(2, [20_000], False)])
    assert chosen is not None and chosen.id == 0


@given(st.lists(st.integers(1, 200_000), min_size=1, max_size=40), st.integers(1, 8))
def test_a_flight_spread_largest_first_leaves_no_connection_more_than_one_request_over_the_least(
        sizes: list[int], connections: int) -> None:
    loads = [0] * connections
    for size in sorted(sizes, reverse=True):  # queue_order: a flight's largest first
        taker = balanced_taker(Bin(i, load) for i, load in enumerate(loads))
        assert taker is not None
        loads[taker.id] += size
    assert max(loads) - min(loads) <= max(sizes)
    # Graham's bound for the greedy rule: the most loaded connection carries at most the average plus one request
    assert max(loads) <= sum(sizes) / connections + max(sizes)


def test_what_is_balanced_a_flights_known_sizes_that_do_not_block_rendering_on_a_link_with_room() -> None:
    room = BALANCE_BDP
    assert balances(2, 30_000, room) and balances(1, 10, 10 * room)
    assert not balances(RENDER_BLOCKING, 30_000, room)
    assert not balances(2, None, room)  # the browser's own request: its size is not known
    assert not balances(2, 30_000, None)  # the link not known yet
    assert not balances(2, 30_000, room - 1)  # W-CDMA: 384 kbit/s at 400 ms carries 19 kB per round trip


@given(st.booleans(), st.sampled_from([None, "h2", "http/1.1"]), st.integers(1, 4),
       st.one_of(st.none(), st.floats(0.0005, 2.0)), st.booleans(), st.integers(0, 8))
def test_a_reserve_is_adopted_only_among_connections_opened_for_an_origin_of_unknown_protocol(
        tls: bool, protocol: str | None, h2_connections: int, min_rtt: float | None, have_one: bool,
        opening: int) -> None:
    adopted = h2_reserve_from_opening(tls, protocol, h2_connections, min_rtt, have_one, opening)
    if adopted:
        assert tls and protocol is None and not have_one and opening >= 2
        assert h2_connection_count(h2_connections, min_rtt) > 1, "never where the origin gets one h2 connection"
    # Where the protocol is remembered h2, h2_render_reserve decides (it opens one); never both.
    assert not (adopted and h2_render_reserve(protocol, h2_connections, min_rtt, have_one))


def test_a_document_whose_origin_is_being_preconnected_adopts_one_as_its_reserve() -> None:
    assert h2_reserve_from_opening(True, None, 2, None, have_one=False, opening=2)
    assert h2_reserve_from_opening(True, None, 2, 0.6, have_one=False, opening=6)
    assert not h2_reserve_from_opening(True, None, 2, 0.6, have_one=False, opening=1)  # nothing beside its own
    assert not h2_reserve_from_opening(True, None, 2, 0.01, have_one=False, opening=2)  # a short round trip
    assert not h2_reserve_from_opening(False, None, 2, 0.6, have_one=False, opening=2)  # plain http://


@given(up=st.integers(0, 4), room=st.integers(0, 300), queued=st.integers(1, 300), base=st.integers(1, 6),
       more=st.integers(0, 4))
def test_an_h2_origin_opens_a_late_connection_only_for_work_the_up_ones_cannot_take(
    up: int, room: int, queued: int, base: int, more: int
) -> None:
    from lanefetch.engine.pool_plan import h2_opens_late

    opens = h2_opens_late(up, room, queued, base, base + more)
    if up == 0:
        assert opens, "none up: those opening together share the work"
    elif more:
        assert opens, "work of known bytes calls for more (a learned page's flight)"
    else:
        assert opens == (queued > room), "only for what the up connections' free streams cannot take now"
    # a first visit's wave over `sat`: twelve requests, one connection up with nginx's 128 streams: none opened
    assert not h2_opens_late(1, 127, 12, 2, 2)


def test_a_document_beside_at_most_one_connection_of_unknown_protocol_opens_a_reserve() -> None:
    assert h2_reserve_beside(True, None, 2, None, have_one=False, opening=1)  # Chromium's held preconnect
    assert h2_reserve_beside(True, None, 2, 0.6, have_one=False, opening=0)
    assert not h2_reserve_beside(True, None, 2, 0.6, have_one=False, opening=2)  # adopted instead
    assert not h2_reserve_beside(True, None, 2, 0.6, have_one=True, opening=1)
    assert not h2_reserve_beside(True, None, 2, 0.01, have_one=False, opening=1)  # a short round trip: one
    assert not h2_reserve_beside(True, None, 1, 0.6, have_one=False, opening=1)  # `--h2-connections 1`
    assert not h2_reserve_beside(False, None, 2, 0.6, have_one=False, opening=1)  # plain http://
    assert not h2_reserve_beside(True, "h2", 2, 0.6, have_one=False, opening=1)  # h2_render_reserve's case
    assert not h2_reserve_beside(True, "http/1.1", 2, 0.6, have_one=False, opening=1)
    for opening in range(4):  # never with h2_reserve_from_opening: one adopts, the other opens
        assert not (h2_reserve_beside(True, None, 2, 0.6, False, opening)
                    and h2_reserve_from_opening(True, None, 2, 0.6, False, opening))

    # what it takes: the small render-blocking requests, never a page's fonts (most of rust-std's bytes)
    assert beside_reserve_takes("stylesheet") and beside_reserve_takes("script")
    assert not any(beside_reserve_takes(t) for t in ("font", "image", "document", "fetch", "other"))
