"""When is a response that stopped mid-body cut and its rest asked for on another connection? (pure, no I/O)

Theory of operation. On a slow link with a drop-tail queue, a segment lost near the end of a server's burst is
recovered by the server alone: by fast retransmit, or by its retransmission timer when too few segments follow the
hole. When that retransmission is lost as well, the timer doubles (RFC 6298 §5.5) and the body waits on an otherwise
idle link. Measured on `wcdma` (docs/performance.md, "second visit"): a segment lost at 5.4 s, the tail around it
retransmitted at 9.8 s, the hole itself filled at 17.5 s, while every other answer of the page had been in for 8 s.
The client cannot make the server retransmit. It can ask for the rest elsewhere: a fresh connection and a request
with Range + If-Range (resume.py) cost a handshake and a round trip, far less than a doubled timer.

So a response whose body has started and then gone quiet is cut when:

- the quiet exceeds STALL_ROUND_TRIPS loaded round trips of this connection, and never less than the configured
  floor (4 s). A live connection with a window in flight shows bytes every loaded round trip (the queue's delay
  included); the server's first retransmission comes after its timeout, about one loaded round trip plus its
  variance, and arrives one round trip later. Three round trips of silence mean that retransmission was lost too
  and the next one waits for a doubled timer. The floor is there because the kernel's round trips run below what
  a busy slow link shows: with 2 s, answers in ordinary fast recovery behind other connections' queued bytes were
  cut on `wcdma` (9 of 15 loads, up to 17 % more bytes on the link);
- or the link is idle as well: no byte of any response arrived on any of the engine's connections, nor on the
  host's network interfaces where the host says (host_link.py: the browser's own downloads fill the same queue),
  for one unloaded round trip (the smallest known, at least an eighth of the floor), and this body has been quiet
  for a loaded round trip, an unloaded one and SENDER_MIN_RTO (at least a quarter of the floor). Then nothing else
  stands in the queue in front of this body's bytes: a link with a queue delivers without a gap, so a link quiet that
  long has an empty queue, and whatever the server sent an unloaded round trip ago has arrived. The server's
  retransmission timer, re-armed by our last acknowledgement (which reaches it half an unloaded round trip after
  the body's last bytes came), runs at least its smoothed round trip plus SENDER_MIN_RTO (Linux's floor; its
  smoothed round trip is the loaded one), and the retransmission crosses the empty queue in another half: by then
  the first retransmission would have come, so it was lost too and the next one waits for a doubled timer (a
  sender's tail-loss probe, at about two smoothed round trips, comes later still). The sooner the rest is asked
  elsewhere the better (the measured stall above sat on an idle link). Until session 40 both figures here were the
  largest round trip (two for the body, one for the link): on `wcdma` a 7 kB icon whose tail was lost while jQuery
  filled the queue then waited 2.8 s, 1.5 s of it while the link was quiet (flask-tutorial, performance.md
  session 40).
  A cut there costs little where it was not needed: the link is idle, and the rest comes on an idle connection in
  a round trip.
  Measured on `wcdma` (flask-tutorial's second visit, OFF 5.7 s, ON 15.7 s without the cut): with half the floor
  and three round trips here, ON 6.4 s; with the sooner rule 5.6 s (performance.md). Not where the kernel holds
  more than IDLE_CUT_MAX_HELD packets of the connection received beyond a hole since the body's last readable
  bytes (tcpi_rcv_ooopack): closing the connection throws them away and the rest asked elsewhere carries them
  again. Measured on `wcdma` (apache-rewrite): one such cut put 45 kB more on the link (1.18× OFF's bytes), and so
  did one by the floor's rule after 4 s on a busy link. There the server's retransmission of the hole releases them
  all at once, so with more than that held the floor's rule waits HELD_LIMIT_FACTOR times as long;

- the cut loses nothing the page has: the response is delivered as it arrives (not held: a held answer is fetched
  again whole), it is a 200 with a strong validator, so its rest can be asked by Range and proven the same
  representation (resume.py), and bytes of it have reached the page;
- it was not cut before. A server that pauses mid-body on purpose is not helped by a second cut, and a request is
  never cut into a loop; after one cut the connection's ordinary stall timeout applies.

An HTTP/2 stream has a stall of its own (`starved_streams`). The connection's stall timeout sees bytes: a server
that answers our PINGs, or sends other streams' data, keeps the connection alive while one stream gets nothing at
all, and that request then waited for its total timeout. A stream is starved when nothing of its answer (head or
data) came for the stall timeout (EngineConfig.stall_timeout), counted from the later of its own last progress and
the last progress of any stream ahead of it in the priority chain (more urgent, or as urgent and opened before it:
h2_session's `tree_parent`): a server sends a chain in order, so a stream waiting its turn behind a large answer
that is still coming is not starved, and on a slow link a page's images may wait many seconds behind its fonts.
Nor while the server has no connection window left to send in (our sink holds what came: backpressure is ours),
nor while our request body is still going out (the server's window is its own matter, and the connection's
stall covers a dead one). A starved stream is reset (RST_STREAM CANCEL), asked again elsewhere (GET/HEAD; a retry
counted), and the connection takes no new stream (GOAWAY), so the retry goes on a new connection; the others on it
finish there.

Nothing here blames the server: a body stall is the link's loss, not a pipelining fault, so the origin's pipelining
verdict stands and the requests pipelined behind the cut response go back to the queue without a retry counted
against pipelining.
"""

