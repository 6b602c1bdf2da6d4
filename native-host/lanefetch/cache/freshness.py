"""Freshness (RFC 9111 §4.2) of a stored response, as a private cache computes it.

- lifetime: max-age, else Expires − Date, else (only for 200, 203 and 206 without must-revalidate, as
  Chromium: RFC 9110 lists more codes as heuristically cacheable, 404 among them, but a browser's cache
  does not guess for them, so neither does this one) 10 % of the time between Last-Modified and Date,
  capped at HEURISTIC_CAP. s-maxage is for shared caches and ignored here. An invalid Expires means
  already expired. A response that says `Pragma: no-cache` has none (Chromium and Firefox revalidate it).
- age: §4.2.3 exactly: the larger of the apparent age (response_time − Date) and the Age header
  corrected by the request's round trip, plus the time the entry has been resident since."""

from __future__ import annotations

from .dates import parse_http_date
from .directives import delta_seconds, parse_cache_control, pragma_no_cache
from .entry import StoredHead

HEURISTIC_FRACTION = 0.1
HEURISTIC_CAP = 7 * 24 * 3600.0  # a week, as Firefox caps it; Last-Modified years ago is no promise
# RFC 9110 §15.1: status codes cacheable by default (storable without explicit freshness: storability.py).
HEURISTICALLY_CACHEABLE = frozenset({200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501})
# The status codes a browser's cache gives heuristic freshness (Chromium's HttpResponseHeaders): fewer than
# RFC 9110 §15.1 allows.
HEURISTICALLY_FRESH = frozenset({200, 203, 206})


def date_value(head: StoredHead) -> float:
    """The Date header, or the response time when absent or invalid (§4.2.3 lets a cache assume it)."""
    date = parse_http_date(head.get("date"))
    return head.response_time if date is None else date


def explicit_lifetime(head: StoredHead) -> float | None:
    """max-age or Expires − Date; None when the server gave neither."""
    cc = parse_cache_control(head.get_all("cache-control"))
    if cc.max_age is not None:
        return float(cc.max_age)
    expires_values = head.get_all("expires")
    if expires_values:
        expires = parse_http_date(expires_values[0]) if len(expires_values) == 1 else None
        if expires is None:
            return 0.0  # invalid Expires (or several): already expired
        return max(0.0, expires - date_value(head))
    return None


def heuristic_lifetime(head: StoredHead) -> float | None:
    if not head.heuristic_ok:
        return None
    cc = parse_cache_control(head.get_all("cache-control"))
    if head.status not in HEURISTICALLY_FRESH or cc.must_revalidate:
        return None
    last_modified = parse_http_date(head.get("last-modified"))
    if last_modified is None:
        return None
    return min(HEURISTIC_CAP, max(0.0, (date_value(head) - last_modified) * HEURISTIC_FRACTION))


def lifetime(head: StoredHead) -> float:
    """Freshness lifetime in seconds (0 when none can be found: stale at once)."""
    if pragma_no_cache(head.get_all("pragma")):
        return 0.0
    explicit = explicit_lifetime(head)
    if explicit is not None:
        return explicit
    return heuristic_lifetime(head) or 0.0


def _age_header(head: StoredHead) -> float:
    value = head.get_all("age")
    if not value:
        return 0.0
    return float(delta_seconds(value[0].split(",")[0].strip()))  # a list: its first member (RFC 9111 §5.1)


def current_age(head: StoredHead, now: float) -> float:
    apparent_age = max(0.0, head.response_time - date_value(head))
    response_delay = max(0.0, head.response_time - head.request_time)
    corrected_age_value = _age_header(head) + response_delay
    corrected_initial_age = max(apparent_age, corrected_age_value)
    resident_time = max(0.0, now - head.response_time)
    return corrected_initial_age + resident_time


def is_fresh(head: StoredHead, now: float) -> bool:
    return lifetime(head) > current_age(head, now)
