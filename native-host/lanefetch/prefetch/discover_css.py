"""What a stylesheet makes the browser fetch: its @import chain and the web fonts it declares.

Input: the stylesheet's bytes and URL, the charset its Content-Type named, and the encoding of what linked it (CSS's
fallback, its "environment encoding": the document's, where it declared one, or the importing stylesheet's).
tinycss2 implements CSS Syntax Level 3 (the tokenizer browsers use: escapes, comments, strings, url() and bad-url
tokens, blocks, @charset and BOM decoding), so a url() inside a comment or
a string is never taken for a reference.

Output, in source order, deduplicated (resource.py):
- every valid `@import` (url() or string), which is one placed before any rule other than @charset and @layer
  statements, those only before the first @import (later ones are ignored by the browser); destination style,
  no-cors with credentials, whatever its media or supports() condition (browsers fetch those too);
- per `@font-face` (also inside @media, @supports, @layer and @container blocks), from its last `src`
  declaration, the one source the browser would download: the first url() source whose format() is one
  Chromium and Firefox take (woff2, woff, truetype, opentype, collection and their -variations, or none given);
  a source with tech() ends the search (whether the browser takes it depends on its build; a guess wastes
  budget). local() sources are passed over: whether the font is installed is not known here, so the url() after
  them is still the best guess. Fonts are fetched with CORS, same-origin credentials, and only when text uses
  the face, so they are marked `conditional`: a flight takes them only when learned loads saw them.
URLs resolve against the stylesheet's URL (CSS encodes their queries in UTF-8 always), http(s) only.

Not found here, by design: background images and other url() values (fetched only when a matching element is
styled; learned.py records those), and image-set()."""

from __future__ import annotations

from typing import Any

import tinycss2

from .resource import Subresource, dedupe
from .urls import resolve

MAX_BYTES = 2 * 1024 * 1024

_FONT_FORMATS = frozenset(
    {"woff2", "woff", "truetype", "opentype", "collection", "woff2-variations", "woff-variations",
     "truetype-variations", "opentype-variations"}
)
_BLOCK_AT_RULES = frozenset({"media", "supports", "layer", "container", "document", "scope", "starting-style"})
_NESTING_LIMIT = 32


def url_of(token: Any) -> str | None:
    """The URL a url()/string token names, or None."""
    kind = getattr(token, "type", None)
    if kind == "url":
        return str(token.value)
    if kind == "function" and token.lower_name == "url":
        args = [a for a in token.arguments if a.type not in ("whitespace", "comment")]
        if len(args) == 1 and args[0].type == "string":
            return str(args[0].value)
    return None


def _import_url(prelude: list[Any]) -> str | None:
    tokens = [t for t in prelude if t.type not in ("whitespace", "comment")]
    if not tokens:
        return None
    if tokens[0].type == "string":
        return str(tokens[0].value)
    return url_of(tokens[0])


def _import_on_screen(prelude: list[Any]) -> bool:
    """An @import without a condition after its URL (or with `all`/`screen`) applies to the screen; one with a media
    query, supports() or layer() is taken as not known to."""
    tokens = [t for t in prelude if t.type not in ("whitespace", "comment")][1:]
    return not tokens or (len(tokens) == 1 and tokens[0].type == "ident"
                          and tokens[0].lower_value in ("all", "screen"))


def _split_commas(tokens: list[Any]) -> list[list[Any]]:
    parts: list[list[Any]] = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            parts.append([])
        elif token.type not in ("whitespace", "comment"):
            parts[-1].append(token)
    return parts


def _format_ok(token: Any) -> bool:
    args = [a for a in token.arguments if a.type not in ("whitespace", "comment")]
    names = [str(a.value).lower() for a in args if a.type in ("string", "ident")]
    return len(names) == len(args) and any(name in _FONT_FORMATS for name in names)


