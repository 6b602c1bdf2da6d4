"""Sans-I/O reader of the requests a browser sends to its proxy (RFC 9112 §3.2.2: absolute-form, and
authority-form for CONNECT), one after another on one connection. Feed bytes, get events; the bytes
after a request stay buffered until the caller asks for the next one.

The head of a request is available (`head()`) before its body: the proxy checks the credentials on the head
and refuses without reading a body that may be 64 MiB from any local program."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..engine.fields import FieldLookup, Headers
from ..engine.message_block import ParseError, find_block_end, parse_fields, split_lines

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024  # request bodies are held whole: the engine sends them in one piece

_REQUEST_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+) HTTP/1\.([01])")


class BadRequest(ParseError):
    """The browser's bytes are not a request this proxy can take; `status` is what to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RequestHead(FieldLookup):
    method: str
    target: str  # absolute URL, or host:port for CONNECT
    http_version: str  # "1.0" or "1.1"
    headers: Headers

    def connection_tokens(self) -> set[str]:
        return {t.strip().lower() for v in self.get_all("connection") for t in v.split(",") if t.strip()}

    @property
    def keep_alive(self) -> bool:
        tokens = self.connection_tokens() | {
            t.strip().lower() for v in self.get_all("proxy-connection") for t in v.split(",")
        }
        if self.http_version == "1.0":
            return "keep-alive" in tokens and "close" not in tokens
        return "close" not in tokens


@dataclass(frozen=True)
class Request:
    head: RequestHead
    body: bytes | None  # None: the request had no body framing at all


class RequestReader:
    """Reads whole requests (head and Content-Length body). Chunked request bodies are refused (501):
    browsers send Content-Length for the bodies they let a proxy see, and the engine needs the length."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._head: RequestHead | None = None
        self._need = 0
        # Where the search for the end of a head not yet whole resumes: the start of its last line, unfinished. From
        # the head's first byte each time, a head trickled in pieces of a few bytes cost work in the square of its
        # size: 64 KiB of short lines, seconds of the event loop per connection before the credentials.
        self._scanned = 0

    def feed(self, data: bytes) -> None:
        self._buf += data

    def take_rest(self) -> bytes:
        """Everything buffered and not yet read as a request (for a CONNECT tunnel)."""
        data = bytes(self._buf)
        self._buf.clear()
        return data

    @property
    def buffered(self) -> bool:
        """Bytes of a request that is not whole yet are waiting (a partial head, or a head and part of its body)."""
        return self._head is not None or bool(self._buf.strip(b"\r\n"))

    @property
    def body_length(self) -> int:
        """Content-Length of the request whose head `head()` returned (-1: no body framing)."""
        return self._need

    def head(self) -> RequestHead | None:
        """The head of the next request once it is whole (its body may still be on its way), else None.
        Raises BadRequest."""
        if self._head is None:
            self._head = self._parse_head()
        return self._head

    def _parse_head(self) -> RequestHead | None:
        while self._buf[:2] == b"\r\n" or self._buf[:1] == b"\n":
            del self._buf[: 2 if self._buf[:1] == b"\r" else 1]
            self._scanned = 0
        end = find_block_end(self._buf, self._scanned)
        if end is None:
            if len(self._buf) > MAX_HEAD_BYTES:
                raise BadRequest(431, "request head too large")
            self._scanned = self._buf.rfind(b"\n") + 1
            return None
        self._scanned = 0
        block_end, after = end
        if block_end > MAX_HEAD_BYTES:
            raise BadRequest(431, "request head too large")
        lines = split_lines(bytes(self._buf[:block_end]))
        del self._buf[:after]
        if lines and lines[-1] == b"":
            lines.pop()
        m = _REQUEST_LINE.fullmatch(lines[0]) if lines else None
        if m is None:
            raise BadRequest(400, f"malformed request line {(lines or [b''])[0][:80]!r}")
        try:
            headers = parse_fields(lines[1:])
        except ParseError as e:
            raise BadRequest(400, str(e)) from None
        head = RequestHead(m.group(1).decode("ascii"), m.group(2).decode("latin-1"),
                           "1." + m.group(3).decode(), headers)
        if head.get("transfer-encoding") is not None:
            raise BadRequest(501, "chunked request bodies are not taken by the helper's proxy")
        lengths = {v.strip() for v in head.get_all("content-length")}
        # ASCII digits only: str.isdigit() takes "²" too, which int() refuses (an unanswered connection, a logged error)
        if len(lengths) > 1 or any(not (v.isascii() and v.isdigit()) for v in lengths):
            raise BadRequest(400, "invalid Content-Length")
        # Leading zeros dropped and the digits counted before int(): it refuses more than 4300 digits (ValueError out
        # of the handler, before the credentials), and any number that long is far above the cap anyway.
        digits = (lengths.pop().lstrip("0") or "0") if lengths else "-1"
        self._need = int(digits) if len(digits) <= len(str(MAX_BODY_BYTES)) else MAX_BODY_BYTES + 1
        if self._need > MAX_BODY_BYTES:
            raise BadRequest(413, "request body too large for the helper's proxy")
        return head

    def next_request(self) -> Request | None:
        """The next complete request, or None until more bytes arrive. Raises BadRequest."""
        head = self.head()
        if head is None or self._need > len(self._buf):
            return None
        self._head = None
        if self._need < 0:
            return Request(head, None)
        body = bytes(self._buf[: self._need])
        del self._buf[: self._need]
        return Request(head, body)
