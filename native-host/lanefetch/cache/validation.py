"""Validation (RFC 9111 §4.3): the conditional request that checks a stored response, and what a
304 Not Modified does to it.

- The conditional request carries the stored ETag as If-None-Match and the stored Last-Modified as
  If-Modified-Since (both when both exist: servers such as nginx then require both to match).
- A 304 selects the stored response it validates (§4.3.4): if it carries an ETag and the stored response
  has one, their opaque tags must be equal (the weak comparison of RFC 9110 §8.8.3.2, where §4.3.4 asks for
  a strong validator: nginx weakens the ETag of a body it compresses, W/"x", and names the version "x" in
  its 304, which carries no body to compress; the request was conditional on this one entry, so the tag
  says which version the server means, not which of several entries); a strong ETag for an entry stored
  without one selects nothing; otherwise, if it carries a Last-Modified, the stored one must equal it. A 304
  that names a different representation updates nothing and cannot be answered from the store.
- The stored head is updated from the 304 (§3.2): every field in the 304 replaces the stored field of
  that name; every stored field the 304 does not carry is kept (a 304 has no body and servers send few
  fields with it: nginx drops Content-Type and Content-Length, so an update that started from the 304 would
  serve the stored bytes untyped). Not taken from a 304 (`_KEEP_STORED`): fields never stored, Content-Length
  (§3.2: it describes the 304, which has no content), the fields that describe the stored bytes and must keep
  matching them (Content-Encoding, Content-Range, Transfer-Encoding, Content-Type, Content-Location,
  Content-MD5, and the ETag that names them), and the rest of the list Chromium and Firefox keep from their
  stored response (Chromium's kNonUpdatedHeaders, after Firefox's nsHttpResponseHead: WWW-Authenticate,
  Proxy-Authorization, X-Frame-Options, X-XSS-Protection, X-Content-* and X-WebKit-*): §3.2 lets a user
  agent's cache omit fields whose update would be inconsistent with what it stored, and a page served through
  lanefetch must see the head the browser's own cache would give it. The 304's request and response times
  become the entry's: freshness starts again."""

from __future__ import annotations

from dataclasses import replace

from ..engine.fields import Headers
from .entry import StoredHead
from .storability import NEVER_STORED

CONDITIONAL_FIELDS = frozenset({"if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range"})
_KEEP_STORED = frozenset({
    "content-length", "content-encoding", "content-range", "transfer-encoding", "content-type", "content-location",
    "content-md5", "etag", "x-frame-options", "x-xss-protection", "www-authenticate", "proxy-authorization",
})
_KEEP_STORED_PREFIXES = ("x-content-", "x-webkit-")


def _kept(name: str) -> bool:
    """A field a 304 never updates (the module's docstring)."""
    name = name.lower()
    return name in NEVER_STORED or name in _KEEP_STORED or name.startswith(_KEEP_STORED_PREFIXES)


def conditional_headers(head: StoredHead) -> Headers:
    out: Headers = []
    etag = head.get("etag")
    if etag is not None:
        out.append(("If-None-Match", etag))
    last_modified = head.get("last-modified")
    if last_modified is not None:
        out.append(("If-Modified-Since", last_modified))
    return out


def _strong(etag: str | None) -> str | None:
    if etag is None:
        return None
    etag = etag.strip()
    return None if etag.startswith("W/") else etag


def _opaque(etag: str) -> str:
    etag = etag.strip()
    return etag[2:] if etag.startswith("W/") else etag


def same_version(current: StoredHead, refreshed: StoredHead) -> bool:
    """Is the entry a store holds now (`current`) still the version a 304 refreshed (`refreshed`: updated_head of
    the one the request was made from)? Their ETags match (weakly), or, without one on each, their Last-Modified.
    A store's entry id names its key, not one version: another writer (a second helper process, a flight's kept
    answer) may have stored a newer response under it while the conditional request was out, and the refreshed
    head written over that newer body would pass the checksum and serve one response's fields with another's
    bytes."""
    a, b = current.get("etag"), refreshed.get("etag")
    if a is not None and b is not None:  # the ETag names the version; a Last-Modified a 304 added changes nothing
        return _opaque(a) == _opaque(b)
    return a == b and current.get("last-modified") == refreshed.get("last-modified")


def validates(stored: StoredHead, not_modified: Headers) -> bool:
    """Whether a 304 with these fields refers to the stored response (§4.3.4 selection, module docstring)."""
    new_etag = next((v for k, v in not_modified if k.lower() == "etag"), None)
    stored_etag = stored.get("etag")
    if new_etag is not None and stored_etag is not None:
        return _opaque(new_etag) == _opaque(stored_etag)
    if _strong(new_etag) is not None:
        return False  # a strong validator for a response stored without one: another version
    new_lm = next((v for k, v in not_modified if k.lower() == "last-modified"), None)
    if new_lm is not None and stored.get("last-modified") is not None:
        return new_lm.strip() == (stored.get("last-modified") or "").strip()
    return True  # only a weak or no validator: it answers the one entry we asked about


def updated_head(stored: StoredHead, not_modified: Headers, request_time: float, response_time: float) -> StoredHead:
    """The stored head refreshed by a 304 (call validates() first)."""
    named = {t.strip().lower() for k, v in not_modified if k.lower() == "connection" for t in v.split(",")}
    incoming = [(k, v) for k, v in not_modified if not _kept(k) and k.lower() not in named]
    # Age too: a 304 without one was answered now by the origin (or a cache that says no age), so the refreshed
    # response is that fresh; the stored Age kept would age it again at once (RFC 9111 §4.2.3 counts age_value
    # from the Age field, and §3.2's "replace what is present" leaves the old one otherwise): an entry stored at
    # Age 3500 with max-age=3600 went stale 100 s after every revalidation.
    replaced = {k.lower() for k, _ in incoming} | {"age"}
    headers = [(k, v) for k, v in stored.headers if k.lower() not in replaced] + incoming
    return replace(stored, headers=headers, request_time=request_time, response_time=response_time)
