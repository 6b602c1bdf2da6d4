"""What a document makes the browser fetch early, read from its bytes the way the browser reads them.

Input: the document's bytes, its URL and the charset its Content-Type named (if any). Two well-kept WHATWG
implementations do the reading: html5lib's byte-stream encoding sniff (BOM, then the transport charset, then the
<meta charset> prescan of the first 1024 bytes, else windows-1252, the HTML standard's default; browsers may detect
UTF-8 instead, which is why urls.py refuses non-ASCII references in any non-UTF-8 document), webencodings'
decoder, and lexbor's HTML5 tree construction (through selectolax), so misnested markup, implied <head>/<body>,
raw-text elements, comments and <template> contents land where a browser puts them; a regex or a plain tokenizer
would find a `<link>` inside a comment, a <script> body or a <textarea>.

Why lexbor for the tree and not html5lib's (used at first): html5lib 1.1 has no <template> support at all (no
"in template" insertion mode, <template> missing from its scope lists), so `<p>x<template><p><link …>` put the
link outside the template, and the tests here caught it; and it is slow in pure Python: a 150 kB page took 72 ms
at best (136 ms median, load 7.5 on 2 cores) against 3.9 ms (5.1 ms median, load 3.6) here for sniff, decode,
parse and walk. Lexbor is kept up (selectolax 1.0.2, 2026) and ships as wheels for the helper's platforms.
html5lib's sniff is reached through its `_inputstream` module (its public API runs it only inside a full parse);
html5lib is pinned, and a test pins the sniff's results.

Output, in document order, deduplicated (resource.py): every
- `<link rel=stylesheet href>`, not `alternate`, not `disabled`, `type` absent or text/css, whatever its media
  (browsers fetch non-matching sheets too, only later);
- `<script src>`, classic (type absent, empty or a JavaScript MIME type; `language` honoured) or `type=module`
  (cors, same-origin by default); classic scripts marked `nomodule` are skipped (Chromium and Firefox support
  modules, so they never fetch them), `importmap` and data blocks are not fetched;
- `<link rel=preload as=…>` for the destinations both browsers preload (fetch, font, image, script, style, track),
  without `imagesrcset`, with `media` absent, "all" or "screen" (others depend on the viewport), `type` absent or
  one the browser takes; `<link rel=modulepreload>` (script-like `as` only);
- `<img src>` with no `srcset`, no `sizes`, not `loading=lazy` and not inside <picture> (the choice is the
  viewport's).
Nothing inside <template> (inert: lexbor keeps its content out of the tree), <noscript> (browsers run scripts, so
its markup is text to them: parsed here with the scripting flag set, as they do), or <svg>/<math>
(foreign content; an <img> that breaks out of it is HTML again and found). The base URL is the first <base href>
(urls.base_url). Request mode and credentials follow each element's crossorigin attribute
(resource.cors_settings). URLs are resolved by urls.resolve: http(s) only.

Bounded work: a document is read up to where its elements nest past MAX_NESTING (nesting_bound). An HTML5 parser
looks down its stack of open elements at each start tag, so a document nested n deep costs it n²: lexbor took 3.1 s
for 40 000 nested <div>s (200 kB) and, in review, 2 min for 200 000 (1 MB, within MAX_BYTES), holding discovery up
for every page (one worker, discover_worker.py). Browsers stop nesting far sooner (Chromium's parser at 512). The
bound is found by a linear scan of tag names, not a parse: it only decides where reading stops, and it counts only
elements that are closed by their end tag alone (not void ones, not those whose end tag may be left out, not the
formatting ones a parser closes by itself), so real pages, which nest a few dozen deep, are read whole.

What this does not see, by design: anything a script inserts or imports (learned.py records those from real
loads), srcset choices, CSS background images, and stylesheets' own references (discover_css.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

import webencodings
from html5lib._inputstream import HTMLBinaryInputStream
from selectolax.lexbor import LexborHTMLParser, LexborNode

from .resource import Subresource, cors_settings, dedupe
from .urls import base_url, resolve

MAX_BYTES = 4 * 1024 * 1024
MAX_NESTING = 2048
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
# Not counted: void elements (no end tag), those whose end tag may be omitted (closed by what follows), and the
# formatting elements (the adoption agency closes and reopens them, so their depth is the parser's own affair)
_NOT_NESTING = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
    "html", "head", "body", "p", "li", "dt", "dd", "rb", "rt", "rtc", "rp", "optgroup", "option", "colgroup",
    "caption", "thead", "tbody", "tfoot", "tr", "td", "th",
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"})


def nesting_bound(text: str, limit: int = MAX_NESTING) -> str:
    """`text` up to the start tag that nests its elements past `limit` deep (the whole text where none does)."""
    depth = 0
    for m in _TAG.finditer(text):
        name = m.group(2).lower()
        if name in _NOT_NESTING:
            continue
        if m.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
            if depth > limit:
                return text[:m.start()]
    return text

_JS_TYPES = frozenset(
    {"application/ecmascript", "application/javascript", "application/x-ecmascript", "application/x-javascript",
     "text/ecmascript", "text/javascript", "text/javascript1.0", "text/javascript1.1", "text/javascript1.2",
     "text/javascript1.3", "text/javascript1.4", "text/javascript1.5", "text/jscript", "text/livescript",
     "text/x-ecmascript", "text/x-javascript"}
)
_PRELOAD_DESTINATION = {"fetch": "empty", "font": "font", "image": "image", "script": "script", "style": "style",
                        "track": "track"}
_PRELOAD_TYPES = {
    "style": frozenset({"text/css"}),
    "script": _JS_TYPES,
    "font": frozenset({"font/woff2", "font/woff", "font/ttf", "font/otf", "font/sfnt", "font/collection",
                       "application/font-woff", "application/font-woff2", "application/font-sfnt"}),
    "image": frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/svg+xml",
                        "image/apng", "image/bmp", "image/x-icon", "image/vnd.microsoft.icon"}),
}
_SKIP_SUBTREE = frozenset({"template", "noscript", "svg", "math"})
_ANY_MEDIA = frozenset({"", "all", "screen"})


def _essence(mime: str) -> str:
    return mime.split(";", 1)[0].strip().lower()


Attributes = dict[str, str]  # a valueless attribute (`<script nomodule>`) has the value ""


# The elements read: lexbor's selector engine finds them in C, in document order, where walking every element of a
# 1.7 MB page in Python (23 000 elements, each one's attributes copied) took 30 ms of its 65 ms read on an idle core
_READ = "link, script, img, base, meta"


def _elements(root: LexborNode, selector: str) -> Iterator[tuple[str, Attributes, str | None]]:
    """(tag, attributes, parent's tag) of each element `selector` matches, in document order, but those inside an
    inert or foreign subtree (_SKIP_SUBTREE: the element itself counts, what it holds does not). Each ancestor's
    verdict is kept (by node), so a document nested MAX_NESTING deep costs one walk up, not one per element."""
    held: dict[int, bool] = {}  # node → it is, or is inside, a skipped subtree
    for node in root.css(selector):
        parent = node.parent
        path: list[int] = []
        ancestor, skipped = parent, False
        while ancestor is not None:
            known = held.get(ancestor.mem_id)
            if known is not None:
                skipped = known
                break
            path.append(ancestor.mem_id)
            if ancestor.tag in _SKIP_SUBTREE:
                skipped = True
                break
            ancestor = ancestor.parent
        held.update(dict.fromkeys(path, skipped))
        if not skipped:
            yield node.tag or "", {k: v or "" for k, v in node.attributes.items()}, parent.tag if parent else None


def _script_kind(element: Attributes) -> str | None:
    """'classic', 'module' or None (not fetched) for a <script>, by HTML's "prepare the script element"
    (`nomodule` skips classic scripts only)."""
    kind = _script_type(element)
    if kind == "classic" and "nomodule" in element:
        return None
    return kind


def _script_type(element: Attributes) -> str | None:
    kind = element.get("type")
    if kind is None or kind == "":
        language = element.get("language")
        if kind is None and language:
            kind = "text/" + language
        else:
            return "classic"
    kind = kind.strip().lower()
    if kind == "module":
        return "module"
    return "classic" if _essence(kind) in _JS_TYPES else None


def _link(element: Attributes, href: str, base: str, doc: str, encoding: str) -> list[Subresource]:
    rels = set(element.get("rel", "").lower().split())
    url = resolve(href, base, encoding=encoding)
    if url is None:
        return []
    out: list[Subresource] = []
    crossorigin = element.get("crossorigin")
    link_type = element.get("type")
    if ("stylesheet" in rels and "alternate" not in rels and "disabled" not in element
            and (not link_type or _essence(link_type) == "text/css")):
        mode, credentials = cors_settings(crossorigin)
        sheet_media = element.get("media")
        out.append(Subresource(url, "style", mode, credentials, doc,
                               screen=sheet_media is None or sheet_media.strip().lower() in _ANY_MEDIA))
    if "preload" in rels:
        as_ = element.get("as", "").strip().lower()
        destination = _PRELOAD_DESTINATION.get(as_)
        media = element.get("media", "").strip().lower()
        known_types = _PRELOAD_TYPES.get(as_)
        type_ok = not link_type or known_types is None or _essence(link_type) in known_types
        if (destination is not None and media in _ANY_MEDIA and type_ok
                and not (as_ == "image" and element.get("imagesrcset"))):
            mode, credentials = cors_settings(crossorigin)
            out.append(Subresource(url, destination, mode, credentials, doc))
    if "modulepreload" in rels and element.get("as", "").strip().lower() in ("", "script"):
        mode, credentials = cors_settings(crossorigin, default_cors=True)
        out.append(Subresource(url, "script", mode, credentials, doc))
    return out


def sniff_encoding(body: bytes, charset: str | None) -> str:
    """The document's encoding by the WHATWG byte-stream sniff (html5lib's implementation)."""
    return _sniff(body, charset)[0]


def _sniff(body: bytes, charset: str | None) -> tuple[str, bool]:
    """sniff_encoding, and whether the document declared it (a BOM, the transport's charset, a <meta>) rather than
    it being the sniff's default."""
    stream = HTMLBinaryInputStream(body, transport_encoding=charset)
    encoding, confidence = stream.charEncoding
    stream.rawStream.seek(0)
    return str(encoding.name), confidence == "certain" or stream.detectEncodingMeta() is not None


def discover_html(body: bytes, document_url: str, charset: str | None = None, *,
                  max_bytes: int = MAX_BYTES) -> list[Subresource]:
    """The subresources the browser requests early for this document (see the module's docstring)."""
    return read_document(body, document_url, charset, max_bytes=max_bytes)[0]


def _sets_policy(tag: str, attrs: Attributes) -> bool:
    """A `<meta http-equiv=Content-Security-Policy>`: the browser may refuse to fetch what the document names."""
    return tag == "meta" and attrs.get("http-equiv", "").strip().lower() == "content-security-policy"


class DocumentRead(NamedTuple):
    """What a read of a document (or of its first bytes) found."""

    found: list[Subresource]  # discover_html's subresources
    # The document sets a Content-Security-Policy of its own (a <meta http-equiv>, wherever it is: the browser
    # honours one in <head> only, and taking any is the safe side): what its stylesheets name may be blocked before
    # any request, so nothing of it may be fetched on a guess
    policy: bool
    # The bytes read reach past the document's <head> (an element in its body): no <meta> policy can follow that
    # the browser would take for what its stylesheets name
    head_ended: bool
    # The encoding it was read in where that was declared (a BOM, the Content-Type's charset, a <meta>): its
    # stylesheets' fallback (discover_css.parse_stylesheet). None where it was not: the sniff's default
    # (windows-1252) is then what browsers may replace by what they detect (UTF-8 as likely), so a stylesheet falls
    # back to UTF-8, as CSS does without one
    encoding: str | None


def read_document(body: bytes, document_url: str, charset: str | None = None, *,
                  max_bytes: int = MAX_BYTES) -> DocumentRead:
    """discover_html's subresources, whether the document sets a Content-Security-Policy of its own, and whether
    the bytes read reach past its head (DocumentRead)."""
    body = body[:max_bytes]
    encoding, declared = _sniff(body, charset)
    sheets_encoding = encoding if declared else None
    text, _ = webencodings.decode(body, encoding, errors="replace")  # a BOM wins, as in the sniff
    root = LexborHTMLParser(nesting_bound(text), scripting=True).root  # as browsers that run scripts parse <noscript>
    if root is None:
        return DocumentRead([], False, False, sheets_encoding)
    elements = list(_elements(root, _READ))
    policy = any(_sets_policy(tag, attrs) for tag, attrs, _ in elements)
    head_ended = next(_elements(root, "body > *"), None) is not None
    base_href = next((a["href"] for tag, a, _ in elements if tag == "base" and "href" in a), None)
    base = base_url(base_href, document_url, encoding=encoding)
    if base is None:
        return DocumentRead([], policy, head_ended, sheets_encoding)
    found: list[Subresource] = []
    for tag, attrs, parent in elements:
        if tag == "link":
            href = attrs.get("href", "")
            if href.strip():
                found.extend(_link(attrs, href, base, document_url, encoding))
        elif tag == "script":
            src = attrs.get("src")
            kind = _script_kind(attrs)
            if src is None or not src.strip() or kind is None:
                continue
            url = resolve(src, base, encoding=encoding)
            if url is not None:
                mode, credentials = cors_settings(attrs.get("crossorigin"), default_cors=kind == "module")
                found.append(Subresource(url, "script", mode, credentials, document_url))
        elif tag == "img":
            src = attrs.get("src")
            if (src is None or not src.strip() or "srcset" in attrs or "sizes" in attrs
                    or attrs.get("loading", "").strip().lower() == "lazy" or parent == "picture"):
                continue
            url = resolve(src, base, encoding=encoding)
            if url is not None:
                mode, credentials = cors_settings(attrs.get("crossorigin"))
                found.append(Subresource(url, "image", mode, credentials, document_url))
    return DocumentRead(dedupe(found), policy, head_ended, sheets_encoding)
