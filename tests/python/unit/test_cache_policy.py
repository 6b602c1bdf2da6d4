"""The sans-I/O cache rules (RFC 9111): Cache-Control parsing, freshness and age, Vary matching,
which responses are stored, validation and 304 updates, and the lookup decision."""

from __future__ import annotations

from email.utils import formatdate

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.cache.dates import parse_http_date
from lanefetch.cache.directives import MAX_DELTA, parse_cache_control, pragma_no_cache
from lanefetch.cache.entry import StoredEntry, StoredHead
from lanefetch.cache.freshness import HEURISTIC_CAP, current_age, is_fresh, lifetime
from lanefetch.cache.policy import (
    Bypass,
    Hit,
    Miss,
    Revalidate,
    coding_accepted,
    decide,
    invalidates,
    lookup_fields,
    served_headers,
)
from lanefetch.cache.storability import has_validator, may_store, stored_fields
from lanefetch.cache.validation import conditional_headers, updated_head, validates
from lanefetch.cache.vary import (
    matches,
    normalised_value,
    request_values,
    variant_key,
    vary_fields,
)

NOW = 1_700_000_000.0


def date(t: float) -> str:
    return formatdate(t, usegmt=True)


def head(*headers: tuple[str, str], status: int = 200, request_time: float = NOW, response_time: float = NOW,
         vary: dict[str, str | None] | None = None, heuristic_ok: bool = True) -> StoredHead:
    return StoredHead(status, "OK", "1.1", list(headers), request_time, response_time, vary or {}, heuristic_ok)


# -- Cache-Control --------------------------------------------------------------------------------------


def test_cache_control_directives() -> None:
    cc = parse_cache_control(['public, Max-Age=60, no-cache="Set-Cookie"', "must-revalidate", "s-maxage=5"])
    assert cc.public and cc.no_cache and cc.must_revalidate and cc.max_age == 60 and cc.s_maxage == 5
    assert not cc.no_store and not cc.private
    assert parse_cache_control(['private="a, b", no-store']).no_store  # comma inside a quoted string
    assert parse_cache_control(["max-age=abc"]).max_age == 0  # invalid: stale
    assert parse_cache_control(["max-age=10, max-age=20"]).max_age == 0  # duplicate: invalid
    # quoted: not read (RFC 9111 §1.2.2 forbids it; Chromium does not parse it), so no max-age, not 30
    assert parse_cache_control(['max-age="30"']).max_age is None
    assert parse_cache_control(['max-age="30", max-age=20']).max_age == 20  # and so no duplicate either
    assert parse_cache_control(['min-fresh="5", s-maxage="9"']) == parse_cache_control([])
    assert parse_cache_control(["max-age=99999999999999"]).max_age == MAX_DELTA
    assert parse_cache_control([]) == parse_cache_control([""]) == parse_cache_control([" , ,"])
    assert pragma_no_cache(["no-cache"]) and not pragma_no_cache(["x=no-cache"])


_NAMES = st.sampled_from(["no-store", "no-cache", "private", "public", "must-revalidate", "x-ext", "immutable"])


@given(st.lists(st.tuples(_NAMES, st.booleans()), max_size=6), st.integers(0, 10**6) | st.none(),
       st.sampled_from([", ", ",", " ,  "]))
def test_cache_control_round_trip(flags: list[tuple[str, bool]], max_age: int | None, sep: str) -> None:
    parts = [name.upper() if upper else name for name, upper in flags]
    if max_age is not None:
        parts.append(f"max-age={max_age}")
    cc = parse_cache_control([sep.join(parts)])
    names = {n for n, _ in flags}
    assert cc.no_store == ("no-store" in names) and cc.no_cache == ("no-cache" in names)
    assert cc.private == ("private" in names) and cc.public == ("public" in names)
    assert cc.must_revalidate == ("must-revalidate" in names)
    assert cc.max_age == max_age
    # splitting the same directives over several field lines means the same
    assert parse_cache_control(parts) == cc


@given(st.text(max_size=80))
def test_cache_control_never_raises(text: str) -> None:
    cc = parse_cache_control([text])
    assert cc.max_age is None or 0 <= cc.max_age <= MAX_DELTA


