"""Prefetch discovery (prefetch/discover_html.py, discover_css.py, urls.py): what a document and a stylesheet
make the browser fetch, table-tested on small real-shaped fixtures, and properties over arbitrary bytes: never
raises, only absolute http(s) URLs without fragments, every URL the WHATWG resolution of a reference."""

from __future__ import annotations

import ada_url
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lanefetch.prefetch.discover_css import discover_css
from lanefetch.prefetch.discover_html import MAX_NESTING, discover_html, nesting_bound, read_document, sniff_encoding
from lanefetch.prefetch.resource import Subresource
from lanefetch.prefetch.urls import base_url, resolve

DOC = "https://www.example.org/docs/page.html"
SHEET = "https://cdn.example.net/css/site.css"


def _short(items: list[Subresource]) -> list[tuple[str, str, str, str]]:
    return [(s.url, s.destination, s.mode, s.credentials) for s in items]


# A page shaped like a Sphinx / news page: head with stylesheets, preloads, scripts; body with images.
SPHINX_LIKE = b"""<!DOCTYPE html>
<html lang="en"><head>
<meta charset="utf-8">
<title>Page</title>
<link rel="stylesheet" type="text/css" href="_static/pygments.css?v=4f649999" />
<link rel="stylesheet" href="_static/basic.css" media="print">
<link rel="alternate stylesheet" href="_static/alt.css" title="Alt">
<link rel="stylesheet" href="_static/off.css" disabled>
<link rel="stylesheet" href="_static/less.css" type="text/less">
<link rel="preload" href="/fonts/Lato.woff2" as="font" type="font/woff2" crossorigin>
<link rel="preload" href="/fonts/odd.xyz" as="font" type="font/x-odd" crossorigin>
<link rel="preload" href="/img/hero-small.jpg" as="image" imagesrcset="a.jpg 1x, b.jpg 2x">
<link rel="preload" href="/print.css" as="style" media="print">
<link rel="preload" href="/api/config.json" as="fetch" crossorigin="anonymous">
<link rel="preload" href="/nothing" as="document">
<link rel="modulepreload" href="/js/dep.mjs">
<link rel="icon" href="/favicon.ico">
<script src="_static/jquery.js"></script>
<script src="_static/doctools.js" defer></script>
<script type="module" src="/js/app.mjs"></script>
<script nomodule src="/js/legacy.js"></script>
<script type="text/template" src="/js/tpl.html"></script>
<script type="importmap">{"imports": {}}</script>
<script type="text/javascript; charset=utf-8" src="//other.example.com/analytics.js"
 crossorigin="use-credentials"></script>
<script language="javascript" src="/js/old.js"></script>
<script language="vbscript" src="/js/vb.vbs"></script>
<noscript><link rel="stylesheet" href="/noscript.css"></noscript>
</head>
<body>
<!-- <link rel="stylesheet" href="/commented.css"> -->
<img src="logo.png" alt="">
<img src="lazy.png" loading="lazy">
<img src="responsive.png" srcset="responsive-2x.png 2x">
<img src="sized.png" sizes="50vw">
<img src="data:image/png;base64,AAAA">
<img src="">
<picture><source srcset="a.webp" type="image/webp"><img src="fallback.jpg"></picture>
<template><img src="inert.png"><link rel="stylesheet" href="/inert.css"></template>
<textarea><img src="text.png"></textarea>
<svg><image href="svg.png"/><script href="/svg.js"></script></svg>
<img src="logo.png#again" crossorigin="">
<img src="logo.png">
<link rel="stylesheet" href="/body.css">
<script>var s = '<script src="/in-a-string.js"></' + 'script>';</script>
</body></html>
"""


