"""What the last few loads of a page requested, and which of those requests are stable enough to fetch unasked.

The chain of waves (document → stylesheets and scripts → fonts, images, modules) is only discovered wave by wave
while the page loads; a page seen before can be fetched in one flight. Per page the helper keeps the requests of
its last MAX_LOADS loads, each as (URL, destination, mode, wave, the request fields a flight must reproduce,
whether credentials were sent, size, bytes on the link), newest load first.

Two keys per page (page_keys): the exact page (its URL without fragment) and its *template*: same origin, same
path shape (first segment kept, the others `*`, the last one's extension kept: `/news/2026/11/a-title.html` →
`/news/*/*/*.html`; a path of one segment keeps it unless it has an extension: `/about.html` → `/*.html`) and
the same set of stylesheets (what makes pages of one template look alike; the set is known once the document
is parsed, so the template is looked up after the exact key). A load is remembered under both, so a first visit
to another article of a known template still finds the template's shared assets. A third key, the *shape* (origin
and path shape alone), is known when the navigation starts: a first visit to a page of a known shape can fly what
every kept load of that shape requested (shared(), below) a round trip or more before its document names anything,
where the template's assets join only once the document was read whole.

*Stable* (stable()): requested in at least STABLE_MIN of the kept loads, one of them the most recent (for a
template: in loads of at least STABLE_MIN distinct pages, so one article's own images never become the
template's). The
latter is stricter than "≥ 2 of the last N" alone on purpose: after a deploy renames `app.3f2a.js`, the old URL
is still in older loads but will never be requested again; fetching it would be pure waste. Everything else a
load saw is a *guess* (budget.py limits those). *Shared* (shared(), for a shape's history): requested in every
kept load, the loads of at least STABLE_MIN distinct pages. Stricter again, because a path shape may hold pages of
several templates (`/docs/*.html`: articles and an index): what every one of them asked for is what the site's
pages have in common (its stylesheets, scripts, fonts), not one template's.

Privacy and retention: local only (kept in the helper's cache database, table `pages`); partitioned by top-level
site like the cache (a site cannot learn what another site's pages requested); never for private browsing
(may_learn); cleared with the cache; a record older than RECORD_TTL is ignored. Cookie and Authorization values
are never kept, only whether the request carried them (`credentialed`): a flight cannot reproduce them, so it
does not prefetch those, and fidelity.py would refuse the match anyway. Kept fields: REPLAYED (Accept,
Accept-Language, Accept-Encoding, Origin, Sec-Fetch-*, User-Agent, and the user's privacy signals DNT and Sec-GPC,
which a prefetch must carry as the browser would; Accept-Encoding comes only with Firefox's
proxied requests, which the helper delivers as the server coded them: Chromium's paused requests carry none, the
helper adding its own, engine/request.py with_accept_encoding). Bounded: MAX_ITEMS requests per load, MAX_LOADS loads.

Pure: time is passed in; records are JSON strings the store keeps without reading them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

import ada_url

from ..engine.fetcher import Page
from ..engine.fields import Headers

MAX_LOADS = 5
STABLE_MIN = 2
MAX_ITEMS = 300
RECORD_TTL = 30 * 24 * 3600.0
REPLAYED = ("accept", "accept-language", "accept-encoding", "origin", "sec-fetch-mode", "sec-fetch-dest",
            "sec-fetch-site", "user-agent", "dnt", "sec-gpc")
_CREDENTIALS = ("cookie", "authorization")


@dataclass(frozen=True)
class Observed:
    """One request a page load made."""

    url: str
    destination: str
    mode: str
    wave: int
    headers: tuple[tuple[str, str], ...]
    credentialed: bool
    size: int | None = None  # body bytes its answer delivered (decoded where the page's copy was)
    wire: int | None = None  # bytes its answer put on the link, head included, as the server coded it

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.url, self.destination, self.mode)


def replayed(request_headers: Headers) -> tuple[tuple[str, str], ...]:
    """A request's REPLAYED fields, names lowercased, sorted: what the helper keeps of a request's fields."""
    return tuple(sorted((k.lower(), v) for k, v in request_headers if k.lower() in REPLAYED))


def observe(url: str, destination: str, mode: str, wave: int, request_headers: Headers,
            size: int | None = None, wire: int | None = None) -> Observed:
    """The record of one request: only REPLAYED fields kept, credentials reduced to their presence."""
    kept = replayed(request_headers)
    credentialed = any(k.lower() in _CREDENTIALS for k, _ in request_headers)
    return Observed(url, destination, mode, max(wave, 0), kept, credentialed, size, wire)


def may_learn(page: Page) -> bool:
    """Never for private browsing, never without a top-level site to partition by, never a cross-site frame's
    requests (they are the embedded site's, not the page's: no flight fetches them, none answers them), never a
    Firefox container's pages (learned pages are kept by top-level site: one container's would be flown in
    another's)."""
    return not page.private_browsing and bool(page.top_site) and not page.frame_site and not page.cookie_store


