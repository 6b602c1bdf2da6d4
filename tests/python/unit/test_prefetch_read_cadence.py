"""When a streaming document is read (page_loads.read_due): early enough that what it names is found soon after its
bytes came, rarely enough that all reads together cost a bounded number of parses."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.prefetch.page_loads import MAX_TAPPED, PROGRESSIVE_GROWTH, PROGRESSIVE_MIN, read_due


def _reads(chunks: list[int]) -> list[int]:
    """The prefix sizes read as chunks of these sizes arrive (as _tapped does: a read takes all that arrived)."""
    size, read_at, reads = 0, 0, []
    for n in chunks:
        if size >= MAX_TAPPED:
            break
        size += n
        if read_due(size, read_at):
            read_at = size
            reads.append(size)
    return reads


chunk_lists = st.lists(st.integers(min_value=1, max_value=256 * 1024), min_size=1, max_size=400)


@given(chunk_lists, st.lists(st.integers(min_value=1, max_value=MAX_TAPPED), max_size=20))
def test_every_offset_is_read_soon_after_it_arrived(chunks: list[int], offsets: list[int]) -> None:
    # What ends at offset p is in the first read of a prefix >= p, and that read comes with the chunk that took the
    # document past max(PROGRESSIVE_MIN, GROWTH x p) (the old cadence, doubling up to 512 KiB, failed this past
    # 512 KiB: nothing was read again until the end)
    reads = _reads(chunks)
    arrivals, size = [], 0
    for n in chunks:
        if size >= MAX_TAPPED:
            break
        size += n
        arrivals.append(size)
    for p in offsets:
        due = next((a for a in arrivals if a >= max(PROGRESSIVE_MIN, PROGRESSIVE_GROWTH * p)), None)
        if due is None:
            continue  # the document (or what is kept of it) never got that far: the read of the whole covers it
        assert any(p <= r <= due for r in reads), (p, due, reads)


@given(chunk_lists)
def test_all_reads_together_cost_a_few_parses(chunks: list[int]) -> None:
    reads = _reads(chunks)
    if not reads:
        return
    # each read after the first is ≥ GROWTH × the one before: their sum is below last / (1 - 1/GROWTH)
    assert sum(reads) <= reads[-1] / (1 - 1 / PROGRESSIVE_GROWTH) + 1
    assert all(b >= PROGRESSIVE_GROWTH * a for a, b in itertools.pairwise(reads))


def test_first_read_at_the_prescan_window() -> None:
    assert not read_due(PROGRESSIVE_MIN - 1, 0)
    assert read_due(PROGRESSIVE_MIN, 0)
    assert _reads([512] * 4)[0] == PROGRESSIVE_MIN


def test_a_long_document_keeps_being_read_past_half_a_mebibyte() -> None:
    reads = _reads([64 * 1024] * 40)  # 2.5 MiB in 64 KiB pieces
    assert [r for r in reads if r > 1024 * 1024], reads
    past = [r for r in reads if r > 512 * 1024]
    assert len(past) >= 4, reads
