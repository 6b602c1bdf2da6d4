"""How many bytes one page may fetch that the browser has not (yet) asked for.

Every prefetched byte is *unrequested* from the moment it is fetched until a browser request claims its response
(fidelity.py said match); if none ever does, it was wasted: on a 384 kbit/s link 48 kB of wrong guesses cost the
user a whole second, and they share the link with the bytes the page does need. So the flight of one page keeps a
ledger, and a page's unrequested bytes (pending + wasted) never exceed its limits by more than one read per
prefetch in flight at that moment (bytes already on the wire arrive whatever the helper decides):

- `speculative`: bytes of guesses, i.e. anything neither *stable* in learned.py (requested in ≥ 2 of the page's
  last loads) nor found by discovery in this very load's document or stylesheets. Limit: 5 % of the page's bytes
  as learned (the issue's ceiling on waste per page), at least 32 KiB so a page with no history can still try a
  small guess, and at most 0.5 s of the link's measured rate when it is known (what one wrong guess may cost in
  time, whatever the page's size). Unknown page bytes: the 32 KiB floor alone.
- `total`: everything the flight holds unclaimed, confident items included (they are expected to be claimed; if
  the page changed, the next learned load demotes them). Limit: twice the page's learned bytes, at least
  256 KiB and at most 8 MiB: it bounds both the holding area's memory and the damage of a page that changed
  under a stable record, while never throttling a flight that is merely ahead of the browser (the whole page is
  the point of a flight). A first visit (no history: its flight is what discovery found in the page's own
  document and stylesheets, all confident) may hold FIRST_VISIT_TOTAL (the 8 MiB ceiling) unclaimed: the
  document names the page's subresources at once, the browser asks for them only once it has the whole document
  (debugger mode fulfils a request whole), and what passes a lower limit is cancelled midway, its bytes wasted
  while the browser fetches it again (measured: with 1 MiB, `rust-book-print`'s 1.08 MB highlight.js — counted
  decoded — was cancelled on every first visit). What bounds a first visit's waste instead: the flight stops
  sending at its first refusal by the fidelity rule (flight.py).
A learned page whose flight has a confident item of unknown size (one left to the browser's own warm connection in
the learning loads: its size never reached the helper) gets the first visit's `total` too: twice the known bytes
says nothing of it. rust-book-print's highlight.js, 1.08 MB decoded, was left so; its second visit's `total` came
to 1.58 MB, and the flight cut the script and seven images on their way, each fetched again for the browser
(downlink 1.24-1.48 x OFF's).
`total` has no rate cap: fetching the page's own bytes ahead is what a flight is for, on a slow link most of all.
Why a byte bound and not a count: a count lets one large wrong image through; bytes are what the
user pays in time.

A prefetch is admitted before its request is sent, against its expected size (the learned size; when unknown,
UNKNOWN_SIZE for a confident item until it ends, nothing for a guess: then only while its class is under its
limit; a size told before the body, by a first piece's Content-Range, weighs it again at once, and a rest that
would not fit is not asked: `expect`, flight_pieces.py); its bytes are counted as they arrive (`received` tells
the caller to cancel the fetch when the class went over). Claimed bytes leave the ledger (they were useful);
discarded ones stay counted as waste to the end of the page. A prefetch the browser has asked for (its request
waits for it: `asked`) is no longer unrequested: it leaves both classes and is never cancelled for the budget's
sake; cancelling it would only make the waiting request start again from nothing, a round trip later (rust-std's
italic font, a 60 kB guess on a sibling visit: cut at 32 KiB while the browser waited, then fetched whole again).
Refused by the fidelity rule after all, it is waste like any other. Nor does one prefetch ever hold more than
HOLD_CEILING, asked for or not: it is held whole in memory until it ended, and a body that decodes without end (a
compression bomb: zstd turns 8 KiB into 256 MiB) filled the helper's memory while the browser waited for it, where
the browser's own request streams through the helper and the extension refuses what passes 8 MiB; cut there, the
waiting request is fetched as usual. A flight's revalidation of what the helper's
cache holds stale (flight.py, `Planned.stored`) is admitted at nothing (a 304 is a head) and as confident: the page
asked for it before, and a full answer where a 304 was expected (a changed file, or a server that never sends 304,
as Apache for what it compresses) is what the browser's own revalidation would fetch. Pure: no clock, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

SPECULATIVE_SHARE = 0.05
SPECULATIVE_FLOOR = 32 * 1024
TOTAL_FLOOR = 256 * 1024
UNKNOWN_SIZE = 64 * 1024  # what a confident prefetch of unknown size is admitted against, until it ended
TOTAL_CEILING = 8 * 1024 * 1024
FIRST_VISIT_TOTAL = TOTAL_CEILING
#: The most one prefetch's body may hold, asked for or not (module docstring): what the extension takes in one answer
#: (extension/src/deliver/response-assembler.ts, DEFAULT_MAX_BODY_BYTES)
HOLD_CEILING = TOTAL_CEILING
LINK_SECONDS = 0.5


@dataclass(frozen=True)
class Limits:
    speculative: int
    total: int


def limits_for(page_bytes: int | None, link_bytes_per_s: float | None = None, *, first_visit: bool = False,
               sizes_unknown: bool = False) -> Limits:
    """The page's limits from its learned bytes (None: no history) and the link's rate (None: not measured);
    `first_visit`: a page without history whose flight is what discovery found in its own document;
    `sizes_unknown`: the page's flight has a confident item of unknown size (module docstring)."""
    known = page_bytes if page_bytes is not None and page_bytes > 0 else 0
    speculative = max(int(SPECULATIVE_SHARE * known), SPECULATIVE_FLOOR)
    floor = FIRST_VISIT_TOTAL if (first_visit and not known) or sizes_unknown else TOTAL_FLOOR
    total = min(max(2 * known, floor), TOTAL_CEILING)
    if link_bytes_per_s is not None and link_bytes_per_s > 0:
        speculative = min(speculative, int(LINK_SECONDS * link_bytes_per_s))
    return Limits(speculative=speculative, total=max(total, speculative))


