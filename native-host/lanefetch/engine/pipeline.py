"""Sans-I/O state machine of one HTTP/1.1 connection that may pipeline.

It decides what may be sent now, matches responses to requests in order, and when the connection
ends early says which requests were not answered (to retry) and whether the server misbehaved
(so the origin can be demoted). The asyncio connection only moves bytes and time in and out.

Order is the only thing that ties a pipelined response to its request, so a response is believed
only once its place is proven (see the integrity notes in docs/architecture.md):

- A response is *in step at once* when its head arrives with its request alone on the connection and
  every earlier response already proven: exactly what a browser without pipelining relies on.
- So is one that *proves its place*: a 206 of exactly its own range (the lanes' pieces), or, for a request that
  went out with nothing in flight before it, a 200 whose media type no other unproven request of the connection
  could take (a stylesheet with a font behind it: response_check.proves_by_exclusion). What was sent behind the
  latter stays at risk: an extra answer written after it would come there.
- Any other response is *held*: ResponseStarted says so, and the shell keeps it from the sink and the
  cache. Held responses are proven together at a *sync point*: the connection is idle (everything
  answered) and stays quiet for a moment (`quiet()`, the shell's timer), or the server closes it with
  nothing outstanding (a head that announces the connection's last answer is a word, not the close). A
  shifted pipeline cannot pass one: the response it still owes arrives as bytes nobody asked for, or a
  request stays unanswered.
- A sign of desynchronisation (bytes with nothing outstanding, a head that cannot answer its request
  (response_check.py), framing that breaks, a connection that ends or stalls with requests unanswered)
  ends the connection with the held responses as `suspect`: they are fetched again, never delivered.
"""

from __future__ import annotations

import enum
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .response_check import Expectation, answers_alike, implausible, proves_by_exclusion, proves_itself
from .response_parser import (
    BodyData,
    Framing,
    HeadReceived,
    Informational,
    MessageEnd,
    ParseError,
    ResponseHead,
    ResponseParser,
)

T = TypeVar("T")

PIPELINABLE_METHODS = frozenset({"GET", "HEAD"})


class Misbehaviour(enum.Enum):
    """Why pipelining with this server is not (or no longer) trusted."""

    CLOSED_WITH_UNANSWERED = "closed the connection with pipelined requests unanswered"
    FRAMING_ERROR = "sent a response that could not be framed"
    CONNECTION_CLOSE = "answered Connection: close with pipelined requests still unanswered"
    HTTP10 = "answered with HTTP/1.0"
    STALL = "stalled with pipelined requests outstanding"
    DESYNC = "sent a response out of step with the requests"

# Bytes a server may send between responses without meaning anything (RFC 9112 §2.2 robustness).
_BLANK = frozenset(b"\r\n")


@dataclass
class InFlight(Generic[T]):
    token: T
    method: str
    position: int  # 1-based index among requests sent on this connection
    depth: int  # requests in flight, this one included, when it was sent
    parser: ResponseParser
    expect: Expectation
    held: bool = False  # its response's place is not proven yet (decided when its head arrives)


@dataclass(frozen=True)
class ResponseStarted(Generic[T]):
    token: T
    head: ResponseHead
    framing: Framing
    content_length: int | None
    held: bool = False  # keep it from the sink until ResponsesVerified names it (or ConnectionEnded drops it)


@dataclass(frozen=True)
class ResponseBody(Generic[T]):
    token: T
    data: bytes


@dataclass(frozen=True)
class ResponseComplete(Generic[T]):
    token: T
    head: ResponseHead
    trailers: list[tuple[str, str]]
    keep_alive: bool
    pipelined: bool  # it was sent while an earlier request was still unanswered
    position: int
    framing: Framing | None
    wire_bytes: int
    held: bool = False  # complete on the wire, its place not yet proven
    expect: Expectation | None = None  # what its request let us expect (a held answer's, for proofs by exclusion)


