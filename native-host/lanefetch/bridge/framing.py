"""Native messaging framing (sans-I/O): a 4-byte native-endian length, then that many bytes of UTF-8
JSON. Browsers kill the host if a message to them exceeds 1 MiB, so encoding refuses that; garbage
from the browser becomes an error item and the stream goes on."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

TO_BROWSER_MAX = 1024 * 1024  # exactly 1,048,576 bytes of JSON; one more and the port dies
FROM_BROWSER_MAX = 64 * 1024 * 1024
_LEN = struct.Struct("=I")  # native byte order, as both browsers write it


class MessageTooLarge(ValueError):
    pass


@dataclass(frozen=True)
class BadFrame:
    """A frame that could not be turned into a JSON object; `reason` is for the error message back."""

    code: str  # "bad_message" or "too_large"
    reason: str


def encode(message: Any) -> bytes:
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > TO_BROWSER_MAX:
        raise MessageTooLarge(f"message of {len(data)} bytes exceeds the {TO_BROWSER_MAX}-byte limit")
    return _LEN.pack(len(data)) + data


class FrameDecoder:
    def __init__(self, max_size: int = FROM_BROWSER_MAX) -> None:
        self.max_size = max_size
        self._buf = bytearray()
        self._discard = 0  # bytes of an oversized frame still to skip (never buffered)

    def feed(self, data: bytes) -> list[dict[str, Any] | BadFrame]:
        self._buf += data
        out: list[dict[str, Any] | BadFrame] = []
        while True:
            if self._discard:
                n = min(self._discard, len(self._buf))
                del self._buf[:n]
                self._discard -= n
                if self._discard:
                    return out
            if len(self._buf) < 4:
                return out
            (size,) = _LEN.unpack_from(self._buf)
            if size > self.max_size:
                del self._buf[:4]
                self._discard = size
                out.append(BadFrame("too_large", f"message of {size} bytes exceeds {self.max_size} bytes"))
                continue
            if len(self._buf) < 4 + size:
                return out
            raw = bytes(self._buf[4 : 4 + size])
            del self._buf[: 4 + size]
            out.append(_parse(raw))

    @property
    def pending(self) -> int:
        return len(self._buf) + self._discard


def _parse(raw: bytes) -> dict[str, Any] | BadFrame:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return BadFrame("bad_message", f"message is not UTF-8: {e}")
    except json.JSONDecodeError as e:
        return BadFrame("bad_message", f"message is not valid JSON: {e}")
    if not isinstance(value, dict):
        return BadFrame("bad_message", f"message is a JSON {type(value).__name__}, not an object")
    return value