@given(st.floats(0, 4_000_000_000, allow_nan=False).map(int))
def test_http_date_round_trip(t: int) -> None:
    assert parse_http_date(date(t)) == t


def test_http_date_forms() -> None:
    t = 784111777.0
    assert parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == t
    assert parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == t
    assert parse_http_date("Sun Nov  6 08:49:37 1994") == t
    assert parse_http_date("yesterday") is None and parse_http_date(None) is None
    assert parse_http_date("Sun, 06 Nov 99999 08:49:37 GMT") is None


# -- freshness and age ------------------------------------------------------------------------------------


def test_max_age_wins_over_expires_and_s_maxage_is_ignored() -> None:
    h = head(("Cache-Control", "max-age=100, s-maxage=9999"), ("Date", date(NOW)), ("Expires", date(NOW + 5)))
    assert lifetime(h) == 100
    assert is_fresh(h, NOW + 99) and not is_fresh(h, NOW + 101)
    assert lifetime(head(("Cache-Control", "s-maxage=9999"))) == 0


def test_expires_relative_to_date_and_invalid_expires_is_stale() -> None:
    assert lifetime(head(("Date", date(NOW - 50)), ("Expires", date(NOW + 50)))) == 100
    assert lifetime(head(("Expires", "0"))) == 0
    assert lifetime(head(("Date", date(NOW)), ("Expires", date(NOW - 10)))) == 0


def test_heuristic_freshness_is_ten_percent_of_last_modified_age_capped() -> None:
    lm = head(("Date", date(NOW)), ("Last-Modified", date(NOW - 1000)))
    assert lifetime(lm) == 100
    # measured from Date (when the response was made), not from now: it does not grow as the entry ages
    assert is_fresh(lm, NOW + 99) and not is_fresh(lm, NOW + 101)
    assert lifetime(head(("Date", date(NOW)), ("Last-Modified", date(NOW - 10**9)))) == HEURISTIC_CAP
    assert lifetime(head(("Last-Modified", date(NOW - 1000)), status=302)) == 0  # not cacheable by default
    assert lifetime(head(("Date", date(NOW)), ("Last-Modified", date(NOW - 1000)), heuristic_ok=False)) == 0


def test_age_follows_rfc_9111_4_2_3() -> None:
    # Age header plus the round trip: 3000 + 2 s; Date says 1 s old; resident 10 s.
    h = head(("Date", date(NOW - 1)), ("Age", "3000"), request_time=NOW - 2, response_time=NOW)
    assert current_age(h, NOW + 10) == pytest.approx(3012)
    assert not is_fresh(replace_headers(h, ("Cache-Control", "max-age=3600")), NOW + 600)
    assert is_fresh(replace_headers(h, ("Cache-Control", "max-age=3600")), NOW + 500)
    # the apparent age (server clock behind) wins when it is larger
    h2 = head(("Date", date(NOW - 100)), ("Age", "5"), request_time=NOW, response_time=NOW)
    assert current_age(h2, NOW) == 100
    assert current_age(head(("Age", "junk")), NOW) == 0


def replace_headers(h: StoredHead, *extra: tuple[str, str]) -> StoredHead:
    return StoredHead(h.status, h.reason, h.http_version, h.headers + list(extra), h.request_time, h.response_time,
                      h.vary, h.heuristic_ok)


# -- Vary -------------------------------------------------------------------------------------------------


def test_vary_matching_normalises_and_star_never_stores() -> None:
    assert vary_fields(["Accept-Encoding, accept-language", "Accept-Encoding"]) == ["accept-encoding",
                                                                                  "accept-language"]
    assert vary_fields(["Accept, *"]) is None
    stored = request_values([("Accept-Encoding", "gzip,   br"), ("Accept-Encoding", "zstd")], ["accept-encoding"])
    assert stored == {"accept-encoding": "gzip, br, zstd"}
    assert matches(stored, [("accept-encoding", "gzip, br , zstd")])
    assert not matches(stored, [("Accept-Encoding", "gzip")])
    assert not matches({"accept": None}, [("Accept", "*/*")]) and matches({"accept": None}, [])
    assert variant_key({"a": None}) != variant_key({"a": ""})


@given(st.lists(st.sampled_from(["gzip", "br", "zstd", "deflate"]), min_size=1, max_size=4),
       st.sampled_from([",", ", ", " ,\t"]))