def test_sphinx_like_page() -> None:
    assert _short(discover_html(SPHINX_LIKE, DOC)) == [
        ("https://www.example.org/docs/_static/pygments.css?v=4f649999", "style", "no-cors", "include"),
        ("https://www.example.org/docs/_static/basic.css", "style", "no-cors", "include"),
        ("https://www.example.org/fonts/Lato.woff2", "font", "cors", "same-origin"),
        ("https://www.example.org/api/config.json", "empty", "cors", "same-origin"),
        ("https://www.example.org/js/dep.mjs", "script", "cors", "same-origin"),
        ("https://www.example.org/docs/_static/jquery.js", "script", "no-cors", "include"),
        ("https://www.example.org/docs/_static/doctools.js", "script", "no-cors", "include"),
        ("https://www.example.org/js/app.mjs", "script", "cors", "same-origin"),
        ("https://other.example.com/analytics.js", "script", "cors", "include"),
        ("https://www.example.org/js/old.js", "script", "no-cors", "include"),
        ("https://www.example.org/docs/logo.png", "image", "no-cors", "include"),
        ("https://www.example.org/docs/logo.png", "image", "cors", "same-origin"),
        ("https://www.example.org/body.css", "style", "no-cors", "include"),
    ]
    assert {s.initiator for s in discover_html(SPHINX_LIKE, DOC)} == {DOC}


@pytest.mark.parametrize(
    ("html", "url"),
    [
        # the first <base href> counts, resolved against the document's URL
        (b'<base href="/static/v2/"><base href="/other/"><script src="a.js"></script>',
         "https://www.example.org/static/v2/a.js"),
        (b'<base target="_top"><base href="https://cdn.example.net/x/"><img src="i.png">',
         "https://cdn.example.net/x/i.png"),
        # a javascript: or data: base falls back to the document's URL
        (b'<base href="javascript:void(0)"><img src="i.png">', "https://www.example.org/docs/i.png"),
        # <base> in the body still counts (it is the first in tree order)
        (b'<img src="i.png"><base href="/b/">', "https://www.example.org/b/i.png"),
        # the WHATWG URL parser's spelling: spaces and non-ASCII percent-encoded, dot segments, host lower-cased
        (b'<img src="../My Pics/caf\xc3\xa9.png?q=\xc3\xa9">',
         "https://www.example.org/My%20Pics/caf%C3%A9.png?q=%C3%A9"),
        (b'<img src="HTTPS://WWW.Example.ORG:443/./a/../b.png">', "https://www.example.org/b.png"),
        (b'<img src="  \t/x\n.png  ">', "https://www.example.org/x.png"),
        (b'<img src="//cdn.example.net/p.png#frag">', "https://cdn.example.net/p.png"),
    ],
)
def test_base_and_resolution(html: bytes, url: str) -> None:
    assert [s.url for s in discover_html(html, DOC, "utf-8")] == [url]
    assert [s.url for s in discover_html(b"<meta charset=utf-8>" + html, DOC)] == [url]


@pytest.mark.parametrize(
    "html",
    [
        b'<img src="javascript:alert(1)">', b'<script src="data:text/javascript,1"></script>',
        b'<link rel=stylesheet href="ftp://example.org/a.css">', b'<img src="blob:https://x/1">',
        b'<img src="http://[::1">', b'<img src="about:blank">', b'<link rel=stylesheet href="">',
        b'<script src=" "></script>',
    ],
)
def test_nothing_but_http_urls(html: bytes) -> None:
    assert discover_html(html, DOC) == []


def test_nomodule_skips_classic_scripts_only() -> None:
    html = (b'<script nomodule src="legacy.js"></script><script type="module" nomodule src="mod.js"></script>'
            b'<script nomodule type="text/javascript" src="legacy2.js"></script>')
    assert [(s.url, s.mode) for s in discover_html(html, DOC)] == [("https://www.example.org/docs/mod.js", "cors")]


@pytest.mark.parametrize(
    ("body", "charset", "encoding"),
    [
        (b"<p>plain", None, "windows-1252"),                            # the standard's default
        (b"<p>plain", "utf-8", "utf-8"),                                 # the transport's charset
        (b"<p>plain", "latin1", "windows-1252"),                         # a label, resolved as browsers do
        (b"<p>plain", "bogus", "windows-1252"),                          # an unknown label is ignored
        (b'<meta charset="shift_jis"><p>', None, "shift_jis"),           # the prescan
        (b'<meta http-equiv="Content-Type" content="text/html; charset=euc-jp">', None, "euc-jp"),
        (b'<meta charset="shift_jis"><p>', "utf-8", "utf-8"),            # the transport beats the prescan
        (b"\xef\xbb\xbf<meta charset=shift_jis>", "windows-1252", "utf-8"),  # a BOM beats both
        (b"\xff\xfe<\x00p\x00>\x00", None, "utf-16le"),
    ],
)
def test_sniff_encoding(body: bytes, charset: str | None, encoding: str) -> None:
    assert sniff_encoding(body, charset) == encoding