from __future__ import annotations

from dataclasses import dataclass

STALL_ROUND_TRIPS = 3.0
IDLE_CUT_MAX_HELD = 2  # packets held beyond a hole that a cut may throw away (a tail loss holds none)
HELD_LIMIT_FACTOR = 2.0  # with more held, the floor's rule waits this many times longer
SENDER_MIN_RTO = 0.2  # seconds a sender's retransmission timer adds at least to its smoothed round trip (Linux)


@dataclass(frozen=True)
class BodyProgress:
    """What the connection knows of its front response when it waits for bytes."""

    delivered: int  # body bytes of it the page already has
    held: bool  # kept from the page until its place is proven
    resumable: bool  # its rest can be asked by Range + If-Range and proven the same (resume.resume_headers)
    cuts: int  # times this request was cut for a body stall before


def may_cut(progress: BodyProgress | None) -> bool:
    """Could the front response be cut for a body stall? None: no response has started (a server thinking, or a
    request not answered yet, is the ordinary stall timeout's business)."""
    return (progress is not None and progress.delivered > 0 and not progress.held and progress.resumable
            and progress.cuts == 0)


def quiet_limit(floor: float, round_trips: list[float | None]) -> float:
    """How long (s) a started body may stay quiet before it is cut: STALL_ROUND_TRIPS of the largest round trip
    known (the origin's smallest, the kernel's smoothed one, the receiver's one, which include the queue), at least
    `floor`. A missing or nonsensical figure is passed over."""
    return max(floor, STALL_ROUND_TRIPS * _largest(round_trips))


def cut_now(quiet: float, link_quiet: float, floor: float, round_trips: list[float | None],
            held_beyond_hole: int | None = None) -> bool:
    """Has a body that may be cut (may_cut) been quiet for `quiet` s long enough to cut it, the engine's
    connections all quiet for `link_quiet` s, the kernel holding `held_beyond_hole` packets of it received out of
    order since its last readable bytes (None: not known, taken as none)? (module docstring)"""
    held = (held_beyond_hole or 0) > IDLE_CUT_MAX_HELD
    if quiet >= quiet_limit(floor, round_trips) * (HELD_LIMIT_FACTOR if held else 1.0):
        return True
    loaded, unloaded = _largest(round_trips), _smallest(round_trips)
    return (not held and quiet >= max(floor / 4, loaded + unloaded + SENDER_MIN_RTO)
            and link_quiet >= max(floor / 8, unloaded))


def _sensible(round_trips: list[float | None]) -> list[float]:
    return [r for r in round_trips if r is not None and 0 < r < 3600]


def _largest(round_trips: list[float | None]) -> float:
    return max(_sensible(round_trips), default=0.0)


def _smallest(round_trips: list[float | None]) -> float:
    return min(_sensible(round_trips), default=0.0)


@dataclass(frozen=True)
class StreamWait:
    """One open h2 stream as `starved_streams` sees it: `order` is its place in the priority chain (urgency, stream
    id: lower goes first), `last_progress` when its request went out or any of its answer last came (s)."""

    id: int
    order: tuple[int, int]
    last_progress: float


def starved_streams(t: float, streams: list[StreamWait], stall_timeout: float, window_open: bool) -> list[int]:
    """The ids of the streams starved at time t (module docstring): nothing for `stall_timeout`, counted from the
    later of the stream's own last progress and that of every stream ahead of it; none while the server has no
    connection window to send in (`window_open` False)."""
    if not window_open or not streams or t - min(s.last_progress for s in streams) < stall_timeout:
        return []
    starved: list[int] = []
    ahead = float("-inf")
    for s in sorted(streams, key=lambda s: s.order):
        if t - max(s.last_progress, ahead) >= stall_timeout:
            starved.append(s.id)
        ahead = max(ahead, s.last_progress)
    return starved