@dataclass
class _Item:
    confident: bool
    expected: int
    received: int = 0
    state: str = "pending"  # pending, asked (a browser request waits for it), claimed, discarded

    @property
    def weight(self) -> int:
        return max(self.expected, self.received)


@dataclass
class Ledger:
    limits: Limits
    _items: dict[str, _Item] = field(default_factory=dict)

    def _used(self, *, speculative_only: bool) -> int:
        return sum(i.weight for i in self._items.values()
                   if i.state not in ("claimed", "asked") and not (speculative_only and i.confident))

    def admit(self, item_id: str, *, confident: bool, expected_size: int | None) -> bool:
        """Whether a prefetch may be sent now; if so it is recorded against its expected size."""
        if item_id in self._items:
            return False
        # A confident item of unknown size counts as UNKNOWN_SIZE until it ends (finished): otherwise every such item
        # is admitted at once while nothing has arrived yet, and the class can only be kept by cancelling midway.
        expected = max(expected_size if expected_size is not None else (UNKNOWN_SIZE if confident else 0), 0)
        if self._used(speculative_only=False) + expected > self.limits.total or (
                expected == 0 and self._used(speculative_only=False) >= self.limits.total):
            return False
        if not confident:
            used = self._used(speculative_only=True)
            if used + expected > self.limits.speculative or (expected == 0 and used >= self.limits.speculative):
                return False
        self._items[item_id] = _Item(confident=confident, expected=expected)
        return True

    def expect(self, item_id: str, size: int) -> bool:
        """A pending prefetch's size became known before its body came (a first piece's Content-Range,
        flight_pieces.py): whether its class still keeps within its limit with it weighed at that size; if so, it is
        from now on. A prefetch the browser asked for is refused (or cut: `asked`) only past HOLD_CEILING."""
        item = self._items.get(item_id)
        if item is None:
            return False
        before = item.expected
        item.expected = max(size, 0)
        fits = self._within(item)
        if not fits:
            item.expected = before
        return fits

    def _within(self, item: _Item) -> bool:
        """Does the class of this item keep within its limit as the ledger stands (always, once it is not pending),
        and the item within HOLD_CEILING (asked for or not)?"""
        if item.weight > HOLD_CEILING:
            return False
        if item.state != "pending":
            return True
        if self._used(speculative_only=False) > self.limits.total:
            return False
        return item.confident or self._used(speculative_only=True) <= self.limits.speculative

    def received(self, item_id: str, n: int) -> bool:
        """Count n more body bytes of a pending prefetch; False when its class is now over its limit (the caller
        cancels the fetch and discards it)."""
        item = self._items[item_id]
        item.received += n
        return self._within(item)

    def asked(self, item_id: str) -> None:
        """A browser request for this prefetch's URL waits for it: requested, no longer counted or cancelled."""
        item = self._items.get(item_id)
        if item is not None and item.state == "pending":
            item.state = "asked"

    def unasked(self, item_id: str) -> None:
        """The browser request that waited for it went away (cancelled) with none other waiting: it is a guess
        again, counted and cut by the limits."""
        item = self._items.get(item_id)
        if item is not None and item.state == "asked":
            item.state = "pending"

    def finished(self, item_id: str) -> None:
        """A prefetch arrived whole: its size is known now (an estimate no longer counts)."""
        item = self._items.get(item_id)
        if item is not None:
            item.expected = item.received

    def claim(self, item_id: str) -> None:
        """A browser request took this prefetch's response: its bytes were useful."""
        item = self._items.get(item_id)
        if item is not None and item.state in ("pending", "asked"):
            item.state = "claimed"

    def discard(self, item_id: str) -> None:
        """Never to be claimed (fidelity refused it, it failed, was cancelled or the page ended): waste."""
        item = self._items.get(item_id)
        if item is not None and item.state in ("pending", "asked"):
            item.state = "discarded"
            item.expected = 0  # only what really came over the link is waste

    @property
    def claimed_bytes(self) -> int:
        return sum(i.received for i in self._items.values() if i.state == "claimed")

    @property
    def wasted_bytes(self) -> int:
        return sum(i.received for i in self._items.values() if i.state == "discarded")

    @property
    def unrequested_bytes(self) -> int:
        """Fetched and neither claimed nor asked for: pending plus wasted."""
        return sum(i.received for i in self._items.values() if i.state not in ("claimed", "asked"))
