"""discover_backgrounds.py: a stylesheet's background rules, and the images a document's elements are expected to
show (guesses): matched by lexbor, each element's cascade winner found, hidden elements left out; the media flags
discover_html.py and discover_css.py give stylesheets."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.prefetch.discover_backgrounds import UNLAYERED, BackgroundRule, background_rules, expected_backgrounds
from lanefetch.prefetch.discover_css import discover_css
from lanefetch.prefetch.discover_html import discover_html
from lanefetch.prefetch.discover_worker import Discoverer, read_stylesheet
from waits import until

SHEET = "https://example.org/static/site.css"
PAGE = "https://example.org/docs/page.html"
S = "https://example.org/static/"


def urls(css: bytes, html: bytes) -> list[str]:
    found = expected_backgrounds(html, "utf-8", background_rules(css, SHEET))
    assert all(s.guess and s.destination == "image" and s.mode == "no-cors" and s.initiator == SHEET for s in found)
    return [s.url for s in found]


def test_rules_keep_selectors_specificity_and_the_winning_background_declaration() -> None:
    css = (b".note, div.admonition { color: red; background: url(a.png) no-repeat; background-image: url('b.png') }"
           b"#top > p.x { background: none }"
           b"@media screen { .s { background: url(/s.png) } }"
           b"@media print { .p { background: url(p.png) } }"
           b"@media (max-width: 600px) { .m { background: url(m.png) } }"
           b"@layer base { .l { background-image: url(l.png) } }"
           b"a:hover { background: url(h.png) } p::before { background: url(b4.png) }"
           b"li:first-child { background: url(f.png) } .i { background: url(i.png) !important; background: none }"
           b".frag { background: url(#f) } .c { color: blue } /* .x { background: url(comment.png) } */")
    rules = background_rules(css, SHEET)
    assert [(r.selector, r.specificity, r.order, r.urls, r.important, r.layer != UNLAYERED) for r in rules] == [
        (".note", (0, 1, 0), 0, (S + "b.png",), False, False),
        ("div.admonition", (0, 1, 1), 1, (S + "b.png",), False, False),
        ("#top > p.x", (1, 1, 1), 2, (), False, False),
        (".s", (0, 1, 0), 3, ("https://example.org/s.png",), False, False),
        (".l", (0, 1, 0), 4, (S + "l.png",), False, True),
        ("li:first-child", (0, 1, 1), 5, (S + "f.png",), False, False),
        (".i", (0, 1, 0), 6, (S + "i.png",), True, False),
        (".frag", (0, 1, 0), 7, (), False, False),
    ]


def test_a_selector_list_splits_at_its_top_level_commas_only() -> None:
    rules = background_rules(b":is(.a, .b) .c, .x:not(.a, .b), [title='a,b'] { background: url(i.png) }", SHEET)
    assert [r.selector for r in rules] == [":is(.a, .b) .c", ".x:not(.a, .b)", '[title="a,b"]']
    assert urls(b":is(.a, .b) .c { background: url(i.png) }", b"<body><p class=a>no c inside</p>") == []
    assert urls(b".x:not(.a, .b) { background: url(i.png) }", b"<body><p class='x b'>excluded</p>") == []
    assert urls(b"[title='a,b'] { background: url(i.png) }", b"<body><p title=a>other title</p>") == []


def test_an_image_is_expected_where_its_selector_matches_a_shown_element() -> None:
    css = b"body { background: url(bg.png) } .note { background: url(note.png) } .absent { background: url(x.png) }"
    assert urls(css, b"<!doctype html><body><div class=note>n</div></body>") == [S + "bg.png", S + "note.png"]
    assert urls(css, b"<body><div hidden><p class=note>n</p></div>") == [S + "bg.png"]
    assert urls(css, b"<body><p class=note style='display:\tnone'>n</p>") == [S + "bg.png"]
    assert urls(css, b"<body><details><summary>s</summary><p class=note>n</p></details>") == [S + "bg.png"]
    assert urls(css, b"<body><dialog><p class=note>n</p></dialog><input class=note type=hidden>") == [S + "bg.png"]
    # inert or script-only markup is no element; the head is not rendered
    assert urls(b".note { background: url(note.png) } :empty { background: url(e.png) }",
                b"<head><meta charset=utf-8></head><body><template><p class=note></p></template>"
                b"<noscript><p class=note></p></noscript>text</body>") == []


def test_what_the_stylesheets_hide_or_an_inline_style_overrides_shows_no_image() -> None:
    css = (b".modal { display: none; background: url(overlay.png) } .menu { display: none }"
           b" .menu li { background: url(arrow.png) } .own { background: url(own.png) }")
    assert urls(css, b"<body><div class=modal>m</div><ul class=menu><li>x</li></ul>") == []
    assert urls(css, b"<body><p class=own style='background: none'>p</p>") == []
    assert urls(css, b"<body><p class=own>p</p>") == [S + "own.png"]


def test_a_hidden_body_shows_no_image() -> None:
    # <body> is an element like any other: `hidden`, an inline or a rule's `display: none` hides what it holds
    css = b".note { background: url(note.png) }"
    assert urls(css, b"<body hidden><div><p class=note>n</p></div></body>") == []
    assert urls(css, b"<body style='display: none'><p class=note>n</p></body>") == []
    assert urls(b"body { display: none } " + css, b"<body><div><p class=note>n</p></div></body>") == []


def test_the_rule_that_wins_the_cascade_decides() -> None:
    css = (b".admonition { background: url(note.png) } .admonition.warning { background: url(warn.png) }"
           b" .plain { background: url(plain.png) } .plain { background: none }")
    assert urls(css, b"<body><div class='admonition warning'>w</div><p class=plain>p</p>") == [S + "warn.png"]
    assert urls(css, b"<body><div class='admonition warning'>w</div><div class=admonition>n</div>") == [
        S + "note.png", S + "warn.png"]
    # !important beats specificity; an unlayered rule beats a layered one
    assert urls(b".a { background: none !important } .a.b { background: url(i.png) }", b"<body><p class='a b'>") == []
    assert urls(b".a { background: url(i.png) !important } .a.b { background: none }", b"<body><p class='a b'>") == [
        S + "i.png"]
    assert urls(b"@layer x { .a.b { background: url(i.png) } } .a { background: none }", b"<body><p class='a b'>") == []
    # another stylesheet's rule of equal rank: their order is not known here, so no guess
    other = background_rules(b".plain { background: url(other.png) }", "https://example.org/other.css")
    mine = background_rules(b".plain { background: url(mine.png) }", SHEET)
    assert expected_backgrounds(b"<body><p class=plain>", None, [*mine, *other]) == []


def test_a_selector_lexbor_does_not_take_is_no_guess_and_a_long_sheet_yields_none() -> None:
    assert urls(b"p:nth-child(wrong) { background: url(a.png) } [=bad] { background: url(b.png) }",
                b"<body><p class=x>1</p>") == []
    many = b"".join(b".c%d { background: url(i%d.png) }" % (i, i) for i in range(1001))
    assert background_rules(many, SHEET) == []


def test_stylesheets_say_whether_they_apply_to_the_screen() -> None:
    html = (b"<link rel=stylesheet href=a.css><link rel=stylesheet href=p.css media=print>"
            b"<link rel=stylesheet href=s.css media=' Screen '>"
            b"<link rel=stylesheet href=m.css media='(max-width:1px)'>")
    assert [(s.url.rsplit("/", 1)[1], s.screen) for s in discover_html(html, PAGE)] == [
        ("a.css", True), ("p.css", False), ("s.css", True), ("m.css", False)]
    css = b'@import "a.css"; @import url(b.css) screen; @import "p.css" print; @import "l.css" layer(x);'
    assert [(s.url.rsplit("/", 1)[1], s.screen) for s in discover_css(css, SHEET)] == [
        ("a.css", True), ("b.css", True), ("p.css", False), ("l.css", False)]


names = st.sampled_from(["a", "b", "c"])


def _matches(selector: str, classes: list[str]) -> bool:
    return set(selector.strip(".").split(".")) <= set(classes)


@settings(max_examples=80, deadline=None)
@given(rules=st.lists(st.tuples(st.lists(names, min_size=1, max_size=2, unique=True),
                                st.sampled_from(["url(i1.png)", "url(i2.png)", "none"]), st.booleans()), max_size=5),
       elements=st.lists(st.tuples(st.lists(names, max_size=3, unique=True), st.booleans()), max_size=5))
def test_the_guesses_are_exactly_the_images_that_win_on_a_shown_element(
        rules: list[tuple[list[str], str, bool]], elements: list[tuple[list[str], bool]]) -> None:
    """An oracle: per shown element, the matching rule of the highest (importance, specificity, order) wins; the
    guesses are exactly the images of those winners."""
    css = "".join(f".{'.'.join(cls)} {{ background: {value}{' !important' if imp else ''} }}\n"
                  for cls, value, imp in rules).encode()
    html = ("<body>" + "".join(f"<p class='{' '.join(cls)}'{' hidden' if hidden else ''}>x</p>"
                               for cls, hidden in elements)).encode()
    parsed: list[BackgroundRule] = background_rules(css, SHEET)
    found = {s.url for s in expected_backgrounds(html, "utf-8", parsed)}
    wanted: set[str] = set()
    for cls, hidden in elements:
        winners = [r for r in parsed if _matches(r.selector, cls)]
        if winners and not hidden:
            wanted |= set(max(winners, key=lambda r: (r.important, r.specificity, r.order)).urls)
    assert found == wanted


@pytest.mark.parametrize("backgrounds", [True, False])
@pytest.mark.parametrize("css", [
    b".a { background: url(a.png) } @import url(late.css);",
    b"@import url(x.css) screen; @font-face { font-family: f; src: url(f.woff2) }"
    b" .b, .c > p { background: url(b.png) !important; display: none } .d { color: red }",
    b"@layer base { .l { background: url(l.png) } } @media print { .p { background: url(p.png) } }",
])
def test_one_parse_of_a_stylesheet_reads_what_both_readers_read(css: bytes, backgrounds: bool) -> None:
    # discover_worker.read_stylesheet: the worker's one parse gives what discover_css and background_rules give
    found, rules, _ = read_stylesheet(css, SHEET, "utf-8", backgrounds)
    assert found == discover_css(css, SHEET, "utf-8")
    assert rules == (background_rules(css, SHEET, "utf-8") if backgrounds else [])
    assert rules or not backgrounds


def test_specificity_counts_the_most_specific_argument_of_is_and_not() -> None:
    # Selectors Level 4 (cssselect2): :is()/:not() count as their most specific argument, :where() as nothing. A
    # sum of the arguments (the hand count before) made `:is(#m, .k) .c` outrank `#m .c`, which wins by order.
    css = b":is(#m, .k) .c { background: url(a.png) } #m .c { background: url(b.png) }"
    assert [(r.selector, r.specificity) for r in background_rules(css, SHEET)] == [
        (":is(#m, .k) .c", (1, 1, 0)), ("#m .c", (1, 1, 0))]
    assert urls(css, b"<body><div id=m class=k><p class=c>c</p></div>") == [S + "b.png"]
    rules = background_rules(b".x:not(.a, #b) { background: url(n.png) } :where(#w) p { background: url(w.png) }"
                             b" svg|a { background: url(ns.png) }", SHEET)
    # a namespace prefix cssselect2 cannot compile (none declared) is left out, as a state-dependent selector is
    assert [(r.selector, r.specificity) for r in rules] == [(".x:not(.a, #b)", (1, 1, 0)), (":where(#w) p", (0, 0, 1))]


def test_a_selector_the_compiler_fails_on_loses_that_selector_only() -> None:
    # cssselect2 raises more than SelectorError on malformed selectors (AttributeError for `:nth-child(2n+)`,
    # RecursionError for a few hundred nested `:is(`): the stylesheet's @import and other rules are read all the same
    nested = b":is(" * 400 + b".a" + b")" * 400
    css = (b"@import url(more.css); li:nth-child(2n+) { background: url(a.png) } "
           + nested + b" { background: url(n.png) } .ok { background: url(ok.png) }")
    found, rules, _ = read_stylesheet(css, SHEET, "utf-8", True)
    assert [s.url for s in found] == [S + "more.css"]
    assert [r.urls for r in rules] == [(S + "ok.png",)]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_match_past_its_bound_kills_its_worker_guesses_nothing_and_discovery_goes_on() -> None:
    # lexbor backtracks exponentially within one selector: against a document nested 100 deep this one would run for
    # days, and the match's own deadline is only checked between selectors. Its worker is killed at the bound (the
    # call ends: without the bound it never would, and asyncio.wait_for fails the test), and a new one reads on.
    hostile = background_rules(b".nomatch div div div div div div div div .x { background: url(x.png) }", SHEET)
    deep = b"<body>" + b"<div>" * 100 + b"<p class=x>x</p>"
    discoverer = Discoverer(match_limit_s=0.5)
    try:
        first = await asyncio.wait_for(discoverer._run(os.getpid), 60)
        assert await asyncio.wait_for(discoverer.backgrounds(deep, "utf-8", hostile), 60) == []
        await until(lambda: _gone(first), "the overrunning worker's end")
        read = await asyncio.wait_for(discoverer.html(b"<link rel=stylesheet href=a.css>", PAGE, None), 60)
        assert [s.url for s in read.found] == ["https://example.org/docs/a.css"]
        assert await asyncio.wait_for(discoverer._run(os.getpid), 60) != first
        fair = background_rules(b".x { background: url(x.png) }", SHEET)
        expected = await asyncio.wait_for(discoverer.backgrounds(b"<body><p class=x>x</p>", "utf-8", fair), 60)
        assert [s.url for s in expected] == [S + "x.png"]
    finally:
        discoverer.close()


def test_a_later_cascade_layer_wins_over_an_earlier_one_whatever_their_specificity() -> None:
    p = b"<body><p class='p q'>p</p>"
    # the order of a statement, then of first appearance (a block later again keeps its place)
    assert urls(b"@layer a, b; @layer b { .p { background: url(b.png) } } @layer a { .p.q { background: url(a.png) } }",
                p) == [S + "b.png"]
    assert urls(b"@layer a { .p.q { background: url(a.png) } } @layer b { .p { background: url(b.png) } }"
                b" @layer a { #x, .p.q.q { background: url(a2.png) } }", p) == [S + "b.png"]
    # a layer's own rules beat its sublayers'; a dotted name is the nested layer; unnamed layers are each their own
    assert urls(b"@layer a { .p { background: url(a.png) } @layer s { .p.q { background: none } } }", p) == [
        S + "a.png"]
    assert urls(b"@layer a.s { .p.q { background: none } } @layer a { .p { background: url(a.png) } }", p) == [
        S + "a.png"]
    assert urls(b"@layer { .p.q { background: url(a.png) } } @layer { .p { background: url(b.png) } }", p) == [
        S + "b.png"]
    assert urls(b"@layer a, b { .p { background: url(x.png) } } @layer c d { .p { background: url(y.png) } }", p) == []
    # !important reverses the layers' order (and an unlayered one loses to any layered one)
    assert urls(b"@layer a, b; @layer b { .p { background: none !important } }"
                b" @layer a { .p { background: url(a.png) !important } }", p) == [S + "a.png"]
    assert urls(b"@layer a { .p { background: url(a.png) !important } } .p.q { background: none !important }", p) == [
        S + "a.png"]
    # two stylesheets' layers: their order depends on the sheets', not known here, so no guess
    other = background_rules(b"@layer x { .p { background: url(o.png) } }", "https://example.org/other.css")
    mine = background_rules(b"@layer y { .p.q { background: url(m.png) } }", SHEET)
    assert expected_backgrounds(p, None, [*mine, *other]) == []


def test_a_background_declaration_the_browser_drops_as_invalid_does_not_win() -> None:
    p = b"<body><p class=p>p</p>"
    assert urls(b".p { background-image: url(a.png); background-image: url(b.png) garbage }", p) == [S + "a.png"]
    assert urls(b".p { background-image: url(a.png); background-image: url(b.png) url(c.png) }", p) == [S + "a.png"]
    assert urls(b".p { background: url(a.png); background: url(b.png) url(c.png) }", p) == [S + "a.png"]
    assert urls(b".p { background: url(a.png); background: url(b.png) nonsense }", p) == [S + "a.png"]
    assert urls(b".p { background: url(a.png); background: none; background: url(b.png) 1px, }", p) == []
    assert urls(b".p { background: url(a.png) !important; background: url(b.png) garbage !important }", p) == [
        S + "a.png"]
    # what is valid wins as before: keywords, colours, positions and sizes, several layers, a var() (valid until
    # its value is computed: then, here, an unknown value without an image)
    assert urls(b".p { background: url(a.png); background: url(b.png) no-repeat center / cover fixed,"
                b" url(c.png) 10px 0 padding-box content-box rgb(0 0 0 / 50%) }", p) == [S + "b.png", S + "c.png"]
    assert urls(b".p { background: url(a.png); background: #fff url('b.png') repeat-x left top Canvas }", p) == [
        S + "b.png"]
    assert urls(b".p { background-image: url(a.png); background-image: linear-gradient(red, blue), url(b.png) }",
                p) == [S + "b.png"]
    assert urls(b".p { background: url(a.png); background: var(--bg) }", p) == []
    assert urls(b".p { background: url(a.png); background: inherit }", p) == []


async def test_without_a_worker_process_discovery_reads_on_but_matches_no_background(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A thread cannot be stopped in lexbor (which holds the GIL: the helper's event loop would stall as long), so
    # where no worker process can start the documents and stylesheets are still read, and no background matched
    def no_process(*_args: object, **_kwargs: object) -> None:
        raise OSError("no forkserver")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_process)
    discoverer = Discoverer()
    try:
        read = await asyncio.wait_for(discoverer.html(b"<link rel=stylesheet href=a.css>", PAGE, None), 60)
        assert [s.url for s in read.found] == ["https://example.org/docs/a.css"]
        rules = background_rules(b".x { background: url(x.png) }", SHEET)
        assert await asyncio.wait_for(discoverer.backgrounds(b"<body><p class=x>x</p>", "utf-8", rules), 60) == []
    finally:
        discoverer.close()