def test_vary_value_normalisation_ignores_whitespace(codings: list[str], sep: str) -> None:
    a = normalised_value([("Accept-Encoding", sep.join(codings))], "accept-encoding")
    b = normalised_value([("accept-encoding", c) for c in codings], "accept-encoding")
    assert a == b == ", ".join(codings)


# -- storability ------------------------------------------------------------------------------------------

FRESH = ("Cache-Control", "max-age=60")
ETAG = ("ETag", '"x"')


@pytest.mark.parametrize(("method", "req", "resp", "status", "ok"), [
    ("GET", [], [FRESH], 200, True),
    ("HEAD", [], [FRESH], 200, False),
    ("POST", [], [FRESH], 200, False),
    ("GET", [], [("Cache-Control", "no-store, max-age=60")], 200, False),
    ("GET", [("Cache-Control", "no-store")], [FRESH], 200, False),
    ("GET", [], [("Cache-Control", "private, max-age=60")], 200, True),  # a private cache
    ("GET", [], [FRESH, ("Vary", "*")], 200, False),
    ("GET", [], [], 200, False),  # neither freshness nor validator: never reusable
    ("GET", [], [ETAG], 200, True),
    ("GET", [], [ETAG], 302, False),  # 302 is not cacheable by default
    ("GET", [], [FRESH], 302, True),  # ... but is with explicit freshness
    ("GET", [], [FRESH], 206, False),
    ("GET", [], [ETAG], 404, True),
    ("GET", [], [("Cache-Control", "no-cache")], 200, False),  # must revalidate, cannot: useless
    ("GET", [], [("Cache-Control", "no-cache"), ETAG], 200, True),
    ("GET", [("Authorization", "Basic x")], [FRESH, ETAG], 200, False),
    ("GET", [("Authorization", "Basic x")], [("Cache-Control", "public, max-age=60")], 200, True),
    ("GET", [("Authorization", "Basic x")], [("Cache-Control", "must-revalidate"), ETAG], 200, True),
    ("GET", [("Authorization", "Basic x")], [("Cache-Control", "s-maxage=60"), ETAG], 200, True),
    ("GET", [("Cookie", "a=1")], [FRESH], 200, True),
    ("GET", [("Cookie", "a=1")], [("Last-Modified", date(NOW - 10**6))], 200, True),
    ("GET", [("Cookie", "a=1")], [("Cache-Control", "max-age=0")], 200, False),
])
def test_may_store(method: str, req: list[tuple[str, str]], resp: list[tuple[str, str]], status: int,
                   ok: bool) -> None:
    assert may_store(method, req, head(*resp, status=status)) is ok


def test_never_stored_fields() -> None:
    kept = stored_fields([("Set-Cookie", "a=1"), ("Connection", "close, X-Hop"), ("X-Hop", "1"),
                          ("Transfer-Encoding", "chunked"), ("ETag", '"e"'), ("Keep-Alive", "timeout=5"),
                          ("Clear-Site-Data", '"cookies", "storage"'),
                          ("Strict-Transport-Security", "max-age=31536000")])
    assert kept == [("ETag", '"e"')]


def test_an_entry_stored_with_state_changing_fields_never_replays_them() -> None:
    """An entry written before Clear-Site-Data and Strict-Transport-Security were left out of the store (an older
    database) is served without them: replayed, each hit would clear the site's data again / renew a policy the
    site may have lifted."""
    old = head(FRESH, ("Clear-Site-Data", '"*"'), ("Strict-Transport-Security", "max-age=600"), ("X-A", "1"))
    assert served_headers(old, 3) == [FRESH, ("X-A", "1"), ("Age", "3")]


# -- validation -------------------------------------------------------------------------------------------


