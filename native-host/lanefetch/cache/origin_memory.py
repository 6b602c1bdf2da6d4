"""What the helper learned about each origin's pipelining, kept across helper restarts (pure rules; the stores
keep the records, service.py reads them before a batch and writes them after, and at once when a connection's end
demotes an origin or finds its keep-alive limit: that may come after every batch using it returned).

Without it every helper start forgets: the first request to a known origin goes alone, the depth ramps 1 → 2 → 4 …
again, and a server that misbehaved is trusted anew. A record holds the verdict (state), the safe depth, the
server's keep-alive request limit, the protocol its TLS handshakes chose and the link's bandwidth-delay product
(the best delivery rate seen × the round trip: pool_plan.balances), with when it was learned. It is kept
like the HTTP cache: partitioned by top-level site (a site cannot learn what another site's pages taught the
helper), never for private browsing, and cleared with the cache (what the session learned before a clear is then
never written back: service.forget_learned; after a clear by another process too, http_cache.py). The session
keeps what it learns apart the same way (engine.policy_key: one policy per origin, partition and window kind), so
what a record holds was learned under its own site in a normal window, never copied from another site's session or
a private window's. Records expire: a
good verdict after RECORD_TTL (servers change), a bad one sooner (BAD_TTL: a fixed server deserves another chance),
and a record from the future is ignored. Their age is their verdict's: a session that only carried a verdict on
(a demoted origin is never pipelined to, so never judged again; a proven one asked only one request at a time)
writes it with the age it had (OriginPolicy.learned_at), and what else it learned then goes with that age.

Only what a session learned beyond "unknown" is written; a known origin starts the next session where it left
off, still under every integrity guard of pipeline.py (a held answer is proven in step before it is believed).
A known protocol matters from the first batch: an HTTPS origin that may speak h2 gets only the connections h2
would have until a handshake says (pool_plan.connection_limit), so an HTTP/1.1-only origin remembered as such
opens the connections its waiting requests need in parallel instead of one handshake later.

The records of a site are also what the helper connects to ahead of a page (preconnect_origins): when a
navigation to the site starts, its document's origin and the origins its earlier loads used get a connection
before the first subresource batch asks, so none of them costs a handshake of its own on the critical path.

A record also keeps the origin's round trip (the smallest handshake of a session, with when it was measured): on a
navigation's preconnect the helper tells the extension that number before this session has measured one
(origin_rtt, remembered), so the gate's speed probe decides at once instead of waiting ~0.1 s for the connect
(speed-probe.ts). It is carried from record to record with its own age and dropped after ROUND_TRIP_TTL, so a
number nobody measured again never looks young.
"""

from __future__ import annotations

import math
from typing import Any

from ..engine.origin_policy import OriginPolicy, PipelineState

RECORD_TTL = 7 * 24 * 3600.0
BAD_TTL = 24 * 3600.0
#: A remembered round trip answers the extension's speed probe for a day: the user's network changes (a laptop
#: moves from a phone's tether to a LAN), and a stale answer costs the first page on the new network its probe's
#: verdict (speed-probe.ts), until a measured round trip replaces it.
ROUND_TRIP_TTL = 24 * 3600.0
PRECONNECT_MAX = 8  # origins of a site connected ahead of its page: a page's first wave rarely needs more
PROTOCOLS = ("h2", "http/1.1")

Record = dict[str, Any]


def record_of(policy: OriginPolicy, now: float) -> Record | None:
    """The record to keep for this policy, or None when nothing was learned."""
    # This session's measure, else the one remembered with when it was measured (carried, never made younger).
    round_trip = (policy.round_trip, now) if policy.round_trip is not None else policy.remembered_round_trip
    if (policy.state is PipelineState.UNKNOWN and policy.request_limit is None and policy.protocol is None
            and policy.link_bdp is None and round_trip is None):
        return None
    # The verdict's own age where this session only carried it on (OriginPolicy.learned_at), else now.
    learned_at = now if policy.learned_at is None else policy.learned_at
    record: Record = {"state": policy.state.value, "depth": policy.depth, "request_limit": policy.request_limit,
                      "protocol": policy.protocol, "link_bdp": policy.link_bdp, "learned_at": learned_at}
    if round_trip is not None:
        record["round_trip"], record["round_trip_at"] = round_trip
    return record


def _round_trip_of(record: Record, now: float) -> tuple[float, float] | None:
    """The record's round trip and when it was measured, if it is younger than ROUND_TRIP_TTL; raises ValueError
    for one that is not a duration and a time."""
    value, at = record.get("round_trip"), record.get("round_trip_at")
    if value is None and at is None:
        return None
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not isinstance(at, (int, float))
            or isinstance(at, bool) or not math.isfinite(value) or not math.isfinite(at) or value <= 0):
        raise ValueError("round_trip")
    return (float(value), float(at)) if 0 <= now - at <= ROUND_TRIP_TTL else None


def policy_from(record: Record, max_depth: int, now: float) -> OriginPolicy | None:
    """The policy a fresh session starts from for this record; None if it expired or is not one of ours."""
    try:
        state = PipelineState(record["state"])
        depth = int(record["depth"])
        limit = record.get("request_limit")
        protocol = record.get("protocol")
        bdp = record.get("link_bdp")
        learned = float(record["learned_at"])
        round_trip = _round_trip_of(record, now)
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: a depth of 1e999 (JSON reads inf)
        return None
    ttl = BAD_TTL if state is PipelineState.RED else RECORD_TTL
    if not 0 <= now - learned <= ttl:
        return None
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        return None
    if protocol is not None and protocol not in PROTOCOLS:
        return None
    if bdp is not None and (not isinstance(bdp, int) or isinstance(bdp, bool) or bdp < 0):
        return None
    policy = OriginPolicy(max_depth, state, max(1, min(depth, max_depth)), limit, protocol=protocol, link_bdp=bdp,
                          remembered_round_trip=round_trip, learned_at=learned)
    if state is PipelineState.RED:
        policy.demotions.append("learned in an earlier session")
    return policy


def heed(policy: OriginPolicy, remembered: OriginPolicy) -> None:
    """A session's policy for an origin met already under this site (a pool made before its record was read) meets the
    site's record of it: the evidence against pipelining that the record holds (a demotion, a keep-alive limit)
    applies from now on; its optimism never does."""
    if remembered.state is PipelineState.RED and policy.state is not PipelineState.RED:
        policy.state, policy.depth = PipelineState.RED, 1
        policy.demotions.extend(remembered.demotions)
        policy.learned_at = remembered.learned_at  # the record's verdict, as old as it is
    if remembered.request_limit is not None:
        policy.learn_request_limit(remembered.request_limit)


def preconnect_origins(records: dict[str, Record], now: float, limit: int = PRECONNECT_MAX) -> list[str]:
    """The origins to connect to ahead of a page of the site these records were learned under: those whose
    record is still good (policy_from would start from it; a demoted one too, it is still the page's), the most
    recently learned first, at most `limit`."""
    fresh = [(float(r["learned_at"]), name) for name, r in records.items() if policy_from(r, 1, now) is not None]
    return [name for _, name in sorted(fresh, key=lambda f: (-f[0], f[1]))[:max(0, limit)]]
