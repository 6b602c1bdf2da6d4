"""Sans-I/O parser for one HTTP/1.1 response (RFC 9112), told which method it answers.

Pipelining needs exact framing: where one response ends is where the next begins, so the parser
knows the request method (HEAD has no body) and hands back the bytes after the end untouched.
No socket here: feed bytes, get events.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from .fields import FieldLookup, Headers
from .message_block import ParseError as ParseError  # raised by the parser: re-exported for its users
from .message_block import field_text, find_block_end, parse_fields, split_lines

MAX_HEAD_BYTES = 256 * 1024  # a head (status line + fields) larger than this is a protocol error
MAX_CHUNK_LINE = 4096


class Framing(enum.Enum):
    NONE = "none"  # HEAD, 1xx, 204, 304
    LENGTH = "length"  # Content-Length
    CHUNKED = "chunked"
    CLOSE = "close"  # body ends when the server closes the connection


@dataclass(frozen=True)
class ResponseHead(FieldLookup):
    status: int
    reason: str
    http_version: str  # "1.0" or "1.1"
    headers: Headers

    def connection_tokens(self) -> set[str]:
        return {t.strip().lower() for v in self.get_all("connection") for t in v.split(",") if t.strip()}


@dataclass(frozen=True)
class Informational:
    head: ResponseHead


@dataclass(frozen=True)
class HeadReceived:
    head: ResponseHead
    framing: Framing
    content_length: int | None


@dataclass(frozen=True)
class BodyData:
    data: bytes


@dataclass(frozen=True)
class MessageEnd:
    trailers: Headers = field(default_factory=list)


Event = Informational | HeadReceived | BodyData | MessageEnd

_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) (\d{3})(?: (.*))?")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;.*)?")
_DIGITS = re.compile(r"[0-9]{1,18}")


class _State(enum.Enum):
    HEAD = 1
    BODY_LENGTH = 2
    CHUNK_SIZE = 3
    CHUNK_DATA = 4
    CHUNK_DATA_END = 5
    TRAILERS = 6
    BODY_CLOSE = 7
    DONE = 8


class ResponseParser:
    """Parses the response to one request. After MessageEnd, `leftover()` holds the following bytes."""

    def __init__(self, method: str, *, max_head_bytes: int = MAX_HEAD_BYTES) -> None:
        self.method = method.upper()
        self.max_head_bytes = max_head_bytes
        self._buf = bytearray()
        self._state = _State.HEAD
        self._remaining = 0
        self.head: ResponseHead | None = None
        self.framing: Framing | None = None
        self.bytes_received = 0

    @property
    def done(self) -> bool:
        return self._state is _State.DONE

    @property
    def body_remaining(self) -> int | None:
        """Body bytes still to come of a Content-Length body; None before its head or for other framings."""
        return self._remaining if self._state is _State.BODY_LENGTH else None

    @property
    def started(self) -> bool:
        """True once any byte of this response has arrived."""
        return self.bytes_received > 0

    @property
    def consumed(self) -> int:
        """Bytes that belong to this response (head, body, framing) so far."""
        return self.bytes_received - len(self._buf)

    def leftover(self) -> bytes:
        assert self.done
        data = bytes(self._buf)
        self._buf.clear()
        self.bytes_received -= len(data)  # those bytes belong to the next response
        return data

    def keep_alive(self) -> bool:
        """Whether the connection may carry another response after this one."""
        if self.head is None or self.framing is Framing.CLOSE:
            return False
        if self.framing is Framing.CHUNKED and self.head.get_all("content-length"):
            # Transfer-Encoding and Content-Length both (RFC 9112 §6.3 item 3): chunked frames it, but a hop that
            # believed the length ends it elsewhere ("ought to be handled as an error", request smuggling or
            # response splitting): this answer is the connection's last, nothing after it is matched by order.
            return False
        tokens = self.head.connection_tokens()
        if self.head.http_version == "1.0":
            return "keep-alive" in tokens and "close" not in tokens
        return "close" not in tokens

    def feed(self, data: bytes) -> list[Event]:
        if self._state is _State.DONE:
            raise ParseError("data after the end of the response")
        self.bytes_received += len(data)
        self._buf += data
        events: list[Event] = []
        while self._step(events):
            pass
        return events

    def feed_eof(self) -> list[Event]:
        """The server closed the connection. Ends a close-delimited body, otherwise a ParseError."""
        if self._state is _State.BODY_CLOSE:
            self._state = _State.DONE
            return [MessageEnd()]
        if self._state is _State.DONE:
            return []
        where = "before the response" if not self.started else f"in state {self._state.name.lower()}"
        raise ParseError(f"connection closed {where}")

    # -- internals ---------------------------------------------------------------------------------------

    def _step(self, events: list[Event]) -> bool:
        st = self._state
        if st is _State.HEAD:
            return self._parse_head(events)
        if st is _State.BODY_LENGTH:
            return self._take_body(events, final=True)
        if st is _State.BODY_CLOSE:
            if self._buf:
                events.append(BodyData(bytes(self._buf)))
                self._buf.clear()
            return False
        if st is _State.CHUNK_SIZE:
            return self._parse_chunk_size()
        if st is _State.CHUNK_DATA:
            return self._take_body(events, final=False)
        if st is _State.CHUNK_DATA_END:
            if len(self._buf) < 1:
                return False
            if self._buf[:2] == b"\r\n":
                del self._buf[:2]
            elif self._buf[:1] == b"\n":
                del self._buf[:1]
            elif self._buf[:1] == b"\r" and len(self._buf) < 2:
                return False
            else:
                raise ParseError("chunk data not followed by CRLF")
            self._state = _State.CHUNK_SIZE
            return True
        if st is _State.TRAILERS:
            return self._parse_trailers(events)
        return False

    def _parse_head(self, events: list[Event]) -> bool:
        # Tolerate empty lines before the status line (RFC 9112 §2.2 robustness).
        while self._buf[:2] == b"\r\n" or self._buf[:1] == b"\n":
            del self._buf[: 2 if self._buf[:1] == b"\r" else 1]
        end = find_block_end(self._buf)
        if end is None:
            if len(self._buf) > self.max_head_bytes:
                raise ParseError("response head too large")
            if len(self._buf) >= 5 and not self._buf.startswith(b"HTTP/"):
                raise ParseError(f"not an HTTP/1.x response: {bytes(self._buf[:40])!r}")
            return False
        block_end, after = end
        if block_end > self.max_head_bytes:
            raise ParseError("response head too large")
        lines = split_lines(bytes(self._buf[:block_end]))
        del self._buf[:after]
        if lines and lines[-1] == b"":
            lines.pop()
        if not lines:
            raise ParseError("empty response head")
        m = _STATUS_LINE.fullmatch(lines[0])
        if not m:
            raise ParseError(f"malformed status line {lines[0][:80]!r}")
        version = "1." + m.group(1).decode()
        status = int(m.group(2))
        reason = field_text(m.group(3) or b"")
        head = ResponseHead(status, reason, version, parse_fields(lines[1:]))
        if 100 <= status < 200:
            if status == 101:
                raise ParseError("unexpected 101 Switching Protocols")
            events.append(Informational(head))
            return True
        if status < 100:
            raise ParseError(f"invalid status code {status}")
        self.head = head
        framing, length = self._framing_for(head)
        self.framing = framing
        events.append(HeadReceived(head, framing, length))
        if framing is Framing.NONE or (framing is Framing.LENGTH and length == 0):
            self._state = _State.DONE
            events.append(MessageEnd())
            return False
        if framing is Framing.LENGTH:
            assert length is not None
            self._remaining = length
            self._state = _State.BODY_LENGTH
        elif framing is Framing.CHUNKED:
            self._state = _State.CHUNK_SIZE
        else:
            self._state = _State.BODY_CLOSE
        return True

    def _framing_for(self, head: ResponseHead) -> tuple[Framing, int | None]:
        # An invalid Content-Length is an unrecoverable framing error (RFC 9112 §6.3 item 5) even where it does
        # not frame the body (HEAD, 204, 304): a server that writes one cannot be trusted to frame the next.
        length = content_length(head)
        # RFC 9112 §6.3, in order.
        if self.method == "HEAD" or head.status in (204, 304):
            return Framing.NONE, None
        te = head.get_all("transfer-encoding")
        if te:
            if head.http_version == "1.0":
                raise ParseError("Transfer-Encoding in an HTTP/1.0 response")
            codings = [c.strip().lower() for v in te for c in v.split(",") if c.strip()]
            if any(c != "chunked" for c in codings):
                # gzip, deflate, compress as transfer codings: nothing here decodes them, and the body would reach
                # the page still coded under no Content-Encoding (corrupt). No browser asks for them (TE: trailers).
                raise ParseError(f"unsupported transfer coding {', '.join(codings)}")
            if codings and codings[-1] == "chunked":
                if codings.count("chunked") > 1:
                    raise ParseError("chunked applied more than once")
                return Framing.CHUNKED, None
            return Framing.CLOSE, None
        if length is not None:
            return Framing.LENGTH, length
        return Framing.CLOSE, None

    def _take_body(self, events: list[Event], *, final: bool) -> bool:
        if not self._buf:
            return False
        n = min(self._remaining, len(self._buf))
        events.append(BodyData(bytes(self._buf[:n])))
        del self._buf[:n]
        self._remaining -= n
        if self._remaining == 0:
            if final:
                self._state = _State.DONE
                events.append(MessageEnd())
                return False
            self._state = _State.CHUNK_DATA_END
            return True
        return False

    def _parse_chunk_size(self) -> bool:
        j = self._buf.find(b"\n")
        if j < 0:
            if len(self._buf) > MAX_CHUNK_LINE:
                raise ParseError("chunk size line too long")
            return False
        line = bytes(self._buf[:j]).rstrip(b"\r")
        del self._buf[: j + 1]
        m = _CHUNK_SIZE.fullmatch(line)
        if not m:
            raise ParseError(f"malformed chunk size line {line[:80]!r}")
        size = int(m.group(1), 16)
        if size == 0:
            self._state = _State.TRAILERS
        else:
            self._remaining = size
            self._state = _State.CHUNK_DATA
        return True

    def _parse_trailers(self, events: list[Event]) -> bool:
        end = find_block_end(self._buf)
        if end is None:
            if len(self._buf) > self.max_head_bytes:
                raise ParseError("trailer section too large")
            return False
        block_end, after = end
        lines = split_lines(bytes(self._buf[:block_end]))
        del self._buf[:after]
        if lines and lines[-1] == b"":
            lines.pop()
        self._state = _State.DONE
        events.append(MessageEnd(parse_fields(lines)))
        return False


def content_length(head: ResponseHead) -> int | None:
    """The head's Content-Length as framing reads it: one value however often it is listed ("100, 100"), ASCII
    digits only; None where there is none. ParseError for conflicting or invalid values."""
    cl = head.get_all("content-length")
    if not cl:
        return None
    values = {v.strip() for raw in cl for v in raw.split(",")}
    if len(values) != 1:
        raise ParseError(f"conflicting Content-Length values {sorted(values)}")
    value = values.pop()
    # ASCII digits only: str.isdigit() also takes "²" and other Unicode digits, which int() refuses.
    if not _DIGITS.fullmatch(value):
        raise ParseError(f"invalid Content-Length {value!r}")
    return int(value)
