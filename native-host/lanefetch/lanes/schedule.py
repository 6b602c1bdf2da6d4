"""Sans-I/O split scheduler: which lane fetches which byte range of one body, and when.

The body's first T bytes were asked for on one lane before its size was known (that exchange is
adopted as the first attempt); the rest is cut into chunks as lanes become ready:

- a lane is ready when it has nothing in flight, or when its one response in flight will end within
  about a round trip (the next range is then pipelined behind it, so the lane never idles);
- a chunk's size follows the lane's smoothed throughput (`rate × chunk_seconds`); a lane with no
  estimate yet gets its bandwidth-delay product if known (SBAM's equation 1) or `initial_chunk`;
- near the end, sizes are water-filled so every lane is expected to finish at the same moment;
- when nothing is left to hand out, an idle lane steals the tail of the slowest outstanding range
  (a duplicate request; whichever bytes arrive first are used, the other request is cancelled);
- a lane that stalls or fails is given up for this body and its missing ranges go back to the pool;
- ranges are handed out lowest offset first and never beyond `delivered + window` (stolen tails included),
  so the memory held for reordering stays bounded: by the window, plus the adopted ranges below, which the
  shell sent before the schedule existed and which may reach past it by their own size.

Requests the shell sent before the body's size was known (the first partial GET; speculative ranges on the
other lanes) are adopted as attempts; one whose answer turns out unusable (Range ignored, another version of
the resource) is discarded: its bytes go back to the pool, its lane stays up.

The shell feeds events (`adopt`, `receive`, `attempt_done`, `discard`, `attempt_failed`, `lane_failed`) and
carries out the commands `poll()` returns (`Fetch`, `Cancel`, `LaneDown`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from .estimate import LaneEstimate
from .reassembly import Reassembly

MAX_WEIGHT_RATIO = 1e6  # lanes' weights are compared only up to this ratio


@dataclass
class ScheduleConfig:
    initial_chunk: int = 256 * 1024  # first range of a lane without estimates: lets slow start open up
    min_chunk: int = 32 * 1024  # smaller ranges cost more in request overhead than they save
    max_chunk: int = 8 * 1024 * 1024
    chunk_seconds: float = 0.5  # a chunk lasts about this long (or 4 RTTs), so estimates steer the split
    window: int = 16 * 1024 * 1024  # bytes beyond the in-order point a range may reach (reordering memory)
    stall_min: float = 1.5  # no byte for max(this, 4 × SRTT) with requests outstanding: the lane stalled
    stall_unknown: float = 6.0  # ... for a lane whose RTT is not known yet (connect + request on a slow link)
    steal_min: int = 4 * 1024  # stealing fewer bytes than this is not worth a request


@dataclass
class Attempt:
    """One range request on one lane; bytes [start, end) were asked for, [start, pos) have arrived."""

    id: int
    lane: int
    start: int
    end: int
    sent_at: float
    pos: int = 0
    first_byte_at: float | None = None
    live: bool = True  # False once finished, cancelled or given up
    steal_of: int | None = None  # the attempt whose tail this one duplicates
    stolen: bool = False  # another lane duplicates this one's tail
    rtt_probe: bool = False  # sent on an idle lane: request to first byte is one round trip

    def __post_init__(self) -> None:
        self.pos = self.start


@dataclass
class LaneState:
    id: int
    weight: float = 1.0
    estimate: LaneEstimate = field(default_factory=LaneEstimate)
    alive: bool = True
    down_reason: str | None = None
    attempts: list[Attempt] = field(default_factory=list)  # live ones, in the order they were sent
    requests: int = 0
    bytes: int = 0  # bytes received on this lane (duplicates included)
    first_byte: float | None = None
    last_byte: float | None = None
    last_activity: float = 0.0  # last byte, or when the lane last went from idle to busy

    def backlog(self) -> int:
        return sum(a.end - a.pos for a in self.attempts)


@dataclass(frozen=True)
class Fetch:
    attempt: Attempt


@dataclass(frozen=True)
class Cancel:
    attempt: Attempt


@dataclass(frozen=True)
class LaneDown:
    lane: int
    reason: str


Command = Fetch | Cancel | LaneDown


def subtract(ranges: Iterable[tuple[int, int]], cut: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of `ranges` not in any of `cut` (all half-open)."""
    out = [r for r in ranges if r[0] < r[1]]
    for cs, ce in cut:
        nxt: list[tuple[int, int]] = []
        for s, e in out:
            if ce <= s or cs >= e:
                nxt.append((s, e))
                continue
            if s < cs:
                nxt.append((s, cs))
            if ce < e:
                nxt.append((ce, e))
        out = nxt
    return sorted(out)


