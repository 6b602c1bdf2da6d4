"""The flight's plan (prefetch/plan.py): stable learned requests confident, the newest load's others as
guesses, discovered ones only with fields a learned load of the same origin, destination and mode showed,
conditional fonts only when learned, nothing credentialed, no fetch()/XHR, ordered by wave then render-blocking
first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.prefetch.budget import FIRST_VISIT_TOTAL, Limits, limits_for
from lanefetch.prefetch.fidelity import SCRIPT_DESTINATION
from lanefetch.prefetch.learned import History, Observed, observe, remember
from lanefetch.prefetch.load_log import observe_request
from lanefetch.prefetch.plan import plan
from lanefetch.prefetch.resource import Subresource

ORG = "https://www.example.org"
CDN = "https://cdn.example.net"
STYLE = [("Accept", "text/css,*/*;q=0.1"), ("Sec-Fetch-Dest", "style"), ("Sec-Fetch-Mode", "no-cors"),
         ("Sec-Fetch-Site", "same-origin")]
IMAGE = [("Accept", "image/*"), ("Sec-Fetch-Dest", "image"), ("Sec-Fetch-Mode", "no-cors"),
         ("Sec-Fetch-Site", "same-origin")]
FONT = [("Accept", "*/*"), ("Sec-Fetch-Dest", "font"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Site", "cross-site"),
        ("Origin", ORG)]


def css(name: str, wave: int = 1, size: int = 1000, cookie: bool = False) -> Observed:
    return observe(f"{ORG}/{name}", "style", "no-cors", wave, [*STYLE, *([("Cookie", "s=1")] if cookie else [])], size)


def img(name: str, wave: int = 1, size: int = 5000) -> Observed:
    return observe(f"{ORG}/{name}", "image", "no-cors", wave, IMAGE, size)


def font(name: str, wave: int = 2, size: int = 20000) -> Observed:
    return observe(f"{CDN}/{name}", "font", "cors", wave, FONT, size)


def _history(*loads: list[Observed], pages: list[str] | None = None) -> History:
    h: History | None = None
    for n, load in reversed(list(enumerate(loads))):  # given newest first
        h = remember(h, load, 1.0, pages[n] if pages else "u:page")
    assert h is not None
    return h


def test_no_history_plans_nothing_even_with_discoveries() -> None:
    p = plan(None, None, [(Subresource(f"{ORG}/a.css", "style", "no-cors", "include", f"{ORG}/"), 1)])
    assert p.items == []
    assert p.limits == limits_for(None)


def test_stable_confident_newest_others_guesses_credentialed_never() -> None:
    newest = [img("logo.png"), css("a.css"), font("f.woff2"), img("hero-2.jpg"), css("private.css", cookie=True)]
    older = [css("a.css"), img("logo.png"), font("f.woff2"), img("hero-1.jpg"), css("private.css", cookie=True)]
    p = plan(_history(newest, older), None, [])
    assert [(i.url.rsplit("/", 1)[1], i.confident, i.resource_type) for i in p.items] == [
        ("a.css", True, "stylesheet"), ("logo.png", True, "image"), ("hero-2.jpg", False, "image"),
        ("f.woff2", True, "font")]
    assert p.items[0].headers == sorted((k.lower(), v) for k, v in STYLE)
    assert p.items[0].expected_size == 1000
    assert p.limits == limits_for(1000 + 5000 + 20000 + 5000 + 1000)


def test_a_learned_page_with_a_size_not_known_may_hold_what_a_first_visit_may() -> None:
    # rust-book-print's highlight.js, left to the browser's warm connection when learned: its 1.08 MB were not among
    # the page's bytes, and twice those cut the second visit's flight midway
    left = observe(f"{ORG}/highlight.js", "script", "no-cors", 1, STYLE, None)
    loads = [css("a.css"), img("logo.png"), left]
    p = plan(_history(loads, loads), None, [])
    assert p.limits == limits_for(6000, sizes_unknown=True)
    assert p.limits.total == FIRST_VISIT_TOTAL and p.limits == Limits(limits_for(6000).speculative, FIRST_VISIT_TOTAL)
    # one of unknown size the flight never asks for (it carries a Cookie): the page's bytes are its measure
    private = observe(f"{ORG}/private.js", "script", "no-cors", 1, [*STYLE, ("Cookie", "s=1")], None)
    loads = [css("a.css"), img("logo.png"), private]
    p = plan(_history(loads, loads), None, [])
    assert [i.url.rsplit("/", 1)[1] for i in p.items] == ["a.css", "logo.png"]
    assert p.limits == limits_for(6000)


def test_discovered_take_learned_fields_of_the_same_origin_destination_and_mode() -> None:
    h = _history([css("a.css"), img("logo.png"), font("f.woff2")])
    found = [
        (Subresource(f"{ORG}/new.css", "style", "no-cors", "include", f"{ORG}/"), 1),  # fields known: planned
        (Subresource(f"{ORG}/mod.js", "script", "cors", "same-origin", f"{ORG}/"), 1),         # no script learned
        (Subresource(f"{CDN}/other.css", "style", "no-cors", "include", f"{ORG}/"), 1),      # other origin
        (Subresource(f"{CDN}/g.woff2", "font", "cors", "same-origin", f"{ORG}/a.css", True), 2),  # font not learned
        (Subresource(f"{CDN}/f.woff2", "font", "cors", "same-origin", f"{ORG}/a.css", True), 2),  # learned: a guess
    ]
    p = plan(h, None, found)
    assert [(i.url, i.confident) for i in p.items] == [
        (f"{ORG}/new.css", True), (f"{ORG}/a.css", False), (f"{ORG}/logo.png", False), (f"{CDN}/f.woff2", False)]
    new = next(i for i in p.items if i.url.endswith("new.css"))
    assert new.headers == sorted((k.lower(), v) for k, v in STYLE) and new.expected_size is None


def test_a_discovered_request_a_load_learned_carries_its_learned_size() -> None:
    # one page of the shape asked for the italic font, the other did not: not shared, but learned, so a stylesheet
    # naming it makes it a guess, weighed by the budget at its learned size before it is sent
    shape = _history([css("a.css"), font("italic.woff2", size=60000)], [css("a.css")], pages=["u:core", "u:alloc"])
    italic = Subresource(f"{CDN}/italic.woff2", "font", "cors", "same-origin", f"{ORG}/a.css", True)
    p = plan(None, None, [(italic, 2)], shape=shape)
    assert [(i.url.rsplit("/", 1)[1], i.confident, i.expected_size) for i in p.items] == [
        ("a.css", True, 1000), ("italic.woff2", False, 60000)]


def test_template_history_adds_assets_stable_across_its_pages() -> None:
    page = _history([css("a.css"), img("p1.png")], [css("a.css"), img("p1.png")])
    # the template's loads: page 2 twice, then page 3; p2.png is in two loads but of one page only
    template = _history([css("a.css"), img("shared.png"), img("p2.png")], [css("a.css"), img("shared.png"),
                        img("p2.png")], [css("a.css"), img("shared.png")], pages=["u:p2", "u:p2", "u:p3"])
    p = plan(page, template, [])
    assert [(i.url.rsplit("/", 1)[1], i.confident) for i in p.items] == [
        ("a.css", True), ("p1.png", True), ("shared.png", True)]


def test_a_new_page_of_a_known_shape_plans_what_every_load_of_the_shape_shared() -> None:
    # the shape's loads, newest first: an article, another article, the index (no font); a credentialed stylesheet
    shape = _history([css("a.css"), img("two.png"), font("f.woff2"), css("private.css", cookie=True)],
                     [font("f.woff2"), css("a.css"), img("one.png"), css("private.css", cookie=True)],
                     [css("a.css"), img("index.png"), css("private.css", cookie=True)],
                     pages=["u:two", "u:one", "u:index"])
    p = plan(None, None, [], shape=shape)
    assert [(i.url.rsplit("/", 1)[1], i.confident) for i in p.items] == [("a.css", True)]
    assert p.limits == limits_for(None)  # another page's bytes are not this page's measure
    # without the index, the font is shared too; a page's own images never are
    p = plan(None, None, [], shape=_history(*shape.loads[:2], pages=["u:two", "u:one"]))
    assert [(i.url.rsplit("/", 1)[1], i.confident) for i in p.items] == [("a.css", True), ("f.woff2", True)]
    # one page's loads share nothing yet
    assert plan(None, None, [], shape=_history(*shape.loads[:2], pages=["u:one", "u:one"])).items == []


def test_order_by_wave_then_render_blocking_then_confident_first() -> None:
    load = [img("i.png", 1), font("f.woff2", 2), css("late.css", 2), css("a.css", 1),
            observe(f"{ORG}/app.js", "script", "no-cors", 1, IMAGE, 10)]
    p = plan(_history(load, load), None, [])
    assert [i.url.rsplit("/", 1)[1] for i in p.items] == ["a.css", "app.js", "i.png", "late.css", "f.woff2"]


def test_a_discovered_guess_is_planned_as_a_guess_without_having_been_learned() -> None:
    """A background image discovery expects (Subresource.guess) needs no learned load of its own, only fields: it is
    planned, but as a guess (the speculative budget), not as confident."""
    h = _history([css("a.css"), img("logo.png")])
    found = [(Subresource(f"{ORG}/note.png", "image", "no-cors", "include", f"{ORG}/a.css", guess=True), 2)]
    p = plan(h, None, found)
    assert (f"{ORG}/note.png", False) in [(i.url, i.confident) for i in p.items]


FETCH = [("Accept", "*/*"), ("Sec-Fetch-Dest", "empty"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Site", "same-origin")]


def test_a_learned_fetch_or_xhr_is_never_planned() -> None:
    # A page's script asked for /api/news in every load (Chromium's paused requests carry no Sec-Fetch-Dest: its
    # resource type says fetch or xhr): stable, but no prefetch may answer it (fidelity.py: its cache mode is not
    # seen), so flying it would only waste its bytes. The page's image, learned alike, is planned.
    chromium = [observe_request("GET", f"{ORG}/api/news", [("Accept", "*/*")], kind, 2, 800)
                for kind in ("fetch", "xhr")]
    assert all(o is not None and o.destination == SCRIPT_DESTINATION for o in chromium)
    loads = [img("logo.png"), *(o for o in chromium if o is not None),
             observe(f"{CDN}/feed.json", "empty", "cors", 2, FETCH, 300)]
    h = _history(loads, loads)
    assert [i.url for i in plan(h, None, []).items] == [f"{ORG}/logo.png"]
    assert [i.url for i in plan(None, _history(loads, loads, pages=["u:a", "u:b"]), []).items] == [f"{ORG}/logo.png"]
    assert [i.url for i in plan(None, None, [], shape=_history(loads, loads, pages=["u:a", "u:b"])).items] == [
        f"{ORG}/logo.png"]
    # the newest load's others are guesses: a fetch there is none either
    assert [i.url for i in plan(_history(loads), None, []).items] == [f"{ORG}/logo.png"]


def test_a_discovered_preload_as_fetch_is_never_planned() -> None:
    # `<link rel=preload as=fetch>`: the browser's request for it is a script's kind in Firefox (Sec-Fetch-Dest
    # empty) and may be in Chromium; a prefetch never answers those. Its fields are learned (api/a): still not.
    learned = _history([img("logo.png"), observe(f"{ORG}/api/a", "empty", "cors", 2, FETCH, 300)])
    found = [(Subresource(f"{ORG}/api/b", "empty", "cors", "same-origin", f"{ORG}/"), 1),
             (Subresource(f"{ORG}/hero.png", "image", "no-cors", "include", f"{ORG}/"), 1)]
    p = plan(learned, None, found, page_url=f"{ORG}/")
    assert [i.url for i in p.items] == [f"{ORG}/hero.png", f"{ORG}/logo.png"]


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["style", "image", "empty", "script"]),
                          st.integers(min_value=1, max_value=3)), max_size=8),
       st.integers(min_value=1, max_value=3))
def test_no_plan_holds_a_script_request(items: list[tuple[str, str, int]], loads: int) -> None:
    """Whatever a page's loads asked for, its plan holds nothing of destination `empty` (fetch()/XHR), and everything
    else of the newest load is planned."""
    kinds = {"style": STYLE, "image": IMAGE, "empty": FETCH, "script": STYLE}
    load = [observe(f"{ORG}/{name}.{dest}", dest, "cors" if dest == "empty" else "no-cors", wave, kinds[dest], 100)
            for name, dest, wave in items]
    p = plan(_history(*[load] * loads), None, [])
    assert {i.url for i in p.items} == {o.url for o in load if o.destination != SCRIPT_DESTINATION}
    assert all(i.resource_type not in ("fetch", "xhr") for i in p.items)
