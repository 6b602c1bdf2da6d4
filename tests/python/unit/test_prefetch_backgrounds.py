"""discover_backgrounds.py: a stylesheet's background rules, and the images a document's elements are expected to
show (guesses): matched by lexbor, hidden elements and rules that lose the cascade left out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lanefetch.prefetch.discover_backgrounds import BackgroundRule, background_rules, expected_backgrounds

SHEET = "https://example.org/static/site.css"
PAGE = "https://example.org/docs/page.html"


def urls(css: bytes, html: bytes) -> list[str]:
    found = expected_backgrounds(html, PAGE, "utf-8", background_rules(css, SHEET))
    assert all(s.guess and s.destination == "image" and s.mode == "no-cors" and s.initiator == SHEET for s in found)
    return [s.url for s in found]


def test_rules_keep_selectors_specificity_and_the_last_background_declaration() -> None:
    css = (b".note, div.admonition { color: red; background: url(a.png) no-repeat; background-image: url('b.png') }"
           b"#top > p.x { background: none }"
           b"@media screen { .s { background: url(/s.png) } }"
           b"@media print { .p { background: url(p.png) } }"
           b"@media (max-width: 600px) { .m { background: url(m.png) } }"
           b"@layer base { .l { background-image: url(l.png) } }"
           b"a:hover { background: url(h.png) } p::before { background: url(b4.png) }"
           b"li:first-child { background: url(f.png) }"
           b".c { color: blue } /* .x { background: url(comment.png) } */")
    rules = background_rules(css, SHEET)
    assert [(r.selector, r.specificity, r.order, r.urls) for r in rules] == [
        (".note", (0, 1, 0), 0, ("https://example.org/static/b.png",)),
        ("div.admonition", (0, 1, 1), 1, ("https://example.org/static/b.png",)),
        ("#top > p.x", (1, 1, 1), 2, ()),
        (".s", (0, 1, 0), 3, ("https://example.org/s.png",)),
        (".l", (0, 1, 0), 4, ("https://example.org/static/l.png",)),
        ("li:first-child", (0, 1, 1), 5, ("https://example.org/static/f.png",)),
    ]


def test_an_image_is_expected_where_its_selector_matches_a_shown_element() -> None:
    css = b"body { background: url(bg.png) } .note { background: url(note.png) } .absent { background: url(x.png) }"
    assert urls(css, b"<!doctype html><body><div class=note>n</div></body>") == [
        "https://example.org/static/bg.png", "https://example.org/static/note.png"]
    assert urls(css, b"<body><div hidden><p class=note>n</p></div>") == ["https://example.org/static/bg.png"]
    assert urls(css, b"<body><p class=note style='display: none'>n</p>") == ["https://example.org/static/bg.png"]
    # inert or script-only markup is no element
    assert urls(b".note { background: url(note.png) }",
                b"<body><template><p class=note></p></template><noscript><p class=note></p></noscript>") == []


def test_a_rule_that_wins_the_cascade_everywhere_takes_the_guess_away() -> None:
    css = (b".admonition { background: url(note.png) } .admonition.warning { background: url(warn.png) }"
           b" .plain { background: url(plain.png) } .plain { background: none }")
    assert urls(css, b"<body><div class='admonition warning'>w</div><p class=plain>p</p>") == [
        "https://example.org/static/warn.png"]
    assert urls(css, b"<body><div class='admonition warning'>w</div><div class=admonition>n</div>") == [
        "https://example.org/static/note.png", "https://example.org/static/warn.png"]
    # another stylesheet's rule of equal specificity: their order is not known here, so no guess
    other = background_rules(b".plain { background: url(other.png) }", "https://example.org/other.css")
    mine = background_rules(b".plain { background: url(mine.png) }", SHEET)
    assert expected_backgrounds(b"<p class=plain>", PAGE, None, [*mine, *other]) == []


def test_a_selector_lexbor_does_not_take_is_no_guess() -> None:
    assert urls(b"p:nth-child(wrong) { background: url(a.png) } [=bad] { background: url(b.png) }",
                b"<body><p class=x>1</p>") == []


names = st.sampled_from(["a", "b", "c"])


@settings(max_examples=60, deadline=None)
@given(rules=st.lists(st.tuples(st.lists(names, min_size=1, max_size=2, unique=True),
                                st.sampled_from(["url(i1.png)", "url(i2.png)", "none"])), max_size=5),
       elements=st.lists(st.tuples(st.lists(names, max_size=3, unique=True), st.booleans()), max_size=5))
def test_every_guess_is_a_rule_s_image_matching_some_shown_element(
        rules: list[tuple[list[str], str]], elements: list[tuple[list[str], bool]]) -> None:
    css = "".join(f".{'.'.join(cls)} {{ background: {value} }}\n" for cls, value in rules).encode()
    html = ("<body>" + "".join(f"<p class='{' '.join(cls)}'{' hidden' if hidden else ''}>x</p>"
                               for cls, hidden in elements)).encode()
    parsed: list[BackgroundRule] = background_rules(css, SHEET)
    found = {s.url for s in expected_backgrounds(html, PAGE, "utf-8", parsed)}
    for url in found:
        assert any(url in r.urls and any(set(r.selector.strip(".").split(".")) <= set(cls)
                                         for cls, hidden in elements if not hidden) for r in parsed)
    # the last rule of the highest specificity that matches a shown element always wins there
    for cls, hidden in elements:
        if hidden:
            continue
        winners = [r for r in parsed if set(r.selector.strip(".").split(".")) <= set(cls)]
        if winners:
            top = max(winners, key=lambda r: (r.specificity, r.order))
            assert set(top.urls) <= found
