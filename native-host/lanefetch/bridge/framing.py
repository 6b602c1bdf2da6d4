"""Native messaging framing (sans-I/O): a 4-byte native-endian length, then that many bytes of UTF-8
JSON. Browsers kill the host if a message to them exceeds 1 MiB, so encoding refuses that; garbage
from the browser becomes an error item and the stream goes on.

Theory of operation for what arrives. Every frame is parsed under limits, so no frame can end the host or
take more than a bounded amount of memory:

- size: the length prefix is checked first. A frame over FROM_BROWSER_MAX is refused at once and never
  buffered: its bytes are skipped as they arrive (only scanned for request ids, below). A frame under it is
  collected in a buffer of its own and decoded without further copies.
- width: Python stores a text with the width of its widest character, so a frame that is not plain ASCII
  (or holds \\u escapes) has a lower limit, FROM_BROWSER_MAX_WIDE.
- number of values: before parsing, the frame's `[`, `{` and `,` bytes are counted (C speed). Every JSON
  value past the first is preceded by one of them, so this bounds the objects json.loads can create
  (commas inside strings count too: an overestimate, never an underestimate). It matters: `[{},{},…]`
  turns 3 bytes into a 64-byte dict, and 60 MiB of that took 1.5 GB.
- numbers: a number token longer than MAX_NUMBER_CHARS is refused (CPython raises ValueError past 4,300
  digits anyway, and slows down quadratically before that); NaN and Infinity are not JSON and are refused.
- depth: json.loads raises RecursionError near the interpreter's recursion limit, which is caught; what
  parses is then walked (iteratively) and refused past MAX_DEPTH, so later code that recurses (validation,
  repr in error messages) never meets a deep value.

A refused frame is a BadFrame whose `ids` are the request ids its bytes name (`"id":"…"`, found by a byte
scan: in valid JSON an unescaped `"` delimits a string, so the pattern can only be a key named id with its
string value). The host answers each of them with an error, so a refused batch's requests are not left
waiting for a timeout."""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Any

TO_BROWSER_MAX = 1024 * 1024  # exactly 1,048,576 bytes of JSON; one more and the port dies

# The largest message the extension sends is a batch of at most 200 requests (extension/src/batch/batcher.ts,
# maxItems); each carries a URL of at most 64 KiB (the schema's cap) and the browser's request headers, which
# servers refuse beyond 8–64 KiB. 200 × (64 + 64 + 1) KiB is about 25 MiB: 32 MiB stays above it (the schema's
# description states the limit). Parsing such a frame peaks at about twice its size: the frame, then its text
# and the parsed strings (measured: +64 MB for 32 MiB, the host at 96 MB in all; it was 3×, and a 60 MiB frame
# was accepted and took the host to 210 MB; tests/python/test_hostile_input.py checks the ratio).
FROM_BROWSER_MAX = 32 * 1024 * 1024
# Python keeps a text of one width: a single character beyond Latin-1 (or a \u escape of one) makes every
# character of the frame's text, and of the string holding it, 2 or 4 bytes. A frame that is not plain ASCII or
# holds \u escapes (the extension's never do: URLs are ASCII, header values are in practice) may be 8 MiB: at
# most 8 + 32 + 32 MB while parsed.
FROM_BROWSER_MAX_WIDE = 8 * 1024 * 1024
# `[`, `{` and `,` per frame: a 200-request batch with 30 headers each has ~25,000. 500,000 small objects are at
# most ~40 MB.
MAX_VALUES = 500_000
MAX_DEPTH = 32  # the protocol's deepest path (batch → requests → request → headers → pair → string) is 6
MAX_NUMBER_CHARS = 40  # a 64-bit integer has 20 characters; a float's shortest repr at most 24
MAX_IDS = 2000  # ids named by one refused frame (a batch has at most 2000 requests)
_ID_CHARS = 128  # an id is 1–128 characters (the schema's Id)

_LEN = struct.Struct("=I")  # native byte order, as both browsers write it
# A key named id with a string value (escapes included: JSON.stringify leaves non-ASCII as it is, others write
# \u escapes); at most 12 bytes per character (a surrogate pair as two \u escapes).
_ID_BYTES = 12 * _ID_CHARS
_ID = re.compile(rb'"id"[ \t\r\n]*:[ \t\r\n]*("(?:[^"\\\x00-\x1f]|\\.){1,%d}")' % _ID_BYTES)
_ID_TEXT = re.compile(r'"id"[ \t\r\n]*:[ \t\r\n]*("(?:[^"\\\x00-\x1f]|\\.){1,' + str(_ID_BYTES) + '}")')
_ID_TAIL = _ID_BYTES + 64  # bytes kept between chunks so a match across a chunk boundary is found whole


class MessageTooLarge(ValueError):
    pass


@dataclass(frozen=True)
class BadFrame:
    """A frame that could not be turned into a JSON object; `reason` is for the error message back, `ids` are
    the request ids the frame named (each gets an error of its own)."""

    code: str  # "bad_message" or "too_large"
    reason: str
    ids: tuple[str, ...] = ()
    # False for the second item of an oversized frame: its error went out when its length was read, this one
    # only names the ids found while skipping it.
    report: bool = True


def encode(message: Any) -> bytes:
    try:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (JSON allows "\ud800", UTF-8 cannot carry it), e.g. in an id echoed back: as \u escapes
        # the browser's JSON.parse reads it as it came.
        data = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    if len(data) > TO_BROWSER_MAX:
        raise MessageTooLarge(f"message of {len(data)} bytes exceeds the {TO_BROWSER_MAX}-byte limit")
    return _LEN.pack(len(data)) + data


