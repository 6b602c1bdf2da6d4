"""The asyncio shell of a split fetch: one large GET fetched as byte ranges over several lanes.

Each lane is an Engine of its own (its own pipelined connection, bound to the lane's interface), so a
bulk transfer never sits in front of the small requests the main engine pipelines to the same origin; its
connections count under the helper's one cap with every other engine's (engine/connection_cap.py).
The first request asks for bytes 0..T-1 on the first lane; each other lane, as soon as it is connected, asks
for the range after it (speculative: the size is not known yet, nor the validator If-Range would need), so
a body worth splitting finds every lane already receiving. What the first request gets back decides:
  206 for the whole body (small)     -> delivered as a 200 with the body, one exchange, no more requests
  206 with more to come + validator  -> the rest is split over the lanes by SplitSchedule, If-Range on each
  206 without a strong validator     -> the rest is fetched on the first lane only (ranges cannot be proven
                                        to belong to one version of the resource)
  200 (Range ignored), 3xx, 4xx, 5xx -> streamed to the caller as it is
  206 not from byte 0, or unreadable -> protocol_error (never a partial answer to a request without Range)
  416 (an empty body)                -> fetched again without Range and streamed as it is
Every range's Content-Range and validator are checked; a resource that changed mid-transfer fails with
`resource_changed` (the caller starts over; the CLI does so once by itself). A speculative range is used only
when its Content-Range fits the body and its validator is the first response's; else its bytes are fetched
again properly. One answered 200 (Range ignored) has its lane's connection closed at once, so no second
copy of the whole body runs; 416 (the body ends before it) is ignored."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from ..engine import DeliveredHead, Engine, EngineConfig, FetchError, FetchRequest, Page, Sink, TimingReport
from ..engine.connection_cap import ConnectionCap
from ..engine.engine import policy_key, shared_cap
from ..engine.fields import Headers
from ..engine.partial_content import as_whole, content_range, piece_validator
from ..engine.request import parse_target
from ..engine.timing import LaneReport, epoch_ms, now, wall_offset
from .estimate import LaneEstimate
from .interfaces import Binding, PolicyStore
from .schedule import Attempt, Cancel, Command, Fetch, LaneDown, LaneState, ScheduleConfig, SplitSchedule

log = logging.getLogger("lanefetch.lanes")

DEFAULT_ROUTE = "default route"  # a lane without an interface of its own, as a person reads it
LaneObserver = Callable[[str, str, int], None]  # (request id, lane name, bytes that just arrived on it)

FIRST_BYTES = 20 * 1024  # the first request's range, unless the fastest lane's BDP is larger
SPECULATIVE_BYTES = 64 * 1024  # a speculative range, unless the lane's BDP is larger: its first round trips
USAGE_SAVE_DELAY = 2.0  # seconds after a split fetch before its byte counts are written (or on close)
POLL_INTERVAL = 0.05  # how often stalls and steals are looked at while nothing else happens
# The caller's own range or conditional fields would change what the pieces mean: the split sets its own.
_OWN_FIELDS = frozenset({"range", "if-range", "accept-encoding"})


@dataclass
class LaneSpec:
    binding: Binding | None  # None: the default route, no binding
    weight: float = 1.0

    @property
    def name(self) -> str | None:
        return self.binding.interface.name if self.binding else None


class Lane:
    def __init__(self, lane_id: int, spec: LaneSpec, config: EngineConfig, cap: ConnectionCap) -> None:
        """`cap`: the cap on connections (connection_cap.py) the split's lanes share (with the helper's other
        engines where it was given one)."""
        self.id = lane_id
        self.spec = spec
        self._config = dataclasses.replace(
            config, interface=spec.name, socket_setup=spec.binding.setup if spec.binding else None,
            connections_per_origin=1,
            # The schedule bounds what a lane has outstanding (the next range only within a round trip of
            # the current one's end); the origin's budget would count a range as one huge response and
            # hold that next range back, idling the lane for a round trip at every chunk.
            inflight_budget=False,
            separate_bulk=False,  # the lane's next range is meant to be pipelined behind the current one
        )
        self.cap = cap
        self.engine = Engine(self._config, self.cap)
        self.estimate = LaneEstimate()  # kept across fetches: the next split starts from what was learned

    def reset(self) -> Coroutine[Any, Any, None]:
        """Drop this lane's connections (it stalled or failed, or carries an answer not wanted): the next
        use connects afresh at once; the old engine closes in the coroutine returned (run it as a task of
        its own: this may be called from inside that engine's connection)."""
        old = self.engine
        self.engine = Engine(self._config, self.cap)
        self.engine.policies = old.policies
        return old.aclose()


def _field(head: DeliveredHead, name: str) -> str | None:
    values = [v for k, v in head.headers if k.lower() == name]
    return ", ".join(values) if values else None


class SplitFetcher:
    def __init__(
        self, config: EngineConfig, specs: list[LaneSpec], *, schedule: ScheduleConfig | None = None,
        first_bytes: int = FIRST_BYTES, usage: PolicyStore | None = None, cap: ConnectionCap | None = None,
    ) -> None:
        """`cap`: the helper's cap on connections, shared with its other engines (connection_cap.py); None: the
        lanes share one of their own."""
        if not specs:
            specs = [LaneSpec(None)]
        cap = shared_cap(config, cap)
        self.lanes = [Lane(i, s, config, cap) for i, s in enumerate(specs)]
        shared = self.lanes[0].engine.policies  # pipelining learned once per origin for every lane
        for lane in self.lanes[1:]:
            lane.engine.policies = shared
        self.schedule_config = schedule or ScheduleConfig()
        self.first_bytes = first_bytes
        self.usage = usage
        self._runs: dict[str, _SplitRun] = {}
        self._saving: asyncio.Task[None] | None = None
        self._save_timer: asyncio.TimerHandle | None = None
        self.background: set[asyncio.Task[object]] = set()  # speculative ranges no run waits for
        self._usage_dirty = False
        # Who watches each lane's bytes as they arrive (the CLI's per-lane progress): (request id, lane, bytes).
        self.on_lane_bytes: LaneObserver | None = None

    async def fetch(self, request: FetchRequest, sink: Sink, page: Page) -> None:
        run = _SplitRun(self, request, sink, page)
        self._runs[request.id] = run
        try:
            await run.run()
        finally:
            del self._runs[request.id]
            if self.usage is not None:
                for lane in self.lanes:
                    if lane.spec.name and run.lane_bytes.get(lane.id):
                        self.usage.count(lane.spec.name, run.lane_bytes[lane.id])
                self._save_usage()

    def _save_usage(self) -> None:
        """Today's byte counts go to disk a while after the fetch, in a thread (a file write, and the
        thread pool's start, cost milliseconds on a busy machine: more than a small body's exchange)."""
        self._usage_dirty = True
        if self._save_timer is None and (self._saving is None or self._saving.done()):
            self._save_timer = asyncio.get_running_loop().call_later(USAGE_SAVE_DELAY, self._start_save)

    def _start_save(self) -> None:
        self._save_timer = None
        self._saving = asyncio.create_task(self._write_usage())

    async def _write_usage(self) -> None:
        while self._usage_dirty and self.usage is not None:
            self._usage_dirty = False
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.usage.write, self.usage.snapshot())

    async def cancel(self, request_id: str) -> bool:
        run = self._runs.get(request_id)
        if run is None:
            return False
        await run.fail(FetchError("cancelled", "cancelled by the caller"))
        return True

    def in_background(self, coro: Coroutine[Any, Any, object]) -> None:
        """A task no run waits for (a speculative range, a lane's old connections closing); aclose ends it."""
        task = asyncio.create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def aclose(self) -> None:
        for lane in self.lanes:
            await lane.engine.aclose()
        while self.background:  # closing engines above may have started more
            for task in list(self.background):
                task.cancel()
            await asyncio.gather(*self.background, return_exceptions=True)
        if self._save_timer is not None:
            self._save_timer.cancel()
            self._save_timer = None
        if self._saving is not None:
            await self._saving
        if self._usage_dirty and self.usage is not None:  # closing: no need to keep off anyone's path
            self._usage_dirty = False
            with contextlib.suppress(OSError):
                self.usage.save()

    def first_range(self) -> int:
        bdps = [b for lane in self.lanes if (b := lane.estimate.bdp()) is not None]
        return max([self.first_bytes, *bdps])


