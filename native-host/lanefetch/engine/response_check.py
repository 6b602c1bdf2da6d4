"""Can this response head belong to this request? (pure, no I/O)

HTTP/1.1 pipelining matches responses to requests by order alone. A server that writes one response too
many (an application bug, a 204 or 304 carrying a body, a Content-Length too short whose excess parses as
a response) or skips one shifts every later response on the connection by one, and nothing in the
protocol says so. Most of those shifts end in a check the pipeline makes anyway (bytes with nothing
outstanding, a request left unanswered); this module adds the checks a single head allows, so a shift
is often caught at the first wrong head, before anything was delivered:

- a partial answer (206, 416, Content-Range) to a request that asked for no range, or a range starting elsewhere
  than the one asked for;
- 304 Not Modified to a request that was not conditional, or naming (ETag) a version its If-None-Match did not list:
  a server answers 304 only where the current version's entity tag matches one listed, and names it (RFC 9110
  §13.1.2, §15.4.5; weakly compared, as nginx names "x" for the W/"x" of a body it compressed). Two revalidations
  answered in each other's place are otherwise alike in every way (no body, no type, nothing owed after them);
- a successful body whose media type cannot serve the request's destination (a stylesheet answered with
  an image, an image with a script): only clear contradictions, never generic types (text/html for a
  soft 404, text/plain, application/octet-stream), which real servers send for anything.

One kind of answer proves its own place: a 206 whose Content-Range is exactly the single range its request
asked for (`proves_itself`), where no other request on the connection asked for that range (pipeline.py checks
that). The split over interfaces pipelines ranges of one body, each a different range, so such an answer cannot be
another request's; the pipeline passes it on at once instead of holding it until the connection drains (which a
lane that always has its next range queued would never do). A flight's pieces of several bodies
(prefetch/flight_pieces.py) can ask the same range of two URLs on one connection: those are held like any answer.

Another proves its place by exclusion (`proves_by_exclusion`): a 200 to a GET whose media type its request's
destination takes and every other request not yet proven on the connection (pipelined behind it, or answered but
held) refuses by the table below. A shift can only move an answer to another request of the connection; where no
other one could take a text/css body, a text/css body at a stylesheet's place is that stylesheet's. So a stylesheet
with a font pipelined behind it reaches the page as it arrives instead of after the font (tens of kB, seconds on a
slow link): the pool may then send a page's fonts in the same round trip as its stylesheets. What stays is the
browser's own risk: a connection's already proven request answered twice, late, looks like the next answer to a
browser on a keep-alive connection too.

A finding is a sign of desynchronisation, not proof; the pipeline treats it as one (pipeline.py): the
connection is dropped, everything on it not yet proven in step is fetched again alone, and the origin
stops pipelining. A false alarm therefore costs a refetch, never a wrong body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .fields import Headers
from .response_parser import ResponseHead

_CONDITIONAL = frozenset({"if-none-match", "if-modified-since"})
_RANGE = re.compile(r"bytes=([0-9]{1,18})-([0-9]{1,18})?")
_ENTITY_TAG = re.compile(r'(?:W/)?("[^"]*")')
_CONTENT_RANGE = re.compile(r"bytes ([0-9]{1,18})-([0-9]{1,18})/([0-9]{1,18}|\*)")

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
    byte_range: tuple[int, int | None] | None = None  # the one range asked for (first, last or open)
    # The opaque tags its If-None-Match lists (W/ dropped: a 304 is compared weakly); empty: any version may be named
    # (none listed, `*`, or a list that does not parse)
    entity_tags: frozenset[str] = frozenset()
    resource: str = ""  # the URL asked for; "" where not known (then it is nobody's in particular)

    @classmethod
    def of(cls, method: str, headers: Headers, destination: str, resource: str = "") -> Expectation:
        names = {k.lower() for k, _ in headers}
        ranges = [v for k, v in headers if k.lower() == "range"]
        byte_range = None
        if len(ranges) == 1 and (m := _RANGE.fullmatch(ranges[0].strip())):
            byte_range = (int(m[1]), int(m[2]) if m[2] else None)
        return cls(method.upper(), "range" in names, bool(names & _CONDITIONAL), destination, byte_range,
                   _entity_tags([v for k, v in headers if k.lower() == "if-none-match"]), resource)


def _entity_tags(values: list[str]) -> frozenset[str]:
    """The opaque tags If-None-Match lists (RFC 9110 §13.1.2: `*` or entity tags, comma separated); empty where any
    version may be named: none listed, `*`, or anything that is not a list of entity tags."""
    tags: set[str] = set()
    for value in values:
        for item in value.split(","):
            m = _ENTITY_TAG.fullmatch(item.strip())
            if m is None:
                return frozenset()
            tags.add(m[1])
    return frozenset(tags)


def _opaque(etag: str) -> str:
    etag = etag.strip()
    return etag[2:] if etag.startswith("W/") else etag


def proves_itself(head: ResponseHead, expect: Expectation) -> bool:
    """Is this a 206 carrying exactly the one byte range its request asked for?"""
    if head.status != 206 or expect.byte_range is None:
        return False
    m = _CONTENT_RANGE.fullmatch((head.get("content-range") or "").strip())
    if m is None:
        return False
    first, last = expect.byte_range
    total = None if m[3] == "*" else int(m[3])
    want_last = last if last is not None and (total is None or last < total) else (
        None if total is None else total - 1)
    return int(m[1]) == first and want_last is not None and int(m[2]) == want_last


def answers_alike(head: ResponseHead, expect: Expectation, other: tuple[int, int | None]) -> bool:
    """Would a request for the byte range `other` have got this very answer (a 206 that proves itself for `expect`)?
    Its own range does; so does any other from the same first byte where the body ended inside both (the server
    answers `first-(total-1)/total` to each: two images' first pieces, bytes=0-43287 and bytes=0-43286, of a body
    of 800 bytes both get `0-799/800`). An answer of exactly the range asked, ending before the body does, is that
    range's alone."""
    m = _CONTENT_RANGE.fullmatch((head.get("content-range") or "").strip())
    if m is None or expect.byte_range is None:
        return True  # nothing to tell them apart by
    first, last = int(m[1]), int(m[2])
    if other[0] != first:
        return False
    if other == expect.byte_range:
        return True
    total = None if m[3] == "*" else int(m[3])
    ends_body = total is not None and last == total - 1
    return ends_body and (other[1] is None or other[1] >= last)