def _font_source(declaration_value: list[Any]) -> str | None:
    """The URL the browser downloads for an @font-face src value, or None (see the module's docstring)."""
    for source in _split_commas(declaration_value):
        if not source:
            continue
        head, rest = source[0], source[1:]
        if getattr(head, "type", None) == "function" and head.lower_name == "local":
            continue
        url = url_of(head)
        if url is None:
            continue
        usable = True
        for modifier in rest:
            if modifier.type == "function" and modifier.lower_name == "format":
                usable = usable and _format_ok(modifier)
            elif modifier.type == "function" and modifier.lower_name == "tech":
                return None
            else:
                usable = False
        if usable:
            return url
    return None


def _font_faces(rules: list[Any], depth: int) -> list[str]:
    urls: list[str] = []
    if depth > _NESTING_LIMIT:
        return urls
    for rule in rules:
        if rule.type != "at-rule" or rule.content is None:
            continue
        if rule.lower_at_keyword == "font-face":
            src = None
            for item in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True):
                if item.type == "declaration" and item.lower_name == "src":
                    src = item.value
            if src is not None:
                url = _font_source(src)
                if url is not None:
                    urls.append(url)
        elif rule.lower_at_keyword in _BLOCK_AT_RULES:
            inner = tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True)
            urls.extend(_font_faces(inner, depth + 1))
    return urls


def parse_stylesheet(body: bytes, charset: str | None = None, *, document_encoding: str | None = None,
                     max_bytes: int = MAX_BYTES) -> list[Any]:
    """The stylesheet's top-level rules (tinycss2), its bytes decoded as the browser would (BOM, the Content-Type's
    charset, @charset, the encoding of what linked it: its document's, or an importing sheet's): parsed once for
    every reader of a stylesheet (discover_css_rules here, discover_backgrounds.background_rules_of)."""
    return parse_stylesheet_in(body, charset, document_encoding=document_encoding, max_bytes=max_bytes)[0]


def parse_stylesheet_in(body: bytes, charset: str | None = None, *, document_encoding: str | None = None,
                        max_bytes: int = MAX_BYTES) -> tuple[list[Any], str]:
    """parse_stylesheet, and the name of the encoding it was decoded in (what the sheets it imports fall back to)."""
    rules, encoding = tinycss2.parse_stylesheet_bytes(
        body[:max_bytes], protocol_encoding=charset, environment_encoding=document_encoding,
        skip_comments=True, skip_whitespace=True)
    return list(rules), str(encoding.name)


def discover_css(body: bytes, sheet_url: str, charset: str | None = None, *,
                 document_encoding: str | None = None, max_bytes: int = MAX_BYTES) -> list[Subresource]:
    """The subresources the browser requests for this stylesheet (see the module's docstring)."""
    return discover_css_rules(parse_stylesheet(body, charset, document_encoding=document_encoding,
                                               max_bytes=max_bytes), sheet_url)


def discover_css_rules(rules: list[Any], sheet_url: str) -> list[Subresource]:
    """discover_css of a stylesheet already parsed (parse_stylesheet)."""
    found: list[Subresource] = []
    imports_allowed = True
    imported = False  # an @layer statement after an @import ends the imports (it may only precede them)
    for rule in rules:
        if rule.type == "at-rule" and rule.lower_at_keyword == "import" and rule.content is not None:
            continue  # a statement with a block: invalid, never fetched, and it changes nothing
        if rule.type == "at-rule" and rule.lower_at_keyword == "import" and imports_allowed:
            imported = True
            reference = _import_url(rule.prelude)
            url = resolve(reference, sheet_url) if reference is not None and reference.strip() else None
            if url is not None:
                found.append(Subresource(url, "style", "no-cors", "include", sheet_url,
                                         screen=_import_on_screen(rule.prelude)))
        elif rule.type == "at-rule" and (rule.lower_at_keyword == "charset"
                                         or (rule.lower_at_keyword == "layer" and rule.content is None
                                             and not imported)):
            continue
        elif rule.type != "error":
            imports_allowed = False
    for reference in _font_faces(rules, 0):
        if not reference.strip():
            continue
        url = resolve(reference, sheet_url)
        if url is not None:
            found.append(Subresource(url, "font", "cors", "same-origin", sheet_url, conditional=True))
    return dedupe(found)
