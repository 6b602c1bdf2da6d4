"""The gzip member header (RFC 1952 §2.3) read as Chromium reads it (net/filter/gzip_header.cc), for decode.py's
Chromium gzip decoder, which inflates the raw deflate data after it.

Chromium checks only the magic bytes and the compression method; it skips MTIME, XFL and OS, the extra field, the
file name and comment, and the header's CRC16 without checking it, and ignores the reserved flag bits (FTEXT too).
zlib's own gzip mode is stricter (a header CRC that does not match, or a reserved bit set, fails the stream), so a
body Chromium shows would fail if it read the header: this reader is why the decoder inflates raw deflate.

Sans-I/O: `feed` takes the body's next bytes, a piece at a time, and says how many of them belong to the header."""

from __future__ import annotations

_MAGIC = b"\x1f\x8b"
_DEFLATED = 8
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 0x02, 0x04, 0x08, 0x10
_FIXED = 10  # ID1 ID2 CM FLG MTIME(4) XFL OS


class InvalidHeader(Exception):
    """The body does not start as a gzip member: Chromium fails it (ERR_CONTENT_DECODING_FAILED)."""


class GzipHeader:
    def __init__(self) -> None:
        self._fixed = bytearray()  # the first _FIXED bytes as they arrive
        self._flags = 0  # the optional parts still to skip
        self._extra: int | None = None  # the extra field's bytes left to skip, once its length is read
        self._xlen = bytearray()
        self._hcrc = 2
        self.done = False

    def feed(self, data: bytes) -> int:
        """How many of `data`'s first bytes are header; `done` once the header is whole. InvalidHeader if the
        magic bytes or the method are wrong."""
        pos = 0
        while pos < len(data) and not self.done:
            if len(self._fixed) < _FIXED:
                take = data[pos : pos + _FIXED - len(self._fixed)]
                for i, b in enumerate(take, start=len(self._fixed)):
                    if (i < 2 and b != _MAGIC[i]) or (i == 2 and b != _DEFLATED):
                        raise InvalidHeader("not a gzip member")
                self._fixed += take
                pos += len(take)
                if len(self._fixed) == _FIXED:
                    self._flags = self._fixed[3] & (_FHCRC | _FEXTRA | _FNAME | _FCOMMENT)
                    self.done = self._flags == 0
                continue
            if self._flags & _FEXTRA:
                if self._extra is None:
                    self._xlen.append(data[pos])
                    pos += 1
                    if len(self._xlen) == 2:
                        self._extra = self._xlen[0] | self._xlen[1] << 8
                        if self._extra == 0:
                            self._flags &= ~_FEXTRA
                    self.done = self._flags == 0
                    continue
                skip = min(self._extra, len(data) - pos)
                pos += skip
                self._extra -= skip
                if self._extra == 0:
                    self._flags &= ~_FEXTRA
            elif self._flags & (_FNAME | _FCOMMENT):
                flag = _FNAME if self._flags & _FNAME else _FCOMMENT
                nul = data.find(b"\0", pos)
                if nul < 0:
                    pos = len(data)
                else:
                    pos = nul + 1
                    self._flags &= ~flag
            elif self._flags & _FHCRC:
                skip = min(self._hcrc, len(data) - pos)
                pos += skip
                self._hcrc -= skip
                if self._hcrc == 0:
                    self._flags &= ~_FHCRC
            self.done = self._flags == 0
        return pos
