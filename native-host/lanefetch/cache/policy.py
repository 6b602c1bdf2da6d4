"""The lookup decision (RFC 9111 §4): given a request and the stored entries for its key, answer
from the store, revalidate, fetch (and maybe store), or keep the cache out of it altogether.

The browser's own request directives are respected the way the browser's cache would:
- `Cache-Control: no-store` in the request: neither read nor stored.
- `Cache-Control: no-cache`, or `Pragma: no-cache` without Cache-Control (a hard reload): never a hit;
  revalidated if the entry has a validator, fetched in full otherwise (and the answer stored).
- `Cache-Control: max-age=N` / `min-fresh=N`: the entry must be at most N old / fresh N more seconds.
- A request with its own conditional fields (If-None-Match, …) or a Range is the page's own
  validation: passed through untouched, neither answered from nor stored in the cache.
Only GET is answered from the cache; an unsafe method answered with 2xx/3xx invalidates the stored
entries for its URL (§4.4)."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.fields import Headers
from .directives import parse_cache_control, pragma_no_cache
from .entry import StoredEntry, StoredHead
from .freshness import current_age, lifetime
from .storability import has_validator
from .validation import CONDITIONAL_FIELDS, conditional_headers
from .vary import matches

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


@dataclass(frozen=True)
class Bypass:
    """The cache stays out: no lookup, nothing stored."""

    reason: str


@dataclass(frozen=True)
class Miss:
    """Fetch as usual; store the response if it may be stored."""


@dataclass(frozen=True)
class Hit:
    entry: StoredEntry
    age: float


@dataclass(frozen=True)
class Revalidate:
    """Send the request with these conditional fields added; a 304 serves the stored body."""

    entry: StoredEntry
    conditional: Headers


Decision = Bypass | Miss | Hit | Revalidate


def _values(headers: Headers, name: str) -> list[str]:
    return [v for k, v in headers if k.lower() == name]


def bypass_reason(method: str, headers: Headers) -> str | None:
    """Why the cache must stay out of this request entirely, or None."""
    if method != "GET":
        return f"{method} is not cached"
    names = {k.lower() for k, _ in headers}
    if names & CONDITIONAL_FIELDS:
        return "the request is conditional itself"
    if "range" in names:
        return "range requests are not cached"
    if parse_cache_control(_values(headers, "cache-control")).no_store:
        return "the request says no-store"
    return None


def forces_revalidation(headers: Headers) -> bool:
    cc_values = _values(headers, "cache-control")
    if cc_values:
        return parse_cache_control(cc_values).no_cache
    return pragma_no_cache(_values(headers, "pragma"))


def decide(method: str, headers: Headers, candidates: list[StoredEntry], now: float) -> Decision:
    reason = bypass_reason(method, headers)
    if reason is not None:
        return Bypass(reason)
    usable = [c for c in candidates if matches(c.head.vary, headers)]
    if not usable:
        return Miss()
    entry = max(usable, key=lambda c: c.head.response_time)
    head = entry.head
    request_cc = parse_cache_control(_values(headers, "cache-control"))
    response_cc = parse_cache_control(head.get_all("cache-control"))
    age = current_age(head, now)
    life = lifetime(head)
    fresh = life > age
    if request_cc.max_age is not None and age > request_cc.max_age:
        fresh = False
    if request_cc.min_fresh is not None and life - age < request_cc.min_fresh:
        fresh = False
    if fresh and not response_cc.no_cache and not forces_revalidation(headers):
        return Hit(entry, age)
    if has_validator(head):
        return Revalidate(entry, conditional_headers(head))
    return Miss()


def invalidates(method: str, status: int) -> bool:
    """An unsafe request answered with success or redirect invalidates stored responses for its URL."""
    return method not in SAFE_METHODS and 200 <= status < 400


def served_headers(head: StoredHead, age: float) -> Headers:
    """Stored fields as served: with the current Age (§5.1), in whole seconds."""
    return [(k, v) for k, v in head.headers if k.lower() != "age"] + [("Age", str(int(age)))]
