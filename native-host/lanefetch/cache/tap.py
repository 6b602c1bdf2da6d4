"""The cache's side of one request that goes to the network: records the body as received (as the server
coded it) and stores the response when it is complete and storable; answers a 304 to the cache's own
revalidation with the stored response, refreshed; invalidates the URL after a successful unsafe
request. With `store=False` (a prefetch that may only refresh what is stored, engine/request.py `cache_refresh`) it
refreshes a stored response on a 304 and drops it when the server answers in full, and stores nothing new.
Sans-I/O: every write it decides on goes through `Writes` (the shell runs them)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Protocol

from ..engine.errors import FetchError
from ..engine.fields import Headers
from ..engine.response_parser import ResponseHead
from .directives import parse_cache_control
from .entry import StoredEntry, StoredHead
from .freshness import current_age
from .policy import invalidates, served_headers
from .storability import LIVE_ONLY, may_store, stored_fields
from .validation import updated_head, validates
from .vary import request_values, variant_key, vary_fields


@dataclass(frozen=True)
class Substitute:
    """Deliver this head and body instead of the server's response (a 304 that validated a stored one)."""

    head: ResponseHead
    body: bytes


class Writes(Protocol):
    def put(self, url: str, variant: str, head: StoredHead, body: bytes) -> None: ...
    def update_head(self, entry_id: int, head: StoredHead) -> None: ...
    def delete(self, entry_id: int) -> None: ...
    def delete_url(self, url: str) -> None: ...


class CacheTap:
    def __init__(
        self, writes: Writes, method: str, url: str, request_headers: Headers, request_time: float,
        max_entry_bytes: int, revalidating: tuple[StoredEntry, bytes] | None = None, *, store: bool = True,
    ) -> None:
        self._writes = writes
        self._method = method
        self._url = url
        self._request_headers = request_headers
        self._request_time = request_time  # epoch seconds, when the request left for the network (§4.2.3)
        self._max_entry = max_entry_bytes
        self._revalidating = revalidating
        self._store = store
        self._recording: StoredHead | None = None  # the head to store once the body is complete
        self._variant = ""
        self._chunks: list[bytes] = []
        self._size = 0

    def on_head(self, head: ResponseHead) -> Substitute | None:
        response_time = time.time()
        request_time = min(self._request_time, response_time)
        if invalidates(self._method, head.status):
            self._writes.delete_url(self._url)
            return None
        if self._revalidating is not None:
            entry, body = self._revalidating
            if head.status == 304:
                if not validates(entry.head, head.headers):
                    self._writes.delete(entry.id)
                    raise FetchError("resource_changed", "the server's 304 names another version than the stored one")
                fresh = updated_head(entry.head, head.headers, request_time, response_time)
                # The refreshed entry varies as its fields now say (a 304 may bring a Vary the stored response did
                # not have), on this request's values, as Chromium keys it; `Vary: *` never matches again.
                varies = vary_fields(fresh.get_all("vary"))
                if varies is not None:
                    fresh = dataclasses.replace(fresh, vary=request_values(self._request_headers, varies))
                if parse_cache_control(head.get_all("cache-control")).no_store or varies is None:
                    self._writes.delete(entry.id)  # the 304 says store nothing (or Vary: *): served this once, gone
                else:
                    self._writes.update_head(entry.id, fresh)
                age = current_age(fresh, time.time())
                # Set-Cookie, Clear-Site-Data and Strict-Transport-Security are never stored, but this 304 is live:
                # the browser must see them (Chromium too hands a 304's to the page, merged into the stored head).
                live = [(k, v) for k, v in head.headers if k.lower() in LIVE_ONLY]
                headers = served_headers(fresh, age) + live
                served = ResponseHead(fresh.status, fresh.reason, fresh.http_version, headers)
                return Substitute(served, body)
            self._writes.delete(entry.id)  # a full answer replaces what was stored
        if not self._store:
            return None
        fields = vary_fields(v for k, v in head.headers if k.lower() == "vary")
        vary = request_values(self._request_headers, fields or [])
        candidate = StoredHead(
            status=head.status, reason=head.reason, http_version=head.http_version,
            headers=stored_fields(head.headers), request_time=request_time, response_time=response_time,
            vary=vary, heuristic_ok=not any(k.lower() == "cookie" for k, _ in self._request_headers),
        )
        if may_store(self._method, self._request_headers, candidate):
            self._recording = candidate
            self._variant = variant_key(vary)
        elif 200 <= head.status < 300 and head.status != 206:
            # A full answer that may not be stored replaces none the less: the browser's cache drops its copy
            # then, and a copy kept here (a hard reload answered no-store) would be served to the next request.
            self._writes.delete_url(self._url)
        return None

    def on_body(self, data: bytes) -> None:
        if self._recording is None:
            return
        self._size += len(data)
        if self._size > self._max_entry:
            self._recording = None  # too large to keep: stop recording, let it stream on
            self._chunks.clear()
            # and, like any full answer not kept, it replaces what was stored: an older copy must not answer next
            self._writes.delete_url(self._url)
            return
        self._chunks.append(data)

    def on_complete(self, trailers: Headers) -> None:
        if self._recording is not None:
            self._writes.put(self._url, self._variant, self._recording, b"".join(self._chunks))
            self._recording = None
            self._chunks = []
