"""The Windows port's writer (bridge/stdio.py ThreadedWriter, usable on POSIX with threaded=True): frames go out
whole and in order even when a sender is cancelled while its frame is still being written, as the host's
"working" ticker is at the end of every batch (the host's send lock is then released with the thread still
writing)."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from lanefetch.bridge import stdio


async def test_a_cancelled_drain_does_not_let_the_next_frame_write_alongside(monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.Lock()
    writing: list[bytes] = []  # frames whose write is under way
    overlaps: list[tuple[bytes, ...]] = []
    order: list[bytes] = []
    first_started, release = threading.Event(), threading.Event()

    def fake_write_all(fd: int, data: bytes) -> None:
        with lock:
            if writing:
                overlaps.append((*writing, data))
            writing.append(data)
            order.append(data)
        if data == b"A":
            first_started.set()
            release.wait(10)  # a pipe the browser is slow to read
        with lock:
            writing.remove(data)

    monkeypatch.setattr(stdio, "_write_all", fake_write_all)
    writer = stdio.ThreadedWriter(-1)
    writer.write(b"A")
    first = asyncio.create_task(writer.drain())
    assert await asyncio.to_thread(first_started.wait, 10)
    first.cancel()  # the sender is cancelled; its frame is still going out
    with contextlib.suppress(asyncio.CancelledError):
        await first
    writer.write(b"B")
    second = asyncio.create_task(writer.drain())
    for _ in range(50):  # give B's write every chance to start beside A's
        await asyncio.sleep(0.01)
        if len(order) > 1:
            break
    release.set()
    await asyncio.wait_for(second, 10)
    assert overlaps == [], "two frames were written to the port at once (their bytes interleave)"
    assert order == [b"A", b"B"]