def test_conditional_headers_and_304_selection() -> None:
    both = head(ETAG, ("Last-Modified", date(NOW - 10)))
    assert conditional_headers(both) == [("If-None-Match", '"x"'), ("If-Modified-Since", date(NOW - 10))]
    assert conditional_headers(head(FRESH)) == []
    assert validates(both, [("ETag", '"x"')])
    assert not validates(both, [("ETag", '"y"')])
    assert not validates(both, [("ETag", 'W/"y"')])  # another version, weak or not
    assert validates(both, [("ETag", 'W/"x"')])  # the same version (weak comparison)
    weak = head(("ETag", 'W/"x"'), ("Cache-Control", "no-cache"))
    assert validates(weak, [("ETag", '"x"')])  # nginx: W/"x" for its gzip body, "x" in the body-less 304
    assert not validates(weak, [("ETag", '"y"')])
    assert not validates(head(FRESH), [("ETag", '"x"')])  # a strong tag for an entry stored without one
    assert validates(head(FRESH), [("ETag", 'W/"x"')])  # a weak one cannot say: it answers what we asked
    assert not validates(both, [("Last-Modified", date(NOW))])
    assert validates(both, [])


def test_304_updates_stored_fields_but_not_the_body_framing() -> None:
    stored = head(ETAG, ("Content-Length", "10"), ("Content-Encoding", "gzip"), ("Cache-Control", "max-age=1"),
                  ("X-Old", "1"), request_time=NOW - 100, response_time=NOW - 100)
    new = updated_head(stored, [("Cache-Control", "max-age=600"), ("Content-Length", "0"), ("Set-Cookie", "a=b"),
                                ("Content-Encoding", "br"), ("X-New", "2"), ("Connection", "keep-alive")],
                       NOW - 1, NOW)
    assert dict(new.headers) == {"ETag": '"x"', "Content-Length": "10", "Content-Encoding": "gzip",
                                 "Cache-Control": "max-age=600", "X-Old": "1", "X-New": "2"}
    assert (new.request_time, new.response_time) == (NOW - 1, NOW)
    assert is_fresh(new, NOW + 500) and not is_fresh(stored, NOW)


# -- the decision -----------------------------------------------------------------------------------------


def entry(h: StoredHead, i: int = 1) -> StoredEntry:
    return StoredEntry(i, h)


def test_decide() -> None:
    fresh = entry(head(FRESH, ETAG))
    stale = entry(head(("Cache-Control", "max-age=1"), ETAG, request_time=NOW - 10, response_time=NOW - 10))
    assert isinstance(decide("GET", [], [fresh], NOW), Hit)
    assert decide("GET", [], [], NOW) == Miss()
    r = decide("GET", [], [stale], NOW)
    assert isinstance(r, Revalidate) and r.conditional == [("If-None-Match", '"x"')]
    # a forced fetch (hard reload): in full, no conditional fields, the URL's entries dropped (Chromium's
    # LOAD_BYPASS_CACHE), even with a validator to revalidate with
    assert decide("GET", [("Cache-Control", "no-cache")], [fresh], NOW) == Miss(drop=True)
    assert decide("GET", [("Pragma", "no-cache")], [fresh], NOW) == Miss(drop=True)
    # Pragma counts beside a Cache-Control too, as in Chromium (RFC 9111 §5.4 would ignore it)
    assert decide("GET", [("Pragma", "no-cache"), ("Cache-Control", "max-age=600")], [fresh], NOW) == Miss(drop=True)
    assert decide("GET", [("Cache-Control", "no-cache")], [], NOW) == Miss()  # nothing to drop
    assert isinstance(decide("GET", [("Cache-Control", "max-age=0")], [fresh], NOW + 1), Revalidate)
    assert isinstance(decide("GET", [("Cache-Control", "max-age=0")], [fresh], NOW), Revalidate)  # even at age 0
    assert isinstance(decide("GET", [("Cache-Control", "min-fresh=120")], [fresh], NOW), Revalidate)
    assert isinstance(decide("GET", [("Cache-Control", "no-store")], [fresh], NOW), Bypass)
    assert isinstance(decide("GET", [("If-None-Match", '"x"')], [fresh], NOW), Bypass)
    assert isinstance(decide("GET", [("Range", "bytes=0-1")], [fresh], NOW), Bypass)
    assert isinstance(decide("HEAD", [], [fresh], NOW), Bypass)
    no_validator = entry(head(("Cache-Control", "max-age=1"), request_time=NOW - 10, response_time=NOW - 10))
    assert decide("GET", [], [no_validator], NOW) == Miss()
    always = entry(head(("Cache-Control", "no-cache, max-age=600"), ETAG))
    assert isinstance(decide("GET", [], [always], NOW), Revalidate)


