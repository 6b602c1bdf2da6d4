"""The request fields a browser sends with a subresource, for a page it never loaded before: learned once per
browser from any load, computed per request from its URL and the page's.

Why: a prefetch is only ever delivered when its fields equal the browser's request's (fidelity.py), so a flight
must know them before the browser asks. Learned history (learned.py) shows them per origin, which a first visit
does not have. But most of them are the browser's, not the site's:

- *browser-wide* (the same for every site; what the browser tells every server anyway): `User-Agent`,
  `Accept-Language`, the user's privacy signals (`DNT`, `Sec-GPC`), and `Accept` per destination and mode
  (Chromium: `text/css,*/*;q=0.1` for stylesheets, `image/avif,…` for images, `*/*` for scripts). Learned from
  any load the helper saw, keyed by the User-Agent (one browser's profile never answers for another's requests),
  newest value wins (a browser update changes them).
- *computed* from the request's URL and the page's (the Fetch standard's rules, not guesses):
  `Sec-Fetch-Dest` and `Sec-Fetch-Mode` are the subresource's destination and mode (discovery knows them);
  `Sec-Fetch-Site` is same-origin, same-site (same scheme and registrable domain, by the Public Suffix List
  bundled with the `publicsuffixlist` package; an IP address is its own site) or cross-site, the page being the
  request's initiator (but for a stylesheet's no-cors requests in Firefox: site_for); browsers send the
  Sec-Fetch-* fields only to potentially trustworthy URLs (https, and http to localhost or loopback addresses),
  and whether this browser does so for each kind of URL is learned
  too (seen, not assumed); `Origin` is the page's origin, sent or not per (mode, Sec-Fetch-Site) as learned,
  else by the Fetch standard (a cors request to another origin carries it).
A learned observation only teaches when it agrees with the computation (its Sec-Fetch-Site and Origin are what
they would be with the page as initiator): a request made by a frame, a worker or after a redirect teaches
nothing, so a wrong rule is never learned from a right observation.

Unknown means no fields (`fields_for` → None): nothing is prefetched that the browser was never seen to ask for in
that way. A wrong guess (a field this profile got wrong) costs the bytes of one refused prefetch, within the
page's budget (budget.py): fidelity stays exact equality.

Privacy: the profile holds no URL, no site, no time of visit, only values the browser sends to every server; it is
kept in the helper's cache database (table `pages`, partition PARTITION), never learned from private browsing (no
load is, load_log.load_key), and cleared with the cache.

Pure: time is passed in; records are JSON strings."""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
from dataclasses import dataclass, field, replace
from typing import Any

import ada_url
from publicsuffixlist import PublicSuffixList

from ..engine.host_names import is_this_machine
from .learned import Observed
from .resource import Subresource

SIGNALS = ("dnt", "sec-gpc")  # the user's privacy signals, browser-wide
PARTITION = "*browser"  # never a top-level site ("scheme://host"): the profile's own partition in the page store
RECORD_TTL = 30 * 24 * 3600.0


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()  # the bundled list, never fetched at run time (see proxy/ca_sites.py)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def site_host(host: str) -> str:
    """The registrable part of a host (its site without the scheme): the host itself for an IP address or a name
    that is a public suffix."""
    host = host.lower().rstrip(".")
    if _is_ip(host):
        return host
    return _suffixes().privatesuffix(host) or host


def _parse(url: str) -> ada_url.URL | None:
    try:
        return ada_url.URL(url)
    except ValueError:
        return None


def relation(url: str, page_url: str) -> str | None:
    """Sec-Fetch-Site of a request for url made by the page at page_url: same-origin, same-site (schemeful) or
    cross-site; None for a URL that does not parse."""
    u, p = _parse(url), _parse(page_url)
    if u is None or p is None:
        return None
    if u.origin == p.origin:
        return "same-origin"
    if u.protocol == p.protocol and site_host(str(u.hostname)) == site_host(str(p.hostname)):
        return "same-site"
    return "cross-site"


def trustworthy(url: str) -> bool:
    """A potentially trustworthy URL (Secure Contexts): https, or http to localhost or a loopback address."""
    u = _parse(url)
    if u is None:
        return False
    if u.protocol == "https:":
        return True
    return is_this_machine(str(u.hostname))


def mixed_content(url: str, page_url: str) -> bool:
    """A request the browser blocks or upgrades as mixed content: an https page asking a URL that is not
    potentially trustworthy (plain http to anything but loopback). The browser never sends it as written (scripts
    and stylesheets are blocked, images and media upgraded to https), so a prefetch of it would go over plaintext
    for nothing."""
    p = _parse(page_url)
    return p is not None and p.protocol == "https:" and not trustworthy(url)


def _origin(url: str) -> str | None:
    u = _parse(url)
    return str(u.origin) if u is not None else None