@dataclass(frozen=True)
class PageKeys:
    exact: str
    template: str | None
    shape: str = ""  # origin and path shape: known before the document


def _path_shape(path: str) -> str:
    segments = path.split("/")[1:]
    if len(segments) <= 1:
        return path if not segments or "." not in segments[0] else "/*." + segments[0].rsplit(".", 1)[1]
    shape = [segments[0]]
    for segment in segments[1:-1]:
        shape.append("*" if segment else "")
    last = segments[-1]
    shape.append(("*." + last.rsplit(".", 1)[1]) if "." in last else ("*" if last else ""))
    return "/" + "/".join(shape)


def page_keys(url: str, stylesheets: list[str] | None = None) -> PageKeys | None:
    """The page's exact key, its shape key and, once its stylesheets are known (non-empty), its template key; None
    for a URL that is not http(s)."""
    try:
        parsed = ada_url.URL(url)
    except ValueError:
        return None
    if parsed.protocol not in ("http:", "https:"):
        return None
    parsed.hash = ""
    exact = "u:" + str(parsed.href)
    shape = f"{parsed.origin}{_path_shape(str(parsed.pathname))}"
    if not stylesheets:
        return PageKeys(exact, None, "s:" + shape)
    digest = hashlib.sha256("\n".join(sorted(set(stylesheets))).encode()).hexdigest()[:16]
    return PageKeys(exact, f"t:{shape}#{digest}", "s:" + shape)


@dataclass
class History:
    loads: list[list[Observed]] = field(default_factory=list)  # newest first
    updated_at: float = 0.0
    pages: list[str] = field(default_factory=list)  # the exact page key of each load (same order)


def remember(history: History | None, load: list[Observed], now: float, page: str = "") -> History:
    """The history after one more load of `page` (its requests in the order they were made; repeats dropped). An
    answer that put nothing on the link this time (the helper's cache answered it) keeps what the same answer, of
    the same size, put there when it last came over it: the flight after a load answered from the cache would
    otherwise count its compressed texts decoded (apache-rewrite on `sat`: the second visit after such a load took
    2.5 s instead of 2.1 s: its stylesheets took four connections' first flights instead of one). An answer of
    unknown size (handed to the browser's warm connection) keeps the size it had in an older load, and that
    answer's link bytes."""
    loads = history.loads if history is not None else []
    carried = {(item.key, item.size): item.wire for older in reversed(loads) for item in older if item.wire is not None}
    # An answer handed to the browser's own connection (load_log: size unknown) keeps its newest known size.
    sized = {item.key: item.size for older in reversed(loads) for item in older if item.size is not None}
    seen: set[tuple[str, str, str]] = set()
    kept: list[Observed] = []
    for item in load:
        if item.key not in seen and len(kept) < MAX_ITEMS:
            seen.add(item.key)
            size = item.size if item.size is not None else sized.get(item.key)
            wire = item.wire if item.wire is not None else carried.get((item.key, size))
            kept.append(item if (size, wire) == (item.size, item.wire) else replace(item, size=size, wire=wire))
    pages = history.pages if history is not None else []
    return History([kept, *loads][:MAX_LOADS], now, [page, *pages][:MAX_LOADS])


