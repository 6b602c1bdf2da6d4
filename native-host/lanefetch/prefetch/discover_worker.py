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
page load begins, so its start-up is not paid by the first stylesheet; tasks run one at a time, in order. Bodies
and results cross by pickling. If the process cannot be started or dies, discovery runs in a worker thread instead
(logged), never failing a page.

Matching a stylesheet's background rules against a document (discover_backgrounds.expected_backgrounds) has a hard
bound, MATCH_LIMIT_S: lexbor's selector matching backtracks, exponentially within one selector
(`.nomatch div div div div div div div div .x` against a document nested 60 deep took 110 s), and the match's own
deadline (MAX_SECONDS) is only checked between selectors. A match still running at MATCH_LIMIT_S has its worker
killed (the next task starts a new one) and yields no guess. For that bound to be the match's own time, the worker
is given one task at a time (`_turn`, in the order they came, as the pool's queue had them): nothing waits behind
a match in the worker's queue, so killing the worker loses no other discovery, and a match's time starts when it
does. A turn lasts until the worker is done with its task even if whoever asked went away (a load that ended), so
an abandoned task still holds the next one back instead of eating into its time. A lexbor call cannot be stopped
in a thread (it holds the GIL: it would stall the helper's event loop as long), so once discovery fell back to a
thread no background is matched; a Discoverer made with `use_process=False` (tests) matches in its thread,
unbounded."""

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
from typing import Any, NamedTuple

from .discover_backgrounds import BackgroundRule, background_rules_of, expected_backgrounds
from .discover_css import discover_css_rules, parse_stylesheet_in
from .discover_html import DocumentRead, read_document
from .resource import Subresource

log = logging.getLogger(__name__)

# A match's hard bound in the worker: its own deadline (MAX_SECONDS of matching, checked between selectors), the
# parse of a document of up to page_loads.MAX_KEPT_DOCUMENT (lexbor: tens of ms) and the pickling, on a loaded
# machine, fit in it many times over; one selector's backtracking may not
MATCH_LIMIT_S = 2.0


def _ready() -> bool:
    return True


class StylesheetRead(NamedTuple):
    """What a read of a stylesheet found (read_stylesheet)."""

    found: list[Subresource]  # discover_css's subresources
    rules: list[BackgroundRule]  # its background rules, where asked for
    encoding: str  # the encoding it was read in: the fallback of the sheets it imports


def read_stylesheet(body: bytes, url: str, charset: str | None, backgrounds: bool,
                    environment: str | None = None) -> StylesheetRead:
    """One parse of a stylesheet for both its readers: what it names (discover_css) and, where `backgrounds`, the
    rules that set a background or hide (discover_backgrounds); tokenizing is most of either's cost. `environment`:
    the encoding of what linked it (its document's, or the importing sheet's), CSS's fallback for a sheet without a
    BOM, a charset or an @charset."""
    rules, encoding = parse_stylesheet_in(body, charset, document_encoding=environment)
    found = discover_css_rules(rules, url)
    if not backgrounds:
        return StylesheetRead(found, [], encoding)
    try:
        return StylesheetRead(found, background_rules_of(rules, url), encoding)
    except RecursionError:  # nesting past the interpreter's limit: no guesses from it, what it names still flies
        return StylesheetRead(found, [], encoding)


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


class _Overran:
    """What a task the worker was killed for (it ran past its limit) returns."""


_OVERRAN = _Overran()


class Discoverer:
    def __init__(self, *, use_process: bool = True, match_limit_s: float = MATCH_LIMIT_S) -> None:
        self._use_process = use_process
        self._threads_only = not use_process  # made so (tests): matches run in the thread, unbounded
        self._match_limit_s = match_limit_s
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._thread: Executor | None = None
        self._up = False  # the worker process answered a task: a timed one does not pay for its start
        self._turn = asyncio.Lock()  # one task in the worker at a time (the module's docstring)
        self._turns: set[asyncio.Task[Any]] = set()

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

    def _kill(self) -> None:
        """Kill the worker process (it overran, or discovery ends); the next task starts a new one."""
        pool, self._pool, self._up = self._pool, None, False
        if pool is None:
            return
        for process in list((pool._processes or {}).values()):  # Python 3.14 has pool.kill_workers()
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)  # its manager thread reaps the killed worker

    async def _run(self, fn: object, *args: object, limit: float | None = None) -> Any:
        """`fn(*args)` in the worker, in its turn; _OVERRAN where it ran past `limit` seconds (its worker killed)."""
        turn = asyncio.ensure_future(self._in_turn(fn, args, limit))
        self._turns.add(turn)
        turn.add_done_callback(self._turns.discard)
        # Whoever asked may go away (its load ended): the turn still runs to its end, holding the next one back
        turn.add_done_callback(lambda t: t.cancelled() or t.exception())
        return await asyncio.shield(turn)

    async def _in_turn(self, fn: object, args: tuple[object, ...], limit: float | None) -> Any:
        loop = asyncio.get_running_loop()
        async with self._turn:
            try:
                executor = self._executor()
                if limit is not None and executor is not self._pool:
                    return _OVERRAN  # a thread cannot bound it (the module's docstring)
                if executor is not self._pool or limit is None:
                    result: Any = await loop.run_in_executor(executor, fn, *args)  # type: ignore[arg-type]
                    self._up = executor is self._pool
                    return result
                if not self._up:  # its start (imports) is not the task's time
                    await loop.run_in_executor(executor, _ready)
                    self._up = True
                try:
                    return await asyncio.wait_for(loop.run_in_executor(executor, fn, *args),  # type: ignore[arg-type]
                                                  limit)
                except TimeoutError:
                    log.warning("a discovery task ran past %g s: its worker process is killed", limit)
                    self._kill()
                    return _OVERRAN
            # OSError: the forkserver could not start (its socket's path under TMPDIR past AF_UNIX's 108 bytes).
            except (concurrent.futures.process.BrokenProcessPool, RuntimeError, OSError) as e:
                log.warning("discovery process failed (%r): discovery runs in a thread from now on", e)
                self._broken()
                if limit is not None:
                    return _OVERRAN  # a thread cannot bound it (the module's docstring)
                return await loop.run_in_executor(self._executor(), fn, *args)  # type: ignore[arg-type]

    async def html(self, body: bytes, url: str, charset: str | None) -> DocumentRead:
        """What the document names, whether it sets a Content-Security-Policy of its own and whether the bytes read
        reach past its head (discover_html.read_document)."""
        read: DocumentRead = await self._run(read_document, body, url, charset)
        return read

    async def stylesheet(self, body: bytes, url: str, charset: str | None, backgrounds: bool,
                         environment: str | None = None) -> StylesheetRead:
        """What the stylesheet names, its background rules and its encoding (read_stylesheet)."""
        read: StylesheetRead = await self._run(read_stylesheet, body, url, charset, backgrounds, environment)
        return read

    async def backgrounds(self, document: bytes, charset: str | None,
                          rules: list[BackgroundRule]) -> list[Subresource]:
        """The images `rules` expect on the document (discover_backgrounds.expected_backgrounds) within
        MATCH_LIMIT_S; none where the match overran or cannot be bounded (the module's docstring)."""
        expected: list[Subresource] | _Overran = await self._run(
            expected_backgrounds, document, charset, rules, limit=None if self._threads_only else self._match_limit_s)
        return [] if isinstance(expected, _Overran) else expected

    def close(self) -> None:
        """Ends discovery: a task running in the worker process is killed with it, those waiting are dropped."""
        for turn in list(self._turns):
            turn.cancel()
        self._kill()
        if self._thread is not None:
            self._thread.shutdown(wait=False, cancel_futures=True)
        self._thread = None
