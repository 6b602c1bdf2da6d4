"""Answers to Range requests, read and joined (pure, no I/O): what a 206's Content-Range says, which validator
proves that pieces of one body belong to one representation, and the head a caller sees for the body whole.

Shared by the split over network interfaces (lanes/split_fetch.py) and a flight's large answers in pieces
(prefetch/flight_pieces.py): both ask one body as several ranges and must hand it on as the one 200 the caller
asked for, and neither may join pieces that could come from two versions of the resource."""

from __future__ import annotations

import dataclasses
import re

from .exchange import DeliveredHead
from .response_parser import ResponseHead
from .resume import strong_validator

_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+)\s*$", re.I)


def content_range(head: DeliveredHead) -> tuple[int, int, int] | None:
    """(first, last, total) of a `Content-Range: bytes first-last/total`, else None (absent, `*`, malformed)."""
    for k, v in head.headers:
        if k.lower() == "content-range":
            m = _CONTENT_RANGE.match(v.strip())
            if m:
                return int(m[1]), int(m[2]), int(m[3])
    return None


def piece_validator(head: DeliveredHead) -> str | None:
    """What If-Range can carry, so pieces fetched apart provably belong to one representation: a strong ETag, else
    a strong Last-Modified (engine/resume.py: RFC 9110's rules); None: the pieces cannot be proven."""
    return strong_validator(ResponseHead(head.status, head.reason, head.http_version, head.headers))


def as_whole(head: DeliveredHead, total: int) -> DeliveredHead:
    """The head the caller sees for a body delivered whole: 200 with the full Content-Length (what the piece's head
    says of its delivery, `unproven` and `stored`, kept: a whole made of an unproven piece is never cached)."""
    headers = [(k, v) for k, v in head.headers if k.lower() not in ("content-range", "content-length")]
    headers.append(("Content-Length", str(total)))
    return dataclasses.replace(head, status=200, reason="OK", headers=headers)
