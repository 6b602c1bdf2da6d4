"""Learned pages (prefetch/learned.py): page and template keys, what counts as stable over the last loads,
what of a request is kept (never credential values), and records that survive encoding and refuse garbage."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.fetcher import Page
from lanefetch.prefetch.field_profile import decode as decode_profile
from lanefetch.prefetch.learned import (
    MAX_LOADS,
    RECORD_TTL,
    History,
    Observed,
    decode,
    encode,
    may_learn,
    observe,
    page_bytes,
    page_keys,
    remember,
    shared,
    stable,
)

HEADERS = [("Accept", "text/css,*/*;q=0.1"), ("Sec-Fetch-Dest", "style"), ("Sec-Fetch-Mode", "no-cors"),
           ("Referer", "https://www.example.org/"), ("Cookie", "sid=secret"), ("User-Agent", "UA")]


def _o(name: str, wave: int = 1, size: int | None = 100) -> Observed:
    return observe(f"https://www.example.org/{name}", "style", "no-cors", wave, [("Accept", "*/*")], size)


def test_observe_keeps_replayed_fields_and_only_the_presence_of_credentials() -> None:
    item = observe("https://www.example.org/a.css", "style", "no-cors", 1, HEADERS, 10)
    assert item.headers == (("accept", "text/css,*/*;q=0.1"), ("sec-fetch-dest", "style"),
                            ("sec-fetch-mode", "no-cors"), ("user-agent", "UA"))
    assert item.credentialed
    assert "secret" not in encode(History([[item]], 1.0))
    assert not observe("https://x/", "image", "no-cors", 1, [("Accept", "*/*")]).credentialed
    assert observe("https://x/", "image", "no-cors", 1, [("authorization", "Basic x")]).credentialed


@pytest.mark.parametrize(
    ("url", "sheets", "exact", "template"),
    [
        ("https://WWW.Example.org/news/2026/11/a-title.html?ref=x#top", ["/s.css"],
         "u:https://www.example.org/news/2026/11/a-title.html?ref=x", "t:https://www.example.org/news/*/*/*.html"),
        ("https://www.example.org/news/2025/01/other.html", ["/s.css"],
         "u:https://www.example.org/news/2025/01/other.html", "t:https://www.example.org/news/*/*/*.html"),
        ("https://www.example.org/about.html", ["/s.css"], "u:https://www.example.org/about.html",
         "t:https://www.example.org/*.html"),
        ("https://www.example.org/docs/", ["/s.css"], "u:https://www.example.org/docs/",
         "t:https://www.example.org/docs/"),
        ("http://h.example:8080/a/b", ["/s.css"], "u:http://h.example:8080/a/b", "t:http://h.example:8080/a/*"),
        ("https://www.example.org/x", None, "u:https://www.example.org/x", None),
    ],
)
def test_page_keys(url: str, sheets: list[str] | None, exact: str, template: str | None) -> None:
    keys = page_keys(url, sheets)
    assert keys is not None
    assert keys.exact == exact
    if template is None:
        assert keys.template is None
    else:
        assert keys.template is not None and keys.template.split("#")[0] == template
        # the shape: the template's origin and path shape, known without the stylesheets
        assert keys.shape == "s:" + template.removeprefix("t:")
        assert page_keys(url, None) == type(keys)(exact, None, keys.shape)


def test_template_depends_on_the_stylesheet_set_not_its_order() -> None:
    a = page_keys("https://o.example/n/1", ["/a.css", "/b.css"])
    b = page_keys("https://o.example/n/2", ["/b.css", "/a.css", "/a.css"])
    c = page_keys("https://o.example/n/3", ["/a.css"])
    assert a is not None and b is not None and c is not None
    assert a.template == b.template != c.template
    assert page_keys("data:text/html,x") is None
    assert page_keys("not a url") is None


def test_stable_needs_two_loads_one_of_them_the_newest() -> None:
    h = remember(None, [_o("app.1.js"), _o("a.css"), _o("once.png", 2)], 1.0)
    assert stable(h) == []  # one load proves nothing
    h = remember(h, [_o("a.css"), _o("app.1.js"), _o("font.woff2", 2)], 2.0)
    assert [i.url.rsplit("/", 1)[1] for i in stable(h)] == ["a.css", "app.1.js"]
    # a deploy renamed the script: the old name is in two loads but not the newest: not stable
    h = remember(h, [_o("a.css"), _o("app.2.js"), _o("font.woff2", 2)], 3.0)
    assert [i.url.rsplit("/", 1)[1] for i in stable(h)] == ["a.css", "font.woff2"]


def test_stable_is_ordered_by_wave_then_by_the_newest_load() -> None:
    load = [_o("img.png", 2), _o("a.css", 1), _o("font.woff2", 3), _o("b.js", 1)]
    h = remember(remember(None, load, 1.0), load, 2.0)
    assert [i.url.rsplit("/", 1)[1] for i in stable(h)] == ["a.css", "b.js", "img.png", "font.woff2"]


def test_shared_is_what_every_kept_load_of_two_pages_or_more_asked_for() -> None:
    h = remember(None, [_o("a.css"), _o("app.js"), _o("one.png", 2)], 1.0, "u:one")
    assert shared(h) == []  # one page proves nothing
    h = remember(h, [_o("a.css"), _o("app.js"), _o("one.png", 2)], 2.0, "u:one")
    assert shared(h) == []  # nor two loads of it: its own image is not the site's
    h = remember(h, [_o("font.woff2", 3), _o("app.js"), _o("a.css"), _o("two.png", 2)], 3.0, "u:two")
    assert [i.url.rsplit("/", 1)[1] for i in shared(h)] == ["app.js", "a.css"]  # the newest load's order
    # an index page of the same shape without the script: only what all asked for is left
    h = remember(h, [_o("a.css"), _o("index.png", 2)], 4.0, "u:index")
    assert [i.url.rsplit("/", 1)[1] for i in shared(h)] == ["a.css"]


@given(st.lists(st.tuples(st.sampled_from(["u:1", "u:2", "u:3"]),
                          st.lists(st.sampled_from(["a.css", "b.js", "c.png", "d.woff2"]), max_size=4)),
                max_size=8))
def test_shared_items_are_in_every_kept_load_of_two_pages_or_more(loads: list[tuple[str, list[str]]]) -> None:
    h: History | None = None
    for n, (page, names) in enumerate(loads):
        h = remember(h, [_o(name) for name in names], float(n), page)
    if h is None:
        return
    got = shared(h)
    assert len({i.key for i in got}) == len(got)
    if got:
        assert len(set(h.pages)) >= 2
    for item in got:
        assert all(item.key in {i.key for i in load} for load in h.loads)
    # and nothing that every kept load asked for is left out, once two pages are among them
    if len(set(h.pages)) >= 2:
        every = set.intersection(*({i.key for i in load} for load in h.loads))
        assert {i.key for i in got} == every


def test_history_is_bounded_and_repeats_dropped() -> None:
    h: History | None = None
    for i in range(MAX_LOADS + 3):
        h = remember(h, [_o("a.css"), _o("a.css"), _o(f"only-{i}.png")], float(i))
    assert h is not None
    assert len(h.loads) == MAX_LOADS
    assert [len(load) for load in h.loads] == [2] * MAX_LOADS
    assert h.loads[0][1].url.endswith(f"only-{MAX_LOADS + 2}.png")
    assert page_bytes(h) == 200
    assert page_bytes(History()) is None



def test_may_learn() -> None:
    assert may_learn(Page(top_site="https://example.org"))
    assert not may_learn(Page(top_site="https://example.org", private_browsing=True))
    assert not may_learn(Page(top_site=""))


_ITEMS = st.builds(
    observe, st.sampled_from(["https://a.example/x.css", "https://b.example/y.js", "https://a.example/z.png"]),
    st.sampled_from(["style", "script", "image", "font"]), st.sampled_from(["no-cors", "cors"]), st.integers(0, 5),
    st.lists(st.tuples(st.sampled_from(["Accept", "Origin", "Cookie", "X-Other", "sec-fetch-site"]),
                       st.text(max_size=8)), max_size=4),
    st.one_of(st.none(), st.integers(0, 10**7)), st.one_of(st.none(), st.integers(0, 10**7)))


@given(st.lists(st.lists(_ITEMS, max_size=6), max_size=7), st.floats(0, 1e9))
def test_encode_decode_round_trip(loads: list[list[Observed]], now: float) -> None:
    h: History | None = None
    for load in loads:
        h = remember(h, load, now)
    if h is None:
        return
    assert decode(encode(h), now) == h
    assert decode(encode(h), now + RECORD_TTL + 1) is None  # expired
    assert decode(encode(h), now - 1) is None  # from the future


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["v", "at", "h", "loads"]), c),
                    max_leaves=20))
def test_decode_refuses_garbage_without_raising(raw: object) -> None:
    decode(json.dumps(raw), 0.0)
    decode("{not json", 0.0)


def test_an_answer_from_the_cache_keeps_what_it_put_on_the_link_when_it_last_came_over_it() -> None:
    def css(size: int, wire: int | None) -> Observed:
        return observe("https://a.example/s.css", "style", "no-cors", 1, [], size, wire)
    h = remember(None, [css(22_880, 5_303), _o("x.png", size=900)], 1.0)
    h = remember(h, [css(22_880, None), _o("x.png", size=900)], 2.0)  # both from the helper's cache this time
    assert [(o.size, o.wire) for o in h.loads[0]] == [(22_880, 5_303), (900, None)]
    h = remember(h, [css(23_000, None)], 3.0)  # another size: another answer, its bytes on the link not known
    assert h.loads[0][0].wire is None
    h = remember(h, [css(22_880, 5_400)], 4.0)  # came over the link again: its own count
    assert h.loads[0][0].wire == 5_400


def test_an_answer_of_unknown_size_keeps_the_size_and_link_bytes_of_an_older_load() -> None:
    # Handed to the browser's warm connection (load_log), a script's size is not known this time.
    def js(size: int | None, wire: int | None) -> Observed:
        return observe("https://a.example/v.js", "script", "no-cors", 2, [], size, wire)

    h = remember(None, [js(1_200, 700)], 1.0)
    h = remember(h, [js(None, None)], 2.0)
    assert (h.loads[0][0].size, h.loads[0][0].wire) == (1_200, 700)
    assert (remember(None, [js(None, None)], 1.0).loads[0][0].size) is None, "never known: stays unknown"


def test_a_record_kept_before_wire_sizes_were_learned_still_reads() -> None:
    record = json.loads(encode(History([[observe("https://a.example/s.css", "style", "no-cors", 1, [], 900, 300)]],
                                       5.0, ["https://a.example/"])))
    assert record["loads"][0][0][-2:] == [900, 300]
    record["loads"][0][0] = record["loads"][0][0][:-1]  # as written before: seven entries
    h = decode(json.dumps(record), 5.0)
    assert h is not None and (h.loads[0][0].size, h.loads[0][0].wire) == (900, None)
    record["loads"][0][0] += [300, "x"]  # nine: not ours
    assert decode(json.dumps(record), 5.0) is None


def test_decode_refuses_a_credential_field() -> None:
    record = json.loads(encode(History([[_o("a.css")]], 5.0)))
    record["h"][0].append(["cookie", "sid=1"])
    assert decode(json.dumps(record), 5.0) is None


@given(st.sampled_from(["https://a.example/x/y.html", "http://b.example:8080/", "https://c.example/n/1/2"]),
       st.text(alphabet="abc=&", max_size=6), st.text(alphabet="xyz", max_size=4))
def test_keys_ignore_the_fragment_and_templates_ignore_the_query(url: str, query: str, fragment: str) -> None:
    sheets = ["https://a.example/s.css"]
    plain = page_keys(url, sheets)
    varied = page_keys(f"{url}?{query}#{fragment}", sheets)
    assert plain is not None and varied is not None
    assert varied.template == plain.template
    assert page_keys(f"{url}#{fragment}", sheets) == plain


@pytest.mark.parametrize("record", [
    '{"v":1,"at":1' + "0" * 400 + ',"h":[],"loads":[],"p":[]}',  # an integer no float holds: OverflowError
    "[" * 100_000,  # nested past the JSON decoder's recursion limit: RecursionError
])
def test_decode_refuses_a_record_whose_numbers_or_nesting_break_the_decoder(record: str) -> None:
    # A record that raised here failed the page's recall, and every later record() of the page (its update decodes
    # the kept record first): the page was never learned again.
    assert decode(record, 5.0) is None
    assert decode_profile(record, 5.0) is None
