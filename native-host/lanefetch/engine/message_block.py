"""HTTP/1.x message blocks (RFC 9112 §2, §5): where a head or trailer section ends and how its field lines
read. Shared by the response parser (response_parser.py) and the proxy's request reader, which meet the same
syntax from either side of a connection. Pure functions; a malformed line is a ParseError."""

from __future__ import annotations

import re

from .fields import Headers

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class ParseError(Exception):
    """The bytes are not valid HTTP/1.x (framing can no longer be trusted)."""


def split_lines(block: bytes) -> list[bytes]:
    # RFC 9112 §2.2: a recipient MAY accept a bare LF as line terminator.
    return [line[:-1] if line.endswith(b"\r") else line for line in block.split(b"\n")]


def field_text(raw: bytes) -> str:
    """A field value (or reason phrase) as text, a CR or NUL inside it replaced by a space: RFC 9112 §5.5 has a
    recipient reject such a message or replace them before processing or forwarding it. Passed on, a bare CR would
    read as a line end to a browser that splits lines at any CR (a field injected into its response, or, on the proxy's
    connection, the framing of the next one), a NUL as the separator of Chromium's binaryResponseHeaders."""
    return raw.replace(b"\r", b" ").replace(b"\x00", b" ").decode("latin-1")


def parse_fields(lines: list[bytes]) -> Headers:
    headers: Headers = []
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            # obs-fold: RFC 9112 §5.2 lets a user agent replace it with a space.
            if not headers:
                raise ParseError("header continuation line before any header")
            prev_name, prev_value = headers[-1]
            headers[-1] = (prev_name, f"{prev_value} {field_text(line.strip())}")
            continue
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.fullmatch(name):
            raise ParseError(f"malformed header line {line[:80]!r}")
        headers.append((name.decode("ascii"), field_text(value.strip(b" \t"))))
    return headers


def find_block_end(buf: bytearray, start: int = 0) -> tuple[int, int] | None:
    """Where the first empty line of buf starts, and the index after it (ends a head or trailer block). `start`, the
    start of a line: the lines before it are known not to be empty (a caller resumes its search there)."""
    while True:
        j = buf.find(b"\n", start)
        if j < 0:
            return None
        if j == start or (j == start + 1 and buf[start] == 0x0D):
            return start, j + 1
        start = j + 1
