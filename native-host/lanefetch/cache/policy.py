"""The lookup decision (RFC 9111 §4): given a request and the stored entries for its key, answer
from the store, revalidate, fetch (and maybe store), or keep the cache out of it altogether.

The browser's own request directives are respected the way the browser's cache would:
- `Cache-Control: no-store` in the request: neither read nor stored.
- `Cache-Control: no-cache` or `Pragma: no-cache` (a hard reload sends both): fetched in full, with no conditional
  fields, and the URL's stored entries (every variant) are dropped before it goes, whatever it brings back; the
  answer is stored as any other. This is Chromium's cache (http_cache_util.cc: either header means
  LOAD_BYPASS_CACHE, the entry doomed and written anew), and Pragma counts even beside a Cache-Control that does
  not say no-cache: RFC 9111 §5.4 would ignore it then, but a browser's cache would not answer that request from
  storage, so neither does this one.
- `Cache-Control: max-age=0` (a normal reload): never a hit, however young the entry; revalidated if it has a
  validator (Chromium's LOAD_VALIDATE_CACHE), fetched otherwise. An invalid or repeated request max-age counts as 0
  (directives.py), a quoted one not at all (as in Chromium, which reads neither).
- `Cache-Control: max-age=N` / `min-fresh=N`: the entry must be at most N old / fresh N more seconds.
- A stored response whose lifetime is 0 (`max-age=0`, Expires at or before Date, an invalid freshness) is never a
  hit, however young: fresh means lifetime > age (§4.2), never ≥.
- A page's fetch() or XMLHttpRequest (resource type `fetch` / `xhr`) is looked up as if it said `max-age=0`
  (`lookup_fields`; the field is never sent): never a hit, revalidated or fetched. fetch()'s cache modes
  "no-store", "reload" and "no-cache" reach Chromium's cache as load flags (and the wire as `Cache-Control` /
  `Pragma`) only after the DevTools Fetch domain paused the request, which says nothing of the mode (measured,
  Chromium 156: no field, no Network event field either), so a second `fetch(url, {cache: "no-store"})` was
  answered from this cache where Chromium's own would have gone to the server. Validated, such a request gets the
  server's current answer (a 304 vouches for the stored body): data-correct for every mode, at the cost of a
  round trip where a page's plain fetch() of a fresh response would have been a hit.
- A request with its own conditional fields (If-None-Match, …) or a Range is the page's own
  validation: passed through untouched, neither answered from nor stored in the cache.
Only GET is answered from the cache; an unsafe method answered with 2xx/3xx invalidates the stored
entries for its URL (§4.4).

Bodies are stored as the server coded them. An entry whose content coding the request's Accept-Encoding does not
accept (RFC 9110 §12.5.3: no field accepts any; `coding;q=0` refuses it, `*` stands for the codings not named) is
not used for it, whether or not the response said `Vary: Accept-Encoding` (many servers omit it): a request that
asked for gzip alone and is delivered as coded (`decode` off) must not get br. Chromium's paused requests carry
no Accept-Encoding (the helper adds its own and decodes), so they use every entry."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.fields import Headers
from .directives import parse_cache_control, pragma_no_cache
from .entry import StoredEntry, StoredHead
from .freshness import current_age, lifetime
from .storability import NEVER_STORED, has_validator
from .validation import CONDITIONAL_FIELDS, conditional_headers
from .vary import matches

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


@dataclass(frozen=True)
class Bypass:
    """The cache stays out: no lookup, nothing stored."""

    reason: str


@dataclass(frozen=True)
class Miss:
    """Fetch as usual; store the response if it may be stored. With `drop`, the URL's stored entries (all its
    variants) go first: the request forced a fetch (no-cache), and what was stored must not answer anything again,
    even if this fetch fails or is not stored."""

    drop: bool = False


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


def coding_accepted(head: StoredHead, headers: Headers) -> bool:
    """Does the request's Accept-Encoding accept the stored body's content coding (see the module's docstring)?"""
    codings = [c.strip().lower() for v in head.get_all("content-encoding") for c in v.split(",") if c.strip()]
    fields = _values(headers, "accept-encoding")
    if not codings or codings == ["identity"] or not fields:
        return True
    weights: dict[str, float] = {}
    for field in fields:
        for item in field.split(","):
            name, _, params = item.partition(";")
            name = name.strip().lower()
            if not name:
                continue
            q = 1.0
            for param in params.split(";"):
                key, _, value = param.partition("=")
                if key.strip().lower() == "q":
                    try:
                        q = float(value.strip())
                    except ValueError:
                        q = 0.0  # not a weight: taken as a refusal, the safe reading
            weights[name] = q
    aliases = {"x-gzip": "gzip", "x-compress": "compress"}
    named = {aliases.get(k, k): v for k, v in weights.items()}
    return all(named.get(c, named.get("*", 0.0)) > 0 for c in (aliases.get(c, c) for c in codings))


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


def forces_fetch(headers: Headers) -> bool:
    """`Cache-Control: no-cache` or `Pragma: no-cache` in the request: fetched in full (the module's docstring)."""
    request_cc = parse_cache_control(_values(headers, "cache-control"))
    return request_cc.no_cache or pragma_no_cache(_values(headers, "pragma"))


VALIDATED_TYPES = frozenset({"fetch", "xhr"})
"""Resource types whose request may carry a cache mode the paused request does not show (the module's docstring)."""


def lookup_fields(headers: Headers, resource_type: str) -> Headers:
    """The fields a request is looked up with: its own, and `Cache-Control: max-age=0` for a fetch() or XHR."""
    if resource_type in VALIDATED_TYPES:
        return [*headers, ("cache-control", "max-age=0")]
    return list(headers)


def decide(method: str, headers: Headers, candidates: list[StoredEntry], now: float) -> Decision:
    reason = bypass_reason(method, headers)
    if reason is not None:
        return Bypass(reason)
    if forces_fetch(headers):
        return Miss(drop=bool(candidates))
    usable = [c for c in candidates if matches(c.head.vary, headers) and coding_accepted(c.head, headers)]
    if not usable:
        return Miss()
    entry = max(usable, key=lambda c: c.head.response_time)
    head = entry.head
    request_cc = parse_cache_control(_values(headers, "cache-control"))
    response_cc = parse_cache_control(head.get_all("cache-control"))
    age = current_age(head, now)
    life = lifetime(head)
    fresh = life > age
    if request_cc.max_age is not None and (age > request_cc.max_age or request_cc.max_age == 0):
        fresh = False  # max-age=0 validates even an entry of age 0 (a reload), as Chromium's LOAD_VALIDATE_CACHE
    if request_cc.min_fresh is not None and life - age < request_cc.min_fresh:
        fresh = False
    if fresh and not response_cc.no_cache:
        return Hit(entry, age)
    if has_validator(head):
        return Revalidate(entry, conditional_headers(head))
    return Miss()


def invalidates(method: str, status: int) -> bool:
    """An unsafe request answered with success or redirect invalidates stored responses for its URL."""
    return method not in SAFE_METHODS and 200 <= status < 400


def served_headers(head: StoredHead, age: float) -> Headers:
    """Stored fields as served: with the current Age (§5.1), in whole seconds. Fields never stored are left out here
    too: an entry written before they were (Clear-Site-Data, Strict-Transport-Security: storability.py) must not
    replay them."""
    kept = [(k, v) for k, v in head.headers if k.lower() != "age" and k.lower() not in NEVER_STORED]
    return [*kept, ("Age", str(int(age)))]