def test_encoding_sniffed_like_the_browser() -> None:
    # windows-1252 from the transport: the reference is not ASCII, and the browser would encode its query in
    # windows-1252, which the WHATWG parser here does not: left out rather than guessed
    latin = b'<img src="caf\xe9.png"><img src="plain.png">'
    assert [s.url for s in discover_html(latin, DOC, "windows-1252")] == ["https://www.example.org/docs/plain.png"]
    # a <meta charset> found by the prescan decides when the transport says nothing
    meta = b'<meta charset="shift_jis"><img src="\x83e.png"><img src="ok.png">'
    assert [s.url for s in discover_html(meta, DOC)] == ["https://www.example.org/docs/ok.png"]
    # no declaration at all: html5lib says windows-1252 where a browser may detect UTF-8: non-ASCII left out,
    # a non-ASCII <base> leaves nothing certain
    assert [s.url for s in discover_html(b'<img src="caf\xc3\xa9.png"><img src="a.png">', DOC)] == [
        "https://www.example.org/docs/a.png"]
    assert discover_html(b'<base href="/caf\xc3\xa9/"><img src="a.png">', DOC) == []
    # a UTF-8 BOM overrides the transport's charset
    bom = b'\xef\xbb\xbf<img src="caf\xc3\xa9.png">'
    assert [s.url for s in discover_html(bom, DOC, "windows-1252")] == ["https://www.example.org/docs/caf%C3%A9.png"]


@pytest.mark.parametrize(("html", "policy"), [
    (b'<head><meta http-equiv="Content-Security-Policy" content="img-src \'self\'"></head><img src=/a.png>', True),
    (b"<body><META HTTP-EQUIV=' content-security-policy ' content=x><img src=/a.png>", True),  # anywhere, any case
    (b'<meta http-equiv="Content-Security-Policy-Report-Only" content=x><img src=/a.png>', False),  # blocks nothing
    (b'<meta name="Content-Security-Policy" content=x><img src=/a.png>', False),
    (b"<!-- <meta http-equiv=content-security-policy content=x> --><img src=/a.png>", False),  # a comment
])
def test_a_document_s_own_content_security_policy_is_told(html: bytes, policy: bool) -> None:
    """read_document says whether the document sets a policy of its own (page_loads then flies nothing it
    discovers for it); what it names is found either way."""
    read = read_document(html, "http://h/p/index.html")
    assert read.policy is policy
    assert [s.url for s in read.found] == ["http://h/a.png"]


@pytest.mark.parametrize(("html", "ended"), [
    (b"<!doctype html><html><head><meta charset=utf-8><link rel=stylesheet href=a.css>", False),  # cut in the head
    (b"<!doctype html><head><title>t</title></head><body><p>x", True),
    (b"<title>t</title><link rel=stylesheet href=a.css><img src=a.png>", True),  # an <img> opens the body
    (b"<head><script>var x = '<div>'</script>", False),  # markup in a script is text
])
def test_a_read_says_whether_it_reached_past_the_head(html: bytes, ended: bool) -> None:
    """Until a read reaches past the document's head, a <meta> policy may still come (page_loads waits with what
    the stylesheets name)."""
    assert read_document(html, "http://h/").head_ended is ended


def test_max_bytes_bounds_the_work() -> None:
    html = b'<img src="a.png">' + b"<p>" * 100 + b'<img src="b.png">'
    assert [s.url for s in discover_html(html, DOC, max_bytes=20)] == ["https://www.example.org/docs/a.png"]


