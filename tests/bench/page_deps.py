"""What a page's document and stylesheets make a browser fetch, and in how many waves (pure: text in, paths out).

Theory of operation. A browser learns of a subresource only once it has the body that names it: the document names
stylesheets, scripts, images and icons (wave 2, the document itself being wave 1); a stylesheet names what it
`@import`s and the fonts and images in its `url(...)` (one wave later); a script may fetch more, which no static
reading can see. So a page's dependency graph is read statically here (HTML: `<link rel=stylesheet|icon|preload>`,
`<script src>`, `<img src/srcset>`, `<input type=image>`, `<video poster>`, inline `style` attributes'
`url()`; CSS: `@import` and `url()`), and each resource's wave is its shortest chain from the document (the browser
fetches a resource as soon as the first body naming it arrives). What a script fetches is known only from a real
load: `waves_of_requests` places such requests one wave after the deepest script, the earliest they could start.

The static reading over-approximates what a browser fetches (a CSS `url()` whose selector matches nothing, a font
never used); the benchmark therefore takes the set of requests from a real load (the server's access log) and only
their waves from here. Only same-document references are followed: `data:` URLs, fragments and other origins are not
resources of the served copy.
"""

from __future__ import annotations

import posixpath
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin, urlsplit

_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)""", re.I)
_CSS_IMPORT = re.compile(r"""@import\s+(?:"([^"]*)"|'([^']*)')""", re.I)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINK_RELS = {"stylesheet", "icon", "shortcut", "preload", "modulepreload", "apple-touch-icon"}


