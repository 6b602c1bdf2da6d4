"""Can this response head belong to this request? (pure, no I/O)

HTTP/1.1 pipelining matches responses to requests by order alone. A server that writes one response too
many (an application bug, a 204 or 304 carrying a body, a Content-Length too short whose excess parses as
a response) or skips one shifts every later response on the connection by one, and nothing in the
protocol says so. Most of those shifts end in a check the pipeline makes anyway (bytes with nothing
outstanding, a request left unanswered); this module adds the checks a single head allows, so a shift
is often caught at the first wrong head, before anything was delivered:

- a partial answer (206, 416, Content-Range) to a request that asked for no range;
- 304 Not Modified to a request that was not conditional;
- a successful body whose media type cannot serve the request's destination (a stylesheet answered with
  an image, an image with a script): only clear contradictions, never generic types (text/html for a
  soft 404, text/plain, application/octet-stream), which real servers send for anything.

A finding is a sign of desynchronisation, not proof; the pipeline treats it as one (pipeline.py): the
connection is dropped, everything on it not yet proven in step is fetched again alone, and the origin
stops pipelining. A false alarm therefore costs a refetch, never a wrong body.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import Headers
from .response_parser import ResponseHead

_CONDITIONAL = frozenset({"if-none-match", "if-modified-since"})

# Media-type families each destination can never be served by (RFC 9110 §8.3 types, by their top level or
# full name). Browsers refuse these outright (stylesheets and scripts under strict MIME checking; images and
# fonts do not decode), so a server that means them is broken in the browser too.
_SCRIPT_TYPES = ("application/javascript", "text/javascript", "application/x-javascript", "text/ecmascript",
                 "application/ecmascript", "module/javascript")
_FOREIGN: dict[str, tuple[str, ...]] = {
    "image": ("text/css", *_SCRIPT_TYPES, "font/", "audio/", "video/"),
    "stylesheet": ("image/", *_SCRIPT_TYPES, "font/", "audio/", "video/"),
    "script": ("image/", "text/css", "font/", "audio/", "video/"),
    "font": ("image/", "text/css", *_SCRIPT_TYPES, "audio/", "video/"),
}


@dataclass(frozen=True)
class Expectation:
    """What a request lets us expect of its answer."""

    method: str
    ranged: bool = False  # it carries Range
    conditional: bool = False  # it carries If-None-Match or If-Modified-Since
    destination: str = "other"  # the browser's resource type: image, stylesheet, script, font, ...

    @classmethod
    def of(cls, method: str, headers: Headers, destination: str) -> Expectation:
        names = {k.lower() for k, _ in headers}
        return cls(method.upper(), "range" in names, bool(names & _CONDITIONAL), destination)


def implausible(head: ResponseHead, expect: Expectation) -> str | None:
    """Why this head cannot answer a request with this expectation; None when it can."""
    if not expect.ranged:
        if head.status in (206, 416):
            return f"a {head.status} answered a request without Range"
        if 200 <= head.status < 300 and head.get("content-range") is not None:
            return "a Content-Range answered a request without Range"
    if head.status == 304 and not expect.conditional:
        return "a 304 answered a request that was not conditional"
    foreign = _FOREIGN.get(expect.destination)
    if foreign and 200 <= head.status < 300:
        media = (head.get("content-type") or "").split(";", 1)[0].strip().lower()
        if media and any(media == f or (f.endswith("/") and media.startswith(f)) for f in foreign):
            return f"a {media} body answered a {expect.destination} request"
    return None
