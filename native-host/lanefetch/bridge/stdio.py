"""The host's ends of the browser's port: stdin as a StreamReader, stdout as a frame writer.

On POSIX the event loop watches the pipes itself. On Windows browsers hand the host anonymous pipes, which
the Proactor loop can neither read nor write asynchronously, so there a thread reads stdin into the
StreamReader and writes go to stdout through a worker thread (`threaded=True`, also usable on POSIX). The
reading thread is paused by the reader as a pipe transport would be, so input is bounded the same way on both."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from typing import Protocol

READ_SIZE = 256 * 1024


class FrameWriter(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class ThreadedWriter:
    """Blocking writes to a file descriptor, off the event loop; `drain` returns once the bytes are written.

    One write at a time, in order: a drain cancelled while its thread still writes (the thread cannot be stopped)
    leaves that write running, and the next one starts only after it, never beside it (their bytes would
    interleave on the port)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: list[bytes] = []
        self._last: asyncio.Future[None] | None = None  # the latest write, which runs after those before it

    def write(self, data: bytes) -> None:
        self._pending.append(data)

    async def drain(self) -> None:
        data, self._pending = b"".join(self._pending), []
        if data:
            self._last = write = asyncio.ensure_future(self._write_after(self._last, data))
            write.add_done_callback(_retrieve)  # a write nobody awaits any more: its error is not logged
            await asyncio.shield(write)  # cancelling the sender never cancels the write under way

    async def _write_after(self, previous: asyncio.Future[None] | None, data: bytes) -> None:
        if previous is not None:
            await asyncio.wait([previous])  # its outcome is its own sender's
        await asyncio.to_thread(_write_all, self._fd, data)


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _PumpControl(asyncio.ReadTransport):
    """What the reader pauses and resumes in place of a pipe transport: the stdin thread's room to read. The reader
    pauses it beyond twice its limit and resumes it once read below the limit, so while the host does not read
    (its read loop waits for the port to take an answer) what the browser sends stays in the pipe, and then in the
    browser, as with the event loop's pipes; without it the thread read on and the helper's memory grew with
    whatever the browser sent meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.room = threading.Event()
        self.room.set()

    def pause_reading(self) -> None:
        self.room.clear()

    def resume_reading(self) -> None:
        self.room.set()

    def is_reading(self) -> bool:
        return self.room.is_set()


def _feed(reader: asyncio.StreamReader, data: bytes, fed: threading.Event) -> None:
    try:
        reader.feed_data(data)
    finally:
        fed.set()


def _pump(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop, control: _PumpControl) -> None:
    """Thread body: stdin → reader until EOF or a read error (both end the port). Each piece is fed before the next
    read, which waits for room (_PumpControl): the reader holds at most twice its limit and one piece."""
    try:
        while True:
            control.room.wait()
            data = os.read(fd, READ_SIZE)
            if not data:
                break
            fed = threading.Event()
            loop.call_soon_threadsafe(_feed, reader, data, fed)
            fed.wait()
    except (OSError, RuntimeError):  # a read error, or the loop is closed: nobody is reading any more
        pass
    finally:
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody is reading any more
            loop.call_soon_threadsafe(reader.feed_eof)


async def open_stdio(
    read_fd: int = 0, write_fd: int = 1, *, threaded: bool = sys.platform == "win32", limit: int = 2**20
) -> tuple[asyncio.StreamReader, FrameWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if threaded:
        # A daemon thread: a blocked os.read on stdin must not keep the process alive after the port closed.
        control = _PumpControl()
        reader.set_transport(control)
        threading.Thread(target=_pump, args=(read_fd, reader, loop, control), name="stdin", daemon=True).start()
        return reader, ThreadedWriter(write_fd)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0))
    transport, proto = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", buffering=0)
    )
    return reader, asyncio.StreamWriter(transport, proto, None, loop)
