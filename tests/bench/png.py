"""Valid PNG files made on the spot: pictures for the demo site and incompressible test images of an exact size."""

from __future__ import annotations

import math
import random
import struct
import zlib
from collections.abc import Sequence

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHUNK_OVERHEAD = 12  # length + type + CRC
_BASE = len(SIGNATURE) + 3 * _CHUNK_OVERHEAD + 13  # signature, IHDR (13 data bytes), IDAT and IEND framing


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(width: int, height: int, rows: Sequence[bytes], padding: int = 0) -> bytes:
    """An 8-bit RGB PNG of `rows` (width × 3 bytes each); `padding` > 0 adds an ancillary chunk of that many
    bytes in total (decoders skip it), to reach an exact file size."""
    if len(rows) != height or any(len(r) != width * 3 for r in rows):
        raise ValueError("rows must be height rows of width RGB pixels")
    raw = b"".join(b"\x00" + r for r in rows)
    out = SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    out += _chunk(b"IDAT", zlib.compress(raw, 9))
    if padding:
        if padding < _CHUNK_OVERHEAD:
            raise ValueError(f"padding must be 0 or at least {_CHUNK_OVERHEAD} bytes")
        out += _chunk(b"paDd", b"\x00" * (padding - _CHUNK_OVERHEAD))
    return out + _chunk(b"IEND", b"")


def noise(size: int, seed: int) -> tuple[bytes, int]:
    """A square PNG of random pixels (incompressible) of exactly `size` bytes, and its side in pixels."""
    rng = random.Random(seed)
    side = max(1, math.isqrt(max(0, size - _BASE - 64) // 3))
    while True:
        rows = [rng.randbytes(side * 3) for _ in range(side)]
        png = encode(side, side, rows)
        short = size - len(png)
        if short == 0 or short >= _CHUNK_OVERHEAD:
            return (encode(side, side, rows, short) if short else png), side
        side -= 1  # a few bytes short of a padding chunk: one pixel row less leaves room
