"""The pool's decisions, pure (like httpcore's `_assign_requests_to_connections`): how deep a connection may
pipeline, whether it is tied up by a bulk body, whether the origin has asked for enough answers already, and
how many connections the waiting work calls for. pool.py feeds them numbers and acts on the answers.

- **Fair share.** A connection takes no more than its share of what is outstanding (queued + in flight, over
  the connections): otherwise the first connection to wake would pipeline everything and the last answers of a
  batch would all wait behind one connection while others sit idle.
- **Bulk never blocks small.** A connection receiving a body with more than BULK_BYTES still to come takes
  nothing more (anything pipelined behind it would wait for all of that) and does not count against the
  connection limit: the work gets a connection of its own.
- **Budget.** With the in-flight budget on, a connection that already has answers out takes no more once the
  origin's unanswered requests reach the budget (inflight_budget.py); an idle connection always may.
- **Open for work.** Connections serving small work are opened up to the per-origin limit, never more than
  there are requests to serve.
- **Render-blocking apart.** A pipelined answer reaches the page only when its connection has drained and gone
  quiet (pipeline.py), so a stylesheet or script pipelined with images waits for the last image on its
  connection, and the page's next wave (what the stylesheet imports, what the script loads) with it. Render-blocking
  requests are therefore pipelined only with each other, and only when no open connection of the origin is idle
  (alone, a stylesheet's answer is in step at once and streams to the page), and never behind an answer known to
  be long: one in flight for a round trip or more (`long_answer`: a short one would be in by then; with no round
  trip known, any), or one whose size, learned from the page's earlier loads, is more than a fresh connection's
  first two round trips carry (`expected_long`: a prefetch flight's). Behind jQuery (85 kB, a connection still in
  slow start) a 1 kB stylesheet came 1.2 s after its own round trip on `sat` (600 ms; `real-pages`,
  django-tutorial07); never pipelining render-blocking work
  instead cost the page's next wave of stylesheets a round trip waiting for free connections (0.94x -> 0.90x).
  Other work is not pipelined at all while render-blocking work of the origin is queued or in flight (the page is
  still laying out): the browser then keeps only one or two images in flight and asks for the next when one is
  answered, and a pipelined image is held until its connection drains, so it keeps the browser's next images back
  (cmake-interaction on `sat`: a 1 kB logo pipelined with a 62 kB image was answered 1.4 s after its last byte and
  the page's other images were asked for 1.1 s later than in the browser alone). Afterwards images pipeline as
  before; pages of images alone never see the difference.
- **Warmest first.** New work goes to the idle connection whose server is likely to send it fastest: the one with
  the largest congestion window, estimated from what the connection carried (`Warmth`). A connection's first
  flight is the server's initial window (IW10); slow start grows the window by what it delivers, but only while
  the answer fills it (Linux grows it only when cwnd-limited: small answers leave it where it is), and the server
  halves it for every retransmission timeout the connection sat idle (RFC 2861, Linux
  `tcp_slow_start_after_idle`). On `sat` an image handed to a connection that had carried only small stylesheets
  took 1.4 s first -> last byte (42 kB: slow start from IW10), where the browser reuses the connection that has
  just carried a 62 kB image (0.25 s for the same image; cmake-interaction). While a connection is idle, a busy
  one takes nothing either (its answer would be held until its connection drains; alone it is in step at once):
  work is pipelined only when no connection of the origin is idle. One exception, for images and other work that
  does not block rendering, once the page has laid out: a busy connection about to drain (one answer in flight,
  the rest of it within the window, so already on its way) and at least twice as warm as the warmest idle one gets
  the request when it drains, and the idle ones leave it. The wait is up to a round trip to its first byte; a
  request that needs two round trips of slow start on the cold connection needs one on the warm one
  (cmake-interaction on `sat`: with every warm connection busy, a 33 kB image went to a cold one, 1.07 s first ->
  last byte; on a warm one 0.37-0.48 s). A connection whose answers are all in but held for the pipelining check's
  quiet (pipeline.py: 30 ms) is settling, idle within that quiet: one a quarter warmer than the warmest idle one is
  waited for by any work that does not block rendering, the page laid out or not (`may_wait_for_settling`):
  django-tutorial07's 72 kB image took 1.21 s first -> last byte on a connection that had carried 11 kB, while
  underscore.js's connection (20 kB) settled for 25 ms more; taken by that one, 0.64 s. The draining rule applied
  to every request cost django-tutorial07 0.5 s (ON median 5.13 -> 5.62 s on `sat`): a small stylesheet or
  script needs one round trip on any connection, and waiting for a warm one only delays it and the page's next
  wave. With every connection busy, the request is
  pipelined on the warmest that may take it (`pipelining_taker`), not on whichever asks first: apache-rewrite's
  first visit on `sat` had its seventh image of unknown size (59 kB) pipelined behind a 53 kB one, on the
  connection that had carried a 287 B icon in one load of four (last byte 3.82 s after the document was asked;
  two loads of three in an earlier run) and on the document's own, warmed by it, in the others (3.47 s). The
  choice is a function of the connections' states only (ties: the lowest id; to pipeline, the asking connection
  among equals, as before the rule), never of which connection's task happens to wake first among unequal ones.
- **A flight's small answers together, its largest first.** A prefetch flight knows its requests' sizes from the
  page's earlier loads, as they came over the link (FetchRequest.link_bytes: a compressed stylesheet's gzip bytes,
  a fifth of its CSS), and sends them all at once. Answers that together fit in a connection's first flight from
  the server (ten segments, each answer its own: `segments`) share it, whatever their class and although other
  connections are idle
  (`fits_first_flight`: they all come in the same round trip, so holding the first until the last is in costs
  nothing): the fullest busy connection they fit takes them, whichever connection asks first (`packing_taker`),
  and a flight's work that does not block rendering waits largest first (`queue_order`). Each of
  apache-rewrite's small stylesheets and scripts took a connection of its own and its four large images went a
  round trip later; now the small ones share one and the large ones start at once on the others. Counted decoded
  (22.9 kB for manual.css's 5.3 kB on the link) they still took four connections, and its images waited a round
  trip for three of them (second visit on `sat`, medians of 5 loads: 2.51 s counted decoded, 2.14 s on the link).
- **A flight's images by bytes.** A flight's work of known size that does not block rendering (its images and
  their pieces, prefetch/flight_pieces.py) goes, largest first, to the connection that carries it soonest: in the
  fewest round trips of slow start from its window, then the one with the fewest bytes still to come, pipelined at
  once (`balanced_taker`: with windows alike, the longest-processing-time rule), or, where that connection carries
  render-blocking work or the browser's own requests, as soon as those are in (the pool keeps it in that
  connection's reserve and goes on with the queue for the others; such a connection counts what its first flight
  cost the flight's work: `first_flight_cost`), or at once where all it carries is in step, has told its size and
  comes with the request in a round trip of its window (`comes_within_window`: late in a load, the document's
  connection); the rules for the browser's own images (not pipelined while the page lays out, warmest idle
  connection first) would have it wait for a free connection, a round trip or more.
- **Ahead of a page.** A page's preconnect opens every connection the origin may have serving it, not one: the
  browser's first requests go out on its warm document connection at once and its others pay a handshake in
  parallel, so one warm helper connection and five cold ones would lose a round trip to it on a slow link.
- **One for HTTP/2.** An origin that speaks h2 gets one connection (its streams multiplex; more would only
  split the congestion window, as browsers also hold). Over TLS with HTTP/2 offered, while the origin's protocol
  is not known yet, one connection too: its handshake says, and an HTTP/1.1 origin then gets the others.
- **A cap over all origins** (`room_under_cap`). Each origin has its limit, and the helper's open connections
  have one in all over every engine of the process (EngineConfig.max_connections, 256; one
  connection_cap.ConnectionCap shared by them): a page of many origins, or many tabs, otherwise opened
  connections until the process ran out of file descriptors and every connect failed. Under the cap nothing
  changes (one comparison of a count). At it, an idle connection of another origin is closed to make room, the
  least recently used first: it carries nothing and its origin has nothing queued, so closing it loses nothing but a
  handshake the origin may need again. A connection busy with an answer, still connecting, or whose origin has work
  queued is never closed for room (the last rule is also what keeps two origins at the cap from closing each other's
  fresh connections before they take their work: a connect, an eviction, a reconnect, over and over). With none
  idle the work waits, and never fails for the cap: the origin joins the cap's line and gets a connection in turn as
  connections close or go idle anywhere (cap_turns.py: first come first served, one per turn); one with
  connections serves its queue on them meanwhile.
- **A TCP handshake, TLS when needed** (`preconnect_plan`, the preconnect's `handshake: "tcp"`). Chromium leaves
  the requests of an origin it reaches over HTTP/2 to its own connection (the extension's browser-multiplexed
  rule), so the helper's TLS handshake and h2 preface to such an origin carry nothing: on real pages over h2 they
  were all ON added to the uplink (1.3 kB of 14 kB on flask-tutorial; ClientHello, Finished, preface and the ACKs
  of the server's certificate). While the page's protocol is not known, the preconnect opens one TCP connection
  (its connect time is still the origin's round trip, reported at once) and holds its TLS handshake until work
  comes or a `full` preconnect says the browser got HTTP/1.1 there; an origin remembered as HTTP/1.1-only gets
  every connection at once, as before. So does a plain-http origin: there is no TLS handshake to hold, and the
  browser never reaches it over h2 (cleartext h2 is not spoken by browsers), so all its requests of an enabled site
  come to the helper. Opening one connection there (a round-trip probe ahead of any page) cost the second visit
  of a learned page a round trip: its flight starts with the navigation and waited for the connections it needed
  (flask-tutorial on `sat`, Apache: 2.6 s -> 3.2 s, bisected to the commit that made it one). So only a probe to
  a plain-http origin that no earlier load of the site used is one connection: the probe names the site over http,
  and a site served over https only otherwise got six connections to its port 80 that nothing ever used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

Handshake = Literal["full", "tcp"]

# A response with more than this still to come is bulk: at 5 Mbit/s, 256 KB is 0.4 s a small request
# would wait behind it (config.separate_bulk).
BULK_BYTES = 256 * 1024


def allowed_depth(policy_depth: int, config_depth: int, outstanding: int | None, connections: int) -> int:
    """Requests one connection may have in flight now: the origin's learned depth, capped by the configured one
    and by the connection's fair share of the outstanding work (None: no share, for answers that come in one
    flight, fits_first_flight); at least 1."""
    if outstanding is None:
        return max(1, min(policy_depth, config_depth))
    share = math.ceil(outstanding / max(1, connections))
    return max(1, min(policy_depth, config_depth, share))


def carries_bulk(bodies_remaining: Iterable[int | None], separate_bulk: bool) -> bool:
    """Is the connection receiving a body with more than BULK_BYTES still to come (None: not a length body)?"""
    return separate_bulk and any((r or 0) > BULK_BYTES for r in bodies_remaining)


def over_budget(in_flight_here: int, in_flight_origin: int, budget: int | None) -> bool:
    """Must a connection with answers out wait because the origin asked for enough already? (None: no budget)"""
    return in_flight_here > 0 and budget is not None and in_flight_origin >= budget


RENDER_BLOCKING = 0  # the first priority class of request.priority_key: document, stylesheet, script, font


def long_answer(sent: Iterable[float | None], t: float, rtt: float | None) -> bool:
    """Is an answer in flight on a connection known to be long at time t: its request went out a round trip (rtt,
    seconds) ago or more and it is not in (a short one would be), or, with no round trip known, any at all? None in
    `sent`: taken, not written yet."""
    times = list(sent)
    if not times:
        return False
    return rtt is None or any(s is not None and t - s >= rtt for s in times)


def may_join(carried: set[int], incoming: int, idle_elsewhere: int = 0, long_here: bool = False,
             laying_out: bool = False, font: bool = False, after_leader: bool = False) -> bool:
    """May a request of priority class `incoming` be pipelined on a connection whose in-flight or held answers are
    of these classes, while `idle_elsewhere` other open connections of the origin carry nothing (`long_here`: an
    answer in flight here is known to be long; `laying_out`: render-blocking work of the origin is queued or in
    flight)? Render-blocking work and other work never share a connection's pipeline, and render-blocking work is
    pipelined at all only when no connection is idle, and never behind a long answer: alone on a connection its
    answer is in step at once and streams to the page, pipelined it is held until its connection drains. Other
    work is not pipelined while the page lays out (the browser waits for its few images in flight). Fonts are
    pipelined with fonts only, and never behind a font whose size is not known (`font`: joining would put a font and
    other work in one pipeline, mixes_fonts, or a font behind such a font, follows_unknown_font): fonts are tens of
    kB, and an answer pipelined with one waits for it whole, ahead of it (held until the connection drains) or
    behind it. On `wcdma` rustdoc's first stylesheets were pipelined with its fonts (52–133 kB at 384 kbit/s) and
    reached the page 10–12 s after their last byte (real-pages rust-std: 0.79x); never pipelining fonts at all made
    four of its six fonts wait a round trip for a free connection on `sat` (1.07x -> 0.93x). Two exceptions, one
    rule (`behind_lone_leader`): a font (`mixes_fonts`) or an image (`after_leader`) behind a lone stylesheet or
    script, whose answer proves its place by exclusion and streams to the page as it would alone."""
    if not carried:
        return True
    if font:
        return False
    if after_leader and incoming != RENDER_BLOCKING:
        return True
    if incoming == RENDER_BLOCKING and (idle_elsewhere > 0 or long_here):
        return False
    if incoming != RENDER_BLOCKING and laying_out:
        return False
    return (incoming == RENDER_BLOCKING) == (carried == {RENDER_BLOCKING})

def asked_bytes(link_bytes: int | None, byte_range: tuple[int, int | None] | None) -> int | None:
    """What a request's answer may put on the link at most, as far as known: its expected link size, else, for a
    closed byte range (a flight's first piece of an image of unknown size, flight_pieces.probed), that range and a
    head; None if neither bounds it (behind_lone_leader's `incoming_bytes`)."""
    if link_bytes is not None:
        return link_bytes
    if byte_range is None or byte_range[1] is None:
        return None
    return byte_range[1] - byte_range[0] + 1 + HEAD_BYTES


# What a font or an image may follow on a connection, alone at its front: a text/css or script answer proves its
# place by exclusion there (no font or image request takes one; response_check.proves_by_exclusion).
FONT_LEADERS = frozenset({"stylesheet", "script"})
# What may follow one (behind_lone_leader): destinations that refuse both a stylesheet's and a script's media type.
LEADER_FOLLOWERS = frozenset({"font", "image"})


def behind_lone_leader(in_flight: Sequence[str], held: Sequence[str], incoming: str, link_bdp: int | None = None,
                       sent_alone: bool = True, incoming_bytes: int | None = None) -> bool:
    """May a request of resource type `incoming` (a font or an image) be pipelined on a connection whose one answer in
    flight is a stylesheet's or a script's (`in_flight`, `held`: resource types), sent with nothing in flight before
    it (`sent_alone`: its answer may prove its place by exclusion), to an origin whose link is known to carry
    BALANCE_BDP or more per round trip (`link_bdp`, as for `balances`)? An image only where its answer is known to
    be short (`incoming_bytes`, asked_bytes: a flight's first piece, or a known image within LONG_BYTES): one of
    unknown size may be the page's largest, and behind a leader on a cold connection it would take its slow start
    there instead of waiting a moment for the warm one (Firefox's rust-book-print on `sat` has a 241 kB image the
    browser asks for near the end of its document; with whole images following, three of thirteen loads took
    8.0-9.2 s against 6.3-6.9 s, a likely cause not caught in a log). That answer proves its place by exclusion
    (pipeline.py, response_check.proves_by_exclusion: no font or image request, a first piece's Range included,
    takes a text/css or script body) and streams to the page as it arrives; the follower comes in the same round
    trips instead of waiting one for a free connection, and an image's first piece proves itself behind it. On `sat`
    a cold helper's first visit of apache-rewrite sent its four stylesheets and script and two images to its six
    connections and the page's six other images (known from the document at the same moment) a round trip later,
    when those answers were in: the last of them, a first piece's rest, came 2.5 s after the first wave. Not on a
    thin link: the followers would share its few segments per round trip with the page's render-blocking answers
    (rust-std on `wcdma`, mixes_fonts)."""
    bounded = incoming != "image" or (incoming_bytes is not None and incoming_bytes <= LONG_BYTES)  # asked_bytes
    return (roomy_bdp(link_bdp) is not None and sent_alone and incoming in LEADER_FOLLOWERS and not held
            and len(in_flight) == 1 and in_flight[0] in FONT_LEADERS and bounded)


def follows_unknown_font(in_flight: Sequence[tuple[str, int | None]], incoming: str) -> bool:
    """Would pipelining a request of resource type `incoming` on a connection with answers of these (type, known link
    size) in flight put a font behind a font whose size is not known (may_join's `font`)? A font is tens of kB
    (rustdoc's six: 52-133 kB) and one pipelined behind another waits for all of it, two or three round trips of
    slow start on a fresh connection, where a connection carrying a stylesheet or a script frees within one. On
    `sat` a new user's first visit of rust-std had three of its fonts behind the other three, two and three deep
    (FiraSans-Medium, 133 kB, behind FiraSans-Regular, 129 kB: its last byte 4.4 s after the page's document):
    Firefox 0.91x (ON 5.72-5.75 s against OFF 5.16-5.82 s), Chromium in one load of two (4.62 s against 4.05 s).
    Each font alone on its connection (and fonts after the page's stylesheets and scripts in the queue,
    queue_order): Firefox 4.49-4.55 s, Chromium 3.96-4.02 s. A flight's font of known size is weighed by the size
    rules instead (expected_long, fits_first_flight)."""
    return incoming == "font" and any(t == "font" and size is None for t, size in in_flight)


def mixes_fonts(in_flight: Sequence[str], held: Sequence[str], incoming: str, link_bdp: int | None = None,
                sent_alone: bool = True) -> bool:
    """Would pipelining a request of resource type `incoming` on a connection with answers of these types in flight
    (and `held`: complete, unproven) put a font and other work in one pipeline (may_join's `font`)? Not a
    font behind one lone stylesheet or script whose request went out with nothing in flight before it
    (`sent_alone`), to an origin whose link is known to carry BALANCE_BDP or more per round trip (`link_bdp`, as
    for `balances`): a text/css or script answer at its place
    proves itself by exclusion, as no font request takes one (pipeline.py, response_check.proves_by_exclusion),
    and streams to the page as it arrives; the font follows it in the same round trips instead of waiting for a
    free connection. rustdoc's first visit on `sat` (rust-std, six preloaded fonts, 523 kB): its fonts waited a
    round trip for the connections its stylesheets and scripts held, then went three each to the first two
    connections to free (last font byte 4.2 s after the navigation; 3.4 s with the rule). On a thin link the page
    waits on its bytes whatever the order, and six fonts in slow start at once with the stylesheets only crowded
    it: rust-std on `wcdma` (384 kbit/s, 19 kB per round trip) took 16.4–20.5 s with the rule for everyone, against
    14.7–17.1 s without lanefetch."""
    incoming_font = incoming == "font"
    if incoming_font and behind_lone_leader(in_flight, held, incoming, link_bdp, sent_alone):
        return False
    return any((t == "font") != incoming_font for t in [*in_flight, *held])


# RFC 6928's initial window: ten segments (INITIAL_SEGMENTS) of a 1460-byte MSS.
INITIAL_SEGMENTS = 10
INITIAL_WINDOW = INITIAL_SEGMENTS * 1460
#: A segment's payload over a 1500-byte MTU with TCP timestamps (what servers send: 1448 bytes).
SEGMENT = 1448
# An answer expected to be larger than this needs three round trips or more on a fresh connection (IW10, then
# twice that: 30 segments of SEGMENT bytes, 43 440 B): whatever is pipelined behind it waits for all of them.
LONG_BYTES = 3 * INITIAL_SEGMENTS * SEGMENT


#: What a response's head adds to its body where only the body's size is known (link_size): a static file's head.
HEAD_BYTES = 512


def link_size(expected_wire: int | None, expected_size: int | None) -> int | None:
    """What an answer is expected to put on the link, head included (FetchRequest.link_bytes): the bytes it put there
    in the page's earlier loads (`expected_wire`), else its decoded body size and a head (larger than a compressed
    text travels, never smaller); None if neither is known. The sizes every rule of this module takes."""
    if expected_wire is not None:
        return expected_wire
    return None if expected_size is None else expected_size + HEAD_BYTES


def segments(sizes: Iterable[int]) -> int:
    """The segments a server sends answers of these link sizes in, each answer its own, rounded up: a pipelined
    server writes each answer as it is made, so small ones do not share segments. On `sat` a connection carrying
    eight of django-tutorial07's small stylesheets and scripts, 9.7 kB in all (0.7 of an initial window by bytes),
    got the eighth a round trip after the others: they took 11 segments."""
    return sum(max(1, -(-s // SEGMENT)) for s in sizes)


def fits_first_flight(carried: Iterable[int | None], incoming: int | None) -> bool:
    """May a request whose size is known (`incoming`, its link size as learned from the page's earlier loads: a
    prefetch flight's FetchRequest.link_bytes) be pipelined on a busy connection whose in-flight and held answers have
    these sizes, all known, because all of it comes in the server's first flight (INITIAL_SEGMENTS, `segments`)?
    Then it may go there whatever its class, even while other connections are idle: the pipeline's answers are
    held until its last is in (pipeline.py), but they all come in the same round trip, so nothing waits for another
    answer's slow start, and the idle connections are left to answers that need more round trips. A flight sends a
    page's every request at once: with its small stylesheets and scripts each alone on a connection, the four large
    images of apache-rewrite could go out only a round trip later, once those connections were free (its second
    visit on `sat`: the images came from the flight at 2.96-3.04 s, everything else by 1.37 s)."""
    sizes = list(carried)
    if incoming is None or not sizes or any(s is None for s in sizes):
        return False
    return segments([*(s for s in sizes if s is not None), incoming]) <= INITIAL_SEGMENTS


@dataclass(frozen=True)
class Packing:
    """One busy HTTP/1.1 connection as packing_taker sees it: the link sizes of the answers it has in flight or
    holds (None: one not known), and whether it may take one more request now (depth, request cap, budget)."""

    id: int
    sizes: tuple[int | None, ...]
    may_send: bool = True


def packing_taker(connections: Iterable[Packing], incoming: int | None) -> int | None:
    """The id of the busy connection that takes a request of known size `incoming` into its first flight
    (fits_first_flight), or None: of those it fits and that may send, the fullest (best fit: the next small answer
    may still fit an emptier one), ties the lowest id. A function of the connections' states only: when each
    connection asked only about itself, the small answers of apache-rewrite's flight went wherever a connection's
    task woke first, four connections' first flights carried its 25 kB of stylesheets and scripts, and its images
    waited a round trip for them (2026-11-28, `sat`)."""
    fitting = [c for c in connections if c.may_send and c.sizes and fits_first_flight(c.sizes, incoming)]
    if not fitting:
        return None
    return max(fitting, key=lambda c: (sum(s or 0 for s in c.sizes), -c.id)).id


# Ranks a font of render-blocking work is moved by (queue_order): past every rank the browser gives (0-4).
FONTS_AFTER = 8


def queue_order(cls: int, rank: int, expected_size: int | None, font: bool = False) -> tuple[int, int, int]:
    """Where a request waits in its origin's queue, ahead of its arrival order: its priority class and the
    browser's rank (request.priority_key), then, among work that does not block rendering, requests of unknown
    size (the browser's own) first and a flight's known sizes largest first. A flight's answers are all wanted by
    the load event, which waits for the last one in: the largest needs the most round trips of slow start, so it
    starts first and gets an idle connection of its own while the small ones share one (fits_first_flight); the
    longest-first order is the classic rule for finishing a set of jobs on parallel machines early. Render-blocking
    work keeps the page's order, its fonts (`font`) after the rest of it, whatever their rank: a stylesheet or a
    script is small and blocks the parser or the page's first paint, and may be pipelined with its kind, while a
    font is tens of kB and takes a connection of its own (follows_unknown_font), so a font ahead of them in the
    queue kept them from every connection it waited for. rustdoc's preloaded fonts ("High" in Chromium) ahead of its
    deferred scripts ("Low") held crates.js and main.js 2.5 s (rust-std's first visit on `sat`, Chromium: 4.45 s in
    one load of three; with fonts after them, four of four at 3.96-4.02 s). Over h2 this is the order streams open
    in, where a stream limit or a connection's share holds some back; the server schedules them by the urgency the
    browser gave (request.urgency), fonts' unchanged."""
    if cls == RENDER_BLOCKING:
        return cls, rank + FONTS_AFTER if font else rank, 0
    if expected_size is None:
        return cls, rank, 0
    return cls, rank, 1 + max(0, (1 << 40) - expected_size)


@dataclass(frozen=True)
class Bin:
    """One HTTP/1.1 connection as a flight's balanced work sees it (balanced_taker): `load` = the link sizes (heads
    included) of the answers it has in flight or holds (one of a size not known counted as LONG_BYTES); None: it may
    send nothing more and takes no work. `ready`: it carries nothing render-blocking and nothing of unknown size, so
    balanced work may be pipelined behind what it carries now, or (`room` not None) what it carries has told its
    size and a request of at most `room` bytes comes with it in its window (comes_within_window). `window`: its
    estimated congestion window (Warmth, at most WINDOW_CAP_BDPS times the link's: window_for), in which the round
    trips it needs are counted, its growth stopping at `ceiling` (window_ceiling; None: no link measured). Built by
    bin_for."""

    id: int
    load: int | None
    ready: bool = True
    window: int = INITIAL_WINDOW
    ceiling: int | None = None
    room: int | None = None


def takes_now(b: Bin, incoming: int) -> bool:
    """May this connection take a balanced request of link size `incoming` now, pipelined behind what it carries?"""
    return b.load is not None and b.ready and (b.room is None or incoming <= b.room)


def left_to_come(in_flight: Iterable[tuple[int | None, int | None]], held: int) -> list[int | None]:
    """The sizes balanced_taker weighs a connection by (bin_for): of each answer in flight, the body bytes still to
    come once its head told them (`remaining`), else its link size (None: not known); each answer it holds complete
    (pipeline.py) as 0, being in. Counted whole, the answers a connection had carried kept it from a flight's pieces:
    rust-book-print's document connection, the warmest by far, had a 77 kB font 18 ms from its end when a 241 kB
    image's rest was asked (`sat`, first visit), and the pieces went to cold connections, two and three round trips
    each."""
    return [size if remaining is None else remaining for remaining, size in in_flight] + [0] * held


def bin_load(sizes: Iterable[int | None]) -> int:
    """A connection's load for balanced_taker: its answers' known link sizes, LONG_BYTES for one not known."""
    return sum(LONG_BYTES if s is None else s for s in sizes)


def bin_for(conn_id: int, sizes: Iterable[int | None], ready: bool, window: int = INITIAL_WINDOW,
            told: bool = False, incoming: int = LONG_BYTES) -> Bin:
    """A connection with answers of these sizes aboard as balanced_taker sees it. One that is not `ready` (it carries
    render-blocking work or the browser's own) is ready all the same for a request that comes with all of that in
    its window, where every answer aboard is in step and its head has told what is left (`told`:
    comes_within_window with the request weighed, `incoming`: a piece unless the caller knows; its `room` says how
    large a request may be); else it is waited for only if all of that
    comes in the server's first flight
    (it is free a round trip from now); one busy longer takes no balanced work: waiting for cmake-interaction's
    20 kB underscore.js (two round trips) started an image on its connection 1.25 s into the load.

    A connection waited for counts what its first flight's answers cost the flight's work by the end of the second
    round trip (`first_flight_cost`): there a fresh connection has carried 30 segments of it, one whose first
    flight was k segments of render-blocking answers 10 + k (slow start grows its window by what it delivered), or
    10 where k is under half the window (not limited by its window, it does not grow). Counted as its answers plus a
    whole first flight instead, apache-rewrite's connection carrying its stylesheets (9 segments) looked loaded
    like one with a 27 kB piece aboard, and the flight's images were packed onto the others, past their second
    flight (a breakdown of one second visit on `sat`: the last image in at 2.13 s after the flight started; counted
    as it is now, with the pool's reserve for busy connections, 1.93 s)."""
    aboard = list(sizes)
    if ready:
        return Bin(conn_id, bin_load(aboard), True, window)
    if told and comes_within_window(aboard, window, incoming):
        return Bin(conn_id, bin_load(aboard), True, window, room=window - bin_load(aboard))
    known = [s for s in aboard if s is not None]
    k = segments(s for s in known if s > 0)  # an answer in already (0 to come) takes no segment of the flight
    if len(known) < len(aboard) or k > INITIAL_SEGMENTS:
        return Bin(conn_id, None, False, window)
    return Bin(conn_id, first_flight_cost(k), False, window)


def comes_within_window(sizes: Iterable[int | None], window: int, incoming: int = LONG_BYTES) -> bool:
    """May a flight's balanced work be pipelined at once on a connection that carries render-blocking answers or
    answers of a size not known when it asked (bin_for's not `ready`), because all that is still to come of them
    (`sizes`: left_to_come, none None; the pool passes only answers in step whose heads are in, bin_for's `told`)
    with a piece more (LONG_BYTES: balanced work is mostly pieces, or images within one: flight_pieces.py; a larger
    request is weighed against the bin's `room`, takes_now) fits in the window its server is estimated to send in
    a round trip (`window`: window_for, at most twice the link's measured bytes per round trip)? Then the piece comes
    right behind them, in that round trip or just after, where waiting for the connection to drain first costs it a
    round trip. Answers already in step stay so (pipeline.py decides at each head): nothing aboard is held by what
    is pipelined behind it, which is why a held answer, or one whose head is not in (a flight's stylesheet, its size
    only learned), rules the connection out. rust-book-print's first visit (`sat`): the rest of four large images
    waited 0.69 s for the document's connection, the warmest by far, to finish the page's 77 kB icon font, whose
    head had told its size 0.36 s before. A fresh connection (one initial window) never qualifies for a piece;
    one needs a window of three initial windows beyond what it carries. Where the request is known (`incoming`, its
    link size: the pool weighs each request's bins anew), it is what must fit: apache-rewrite's first visit on `sat`
    had a first piece's rest of 16 kB told 15 ms before the image ending on the connection it had warmed
    (35 kB window) was in; weighed as a whole piece, that connection had no room, and the rest went to a cold one
    carrying another rest, two round trips (the load 3.16-3.20 s in five of six, against 2.63-2.65 s where the
    image's end came first)."""
    aboard = list(sizes)
    return all(s is not None for s in aboard) and bin_load(aboard) + incoming <= window


def first_flight_cost(k: int) -> int:
    """The bytes of a flight's work that a connection whose first flight carries k segments of other answers (at
    most INITIAL_SEGMENTS) cannot carry by the end of its second round trip, against a fresh one (bin_for)."""
    grown = k if 2 * k >= INITIAL_SEGMENTS else 0
    return (3 * INITIAL_SEGMENTS - (INITIAL_SEGMENTS + grown)) * SEGMENT


#: The link's bandwidth-delay product from which a flight's work is spread by bytes (balances): four first flights.
#: The estimate (inflight_budget.link_bdp) is a lower bound over a fast link (a page's load seldom fills it for two
#: round trips) and, over a slow one, noisy upwards however it is filtered: W-CDMA's 19 kB per round trip was
#: estimated at up to 41 kB in learning loads (holes filled in SACK recovery release what waited behind them, a
#: segment at a time: no kernel counter tells those reads from the link's), and at two first flights (29 kB) pieces
#: were asked there in 2 of 5 second visits of apache-rewrite (6.9 and 9.3 s against OFF's 6.6 s). Over `sat`
#: (10 Mbit/s at 600 ms: 750 kB) the estimates remembered from learning loads were 79-81 kB (2026-11-28).
BALANCE_BDP = 4 * INITIAL_WINDOW


def roomy_bdp(link_bdp: int | None) -> int | None:
    """The link's bandwidth-delay product (`link_bdp`, bytes: origin_policy, learned and remembered) where it is
    known to be BALANCE_BDP or more, the links whose flights wait on slow start rather than on their bytes; None
    otherwise (unknown, or a thin link such as W-CDMA)."""
    return link_bdp if link_bdp is not None and link_bdp >= BALANCE_BDP else None


def balances(cls: int, expected_size: int | None, link_bdp: int | None) -> bool:
    """Is this request a flight's work to be spread by bytes (balanced_taker): its size known from the page's
    earlier loads, not render-blocking, to an origin whose link is known to carry BALANCE_BDP or more per round trip
    (`link_bdp`, bytes: origin_policy, learned and remembered)? There the flight waits on slow start, and every
    connection growing its window at once is what the link has room for. On a link that carries little more than
    one first flight per round trip (W-CDMA, 384 kbit/s at 400 ms: 19 kB) the page waits on its bytes whatever the
    order, and six connections in slow start at once only overflowed its queue: 67-70 drops per load of
    django-tutorial07 against 37-45 without lanefetch, and retransmission timeouts (11.6 s against 9.4 s)."""
    return expected_size is not None and cls != RENDER_BLOCKING and roomy_bdp(link_bdp) is not None


#: A connection's estimated window, for spreading a flight's work, is at most this many times the link's measured
#: bytes per round trip (window_for).
WINDOW_CAP_BDPS = 2


def window_ceiling(link_bdp: int | None) -> int | None:
    """The most a connection is counted to bring in a round trip (window_for, rounds_to_carry): WINDOW_CAP_BDPS x the
    link's measured bytes per round trip; None where none is measured."""
    return None if link_bdp is None else WINDOW_CAP_BDPS * link_bdp


def window_for(window: int, link_bdp: int | None) -> int:
    """The window balanced_taker counts a connection's round trips in: its estimate (Warmth), at most
    WINDOW_CAP_BDPS x the link's measured bytes per round trip (`link_bdp`, a lower bound: origin_policy), never
    under the initial window. The estimate grows by every large answer and shrinks only with idle time, so a
    connection that once carried a megabyte and was kept busy since by small answers would look able to bring a
    flight's every image in one round trip and take them all, pipelined, each held until the last is in; no
    connection brings more than the link per round trip."""
    ceiling = window_ceiling(link_bdp)
    return window if ceiling is None else max(INITIAL_WINDOW, min(window, ceiling))


def rounds_to_carry(load: int, window: int, ceiling: int | None = None) -> int:
    """The round trips a connection whose server's window is `window` bytes needs to bring `load` bytes, the window
    doubling every round trip (slow start) up to `ceiling` (None: none): without one, the least k with
    window x (2^k - 1) >= load."""
    k, carried, w = 0, 0, max(window, 1)
    while carried < load:
        if ceiling is not None and w >= ceiling:  # grown to the ceiling: the rest at that much per round trip
            return k + -(-(load - carried) // w)
        carried, w, k = carried + w, 2 * w if ceiling is None else min(2 * w, max(ceiling, w)), k + 1
    return k


def balanced_taker(bins: Iterable[Bin], incoming: int = 0) -> Bin | None:
    """The connection that takes the queue's next balanced request (`balances`, of link size `incoming`): the one that
    would carry its load with the request in the fewest round trips of slow start from its window
    (`rounds_to_carry`), then the least loaded (ties: a ready one, the warmest, the lowest id), pipelined behind
    what it carries if it is ready, else once it is (the request waits for it); None when no connection may send
    more. With windows alike (a flight at the navigation: every connection fresh) that is the least loaded one and,
    taken largest first (queue_order), the longest-processing-time rule for parallel machines: no connection ends up
    carrying more than the least loaded one plus one request. A warm connection is a faster machine: late in a first
    visit the document's connection can bring 400 kB in a round trip where the others bring 15 kB, and
    rust-book-print's pieces of a 241 kB image (a first piece's rest, flight_pieces.py) took two and three round
    trips on the cold ones (`sat`). A flight asks all of a page's images at the navigation; each connection carries
    its share back to back, so its server's window keeps growing over the answers, and the flight ends when the most
    loaded connection does. A connection busy with a stylesheet takes its share too, once that is in (nothing is
    pipelined behind render-blocking work): spread over the other connections only, apache-rewrite's second visit on
    `sat` took 3.1 s instead of 2.5 s. The rules for the browser's own images (not pipelined while the page lays
    out, warmest idle connection first) would have the flight's images wait for a free connection, a round trip or
    more, although a connection is loaded far below others."""
    # (a bin ready by its window only (`room`) with no room for this request is no taker: takes_now)
    open_bins = [(b, b.load) for b in bins if b.load is not None and (b.room is None or incoming <= b.room)]
    if not open_bins:
        return None
    return min(open_bins, key=lambda bl: (rounds_to_carry(bl[1] + incoming, bl[0].window, bl[0].ceiling), bl[1],
                                          not bl[0].ready, -bl[0].window, bl[0].id))[0]


def expected_long(expected_sizes: Iterable[int | None]) -> bool:
    """Is an answer in flight on a connection expected to be long before any of it arrived: its size learned from the
    page's earlier loads (a prefetch flight's request, FetchRequest.expected_size) above LONG_BYTES? Counts as
    `long_here` for may_join: on `sat` a flight pipelined two small scripts behind jQuery (85 kB on the wire) on a
    fresh connection, and they came with it, 2 s after the others."""
    return any(s is not None and s > LONG_BYTES for s in expected_sizes)


LONG_RTT = 0.100  # seconds: from here on, an origin's h2 batch is shared by several connections (h2_connection_count)


@dataclass(frozen=True)
class Warmth:
    """What a connection's server is estimated to send in its next round trip (`window`, bytes: its congestion
    window), as of the last byte received at `last` (None: nothing received yet)."""

    window: int = INITIAL_WINDOW
    last: float | None = None


def retransmission_timeout(rtt: float | None) -> float:
    """The server's RTO: Linux's srtt + max(4 rttvar, 200 ms) with a steady RTT; 1 s with none known (RFC 6298)."""
    return 1.0 if rtt is None else rtt + 0.2


def cooled(w: Warmth, t: float, rtt: float | None) -> int:
    """The window at time t: halved for every whole RTO the connection has been idle since its last byte, never
    under the initial window (RFC 2861; Linux restarts from min(IW, cwnd) and halves per RTO idle)."""
    if w.last is None or t <= w.last:
        return w.window
    halvings = min(32, int((t - w.last) // retransmission_timeout(rtt)))
    return max(INITIAL_WINDOW, w.window >> halvings)


def warmed(w: Warmth, first: float, last: float, answer_bytes: int, rtt: float | None) -> Warmth:
    """The estimate after an answer of `answer_bytes` on the wire, whose first byte came at `first` and last at
    `last`. The server sat idle from its previous answer's last byte to this one's first (the one-way delays
    cancel), so the window cools to `first`; then slow start grows it by what the answer delivered when the answer
    filled at least half of it (Linux's cwnd-limited test in slow start: cwnd < 2 x packets out) and leaves it
    unchanged for a small answer."""
    window = cooled(w, first, rtt)
    if 2 * answer_bytes > window:
        window += answer_bytes
    return Warmth(window, max(last, first))


def receiving(w: Warmth, first: float, consumed: int, remaining: int, rtt: float | None) -> int:
    """The window now of a connection receiving an answer (first byte at `first`, `consumed` bytes of it in,
    `remaining` body bytes to come): cooled to `first`, grown by what came if the whole answer fills half of it."""
    window = cooled(w, first, rtt)
    return window + consumed if 2 * (consumed + remaining) > window else window


def drains_soon(in_flight: int, held: int, remaining: int | None, window: int) -> bool:
    """Will a busy connection be idle within about a round trip: its one answer in flight (none held) has a
    known rest that fits in its window, i.e. the server has it on the way already?"""
    return in_flight == 1 and held == 0 and remaining is not None and remaining <= window


# How much warmer than the warmest idle connection a draining one must be to be waited for.
WARMER = 2
# ... and a settling one (its answers in, held for the pipelining check's quiet: idle within EngineConfig.sync_quiet,
# 30 ms, not a round trip): a quarter warmer, as a fraction (SETTLED_WARMER_OVER / SETTLED_WARMER_UNDER).
SETTLED_WARMER_OVER, SETTLED_WARMER_UNDER = 5, 4


@dataclass(frozen=True)
class Candidate:
    """One open HTTP/1.1 connection of an origin as the choice of a taker sees it: `idle` = it may take a request
    now and carries nothing (no answer in flight or held); `window` = its estimated window now (cooled, or
    `receiving`); `draining` = busy, but idle within about a round trip (`drains_soon`)."""

    id: int
    idle: bool
    window: int
    draining: bool = False
    may_pipeline: bool = False  # busy, and may take the request into its pipeline now (pipelining_taker)
    # Busy only with answers that are all in, held until the connection stays quiet (pipeline.py's check that the
    # server sent nothing more): idle within EngineConfig.sync_quiet unless the server was out of step
    settling: bool = False


def may_wait_for_draining(incoming: int, laying_out: bool) -> bool:
    """May a request of priority class `incoming` wait for a warm draining connection? Only work that does not
    block rendering, once the page has laid out (`laying_out`: render-blocking work of the origin is queued or in
    flight)."""
    return incoming != RENDER_BLOCKING and not laying_out


def may_wait_for_settling(incoming: int) -> bool:
    """May a request of priority class `incoming` wait for a warm settling connection (Candidate.settling)? Any
    work that does not block rendering, the page laid out or not: the wait is the check's quiet (30 ms), where a
    cold connection costs an answer larger than its window a round trip (module docstring, "Warmest first")."""
    return incoming != RENDER_BLOCKING


def preferred_taker(connections: Iterable[Candidate], may_wait: bool = True,
                    may_wait_settling: bool = False) -> int | None:
    """The id of the connection that should take the queue's next request: the idle one with the largest window
    (ties: the lowest id), unless the request may wait (`may_wait_for_draining`) and a draining connection is
    WARMER times warmer still, or may wait for a settling one (`may_wait_for_settling`) that is a quarter warmer
    (SETTLED_WARMER_*; then the warmest such, when it is idle); None when none is idle (the busy ones then pipeline
    by the other rules)."""
    cs = list(connections)
    idle = [c for c in cs if c.idle]
    if not idle:
        return None
    best = max(idle, key=lambda c: (c.window, -c.id))
    draining = [c for c in cs if may_wait and c.draining and not c.idle and c.window >= WARMER * best.window]
    if draining:
        return max(draining, key=lambda c: (c.window, -c.id)).id
    settling = [c for c in cs if may_wait_settling and c.settling and not c.idle
                and c.window * SETTLED_WARMER_UNDER >= best.window * SETTLED_WARMER_OVER]
    if settling:
        return max(settling, key=lambda c: (c.window, -c.id)).id
    return best.id


def pipelining_taker(connections: Iterable[Candidate], asker: int | None = None) -> int | None:
    """With no connection idle, the id of the busy one that should pipeline the queue's next request: of those that
    may (`may_pipeline`: its depth, its share and the pipelining rules allow it), the one with the largest window
    (ties: the asking connection `asker` if it is among them, else the lowest id); None when none may. The warmest
    sends it fastest once its turn comes (module docstring, "Warmest first"); among equals the asker keeps it, as
    before the rule."""
    able = [c for c in connections if c.may_pipeline and not c.idle]
    if not able:
        return None
    window = max(c.window for c in able)
    best = [c.id for c in able if c.window == window]
    return asker if asker in best else min(best)


def h2_connection_count(h2_connections: int, min_rtt: float | None) -> int:
    """How many h2 connections an origin gets: up to `h2_connections` unless its round trip is known to be short
    (below LONG_RTT), then one. A connection's TCP slow start begins at the server's initial window (IW10, 14.6 kB)
    and doubles per round trip; on a long fat link one connection needs several round trips before it carries the
    link's rate, and two start at twice the window (measured on the engine benchmark over h2, 200 ms, 2 Mbit/s:
    warm 1.352 s → 1.209 s, docs/performance.md). Where a round trip is short those rounds cost little and the
    second TLS handshake is not worth its bytes. An unknown round trip counts as long: the count matters before the
    first handshake (connected together, the second's TCP is up when the first's ALPN says h2, and only its TLS
    round trip is left; OriginPool._await_protocol)."""
    if min_rtt is not None and min_rtt < LONG_RTT:
        return 1
    return max(1, h2_connections)


# One more h2 connection per this many bytes of a flight whose sizes are known (h2_connections_for): what a server's
# slow start delivers on one fresh connection in its first three round trips (IW10: one, two, then four windows).
H2_CONNECTION_BYTES = 7 * INITIAL_WINDOW


def h2_connections_for(base: int, sized_bytes: int, link_bdp: int | None, per_origin: int) -> int:
    """h2 connections for an origin's waiting work: `base` (h2_connection_count), and where the work's bytes are
    known (`sized_bytes`: a flight's answers, as the page's earlier loads put them on the link) and its link is
    known to carry BALANCE_BDP or more per round trip (`link_bdp`, as `balances`), one per H2_CONNECTION_BYTES of
    it, up to the per-origin limit and to as many initial windows as the link carries per round trip. On a long fat
    link a flight waits on slow start, which grows from each connection's initial window: a learned h2 page's second
    visit over `sat` (10 Mbit/s, 600 ms) took 4.39 s with two connections and 3.97 s with four (django-tutorial07,
    338 kB), 5.96 s and 4.83 s (rust-std, 615 kB), the same 3.8 s either way for flask-tutorial (160 kB), where each
    further TLS handshake only adds its ~2 kB to the downlink. On a link that carries little more than one initial
    window per round trip (W-CDMA) more connections only overflow its queue (`balances`): base only."""
    room = roomy_bdp(link_bdp)
    if base <= 1 or room is None:
        return base
    wanted = -(-sized_bytes // H2_CONNECTION_BYTES)
    return max(base, min(per_origin, wanted, room // INITIAL_WINDOW))


def connection_limit(per_origin: int, protocol: str | None, may_speak_h2: bool, h2_connections: int = 1,
                     min_rtt: float | None = None, sized_bytes: int = 0, link_bdp: int | None = None) -> int:
    """Connections an origin may have serving it: for h2 as many as h2_connection_count says (more for a flight of
    known bytes on a roomy link: h2_connections_for), as many until a TLS origin that may speak h2 has said which it
    speaks (whichever it speaks, that many are welcome: they connect together, and all but the first hold their TLS
    handshake for its ALPN, OriginPool._await_protocol), else the per-origin limit."""
    if protocol == "h2" or (protocol is None and may_speak_h2):
        base = min(h2_connection_count(h2_connections, min_rtt), max(1, per_origin))
        return h2_connections_for(base, sized_bytes, link_bdp, per_origin) if protocol == "h2" else base
    return per_origin


def h2_opens_late(up: int, stream_room: int, queued: int, base: int, limit: int) -> bool:
    """May an h2 origin open a further connection for its queued work, `up` of its connections being up (their
    handshakes done) with `stream_room` streams free among them? Where none is up, yes: those opening together
    share the work as equals (h2_share). Where one is, a new one's TCP and TLS handshakes take two round trips and
    it holds no share until it is up (OriginPool._opened_late), so the up ones send what they have room for at once
    and the new one only carries what comes two round trips later, which the warm connection carries as well: its
    only sure effect was its TLS handshake on the downlink (a first visit over `sat`, nginx h2: ~3 kB, 2 % of
    flask-tutorial's page, over issue 17's 1.02 × OFF, with an @import stylesheet or a small script its whole
    cargo). So only where the queued work does not fit the up connections' free streams, or where work of known
    bytes calls for more connections than `base` (`limit`: h2_connections_for, a learned page's flight)."""
    if up == 0:
        return True
    return limit > base or queued > stream_room


def h2_share(outstanding: int, connections: int) -> int:
    """Streams one of an origin's h2 connections may have open when it has several (`h2_connections`): its
    share of the outstanding work (queued + open streams), rounded up, so each starts its own slow start with a
    part of the batch instead of the first to speak taking it all. At least 1."""
    return max(1, -(-outstanding // max(1, connections)))


def h2_may_take(mine: int, outstanding: int, mine_bytes: int, least_bytes: int, connections: int,
                sized: bool, handshaking: bool = False) -> bool:
    """May one of an origin's `connections` h2 connections take the queue's next request? Where that request's
    answer has a known size (a flight's: `sized`), only the up connection carrying the fewest expected bytes
    (`least_bytes`) takes it: taken largest first (queue_order), that is the longest-processing-time rule again
    (balanced_taker), and the connections end within one answer of each other. Counted in streams instead
    (h2_share), rust-std's flight over `sat` (six connections) left one carrying a single 174-byte image while two
    carried 130 kB each and ended 1.8 s after it. While some of them are still in their handshakes (`handshaking`:
    opened with the others, so they keep their part of the work), the up ones also stay within their count share;
    once all are up, the least loaded may always take, so work never waits for every connection to refuse. Without
    a known size, by count."""
    by_count = mine < h2_share(outstanding, connections)
    if sized:
        return mine_bytes <= least_bytes and (by_count or not handshaking)
    return by_count


def h2_render_reserve(protocol: str | None, h2_connections: int, min_rtt: float | None, have_one: bool) -> bool:
    """Does a page's document to this origin open a render reserve beside its own connection: an h2 connection
    that takes only render-blocking requests, and only while no other of the origin's h2 connections is free of
    other work (`h2_for_reserve`)? Where the origin is remembered to speak h2 and gets several connections
    (`h2_connection_count`: a long or unknown round trip), and it has none open yet (`have_one`).

    Why: a first visit's flight (the document's stylesheets, scripts and images, found as it streams) goes on the
    document's connection, and the stylesheets those stylesheets `@import`, asked a round trip later, reached the
    server behind the images' bytes in its socket: over `sat` django-tutorial07's three `@import`s were answered
    0.6 s after they came (the browser's own, asked before its images, at once), and the page's last chain link
    with them. Opened with the document, the reserve is up when they come; it carries no later work, so the flight
    keeps the document's warm connection's receive cap whole (the reserve holds no share of it). Where the origin
    has its connections already (a page's preconnect opened them all), the pool adopts the newest of them that
    carries nothing yet instead of opening one over its limit (OriginPool.submit)."""
    return protocol == "h2" and not have_one and h2_connection_count(h2_connections, min_rtt) > 1


def h2_reserve_from_opening(may_speak_h2: bool, protocol: str | None, h2_connections: int, min_rtt: float | None,
                            have_one: bool, opening: int) -> bool:
    """Does a page's document to an origin whose protocol is not known yet make one of the connections a preconnect
    opened with it (`opening`: the pool's connections, all still in their handshakes or just up) the render
    reserve, should the origin speak h2? Where two or more are there (the first's ALPN says the protocol, the others
    wait for it: OriginPool._await_protocol), on a long or unknown round trip, none is the reserve yet, and TLS may
    offer h2.

    Why: `h2_render_reserve` opens a reserve only beside a document to an origin remembered to speak h2. Where the
    protocol is learned at the document's own handshake (Firefox over HTTPS: a fresh helper, the document's origin
    preconnected as its navigation starts), the second connection took the page's images with its share of the
    stylesheets, and django-tutorial07's `@import`ed stylesheets, asked a round trip later, reached the helper two
    round trips after they were sent, behind the images' bytes in that connection's socket at nginx (sat)."""
    return opening >= 2 and _unknown_may_reserve(may_speak_h2, protocol, h2_connections, min_rtt, have_one)


def _unknown_may_reserve(may_speak_h2: bool, protocol: str | None, h2_connections: int, min_rtt: float | None,
                         have_one: bool) -> bool:
    """What h2_reserve_from_opening and h2_reserve_beside share: an origin that may speak h2 but has not said, on a
    long or unknown round trip, without a reserve yet."""
    return (may_speak_h2 and protocol is None and not have_one
            and h2_connection_count(h2_connections, min_rtt) > 1)


def h2_reserve_beside(may_speak_h2: bool, protocol: str | None, h2_connections: int, min_rtt: float | None,
                      have_one: bool, opening: int) -> bool:
    """Does a page's document to an origin whose protocol is not known yet open a render reserve beside its own
    connection (`opening`: the pool's connections, at most the document's)? Where TLS may offer h2, on a long or
    unknown round trip, none is the reserve yet. Its TLS handshake waits for the first's ALPN (OriginPool.
    _await_protocol), so it is up a round trip after the document's connection; should the origin speak HTTP/1.1 it
    is one of the page's HTTP/1.1 connections (which a wave would open anyway).

    Why: Chromium's preconnect for an https page opens one connection, its TLS held (`preconnect_plan`), so
    `h2_reserve_from_opening` found nothing to adopt and a new user's first page over h2 had none: a first visit's
    flight asks the page's images with its stylesheets and scripts on the document's connection, still in slow
    start, and the stylesheet those stylesheets `@import`, asked a round trip later, waited behind their bytes in
    the server's socket (flask-tutorial over `sat`: pocoo.css asked 1.26 s after the document and answered until
    2.45 s, the browser alone's at 1.25 s; its own `@import`, basic.css, a round trip after the browser's). Its cost
    is one more TLS handshake, resumed from the first's session (OriginPool._await_ticket): in full it put ~2.5 kB
    more on the downlink, 1.021 × the browser alone's for jinja-templates' first visit."""
    return opening <= 1 and _unknown_may_reserve(may_speak_h2, protocol, h2_connections, min_rtt, have_one)


def beside_reserve_takes(resource_type: str) -> bool:
    """Of the render-blocking requests h2_for_reserve sends to a render reserve, which does the one opened beside a
    first visit's document (h2_reserve_beside) take? Stylesheets and scripts, not fonts: a page's fonts may be most
    of its bytes (rust-std: seven of 50–130 kB, 580 kB), and on the reserve's fresh connection they waited on its
    slow start where the document's connection had grown its window (rust-std over `sat` 6.22 s against 5.2 s
    without the reserve). The stylesheets a stylesheet `@import`s, what the reserve is for, are small."""
    return resource_type in ("stylesheet", "script")


#: How many more bytes than the render reserve another of the origin's h2 connections must have received for a
#: render-blocking request to go there rather than to the reserve (h2_for_reserve): by then slow start has grown its
#: server's window to several times the reserve's (a sender in slow start has sent about as much as its window).
RESERVE_OUTGROWN_BYTES = 256 * 1024


def h2_for_reserve(incoming: int, others: Iterable[tuple[bool, Iterable[int], int, int, int]], reserve_streams: int,
                   reserve_received: int) -> bool:
    """Should the origin's render reserve (`h2_render_reserve`) take a request of priority class `incoming`? Only a
    render-blocking one: where none of the origin's other h2 connections is free for it, or where the reserve has
    fewer streams open than every one that is; and not where one of the others that may open a stream has outgrown
    it. Each of `others` as (may open a stream, the priority classes of its open streams, its open streams, bytes
    received on it, the bytes its open streams' answers are known to bring: a learned flight's); free = may open one
    and carries nothing but render-blocking work; `reserve_streams`: the reserve's open streams, `reserve_received`
    its bytes received. A connection that carries images or other later work would queue the request behind their
    bytes at the server; among those free, sharing the page's first stylesheets and scripts by count starts a second
    slow start for them from the reserve's own initial window (django-tutorial07's first visit over `sat`: its small
    scripts then came in the first round trip, its last wave 0.5 s sooner). But a connection that has received
    RESERVE_OUTGROWN_BYTES more than the reserve has a window several times the reserve's (and the server restarts
    an idle connection's window at its initial one): unless it is known to have more than that still to bring (a
    learned flight's bulk), a render-blocking answer waits there about a round trip behind the bytes ahead of it,
    where the reserve's slow start takes one per doubling of its size. rust-book-print in Firefox over `sat` (h2):
    its 312 kB highlight.js, named at the end of a 392 kB document, went to the reserve, idle since the page's small
    stylesheets, and took 3.3 s from its request, while the document's connection, carrying ~440 kB a round trip,
    ended the page's images in 1.3 s; the page loaded 0.78x the browser alone. Where this says no, the other
    connections take the request by their own rules (so no request ever waits for the reserve)."""
    if incoming != RENDER_BLOCKING:
        return False
    candidates = list(others)
    if any(may_open and received - reserve_received >= RESERVE_OUTGROWN_BYTES and expected <= RESERVE_OUTGROWN_BYTES
           for may_open, _, _, received, expected in candidates):
        return False
    free = [streams for may_open, classes, streams, _, _ in candidates
            if may_open and all(c == RENDER_BLOCKING for c in classes)]
    return not free or reserve_streams < min(free)


def connections_to_open(serving: int, work: int, per_origin: int) -> int:
    """New connections to open: up to the per-origin limit, no more than the work (queued + in flight on the
    connections serving small requests) can use."""
    return max(0, min(per_origin, work) - serving)


def connections_ahead(open_now: int, limit: int) -> int:
    """Connections a page's preconnect opens: up to the origin's limit (connection_limit), counting those open or
    opening already."""
    return max(0, limit - open_now)


class Ahead(Enum):
    """What a preconnect opens (preconnect_plan)."""

    ALL = "all"  # every connection the origin may have serving the page (connections_ahead), handshakes and all
    ONE_HELD = "one_held"  # one connection, if the origin has none, its TLS handshake (if any) held until needed


def preconnect_plan(handshake: Handshake, tls: bool, protocol: str | None, *, for_page: bool = True,
                    known: bool = False) -> Ahead:
    """What a preconnect asking for `handshake` opens to an origin (over TLS or not, speaking `protocol` as far as
    is known): `tcp` holds the TLS handshake, except to an origin known to speak HTTP/1.1 only or reached over plain
    http (the helper will carry its requests, so its connections are worth having open). A `tcp` preconnect ahead
    of any page (`for_page` False: a site just turned on with no tab showing it, probed over http by its name) to
    a plain-http origin the site's earlier loads did not teach (`known`) opens one connection, the round-trip
    probe: a site served over https only had six TCP connections to its port 80 that no request ever used (~1 kB of
    its first page's downlink, the server's SYN-ACKs and FINs). An origin the site's loads used keeps all of them
    at once: a learned page's flight starts with the navigation (flask-tutorial's second visit on `sat`: 2.65 s
    with them, 3.2 s without)."""
    if handshake == "full" or protocol == "http/1.1":
        return Ahead.ALL
    if not tls:
        return Ahead.ALL if for_page or known else Ahead.ONE_HELD
    return Ahead.ONE_HELD


@dataclass(frozen=True)
class Evictable:
    """An open connection of another origin that carries nothing and whose origin has nothing queued: closing it for
    room loses nothing but its handshake (`room_under_cap`). `last_used`: when it last sent or received (monotonic
    s), for least recently used first."""

    id: int
    last_used: float


@dataclass(frozen=True)
class Room:
    """What `room_under_cap` allows: `open` new connections now, after closing the connections `evict` (ids)."""

    open: int
    evict: tuple[int, ...] = ()


def connection_cap(configured: int, file_limit: int | None) -> int:
    """The cap over all origins' connections: the configured one (EngineConfig.max_connections), at most half the
    process's file-descriptor limit where one is known (`file_limit`, the soft RLIMIT_NOFILE): macOS starts a
    process with 256, and the helper's pipes, cache database, log and the proxy's tunnels need descriptors too, so a
    cap of 256 there would still run it out of them."""
    return configured if file_limit is None or file_limit <= 0 else max(1, min(configured, file_limit // 2))


def room_under_cap(counted: int, wanted: int, cap: int, evictable: Iterable[Evictable] = ()) -> Room:
    """How many of `wanted` new connections an origin may open while `counted` connections (every origin's, those
    connecting included) are open under the helper's `cap`, and which idle connections of other origins to close
    first to make room for the rest: the least recently used (ties: the lowest id), only as many as needed. What
    cannot open now waits (module docstring, "A cap over all origins"). `evictable` is only looked at when the cap
    is reached."""
    wanted = max(0, wanted)
    free = max(0, cap - counted)
    if wanted <= free:
        return Room(wanted)
    short = wanted - free
    evict = tuple(e.id for e in sorted(evictable, key=lambda e: (e.last_used, e.id))[:short])
    return Room(free + len(evict), evict)