def test_what_foreign_content_holds_is_not_read_but_what_follows_it_is() -> None:
    """An <svg> or <math> subtree is skipped whole, however deep and whichever element of it a selector would match
    (a <script> in SVG is SVG's; a <link> in MathML's <mi> is HTML in the tree but under <math>), and the verdict
    kept for its nodes is not carried to their siblings after it."""
    html = (b"<div>" * 40 + b'<svg><g><script href="svg.js"></script></g></svg><math><mi><link rel="stylesheet" '
            b'href="m.css"></mi></math><script src="after.js"></script><picture><img src="p.png"></picture>'
            b'<svg><desc><p><img src="in.png"></p></desc><g><img src="out.png"></svg><img src="i.png">'
            + b"</div>" * 40)
    assert [s.url for s in discover_html(html, DOC, "utf-8")] == [
        "https://www.example.org/docs/after.js", "https://www.example.org/docs/out.png",
        "https://www.example.org/docs/i.png"]


def test_deep_nesting_does_not_recurse() -> None:
    html = b"<div>" * MAX_NESTING + b'<img src="deep.png">'  # twice the interpreter's recursion limit
    assert [s.url for s in discover_html(html, DOC)] == ["https://www.example.org/docs/deep.png"]


def test_a_document_is_read_up_to_where_it_nests_past_the_bound() -> None:
    # An HTML5 parser's work grows with the square of the nesting (40 000 nested <div>s: 3 s; 200 000: 2 min),
    # holding discovery up for every page: what lies deeper than MAX_NESTING is not read
    deep = b'<link rel="stylesheet" href="a.css">' + b"<section><div>" * 25_000 + b'<img src="deep.png">'
    assert [s.url for s in discover_html(deep, DOC)] == ["https://www.example.org/docs/a.css"]
    # The bound counts only elements closed by their end tag alone: unclosed paragraphs, list items, cells and
    # formatting elements (common in real markup, closed by the parser) and balanced ones never reach it
    loose = ("<ul>" + "<li><p><b>x" * (3 * MAX_NESTING) + "</ul><table>" + "<tr><td>y" * (3 * MAX_NESTING)
             + "</table>" + "<div><span>z</span></div>" * (3 * MAX_NESTING) + '<img src="end.png">')
    assert nesting_bound(loose) == loose
    assert [s.url for s in discover_html(loose.encode(), DOC)] == ["https://www.example.org/docs/end.png"]
    assert nesting_bound("<div>" * (MAX_NESTING + 5) + "x") == "<div>" * MAX_NESTING


SHEET_BYTES = b"""@charset "utf-8";
@layer base, theme;
/* @import "commented.css"; */
@import url("reset.css");
@import 'print.css' print;
@import url(layered.css) layer(base) supports(display: grid);
@import url("data:text/css,p{}");
@font-face {
  font-family: "Lato";
  src: url("../fonts/lato.eot");
  src: local("Lato Regular"), url("../fonts/lato.eot?#iefix") format("embedded-opentype"),
       url("../fonts/lato.woff2") format("woff2"), url("../fonts/lato.woff") format("woff");
}
@font-face { font-family: Icons; src: url(icons.svg#i) format("svg"), url(icons.ttf) format(truetype); }
@font-face { font-family: Color; src: url(color.woff2) format(woff2) tech(color-COLRv1), url(plain.woff2); }
@font-face { font-family: Bare; src: url(bare.otf); }
@font-face { font-family: NoSrc; font-weight: 700; }
@media (min-width: 40em) { @supports (display: grid) { @font-face { font-family: Wide; src: url(wide.woff); } } }
body { background: url(bg.png); font-family: Lato; }
.x::after { content: "url(string.png)"; }
@import url("too-late.css");
"""


def test_stylesheet() -> None:
    assert [(s.url, s.destination, s.mode, s.credentials, s.conditional) for s in discover_css(SHEET_BYTES, SHEET)] == [
        ("https://cdn.example.net/css/reset.css", "style", "no-cors", "include", False),
        ("https://cdn.example.net/css/print.css", "style", "no-cors", "include", False),
        ("https://cdn.example.net/css/layered.css", "style", "no-cors", "include", False),
        ("https://cdn.example.net/fonts/lato.woff2", "font", "cors", "same-origin", True),
        ("https://cdn.example.net/css/icons.ttf", "font", "cors", "same-origin", True),
        ("https://cdn.example.net/css/bare.otf", "font", "cors", "same-origin", True),
        ("https://cdn.example.net/css/wide.woff", "font", "cors", "same-origin", True),
    ]
    assert {s.initiator for s in discover_css(SHEET_BYTES, SHEET)} == {SHEET}


