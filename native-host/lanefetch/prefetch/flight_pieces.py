"""A flight's large answers in pieces: an image or web font that the page's flight expects to be larger than what a
fresh connection's slow start carries in two round trips is asked as byte ranges, each an exchange of its own, so
the pool spreads them over its connections; they are joined into the one 200 the browser will ask for.

Why: over a long round trip a fresh TCP connection brings about 10 segments in the server's first flight, 20 in its
second, 40 in its third. A flight (flight.py) asks the page's whole learned work at the navigation over the origin's
six connections, and the largest answers set its end: a 59 kB image alone on a connection needs four round trips
after its request; as two 29.5 kB ranges on two connections, three. (real-pages on `sat`: apache-rewrite's second
visit had everything but its four 25–59 kB images a second before them; docs/prefetch.md.)

What is split (`piece_ranges`, `splittable`): a GET of an image (not SVG, which servers compress) or a WOFF/WOFF2
font (compressed formats, sent as they are), whose learned size is over PIECE_BYTES, without fields of its own that
would change what a range means (Range, If-Range, conditionals). Each piece is at most PIECE_BYTES
(pool_plan.LONG_BYTES less a head), so the pool never counts one as long (expected_long) and its render-blocking
rules stay as they are. The last piece is open-ended (`bytes=N-`): a body that grew since it was learned still comes
whole. Every piece asks `Accept-Encoding: identity`: servers do not offer ranges of a response they compress on the
fly (Apache ignores Range when it deflates, nginx's gzip drops Accept-Ranges), and identity is what they send for
the types split here anyway, so the bytes are the browser's own.

How pieces are joined (`join`, pure): each must be a 206 without a content coding whose Content-Range is exactly the
range it asked for (the last one: from its start to the total's end), all with one total and one strong validator
(ETag, else a strong Last-Modified: partial_content.piece_validator). Then the body is theirs in order and the head
is the first piece's as a 200 with the whole Content-Length (partial_content.as_whole). A 200 to any piece (the
server ignored Range) is the whole answer by itself: the shell cancels the other pieces at once and hands that one
on. Anything else (a 416, any other status, two versions, a range other than the one asked, a piece that failed)
ends the request with an error, so the flight holds nothing for the URL and the browser's own request is fetched as
usual; the other pieces are cancelled as soon as that is certain (a failed piece, a head join would refuse), so the
error comes without waiting for bytes that could never be used. Nothing of a split body is handed on before every
piece checked out: no byte of one version is ever joined to another's, and the flight (which holds answers whole
until claimed) loses no time by it.

A size not known (`probed`: a first visit's images, found in the page's document or stylesheets, and its preloaded
fonts): the request is asked in a first piece, FIRST (`bytes=0-` PIECE_BYTES less one; each later one of the
fetcher's a byte sooner: first_range), scheduled as the whole
request of unknown size would be. Its head's Content-Range tells the body's size: a body within it is all there
(answered as a 200 like any joined one; one piece alone needs no validator to be of one version), a larger one with
a strong validator has the rest asked at once as pieces of known size (`rest_ranges`), a batch of its own, which the
pool spreads over the connections by bytes. Without a strong validator no rest is asked (nothing could prove it of
the first piece's version): the request ends with an error and the browser's is fetched whole, the first piece
thrown away. A first piece answered anything but 206 or 416 (a 200, a 404, a redirect) is the whole request's
answer: a server gives those whatever the Range; it streams to the caller as it comes, so the flight's budget can
cut it like any fetch (unless it came with a content coding where the caller wants bodies decoded: then it ends in
an error). The flight's budget weighs the body at its told size before the rest is asked (`may_hold`: the ledger
admits it at that size or not): a rest it cannot afford is not asked, and the request ends with an error (held whole
until joined, pieces could not be cut by the budget midway). On a first visit the helper knows no image's size
before its head comes, so a large one went whole to whichever connection was idle, late in a long document a cold
one: rust-book-print's 241 kB trpl14-04.png took 2.4 s from first to last byte on one (`sat`; docs/performance.md).

Where: only to an origin whose link is known to carry two first flights or more per round trip (the service's
`link_room`, the same test as pool_plan.balances): there the pool spreads the pieces over the connections at once.
On a slower link (W-CDMA: 19 kB per round trip) the page waits on its bytes, not on slow start, and pieces would
only add requests, heads and connections in slow start to a link whose queue already overflows.

The shell (`PieceFetcher`) is a Fetcher around the flight's fetcher: requests it does not split pass untouched, in
the same batch as the pieces. Bytes of pieces it had to throw away are counted (`discarded_bytes`) for the flight's
waste report.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from ..engine.errors import ErrorCode, FetchError
from ..engine.exchange import DeliveredHead, Sink, TimingReport
from ..engine.fetcher import BatchResult, Fetcher, Page
from ..engine.fields import Headers
from ..engine.partial_content import as_whole, content_range, piece_validator
from ..engine.pool_plan import HEAD_BYTES, LONG_BYTES, Handshake
from ..engine.request import FetchRequest, url_scheme, with_accept_encoding

#: the most a piece may ask: with its head, within a fresh connection's first two flights (pool_plan.LONG_BYTES, 30
#: segments of 1448 bytes). Counted from 1460-byte segments (43 288 B), a first piece and its head came to 43 571 B on
#: the wire, 131 B into a third flight: a round trip more for each on a cold connection (1.3-1.5 s first to last byte
#: over `sat`, rust-book-print's first visit, where two flights take 0.6 s).
PIECE_BYTES = LONG_BYTES - HEAD_BYTES
_FONT_SUFFIXES = (".woff", ".woff2")
_NOT_SPLIT_SUFFIXES = (".svg", ".svgz")
#: fields that change what a range of the body means, or that the pieces set themselves
_OWN_FIELDS = frozenset({"range", "if-range", "accept-encoding", "if-none-match", "if-modified-since", "if-match",
                         "if-unmodified-since"})
CHUNK = 256 * 1024

Range = tuple[int, int | None]  # first byte, last byte (None: to the end)
log = logging.getLogger(__name__)
LinkRoom = Callable[[str, Page], Awaitable[bool]]  # has url's origin a link with room for pieces (service.link_room)
MayHold = Callable[[str, int], bool]  # may the flight hold request id's body at this size (budget.Ledger.expect)


def _even_ranges(start: int, end: int) -> list[Range]:
    """Bytes start..end-1 in as few pieces as keep each within PIECE_BYTES, of even sizes, the last open-ended."""
    count = -(-(end - start) // PIECE_BYTES)
    cuts = [start + (end - start) * i // count for i in range(count + 1)]
    return [(cuts[i], cuts[i + 1] - 1 if i + 1 < count else None) for i in range(count)]


def piece_ranges(size: int) -> list[Range]:
    """The ranges a body of `size` bytes is asked in: as few pieces as keep each within PIECE_BYTES, of even sizes,
    the last open-ended; [] when one piece would do (no split)."""
    return [] if size <= PIECE_BYTES else _even_ranges(0, size)


def _path(url: str) -> str:
    return url.split("#", 1)[0].split("?", 1)[0].lower()


def _of_a_kind_split(request: FetchRequest) -> bool:
    """Is this flight request one whose body comes as the server stores it, asked without fields that would change
    what a range of it means? (module docstring)"""
    if request.method.upper() != "GET":
        return False
    if request.cache_refresh:  # a stale stored copy is revalidated whole (a 304), never asked again in ranges
        return False
    if any(k.lower() in _OWN_FIELDS - {"accept-encoding"} for k, _ in request.headers):
        return False
    path = _path(request.url)
    if request.resource_type == "image":
        return not path.endswith(_NOT_SPLIT_SUFFIXES)
    return request.resource_type == "font" and path.endswith(_FONT_SUFFIXES)


def splittable(request: FetchRequest) -> bool:
    """Is this flight request asked in pieces, its size learned? (module docstring)"""
    return request.expected_size is not None and request.expected_size > PIECE_BYTES and _of_a_kind_split(request)


def probed(request: FetchRequest) -> bool:
    """Is this flight request's size not known, so it is asked in a first piece whose answer tells it (`FIRST`;
    module docstring, "A size not known")?"""
    return request.expected_size is None and _of_a_kind_split(request)


#: the range a request of unknown size is first asked in (probed), the first of a fetcher's first pieces
_FIRST_LAST = PIECE_BYTES - 1
FIRST: Range = (0, _FIRST_LAST)
#: first pieces under way at once that each end on a byte of their own (first_range)
FIRST_ENDS = 64


def first_range(k: int) -> Range:
    """The range of a fetcher's k-th first piece (counted from 0): FIRST, ending k bytes sooner (modulo FIRST_ENDS).
    Two first pieces pipelined on one connection must not ask the same range: a 206 proves its answer's place only
    where no other request of the connection asked its range (pipeline.py, `_range_unique`: shifted by one, one's
    answer would prove itself in the other's place). Asked alike, both were held until the connection drained, and
    their rests were asked at their ends instead of at their heads: on `sat` (apache-rewrite, first visit with the
    link's room known at the navigation) two images' rests went out 0.6 s late."""
    return (0, _FIRST_LAST - k % FIRST_ENDS)


def rest_ranges(total: int, start: int = _FIRST_LAST + 1) -> list[Range]:
    """The ranges that follow a first piece of `start` bytes (FIRST's by default) of a body of `total` bytes: what
    is left after it, in as few pieces of even sizes as keep each within PIECE_BYTES, the last open-ended; [] when
    the first piece is all."""
    return [] if total <= start else _even_ranges(start, total)


def piece_request(request: FetchRequest, index: int, asked: Range, sized: bool = True) -> FetchRequest:
    """The request of one piece; `sized` False: its expected size is left unknown (a first piece, probed, is
    scheduled as the whole request of unknown size would be)."""
    first, last = asked
    headers = [(k, v) for k, v in request.headers if k.lower() not in _OWN_FIELDS]
    headers += [("Accept-Encoding", "identity"), ("Range", f"bytes={first}-{'' if last is None else last}")]
    size = None if last is None or not sized else last - first + 1
    if sized and last is None and request.expected_size is not None:
        size = max(request.expected_size - first, 0)
    return dataclasses.replace(request, id=piece_id(request.id, index), headers=headers, expected_size=size,
                               expected_wire=None, decode=False, cache_store=False)


def piece_id(request_id: str, index: int) -> str:
    return f"{request_id}~piece{index}"


@dataclass
class PieceAnswer:
    head: DeliveredHead
    body: bytes


@dataclass
class Joined:
    head: DeliveredHead
    body: bytes


@dataclass(frozen=True)
class Refused:
    """Why the pieces give no answer, and the error code the request ends with."""

    reason: str
    code: ErrorCode = "protocol_error"


def _coded(head: DeliveredHead) -> bool:
    codings = [v.strip().lower() for k, v in head.headers if k.lower() == "content-encoding"]
    return any(c not in ("", "identity") for c in codings)


def join(asked: Sequence[Range], answers: Sequence[PieceAnswer]) -> Joined | Refused:
    """The whole answer from every piece's (all 206), or why they cannot be joined (module docstring)."""
    if len(asked) != len(answers) or not answers:
        return Refused("a piece is missing")
    total: int | None = None
    validator: str | None = None
    expected_first = 0
    for (first, last), answer in zip(asked, answers, strict=True):
        head = answer.head
        if head.status != 206:
            return Refused(f"a piece was answered {head.status}")
        if _coded(head):
            return Refused("a piece came with a content coding")
        cr = content_range(head)
        if cr is None:
            return Refused("a piece has no usable Content-Range")
        got_first, got_last, got_total = cr
        if total is None:
            total = got_total
            validator = piece_validator(head)
            if validator is None and len(answers) > 1:  # one piece alone is one version
                return Refused("no strong validator proves the pieces are of one version")
        elif got_total != total or piece_validator(head) != validator:
            return Refused("the pieces are of different versions", "resource_changed")
        want_last = total - 1 if last is None else last
        if first != expected_first or got_first != first or got_last != want_last or got_last >= total:
            return Refused(f"a piece answered bytes {got_first}-{got_last}/{got_total} for {first}-{want_last}")
        if len(answer.body) != got_last - got_first + 1:
            return Refused("a piece's body is not the length of its range")
        expected_first = got_last + 1
    assert total is not None
    if expected_first != total:
        return Refused("the pieces do not reach the end of the body")
    whole = as_whole(answers[0].head, total)
    if any(a.head.unproven for a in answers):  # one piece's place never proven: the whole is not either
        whole = dataclasses.replace(whole, unproven=True)
    return Joined(whole, b"".join(a.body for a in answers))


@dataclass
class _Piece:
    request: FetchRequest
    asked: Range
    head: DeliveredHead | None = None
    body: list[bytes] = field(default_factory=list)
    trailers: Headers = field(default_factory=list)
    error: FetchError | None = None
    report: TimingReport | None = None
    done: bool = False


class _Split:
    """One split request: its pieces as they arrive, until all have ended. One whose size is not known (`probe`)
    starts with its first piece alone (FIRST, asked as of unknown size: the pool schedules it as it would the whole
    request); its head adds the rest (`rest`: their fetch)."""

    def __init__(self, request: FetchRequest, ranges: list[Range], probe: bool = False) -> None:
        self.request = request
        self.pieces = [_Piece(piece_request(request, i, r, sized=not probe), r) for i, r in enumerate(ranges)]
        self.probe = probe
        # A piece answered 200 (a first piece: anything but 206 or 416): the whole answer by itself
        self.whole: _Piece | None = None
        self.streams = False  # that whole answer is a first piece's, handed on as it comes (module docstring)
        self.rest: asyncio.Task[None] | None = None
        self.cancelled = False

    def all_done(self) -> bool:
        return all(p.done for p in self.pieces)


def _timing(reports: list[TimingReport]) -> TimingReport:
    """The split request's timing: from the first piece queued to the last byte of any."""
    def first(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return min(known) if known else None
    ts = [r.timing for r in reports]
    timing = dataclasses.replace(ts[0], queued=min(t.queued for t in ts), sent=first([t.sent for t in ts]),
                                 first_byte=first([t.first_byte for t in ts]))
    lasts = [t.last_byte for t in ts if t.last_byte is not None]
    timing.last_byte = max(lasts) if lasts else None
    return TimingReport(timing, reports[0].connection, sum(r.retries for r in reports),
                        sum(r.wire_bytes for r in reports))


class PieceFetcher:
    """A Fetcher that asks the flight's large images and fonts in pieces (module docstring)."""

    def __init__(self, inner: Fetcher, split_where: LinkRoom | None = None,
                 may_hold: MayHold = lambda request_id, size: True) -> None:
        self.inner = inner
        self._split_where = split_where  # a URL's origin has a link with room for pieces (None: nowhere)
        self._may_hold = may_hold  # the caller's budget, asked before a first piece's rest (module docstring)
        self._splits: dict[str, _Split] = {}  # by the split request's id
        self._pieces: dict[str, tuple[_Split, _Piece]] = {}  # by piece id
        self._cancels: set[asyncio.Task[None]] = set()
        self._probes = 0  # first pieces asked so far (first_range)
        self.discarded_bytes = 0  # body bytes of pieces that were never handed on

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        batch: list[FetchRequest] = []
        splits: list[_Split] = []
        for request in requests:
            known, unknown = splittable(request), probed(request)
            room = (known or unknown) and self._split_where is not None and await self._split_where(request.url, page)
            ranges = [] if not room else piece_ranges(request.expected_size or 0) if known else [self._first()]
            if not ranges:
                batch.append(request)
                continue
            # The request's fields as the service would have sent it whole (it adds Accept-Encoding in place):
            # the flight compares those with the browser's request (fidelity.py); the pieces ask identity.
            with_accept_encoding(request, url_scheme(request.url))
            split = _Split(request, ranges, probe=not known)
            self._splits[request.id] = split
            splits.append(split)
            for piece in split.pieces:
                self._pieces[piece.request.id] = (split, piece)
                batch.append(piece.request)
        try:
            result = await self.inner.fetch(batch, _PieceSink(self, sink, page), page)
            # A first piece's head came before its end: every rest of this batch is under way by now.
            rests = [s.rest for s in splits if s.rest is not None]
            if rests:
                await asyncio.gather(*rests)
            return result
        finally:
            for split in splits:
                if split.rest is not None and not split.rest.done():
                    split.rest.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await split.rest
            for request in requests:
                ended = self._splits.pop(request.id, None)
                for piece in ended.pieces if ended is not None else ():
                    self._pieces.pop(piece.request.id, None)

    def _first(self) -> Range:
        self._probes += 1
        return first_range(self._probes - 1)

    def _ask_rest(self, split: _Split, total: int, start: int, sink: Sink, page: Page) -> None:
        """A first piece of `start` bytes told the body's size, `total`, more than it carries: the rest is asked in
        pieces, as a batch of its own through the same fetcher, so the pool spreads it over the connections by bytes
        (their sizes are known now: pool_plan.balanced_taker)."""
        sized = dataclasses.replace(split.request, expected_size=total)
        first = len(split.pieces)
        rest = [_Piece(piece_request(sized, first + i, r), r) for i, r in enumerate(rest_ranges(total, start))]
        split.pieces += rest
        for piece in rest:
            self._pieces[piece.request.id] = (split, piece)
        split.rest = asyncio.create_task(self._fetch_rest(split, rest, sink, page), name="lanefetch-piece-rest")

    async def _fetch_rest(self, split: _Split, rest: list[_Piece], sink: Sink, page: Page) -> None:
        if split.cancelled:  # cancelled before the rest went out
            await self._end_open(split, rest, FetchError("cancelled", "cancelled"), sink)
            return
        try:
            await self.inner.fetch([p.request for p in rest], _PieceSink(self, sink, page), page)
        except Exception as exc:  # the fetcher broke: every piece it left open ends, so the request gets its error
            log.exception("fetching a body's rest in pieces failed")
            await self._end_open(split, rest, FetchError("internal", f"fetching the rest failed: {exc}"), sink)

    async def _end_open(self, split: _Split, pieces: list[_Piece], error: FetchError, sink: Sink) -> None:
        """End with `error` the pieces that have not ended (no fetch will end them), and the split if that was all."""
        left = [p for p in pieces if not p.done]
        for piece in left:
            piece.error, piece.done = error, True
        if left:
            await self._piece_ended(split, sink)

    def _cancel_pieces(self, ids: list[str]) -> None:
        task = asyncio.create_task(self.inner.cancel(ids), name="lanefetch-piece-cancel")
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    async def _piece_head(self, split: _Split, piece: _Piece, head: DeliveredHead, sink: Sink, page: Page) -> None:
        piece.head = head
        if split.cancelled:  # cancelled while its batch was starting (the engine did not know its id yet)
            self._cancel_pieces([piece.request.id])
            return
        if split.whole is not None:
            return  # decided: another piece's answer is the whole one (this one was cancelled after it left)
        probing = split.probe and piece is split.pieces[0]
        # A first piece answered anything but a range (a 404, a redirect: what the whole request would get; a 416
        # is a range's own answer) is the whole answer too.
        whole = head.status == 200 or (probing and head.status not in (206, 416))
        if whole:
            split.whole = piece
            self._cancel_open(split, piece)
            if not (split.request.decode and _coded(head)):
                # Handed on as it comes, so the caller's budget can cut it: a first piece alone, or a piece of a
                # known split whose server ignored its Range (buffered whole, a body of any size crossed the link
                # before the budget saw a byte of it)
                split.streams = True
                await sink.head(split.request, head)
            return
        if head.status != 206 or _coded(head):
            self._cancel_open(split, piece)  # join will refuse: the others' bytes could never be used
            return
        if not split.probe:
            size = content_range(head)
            if (size is not None and size[2] != split.request.expected_size
                    and not self._may_hold(split.request.id, size[2])):
                # The file grew since it was learned, beyond what the caller's budget holds: its last piece, asked
                # open-ended, would fetch all of a body the budget never weighed. Every piece is cancelled (this
                # one may be that last one), join refuses, and the browser's request is fetched as usual. (A
                # change the budget holds is fetched: the open-ended piece brings the whole body.)
                self._cancel_pieces([p.request.id for p in split.pieces if not p.done])
            return
        told = content_range(head) if probing else None
        if told is None or told[0] != 0:
            return  # a piece of a known split, or a first piece's odd range: join judges it
        if told[2] <= (_FIRST_LAST if piece.asked[1] is None else piece.asked[1]) + 1:
            piece.asked = (0, None)  # the body is all in it
        elif (told[1] == piece.asked[1] and piece_validator(head) is not None
              and self._may_hold(split.request.id, told[2])):
            # (without a strong validator no rest could be proven of the first piece's version, and a body the
            # caller's budget cannot hold is not asked: join refuses, the browser's request is fetched whole)
            self._ask_rest(split, told[2], told[1] + 1, sink, page)

    def _holds(self, split: _Split, piece: _Piece, more: int) -> bool:
        """Whether `more` body bytes of a piece held until join can still be of use: a join takes a 206's body of
        exactly its Content-Range's length, and nothing of an answer it refuses (another status, a content coding).
        Past that the piece is held no further, out of the budget's sight: the bytes are thrown away and every piece
        of the split still under way is cancelled (join refuses it, the browser's request is fetched as usual)."""
        head = piece.head
        told = content_range(head) if head is not None and head.status == 206 and not _coded(head) else None
        held = sum(len(b) for b in piece.body)
        if told is not None and held + more <= told[1] - told[0] + 1:
            return True
        self.discarded_bytes += more
        if not split.cancelled:
            split.cancelled = True  # a head still to come, or the rest's, asks for nothing more
            self._cancel_pieces([p.request.id for p in split.pieces if not p.done])
        return False

    def _cancel_open(self, split: _Split, but: _Piece) -> None:
        """Cancel the split's pieces still under way, but one: its answer decided the request's."""
        others = [p.request.id for p in split.pieces if p is not but and not p.done]
        if others:
            self._cancel_pieces(others)

    async def _piece_ended(self, split: _Split, sink: Sink) -> None:
        if not split.all_done() or split.streams:
            return
        request = split.request
        reports = [p.report for p in split.pieces if p.report is not None]
        if split.whole is not None and split.whole.error is None and split.whole.head is not None:
            answer: Joined | Refused = Joined(split.whole.head, b"".join(split.whole.body))
            if split.request.decode and _coded(split.whole.head):  # identity was asked; the caller wants it decoded
                answer = Refused("the whole answer came with a content coding")
            report = split.whole.report or reports[0]
            discarded = [p for p in split.pieces if p is not split.whole]
        else:
            failed = next((p.error for p in split.pieces if p.error is not None), None)
            if failed is not None:
                answer = Refused(f"a piece failed: {failed.message}", failed.code)
            else:
                answer = join([p.asked for p in split.pieces],
                              [PieceAnswer(p.head, b"".join(p.body)) for p in split.pieces if p.head is not None])
            report = _timing(reports)
            discarded = split.pieces if isinstance(answer, Refused) else []
        self.discarded_bytes += sum(len(b) for p in discarded for b in p.body)
        if isinstance(answer, Refused):
            await sink.error(request, FetchError(answer.code, f"a flight's answer in pieces: {answer.reason}"))
        else:
            await sink.head(request, answer.head)
            for i in range(0, len(answer.body), CHUNK):
                await sink.body(request, answer.body[i : i + CHUNK])
            trailers = split.whole.trailers if split.whole is not None else []
            await sink.end(request, len(answer.body), trailers)
        await sink.timing(request, report)

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        return self.inner.preconnect(url, page, handshake)

    async def cancel(self, request_ids: list[str]) -> None:
        ids: list[str] = []
        for rid in request_ids:
            split = self._splits.get(rid)
            if split is not None:
                split.cancelled = True  # a first piece's head asks for no rest now
            ids += [p.request.id for p in split.pieces] if split is not None else [rid]
        await self.inner.cancel(ids)

    async def aclose(self) -> None:
        for task in list(self._cancels):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.inner.aclose()


class _PieceSink:
    """Routes each piece's events to its split; everything else to the caller's sink as it is."""

    def __init__(self, fetcher: PieceFetcher, sink: Sink, page: Page) -> None:
        self._fetcher = fetcher
        self._sink = sink
        self._page = page

    def _of(self, request: FetchRequest) -> tuple[_Split, _Piece] | None:
        return self._fetcher._pieces.get(request.id)

    @staticmethod
    def _streamed(found: tuple[_Split, _Piece]) -> bool:
        split, piece = found
        return split.streams and piece is split.whole

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        found = self._of(request)
        if found is None:
            await self._sink.head(request, head)
        else:
            await self._fetcher._piece_head(found[0], found[1], head, self._sink, self._page)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        found = self._of(request)
        if found is None:
            await self._sink.body(request, data)
        elif self._streamed(found):
            await self._sink.body(found[0].request, data)
        elif self._fetcher._holds(*found, len(data)):
            found[1].body.append(data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        found = self._of(request)
        if found is None:
            await self._sink.end(request, body_bytes, trailers)
        elif self._streamed(found):
            await self._sink.end(found[0].request, body_bytes, trailers)
        else:
            found[1].trailers = trailers

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        found = self._of(request)
        if found is None:
            await self._sink.error(request, error)
        elif self._streamed(found):
            await self._sink.error(found[0].request, error)
        else:
            found[1].error = error
            if found[0].whole is None:  # the request ends in an error: the others' bytes are of no use
                self._fetcher._cancel_open(*found)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        found = self._of(request)
        if found is None:
            await self._sink.timing(request, report)
            return
        split, piece = found
        piece.report = report
        piece.done = True
        if self._streamed(found):
            await self._sink.timing(split.request, report)
        await self._fetcher._piece_ended(split, self._sink)
