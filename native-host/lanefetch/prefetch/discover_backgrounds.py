"""Background images a first visit can expect: a stylesheet's `background` url() whose selector matches an
element of the page's document, and that no other rule read overrides there.

Why: the browser fetches a background image only once style is computed for an element the rule matches, so on a
page whose stylesheets are `@import`ed those images are the last wave of the load (django-tutorial07's note icon:
wave 4, after document → stylesheet → imported stylesheet). Learning finds them from a page's second visit on;
this finds them on its first, from bytes the helper has read anyway: the document (discover_html.py) and each
stylesheet (discover_css.py) that applies to the screen (the caller's to say: a `media=print` sheet is not read).

Two steps, both pure:
- `background_rules(stylesheet)`: per style rule, each selector of its list (split at its top-level commas only)
  with its specificity, and what its winning `background`/`background-image` declaration sets (the last valid one,
  or the last valid `!important` one; one the browser drops at parse time, `url(a.png) garbage` or two images in
  a layer, is passed over as it is there: `_valid_background`): the image URLs (empty for `none`, a colour or a
  gradient, which override an image all the same); and rules that set `display: none`. Rules at the top level, in
  `@layer` blocks and in `@media all|screen` blocks (another query may not hold, so its rules are left out); each
  rule's layer is its place in the sheet's layer order, as CSS Cascade 5 orders them: by first declaration (an
  `@layer a, b;` statement or a block; `a.b` and a block within a block are sublayers, ordered within theirs; an
  unnamed block is a layer of its own), a rule directly in a layer after its sublayers, unlayered rules after every
  layer. A selector with a pseudo-element or a state-dependent pseudo-class (`:hover`, `:visited`, `:checked` …)
  is left out: only structural ones (`:not`, `:is`, `:where`, `:first-child` …) are matched. A stylesheet with more
  than MAX_RULES such selectors yields none (a truncated set would drop the later rules, which win ties).
- `expected_backgrounds(document, rules)`: lexbor (the tree discover_html.py builds: scripting on, so <noscript>
  content is text) matches each selector; each element's winning background rule is found in one pass (importance,
  then layer, the later winning, reversed for `!important` ones, then specificity, then order; where only the
  stylesheets' order would decide (a rule of another stylesheet with the same rank, or in a layer of its own: layers
  are ordered across the page's sheets in their order), the other rule counts as winning against an image, that
  order not being known here). An image is expected when it wins on some *shown* element:
  inside <body>, not `hidden`, no inline `display:none`, not matched (itself or an ancestor) by a `display: none`
  rule read, not an `<input type=hidden>`, a `<dialog>` without `open` or the content of a closed `<details>`, and
  with no inline `background` of its own.

What it cannot see, so everything it yields is a *guess* (resource.Subresource.guess: the flight's speculative
budget bounds what a wrong one costs, budget.py): a class or `display` a script sets, a `display` rule that shows
again what another hides, layout (an element of no size), `@supports` conditions, nested CSS rules, rules of
stylesheets not read yet. URLs resolve against the stylesheet's URL, http(s) only, never a fragment alone (an SVG
filter's `url(#f)`). Bounded: at most MAX_MATCHES element matches are weighed per document (a hostile page's
thousands of selectors × thousands of elements) and at most MAX_SECONDS spent matching, past which nothing is
guessed. That deadline is checked between selectors only: one selector's backtracking is bounded by the worker,
which is killed past discover_worker.MATCH_LIMIT_S."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import cssselect2
import tinycss2
import webencodings
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError
from tinycss2.color4 import parse_color

from .discover_css import MAX_BYTES as MAX_CSS_BYTES
from .discover_css import parse_stylesheet, url_of
from .discover_html import MAX_BYTES as MAX_HTML_BYTES
from .discover_html import nesting_bound, sniff_encoding
from .resource import Subresource, dedupe
from .urls import resolve

_STRUCTURAL = frozenset({"not", "is", "where", "first-child", "last-child", "only-child", "first-of-type",
                         "last-of-type", "only-of-type", "nth-child", "nth-last-child", "nth-of-type",
                         "nth-last-of-type", "root", "empty"})
_PSEUDO = re.compile(r":([a-zA-Z-]+)")
_NESTING_LIMIT = 32
# A layer name: identifiers joined by dots (escapes taken as they are serialized: a name never reaches a URL)
_IDENT = r"-?(?:[A-Za-z_]|[^\x00-\x7f]|\\.)(?:[\w-]|[^\x00-\x7f]|\\.)*"
_LAYER_NAME = re.compile(rf"{_IDENT}(?:\.{_IDENT})*")
MAX_RULES = 1000  # selectors kept per stylesheet (a sheet with more yields none)
MAX_MATCHES = 50_000  # element matches weighed per document (past it, no guess at all)
_LAST = 1 << 30  # after every layer: a rule directly in a layer (after its sublayers), or in none
UNLAYERED = (_LAST,)
MAX_SECONDS = 0.3  # the worker's time for one document's matching (past it, no guess at all)
_NOT_RENDERED = frozenset({"head", "title", "meta", "link", "script", "style", "template", "noscript", "base"})


@dataclass(frozen=True)
class BackgroundRule:
    """One selector of a style rule that sets a background or hides: its rank in the cascade (importance; layer: its
    place in the sheet's layer order, a later one greater, UNLAYERED above all; specificity: ids, classes, types;
    its place in its stylesheet) and the image URLs it sets (empty for a background without an image); `hides`: the
    rule sets `display: none` (no background)."""

    selector: str
    specificity: tuple[int, int, int]
    order: int
    sheet: str
    urls: tuple[str, ...]
    important: bool = False
    layer: tuple[int, ...] = UNLAYERED
    hides: bool = False


def _versus(rule: BackgroundRule, held: BackgroundRule) -> int:
    """On an element both match: 1 where `rule` wins over `held`, -1 where it loses, 0 where only the stylesheets'
    order would tell (not known here)."""
    if rule.important != held.important:
        return 1 if rule.important else -1
    same_sheet = rule.sheet == held.sheet
    if not same_sheet and UNLAYERED not in (rule.layer, held.layer):
        return 0  # layers of two sheets: their order is of the sheets' order
    if rule.layer != held.layer:
        return 1 if (rule.layer > held.layer) != rule.important else -1
    if rule.specificity != held.specificity:
        return 1 if rule.specificity > held.specificity else -1
    if not same_sheet:
        return 0
    return 1 if rule.order > held.order else -1


def _specificity(selector: str) -> tuple[int, int, int] | None:
    """Selectors Level 4's specificity (ids, classes, types) as cssselect2 computes it: `:is()`, `:not()` and
    `:has()` count as their most specific argument, `:where()` as nothing (a hand count on the text summed the
    arguments, which could hand a rule the cascade it loses). `:nth-child(… of S)` counts as one class, without S's
    (cssselect2's count; the standard adds S's): a rule decided on that alone may be guessed wrongly, within the
    guesses' budget. None for a selector cssselect2 cannot compile (a namespace prefix, a pseudo-class it does not
    know, and malformed ones on which it fails otherwise: `:nth-child(2n+)` raises AttributeError, a few hundred
    nested `:is(` RecursionError): it is left out, as a state-dependent one is."""
    try:
        compiled = cssselect2.compile_selector_list(selector)
    except Exception:  # whatever a hostile selector makes the compiler raise: that selector only is left out
        return None
    if len(compiled) != 1 or compiled[0].pseudo_element is not None:
        return None
    ids, classes, types = compiled[0].specificity
    return int(ids), int(classes), int(types)


def _static(selector: str) -> bool:
    return "::" not in selector and all(p.lower() in _STRUCTURAL for p in _PSEUDO.findall(selector))


def _selectors(prelude: list[Any]) -> list[str]:
    """A rule's selector list split at its top-level commas (tinycss2 nests (), [] and functions as blocks)."""
    parts: list[list[Any]] = [[]]
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            parts.append([])
        else:
            parts[-1].append(token)
    return [text for part in parts if (text := tinycss2.serialize(part).strip())]


