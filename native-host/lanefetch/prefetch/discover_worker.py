"""Discovery (discover_html.py, discover_css.py, discover_backgrounds.py) off the helper's event loop: one worker
process.

Why a process and not a thread: the parsers hold the GIL while they run (tinycss2 is pure Python; lexbor is
called without releasing it), and a thread that holds the GIL slows the loop that streams every other response
of every page. Measured on the development machine (2 cores, load 1.9–2.7; an event loop bouncing one byte over
a socket pair while the parses ran, as docs/prefetch.md describes): five parses of a 70 kB stylesheet (33 ms
each) took the same time inline, in a thread or in a process, but the loop's round trips per second fell from
~250 000 (idle) to ~68 000 inline (worst stall 166 ms), ~64 000–70 000 with a worker thread (worst 10–22 ms: the
GIL's 5 ms switch interval, paid on every system call the loop makes), and stayed at ~275 000 with a worker
process (worst 2–5 ms). Parsing only the @import and @font-face rules would still tokenize the whole sheet (a
rule's end is found by tokenizing), so it saves little.

One process, started (forkserver: never a fork of the threaded helper) before the helper answers the browser's
hello (bridge/host.py: ~0.3 s of imports a first page would otherwise share the machine with) or when the first
page load begins, so its start-up is not paid by the first stylesheet; tasks queue in order. Bodies and results cross by
pickling. If the process cannot be started or dies, discovery runs in a worker thread instead (logged), never
failing a page."""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process  # named in an except clause: imported even where only threads run
import logging
import multiprocessing
import os
import select
import threading
import time
from concurrent.futures import Executor
from typing import Any

from .discover_backgrounds import BackgroundRule, background_rules_of, expected_backgrounds
from .discover_css import discover_css_rules, parse_stylesheet
from .discover_html import DocumentRead, read_document
from .resource import Subresource

log = logging.getLogger(__name__)


def _ready() -> bool:
    return True


def read_stylesheet(body: bytes, url: str, charset: str | None,
                    backgrounds: bool) -> tuple[list[Subresource], list[BackgroundRule]]:
    """One parse of a stylesheet for both its readers: what it names (discover_css) and, where `backgrounds`, the
    rules that set a background or hide (discover_backgrounds); tokenizing is most of either's cost."""
    rules = parse_stylesheet(body, charset)
    found = discover_css_rules(rules, url)
    if not backgrounds:
        return found, []
    try:
        return found, background_rules_of(rules, url)
    except RecursionError:  # nesting past the interpreter's limit: no guesses from it, what it names still flies
        return found, []


def _end_with(helper_pid: int) -> None:
    """Worker initializer: the worker exits when the helper does, however the helper ended.

    A ProcessPoolExecutor worker waits on its call queue, whose write end it holds itself (the queue is pickled
    whole), so a helper killed without shutting the pool down (SIGKILL, a crash) left the worker waiting forever,
    and with it the forkserver (the worker holds the forkserver's liveness pipe). The worker's parent is the
    forkserver, so it watches the helper's pid: a pidfd (Linux) becomes readable when that process ends; elsewhere
    it polls once a second."""

    def watch() -> None:
        try:
            fd = os.pidfd_open(helper_pid)
        except (AttributeError, OSError):
            while True:
                time.sleep(1.0)
                try:
                    os.kill(helper_pid, 0)
                except ProcessLookupError:
                    os._exit(0)
                except PermissionError:
                    pass
        select.select([fd], [], [])
        os._exit(0)

    threading.Thread(target=watch, name="lanefetch-helper-watch", daemon=True).start()


class Discoverer:
    def __init__(self, *, use_process: bool = True) -> None:
        self._use_process = use_process
        self._pool: Executor | None = None
        self._thread: Executor | None = None

    def _executor(self) -> Executor:
        if self._pool is None and self._use_process:
            try:
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("forkserver"), initializer=_end_with,
                    initargs=(os.getpid(),))
            except (OSError, ValueError) as e:
                log.warning("no discovery process (%r): discovery runs in a thread", e)
                self._use_process = False
        if self._pool is not None:
            return self._pool
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lanefetch-discover")
        return self._thread

    def warm(self) -> None:
        """Start the worker now (a page load began) so the first document does not wait for it."""
        try:
            self._executor().submit(_ready)
        except (RuntimeError, OSError):  # shut down, the process died, or no forkserver: the next run falls back
            self._broken()

    async def started(self) -> None:
        """The worker is up, started now if need be (what warm() starts, awaited)."""
        await self._run(_ready)

    def _broken(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._use_process = False

    async def _run(self, fn: object, *args: object) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor(), fn, *args)  # type: ignore[arg-type]
        # OSError: the forkserver could not start (its socket's path under TMPDIR past AF_UNIX's 108 bytes).
        except (concurrent.futures.process.BrokenProcessPool, RuntimeError, OSError) as e:
            log.warning("discovery process failed (%r): discovery runs in a thread from now on", e)
            self._broken()
            return await loop.run_in_executor(self._executor(), fn, *args)  # type: ignore[arg-type]

    async def html(self, body: bytes, url: str, charset: str | None) -> DocumentRead:
        """What the document names, whether it sets a Content-Security-Policy of its own and whether the bytes read
        reach past its head (discover_html.read_document)."""
        read: DocumentRead = await self._run(read_document, body, url, charset)
        return read

    async def stylesheet(self, body: bytes, url: str, charset: str | None,
                         backgrounds: bool) -> tuple[list[Subresource], list[BackgroundRule]]:
        read: tuple[list[Subresource], list[BackgroundRule]] = await self._run(
            read_stylesheet, body, url, charset, backgrounds)
        return read

    async def backgrounds(self, document: bytes, charset: str | None,
                          rules: list[BackgroundRule]) -> list[Subresource]:
        expected: list[Subresource] = await self._run(expected_backgrounds, document, charset, rules)
        return expected

    def close(self) -> None:
        for executor in (self._pool, self._thread):
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
        self._pool = self._thread = None
