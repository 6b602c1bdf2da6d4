"""The fidelity rule (prefetch/fidelity.py) and the budget of unrequested bytes (prefetch/budget.py): tables of
requests a prefetch may and may not answer, a property that any single change to a compared field refuses the
match, and a property that a flight obeying the ledger never holds more unrequested bytes than its limits plus
the reads it was told to stop after."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lanefetch.cache.policy import VALIDATED_TYPES
from lanefetch.cache.vary import normalised_value
from lanefetch.prefetch.budget import HOLD_CEILING, Ledger, Limits, limits_for
from lanefetch.prefetch.fidelity import ANSWERABLE, CREDENTIAL_FIELDS, SCRIPT_REQUESTS, Prefetched, may_answer

URL = "https://static.example.org/app.js"
SENT = [
    ("Accept", "*/*"), ("Accept-Language", "en-GB,en;q=0.9"), ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("User-Agent", "Mozilla/5.0 X"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "script"),
    ("Sec-Fetch-Site", "cross-site"), ("Referer", "https://www.example.org/"),
]


def _held(headers: list[tuple[str, str]] | None = None, status: int = 200,
          response: list[tuple[str, str]] | None = None, method: str = "GET") -> Prefetched:
    return Prefetched(method, URL, SENT if headers is None else headers, status,
                      response if response is not None else [("Content-Type", "text/javascript")], fetched_at=100.0)


@pytest.mark.parametrize(
    ("held", "method", "url", "headers", "now", "reason"),
    [
        (_held(), "GET", URL, SENT, 101.0, "match"),
        # header names are case-insensitive, whitespace normalised, field order free; Referer is not compared
        (_held(), "GET", URL, [(k.lower(), f" {v} ") for k, v in reversed(SENT) if k != "Referer"], 101.0, "match"),
        (_held(), "HEAD", URL, SENT, 101.0, "method"),
        (_held(method="POST"), "GET", URL, SENT, 101.0, "method"),
        (_held(), "GET", URL + "?v=2", SENT, 101.0, "url"),
        (_held(), "GET", "https://static.example.org/app.js#x", SENT, 101.0, "url"),
        (_held(), "GET", URL, [*SENT, ("Cookie", "sid=1")], 101.0, "header:cookie"),
        (_held([*SENT, ("Cookie", "sid=1")]), "GET", URL, SENT, 101.0, "header:cookie"),
        (_held([*SENT, ("Cookie", "sid=1")]), "GET", URL, [*SENT, ("Cookie", "sid=2")], 101.0, "header:cookie"),
        (_held(), "GET", URL, [*SENT, ("Authorization", "Bearer x")], 101.0, "header:authorization"),
        (_held(), "GET", URL, [*SENT, ("Origin", "https://www.example.org")], 101.0, "header:origin"),
        (_held(), "GET", URL, [(k, "cors" if k == "Sec-Fetch-Mode" else v) for k, v in SENT], 101.0,
         "header:sec-fetch-mode"),
        (_held(), "GET", URL, [(k, "same-site" if k == "Sec-Fetch-Site" else v) for k, v in SENT], 101.0,
         "header:sec-fetch-site"),
        (_held(), "GET", URL, [(k, "fr" if k == "Accept-Language" else v) for k, v in SENT], 101.0,
         "header:accept-language"),
        # a field the response varies on is compared too; Vary: * never matches
        (_held(response=[("Vary", "Referer")]), "GET", URL, [*SENT[:-1], ("Referer", "https://other/")], 101.0,
         "header:referer"),
        (_held(response=[("Vary", "X-Ab-Bucket, accept")]), "GET", URL, SENT, 101.0, "match"),
        (_held(response=[("Vary", "X-Ab-Bucket")]), "GET", URL, [*SENT, ("X-Ab-Bucket", "b")], 101.0,
         "header:x-ab-bucket"),
        (_held(response=[("Vary", "*")]), "GET", URL, SENT, 101.0, "vary:*"),
        # what the browser asks for is not a plain GET
        (_held(), "GET", URL, [*SENT, ("Range", "bytes=0-")], 101.0, "conditional:range"),
        (_held(), "GET", URL, [*SENT, ("If-Match", '"a"')], 101.0, "conditional:if-match"),
        (_held(), "GET", URL, [*SENT, ("If-Unmodified-Since", "Sat, 28 Nov 2026 10:00:00 GMT")], 101.0,
         "conditional:if-unmodified-since"),
        (_held(), "GET", URL, [*SENT, ("If-Range", '"a"'), ("Range", "bytes=5-")], 101.0, "conditional:if-range"),
        # a validation of the browser's own copy: the prefetch is the server's current answer, a full one answers it
        (_held(), "GET", URL, [*SENT, ("If-None-Match", '"a"')], 101.0, "match"),
        (_held(), "GET", URL, [*SENT, ("If-Modified-Since", "Sat, 28 Nov 2026 10:00:00 GMT")], 101.0, "match"),
        (_held(), "GET", URL, [*SENT, ("If-None-Match", '"a"'), ("Cache-Control", "max-age=0")], 101.0, "match"),
        (_held(), "GET", URL, [*SENT, ("If-None-Match", '"a"'), ("Cookie", "sid=1")], 101.0, "header:cookie"),
        (_held(), "GET", URL, [*SENT, ("Cache-Control", "no-cache")], 101.0, "reload"),
        (_held(), "GET", URL, [*SENT, ("Pragma", "no-cache")], 101.0, "reload"),
        (_held(), "GET", URL, [*SENT, ("Cache-Control", "max-age=0")], 101.0, "match"),
        # the response and its age
        (_held(status=206), "GET", URL, SENT, 101.0, "status"),
        (_held(status=404), "GET", URL, SENT, 101.0, "match"),
        # a server's passing state (overloaded, rate limited by the flight's own burst, a failed upstream): the
        # browser's own request, made later, may well get the resource
        (_held(status=503), "GET", URL, SENT, 101.0, "status-transient"),
        (_held(status=500), "GET", URL, SENT, 101.0, "status-transient"),
        (_held(status=502), "GET", URL, SENT, 101.0, "status-transient"),
        (_held(status=429), "GET", URL, SENT, 101.0, "status-transient"),
        (_held(status=408), "GET", URL, SENT, 101.0, "status-transient"),
        (_held(status=410), "GET", URL, SENT, 101.0, "match"),
        # a prefetch sent without the Referer the browser's request carries: a refusal or a redirect may be the
        # server's answer to the missing Referer (hotlink protection), so it does not answer; a 404 or a 200 does
        (_held(SENT[:-1], status=403), "GET", URL, SENT, 101.0, "status-without-referer"),
        (_held(SENT[:-1], status=401), "GET", URL, SENT, 101.0, "status-without-referer"),
        (_held(SENT[:-1], status=302), "GET", URL, SENT, 101.0, "status-without-referer"),
        (_held(SENT[:-1], status=403), "GET", URL, SENT[:-1], 101.0, "match"),
        (_held(SENT[:-1]), "GET", URL, SENT, 101.0, "match"),
        (_held(SENT[:-1], status=404), "GET", URL, SENT, 101.0, "match"),
        # a field of the page's own that the prefetch was sent without may change the answer: refused; fields
        # that cannot (the low-entropy client hints restate the User-Agent compared above, Priority) answer
        (_held(), "GET", URL, [*SENT, ("X-Requested-With", "XMLHttpRequest")], 101.0, "header:x-requested-with"),
        (_held(), "GET", URL, [*SENT, ("X-CSRF-Token", "abc")], 101.0, "header:x-csrf-token"),
        (_held(), "GET", URL, [*SENT, ("X-Auth-Token", "secret")], 101.0, "header:x-auth-token"),
        (_held([*SENT, ("X-Requested-With", "XMLHttpRequest")]), "GET", URL,
         [*SENT, ("X-Requested-With", "XMLHttpRequest")], 101.0, "match"),
        (_held(), "GET", URL, [*SENT, ("Sec-CH-UA-Mobile", "?0"), ("sec-ch-ua-platform", '"Linux"'),
                               ("Priority", "u=1")], 101.0, "match"),
        (_held(), "GET", URL, [*SENT, ("Sec-Fetch-Storage-Access", "none")], 101.0, "match"),  # Firefox, cross-site
        # the user's privacy signals go with a prefetch as with the browser's own request
        (_held(), "GET", URL, [*SENT, ("Sec-GPC", "1")], 101.0, "header:sec-gpc"),
        (_held([*SENT, ("DNT", "1")]), "GET", URL, SENT, 101.0, "header:dnt"),
        (_held(), "GET", URL, SENT, 130.0, "match"),
        (_held(), "GET", URL, SENT, 130.5, "age"),
        (_held(), "GET", URL, SENT, 99.0, "age"),
    ],
)
def test_table(held: Prefetched, method: str, url: str, headers: list[tuple[str, str]], now: float,
               reason: str) -> None:
    verdict = may_answer(held, method, url, headers, now=now)
    assert verdict.reason == reason
    assert verdict.ok == (reason == "match")


@given(st.sampled_from(CREDENTIAL_FIELDS), st.text(alphabet="abcXYZ=;,/ 0123", min_size=1, max_size=12),
       st.booleans())
def test_any_change_to_a_compared_field_refuses(name: str, value: str, add: bool) -> None:
    """Adding a compared field, or giving it another value, always refuses; only the same value matches."""
    base = [(k, v) for k, v in SENT if k.lower() != name]
    held = _held([*base, (name, "original")])
    changed = [*base, (name, value)] if add else base
    verdict = may_answer(held, "GET", URL, changed, now=100.0)
    same = add and value.strip() == "original"
    assert verdict.ok == same
    if not same:
        assert verdict.reason == f"header:{name}"


RESOURCE_TYPES = ("document", "stylesheet", "script", "font", "image", "media", "texttrack", "fetch", "xhr",
                  "other", "manifest", "ping")


@given(st.sampled_from(RESOURCE_TYPES), st.sampled_from([200, 304, 404, 503]),
       st.floats(min_value=99.0, max_value=140.0),
       st.sampled_from([[], [("Cache-Control", "no-cache")], [("If-None-Match", '"a"')], [("Range", "bytes=0-")]]))
@example("fetch", 200, 101.0, [])
@example("xhr", 200, 101.0, [("If-None-Match", '"a"')])
def test_a_script_request_is_never_answered_and_nothing_else_changes(
        resource_type: str, status: int, now: float, extra: list[tuple[str, str]]) -> None:
    """A page's fetch() or XHR (its cache mode invisible to the helper in Chromium) is never answered by a prefetch,
    whatever else holds; any other resource type gets the verdict it got before the rule (that of "other")."""
    held = _held(status=status)
    verdict = may_answer(held, "GET", URL, [*SENT, *extra], now=now, resource_type=resource_type)
    plain = may_answer(held, "GET", URL, [*SENT, *extra], now=now)
    if resource_type in SCRIPT_REQUESTS:
        assert not verdict.ok and verdict.reason == "script-request"
    else:
        assert verdict == plain


def test_the_script_requests_are_the_types_whose_cache_mode_the_helper_cannot_see() -> None:
    # one definition for the cache's lookup (policy.lookup_fields) and the flight's answers
    assert SCRIPT_REQUESTS == VALIDATED_TYPES == {"fetch", "xhr"}


# Budget -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("page_bytes", "rate", "speculative", "total"),
    [
        (None, None, 32 * 1024, 256 * 1024),          # no history: the floors
        (2_000_000, None, 100_000, 4_000_000),          # 5 % and twice the page
        (20_000_000, None, 1_000_000, 8 * 1024 * 1024),  # the holding area's ceiling
        (2_000_000, 48_000.0, 24_000, 4_000_000),       # 384 kbit/s: a wrong guess costs at most 0.5 s
        (100_000, 10_000_000.0, 32 * 1024, 256 * 1024),
    ],
)
def test_limits(page_bytes: int | None, rate: float | None, speculative: int, total: int) -> None:
    assert limits_for(page_bytes, rate) == Limits(speculative, total)


def test_ledger_story() -> None:
    ledger = Ledger(Limits(speculative=100, total=1000))
    assert ledger.admit("css", confident=True, expected_size=600)
    assert not ledger.admit("big", confident=True, expected_size=500)  # 600 + 500 > 1000
    assert ledger.admit("guess", confident=False, expected_size=80)
    assert not ledger.admit("guess2", confident=False, expected_size=30)  # 80 + 30 > 100
    assert ledger.admit("unknown", confident=False, expected_size=None) is True  # 80 < 100: may start
    assert ledger.received("unknown", 15)
    assert not ledger.received("unknown", 10)  # 80 + 25 > 100: cancel
    ledger.discard("unknown")
    assert ledger.received("css", 600)
    ledger.claim("css")  # useful: frees its share
    assert ledger.admit("big", confident=True, expected_size=500)
    assert ledger.wasted_bytes == 25
    assert ledger.claimed_bytes == 600
    assert not ledger.admit("css", confident=True, expected_size=1)  # one entry per prefetch


def test_a_guess_asked_then_unasked_is_within_the_limits_again() -> None:
    ledger = Ledger(Limits(speculative=100, total=1000))
    assert ledger.admit("guess", confident=False, expected_size=None)
    ledger.asked("guess")  # a browser request waits for it: not cut
    assert ledger.received("guess", 500)
    ledger.unasked("guess")  # that request was cancelled: a guess again
    assert not ledger.received("guess", 1)
    ledger.claim("other")  # unknown ids change nothing
    ledger.unasked("guess")  # only an asked item goes back
    assert ledger.unrequested_bytes == 501


def test_a_size_told_before_the_body_is_weighed_at_once() -> None:
    # flight_pieces: a first piece's Content-Range tells the body's size before its rest is asked
    ledger = Ledger(Limits(speculative=100_000, total=200_000))
    assert ledger.admit("img", confident=True, expected_size=None)  # weighed at UNKNOWN_SIZE until then
    assert ledger.admit("css", confident=True, expected_size=50_000)
    assert not ledger.expect("img", 160_000)  # 50 000 + 160 000 > 200 000: its rest is not asked
    assert ledger.expect("img", 150_000)  # fits: weighed at that from now on
    assert not ledger.admit("js", confident=True, expected_size=1)
    ledger.claim("css")
    assert ledger.admit("guess", confident=False, expected_size=None)
    assert not ledger.expect("guess", 100_001)  # a guess keeps within the guesses' limit too
    assert ledger.expect("guess", 0)
    ledger.asked("img")
    assert ledger.expect("img", 8_000_000), "the browser waits for it: not refused for the page's limits"
    assert not ledger.expect("img", HOLD_CEILING + 1), "but never held past HOLD_CEILING"
    assert not ledger.expect("nobody", 1)


def test_a_guess_the_browser_asked_for_is_not_cut_and_not_unrequested() -> None:
    ledger = Ledger(Limits(speculative=100, total=1000))
    assert ledger.admit("font", confident=False, expected_size=None)
    assert ledger.received("font", 60)
    ledger.asked("font")  # the browser's request for it waits
    assert ledger.received("font", 60)  # 120 > 100, but asked for: not cut
    assert ledger.unrequested_bytes == 0
    assert ledger.admit("guess", confident=False, expected_size=90)  # the asked one no longer fills the class
    ledger.discard("font")  # refused by the fidelity rule after all: waste
    assert ledger.wasted_bytes == 120 and ledger.unrequested_bytes == 120
    ledger.asked("guess")
    ledger.claim("guess")
    assert ledger.claimed_bytes == 0 and ledger.wasted_bytes == 120


def test_a_prefetch_the_browser_asked_for_is_still_cut_past_the_hold_ceiling() -> None:
    # held whole until it ended: a body decoding without end must not fill the helper's memory while the browser waits
    ledger = Ledger(Limits(speculative=100, total=1024 * 1024))
    assert ledger.admit("js", confident=True, expected_size=None)
    ledger.asked("js")
    assert ledger.received("js", HOLD_CEILING)
    assert not ledger.received("js", 1)


_OPS = st.lists(st.tuples(st.sampled_from(["admit", "bytes", "bytes", "bytes", "claim", "discard", "ask"]),
                          st.integers(0, 3),
                          st.booleans(), st.one_of(st.none(), st.integers(0, 400)), st.integers(1, 200)),
                max_size=60)


@settings(max_examples=400)
@given(st.integers(1, 500), st.integers(1, 2000), _OPS)
@example(1, 2000, [("admit", 0, False, None, 5), ("bytes", 0, False, None, 200)])
@example(100, 150, [("admit", 0, True, 100, 5), ("admit", 1, False, 50, 5), ("bytes", 0, True, None, 200)])
def test_ledger_bounds_unrequested_bytes(spec: int, total: int, ops: list[tuple[str, int, bool, int | None, int]]
                                         ) -> None:
    """A caller that stops a fetch when told holds at most limit + the reads it was told to stop after."""
    ledger = Ledger(Limits(speculative=spec, total=max(spec, total)))
    live: dict[str, bool] = {}  # admitted and still fetching -> confident
    asked: set[str] = set()
    overshoot_total = overshoot_spec = 0
    for op, n, confident, expected, chunk in ops:
        key = f"r{n}"
        if op == "admit" and ledger.admit(key, confident=confident, expected_size=expected):
            live[key] = confident
        elif op == "bytes" and key in live:
            if not ledger.received(key, chunk):
                overshoot_total += chunk
                overshoot_spec += 0 if live[key] else chunk
                del live[key]
                ledger.discard(key)
        elif op == "claim" and key in live:
            ledger.claim(key)
            del live[key]
            asked.discard(key)
        elif op == "discard" and key in live:
            ledger.discard(key)
            del live[key]
            if key in asked:  # asked for, then refused: what it received while asked is waste beyond the limits
                overshoot_total += ledger._items[key].received
                overshoot_spec += 0 if ledger._items[key].confident else ledger._items[key].received
        elif op == "ask" and key in live:
            ledger.asked(key)  # requested: never cut; its bytes count again only if discarded
            asked.add(key)
        assert ledger.unrequested_bytes <= ledger.limits.total + overshoot_total
        spec_unrequested = sum(i.received for i in ledger._items.values()
                               if not i.confident and i.state not in ("claimed", "asked"))
        assert spec_unrequested <= ledger.limits.speculative + overshoot_spec


_FIELD_NAMES = st.sampled_from([*CREDENTIAL_FIELDS, "Referer", "X-Thing", "X-Other", "Priority", "Cookie", "ACCEPT"])
_HEADER_LISTS = st.lists(st.tuples(_FIELD_NAMES, st.text(alphabet="abc ,;=/*0", max_size=10)), max_size=8)


@given(_HEADER_LISTS, st.lists(st.sampled_from(["X-Thing", "Referer", "accept", "Priority"]), max_size=3))
def test_a_prefetch_answers_the_very_request_it_was_sent_as(headers: list[tuple[str, str]], vary: list[str]) -> None:
    """Reflexive: whatever the fields, the identical plain GET is answered (Vary on any of them included),
    unless it is ranged, preconditioned or a reload, which a prefetch never is (flight.py sends none of those)."""
    held = Prefetched("GET", URL, headers, 200, [("Vary", ", ".join(vary))] if vary else [], fetched_at=0.0)
    assert may_answer(held, "GET", URL, list(headers), now=0.0).ok


@given(_HEADER_LISTS, st.data())
def test_a_match_if_and_only_if_every_compared_field_is_equal(sent: list[tuple[str, str]], data: st.DataObject) -> None:
    """The browser's request: the prefetch's fields shuffled, some dropped, some added; matched only if every
    compared field (and the Vary'd one) came out equal."""
    real = data.draw(st.permutations(sent))
    real = [h for h in real if data.draw(st.booleans()) or h[0] in ("Referer", "Priority")]
    real += data.draw(_HEADER_LISTS)
    held = Prefetched("GET", URL, sent, 200, [("Vary", "X-Thing")], fetched_at=0.0)
    ok = may_answer(held, "GET", URL, real, now=0.0).ok
    compared = (*CREDENTIAL_FIELDS, "x-thing")
    equal = all(normalised_value(sent, name) == normalised_value(real, name) for name in compared)
    sent_names = {k.lower() for k, _ in sent}
    unsent = any(k.lower() not in sent_names and k.lower() not in ANSWERABLE and k.lower() not in compared
                 for k, _ in real)  # a field of the browser's the prefetch never carried (X-Thing aside: compared)
    assert ok == (equal and not unsent)
