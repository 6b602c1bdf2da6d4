"""When a prefetched response may answer a request the browser really makes: the page must not be able to tell.

A prefetch is a guess made before the browser asked. Its response is delivered for a browser request only when
the server could not have answered that request differently, i.e. when the request the helper would have sent
for it is the request the prefetch was sent as:
- both are GET (nothing else is safe to send unasked, and HEAD wants no body);
- the URL is identical, byte for byte (discovery resolves URLs with the browser's own WHATWG parser so this holds);
- every field in CREDENTIAL_FIELDS has the same value in both, or is absent from both: the credentials the server
  sees (Cookie, Authorization), who asks (Origin, the Sec-Fetch-* quartet: CORS mode, destination, site, user
  activation), the user's privacy signals (DNT, Sec-GPC: replayed and learned with the browser's fields, so a
  prefetch carries the opt-out the browser sends, and one that did not is never used), and the content
  negotiation the server may do without declaring it (Accept, Accept-Language, Accept-Encoding, User-Agent: servers
  sniff these without `Vary` often enough);
- a prefetch goes without a Referer (the page's URL is not replayed), so where the browser's request carries one,
  a refusal or a redirect (401, 403, 3xx: what hotlink protection answers a missing Referer with) may be the
  server's answer to the missing field, not the one the browser's own request would have got: it does not answer
  (a 404 does: what is not there is not there for any Referer; a learned page's 404 @import is on its critical
  path);
- every field the response's `Vary` names matches as well (RFC 9111 §4.1 normalisation, cache/vary.py), and
  `Vary: *` never matches;
- the browser's request is not ranged, conditional on a precondition or a reload (If-Match, If-Unmodified-Since,
  If-Range, Range, Cache-Control/Pragma no-cache or no-store): it asked for something a plain prefetched GET is
  not. A validation (If-None-Match, If-Modified-Since: the browser holds a copy and asks whether it is still
  current) may be answered: the prefetch is the server's current response, fetched within `max_age`, and a full
  response answers a validation as a 304 would (the browser stores it in place of its copy; the page sees the same
  response either way). Refused, the browser's revalidations of a page it showed in the same tab went to the server
  a second time after the flight had revalidated them all, and the first refusal ended the flight;
- the browser's request is not one a page's script made (resource type `fetch` or `xhr`, SCRIPT_REQUESTS: the
  types cache/policy.py validates for the same reason). Its cache mode ("no-store", "reload", "no-cache": the page
  wants the server's answer at the time it asks) is invisible to the helper in Chromium's debugger mode (the Fetch
  domain pauses the request before the mode becomes fields or load flags; measured in session 48, Chromium 156),
  so a copy fetched before the page asked could answer a request that must go to the server. Chromium itself never
  answers such a request with a copy it fetched unasked: Blink reuses a preload for a fetch()/XHR only where the
  page declared it (`<link rel=preload as=fetch>`, ResourceFetcher::MatchPreload: its preload scanner reads markup
  and never finds a script's requests), and then Resource::CanReuse compares method, mode, credentials mode,
  requestor origin, sync and keepalive, but not the cache mode. A flight's copy of a learned fetch()/XHR is exactly
  the preload Chromium never makes, so none is delivered for one, with any cache mode (the default mode's request
  could take it, but it cannot be told apart), and plan.py plans none: its bytes would be pure waste;
- the browser's request carries no field the prefetch was sent without, but those that cannot change the answer
  or are weighed above (ANSWERABLE: Referer, the validations, Priority, connection fields, the low-entropy
  client hints Sec-CH-UA, -Mobile, -Platform, which restate the User-Agent compared above, and Firefox's
  Sec-Fetch-Storage-Access, whose cookies are compared): a fetch's
  X-Requested-With, a token field or any other field of the page's own may make the server answer otherwise
  (frameworks answer "is this AJAX" differently without `Vary`; a token may be credentials), and a prefetch that
  never sent it does not answer;
- the response is one a GET may be answered with (no 206 or 1xx) and its head came at most `max_age` seconds
  before the browser asked for it (time passed in, never read here; flight.py passes when the request came, or the
  head, if later: a long body's end may come well after): a guess held longer is a copy the user did not ask to
  keep;
- the response is not a server's passing state (TRANSIENT: 408, 429, any 5xx): it says the server could not
  answer then, not what the resource is, and the flight's own burst of requests may be what overloaded or
  rate-limited it; the browser's request, made later, may well get the resource (a 404 or 410 says what is there).
Anything else: the prefetch is discarded (its bytes count as wasted, budget.py) and the browser's request is
fetched as usual. The verdict names the first reason, for the timing panel and the page report.

Why exact equality rather than "compatible" values: the helper cannot know how a server uses a field, and a
response that differs from what the browser would have received breaks the promise that lanefetch never
changes a page. A mismatch only costs the bytes of one guess."""

from __future__ import annotations

from dataclasses import dataclass

from ..cache.policy import VALIDATED_TYPES
from ..cache.vary import normalised_value, vary_fields
from ..engine.fields import Headers