def test_stylesheet_encoding() -> None:
    # non-ASCII in a CSS URL is always encoded as UTF-8; the sheet's own bytes decode by its charset
    sheet = '@import "caf\u00e9.css";'.encode("latin-1")
    assert [s.url for s in discover_css(sheet, SHEET, "iso-8859-1")] == ["https://cdn.example.net/css/caf%C3%A9.css"]
    assert [s.url for s in discover_css(b'@charset "iso-8859-1"; @import "caf\xe9.css";', SHEET)] == [
        "https://cdn.example.net/css/caf%C3%A9.css"]


@pytest.mark.parametrize(("body", "charset", "encoding"), [
    (b"<p>plain", "windows-1252", "windows-1252"),                  # the transport's charset
    (b'<meta charset="latin1"><p>', None, "windows-1252"),          # the prescan
    (b"\xef\xbb\xbf<p>", "windows-1252", "utf-8"),                   # a BOM
    (b"<p>caf\xc3\xa9", None, None),                                  # none: browsers may detect another
])
def test_a_document_read_says_the_encoding_its_stylesheets_fall_back_to(
        body: bytes, charset: str | None, encoding: str | None) -> None:
    assert read_document(body, DOC, charset).encoding == encoding


def test_a_rule_before_import_ends_the_imports() -> None:
    assert discover_css(b'p { color: red } @import "a.css";', SHEET) == []
    assert discover_css(b'@font-face { src: url(f.woff) } @import "a.css";', SHEET)[0].destination == "font"
    # @charset and @layer statements may precede @import; a stray "}" swallows the rest of the sheet
    assert [s.url for s in discover_css(b'@layer a; @import "a.css"; } @import "b.css";', SHEET)] == [
        "https://cdn.example.net/css/a.css"]


def test_a_layer_statement_after_an_import_ends_the_imports() -> None:
    # CSS Cascade 5: an @layer statement may precede the @imports, not stand between them (Chromium, Firefox)
    assert [s.url for s in discover_css(b'@layer a; @import "a.css"; @layer b; @import "b.css";', SHEET)] == [
        "https://cdn.example.net/css/a.css"]


def test_an_import_with_a_block_is_not_fetched() -> None:
    # @import is a statement: one with a {} block is invalid, not fetched, and (as any invalid rule) ends nothing
    assert [s.url for s in discover_css(b'@import "a.css" {} @import "b.css";', SHEET)] == [
        "https://cdn.example.net/css/b.css"]


def test_resolve_and_base_url() -> None:
    assert resolve("a b", "http://h.example/") == "http://h.example/a%20b"
    assert resolve("mailto:x@y", "http://h.example/") is None
    assert resolve("caf\u00e9", "http://h.example/", encoding="windows-1252") is None
    assert resolve("cafe", "http://h.example/", encoding="windows-1252") == "http://h.example/cafe"
    assert base_url("data:,x", "http://h.example/p") == "http://h.example/p"
    assert base_url("/caf\u00e9/", "http://h.example/p", encoding="windows-1252") is None
    assert base_url("/caf\u00e9/", "http://h.example/p") == "http://h.example/caf%C3%A9/"
    assert base_url("http://[", "http://h.example/p") == "http://h.example/p"


# Properties --------------------------------------------------------------------------------------------------

_REFS = st.sampled_from(["a.css", "/x/y.js", "//cdn.example.net/z.png", "javascript:x()", "data:,1", "",
                         "../../up.png", "?q=1", "#frag", "http://[bad", "caf\u00e9.png", "a b.png", "https://o/"])
_TEMPLATES = st.sampled_from([
    '<link rel="stylesheet" href="{}">', '<script src="{}"></script>', '<img src="{}">',
    '<link rel=preload as=font crossorigin href="{}">', '<link rel=modulepreload href="{}">',
    '<base href="{}">', '<script type=module src="{}"></script>', "<{}>", "<!--{}-->", "<p title='{}'>",
])
_HTMLISH = st.lists(st.tuples(_TEMPLATES, _REFS), max_size=12).map(
    lambda parts: "".join(t.format(r) for t, r in parts).encode("utf-8"))