def _media(head: ResponseHead) -> str:
    return (head.get("content-type") or "").split(";", 1)[0].strip().lower()


def refuses(destination: str, media: str) -> bool:
    """Can a successful body of this media type never serve this destination (_FOREIGN)?"""
    foreign = _FOREIGN.get(destination, ())
    return bool(media) and any(media == f or (f.endswith("/") and media.startswith(f)) for f in foreign)


def proves_by_exclusion(head: ResponseHead, expect: Expectation, others: Iterable[Expectation | None]) -> bool:
    """Is this head its request's answer because no other unproven request of the connection (`others`: those
    pipelined behind it and those answered but held; None: unknown) could take it: a 200 to a plain GET (no Range, not
    conditional) of a destination the table knows, with a media type that destination takes and every other one,
    all GETs of known destinations, refuses? The others may ask for a range (an image's first piece behind a
    stylesheet) or be conditional: a 200 is still the only successful answer with a body they could get, and its
    media type is what their destination refuses; a 206 or a 304 is not a 200."""
    media = _media(head)
    if head.status != 200 or not media or not _plain_get(expect) or refuses(expect.destination, media):
        return False
    return all(o is not None and o.method == "GET" and o.destination in _FOREIGN and refuses(o.destination, media)
               for o in others)


def may_prove_by_exclusion(expect: Expectation) -> bool:
    """Could this request's answer ever prove its place by exclusion (a plain GET of a known destination)? A
    conditional or ranged one, a HEAD, or a fetch never does: what is pipelined behind it holds it until the
    connection drains (pool_plan.behind_lone_leader asks)."""
    return _plain_get(expect)


def _plain_get(expect: Expectation) -> bool:
    return (expect.method == "GET" and not expect.ranged and not expect.conditional
            and expect.destination in _FOREIGN)


def implausible(head: ResponseHead, expect: Expectation) -> str | None:
    """Why this head cannot answer a request with this expectation; None when it can."""
    if not expect.ranged:
        if head.status in (206, 416):
            return f"a {head.status} answered a request without Range"
        if 200 <= head.status < 300 and head.get("content-range") is not None:
            return "a Content-Range answered a request without Range"
    elif head.status == 206 and expect.byte_range is not None:
        m = _CONTENT_RANGE.fullmatch((head.get("content-range") or "").strip())
        if m is not None and int(m[1]) != expect.byte_range[0]:
            return f"a range from byte {m[1]} answered a request for one from byte {expect.byte_range[0]}"
    if head.status == 304 and not expect.conditional:
        return "a 304 answered a request that was not conditional"
    if head.status == 304 and expect.entity_tags and (etag := head.get("etag")) is not None \
            and _opaque(etag) not in expect.entity_tags:
        return f"a 304 naming {etag.strip()[:80]} answered a request whose If-None-Match did not list it"
    if 200 <= head.status < 300 and refuses(expect.destination, media := _media(head)):
        return f"a {media} body answered a {expect.destination} request"
    return None
