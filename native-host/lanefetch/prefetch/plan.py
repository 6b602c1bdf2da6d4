"""What one page's flight fetches, in which order, and as which requests: learned and discovered merged.

Inputs: the page's learned histories (exact page, template and shape, learned.py), what discovery found in this
load's document and stylesheets (discover_html.py, discover_css.py), and the link's rate if measured.

- *Confident*: stable learned requests (exact page first, then the template's, stable across distinct pages, then
  what every kept load of the page's shape shared: what a new page of a known site is planned with before its
  document arrives) and discovered requests the browser makes unconditionally (its own preload scanner finds the
  same ones). Budget class `total` only.
- *Guesses*: requests the newest learned load of this very page made that are not stable yet, discovered
  conditional ones (@font-face sources) that a learned load requested, and discovered guesses (background images
  whose selector matches an element of the document, discover_backgrounds.py). Budget class `speculative` (budget.py).
- Never planned: a request whose learned observations carried Cookie or Authorization (the helper cannot send
  the user's credentials and fidelity would refuse a prefetch without them), and a discovered request for which
  no learned observation of the same origin, destination and mode says which fields the browser sends
  (Accept, Sec-Fetch-Site, User-Agent …) and the browser's field profile (field_profile.py: the browser-wide
  fields learned from any load, the rest computed from the URLs) does not know them either: a prefetch with
  guessed fields would be refused by fidelity.py, pure waste. Learned fields of the same origin come first (they
  are what this site's requests really carried); the profile makes a first visit plannable.
- Never planned either: a discovered request that carries cookies (credentials mode include, or same-origin to
  the page's origin) to an origin whose learned requests carried Cookie or Authorization, or to the page's own
  site when the load showed the browser holds cookies there (`cookies_on_site`: the document's request carried
  some or its response set some). The helper holds no cookies: such a prefetch would only be refused.
- Never planned: a request of destination `empty` (a page's fetch() or XHR, learned, or a discovered
  `<link rel=preload as=fetch>`): fidelity.py never lets a prefetch answer a script's request, whose cache mode the
  helper cannot see (the browser's request for such a preload comes as `fetch` in Firefox's proxy mode, and may in
  Chromium's), so its bytes would cross the link for nobody.
- Never planned: a discovered plain http:// request of an https page (mixed content: the browser blocks it or
  asks the https URL instead, so the prefetch would cross the link in plaintext and never be asked for).
- Order: by wave as learned (discovered items: 1 for the document's, 2 for a stylesheet's), within a wave
  render-blocking first (style, script, font, then the rest): the engine's queue orders by priority too, but
  on one pipelined connection the order of sending is the order of answers.
- A discovered request that a learned load made carries that load's size (the newest such history's), so the
  budget weighs a guess before it is sent rather than cutting it midway.
- The budget's limits come from the newest load's bytes (learned.page_bytes), whether a confident item's size is
  unknown, and the link's rate.
Pure: no I/O, no clock."""

from __future__ import annotations

from dataclasses import dataclass

import ada_url

from ..engine.fields import Headers
from .budget import Limits, limits_for
from .fidelity import SCRIPT_DESTINATION
from .field_profile import FieldProfile, fields_for, mixed_content, relation, sends_cookies, site_for
from .learned import History, Observed, page_bytes, shared, stable
from .resource import Subresource

RESOURCE_TYPE = {"style": "stylesheet", "script": "script", "font": "font", "image": "image", "track": "texttrack"}
_RANK = {"style": 0, "script": 1, "font": 2}


@dataclass(frozen=True)
class Planned:
    """One prefetch: the URL, the request fields to send, the engine's resource type (its queue priority),
    whether it is confident (else a guess, budget.py), and its expected size and bytes on the link if learned
    (FetchRequest.expected_size, expected_wire); `stored`: the helper's HTTP cache holds it stale (page_loads.py),
    so the prefetch revalidates it (FetchRequest.cache_refresh) rather than fetch the body again."""

    url: str
    headers: Headers
    resource_type: str = "other"
    confident: bool = True
    expected_size: int | None = None
    decode: bool = True
    expected_wire: int | None = None
    stored: bool = False


@dataclass(frozen=True)
class Plan:
    items: list[Planned]
    limits: Limits


def _origin(url: str) -> str | None:
    try:
        return str(ada_url.URL(url).origin)
    except ValueError:
        return None