class _HtmlRefs(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.base: str | None = None
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "base" and a.get("href") and self.base is None:
            self.base = a["href"]
        elif tag == "link" and _LINK_RELS & set(a.get("rel", "").lower().split()) and a.get("href"):
            self.refs.append(a["href"])
        elif tag == "script" and a.get("src"):
            self.refs.append(a["src"])
        elif tag == "img":
            if a.get("src"):
                self.refs.append(a["src"])
            # srcset: the browser picks one candidate; the first is the one it takes at 1x in these pages.
            if a.get("srcset"):
                self.refs.append(a["srcset"].split(",")[0].split()[0])
        elif tag == "input" and a.get("type", "").lower() == "image" and a.get("src"):
            self.refs.append(a["src"])
        elif tag == "video" and a.get("poster"):
            self.refs.append(a["poster"])
        elif tag == "style":
            self._in_style = True
        if a.get("style"):
            self.refs += css_references(a["style"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.refs += css_references(data)


def html_references(text: str) -> tuple[list[str], str | None]:
    """The references (as written) a document makes the browser fetch, and its `<base href>` if any."""
    p = _HtmlRefs()
    p.feed(text)
    p.close()
    return p.refs, p.base


def css_references(text: str) -> list[str]:
    """The references (as written) of a stylesheet: `@import "x"` and every `url(...)` (imports included)."""
    text = _CSS_COMMENT.sub("", text)
    out = [next(g for g in m.groups() if g is not None) for m in _CSS_IMPORT.finditer(text)]
    out += [next(g for g in m.groups() if g is not None) for m in _CSS_URL.finditer(text)]
    return [r for r in out if r]


def resolve(base_path: str, ref: str) -> str | None:
    """`ref` as written in the body at `base_path` (a server path, "/a/b.html") → the server path it names, or None
    for what is no resource of this server (data:, other origins, fragments only, empty)."""
    ref = ref.strip()
    if not ref or ref.startswith("#"):
        return None
    parts = urlsplit(urljoin("http://page" + base_path, ref))
    if parts.scheme != "http" or parts.netloc != "page":
        return None
    if not parts.path:
        return None
    path = posixpath.normpath(unquote(parts.path))
    return path + "/" if parts.path.endswith("/") and path != "/" else path  # a folder (a <base href>) stays one


def kind_of(path: str) -> str:
    """"html", "css", "js" or "other", from the file name (the corpus is static files)."""
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return {"html": "html", "htm": "html", "css": "css", "js": "js", "mjs": "js"}.get(ext, "other")


def dependency_graph(root: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """Path → the paths its body names, for everything reachable from the document `root`. `read(path)` gives a
    text body or None (absent, or not text we follow); only the document and stylesheets are read."""
    graph: dict[str, list[str]] = {}
    todo = deque([root])
    while todo:
        path = todo.popleft()
        if path in graph:
            continue
        kind = kind_of(path)
        text = read(path) if path == root or kind == "css" else None
        if text is None:
            graph[path] = []
            continue
        if path == root:
            refs, base = html_references(text)
            base_path = resolve(path, base) or path if base else path
        else:
            refs, base_path = css_references(text), path
        children = list(dict.fromkeys(p for r in refs if (p := resolve(base_path, r)) is not None and p != path))
        graph[path] = children
        todo.extend(children)
    return graph


def waves(graph: Mapping[str, Sequence[str]], root: str) -> dict[str, int]:
    """Each reachable path's wave: 1 for `root`, then 1 + the smallest wave of a body naming it."""
    out = {root: 1}
    todo = deque([root])
    while todo:
        path = todo.popleft()
        for child in graph.get(path, ()):
            if child not in out:
                out[child] = out[path] + 1
                todo.append(child)
    return out


def waves_of_requests(static: Mapping[str, int], requested: Iterable[str]) -> dict[str, int]:
    """The wave of each path a real load requested: its static wave, or for what no document or stylesheet names
    (a script fetched it) one more than the deepest script requested (2 if none)."""
    requested = list(requested)
    scripts = [static[p] for p in requested if p in static and kind_of(p) == "js"]
    dynamic = (max(scripts) if scripts else 1) + 1
    return {p: static.get(p, dynamic) for p in requested}


def critical_waves(graph: Mapping[str, Sequence[str]], root: str, times: Mapping[str, tuple[float, float]],
                   rtt_s: float) -> int:
    """The waves one real load spent on its critical path, as the server saw them: the longest chain of requested
    paths from the document (which counts 1), each step a body that named the next and whose answer had ended half a
    round trip or more before the next was asked ("the browser found it in that body": an answer that ends reaches
    the client half a round trip later, and a request it prompts reaches the server half a round trip after that).
    A parent whose answer had not ended by then did not gate the child: a prefetch, a preload scanner reading the
    document's first bytes, a request pipelined behind its parent. A child no parent gated hangs from the document:
    2 if it was asked half a round trip or more after the document's answer ended (found in it), else 1.

    `times`: each path the load requested (below the page's folder, no query) → (when the server got its first
    request for it, when its last answer ended), seconds on one clock. A parent is a requested path whose body names
    the child (`graph`), of a lower wave; what no document or stylesheet names (a script fetched it) has the requested
    scripts for parents (as `waves_of_requests`). Without the document in `times` the load saw nothing: 0.
    Limits: a server logs a pipelined request when it reaches it, not when it came, so a child pipelined behind a
    long answer may look found late (ON counted high); a parent answered twice counts its last answer's end."""
    if root not in times:
        return 0
    wave = waves_of_requests(waves(graph, root), times)
    named_by: dict[str, list[str]] = {}
    for parent, children in graph.items():
        for child in children:
            named_by.setdefault(child, []).append(parent)
    scripts = [p for p in times if kind_of(p) == "js"]

    def gated(parent: str, asked: float) -> bool:
        return asked > times[parent][1] + rtt_s / 2

    chain: dict[str, int] = {}
    for path in sorted(times, key=lambda p: (wave[p], p)):
        if path == root:
            chain[path] = 1
            continue
        asked = times[path][0]
        parents = [q for q in named_by.get(path, scripts) if q in chain and wave[q] < wave[path] and gated(q, asked)]
        chain[path] = max([1 + gated(root, asked), *(chain[q] + 1 for q in parents)])
    return max(chain.values())
