"""Putting byte ranges that arrive out of order (and sometimes twice, when a lane steals another's
tail) back into one in-order stream. Every byte goes out exactly once; bytes ahead of the in-order
point wait in memory, which the scheduler bounds by never assigning ranges beyond a window."""

from __future__ import annotations

import bisect


class Reassembly:
    def __init__(self, size: int, start: int = 0) -> None:
        self.size = size
        self.delivered = start  # every byte before this went out
        self._starts: list[int] = []  # sorted starts of the waiting segments (disjoint, not touching `delivered`)
        self._segments: list[bytearray] = []

    @property
    def buffered(self) -> int:
        return sum(len(s) for s in self._segments)

    @property
    def complete(self) -> bool:
        return self.delivered >= self.size

    def covered(self, offset: int) -> int:
        """Where the bytes already here (delivered or waiting) that begin at offset end (offset if none)."""
        if offset < self.delivered:
            offset = self.delivered
        i = bisect.bisect_right(self._starts, offset) - 1
        if i >= 0:
            end = self._starts[i] + len(self._segments[i])
            if end > offset:
                return end
        return offset

    def next_waiting(self, offset: int) -> int | None:
        """Start of the first waiting segment after offset, if any."""
        i = bisect.bisect_right(self._starts, offset)
        return self._starts[i] if i < len(self._starts) else None

    def add(self, offset: int, data: bytes) -> list[bytes]:
        """Take data for [offset, offset+len); returns what can now go out in order (possibly nothing).
        Bytes already delivered or waiting are dropped; bytes past the end of the body are an error."""
        if offset < 0 or offset + len(data) > self.size:
            raise ValueError(f"bytes {offset}-{offset + len(data) - 1} lie outside a body of {self.size}")
        out: list[bytes] = []
        pos, view = offset, memoryview(data)
        while view:
            if pos < self.delivered:  # already out
                cut = min(self.delivered - pos, len(view))
                pos, view = pos + cut, view[cut:]
                continue
            end = self.covered(pos)
            if end > pos:  # already waiting
                cut = min(end - pos, len(view))
                pos, view = pos + cut, view[cut:]
                continue
            # new bytes up to the next waiting segment
            i = bisect.bisect_right(self._starts, pos)
            limit = self._starts[i] if i < len(self._starts) else self.size
            take = min(limit - pos, len(view))
            piece, view = view[:take], view[take:]
            if pos == self.delivered:
                out.append(bytes(piece))
                self.delivered += take
                out.extend(self._release())
            else:
                self._store(i, pos, piece)
            pos += take
        return out

    def _store(self, i: int, pos: int, piece: memoryview) -> None:
        # Append to the segment ending exactly here (the usual case: one lane's bytes in sequence).
        if i > 0 and self._starts[i - 1] + len(self._segments[i - 1]) == pos:
            self._segments[i - 1] += piece
            i -= 1
        else:
            self._starts.insert(i, pos)
            self._segments.insert(i, bytearray(piece))
        # merge with the next one if they now touch
        if i + 1 < len(self._starts) and self._starts[i] + len(self._segments[i]) == self._starts[i + 1]:
            self._segments[i] += self._segments.pop(i + 1)
            self._starts.pop(i + 1)

    def _release(self) -> list[bytes]:
        out: list[bytes] = []
        while self._starts and self._starts[0] == self.delivered:
            self._starts.pop(0)
            seg = self._segments.pop(0)
            self.delivered += len(seg)
            out.append(bytes(seg))
        return out