def _check(items: list[Subresource]) -> None:
    for s in items:
        parsed = ada_url.URL(s.url)
        assert parsed.protocol in ("http:", "https:")
        assert "#" not in s.url
        assert str(parsed.href) == s.url  # already in the WHATWG form: the browser would request exactly this
    assert len({s.key for s in items}) == len(items)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000) | _HTMLISH, st.sampled_from([None, "utf-8", "windows-1252", "utf-16", "bogus"]))
def test_html_never_raises_and_yields_only_http_urls(body: bytes, charset: str | None) -> None:
    _check(discover_html(body, DOC, charset))


@settings(max_examples=200)
@given(_HTMLISH)
def test_html_urls_resolve_against_the_base(body: bytes) -> None:
    items = discover_html(body, DOC)
    refs = ["a.css", "/x/y.js", "//cdn.example.net/z.png", "", "../../up.png", "?q=1", "#frag", "caf\u00e9.png",
            "a b.png", "https://o/"]
    bases = {DOC} | {str(ada_url.URL(r, DOC).href) for r in refs if r.isascii()}
    possible = {resolve(r, b) for r in refs for b in bases}
    assert {s.url for s in items} <= possible


_CSSISH = st.lists(st.tuples(st.sampled_from([
    '@import "{}";', "@import url({});", '@font-face {{ src: url("{}") format(woff2) }}', "p {{ x: url({}) }}",
    "/* {} */", '@media screen {{ @font-face {{ src: local(x), url("{}") }} }}', "@charset '{}';",
]), _REFS), max_size=10).map(lambda parts: "".join(t.format(r) for t, r in parts).encode("utf-8"))


@settings(max_examples=300)
@given(st.binary(max_size=2000) | _CSSISH, st.sampled_from([None, "utf-8", "utf-16be", "bogus"]))
def test_css_never_raises_and_yields_only_http_urls(body: bytes, charset: str | None) -> None:
    items = discover_css(body, SHEET, charset)
    _check(items)
    assert all((s.destination == "font") == s.conditional for s in items)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_HTMLISH, _HTMLISH, st.sampled_from(["template", "noscript", "textarea", "title"]))
@example(b'<img src="a.css">', b'<img src="/x/y.js"><link rel="stylesheet" href="a.css">', "template")
@example(b"", b'<script src="/x/y.js"></script><img src="a.css">', "noscript")
def test_nothing_inside_inert_or_text_containers_is_discovered(page: bytes, inner: bytes, container: str) -> None:
    """Metamorphic: wrapping markup in <template>, <noscript>, <textarea> or <title> and appending it to a page adds
    nothing to what the page is found to request. (Not so for <svg> and <math>: an <img> breaks out of foreign
    content into HTML, in html5lib as in browsers.)"""
    end = b"</" + container.encode()
    if b"<base" in inner or end in inner or (container == "template" and b"<template" in inner):
        return  # a <base> is found wherever it is; the container's own end tag (or a nested one) ends it early
    wrapped = page + b"<body><" + container.encode() + b">" + inner + end + b">"
    assert discover_html(wrapped, DOC, "utf-8") == discover_html(page + b"<body>", DOC, "utf-8")


@pytest.mark.parametrize(
    "html",
    [
        # html5lib 1.1 (no <template> support) closed the outer <p> and put the link outside the template
        b'<p>x<template><p><link rel="stylesheet" href="t.css"></template>',
        b'<table><template><img src="ft.png"></template></table>',  # no foster parenting out of a template
        b'<head><template><link rel="stylesheet" href="h.css"><script src="h.js"></script></template></head>',
        b'<noscript><p><link rel="stylesheet" href="n.css"></noscript>',
        b'<p>x<noscript><p><img src="n.png"></noscript>',
    ],
)
def test_template_and_noscript_content_as_browsers_parse_it(html: bytes) -> None:
    assert discover_html(html, DOC, "utf-8") == []


def test_an_img_breaks_out_of_svg_as_in_browsers() -> None:
    assert [s.url for s in discover_html(b'<svg><img src="a.png"></svg><math><img src="b.png">', DOC, "utf-8")] == [
        "https://www.example.org/docs/a.png", "https://www.example.org/docs/b.png"]
