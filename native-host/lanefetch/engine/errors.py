"""The one error type the engine reports per request; `code` is the protocol's error code."""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "bad_message",
    "too_large",
    "unsupported_protocol",
    "bad_url",
    "blocked_address",
    "dns_failed",
    "connect_failed",
    "tls_failed",
    "timeout",
    "protocol_error",
    "connection_lost",
    "resource_changed",
    "decode_failed",
    "cancelled",
    "browser_warm",
    "internal",
]


class FetchError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message

    def __repr__(self) -> str:
        return f"FetchError({self.code!r}, {self.message!r})"
