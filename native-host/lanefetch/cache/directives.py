"""Cache-Control (RFC 9111 §5.2) and Pragma (§5.4) as the cache reads them.

Directive names are case-insensitive; a directive given twice, or with a value that is not a valid
delta-seconds where one is required, is treated the way §4.2.1 asks: "invalid" freshness, which
makes the response stale (max-age becomes 0). Unknown directives are ignored.

A delta-seconds directive whose value is quoted (`max-age="60"`) is not read at all, as if absent: §1.2.2 says a
sender MUST NOT quote it, and Chromium does not parse it (its GetCacheControlDirective wants 1*DIGIT), so a browser
gives such a response no max-age; Expires or the heuristic decide, as there. Taking the 60 out of the quotes would
keep for a minute what the browser revalidates. Not read also means it is no duplicate of an unquoted one beside
it (`max-age="60", max-age=30` is 30, Chromium's first readable one)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_DELTA = re.compile(r"[0-9]+")
# A delta-seconds larger than this is taken as this (RFC 9111 §1.2.2: 2^31).
MAX_DELTA = 2**31


@dataclass(frozen=True)
class CacheControl:
    no_store: bool = False
    no_cache: bool = False
    private: bool = False
    public: bool = False
    must_revalidate: bool = False
    max_age: int | None = None  # None: absent; 0 also stands for "present but invalid"
    s_maxage: int | None = None
    min_fresh: int | None = None
    only_if_cached: bool = False


def _split(values: Iterable[str]) -> list[tuple[str, str | None, bool]]:
    """Directives as (lower-case name, value or None, whether the value was quoted), honouring quoted strings with
    commas."""
    out: list[tuple[str, str | None, bool]] = []
    for text in values:
        i, n = 0, len(text)
        while i < n:
            # one directive: name [= token | quoted-string]
            while i < n and text[i] in " \t,":
                i += 1
            start = i
            while i < n and text[i] not in "=,":
                i += 1
            name = text[start:i].strip().lower()
            value: str | None = None
            quoted = False
            if i < n and text[i] == "=":
                i += 1
                while i < n and text[i] in " \t":
                    i += 1
                if i < n and text[i] == '"':
                    quoted = True
                    i += 1
                    chars: list[str] = []
                    while i < n and text[i] != '"':
                        if text[i] == "\\" and i + 1 < n:
                            i += 1
                        chars.append(text[i])
                        i += 1
                    i += 1  # the closing quote (or the end)
                    value = "".join(chars)
                    while i < n and text[i] != ",":
                        i += 1
                else:
                    start = i
                    while i < n and text[i] != ",":
                        i += 1
                    value = text[start:i].strip()
            if name:
                out.append((name, value, quoted))
    return out


def delta_seconds(value: str | None) -> int:
    """delta-seconds, or 0 when invalid (an invalid freshness value means stale); past 2^31, 2^31 (RFC 9111
    §1.2.2), never int() of thousands of digits (Python refuses more than 4300, and a server's header must not
    raise into a fetch)."""
    if value is None or not _DELTA.fullmatch(value):
        return 0
    significant = value.lstrip("0")
    return MAX_DELTA if len(significant) > 10 else min(int(significant or "0"), MAX_DELTA)


def parse_cache_control(values: Iterable[str]) -> CacheControl:
    """All Cache-Control field lines of one message, in order."""
    flags: dict[str, bool] = {}
    deltas: dict[str, int | None] = {}
    for name, value, quoted in _split(values):
        if name in ("max-age", "s-maxage", "min-fresh"):
            if quoted:
                continue  # not read, as in Chromium (the module's docstring)
            # a duplicate freshness directive is invalid: stale (§4.2.1)
            deltas[name] = 0 if name in deltas else delta_seconds(value)
        else:
            flags[name] = True
    return CacheControl(
        no_store=flags.get("no-store", False),
        no_cache=flags.get("no-cache", False),
        private=flags.get("private", False),
        public=flags.get("public", False),
        must_revalidate=flags.get("must-revalidate", False),
        max_age=deltas.get("max-age"),
        s_maxage=deltas.get("s-maxage"),
        min_fresh=deltas.get("min-fresh"),
        only_if_cached=flags.get("only-if-cached", False),
    )


def pragma_no_cache(values: Iterable[str]) -> bool:
    """`Pragma: no-cache` (§5.4); only meaningful when the request has no Cache-Control."""
    return any(name == "no-cache" for name, _, _ in _split(values))
