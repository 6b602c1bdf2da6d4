"""One page load as the helper sees it: which requests the browser made for it (what learned.py keeps), in which
wave, and when the load is over. Pure: requests and times go in, `Observed` records and decisions come out.

- A load is keyed by its page: the top-level site and the document's URL without fragment (load_key). The
  extension names that page in its navigation's `preconnect` (which begins the load) and in every batch of the
  page (whose requests are the load's). No key, so nothing kept, for private browsing or without a top-level site
  (learned.may_learn).
- A load that has seen no request yet is *fresh*: a second navigation message for the same page then continues it
  (the extension says `preconnect` twice for one navigation when its speed probe asked first); once requests
  came, the next navigation of the page ends this load and begins another.
- What is observed (observe_request): GET requests of the resource types a flight can reproduce (stylesheets,
  scripts, fonts, images, text tracks) and fetch/XHR, which no flight fetches (plan.py, fidelity.py: their cache
  mode is not seen) but which are part of the page's bytes, its budget's measure — never documents or frames (the
  navigation itself), never a request the browser makes for other reasons (pings, manifests, preflights).
  Destination: the request's Sec-Fetch-Dest when the browser gave it, else the one its resource type implies; mode:
  Sec-Fetch-Mode when given, else cors for fonts and fetch/XHR or a request with an Origin field, no-cors otherwise.
  These only key the record; fidelity.py compares the real fields at answer time.
- Wave: the browser finds a request of wave k+1 only by reading a response of wave k (document → stylesheet →
  font). So a request's wave is 1 + the highest wave among the load's responses delivered before its batch came
  (the document's is wave 0). Requests of one batch share a wave. A request a timer makes late counts as a later
  wave: harmless, waves only order a flight.
- Size: the body bytes its answer delivered (as the sink counts them, which is what the budget counts), and the
  bytes it put on the link (`transferred`: head and body as the server coded them, what a connection's slow start
  carries; a compressed stylesheet's is a fifth of its size) where its answer came from the network, directly or
  through the page's flight. A request that ended in an error (cancelled, network) is not kept: nothing a flight
  should fetch came of it.
- Idle (is_idle): no request pending and none arrived or ended for IDLE_S on the injected clock. An idle load
  ends; so does every load when the helper stops."""

from __future__ import annotations

from dataclasses import dataclass, field

import ada_url

from ..engine.fetcher import Page
from ..engine.fields import Headers
from .learned import MAX_ITEMS, Observed, may_learn, observe, page_keys

IDLE_S = 20.0
DESTINATION = {"stylesheet": "style", "script": "script", "font": "font", "image": "image", "texttrack": "track",
               "xhr": "empty", "fetch": "empty"}
_KNOWN_DESTINATIONS = frozenset(DESTINATION.values())
_CORS_BY_DEFAULT = frozenset({"font", "empty"})


@dataclass(frozen=True)
class LoadKey:
    top_site: str
    page: str  # the document's URL without fragment (what learned.page_keys keys by)


def load_key(page: Page) -> LoadKey | None:
    """The load a navigation or batch of this page belongs to; None where nothing may be learned."""
    if not may_learn(page) or not page.url:
        return None
    if page_keys(page.url) is None:  # not an http(s) URL: nothing learned.py could keep
        return None
    parsed = ada_url.URL(page.url)
    parsed.hash = ""
    return LoadKey(page.top_site, str(parsed.href))