@dataclass
class _Speculative:
    """A range sent on another lane before the first answer came back (so without If-Range)."""

    lane: Lane
    start: int
    end: int
    request_id: str
    sent_at: float
    head: DeliveredHead | None = None
    held: list[tuple[float, bytes]] = field(default_factory=list)  # (arrival, bytes) until adopted
    ended: bool = False
    error: FetchError | None = None
    attempt: Attempt | None = None  # once the schedule adopted it
    usable: bool = False  # adopted and its head checked: its bytes go to the schedule
    dropped: bool = False  # not used: whatever else arrives is ignored


class _PieceSink:
    """Receives one range request's response from a lane engine and hands it to the run."""

    def __init__(self, run: _SplitRun, lane: Lane, attempt: Attempt | None,
                 speculative: _Speculative | None = None) -> None:
        self.run, self.lane, self.attempt, self.speculative = run, lane, attempt, speculative

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        await self.run.on_head(self, head)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        await self.run.on_body(self, data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        await self.run.on_end(self, trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        await self.run.on_error(self, error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.run.on_timing(self, report)


class _SplitRun:
    def __init__(self, fetcher: SplitFetcher, request: FetchRequest, sink: Sink, page: Page) -> None:
        self.f = fetcher
        self.request = request
        self.sink = sink
        self.page = page
        self.mode: str | None = None  # "pass" | "whole" | "split" | "again"
        self.decided = asyncio.Event()
        self.schedule: SplitSchedule | None = None
        self._first_attempt: Attempt | None = None  # the first request, adopted by the schedule
        self.validator: str | None = None
        self.total = 0
        self.finished = False
        self.http11 = False
        self._reported = False
        self.first_report: TimingReport | None = None
        self.wire_bytes = 0
        self.lane_bytes: dict[int, int] = {}
        self.wake = asyncio.Event()
        self.tasks: set[asyncio.Task[object]] = set()
        self.req_ids: dict[int, tuple[Lane, str]] = {}  # attempt id -> (lane, request id)
        self.cancelled: set[int] = set()
        self.speculative: list[_Speculative] = []
        self.down: set[int] = set()
        self._out: deque[bytes] = deque()
        self._out_lock = asyncio.Lock()
        self.delivered = 0
        self._seq = 0
        base = [(k, v) for k, v in request.headers if k.lower() not in _OWN_FIELDS]
        self.base_headers: Headers = [*base, ("Accept-Encoding", "identity")]

    # -- the flow ----------------------------------------------------------------------------------------

    async def run(self) -> None:
        lane0 = self.f.lanes[0]
        first = self._sub_request([("Range", f"bytes=0-{self.f.first_range() - 1}")])
        self.req_ids[0] = (lane0, first.id)  # attempt ids start at 1: 0 is the first request
        first_task = self._spawn(lane0.engine.fetch([first], _PieceSink(self, lane0, None), self.page))
        # The other lanes connect and ask for the next ranges while the first answer travels; started after
        # the first request's task so nothing of theirs runs ahead of it.
        asyncio.get_running_loop().call_soon(self._speculate, self.f.first_range())
        await self.decided.wait()
        if self.mode in ("pass", "whole"):
            await first_task  # the one exchange carries the whole answer
        elif self.mode == "split":
            self._pipeline_now(lane0)
            await self._split_loop()
        elif self.mode == "again":
            plain = dataclasses.replace(self.request, split=False)
            await lane0.engine.fetch([plain], self.sink, self.page)
            self.finished = True
        await self._wind_down()

    def _speculate(self, first_end: int) -> None:
        """Each other lane asks for the range after the previous one, sized to the lane's BDP (its first
        round trips of slow start) or SPECULATIVE_BYTES, without waiting for the first answer."""
        if self.mode is not None:
            return  # the first answer is already here
        start = first_end
        for lane in self.f.lanes[1:]:
            end = start + max(SPECULATIVE_BYTES, lane.estimate.bdp() or 0)
            req = self._sub_request([("Range", f"bytes={start}-{end - 1}")])
            spec = _Speculative(lane, start, end, req.id, now())
            self.speculative.append(spec)
            # Not awaited by this run: one not needed runs out on its own (a 416 or a short 206).
            self.f.in_background(lane.engine.fetch([req], _PieceSink(self, lane, None, spec), self.page))
            start = end

    def _pipeline_now(self, lane: Lane) -> None:
        """The first range came back from an HTTP/1.1 server: let the lanes pipeline their next range behind
        the one in flight from now on (the engine would wait for a whole response first, a round trip lost
        on every lane). A server that cannot pipeline demotes the origin as usual and nothing is lost."""
        target = parse_target(self.request.url)
        policy = lane.engine.policies.get(policy_key(target.origin, self.page))
        if policy is not None and self.http11:
            policy.unlock_pipelining()

    async def _split_loop(self) -> None:
        sched = self.schedule
        assert sched is not None
        while not self.finished:
            for cmd in sched.poll(now()):
                await self._execute(cmd)
            if sched.done:
                await self._drain()
                self.finished = True
                await self.sink.end(self.request, self.delivered, [])
                await self._report()
                return
            if sched.failed:
                reasons = "; ".join(f"{self._lane_name(ln.id)}: {ln.down_reason}" for ln in sched.lanes.values())
                await self.fail(FetchError("connection_lost", f"every lane failed ({reasons})"))
                return
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), POLL_INTERVAL)

    async def _execute(self, cmd: Command) -> None:
        log.debug("%.3f %s", now(), cmd)
        if isinstance(cmd, Fetch):
            att = cmd.attempt
            lane = self.f.lanes[att.lane]
            headers = [("Range", f"bytes={att.start}-{att.end - 1}")]
            if self.validator:
                headers.append(("If-Range", self.validator))
            req = self._sub_request(headers)
            self.req_ids[att.id] = (lane, req.id)
            self._spawn(lane.engine.fetch([req], _PieceSink(self, lane, att), self.page))
        elif isinstance(cmd, Cancel):
            self.cancelled.add(cmd.attempt.id)
            known = self.req_ids.get(cmd.attempt.id)
            if known is not None:
                await known[0].engine.cancel([known[1]])
        elif isinstance(cmd, LaneDown):
            self.down.add(cmd.lane)
            self.f.in_background(self.f.lanes[cmd.lane].reset())

    async def _wind_down(self) -> None:
        # Duplicates still running (a stolen tail's loser), cancelled attempts: stop them.
        for att_id, (lane, rid) in self.req_ids.items():
            if att_id not in self.cancelled:
                await lane.engine.cancel([rid])
        for spec in self.speculative:
            if spec.attempt is None:
                await self._drop_speculative(spec, close=False)
        if self.tasks:
            _, pending = await asyncio.wait(list(self.tasks), timeout=5)
            if pending:
                log.warning("split %s: %d piece fetches did not end: %s", self.request.id, len(pending), pending)

    # -- events from the lanes ---------------------------------------------------------------------------

    async def on_head(self, ps: _PieceSink, head: DeliveredHead) -> None:
        if ps.speculative is not None:
            await self._speculative_head(ps.speculative, head)
            return
        if self.finished:
            return
        if ps.attempt is None:
            await self._first_head(ps, head)
            return
        att = ps.attempt
        cr = content_range(head)
        if head.status != 206 or cr != (att.start, att.end - 1, self.total) or piece_validator(head) != self.validator:
            why = f"a range request got {head.status}" if head.status != 206 else "its ranges no longer match"
            await self.fail(FetchError("resource_changed", f"the resource changed during a split fetch ({why})"))

    async def _first_head(self, ps: _PieceSink, head: DeliveredHead) -> None:
        cr = content_range(head)
        if head.status == 416:
            self.mode = "again"  # Range on an empty body: fetch it plainly
        elif head.status != 206:
            self.mode = "pass"
            await self.sink.head(self.request, head)
        elif cr is None or cr[0] != 0:  # a part the caller (a request without Range) never asked for
            self._fail_first(FetchError("protocol_error", "the first range was answered with another part of the body"))
        elif cr[1] >= cr[2]:
            self._fail_first(FetchError("protocol_error", f"a range answer's Content-Range ends past its total ({cr})"))
        else:
            _, last, total = cr
            self.total = total
            if total <= last + 1:
                self.mode = "whole"
                await self.sink.head(self.request, as_whole(head, total))
            else:
                self.mode = "split"
                self.http11 = head.http_version == "1.1"
                self.validator = piece_validator(head)
                self._start_schedule(ps.lane, last + 1, total)
                await self.sink.head(self.request, as_whole(head, total))
                for spec in self.speculative:
                    await self._adopt_speculative(spec)
        self.decided.set()
        if self.mode != "split":
            for spec in self.speculative:
                await self._drop_speculative(spec, close=False)

    def _start_schedule(self, first_lane: Lane, first_end: int, total: int) -> None:
        lanes = self.f.lanes if self.validator else [first_lane]  # unprovable pieces: one lane only
        states = [LaneState(ln.id, ln.spec.weight, ln.estimate) for ln in lanes]
        self.schedule = SplitSchedule(total, states, self.f.schedule_config)
        assert self.first_report is None
        att = self.schedule.adopt(first_lane.id, 0, first_end, now())
        # the request went out about one round trip ago; the lane's RTT is learned from the next ones
        att.rtt_probe = False
        self._first_attempt = att

    async def on_body(self, ps: _PieceSink, data: bytes) -> None:
        self.lane_bytes[ps.lane.id] = self.lane_bytes.get(ps.lane.id, 0) + len(data)
        if self.f.on_lane_bytes is not None:
            self.f.on_lane_bytes(self.request.id, ps.lane.spec.name or DEFAULT_ROUTE, len(data))
        if self.finished:
            return
        if ps.speculative is not None:
            spec = ps.speculative
            if spec.dropped:
                return
            if not spec.usable:
                spec.held.append((now(), data))
                return
        if self.mode in ("pass", "whole"):
            if self.mode == "whole" and self.delivered + len(data) > self.total:
                self._fail_first(FetchError("protocol_error", "a range response carried more bytes than asked for"))
                return
            self.delivered += len(data)
            await self.sink.body(self.request, data)
            return
        if self.mode != "split" or self.schedule is None:
            return
        att = self._attempt_of(ps)
        assert att is not None
        if att.pos + len(data) > att.end:
            await self.fail(FetchError("protocol_error", "a range response carried more bytes than asked for"))
            return
        self._out.extend(self.schedule.receive(att.id, data, now()))
        self.wake.set()
        await self._drain()

    async def _drain(self) -> None:
        async with self._out_lock:  # pieces leave in the order they were put in, whatever task drains
            while self._out and not self.finished:
                piece = self._out.popleft()
                self.delivered += len(piece)
                await self.sink.body(self.request, piece)

    async def on_end(self, ps: _PieceSink, trailers: Headers) -> None:
        if ps.speculative is not None:
            ps.speculative.ended = True
            if not ps.speculative.usable:
                return
        if self.finished:
            return
        if self.mode in ("pass", "whole"):
            if self.mode == "whole" and self.delivered != self.total:
                self._fail_first(FetchError("protocol_error", "a range response ended before its Content-Range did"))
                return
            self.finished = True
            await self.sink.end(self.request, self.delivered, trailers)
            return
        if self.mode == "split" and self.schedule is not None:
            att = self._attempt_of(ps)
            assert att is not None
            if att.live and att.pos < att.end and att.id not in self.cancelled:
                # Its Content-Range was checked to be the range asked: a body ending sooner is malformed (asking
                # its rest again would loop for as long as the server answers so).
                await self.fail(FetchError("protocol_error", "a range response ended before its Content-Range did"))
                return
            self.schedule.attempt_done(att.id, now())
            log.debug("%.3f done %s", now(), att)
            self.wake.set()

    async def on_error(self, ps: _PieceSink, error: FetchError) -> None:
        if ps.speculative is not None:
            spec = ps.speculative
            spec.error = error
            if spec.dropped or self.finished:
                return
            if spec.attempt is None:  # not adopted yet: the lane is given up when the schedule starts
                return
        if self.finished:
            return
        if ps.attempt is None and self.mode is None:  # the first request failed outright
            self.mode = "failed"
            self.decided.set()
            await self.fail(error)
            return
        if self.mode in ("pass", "whole"):
            await self.fail(error)
            return
        if self.schedule is None:
            return
        att = self._attempt_of(ps)
        assert att is not None
        if att.id in self.cancelled:
            return
        for cmd in self.schedule.attempt_failed(att.id, now(), f"{error.code}: {error.message}"):
            await self._execute(cmd)
        self.wake.set()

    def on_timing(self, ps: _PieceSink, report: TimingReport) -> None:
        self.wire_bytes += report.wire_bytes
        t = report.timing
        # Round trips the schedule cannot see itself: the TCP handshake of a lane's fresh connection, and the
        # first request (its lane is never idle again, so it would never be probed and pipeline too late).
        if t.connect_start is not None and t.connect_end is not None:
            ps.lane.estimate.rtt_sample(t.connect_end - t.connect_start)
        if ps.attempt is None and t.sent is not None and t.first_byte is not None:
            ps.lane.estimate.rtt_sample(t.first_byte - t.sent)  # the first or a speculative request
        if ps.speculative is not None:
            return
        if ps.attempt is None:
            self.first_report = report
            if self.mode in ("pass", "whole") and not self.decided.is_set():
                self.decided.set()
            if self.mode in ("pass", "whole"):
                self._spawn(self._report())

    # -- speculative ranges ------------------------------------------------------------------------------

    async def _speculative_head(self, spec: _Speculative, head: DeliveredHead) -> None:
        spec.head = head
        if head.status not in (206, 416):
            # Range ignored: the whole body would follow, a second copy on this lane. Close it now.
            spec.dropped = True
            if spec.attempt is not None and self.schedule is not None and not self.finished:
                self.cancelled.add(spec.attempt.id)
                self.schedule.discard(spec.attempt.id)  # its bytes back to the pool
                self.wake.set()
            await self._drop_speculative(spec, close=True)
            return
        if self.finished or spec.dropped or spec.attempt is None:
            return  # checked when the schedule adopts it
        await self._check_speculative(spec)

    async def _adopt_speculative(self, spec: _Speculative) -> None:
        """The first answer says split: take what the speculative range brings, if it can be used."""
        sched = self.schedule
        assert sched is not None
        if spec.dropped:
            return
        if spec.lane.id not in sched.lanes or spec.start >= self.total:
            await self._drop_speculative(spec, close=False)  # no validator to prove it / beyond the body
            return
        if spec.error is not None:
            for cmd in sched.lane_failed(spec.lane.id, f"{spec.error.code}: {spec.error.message}"):
                await self._execute(cmd)
            return
        att = sched.adopt(spec.lane.id, spec.start, min(spec.end, self.total), spec.sent_at)
        spec.attempt = att
        self.req_ids[att.id] = (spec.lane, spec.request_id)
        if spec.head is not None:
            await self._check_speculative(spec)

    async def _check_speculative(self, spec: _Speculative) -> None:
        """An adopted speculative range's head is here: use its bytes if they are the body's, else discard
        it (its bytes go back to the pool and are fetched again with If-Range)."""
        att, head, sched = spec.attempt, spec.head, self.schedule
        assert att is not None and head is not None and sched is not None
        if (head.status != 206 or content_range(head) != (att.start, att.end - 1, self.total)
                or piece_validator(head) != self.validator
                or sum(len(data) for _, data in spec.held) > att.end - att.start):  # more bytes than its range
            log.debug("speculative %d-%d not usable: %s %s", att.start, att.end - 1, head.status,
                      content_range(head))
            sched.discard(att.id)
            await self._drop_speculative(spec, close=False)
            self.wake.set()
            return
        spec.usable = True
        for t, data in spec.held:
            self._out.extend(sched.receive(att.id, data, t))
        spec.held.clear()
        if spec.ended:
            sched.attempt_done(att.id, now())
        self.wake.set()

    async def _drop_speculative(self, spec: _Speculative, *, close: bool) -> None:
        """Stop using a speculative range. Its answer runs out on its lane (a 416 or a 206 of at most its
        range), unless close: it is a whole body (Range ignored), and the lane's connection is closed."""
        spec.dropped = True
        spec.held.clear()
        if close and not spec.ended and spec.error is None:
            # Only its connection: ranges pipelined behind it (this run's or another's) are retried.
            await spec.lane.engine.cancel_and_close(spec.request_id)

    # -- endings -----------------------------------------------------------------------------------------

    async def fail(self, error: FetchError) -> None:
        if self.finished:
            return
        self.finished = True
        if not self.decided.is_set():
            self.mode = self.mode or "failed"
            self.decided.set()
        await self.sink.error(self.request, error)
        await self._report()
        self.wake.set()

    def _fail_first(self, error: FetchError) -> None:
        """The first request's answer cannot be used (called from its own exchange's callbacks): nothing more of it
        is delivered, and the run fails once those return (the error's timing report waits for the exchange's)."""
        self.mode = "failed"
        self._spawn(self.fail(error))

    async def _report(self) -> None:
        if self._reported:
            return
        self._reported = True
        first = self.first_report
        if first is None:  # the split ended before the first exchange reported: wait briefly for it
            for _ in range(50):
                await asyncio.sleep(0.02)
                if self.first_report is not None:
                    break
            first = self.first_report
        timing = dataclasses.replace(first.timing) if first else None
        if timing is None:
            from ..engine.timing import RequestTiming

            timing = RequestTiming(queued=now())
        timing.last_byte = now()
        lanes = None
        if self.schedule is not None:
            offset = wall_offset()
            lanes = [
                LaneReport(
                    interface=self.f.lanes[st.id].spec.name, bytes=st.bytes, requests=st.requests,
                    rtt_ms=None if st.estimate.srtt is None else round(st.estimate.srtt * 1000, 3),
                    throughput_bps=None if st.estimate.rate is None else round(st.estimate.rate * 8),
                    first_byte=epoch_ms(st.first_byte, offset), last_byte=epoch_ms(st.last_byte, offset),
                    down=st.down_reason,
                )
                for st in self.schedule.lanes.values()
            ]
        report = TimingReport(timing, first.connection if first else None, 0, self.wire_bytes, "none", lanes)
        await self.sink.timing(self.request, report)

    # -- helpers -----------------------------------------------------------------------------------------

    def _attempt_of(self, ps: _PieceSink) -> Attempt | None:
        if ps.speculative is not None:
            return ps.speculative.attempt
        return ps.attempt or self._first_attempt

    def _lane_name(self, lane_id: int) -> str:
        return self.f.lanes[lane_id].spec.name or "default route"

    def _sub_request(self, extra: Headers) -> FetchRequest:
        self._seq += 1
        return FetchRequest(
            id=f"{self.request.id}~{self._seq}", method="GET", url=self.request.url,
            headers=[*self.base_headers, *extra], resource_type=self.request.resource_type,
            priority=self.request.priority,
        )

    def _spawn(self, coro: Coroutine[Any, Any, object]) -> asyncio.Task[object]:
        task: asyncio.Task[object] = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[object]) -> None:
        self.tasks.discard(task)
        self.wake.set()
        if not task.cancelled() and task.exception() is not None:
            self._spawn(self.fail(FetchError("internal", f"split fetch failed: {task.exception()!r}")))




def make_fetcher(config: EngineConfig, lanes: list[tuple[str, float]] | None,
                 warn: Callable[[str], None] | None = None, cap: ConnectionCap | None = None) -> SplitFetcher:
    """Lanes by name ((name, weight) pairs; [] = the default route only), or when None from the
    interfaces the user's policy allows (metered ones excluded); no usable interface: the default route."""
    from .interfaces import PolicyStore, binding_for, choose

    try:
        store: PolicyStore | None = PolicyStore.load()
    except ValueError as e:
        if warn is not None:
            warn(str(e))
        store = None
    wanted = [(n, w) for n, w in lanes] if lanes is not None else []
    chosen = choose(wanted, store or PolicyStore(), allow_metered=bool(wanted), warn=warn)
    if lanes == []:
        chosen = []
    specs = [LaneSpec(binding_for(iface), weight) for iface, weight in chosen]
    return SplitFetcher(config, specs, usage=store, cap=cap)
