"""Running a command's asyncio work so that `kill` (SIGTERM) and the terminal or session ending (SIGHUP) stop it as
Ctrl-C does: its task is cancelled, so its clean-up runs (the CLI's part files removed, the host's page loads under
way recorded and its listeners and discovery worker closed). Python's default for these signals ends the process
where it stands. Shared by `lanefetch fetch` (cli.py) and the native-messaging host (bridge/host.py)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any


async def _stoppable(work: Coroutine[Any, Any, int | None], stopped_by: list[int]) -> int | None:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def stop(signum: int) -> None:
        if not stopped_by and task is not None:  # once: a second signal must not cut the clean-up short
            task.cancel()
        stopped_by.append(signum)

    for name in ("SIGTERM", "SIGHUP"):  # Windows has no SIGHUP, and its loop no add_signal_handler
        if hasattr(signal, name):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(getattr(signal, name), stop, getattr(signal, name))
    return await work


def run(work: Coroutine[Any, Any, int | None]) -> int:
    """asyncio.run(work); the exit status: what a shell reports for a process a signal ended (130 for Ctrl-C,
    128 + the signal's number for SIGTERM or SIGHUP), else work's own (None: 0)."""
    stopped_by: list[int] = []
    try:
        status = asyncio.run(_stoppable(work, stopped_by))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        if not stopped_by:
            raise
    if stopped_by:
        return 128 + stopped_by[0]
    return status or 0
