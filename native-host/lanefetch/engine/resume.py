"""May a body broken mid-way be finished from another response, and how? (pure, no I/O)

A connection that breaks mid-body leaves the sink holding a prefix it has already passed on. Finishing
it from a second response splices two responses into one body, which is only right when both are the
same representation. Content-Length and a status are no proof of that (another version of the same
length fits them), so RFC 9110's rule for If-Range is the rule here (§13.1.5): resume only with a
*strong* validator, a strong entity tag or else a Last-Modified that is strong (§8.8.2.2: at least one
second before the response's own Date), and ask with `Range` + `If-Range`, so a server whose
representation changed answers the whole new one (200) instead of a piece of it.

The answer to a resume is checked here too: a 206 must start exactly where the prefix ended and name
the same validator, length and coding; a 200 may replace the prefix only if it carries the same strong
validator (a server that ignores Range). Anything else ends the request with `resource_changed`; the
page never sees a splice of two versions.
"""

from __future__ import annotations

import re
from email.utils import parsedate_to_datetime

from .fields import Headers
from .response_parser import ParseError, ResponseHead, content_length

_CONTENT_RANGE = re.compile(r"bytes ([0-9]{1,18})-([0-9]{1,18})/([0-9]{1,18}|\*)")
# What must stay the same between the first response and the one that finishes it.
_SAME = ("etag", "last-modified", "content-encoding")


def strong_validator(head: ResponseHead) -> str | None:
    """The value to send in If-Range for this response, or None when it has no strong validator."""
    etag = (head.get("etag") or "").strip()
    if etag:
        return None if etag.startswith("W/") else etag  # a weak tag: no If-Range at all (§13.1.5)
    modified, date = head.get("last-modified"), head.get("date")
    if not modified or not date:
        return None
    try:
        gap = (parsedate_to_datetime(date) - parsedate_to_datetime(modified)).total_seconds()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return modified.strip() if gap >= 1 else None


def resume_headers(headers: Headers, first: ResponseHead, offset: int) -> Headers | None:
    """The request's own fields plus Range from `offset` and If-Range; None when it cannot be resumed (no
    strong validator, a request with its own Range or conditions, nothing received yet, not a 200)."""
    validator = strong_validator(first)
    own = {k.lower() for k, _ in headers}
    if validator is None or offset <= 0 or first.status != 200 or own & {"range", "if-range"}:
        return None
    kept = [(k, v) for k, v in headers if k.lower() not in ("if-none-match", "if-modified-since")]
    return [*kept, ("Range", f"bytes={offset}-"), ("If-Range", validator)]


def continues(first: ResponseHead, head: ResponseHead, offset: int) -> str | None:
    """Why `head` (the answer to a resume from `offset`) cannot finish `first`'s body; None when it can."""
    if any(head.get(name) != first.get(name) for name in _SAME):
        return "the retried response names another version"
    if head.status != 206:
        return f"the retried response is a {head.status}, not the rest of the first"
    m = _CONTENT_RANGE.fullmatch((head.get("content-range") or "").strip())
    if m is None or int(m.group(1)) != offset:
        return f"the retried range does not start at byte {offset}"
    try:  # the first's Content-Length as the parser read it ("100, 100" is 100)
        length = content_length(first)
    except ParseError:
        return "the first response's length cannot be read"
    total = m.group(3)
    if length is not None and total != "*" and int(total) != length:
        return "the retried range belongs to a body of another length"
    # The range must reach the body's end: by the first's Content-Length, else by its own total (a chunked first
    # answer has no length the page could tell a short body by); with neither, nothing shows it does.
    end = length if length is not None else None if total == "*" else int(total)
    if end is None or int(m.group(2)) + 1 != end:
        return "the retried range does not reach the end of the body"
    return None


def range_end(head: ResponseHead) -> int | None:
    """One past the last byte a 206's Content-Range names (the body's length once it is delivered), or None."""
    m = _CONTENT_RANGE.fullmatch((head.get("content-range") or "").strip())
    return None if m is None else int(m.group(2)) + 1


def replaces(first: ResponseHead, head: ResponseHead, delivered: int) -> bool:
    """May a whole new response (a 200 again) stand in for the first? Only as the same representation: the
    same status, coding, length and range (a 206 of other bytes is no stand-in), and either nothing of the first
    body delivered yet (the page saw only a head the second matches) or the same strong validator (a server that
    ignored Range)."""
    if head.status != first.status or any(
        head.get(name) != first.get(name) for name in (*_SAME, "content-length", "content-range")
    ):
        return False
    return delivered == 0 or strong_validator(first) is not None