@dataclass(frozen=True)
class FieldProfile:
    """One browser's (one User-Agent's) fields. Absent keys are unknown."""

    user_agent: str
    accept_language: str | None = None  # None: the browser sent none (known only with `language_known`)
    language_known: bool = False
    accept: dict[tuple[str, str], str | None] = field(default_factory=dict)  # (destination, mode) → Accept
    sec_fetch: dict[bool, bool] = field(default_factory=dict)  # URL trustworthy → Sec-Fetch-* sent
    origin: dict[tuple[str, str], bool] = field(default_factory=dict)  # (mode, Sec-Fetch-Site) → Origin sent
    updated_at: float = 0.0
    # The user's privacy signals the browser sends with every request (DNT, Sec-GPC), as last seen: a prefetch
    # carries them as the browser would (fidelity compares them); None: not known yet (a record kept before they
    # were learned), and nothing is planned until a load teaches them
    signals: tuple[tuple[str, str], ...] | None = ()


def _get(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    return next((v for k, v in headers if k == name), None)


def learn(profiles: dict[str, FieldProfile], page_url: str, observed: list[Observed],
          now: float) -> dict[str, FieldProfile]:
    """The profiles after one load of page_url whose requests were `observed` (learned.Observed, fields kept
    lowercased): those the load taught (usually one: one browser per load), each with updated_at = now."""
    page_origin = _origin(page_url)
    changed: dict[str, FieldProfile] = {}
    for item in observed:
        ua = _get(item.headers, "user-agent")
        rel = relation(item.url, page_url)
        if ua is None or rel is None or page_origin is None:
            continue
        site = _get(item.headers, "sec-fetch-site")
        origin = _get(item.headers, "origin")
        if (site is not None and site != rel) or (origin is not None and origin != page_origin):
            continue  # not initiated by the page itself (a frame, a worker, a redirect): it teaches nothing
        if site is not None and (_get(item.headers, "sec-fetch-dest") != item.destination
                                 or _get(item.headers, "sec-fetch-mode") != item.mode):
            continue
        before = changed.get(ua) or profiles.get(ua) or FieldProfile(ua)
        changed[ua] = replace(
            before, accept_language=_get(item.headers, "accept-language"), language_known=True,
            accept={**before.accept, (item.destination, item.mode): _get(item.headers, "accept")},
            sec_fetch={**before.sec_fetch, trustworthy(item.url): site is not None},
            origin={**before.origin, (item.mode, rel): origin is not None}, updated_at=now,
            signals=tuple((k, v) for k, v in item.headers if k in SIGNALS))
    return changed


def learn_navigation(profiles: dict[str, FieldProfile], url: str, headers: tuple[tuple[str, str], ...],
                     now: float) -> dict[str, FieldProfile]:
    """The profiles after the browser's request of a page's own document (fields lowercased), where it taught
    something: only what its profile does not know yet of the browser-wide fields a navigation shares with every
    request of the browser — whether Sec-Fetch-* go to URLs as trustworthy as this one, and (never learned from a
    request before: not `language_known`) Accept-Language and the privacy signals. Never Accept (a document's is
    its own) nor Origin. Why: in Chromium the page's first batch comes only after its whole document (debugger
    mode delivers it whole), so a new user's first page would have no fields to fly what its document names;
    with the Accept of each kind taught ahead (with_accept, Chromium's probe) the document's own request is the
    rest. What a subresource request teaches later wins (learn: newest value)."""
    ua = _get(headers, "user-agent")
    if ua is None:
        return {}
    before = profiles.get(ua) or FieldProfile(ua)
    secure = trustworthy(url)
    after = before
    if secure not in before.sec_fetch:
        after = replace(after, sec_fetch={**before.sec_fetch, secure: _get(headers, "sec-fetch-dest") is not None})
    if not before.language_known:
        after = replace(after, accept_language=_get(headers, "accept-language"), language_known=True,
                        signals=tuple((k, v) for k, v in headers if k in SIGNALS))
    return {} if after is before else {ua: replace(after, updated_at=now)}


# The kinds a browser_fields message may teach (protocol BrowserFields): the extension's probe loads one of each
# (Firefox: an image, a font, a stylesheet; Chromium: an image, a stylesheet, a script preload)
TAUGHT_ACCEPT = (("image", "no-cors"), ("font", "cors"), ("style", "no-cors"), ("script", "no-cors"))


def taught_accept(accept: dict[tuple[str, str], str | None]) -> dict[tuple[str, str], str | None]:
    """The part of a browser_fields message's Accept fields the profile takes: TAUGHT_ACCEPT's kinds only."""
    return {kind: value for kind, value in accept.items() if kind in TAUGHT_ACCEPT}


def with_accept(before: FieldProfile | None, user_agent: str, accept: dict[tuple[str, str], str | None],
                now: float) -> FieldProfile | None:
    """The profile of `user_agent` (`before`, or a new one) with the Accept fields the browser was seen to send for
    these (destination, mode) kinds on requests of the extension's own (extension/src/intercept/
    browser-fields-probe.ts), leaving every other field as it was: Accept per kind is browser-wide (the browser's
    image, font, style and script loaders each set one, whoever asks), the rest (Sec-Fetch-*, Origin, the
    language and privacy signals) are still learned from the page's own requests (learn_navigation: its document's
    first), and until one taught them fields_for knows nothing. Why: a new user's first page otherwise has no fields
    for what its document names until the browser's own first request of each kind (Firefox: its first image
    request comes after the page's stylesheet chain; Chromium: its first batch, after the whole document).
    Kinds other than TAUGHT_ACCEPT are ignored; where nothing is new, `before` itself (None for another browser's)."""
    taught = taught_accept(accept)
    mine = before if before is not None and before.user_agent == user_agent else None
    if not taught or (mine is not None and all(kind in mine.accept and mine.accept[kind] == value
                                               for kind, value in taught.items())):
        return mine  # nothing new: the profile keeps its time
    base = mine if mine is not None else FieldProfile(user_agent)
    return replace(base, accept={**base.accept, **taught}, updated_at=now)


def site_for(sub: Subresource, page_url: str, sheet_sets_site: bool = False) -> str | None:
    """The Sec-Fetch-Site the browser sends requesting `sub` from the page: against the page, or, where
    `sheet_sets_site` (Firefox), a no-cors request a stylesheet makes against that stylesheet (`sub.initiator`).
    Seen in the real browsers (test_prefetch_browsers.py): a page on 127.0.0.1 linking a stylesheet on localhost,
    whose `@import` and background image Chromium 156 asks `cross-site` (the page's) and Firefox ESR 153
    `same-origin` (the sheet's); its font (cors) both ask `cross-site`, with the page's Origin. A document's own
    subresources have the page as initiator either way."""
    initiator = sub.initiator if sheet_sets_site and sub.mode == "no-cors" and sub.initiator else page_url
    return relation(sub.url, initiator)


def fields_for(profile: FieldProfile, sub: Subresource, page_url: str,
               sheet_sets_site: bool = False) -> tuple[tuple[str, str], ...] | None:
    """The fields (learned.REPLAYED, lowercased, sorted) the browser sends requesting `sub` from the page, or None
    where the profile does not know them (`sheet_sets_site`: site_for's)."""
    kind = (sub.destination, sub.mode)
    rel = site_for(sub, page_url, sheet_sets_site)
    page_origin = _origin(page_url)
    secure = trustworthy(sub.url)
    if kind not in profile.accept or secure not in profile.sec_fetch or not profile.language_known:
        return None
    if profile.signals is None:
        return None
    if rel is None or page_origin is None or page_origin == "null":
        return None
    fields: list[tuple[str, str]] = [("user-agent", profile.user_agent)]
    accept = profile.accept[kind]
    if accept is not None:
        fields.append(("accept", accept))
    if profile.accept_language is not None:
        fields.append(("accept-language", profile.accept_language))
    if profile.sec_fetch[secure]:
        fields += [("sec-fetch-dest", sub.destination), ("sec-fetch-mode", sub.mode), ("sec-fetch-site", rel)]
    sends_origin = profile.origin.get((sub.mode, rel), sub.mode == "cors" and rel != "same-origin")
    if sends_origin:
        fields.append(("origin", page_origin))
    fields += profile.signals
    return tuple(sorted(fields))


def sends_cookies(sub: Subresource, page_url: str) -> bool:
    """Whether the browser attaches the cookies it has for sub's URL (Fetch credentials mode: include always,
    same-origin only to the page's origin)."""
    return sub.credentials == "include" or relation(sub.url, page_url) == "same-origin"


def record_key(user_agent: str) -> str:
    return "f:" + hashlib.sha256(user_agent.encode()).hexdigest()[:24]


def encode(profile: FieldProfile) -> str:
    return json.dumps({
        "v": 1, "at": profile.updated_at, "ua": profile.user_agent, "al": profile.accept_language,
        "alk": profile.language_known, "acc": [[d, m, v] for (d, m), v in profile.accept.items()],
        "sf": [[k, v] for k, v in profile.sec_fetch.items()],
        "or": [[m, s, v] for (m, s), v in profile.origin.items()],
        "ps": None if profile.signals is None else [[k, v] for k, v in profile.signals]}, separators=(",", ":"))


def _str(x: Any) -> str:
    if not isinstance(x, str):
        raise ValueError("not a string")
    return x


def _bool(x: Any) -> bool:
    if not isinstance(x, bool):
        raise ValueError("not a boolean")
    return x


def decode(record: str, now: float) -> FieldProfile | None:
    """The profile kept in record, or None if it is not one of ours, expired, or from the future."""
    try:
        raw = json.loads(record)
        if raw["v"] != 1:
            return None
        at = float(raw["at"])
        language = raw["al"]
        profile = FieldProfile(
            _str(raw["ua"]), None if language is None else _str(language), _bool(raw["alk"]),
            {(_str(d), _str(m)): (None if v is None else _str(v)) for d, m, v in raw["acc"]},
            {_bool(k): _bool(v) for k, v in raw["sf"]},
            {(_str(m), _str(s)): _bool(v) for m, s, v in raw["or"]}, at,
            None if raw.get("ps") is None else tuple((_str(k), _str(v)) for k, v in raw["ps"]))
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError):  # as learned.decode
        return None
    if not 0 <= now - at <= RECORD_TTL:
        return None
    return profile