def _image_urls(value: list[Any], sheet_url: str) -> tuple[str, ...]:
    urls: list[str] = []
    for token in value:
        reference = url_of(token)
        if reference is not None and reference.strip() and not reference.strip().startswith("#"):
            url = resolve(reference, sheet_url)
            if url is not None:
                urls.append(url)
    return tuple(urls)


_CSS_WIDE = frozenset({"inherit", "initial", "unset", "revert", "revert-layer"})
_IMAGE_FUNCTION = re.compile(r"(-webkit-|-moz-|-o-)?(repeating-)?(linear|radial|conic)-gradient|url|image-set"
                             r"|-webkit-image-set|cross-fade|-webkit-cross-fade|image|element|-moz-element|paint"
                             r"|-webkit-gradient")
_BACKGROUND_WORDS = frozenset({
    "repeat", "repeat-x", "repeat-y", "no-repeat", "space", "round", "scroll", "fixed", "local", "border-box",
    "padding-box", "content-box", "text", "left", "right", "top", "bottom", "center", "auto", "cover", "contain",
    # system colours (CSS Color 4, with the deprecated ones browsers still take)
    "canvas", "canvastext", "linktext", "visitedtext", "activetext", "buttonface", "buttontext", "buttonborder",
    "field", "fieldtext", "highlight", "highlighttext", "selecteditem", "selecteditemtext", "mark", "marktext",
    "graytext", "accentcolor", "accentcolortext", "activeborder", "activecaption", "appworkspace", "background",
    "buttonhighlight", "buttonshadow", "captiontext", "inactiveborder", "inactivecaption", "inactivecaptiontext",
    "infobackground", "infotext", "menu", "menutext", "scrollbar", "threeddarkshadow", "threedface",
    "threedhighlight", "threedlightshadow", "threedshadow", "window", "windowframe", "windowtext"})