def plan(exact: History | None, template: History | None, discovered: list[tuple[Subresource, int]],
         link_bytes_per_s: float | None = None, *, profile: FieldProfile | None = None, page_url: str | None = None,
         cookies_on_site: bool = False, shape: History | None = None, sheet_sets_site: bool = False) -> Plan:
    """The flight's plan from the page's own history, its template's, its shape's (any may be None) and what
    discovery found, each item with its wave (1: named by the document, 2: by a stylesheet, …); `profile` and
    `page_url` (the page's document URL) give discovered requests their fields where no learned load of the origin
    did (`sheet_sets_site`: the browser's rule for what a stylesheet asks, field_profile.site_for)."""
    histories = [h for h in (exact, template, shape) if h is not None]
    observed = [item for h in histories for load in h.loads for item in load]
    credentialed = {item.key for item in observed if item.credentialed}
    cookie_origins = {_origin(item.url) for item in observed if item.credentialed}
    fields: dict[tuple[str | None, str, str], Observed] = {}
    for item in observed:
        if not item.credentialed:
            fields.setdefault((_origin(item.url), item.destination, item.mode), item)

    candidates: list[tuple[int, int, Planned, tuple[str, str, str]]] = []  # (wave, rank, item, key)

    def add(item: Observed, wave: int, confident: bool) -> None:
        if item.key in credentialed or item.destination == SCRIPT_DESTINATION:
            return
        candidates.append((wave, _RANK.get(item.destination, 3), Planned(
            item.url, list(item.headers), RESOURCE_TYPE.get(item.destination, "other"), confident, item.size,
            expected_wire=item.wire),
            item.key))

    confident = [*(stable(exact) if exact is not None else []),
                 *(stable(template, across_pages=True) if template is not None else []),
                 *(shared(shape) if shape is not None else [])]
    stable_keys = {item.key for item in confident}
    for item in confident:
        add(item, item.wave, True)
    # The newest learned size of each request: a discovered request a load learned keeps it, so the budget weighs a
    # guess before sending it (a 60 kB font guessed at an unknown size was sent, then cut at the guesses' limit).
    learned: dict[tuple[str, str, str], Observed] = {}
    for item in observed:
        if item.size is not None:
            learned.setdefault(item.key, item)
    learned_keys = {item.key for item in observed}
    if exact is not None and exact.loads:
        for item in exact.loads[0]:
            if item.key not in stable_keys:
                add(item, item.wave, False)
    for sub, wave in discovered:
        key: tuple[str, str, str] = (sub.url, sub.destination, sub.mode)
        if sub.conditional and key not in learned_keys:
            continue
        if mixed_content(sub.url, page_url if page_url is not None else sub.initiator):
            continue  # an https page's plain http:// subresource: the browser never asks it as written
        if page_url is not None and sends_cookies(sub, page_url) and (
                _origin(sub.url) in cookie_origins
                or (cookies_on_site and relation(sub.url, page_url) in ("same-origin", "same-site"))):
            continue
        shown = fields.get((_origin(sub.url), sub.destination, sub.mode))
        headers = shown.headers if shown is not None else None
        if headers is not None and sheet_sets_site and page_url is not None:
            # Learned from another request of that origin, destination and mode, whose initiator may differ: where
            # the browser computes a stylesheet's requests' Sec-Fetch-Site against the stylesheet, this one's is
            # its own (an @import a CDN's sheet names, its other sheet having been linked by the page)
            site = site_for(sub, page_url, sheet_sets_site)
            headers = tuple((k, site if k == "sec-fetch-site" and site is not None else v) for k, v in headers)
        if headers is None and profile is not None and page_url is not None:
            headers = fields_for(profile, sub, page_url, sheet_sets_site)
        if headers is None:
            continue
        known = learned.get(key)
        add(Observed(sub.url, sub.destination, sub.mode, wave, headers, False, known.size if known else None,
                     known.wire if known else None), wave, not (sub.conditional or sub.guess))

    seen: set[tuple[str, str, str]] = set()
    items: list[Planned] = []
    # confident before guesses for the same request; then by wave and rank (sorted() keeps insertion order)
    for _wave, _rank, planned, key in sorted(candidates, key=lambda c: (c[0], c[1], not c[2].confident)):
        if key not in seen:
            seen.add(key)
            items.append(planned)
    newest = exact if exact is not None else template  # the page's measure; another page's bytes are not it
    # A confident item of unknown size (left to the browser's warm connection when learned) is missing from the page's
    # bytes by any amount: the flight may hold what a first visit's may (budget.py)
    unknown = any(i.confident and i.expected_size is None for i in items)
    return Plan(items, limits_for(page_bytes(newest) if newest is not None else None, link_bytes_per_s,
                                  sizes_unknown=unknown))