CREDENTIAL_FIELDS = (
    "cookie", "authorization", "origin", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-site", "sec-fetch-user",
    "accept", "accept-language", "accept-encoding", "user-agent", "dnt", "sec-gpc",
)
#: Fields a browser's request may carry that the prefetch was sent without, and still be answered by it (see above).
ANSWERABLE = frozenset({
    "referer", "priority", "cache-control", "pragma", "if-none-match", "if-modified-since", "host", "connection",
    "keep-alive", "te", "proxy-connection", "proxy-authorization", "alt-used", "upgrade-insecure-requests",
    "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform",
    # Firefox, on a cross-site request: whether it may carry unpartitioned cookies; the cookies themselves are
    # compared (Cookie above), and a prefetch never carries any
    "sec-fetch-storage-access",
})
#: Statuses of a server's passing state, never delivered from a prefetch (see above)
TRANSIENT = frozenset({408, 429})
_NOT_PLAIN = ("if-match", "if-unmodified-since", "if-range", "range")  # If-None-Match, If-Modified-Since: a validation
MAX_AGE = 30.0
#: Resource types of a page's script's requests (fetch(), XMLHttpRequest), never answered from a prefetch (see above)
SCRIPT_REQUESTS = VALIDATED_TYPES
#: The Sec-Fetch-Dest of a fetch()/XHR (and of `<link rel=preload as=fetch>`): never planned (plan.py)
SCRIPT_DESTINATION = "empty"


@dataclass(frozen=True)
class Prefetched:
    """What a flight holds of one prefetch: the request as sent, the response's status and head, and when its
    head arrived (on the caller's monotonic clock)."""

    method: str
    url: str
    request_headers: Headers
    status: int
    response_headers: Headers
    fetched_at: float


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str  # "match", or why the prefetch may not answer this request


MATCH = Verdict(True, "match")


def _no_cache(headers: Headers) -> bool:
    for name in ("cache-control", "pragma"):
        value = normalised_value(headers, name)
        if value is not None:
            directives = {d.split("=", 1)[0].strip().lower() for d in value.split(",")}
            if directives & {"no-cache", "no-store"}:
                return True
    return False


def script_request(resource_type: str) -> bool:
    """Whether a browser request of this resource type is a page's fetch() or XHR, which no prefetch answers."""
    return resource_type in SCRIPT_REQUESTS


def request_refusal(sent: Headers, method: str, url: str, prefetched_url: str, headers: Headers,
                    resource_type: str = "other") -> Verdict | None:
    """What refuses the browser's request (method, url, headers as the helper would send them, its resource type)
    whatever the prefetch's answer turns out to be: its method, URL, a script's request, a range, precondition or
    reload, a compared field, or a field the prefetch was sent (`sent`) without; None if nothing of the request
    refuses it. Known before the prefetch's head came: a request it can never answer neither lifts the budget off it
    nor waits for its body (flight.py)."""
    if method != "GET":
        return Verdict(False, "method")
    if url != prefetched_url:
        return Verdict(False, "url")
    if script_request(resource_type):
        return Verdict(False, "script-request")
    for name in _NOT_PLAIN:
        if normalised_value(headers, name) is not None:
            return Verdict(False, f"conditional:{name}")
    if _no_cache(headers):
        return Verdict(False, "reload")
    for name in CREDENTIAL_FIELDS:
        if normalised_value(headers, name) != normalised_value(sent, name):
            return Verdict(False, f"header:{name}")
    sent_names = {k.lower() for k, _ in sent}
    for name, _ in headers:
        lname = name.lower()
        if lname not in sent_names and lname not in ANSWERABLE and lname not in CREDENTIAL_FIELDS:
            return Verdict(False, f"header:{lname}")
    return None


def may_answer(prefetched: Prefetched, method: str, url: str, headers: Headers, *, now: float,
               max_age: float = MAX_AGE, resource_type: str = "other") -> Verdict:
    """Whether `prefetched` may be delivered as the answer to the browser's request (method, url, headers as the
    helper would send them, its resource type, made at `now`); see the module's docstring."""
    if prefetched.method != "GET":
        return Verdict(False, "method")
    refused = request_refusal(prefetched.request_headers, method, url, prefetched.url, headers, resource_type)
    if refused is not None:
        return refused
    if prefetched.status < 200 or prefetched.status == 206:
        return Verdict(False, "status")
    if prefetched.status in TRANSIENT or prefetched.status >= 500:
        return Verdict(False, "status-transient")
    age = now - prefetched.fetched_at
    if age < 0 or age > max_age:
        return Verdict(False, "age")
    if (300 <= prefetched.status < 400 or prefetched.status in (401, 403)) and (
            normalised_value(headers, "referer") is not None
            and normalised_value(prefetched.request_headers, "referer") is None):
        return Verdict(False, "status-without-referer")
    varied = vary_fields(v for k, v in prefetched.response_headers if k.lower() == "vary")
    if varied is None:
        return Verdict(False, "vary:*")
    for name in varied:
        if normalised_value(headers, name) != normalised_value(prefetched.request_headers, name):
            return Verdict(False, f"header:{name}")
    return MATCH