RESOURCE_TYPES = ["document", "stylesheet", "script", "font", "image", "media", "xhr", "fetch", "manifest", "ping",
                  "other", "prefetch"]
REQUEST_FIELDS = st.lists(st.sampled_from([
    ("Accept", "*/*"), ("Cache-Control", "max-age=600"), ("Cache-Control", "no-cache"), ("Pragma", "no-cache"),
    ("Cache-Control", "min-fresh=1"), ("Cache-Control", "max-stale=60"), ("Accept-Language", "en")]), max_size=4)


@given(REQUEST_FIELDS, st.sampled_from(RESOURCE_TYPES), st.floats(min_value=0, max_value=10_000))
def test_a_fetch_or_xhr_is_never_a_hit_whatever_it_says_and_other_types_decide_as_before(
        fields: list[tuple[str, str]], resource_type: str, age: float) -> None:
    """fetch() cache modes never reach a paused request, so a fetch()/XHR is looked up as if it said max-age=0:
    never a hit (revalidated, or fetched), whatever fields it carries; other types are looked up by their own."""
    fresh = entry(head(FRESH, ETAG))
    looked = lookup_fields(fields, resource_type)
    decision = decide("GET", looked, [fresh], NOW + age)
    if resource_type in ("fetch", "xhr"):
        assert looked[:-1] == fields and looked[-1] == ("cache-control", "max-age=0")
        assert not isinstance(decision, Hit)
    else:
        assert looked == fields and decision == decide("GET", fields, [fresh], NOW + age)


def test_a_fetch_of_a_fresh_entry_is_revalidated_and_a_forced_one_still_fetched_in_full() -> None:
    fresh = entry(head(FRESH, ETAG))
    r = decide("GET", lookup_fields([], "fetch"), [fresh], NOW)
    assert isinstance(r, Revalidate) and r.conditional == [("If-None-Match", '"x"')]
    assert decide("GET", lookup_fields([("Pragma", "no-cache")], "xhr"), [fresh], NOW) == Miss(drop=True)
    assert isinstance(decide("GET", lookup_fields([], "image"), [fresh], NOW), Hit)


def test_decide_picks_the_matching_variant_and_the_newest() -> None:
    en = entry(head(FRESH, vary={"accept-language": "en"}), 1)
    de_old = entry(head(FRESH, vary={"accept-language": "de"}, response_time=NOW - 5), 2)
    de_new = entry(head(FRESH, vary={"accept-language": "de"}, response_time=NOW - 1), 3)
    r = decide("GET", [("Accept-Language", "de")], [en, de_old, de_new], NOW)
    assert isinstance(r, Hit) and r.entry.id == 3
    assert decide("GET", [("Accept-Language", "fr")], [en, de_old], NOW) == Miss()


def test_invalidation_and_served_headers() -> None:
    assert invalidates("POST", 200) and invalidates("DELETE", 302)
    assert not invalidates("POST", 500) and not invalidates("GET", 200)
    assert served_headers(head(("Age", "3"), ETAG), 41.7) == [("ETag", '"x"'), ("Age", "41")]


@pytest.mark.parametrize(("coding", "accept", "used"), [
    ("br", [], True),  # no Accept-Encoding: any coding (RFC 9110 §12.5.3); Chromium's paused requests carry none
    ("br", ["gzip"], False),  # asked for gzip alone: a br body is not its answer, even without Vary
    ("br", ["gzip, deflate, br, zstd"], True),
    ("gzip", ["GZIP;q=0.5"], True),
    ("gzip", ["gzip;q=0"], False),
    ("gzip", ["*"], True),
    ("gzip", ["*, gzip;q=0"], False),
    ("zstd", ["br", "gzip"], False),  # fields repeated: one list
    ("gzip", ["x-gzip"], True),
    ("gzip", ["gzip;q=oops"], False),  # not a weight: taken as a refusal
    (None, ["gzip"], True),  # identity is always acceptable here
    ("identity", ["br"], True),
])
def test_a_stored_coding_the_request_does_not_accept_is_not_its_answer(coding: str | None, accept: list[str],
                                                                      used: bool) -> None:
    stored = head(FRESH, ETAG, *([("Content-Encoding", coding)] if coding else []))
    request = [("Accept-Encoding", a) for a in accept]
    assert coding_accepted(stored, request) is used
    assert isinstance(decide("GET", request, [entry(stored)], NOW), Hit) is used


