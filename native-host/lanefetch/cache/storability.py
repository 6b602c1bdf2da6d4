"""Which responses the cache stores (RFC 9111 §3, §3.5), and which fields of them it keeps (§3.1).

Stored: answers to GET requests without `no-store` (in the request or the response), final status,
not 206 (no ranges here) or 304, and only if the entry could ever be reused: it has a freshness
lifetime (explicit, or heuristic for a status cacheable by default) or a validator to revalidate
with. `private` is fine: this is a private cache. `Vary: *` is never stored (it could never match).

Requests with credentials:
- Authorization: stored only when the response says so explicitly, with `public`, `must-revalidate`
  or `s-maxage` (§3.5). §3.5 binds shared caches only; we apply it anyway because the helper serves
  whatever page of that top-level site asks next, and a response to credentials it did not see must
  not be handed out on the strength of a guess.
- Cookie: stored only when the server gave explicit freshness (max-age or Expires) or a validator
  (ETag or Last-Modified); and the entry never becomes fresh by heuristic: without explicit
  freshness it is revalidated on every use. Cookie'd responses are often per user (the browser's own
  cache keys them no differently, but it throws Set-Cookie away and so do we); a heuristic guess from
  Last-Modified suits static files, not pages built for one session. With explicit freshness the
  server chose to let it be reused; with a validator, a cheap 304 proves it is still right.

Fields never stored: hop-by-hop ones, and Set-Cookie/Set-Cookie2 — replaying an old Set-Cookie from
the cache would put back cookies the server has since changed (the browser's own cache drops them
too). Fields named by the response's Connection header go with the hop-by-hop ones. Nor the two fields that
act on the browser's state when a page receives them, which Chromium strips when it writes an entry
(HttpResponseHeaders' kCookieResponseHeaders and kSecurityStateHeaders; Firefox keeps them but acts on them only
for answers from the network): Clear-Site-Data (replayed, every hit would wipe the site's cookies and storage
again, long after the server asked once) and Strict-Transport-Security (valid only as received on a live, error-free
HTTPS connection, RFC 6797 §8.1; replayed, a policy the site has since shortened or lifted with max-age=0 would
come back). A live answer still carries them to the page: a 304's are passed on with its cookies (tap.py)."""

from __future__ import annotations

from ..engine.fields import Headers
from .directives import parse_cache_control
from .entry import StoredHead
from .freshness import HEURISTICALLY_CACHEABLE, explicit_lifetime
from .vary import vary_fields

NEVER_STORED = frozenset({
    "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer",
    "proxy-authenticate", "proxy-authentication-info", "set-cookie", "set-cookie2",
    "clear-site-data", "strict-transport-security",
})
# Never stored, but passed on to the page from a live 304 that refreshed a stored response (tap.py).
LIVE_ONLY = frozenset({"set-cookie", "set-cookie2", "clear-site-data", "strict-transport-security"})


def _has(headers: Headers, name: str) -> bool:
    return any(k.lower() == name for k, _ in headers)


def has_validator(head: StoredHead) -> bool:
    return head.get("etag") is not None or head.get("last-modified") is not None


def stored_fields(headers: Headers) -> Headers:
    named = {t.strip().lower() for k, v in headers if k.lower() == "connection" for t in v.split(",")}
    return [(k, v) for k, v in headers if k.lower() not in NEVER_STORED and k.lower() not in named]


def may_store(method: str, request_headers: Headers, head: StoredHead) -> bool:
    """Whether the response `head` to this request may (and is worth to) be stored."""
    if method != "GET":
        return False
    if head.status < 200 or head.status in (206, 304):
        return False
    request_cc = parse_cache_control(v for k, v in request_headers if k.lower() == "cache-control")
    cc = parse_cache_control(head.get_all("cache-control"))
    if request_cc.no_store or cc.no_store:
        return False
    if vary_fields(head.get_all("vary")) is None:
        return False
    if _has(request_headers, "authorization") and not (cc.public or cc.must_revalidate or cc.s_maxage is not None):
        return False
    explicit = explicit_lifetime(head)
    # §3: something must say it may be cached: explicit freshness, public/private, or a status
    # cacheable by default.
    if explicit is None and not (cc.public or cc.private) and head.status not in HEURISTICALLY_CACHEABLE:
        return False
    if _has(request_headers, "cookie") and explicit is None and not has_validator(head):
        return False
    # Worth keeping only if it can be reused: fresh for a while, or revalidatable. (Heuristic
    # freshness needs Last-Modified, which is a validator.)
    return (explicit is not None and explicit > 0 and not cc.no_cache) or has_validator(head)