_VALUE_FUNCTIONS = frozenset({
    "rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color", "color-mix", "light-dark",
    "contrast-color", "device-cmyk", "calc", "min", "max", "clamp", "round", "mod", "rem", "abs", "sign"})
_SUBSTITUTIONS = frozenset({"var", "env", "attr"})


def _background_part(token: Any) -> bool:
    """A token of a `background` layer other than its image: a keyword, a colour, a number, `/`."""
    if token.type in ("number", "percentage", "dimension", "hash") or (token.type == "literal"
                                                                        and token.value == "/"):
        return True
    if token.type == "ident":
        return bool(token.lower_value in _BACKGROUND_WORDS or token.value.startswith("-")
                    or parse_color(token) is not None)
    return token.type == "function" and (token.lower_name in _VALUE_FUNCTIONS or token.lower_name.startswith("-"))


def _valid_background(name: str, value: list[Any]) -> bool:
    """Would the browser keep this `background`/`background-image` declaration at parse time? Its layers (split at
    commas) each hold one image (url(), a gradient or other image function, `none`; `background-image` nothing
    else), and in `background` only what its grammar takes beside: keywords, colours, numbers, `/`. Leaning to
    valid where unsure (a vendor-prefixed word, a function's arguments): a value taken for valid wrongly is the
    guess as before this check. A var()/env()/attr() makes any value valid until it is computed."""
    tokens = [t for t in value if t.type not in ("whitespace", "comment")]
    if any(t.type == "function" and t.lower_name in _SUBSTITUTIONS for t in tokens):
        return True
    if len(tokens) == 1 and tokens[0].type == "ident" and tokens[0].lower_value in _CSS_WIDE:
        return True
    layers: list[list[Any]] = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            layers.append([])
        else:
            layers[-1].append(token)
    for layer in layers:
        images = 0
        for token in layer:
            if token.type == "url" or (token.type == "function" and _IMAGE_FUNCTION.fullmatch(token.lower_name)) or (
                    token.type == "ident" and token.lower_value == "none"):
                images += 1
            elif name == "background-image" or not _background_part(token):
                return False
        if images > 1 or not layer or (name == "background-image" and images != 1):
            return False
    return True