@dataclass(frozen=True)
class ResponsesVerified(Generic[T]):
    """These held, complete responses are proven in step: deliver them."""

    responses: list[ResponseComplete[T]]


@dataclass(frozen=True)
class ConnectionEnded(Generic[T]):
    """No more responses on this connection. `retry` were not (completely) answered and may be re-sent;
    `failed` were not answered and must not be re-sent (not idempotent)."""

    reason: str
    misbehaviour: Misbehaviour | None
    retry: list[T] = field(default_factory=list)
    failed: list[T] = field(default_factory=list)
    partial: list[T] = field(default_factory=list)  # subset of retry whose response had begun
    suspect: list[T] = field(default_factory=list)  # held complete responses never proven: fetch them again


Event = ResponseStarted[T] | ResponseBody[T] | ResponseComplete[T] | ResponsesVerified[T] | ConnectionEnded[T]


class PipelineConnection(Generic[T]):
    def __init__(self) -> None:
        self.in_flight: deque[InFlight[T]] = deque()
        self.requests_sent = 0
        self.responses_completed = 0
        self.closing = False  # no further request may be written
        self.ended = False
        self.request_cap: int | None = None  # total requests this connection may carry (Keep-Alive max)
        self.unverified: list[ResponseComplete[T]] = []  # complete, held, waiting for a sync point
        self._ranges_asked: Counter[tuple[int, int | None]] = Counter()  # byte ranges requested on this connection
        self._risky_until = 0  # requests up to this position were sent behind an answer proven by exclusion
        # the status each position was answered with, and the URL it asked for (_sent_behind_others's)
        self._statuses: dict[int, tuple[int, str]] = {}
        self._said_last = False  # everything is answered and the last answer announced the close (reset)

    # -- sending ---------------------------------------------------------------------------------------

    def can_send(self, method: str, allowed_depth: int) -> bool:
        """May a request with this method be written now, given the origin's allowed pipeline depth?"""
        if self.closing or self.ended:
            return False
        if self.request_cap is not None and self.requests_sent >= self.request_cap:
            return False
        if method not in PIPELINABLE_METHODS:
            # Anything else goes alone, and never while an earlier answer is unproven: were the connection out
            # of step, its answer would be held and then could not be fetched again.
            return not self.in_flight and not self.unverified
        if not self.in_flight:
            return True
        if any(f.method not in PIPELINABLE_METHODS for f in self.in_flight):
            return False
        if any(f.parser.head is not None and not f.parser.keep_alive() for f in self.in_flight):
            # That response is the connection's last: its body ends with the connection, or its head said so
            # (Connection: close, HTTP/1.0 without keep-alive): RFC 9112 §9.6, no request after it.
            return False
        return len(self.in_flight) < allowed_depth

    def sent(self, token: T, method: str, expect: Expectation | None = None) -> InFlight[T]:
        """Record that the request was written; returns its position and depth."""
        assert not self.closing and not self.ended
        method = method.upper()
        self.requests_sent += 1
        if expect is not None and expect.byte_range is not None:
            self._ranges_asked[expect.byte_range] += 1
        f = InFlight(token, method, self.requests_sent, len(self.in_flight) + 1, ResponseParser(method),
                     expect or Expectation(method))
        self.in_flight.append(f)
        return f

    def stop_sending(self) -> None:
        """Write no more requests (e.g. we decided to close this connection once idle)."""
        self.closing = True

    # -- receiving ---------------------------------------------------------------------------------------

    def receive(self, data: bytes) -> list[Event[T]]:
        if self.ended:
            return []
        events: list[Event[T]] = []
        while data:
            if not self.in_flight:
                if not set(data) <= _BLANK:
                    return [*events, self._end("received bytes nobody asked for", Misbehaviour.DESYNC)]
                return events
            front = self.in_flight[0]
            try:
                parsed = front.parser.feed(data)
            except ParseError as e:
                return [*events, self._end(f"framing error: {e}", Misbehaviour.FRAMING_ERROR)]
            data = b""
            for ev in parsed:
                if isinstance(ev, Informational):
                    continue
                if isinstance(ev, HeadReceived):
                    if ev.head.status == 408 and front.position > 1 and front.method in PIPELINABLE_METHODS:
                        # A 408 on a reused connection: the server timed it out as our request crossed (some
                        # servers write one before closing an idle connection). Chromium sends the request again on
                        # a fresh connection and the page never sees that 408 (a reused socket's 408 is retried,
                        # HttpNetworkTransaction): so here. Not a fault of pipelining: nothing is blamed.
                        return [*events, self._end("408 on a reused connection: asked again", None)]
                    # The proofs are looked for only where the answer is at risk: most heads come alone.
                    at_risk = self._at_risk(front) or self._sent_behind_others(front, ev.head)
                    excluded = at_risk and self._may_exclude(front) and proves_by_exclusion(
                        ev.head, front.expect, self._unproven_others())
                    front.held = at_risk and not (
                        (proves_itself(ev.head, front.expect) and self._range_unique(front, ev.head)) or excluded)
                    if excluded and len(self.in_flight) > 1:
                        # What was sent behind it waits for a sync point: an extra answer written after this one
                        # would land there unseen (the exclusion covered only this answer's place).
                        self._risky_until = self.requests_sent
                    if front.held and (why := implausible(ev.head, front.expect)) is not None:
                        return [*events, self._end(f"out of step: {why}", Misbehaviour.DESYNC)]
                    events.append(ResponseStarted(front.token, ev.head, ev.framing, ev.content_length, front.held))
                    self._learn_from_head(ev.head)
                    self._statuses[front.position] = (ev.head.status, front.expect.resource)
                    # keep only what a request in flight was sent behind (_sent_behind_others)
                    low = min(f.position - f.depth + 1 for f in self.in_flight)
                    for old in [p for p in self._statuses if p < low]:
                        del self._statuses[old]
                elif isinstance(ev, BodyData):
                    events.append(ResponseBody(front.token, ev.data))
                elif isinstance(ev, MessageEnd):
                    completed = self._complete(front, ev.trailers)
                    events.extend(completed)
                    if isinstance(completed[-1], ConnectionEnded):
                        return events
                    data = front.parser.leftover()
        return events

    def receive_eof(self) -> list[Event[T]]:
        if self.ended:
            return []
        if not self.in_flight:
            # Closed with everything answered and nothing more: whatever was held was in step.
            verified = self._verify()
            self.ended = True
            return [*verified, ConnectionEnded("server closed the idle connection", None)]
        front = self.in_flight[0]
        try:
            parsed = front.parser.feed_eof()
        except ParseError as e:
            pipelined = self._pipelined_in_flight()
            return [self._end(str(e), Misbehaviour.CLOSED_WITH_UNANSWERED if pipelined else None)]
        events: list[Event[T]] = []
        for ev in parsed:
            if isinstance(ev, MessageEnd):
                events.extend(self._complete(front, ev.trailers))
        if not events or not isinstance(events[-1], ConnectionEnded):
            events.append(self._end("server closed the connection", None))
        return events

    def quiet(self) -> list[Event[T]]:
        """The shell's sync timer: the connection has been idle (nothing outstanding) and silent for a while,
        so no response was owed beyond the ones received: those held are in step."""
        if self.ended or self.in_flight:
            return []
        verified = self._verify()
        if self.closing and verified:
            # Nothing more is written on it (its server announced its last answer, or we stopped): done with it.
            self.ended = True
            return [*verified, ConnectionEnded("the connection's last answers proven in step", None)]
        return verified

    def stalled(self) -> ConnectionEnded[T]:
        """No byte arrived for too long while requests were outstanding."""
        pipelined = len(self.in_flight) > 1 or self._pipelined_in_flight()
        return self._end("no data from the server in time", Misbehaviour.STALL if pipelined else None)

    def body_stalled(self) -> ConnectionEnded[T]:
        """The front response stopped mid-body and the shell cuts it (body_stall.py): the link lost a segment, the
        server did not lose its step, so nothing is blamed; what is in flight goes back to be asked again."""
        return self._end("the response stopped mid-body (a lost segment waiting for the server's retransmission "
                         "timer): its rest is asked on another connection", None)

    def reset(self, reason: str) -> list[Event[T]]:
        """The transport broke (RST, TLS alert): like a close, a fault of pipelining if it cut a pipeline."""
        if self._said_last and not self.in_flight:
            # Everything answered, the last answer announced (Connection: close), then a reset where a close was
            # due (nginx past its keep-alive limit): its close all the same, with nothing owed; held, its answers
            # were believed on the announcement until 2026-12-02 and must not be lost to it now.
            verified = self._verify()
            self.ended = True
            return [*verified, ConnectionEnded(reason, None)]
        return [self._end(reason, Misbehaviour.CLOSED_WITH_UNANSWERED if self._pipelined_in_flight() else None)]

    def abort(self, reason: str) -> ConnectionEnded[T]:
        """We end the connection ourselves (cancel, shutdown): nothing to blame the server for."""
        return self._end(reason, None)

    def at_request_cap(self) -> bool:
        """Sent all the requests this connection may carry and got every answer: it has nothing left to do."""
        return self.request_cap is not None and self.requests_sent >= self.request_cap and not self.in_flight

    def _pipelined_in_flight(self) -> bool:
        return any(f.depth > 1 for f in self.in_flight)

    def _at_risk(self, front: InFlight[T]) -> bool:
        """Could the response now arriving belong to another request? Not when it is the only one out and every
        earlier answer is proven: then it is the connection's next response, as for a browser; unless it was sent
        behind an answer proven by exclusion, whose extra copy would come here (or behind any other answer:
        _sent_behind_others)."""
        return len(self.in_flight) > 1 or bool(self.unverified) or front.position <= self._risky_until

    def _sent_behind_others(self, front: InFlight[T], head: ResponseHead) -> bool:
        """Was front sent behind other answers (depth > 1)? Then its head may be an extra answer of theirs, even where
        their heads had come alone (in step) and front is alone now: a stylesheet's duplicate 200 once went to the
        image pipelined behind its body, unchecked. One exception: a range answered 200 behind answers that were all
        206s to ranges of its own URL (a lane's next range, the file changed: If-Range failed) is in step as before;
        held, the lane, which always has its next range queued, would never see it. A 206 is never a 200's copy, and
        a 200 written after one (a range handler that falls through) is that URL's whole body: another URL's piece
        behind it (a flight's pieces of several bodies) would take it as its own."""
        if front.depth <= 1:
            return False
        behind = range(front.position - front.depth + 1, front.position)
        lane_restart = (front.expect.byte_range is not None and head.status == 200 and front.expect.resource != ""
                        and all(self._statuses.get(p) == (206, front.expect.resource) for p in behind))
        return not lane_restart

    def _may_exclude(self, front: InFlight[T]) -> bool:
        """May front's answer prove its place by exclusion? Only where its request went out with nothing in flight
        before it (depth 1): an answer owed to an earlier request (skipped, or answered twice) could otherwise come
        typed like front's own, and only holding until the connection drains would show it."""
        return front.depth == 1

    def _unproven_others(self) -> list[Expectation | None]:
        """What the requests other than the front one, not proven in step, let us expect: those behind it and
        those answered but held (None: not known, which proves nothing by exclusion)."""
        return [f.expect for f in list(self.in_flight)[1:]] + [r.expect for r in self.unverified]

    def _range_unique(self, front: InFlight[T], head: ResponseHead) -> bool:
        """Could this 206 (proving itself for front) answer no other range asked on this connection? A flight
        pipelines pieces of several bodies on one connection (prefetch/flight_pieces.py): two images' first pieces
        asking the same bytes, or asking bytes=0-43287 and bytes=0-43286 of bodies that end inside both (each answered
        `0-(total-1)/total`, response_check.answers_alike); shifted by one (or answered twice), one's answer would
        prove itself in the other's place."""
        mine = front.expect.byte_range
        if mine is None or self._ranges_asked[mine] != 1:
            return False
        return not any(r != mine and answers_alike(head, front.expect, r) for r in self._ranges_asked)

    def _verify(self) -> list[Event[T]]:
        if not self.unverified:
            return []
        proven, self.unverified = self.unverified, []
        return [ResponsesVerified(proven)]

    # -- internals ---------------------------------------------------------------------------------------

    def _learn_from_head(self, head: ResponseHead) -> None:
        # Keep-Alive: max=N says how many more requests this connection will carry after this one.
        for value in head.get_all("keep-alive"):
            for part in value.split(","):
                name, _, num = part.strip().partition("=")
                if name.strip().lower() == "max" and num.strip().isascii() and num.strip().isdigit():
                    cap = self.responses_completed + 1 + int(num.strip())
                    self.request_cap = cap if self.request_cap is None else min(self.request_cap, cap)

    def _complete(self, front: InFlight[T], trailers: list[tuple[str, str]]) -> list[Event[T]]:
        self.in_flight.popleft()
        self.responses_completed += 1
        head = front.parser.head
        assert head is not None
        keep_alive = front.parser.keep_alive()
        done: ResponseComplete[T] = ResponseComplete(
            front.token, head, trailers, keep_alive, front.depth > 1, front.position,
            front.parser.framing, front.parser.consumed, front.held, front.expect,
        )
        if front.held:
            self.unverified.append(done)
        if keep_alive:
            return [done]
        self.closing = True
        if not self.in_flight:
            if not set(front.parser.leftover()) <= _BLANK:
                return [done, self._end("bytes followed the connection's last response", Misbehaviour.DESYNC)]
            if self.unverified and front.parser.framing is not Framing.CLOSE:
                # Its head says it is the last (Connection: close, HTTP/1.0 without keep-alive): a word, not the
                # close. Were it an earlier answer written twice, the answer still owed follows in the next segment,
                # so the held answers wait for the close or the quiet as on any idle connection (receive_eof, quiet).
                self._said_last = True
                return [done]
            # The server's last word, with nothing owed after it: what it answered before was in step.
            verified = self._verify()
            self.ended = True
            return [done, *verified, ConnectionEnded("server ended the connection after the response", None)]
        if head.http_version == "1.0":
            kind = Misbehaviour.HTTP10
        elif "close" in head.connection_tokens() and front.parser.framing is not Framing.CLOSE:
            kind = Misbehaviour.CONNECTION_CLOSE  # announced: a keep-alive limit, learned by the origin
        else:
            kind = Misbehaviour.CLOSED_WITH_UNANSWERED  # a close-delimited body cut the pipeline
        return [done, self._end("server closed with requests unanswered", kind)]

    def _end(self, reason: str, misbehaviour: Misbehaviour | None) -> ConnectionEnded[T]:
        self.ended = True
        self.closing = True
        retry: list[T] = []
        failed: list[T] = []
        partial: list[T] = []
        for f in self.in_flight:
            if f.method in PIPELINABLE_METHODS:
                retry.append(f.token)
                if f.parser.head is not None and not f.held:
                    partial.append(f.token)  # a held one's head never reached the sink: it starts over
            else:
                failed.append(f.token)
        self.in_flight.clear()
        # Held answers never proven: whatever ended the connection, they are fetched again rather than believed.
        suspect = [r.token for r in self.unverified]
        self.unverified = []
        return ConnectionEnded(reason, misbehaviour, retry, failed, partial, suspect)
