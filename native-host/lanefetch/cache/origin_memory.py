"""What the helper learned about each origin's pipelining, kept across helper restarts (pure rules; the stores
keep the records, service.py reads them before a batch and writes them after).

Without it every helper start forgets: the first request to a known origin goes alone, the depth ramps 1 → 2 →
4 … again, and a server that misbehaved is trusted anew. A record holds the verdict (state), the safe depth and
the server's keep-alive request limit, with when it was learned. It is kept like the HTTP cache: partitioned by
top-level site (a site cannot learn what another site's pages taught the helper), never for private browsing,
and cleared with the cache. Records expire: a good verdict after RECORD_TTL (servers change), a bad one sooner
(BAD_TTL: a fixed server deserves another chance), and a record from the future is ignored.

Only what a session learned beyond "unknown" is written; a known origin starts the next session where it left
off, still under every integrity guard of pipeline.py (a held answer is proven in step before it is believed).
"""

from __future__ import annotations

from typing import Any

from ..engine.origin_policy import OriginPolicy, PipelineState

RECORD_TTL = 7 * 24 * 3600.0
BAD_TTL = 24 * 3600.0

Record = dict[str, Any]


def record_of(policy: OriginPolicy, now: float) -> Record | None:
    """The record to keep for this policy, or None when nothing was learned."""
    if policy.state is PipelineState.UNKNOWN and policy.request_limit is None:
        return None
    return {"state": policy.state.value, "depth": policy.depth, "request_limit": policy.request_limit,
            "learned_at": now}


def policy_from(record: Record, max_depth: int, now: float) -> OriginPolicy | None:
    """The policy a fresh session starts from for this record; None if it expired or is not one of ours."""
    try:
        state = PipelineState(record["state"])
        depth = int(record["depth"])
        limit = record.get("request_limit")
        learned = float(record["learned_at"])
    except (KeyError, TypeError, ValueError):
        return None
    ttl = BAD_TTL if state is PipelineState.RED else RECORD_TTL
    if not 0 <= now - learned <= ttl:
        return None
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        return None
    policy = OriginPolicy(max_depth, state, max(1, min(depth, max_depth)), limit)
    if state is PipelineState.RED:
        policy.demotions.append("learned in an earlier session")
    return policy