class SplitSchedule:
    def __init__(self, size: int, lanes: Iterable[LaneState], config: ScheduleConfig | None = None) -> None:
        self.config = config or ScheduleConfig()
        self.size = size
        self.lanes: dict[int, LaneState] = {lane.id: lane for lane in lanes}
        if not self.lanes:
            raise ValueError("a split needs at least one lane")
        # Weights only count relative to each other: scaled so the largest is 1, none below 1/MAX_WEIGHT_RATIO. As
        # given (any number above 0 is accepted), a lane's rate guessed from another's by weight could overflow to inf.
        top = max(lane.weight for lane in self.lanes.values())
        for lane in self.lanes.values():
            lane.weight = max(lane.weight / top, 1 / MAX_WEIGHT_RATIO)
        self.output = Reassembly(size)
        self.todo: list[tuple[int, int]] = [(0, size)] if size else []
        self.attempts: dict[int, Attempt] = {}
        self._ids = itertools.count(1)

    # -- state -------------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.output.complete

    @property
    def failed(self) -> bool:
        return not self.done and not any(lane.alive for lane in self.lanes.values())

    def live_attempts(self) -> list[Attempt]:
        return [a for lane in self.lanes.values() for a in lane.attempts]

    # -- events from the shell ---------------------------------------------------------------------------

    def adopt(self, lane_id: int, start: int, end: int, sent_at: float) -> Attempt:
        """A request the shell already sent (the first partial GET, a speculative range) becomes an attempt
        of this schedule. It went out before the schedule existed: its first byte is no RTT sample."""
        if not 0 <= start < end <= self.size:
            raise ValueError(f"cannot adopt bytes {start}-{end - 1} of a body of {self.size}")
        att = self._new_attempt(lane_id, start, end, sent_at)
        att.rtt_probe = False
        self.todo = subtract(self.todo, [(start, end)])
        return att

    def discard(self, attempt_id: int) -> None:
        """The attempt's answer cannot be used (checked before any of its bytes were received): the bytes
        it was to bring go back to the pool; its lane stays up."""
        att = self.attempts[attempt_id]
        if att.live:
            self._retire(att)
            self._give_up(att)

    def receive(self, attempt_id: int, data: bytes, now: float) -> list[bytes]:
        """Bytes of an attempt's response, in order; returns the body bytes that can now go out in order."""
        att = self.attempts[attempt_id]
        if att.pos + len(data) > att.end:
            raise ValueError(f"attempt {att.id} got bytes past {att.end}")
        lane = self.lanes[att.lane]
        if att.first_byte_at is None:
            att.first_byte_at = now
            if att.rtt_probe:
                lane.estimate.rtt_sample(now - att.sent_at)
        if lane.first_byte is None:
            lane.first_byte = now
        if lane.last_byte is not None and lane.attempts:
            # throughput: only the time the lane spent receiving counts, not idle gaps
            lane.estimate.received(len(data), min(now - lane.last_activity, now - lane.last_byte))
        lane.bytes += len(data)
        lane.last_byte = lane.last_activity = now
        offset = att.pos
        att.pos += len(data)
        return self.output.add(offset, data)

    def attempt_done(self, attempt_id: int, now: float) -> None:
        """The attempt's response ended (complete, or cancelled by us)."""
        att = self.attempts[attempt_id]
        if att.live and att.pos < att.end:
            self._give_up(att)  # ended short: its missing bytes go back to the pool
        self._retire(att)

    def attempt_failed(self, attempt_id: int, now: float, reason: str) -> list[Command]:
        """The lane could not deliver this attempt (after the engine's own retries): the lane is down."""
        att = self.attempts[attempt_id]
        if not att.live:
            return []
        return self._lane_down(self.lanes[att.lane], reason)

    def lane_failed(self, lane_id: int, reason: str) -> list[Command]:
        return self._lane_down(self.lanes[lane_id], reason)

    # -- decisions ---------------------------------------------------------------------------------------

    def poll(self, now: float) -> list[Command]:
        """What to do now: give up stalled lanes, cancel duplicates nobody needs, hand out ranges."""
        cmds: list[Command] = []
        for lane in self.lanes.values():
            if lane.alive and lane.attempts and now - lane.last_activity > self._stall_after(lane):
                cmds += self._lane_down(lane, f"no data for {now - lane.last_activity:.1f} s")
        for att in self.live_attempts():
            if self._all_here(att.pos, att.end):
                self._retire(att)
                if att.pos < att.end:  # another lane got these bytes first: stop the duplicate
                    cmds.append(Cancel(att))
        if self.done:
            return cmds
        for lane in sorted(self.lanes.values(), key=lambda ln: -(ln.estimate.rate or 0.0)):
            while lane.alive and self._ready(lane, now):
                new = self._assign(lane, now) or self._steal(lane, now)
                if new is None:
                    break
                cmds.append(Fetch(new))
        return cmds

    # -- internals ---------------------------------------------------------------------------------------

    def _new_attempt(self, lane_id: int, start: int, end: int, now: float, steal_of: int | None = None) -> Attempt:
        lane = self.lanes[lane_id]
        att = Attempt(next(self._ids), lane_id, start, end, now, steal_of=steal_of, rtt_probe=not lane.attempts)
        if not lane.attempts:
            lane.last_activity = now
        lane.attempts.append(att)
        lane.requests += 1
        self.attempts[att.id] = att
        return att

    def _retire(self, att: Attempt) -> None:
        if att.live:
            att.live = False
            lane = self.lanes[att.lane]
            if att in lane.attempts:
                lane.attempts.remove(att)

    def _stall_after(self, lane: LaneState) -> float:
        srtt = lane.estimate.srtt
        if srtt is None:
            return self.config.stall_unknown
        return max(self.config.stall_min, 4 * srtt)

    def _all_here(self, start: int, end: int) -> bool:
        pos = start
        while pos < end:
            nxt = self.output.covered(pos)
            if nxt <= pos:
                return False
            pos = nxt
        return True

    def _rate(self, lane: LaneState) -> float | None:
        """The lane's throughput, or a guess from the others scaled by weight; None if nobody knows."""
        if lane.estimate.rate is not None:
            return lane.estimate.rate
        known = [ln for ln in self.lanes.values() if ln.alive and ln.estimate.rate is not None]
        if not known:
            return None
        per_weight = sum((ln.estimate.rate or 0.0) / ln.weight for ln in known) / len(known)
        return per_weight * lane.weight

    def _ready(self, lane: LaneState, now: float) -> bool:
        if not lane.attempts:
            return True
        if len(lane.attempts) > 1:
            return False
        # One in flight: pipeline the next range once this one will end within about two round trips (the
        # bytes still to come include those in the bottleneck's queue; the request needs half an RTT to
        # reach the server, which must still have bytes to send when it arrives or the lane idles).
        rate, srtt = self._rate(lane), lane.estimate.srtt
        ahead = max(self.config.min_chunk * 2, int(2 * rate * srtt) if rate and srtt else 0)
        return lane.attempts[0].end - lane.attempts[0].pos <= ahead

    def _chunk_size(self, lane: LaneState, now: float) -> int:
        cfg = self.config
        remaining = sum(e - s for s, e in self.todo)
        rate = self._rate(lane)
        if rate is None:
            bdp = lane.estimate.bdp()
            base = max(cfg.initial_chunk, bdp or 0)
            weights = sum(ln.weight for ln in self.lanes.values() if ln.alive)
            fair = int(remaining * lane.weight / weights) if weights else remaining
            size = min(base, max(fair, cfg.min_chunk))
        else:
            srtt = lane.estimate.srtt or 0.0
            size = int(rate * max(cfg.chunk_seconds, 4 * srtt))
            shares = self._water_fill_shares(now, remaining)
            if shares is not None:
                share = shares[lane.id]
                if share < cfg.min_chunk / 2 and remaining > cfg.min_chunk and max(shares.values()) > share:
                    return 0  # a lane expected to finish sooner takes it
                size = min(size, int(share))
        size = max(cfg.min_chunk, min(size, cfg.max_chunk))
        if remaining - size < cfg.min_chunk:
            size = remaining  # leave no crumbs behind
        return size

    def _water_fill_shares(self, now: float, remaining: int) -> dict[int, float] | None:
        """Bytes per alive lane such that all are expected to finish the rest together; None while the rest
        is more than one round of ordinary chunks (or some lane's rate cannot even be guessed)."""
        lanes = [ln for ln in self.lanes.values() if ln.alive]
        rates: dict[int, float] = {}
        for ln in lanes:
            r = self._rate(ln)
            if r is None:
                return None
            rates[ln.id] = r
        capacity = sum(rates[ln.id] * max(self.config.chunk_seconds, 4 * (ln.estimate.srtt or 0.0)) for ln in lanes)
        if remaining > capacity:
            return None
        # when each lane could start on new bytes: after its backlog, and not before a request's round trip
        free = {ln.id: now + max(ln.backlog() / rates[ln.id], ln.estimate.srtt or 0.0) for ln in lanes}
        order = sorted(free.items(), key=lambda kv: kv[1])
        # the finish time F with sum(r_j * max(0, F - t_j)) == remaining
        acc_rate, acc_bytes, finish = 0.0, 0.0, order[0][1]
        for i, (lid, t) in enumerate(order):
            acc_bytes += acc_rate * (t - finish)
            finish = t
            acc_rate += rates[lid]
            nxt = order[i + 1][1] if i + 1 < len(order) else float("inf")
            if acc_bytes + acc_rate * (nxt - finish) >= remaining:
                finish += (remaining - acc_bytes) / acc_rate
                break
        return {lid: rates[lid] * max(0.0, finish - free[lid]) for lid in free}

    def _assign(self, lane: LaneState, now: float) -> Attempt | None:
        if not self.todo:
            return None
        start, end = self.todo[0]
        limit = self.output.delivered + self.config.window
        if start >= limit:
            return None  # reordering memory is full: wait for the in-order point to move
        size = self._chunk_size(lane, now)
        if size <= 0:
            return None
        stop = min(end, start + size, limit)
        self.todo = subtract(self.todo, [(start, stop)])
        return self._new_attempt(lane.id, start, stop, now)

    def _steal(self, lane: LaneState, now: float) -> Attempt | None:
        """Nothing left to hand out: duplicate the tail of the outstanding range expected to end last, if
        this idle lane would get it sooner."""
        if lane.attempts:
            return None
        best: tuple[float, Attempt, int] | None = None
        # A stolen tail is handed out like any range: never beyond the reordering window (an adopted speculative
        # range can reach past it; its tail waits until the in-order point comes near, or its lane stalls and
        # gives the bytes back to the pool).
        limit = self.output.delivered + self.config.window
        for victim_lane in self.lanes.values():
            if victim_lane is lane:
                continue
            ahead = 0  # bytes the victim's lane receives before this attempt's next byte
            for att in victim_lane.attempts:
                here = self.output.covered(att.pos)
                if att.steal_of is None and not att.stolen and here < att.end <= limit:
                    choice = self._steal_split(lane, victim_lane, att, here, ahead, now)
                    if choice is not None and (best is None or choice[0] > best[0]):
                        best = (choice[0], att, choice[1])
                ahead += att.end - att.pos
        if best is None:
            return None
        _, victim, split = best
        victim.stolen = True
        return self._new_attempt(lane.id, split, victim.end, now, steal_of=victim.id)

    def _steal_split(
        self, thief: LaneState, victim_lane: LaneState, att: Attempt, here: int, ahead: int, now: float
    ) -> tuple[float, int] | None:
        """(seconds gained, where the stolen tail starts), chosen so that both lanes end together."""
        t_rate, v_rate = self._rate(thief), self._rate(victim_lane)
        t_rtt = thief.estimate.srtt or 0.0
        quiet = now - victim_lane.last_activity
        stalled = quiet > max(2 * max(t_rtt, victim_lane.estimate.srtt or 0.0), self.config.stall_min / 2)
        if t_rate is None or v_rate is None:
            return (float("inf"), here) if stalled else None
        if stalled:
            v_rate = min(v_rate, (att.pos - att.start) / max(quiet, 1e-3) or 1.0)
        not_started = 0.0 if att.first_byte_at else max(
            0.0, att.sent_at + (victim_lane.estimate.srtt or t_rtt) - now)
        wait = ahead / v_rate + not_started  # before the victim's bytes at `here` flow
        # (split - here)/v_rate + wait == t_rtt + (end - split)/t_rate
        exact = (t_rtt - wait + here / v_rate + att.end / t_rate) / (1 / v_rate + 1 / t_rate)
        split = int(min(max(exact, here), att.end))
        gain = (wait + (att.end - here) / v_rate) - (t_rtt + (att.end - split) / t_rate)
        if att.end - split < min(self.config.steal_min, att.end - here):
            return None
        if gain <= max(0.05, 0.5 * t_rtt):
            return None  # not worth a request (and the bytes it duplicates)
        return gain, split

    def _give_up(self, att: Attempt) -> None:
        """Put the bytes of att that nobody has and no other live attempt covers back into the pool."""
        others = [(a.pos, a.end) for a in self.live_attempts() if a is not att and self.lanes[a.lane].alive]
        missing = self._missing(att.pos, att.end)
        back = subtract(missing, others)
        self.todo = sorted(self.todo + back)
        if att.steal_of is not None:
            victim = self.attempts[att.steal_of]
            victim.stolen = False

    def _missing(self, start: int, end: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        pos = start
        while pos < end:
            here = self.output.covered(pos)
            if here > pos:
                pos = here
                continue
            waiting = self.output.next_waiting(pos)
            nxt = end if waiting is None else min(end, waiting)
            out.append((pos, nxt))
            pos = nxt
        return out

    def _lane_down(self, lane: LaneState, reason: str) -> list[Command]:
        if not lane.alive:
            return []
        lane.alive = False
        lane.down_reason = reason
        cmds: list[Command] = []
        stuck = list(lane.attempts)
        for att in stuck:
            self._retire(att)
        for att in stuck:
            self._give_up(att)
            cmds.append(Cancel(att))
        cmds.append(LaneDown(lane.id, reason))
        return cmds