def _field(headers: Headers, name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def observe_request(method: str, url: str, headers: Headers, resource_type: str, wave: int,
                    size: int | None, wire: int | None = None) -> Observed | None:
    """The record of one browser request of the load, or None for a request a flight must never reproduce."""
    if method.upper() != "GET":
        return None
    given = _field(headers, "sec-fetch-dest")
    destination = given.strip().lower() if given is not None else DESTINATION.get(resource_type)
    if destination not in _KNOWN_DESTINATIONS:
        return None
    given_mode = _field(headers, "sec-fetch-mode")
    if given_mode is not None:
        mode = given_mode.strip().lower()
    else:
        cors = destination in _CORS_BY_DEFAULT or _field(headers, "origin") is not None
        mode = "cors" if cors else "no-cors"
    return observe(url, destination, mode, wave, headers, size, wire)


@dataclass
class _Seen:
    method: str
    url: str
    headers: Headers
    resource_type: str
    wave: int
    size: int | None = None
    wire: int | None = None  # bytes its answer put on the link (transferred)
    ended: bool = False  # delivered whole (end)
    failed: bool = False  # an error instead
    left: bool = False  # handed to the browser's own warm connection: the page's all the same, its size unknown


@dataclass
class LoadLog:
    """The requests of one load, as they came (batch) and were answered (ended, failed)."""

    last_activity: float
    _seen: dict[str, _Seen] = field(default_factory=dict)  # by request id, in order of arrival
    _highest_delivered: int = -1  # the highest wave whose response was delivered; -1: none yet

    @property
    def fresh(self) -> bool:
        return not self._seen

    @property
    def first_request(self) -> str | None:
        """The id of the load's first request (the extension finds its page load by it)."""
        return next(iter(self._seen), None)

    def batch(self, requests: list[tuple[str, str, str, Headers, str]], now: float) -> int:
        """A batch of the page arrived: (id, method, URL, headers, resource type) each. Returns its wave."""
        wave = self._highest_delivered + 1
        self.last_activity = max(self.last_activity, now)
        for rid, method, url, headers, resource_type in requests:
            if rid in self._seen or len(self._seen) >= 4 * MAX_ITEMS:
                continue  # a reused id is the first one's; a runaway page stops being logged (learned keeps fewer)
            own_wave = 0 if resource_type == "document" else max(wave, 1)
            self._seen[rid] = _Seen(method, url, list(headers), resource_type, own_wave)
        return max(wave, 1)

    def requested(self, url: str) -> bool:
        """Whether the browser asked for url in this load already (a flight that starts late leaves it out)."""
        return any(s.url == url for s in self._seen.values())

    def ended(self, request_id: str, body_bytes: int, now: float) -> None:
        seen = self._seen.get(request_id)
        if seen is None or seen.ended or seen.failed:
            return
        seen.ended, seen.size = True, body_bytes
        self._highest_delivered = max(self._highest_delivered, seen.wave)
        self.last_activity = max(self.last_activity, now)

    def transferred(self, request_id: str, wire_bytes: int) -> None:
        """The answer of a request that ended put wire_bytes on the link (its timing report's; 0: none, a cache
        hit)."""
        seen = self._seen.get(request_id)
        if seen is not None and seen.ended and wire_bytes > 0:
            seen.wire = wire_bytes

    def failed(self, request_id: str, now: float, *, left_to_browser: bool = False) -> None:
        """The request was not answered here. left_to_browser: declined for the browser's own warm connection
        (error browser_warm), which fetches it itself: the page asked for it as for any other, so it is learned
        (size unknown); another error is not (a request that failed may not be one the page needs)."""
        seen = self._seen.get(request_id)
        if seen is None or seen.ended:
            return
        seen.failed, seen.left = True, left_to_browser
        self.last_activity = max(self.last_activity, now)

    def is_idle(self, now: float, idle_s: float = IDLE_S) -> bool:
        pending = any(not (s.ended or s.failed) for s in self._seen.values())
        return not pending and now - self.last_activity >= idle_s

    def observed(self) -> list[Observed]:
        """What learned.py keeps of this load: the requests a flight may reproduce (delivered, or left to the browser's
        warm connection), in order of arrival."""
        out = []
        for s in self._seen.values():
            if not (s.ended or s.left):
                continue
            item = observe_request(s.method, s.url, s.headers, s.resource_type, s.wave, s.size, s.wire)
            if item is not None:
                out.append(item)
        return out