def test_a_304_without_age_makes_the_refreshed_entry_as_young_as_the_answer() -> None:
    stored = head(ETAG, ("Cache-Control", "max-age=3600"), ("Age", "3500"), request_time=NOW - 3000,
                  response_time=NOW - 3000)
    new = updated_head(stored, [("ETag", '"x"')], NOW - 1, NOW)
    assert "age" not in {k.lower() for k, _ in new.headers}
    assert is_fresh(new, NOW + 3000)
    aged = updated_head(stored, [("ETag", '"x"'), ("Age", "600")], NOW - 1, NOW)  # an intermediary's own age
    assert dict(aged.headers)["Age"] == "600" and not is_fresh(aged, NOW + 3100)


# -- what a browser's cache would not serve (a review against Chromium's HttpResponseHeaders) ---------------

OLD = date(NOW - 30 * 24 * 3600)  # Last-Modified a month ago: three days of heuristic freshness


def test_a_response_that_says_pragma_no_cache_is_revalidated() -> None:
    stored = head(("Pragma", "no-cache"), ("Date", date(NOW)), ("Last-Modified", OLD), ("ETag", '"e"'))
    assert isinstance(decide("GET", [], [StoredEntry(1, stored)], NOW + 60), Revalidate)


@pytest.mark.parametrize("status", [204, 301, 404, 405, 410, 414, 501])
def test_heuristic_freshness_only_for_what_a_browser_guesses_for(status: int) -> None:
    stored = head(("Date", date(NOW)), ("Last-Modified", OLD), status=status)
    assert not isinstance(decide("GET", [], [StoredEntry(1, stored)], NOW + 60), Hit)
    assert isinstance(decide("GET", [], [StoredEntry(1, head(("Date", date(NOW)), ("Last-Modified", OLD)))],
                             NOW + 60), Hit)


def test_no_heuristic_freshness_with_must_revalidate() -> None:
    stored = head(("Cache-Control", "must-revalidate"), ("Date", date(NOW)), ("Last-Modified", OLD))
    assert not isinstance(decide("GET", [], [StoredEntry(1, stored)], NOW + 60), Hit)


def test_an_age_listed_twice_counts_its_first_member() -> None:
    stored = head(("Cache-Control", "max-age=3600"), ("Age", "7200, 7200"))
    assert not isinstance(decide("GET", [], [StoredEntry(1, stored)], NOW + 1), Hit)


def test_delta_seconds_of_thousands_of_digits_are_two_to_the_31st_not_an_error() -> None:
    huge = "9" * 5000
    assert parse_cache_control([f"max-age={huge}"]).max_age == MAX_DELTA
    assert parse_cache_control([f"max-age=000{'0' * 5000}7"]).max_age == 7
    assert current_age(head(("Age", huge)), NOW) == MAX_DELTA
    assert isinstance(decide("GET", [("Cache-Control", f"max-age={huge}")], [], NOW), Miss)


# -- invalid and conflicting freshness (RFC 9111 §1.2.2, §4.2.1) --------------------------------------------


def test_a_quoted_max_age_is_no_max_age_so_expires_or_the_heuristic_decide() -> None:
    # Last-Modified 1000 s before Date: 100 s of heuristic freshness, not the 600 quoted
    quoted = head(("Cache-Control", 'max-age="600"'), ("Date", date(NOW)), ("Last-Modified", date(NOW - 1000)))
    assert lifetime(quoted) == 100
    assert isinstance(decide("GET", [], [entry(quoted)], NOW + 99), Hit)
    assert isinstance(decide("GET", [], [entry(quoted)], NOW + 101), Revalidate)
    with_expires = head(("Cache-Control", 'max-age="600"'), ("Date", date(NOW)), ("Expires", date(NOW + 5)))
    assert lifetime(with_expires) == 5
    assert lifetime(head(("Cache-Control", 'max-age="600"'))) == 0  # nothing else: stale at once
    # a quoted request max-age is no constraint either (Chromium validates on "max-age=0" alone)
    assert isinstance(decide("GET", [("Cache-Control", 'max-age="0"')], [entry(head(FRESH))], NOW + 1), Hit)