def _is_none(value: list[Any]) -> bool:
    words = [t for t in value if t.type not in ("whitespace", "comment")]
    return len(words) == 1 and words[0].type == "ident" and words[0].lower_value == "none"


def _layer_names(prelude: list[Any]) -> list[str] | None:
    """The layer names of an @layer prelude (`a, b.c`: ["a", "b.c"]; empty: none), None if it is not a list of
    names."""
    text = tinycss2.serialize([t for t in prelude if t.type != "comment"]).strip()
    if not text:
        return []
    names = [part.strip() for part in text.split(",")]
    return names if all(_LAYER_NAME.fullmatch(name) for name in names) else None


def background_rules(body: bytes, sheet_url: str, charset: str | None = None, *,
                     max_bytes: int = MAX_CSS_BYTES) -> list[BackgroundRule]:
    """The stylesheet's selectors that set a background or hide (see the module's docstring), in source order."""
    return background_rules_of(parse_stylesheet(body, charset, max_bytes=max_bytes), sheet_url)


def background_rules_of(rules: list[Any], sheet_url: str) -> list[BackgroundRule]:
    """background_rules of a stylesheet already parsed (discover_css.parse_stylesheet)."""
    flat: list[tuple[Any, tuple[int, ...]]] = []  # (rule, layer)
    places: dict[str, int] = {}  # each layer's full name → its first declaration's place in the sheet
    unnamed = iter(range(_LAST))

    def declare(name: str) -> tuple[int, ...]:
        parts = name.split(".")
        return tuple(places.setdefault(".".join(parts[:i + 1]), len(places)) for i in range(len(parts)))

    def walk(block: list[Any], depth: int, within: str) -> None:  # source order: the cascade's order within a sheet
        for rule in block:
            if rule.type == "qualified-rule":
                flat.append((rule, (*declare(within), _LAST) if within else UNLAYERED))
            elif rule.type != "at-rule" or depth >= _NESTING_LIMIT:
                continue
            elif rule.lower_at_keyword == "layer":
                names = _layer_names(rule.prelude)
                statement = rule.content is None
                if names is None or (statement and not names) or (not statement and len(names) > 1):
                    continue  # invalid: a statement without names, a block with more than one
                names = names or [f"#{next(unnamed)}"]  # an unnamed block: a layer no other rule can name
                full = [f"{within}.{name}" if within else name for name in names]
                for name in full:
                    declare(name)
                if rule.content is not None:
                    walk(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True), depth + 1,
                         full[0])
            elif rule.content is not None and rule.lower_at_keyword == "media" and (
                    tinycss2.serialize(rule.prelude).strip().lower() in ("all", "screen")):
                walk(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True), depth + 1,
                     within)

    walk(rules, 0, "")
    out: list[BackgroundRule] = []
    for rule, layer in flat:
        winner: Any = None
        hides = False
        for item in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True):
            if item.type != "declaration":
                continue
            if item.lower_name in ("background", "background-image") and (item.important or not (
                    winner is not None and winner.important)) and _valid_background(item.lower_name, item.value):
                winner = item  # the last valid one wins, an !important one over any normal one
            elif item.lower_name == "display" and _is_none(item.value):
                hides = True
        if winner is None and not hides:
            continue
        urls = _image_urls(winner.value, sheet_url) if winner is not None else ()
        for selector in _selectors(rule.prelude):
            if not _static(selector):
                continue
            if len(out) >= MAX_RULES:
                return []  # truncated: the rules left out would be the later ones, which win ties
            specificity = _specificity(selector)
            if specificity is None:
                continue
            common = (selector, specificity, len(out), sheet_url)
            if winner is not None:
                out.append(BackgroundRule(*common, urls, bool(winner.important), layer))
            if hides:
                out.append(BackgroundRule(*common, (), False, layer, hides=True))
    return out


_SPACES = re.compile(r"\s+")


