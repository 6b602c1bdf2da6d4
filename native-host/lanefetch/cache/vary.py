"""Vary (RFC 9111 §4.1): a stored response answers a new request only if the request fields it
varies on match those of the request that stored it. Matching normalises whitespace and combines
field lines; an absent field only matches an absent field; `Vary: *` never matches."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..engine.fields import Headers

_WS = re.compile(r"[ \t]+")


def vary_fields(response_vary_values: Iterable[str]) -> list[str] | None:
    """The lower-case field names a response varies on, or None for `Vary: *` (never matches)."""
    names: list[str] = []
    for value in response_vary_values:
        for part in value.split(","):
            name = part.strip().lower()
            if name == "*":
                return None
            if name and name not in names:
                names.append(name)
    return names


def normalised_value(headers: Headers, name: str) -> str | None:
    """All lines of one field combined with ", ", whitespace around commas and runs of it collapsed."""
    values = [v for k, v in headers if k.lower() == name]
    if not values:
        return None
    items = [_WS.sub(" ", item.strip()) for v in values for item in v.split(",")]
    return ", ".join(i for i in items if i)


def request_values(headers: Headers, fields: Iterable[str]) -> dict[str, str | None]:
    return {name: normalised_value(headers, name) for name in fields}


def matches(stored: Mapping[str, str | None], request_headers: Headers) -> bool:
    return all(normalised_value(request_headers, name) == value for name, value in stored.items())


def variant_key(stored: Mapping[str, str | None]) -> str:
    """A stable string for the varying values: one stored entry per (URL, variant)."""
    return "\n".join(f"{k}:{'' if v is None else '=' + v}" for k, v in sorted(stored.items()))