@pytest.mark.parametrize("cache_control", [
    ["max-age=600, max-age=600"],  # given twice, even alike: invalid, stale (§4.2.1)
    ["max-age=600", "max-age=300"],  # over two field lines
    ["max-age=600, no-cache"],  # conflicting: the most restrictive wins
    ["max-age=abc"], ["max-age=-5"], ["max-age=1.5"], ["max-age="], ["max-age"],  # not a delta-seconds: stale
    ["max-age=0"], ["max-age=0, must-revalidate"], ["max-age=00"],
])
def test_invalid_repeated_or_conflicting_freshness_is_never_a_hit(cache_control: list[str]) -> None:
    stored = head(*[("Cache-Control", v) for v in cache_control], ("Expires", date(NOW + 3600)),
                  ("Date", date(NOW)), ("Last-Modified", date(NOW - 10**6)), ETAG)
    assert isinstance(decide("GET", [], [entry(stored)], NOW), Revalidate)
    assert isinstance(decide("GET", [], [entry(stored)], NOW + 1), Revalidate)


def test_two_expires_are_stale_and_max_age_over_an_invalid_expires_counts() -> None:
    assert lifetime(head(("Date", date(NOW)), ("Expires", date(NOW + 60)), ("Expires", date(NOW + 60)))) == 0
    assert lifetime(head(("Cache-Control", "max-age=60"), ("Expires", "0"))) == 60  # max-age wins (§5.3)


_OTHER = st.sampled_from([("Expires", date(NOW + 10**6)), ("Last-Modified", date(NOW - 10**8)), ("Date", date(NOW)),
                          ("Cache-Control", "public"), ("Cache-Control", "immutable"), ("Age", "0"),
                          ("Cache-Control", 'max-age="9999"'), ("Cache-Control", "stale-while-revalidate=999")])


@given(st.lists(_OTHER, max_size=5), st.sampled_from(["max-age=0", "MAX-AGE=0", "max-age=000"]),
       st.floats(0, 10**6, allow_nan=False), st.floats(0, 10, allow_nan=False), st.booleans())
def test_a_response_max_age_0_is_never_a_fresh_hit(others: list[tuple[str, str]], max_age: str, later: float,
                                                   delay: float, validator: bool) -> None:
    """Whatever else the response says (Expires far ahead, a Last-Modified for years of heuristic freshness), and
    at any age, 0 included: validated if it can be, fetched if not; never served as is."""
    stored = head(*others, ("Cache-Control", max_age), *([ETAG] if validator else []),
                  request_time=NOW - delay, response_time=NOW)
    decision = decide("GET", [], [entry(stored)], NOW + later)
    assert isinstance(decision, Revalidate if has_validator(stored) else Miss)


_REQUEST_FIELD = st.sampled_from([("Accept", "*/*"), ("Cache-Control", "max-age=600"), ("Cache-Control", "min-fresh=1"),
                                  ("Accept-Language", "en"), ("Cache-Control", "max-stale=99"), ("Pragma", "x")])
_FORCE = st.sampled_from([("Cache-Control", "no-cache"), ("Cache-Control", "NO-CACHE"), ("Pragma", "no-cache"),
                          ("Cache-Control", "max-age=600, no-cache"), ("pragma", "No-Cache"),
                          ("Cache-Control", 'no-cache="x"')])


@given(st.lists(_REQUEST_FIELD, max_size=4), _FORCE, st.integers(0, 4), st.floats(0, 10**6, allow_nan=False),
       st.integers(0, 3))
def test_a_no_cache_request_is_fetched_in_full_and_drops_what_is_stored(
        fields: list[tuple[str, str]], force: tuple[str, str], at: int, later: float, n: int) -> None:
    """Fresh or not, with a validator or not, whatever else the request says: a full fetch (no conditional fields
    to add: Miss, not Revalidate), and the URL's stored entries dropped whenever there are any."""
    request = [*fields[:at], force, *fields[at:]]
    stored = [entry(head(("Cache-Control", "max-age=3600"), ETAG, ("Last-Modified", date(NOW - 10))), i)
              for i in range(n)]
    assert decide("GET", request, stored, NOW + later) == Miss(drop=n > 0)


