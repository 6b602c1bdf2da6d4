"""What the cache keeps per response: the head as the server sent it (minus fields never stored),
the request's values of the fields the response varies on, and the clock readings freshness needs.
The body is kept beside it, exactly as received (content-coded, transfer coding removed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..engine.fields import FieldLookup, Headers


@dataclass(frozen=True)
class StoredHead(FieldLookup):
    status: int
    reason: str
    http_version: str
    headers: Headers
    request_time: float  # POSIX seconds when the request was sent (RFC 9111 §4.2.3)
    response_time: float  # POSIX seconds when the response head arrived
    vary: dict[str, str | None] = field(default_factory=dict)  # varying field -> normalised request value
    heuristic_ok: bool = True  # False: never fresh by heuristic (responses to requests with Cookie)

    def to_json(self) -> str:
        return json.dumps({
            "status": self.status, "reason": self.reason, "http_version": self.http_version,
            "headers": [[k, v] for k, v in self.headers], "request_time": self.request_time,
            "response_time": self.response_time, "vary": self.vary, "heuristic_ok": self.heuristic_ok,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> StoredHead:
        d: dict[str, Any] = json.loads(text)
        return cls(
            status=int(d["status"]), reason=str(d["reason"]), http_version=str(d["http_version"]),
            headers=[(str(k), str(v)) for k, v in d["headers"]], request_time=float(d["request_time"]),
            response_time=float(d["response_time"]), vary=dict(d["vary"]), heuristic_ok=bool(d["heuristic_ok"]),
        )


@dataclass(frozen=True)
class StoredEntry:
    """One stored response as found by a lookup: its id in the store and its head (no body yet)."""

    id: int
    head: StoredHead