def stable(history: History, *, across_pages: bool = False) -> list[Observed]:
    """The stable requests (see the module's docstring) as the most recent load made them, by wave, then in the
    order that load made them. For a template's history (across_pages) the loads that count must be of distinct
    pages: two loads of one article do not make its own images the template's."""
    if not history.loads:
        return []
    sources: dict[tuple[str, str, str], set[str]] = {}
    for n, load in enumerate(history.loads):
        source = history.pages[n] if across_pages and n < len(history.pages) else str(n)
        for item in load:
            sources.setdefault(item.key, set()).add(source)
    newest = [item for item in history.loads[0] if len(sources[item.key]) >= STABLE_MIN]
    return sorted(newest, key=lambda item: item.wave)  # sorted() is stable: the load's order within a wave


def shared(history: History) -> list[Observed]:
    """What every kept load of a shape's history requested, if those loads are of at least STABLE_MIN distinct
    pages (see the module's docstring), as the most recent load made them, by wave."""
    if len(set(history.pages[:len(history.loads)])) < STABLE_MIN or len(history.pages) < len(history.loads):
        return []
    in_every = set.intersection(*({item.key for item in load} for load in history.loads))
    return sorted((item for item in history.loads[0] if item.key in in_every), key=lambda item: item.wave)


def page_bytes(history: History) -> int | None:
    """The newest load's subresource bytes where sizes are known (the budget's measure of the page)."""
    if not history.loads:
        return None
    sizes = [item.size for item in history.loads[0] if item.size is not None]
    return sum(sizes) if sizes else None


def encode(history: History) -> str:
    """JSON; each distinct set of kept fields written once (a load's requests share a handful)."""
    header_sets: dict[tuple[tuple[str, str], ...], int] = {}
    loads = [[[i.url, i.destination, i.mode, i.wave, header_sets.setdefault(i.headers, len(header_sets)),
               i.credentialed, i.size, i.wire] for i in load] for load in history.loads]
    return json.dumps({"v": 1, "at": history.updated_at, "h": [[list(p) for p in h] for h in header_sets],
                       "loads": loads, "p": history.pages}, separators=(",", ":"))


def _observed(raw: Any, header_sets: list[tuple[tuple[str, str], ...]]) -> Observed:
    # Records written before the wire size was kept have 7 entries (wire: not known).
    url, destination, mode, wave, header_index, credentialed, size, wire = raw if len(raw) == 8 else [*raw, None]
    headers = header_sets[header_index] if isinstance(header_index, int) and header_index >= 0 else None
    if headers is None:
        raise ValueError("bad header set")
    if not (isinstance(url, str) and isinstance(destination, str) and isinstance(mode, str)
            and isinstance(wave, int) and isinstance(credentialed, bool)
            and all(n is None or (isinstance(n, int) and n >= 0) for n in (size, wire))):
        raise ValueError("bad item")
    return Observed(url, destination, mode, wave, headers, credentialed, size, wire)


def _header_set(raw: Any) -> tuple[tuple[str, str], ...]:
    pairs = tuple((str(k), str(v)) for k, v in raw)
    if any(k not in REPLAYED for k, _ in pairs):
        raise ValueError("field not kept")
    return pairs


def decode(record: str, now: float) -> History | None:
    """The history kept in record, or None if it is not one of ours, expired, or from the future."""
    try:
        raw = json.loads(record)
        if raw["v"] != 1:
            return None
        at = float(raw["at"])
        header_sets = [_header_set(h) for h in raw["h"]]
        loads = [[_observed(item, header_sets) for item in load][:MAX_ITEMS] for load in raw["loads"]][:MAX_LOADS]
        pages = [p for p in raw["p"] if isinstance(p, str)][:MAX_LOADS]
        if len(pages) != len(loads):
            return None
    # OverflowError: an integer no float holds; RecursionError: nesting past the JSON decoder's limit
    except (KeyError, TypeError, ValueError, IndexError, OverflowError, RecursionError):
        return None
    if not 0 <= now - at <= RECORD_TTL:
        return None
    return History(loads, at, pages)