@given(st.lists(_REQUEST_FIELD, max_size=4), st.sampled_from(["max-age=0", "Max-Age=0, x", "max-age=abc"]),
       st.floats(0, 30, allow_nan=False))
def test_a_request_max_age_0_revalidates_even_a_brand_new_entry(
        fields: list[tuple[str, str]], directive: str, later: float) -> None:
    request = [f for f in fields if f[0] != "Cache-Control"] + [("Cache-Control", directive)]
    stored = entry(head(("Cache-Control", "max-age=3600"), ETAG))
    assert isinstance(decide("GET", request, [stored], NOW + later), Revalidate)
    assert decide("GET", request, [entry(head(("Cache-Control", "max-age=3600")))], NOW + later) == Miss()


# -- what a 304 updates (RFC 9111 §3.2, §4.3.4) --------------------------------------------------------------

_STORED_304 = [("Content-Type", "text/css"), ("ETag", 'W/"x"'), ("Last-Modified", date(NOW - 500)),
               ("Content-Encoding", "gzip"), ("Content-Length", "1234"), ("Content-Location", "/a.css"),
               ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"), ("Cache-Control", "max-age=1"),
               ("X-Old", "1")]
_NOT_UPDATED = {"content-type", "etag", "content-encoding", "content-length", "content-location",
                "x-content-type-options", "x-frame-options"}
_IN_304 = st.sampled_from([("Content-Type", "text/html"), ("ETag", '"x"'), ("Last-Modified", date(NOW - 100)),
                           ("Content-Encoding", "br"), ("Content-Length", "0"), ("Cache-Control", "max-age=600"),
                           ("X-Content-Type-Options", "sniff"), ("X-Frame-Options", "ALLOWALL"), ("X-New", "2"),
                           ("Date", date(NOW)), ("Set-Cookie", "a=b"), ("Content-Location", "/b.css"),
                           ("Expires", date(NOW + 60)), ("Vary", "Accept")])


@given(st.lists(_IN_304, max_size=8, unique_by=lambda f: f[0]))
def test_a_304_updates_what_it_carries_and_keeps_the_rest(not_modified: list[tuple[str, str]]) -> None:
    """Every stored field the 304 does not carry is kept; the fields that describe the stored bytes (and the rest
    of the list a browser's cache keeps: Chromium's kNonUpdatedHeaders) are kept even when it carries them; every
    other field it carries replaces the stored one; Set-Cookie is never stored."""
    stored = head(*_STORED_304, request_time=NOW - 100, response_time=NOW - 100)
    new = updated_head(stored, not_modified, NOW - 1, NOW)
    got = {k.lower(): v for k, v in new.headers}
    assert len(got) == len(new.headers)  # one line per field: replaced, not added beside
    sent = {k.lower(): v for k, v in not_modified}
    for k, v in _STORED_304:
        assert got[k.lower()] == (sent[k.lower()] if k.lower() in sent and k.lower() not in _NOT_UPDATED else v)
    for k, v in sent.items():
        if k not in _NOT_UPDATED and k != "set-cookie":
            assert got[k] == v
    assert "set-cookie" not in got


def test_a_304_without_content_fields_serves_the_stored_ones() -> None:
    """What nginx sends in a 304 (no Content-Type, Content-Length or Content-Encoding) refreshes the entry; the
    body's fields stay as stored."""
    stored = head(*_STORED_304, request_time=NOW - 100, response_time=NOW - 100)
    nginx_304 = [("Server", "nginx"), ("Date", date(NOW)), ("Last-Modified", date(NOW - 500)),
                 ("Connection", "keep-alive"), ("ETag", '"x"'), ("Cache-Control", "max-age=600")]
    assert validates(stored, nginx_304)
    new = updated_head(stored, nginx_304, NOW - 1, NOW)
    got = dict(new.headers)
    assert got["Content-Type"] == "text/css" and got["Content-Length"] == "1234"
    assert got["Content-Encoding"] == "gzip" and got["ETag"] == 'W/"x"'  # the stored body's (weak) tag
    assert got["Cache-Control"] == "max-age=600" and got["Server"] == "nginx" and "Connection" not in got
    assert is_fresh(new, NOW + 598)  # 600 s from the 304, less its 1 s round trip
