"""Background images a first visit can expect: a stylesheet's `background` url() whose selector matches an
element of the page's document, and that no other rule read overrides there.

Why: the browser fetches a background image only once style is computed for an element the rule matches, so on a
page whose stylesheets are `@import`ed those images are the last wave of the load (django-tutorial07's four
docicons: wave 4, after document → stylesheet → imported stylesheet). Learning finds them from a page's second
visit on; this finds them on its first, from bytes the helper has read anyway: the document (discover_html.py) and
each stylesheet (discover_css.py).

Two steps, both pure:
- `background_rules(stylesheet)`: per style rule, each selector of its list (with its specificity) and the URLs
  of its last `background`/`background-image` declaration (empty: a declaration that sets no image, such as
  `background: none` or a colour, which overrides an image all the same). Rules at the top level, in `@layer`
  blocks and in `@media` blocks for `all` or `screen` only (another query may not hold: left out). A selector with
  a pseudo-element or a pseudo-class whose match depends on state (`:hover`, `:visited`, `:checked` …) is left out:
  only structural ones (`:not`, `:is`, `:where`, `:first-child` …) are matched.
- `expected_backgrounds(document, rules)`: lexbor (the tree discover_html.py builds: scripting on, so <noscript>
  content is text) matches each selector; an image is expected when some element it matches (not `hidden`, not
  inside a `hidden` element, no inline `display:none` on the way up) is not also matched by a rule that wins the
  cascade for `background` there: a higher specificity, or an equal one later in the same stylesheet (or in
  another stylesheet: their order is not known here, so the doubt goes against the guess).

What it cannot see, so everything it yields is a *guess* (resource.Subresource.guess: the flight's speculative
budget bounds what a wrong one costs, budget.py): a class or `display:none` a script or another stylesheet's rule
sets, an element laid out nowhere, a `@supports` condition, rules of stylesheets not read yet. URLs resolve against
the stylesheet's URL, http(s) only."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tinycss2
import webencodings
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from .discover_css import MAX_BYTES as MAX_CSS_BYTES
from .discover_html import MAX_BYTES as MAX_HTML_BYTES
from .discover_html import sniff_encoding
from .resource import Subresource, dedupe
from .urls import resolve

_STRUCTURAL = frozenset({"not", "is", "where", "first-child", "last-child", "only-child", "first-of-type",
                         "last-of-type", "only-of-type", "nth-child", "nth-last-child", "nth-of-type",
                         "nth-last-of-type", "root", "empty"})
_PSEUDO = re.compile(r":([a-zA-Z-]+)")
_NESTING_LIMIT = 32
_MAX_SELECTORS = 5000  # a stylesheet's selectors matched at most (a framework's sheet has thousands)


@dataclass(frozen=True)
class BackgroundRule:
    """One selector of a style rule that sets a background: its specificity (ids, classes, types), its place in
    its stylesheet, and the image URLs it sets (resolved; empty for a background without an image)."""

    selector: str
    specificity: tuple[int, int, int]
    order: int
    sheet: str
    urls: tuple[str, ...]


def _specificity(selector: str) -> tuple[int, int, int]:
    """Selectors Level 3's count, approximated on the text: `#id`; `.class`, `[attr]` and pseudo-classes; type
    names. Arguments of :not/:is count as their text does (close enough for the stylesheets met: the doubt
    only decides whether a guess is made)."""
    text = re.sub(r"\"[^\"]*\"|'[^']*'", "", selector)
    ids = len(re.findall(r"#[\w-]+", text))
    classes = len(re.findall(r"\.[\w-]+|\[[^\]]*\]", text)) + len(
        [p for p in _PSEUDO.findall(text) if p.lower() not in ("not", "is", "where")])
    stripped = re.sub(r"#[\w-]+|\.[\w-]+|\[[^\]]*\]|::?[\w-]+(\([^)]*\))?", " ", text)
    types = len([t for t in re.split(r"[\s>+~(),]+", stripped) if t and t != "*"])
    return ids, classes, types


def _static(selector: str) -> bool:
    return "::" not in selector and all(p.lower() in _STRUCTURAL for p in _PSEUDO.findall(selector))


def _image_urls(value: list[Any], sheet_url: str) -> tuple[str, ...]:
    urls: list[str] = []
    for token in value:
        reference: str | None = None
        if token.type == "url":
            reference = str(token.value)
        elif token.type == "function" and token.lower_name == "url":
            args = [a for a in token.arguments if a.type not in ("whitespace", "comment")]
            if len(args) == 1 and args[0].type == "string":
                reference = str(args[0].value)
        if reference is not None and reference.strip():
            url = resolve(reference, sheet_url)
            if url is not None:
                urls.append(url)
    return tuple(urls)


def background_rules(body: bytes, sheet_url: str, charset: str | None = None, *,
                     max_bytes: int = MAX_CSS_BYTES) -> list[BackgroundRule]:
    """The stylesheet's selectors that set a background (see the module's docstring), in source order."""
    rules, _encoding = tinycss2.parse_stylesheet_bytes(body[:max_bytes], protocol_encoding=charset,
                                                       skip_comments=True, skip_whitespace=True)
    out: list[BackgroundRule] = []
    flat: list[Any] = []

    def walk(block: list[Any], depth: int) -> None:  # source order: the cascade's order within a sheet
        for rule in block:
            if rule.type == "qualified-rule":
                flat.append(rule)
            elif depth < _NESTING_LIMIT and rule.type == "at-rule" and rule.content is not None and (
                    rule.lower_at_keyword == "layer" or (
                        rule.lower_at_keyword == "media"
                        and tinycss2.serialize(rule.prelude).strip().lower() in ("all", "screen"))):
                walk(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True), depth + 1)

    walk(rules, 0)
    for rule in flat:
        urls: tuple[str, ...] | None = None
        for item in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True):
            if item.type == "declaration" and item.lower_name in ("background", "background-image"):
                urls = _image_urls(item.value, sheet_url)  # the last one wins
        if urls is None:
            continue
        for selector in tinycss2.serialize(rule.prelude).split(","):
            selector = selector.strip()
            if selector and _static(selector) and len(out) < _MAX_SELECTORS:
                out.append(BackgroundRule(selector, _specificity(selector), len(out), sheet_url, urls))
    return out


def _shown(node: LexborNode) -> bool:
    """Not hidden by the markup itself: no `hidden` attribute and no inline display:none on it or above it."""
    current: LexborNode | None = node
    while current is not None and current.tag not in (None, "-document"):
        attrs = current.attributes
        if "hidden" in attrs:
            return False
        style = (attrs.get("style") or "").replace(" ", "").lower()
        if "display:none" in style:
            return False
        current = current.parent
    return True


def _matches(tree: LexborHTMLParser, selector: str) -> list[LexborNode]:
    try:
        return list(tree.css(selector))
    except SelectolaxError:
        return []  # a selector lexbor does not take: no guess


def _beats(other: BackgroundRule, rule: BackgroundRule) -> bool:
    if other is rule:
        return False
    if other.specificity != rule.specificity:
        return other.specificity > rule.specificity
    return other.sheet != rule.sheet or other.order > rule.order


def expected_backgrounds(document: bytes, document_url: str, charset: str | None,
                         rules: list[BackgroundRule]) -> list[Subresource]:
    """The background images of `rules` the document's elements are expected to show (guesses, resource.py)."""
    if not rules:
        return []
    body = document[:MAX_HTML_BYTES]
    text, _ = webencodings.decode(body, sniff_encoding(body, charset), errors="replace")
    tree = LexborHTMLParser(text, scripting=True)
    matched: dict[int, list[int]] = {}  # rule index → the mem_ids of the shown elements it matches
    for i, rule in enumerate(rules):
        matched[i] = [n.mem_id for n in _matches(tree, rule.selector) if _shown(n)]
    found: list[Subresource] = []
    for i, rule in enumerate(rules):
        if not rule.urls or not matched[i]:
            continue
        rivals = [set(matched[j]) for j, other in enumerate(rules) if _beats(other, rule) and matched[j]]
        if all(any(element in r for r in rivals) for element in matched[i]):
            continue  # wherever it matches, another rule's background wins
        found += [Subresource(url, "image", "no-cors", "include", rule.sheet, guess=True) for url in rule.urls]
    return dedupe(found)
