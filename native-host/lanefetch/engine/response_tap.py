"""A response tap: something that watches one request's response on its way from the server to the
sink, before any decoding (the cache records bodies as received, and answers a 304 to its own
revalidation with the stored response). The exchange calls it; it never calls the sink."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .fields import Headers
from .response_parser import ResponseHead


@dataclass(frozen=True)
class Substitute:
    """Deliver this head and body instead of the server's response (a 304 that validated a stored one)."""

    head: ResponseHead
    body: bytes


class ResponseTap(Protocol):
    def on_head(self, head: ResponseHead) -> Substitute | None:
        """The server's head (first attempt that got one); may raise FetchError to fail the request."""
        ...

    def on_restart(self) -> None:
        """The request is being answered again from the start after a broken connection."""
        ...

    def on_body(self, data: bytes) -> None: ...

    def on_complete(self, trailers: Headers) -> None:
        """The response arrived complete (called before the sink hears the end)."""
        ...