def _hidden_by_markup(node: LexborNode) -> bool:
    attrs = node.attributes
    if "hidden" in attrs or node.tag in _NOT_RENDERED:
        return True
    if "display:none" in _SPACES.sub("", (attrs.get("style") or "").lower()):
        return True
    if node.tag == "input" and (attrs.get("type") or "").strip().lower() == "hidden":
        return True
    return node.tag == "dialog" and "open" not in attrs


def _shown(node: LexborNode, hidden: set[int], seen: dict[int, bool]) -> bool:
    """Shown as far as the markup and the `display: none` rules read say: inside <body>, nothing on the way up hides
    it (results cached per node: a deep document is walked once)."""
    path: list[LexborNode] = []
    current: LexborNode | None = node
    verdict = False
    while current is not None and current.tag not in (None, "-document", "html"):
        known = seen.get(current.mem_id)
        if known is not None:
            verdict = known
            break
        path.append(current)
        if current.tag == "body":
            verdict = True
            break
        current = current.parent
    else:
        verdict = False  # not inside <body>
    for element in reversed(path):  # from the top down: a hidden ancestor hides everything below it
        parent = element.parent
        closed_details = (parent is not None and parent.tag == "details" and "open" not in parent.attributes
                          and element.tag != "summary")
        if element.tag == "body":
            verdict = not (_hidden_by_markup(element) or element.mem_id in hidden)
        elif verdict:
            verdict = not (_hidden_by_markup(element) or element.mem_id in hidden or closed_details)
        seen[element.mem_id] = verdict
    return verdict


def _inline_background(node: LexborNode) -> bool:
    return "background" in (node.attributes.get("style") or "").lower()


def _matches(tree: LexborHTMLParser, selector: str) -> list[LexborNode]:
    try:
        return list(tree.css(selector))
    except SelectolaxError:
        return []  # a selector lexbor does not take: no guess


def expected_backgrounds(document: bytes, charset: str | None, rules: list[BackgroundRule]) -> list[Subresource]:
    """The background images of `rules` the document's elements are expected to show (guesses, resource.py)."""
    if not rules or not any(r.urls for r in rules):
        return []
    body = document[:MAX_HTML_BYTES]
    text, _ = webencodings.decode(body, sniff_encoding(body, charset), errors="replace")
    tree = LexborHTMLParser(nesting_bound(text), scripting=True)
    matches: list[tuple[BackgroundRule, list[LexborNode]]] = []
    total = 0
    deadline = time.monotonic() + MAX_SECONDS
    for rule in rules:
        nodes = _matches(tree, rule.selector)
        total += len(nodes)
        if total > MAX_MATCHES or time.monotonic() > deadline:
            return []  # a page that would cost the worker too much: no guess
        matches.append((rule, nodes))
    hidden = {n.mem_id for rule, nodes in matches if rule.hides for n in nodes}
    seen: dict[int, bool] = {}
    # Each element's winning background rule, in one pass; where the stylesheets' order would decide, the image loses
    best: dict[int, tuple[BackgroundRule, bool, LexborNode]] = {}  # mem_id → (winner, doubtful, the element)
    for rule, nodes in matches:
        if rule.hides:
            continue
        for node in nodes:
            current = best.get(node.mem_id)
            if current is None:
                best[node.mem_id] = (rule, False, node)
                continue
            held = current[0]
            verdict = _versus(rule, held)
            if verdict > 0:
                best[node.mem_id] = (rule, False, node)
            elif verdict == 0:
                best[node.mem_id] = (held, True, node)
    found: list[Subresource] = []
    for rule, doubtful, node in best.values():
        if doubtful or not rule.urls or _inline_background(node) or not _shown(node, hidden, seen):
            continue
        found += [Subresource(url, "image", "no-cors", "include", rule.sheet, guess=True) for url in rule.urls]
    # in the rules' order (a stable flight order), each image once
    order = {url: i for i, url in enumerate(u for r in rules for u in r.urls)}
    return dedupe(sorted(found, key=lambda s: order.get(s.url, 0)))