class _IdScan:
    """Request ids in a stream of bytes given in pieces (a skipped frame), in order, each once, at most MAX_IDS."""

    def __init__(self) -> None:
        self.ids: dict[str, None] = {}
        self._tail = b""

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        buf = self._tail + bytes(data)
        # Keep enough to find a match the next piece completes, but nothing of a match already counted.
        keep_from = max(0, len(buf) - _ID_TAIL)
        for m in _ID.finditer(buf):
            self.add(m.group(1))
            keep_from = max(keep_from, m.end())
        self._tail = buf[keep_from:]

    def add(self, token: bytes | str) -> None:
        """One id as its JSON string token (quotes and escapes included)."""
        if len(self.ids) >= MAX_IDS:
            return
        try:
            rid = json.loads(token)
        except ValueError:  # bad UTF-8 or a bad escape: not an id the extension could have sent
            return
        if isinstance(rid, str) and 0 < len(rid) <= _ID_CHARS:
            self.ids.setdefault(rid)


def ids_in(raw: bytes | bytearray | str) -> tuple[str, ...]:
    """The request ids a whole frame (its bytes or its decoded text) names."""
    scan = _IdScan()
    # no copy of the frame: the pattern runs over its buffer
    for m in _ID_TEXT.finditer(raw) if isinstance(raw, str) else _ID.finditer(raw):
        scan.add(m.group(1))
    return tuple(scan.ids)


class FrameDecoder:
    def __init__(self, max_size: int = FROM_BROWSER_MAX) -> None:
        self.max_size = max_size
        self._head = bytearray()  # the length prefix being read
        self._frame: bytearray | None = None  # the frame being collected (its length is known)
        self._size = 0
        self._discard = 0  # bytes of an oversized frame still to skip (never buffered)
        self._skipped: _IdScan | None = None
        self._skipped_reason = ""

    def feed(self, data: bytes) -> list[dict[str, Any] | BadFrame]:
        out: list[dict[str, Any] | BadFrame] = []
        view = memoryview(data)
        while view:
            if self._discard:
                n = min(self._discard, len(view))
                assert self._skipped is not None
                self._skipped.feed(view[:n])
                self._discard -= n
                view = view[n:]
                if not self._discard:
                    if self._skipped.ids:
                        out.append(BadFrame("too_large", self._skipped_reason, tuple(self._skipped.ids), report=False))
                    self._skipped = None
                continue
            if self._frame is None:
                n = min(4 - len(self._head), len(view))
                self._head += view[:n]
                view = view[n:]
                if len(self._head) < 4:
                    break
                (size,) = _LEN.unpack(self._head)
                self._head.clear()
                if size > self.max_size:
                    # Said at once (a false length leaves the stream out of step until the browser reconnects).
                    self._skipped_reason = f"message of {size} bytes exceeds {self.max_size} bytes"
                    out.append(BadFrame("too_large", self._skipped_reason))
                    self._discard, self._skipped = size, _IdScan()
                    continue
                self._frame, self._size = bytearray(), size
            n = min(self._size - len(self._frame), len(view))
            self._frame += view[:n]
            view = view[n:]
            if len(self._frame) == self._size:
                frame, self._frame = self._frame, None
                out.append(_parse(frame))
        return out

    @property
    def pending(self) -> int:
        """Bytes received of a frame not yet complete, or still to skip of an oversized one."""
        return len(self._head) + (len(self._frame) if self._frame is not None else 0) + self._discard


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    return float(text)


# The C scanner stays in use with these hooks; they run once per number (a handful in a real message).
_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_refuse_constant)


def _parse(frame: bytearray) -> dict[str, Any] | BadFrame:
    """One complete frame → its JSON object, or why not. Takes the buffer over and empties it once decoded, so
    the bytes, the text and the parsed objects are never all held at once."""
    if len(frame) > FROM_BROWSER_MAX_WIDE and (not frame.isascii() or b"\\u" in frame):
        reason = f"message of {len(frame)} bytes with text beyond ASCII exceeds {FROM_BROWSER_MAX_WIDE} bytes"
        return BadFrame("too_large", reason, ids_in(frame))
    values = frame.count(b",") + frame.count(b"[") + frame.count(b"{")
    if values > MAX_VALUES:
        return BadFrame("too_large", f"message holds more than {MAX_VALUES} JSON values", ids_in(frame))
    try:
        text = frame.decode("utf-8")
    except UnicodeDecodeError as e:
        return BadFrame("bad_message", f"message is not UTF-8: {e}", ids_in(frame))
    frame.clear()
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        return BadFrame("bad_message", f"message is nested deeper than {MAX_DEPTH} levels", ids_in(text))
    except ValueError as e:  # JSONDecodeError, and the number hooks' refusals
        return BadFrame("bad_message", f"message is not valid JSON: {str(e)[:300]}", ids_in(text))
    if not isinstance(value, dict):
        return BadFrame("bad_message", f"message is a JSON {type(value).__name__}, not an object", ids_in(text))
    if _deeper_than(value, MAX_DEPTH):
        return BadFrame("bad_message", f"message is nested deeper than {MAX_DEPTH} levels", ids_in(text))
    return value


def _deeper_than(value: dict[str, Any], limit: int) -> bool:
    """Whether containers nest more than `limit` levels (iteratively: the point is to refuse deep values before
    anything recursive sees them)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False
