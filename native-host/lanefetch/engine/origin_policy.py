"""What this session has learned about pipelining to each origin (pure, no I/O).

Like Firefox's old pipelining heuristics and the seeds' IE plug-in, with a bolder start: an origin
starts unproven at a pipeline of START_DEPTH per connection; an HTTP/1.1 keep-alive response with sound
framing proves it (PROBING, same depth); every correctly answered pipelined response doubles the depth up
to the maximum; misbehaviour demotes the origin to no pipelining for the rest of the session.

Why not one request at a time until proven, as before: on a 600 ms link that ramp costs a round trip per
step, and the browser's six connections then carry the first wave as fast as the helper. Starting at a
few is safe since pipelined answers are believed only once their place is proven (pipeline.py): a server
that cannot pipeline costs those requests a retry, alone, and is demoted; it never gets a page a wrong
answer. (A server that closes after one answer, or speaks HTTP/1.0, is found the same way.)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .pipeline import Misbehaviour
from .response_parser import Framing, ResponseHead

#: Requests an unproven origin's connection may have in flight (capped by the configured maximum).
START_DEPTH = 4


class PipelineState(enum.Enum):
    UNKNOWN = "unknown"  # nothing learned yet: a pipeline of START_DEPTH, its answers held until proven
    PROBING = "probing"  # keep-alive proven: the same depth until a pipelined answer comes back right
    GREEN = "green"  # pipelined responses came back right: depth grows to the maximum
    RED = "red"  # misbehaved: never pipeline again this session


@dataclass
class OriginPolicy:
    max_depth: int
    state: PipelineState = PipelineState.UNKNOWN
    depth: int = 1
    request_limit: int | None = None  # learned per-connection request limit (server keep-alive cap)
    demotions: list[str] = field(default_factory=list)
    protocol: str | None = None  # what its TLS handshakes chose: "h2" or "http/1.1"; None before the first one
    protocol_seen: bool = False  # chosen by a handshake of this session (not only remembered: origin_memory.py)
    # The link's bandwidth-delay product to it (bytes, inflight_budget.link_bdp), the largest seen: whether a flight's
    # work pays for being spread over the connections at once (pool_plan.balances).
    link_bdp: int | None = None
    # The smallest round trip (s) this session's connections to it showed in their TCP handshakes (rtt_sample.py);
    # queueing only ever adds to one.
    round_trip: float | None = None
    # What an earlier session measured, (seconds, when: epoch s), while this session has measured none: told to the
    # extension on a preconnect so that its speed probe decides at once (origin_memory.py).
    remembered_round_trip: tuple[float, float] | None = None
    # When the verdict (state, depth) it started from was learned by an earlier session (epoch s, origin_memory.py);
    # None once this session judged the origin itself. A verdict only carried on keeps its age, so it expires: a
    # demoted origin is never pipelined to, so never judged again, and would otherwise stay demoted for good.
    learned_at: float | None = None

    def observe_round_trip(self, seconds: float) -> None:
        """A connection's handshake took this one round trip."""
        if seconds > 0 and (self.round_trip is None or seconds < self.round_trip):  # 0: no handshake's
            self.round_trip = seconds

    def learn_protocol(self, alpn: str | None) -> None:
        """The server chose this in the TLS handshake (None: no ALPN, HTTP/1.1)."""
        self.protocol = "h2" if alpn == "h2" else "http/1.1"
        self.protocol_seen = True
        if self.state is PipelineState.UNKNOWN:
            self.learned_at = None  # no verdict to age (an h2 origin's never has one): what it holds was learned now

    def allowed_depth(self) -> int:
        if self.max_depth <= 1 or self.state is PipelineState.RED:
            return 1
        if self.state is PipelineState.UNKNOWN:
            return min(START_DEPTH, self.max_depth)
        return min(self.depth, self.max_depth)

    def on_response(self, head: ResponseHead, framing: Framing | None, keep_alive: bool, pipelined: bool) -> None:
        if head.http_version == "1.0":
            self.demote(Misbehaviour.HTTP10)
            return
        if self.state is PipelineState.RED or not keep_alive:
            return
        if framing is Framing.CLOSE:
            return  # not sound framing for a pipeline
        if self.state is PipelineState.UNKNOWN:
            self.state = PipelineState.PROBING
            self.depth = min(START_DEPTH, self.max_depth)
            self.learned_at = None
        elif pipelined:
            self.state = PipelineState.GREEN
            self.depth = min(self.max_depth, max(2, self.depth) * 2)
            self.learned_at = None
        elif self.state is PipelineState.PROBING:
            self.learned_at = None  # keep-alive proven again (GREEN is proven only by a pipelined answer)

    def unlock_pipelining(self) -> None:
        """An HTTP/1.1 answer is in hand before it completed (the lanes' first range): probe as on_response
        would once it completes."""
        if self.state is PipelineState.UNKNOWN and self.max_depth > 1:
            self.state = PipelineState.PROBING
            self.depth = min(START_DEPTH, self.max_depth)
            self.learned_at = None

    def on_connection_ended(self, misbehaviour: Misbehaviour | None, responses_on_connection: int) -> None:
        if misbehaviour is None:
            return
        if misbehaviour is Misbehaviour.CONNECTION_CLOSE and responses_on_connection > 1:
            # A server keep-alive limit (nginx keepalive_requests, Apache MaxKeepAliveRequests): the
            # unanswered requests are retried elsewhere; send no more than that per connection from now on.
            self.learn_request_limit(responses_on_connection)
            return
        self.demote(misbehaviour)

    def learn_request_limit(self, limit: int) -> None:
        """The server said how many requests a connection may carry (Keep-Alive: max): remember it for new
        connections, which would otherwise pipeline past it before their first response."""
        if limit >= 1:
            self.request_limit = limit if self.request_limit is None else min(self.request_limit, limit)

    def demote(self, why: Misbehaviour) -> None:
        if self.state is not PipelineState.RED:
            self.demotions.append(why.value)
        self.state = PipelineState.RED
        self.depth = 1
        self.learned_at = None
