"""Watching the helper's cap on connections (engine/connection_cap.py) in a test: every count as a connection is
counted, failing at once if it ever goes over the limit."""

from __future__ import annotations

from lanefetch.engine.connection_cap import CapMember, ConnectionCap


def watch_cap(cap: ConnectionCap, limit: int) -> list[int]:
    """Records the count each time a connection is counted under `cap`, and fails at once above `limit`."""
    seen: list[int] = []
    counted = cap.counted

    def checked(pool: CapMember, conn_id: int) -> None:
        counted(pool, conn_id)
        seen.append(cap.count)
        assert seen[-1] <= limit, f"{seen[-1]} connections counted, the cap is {limit}"

    cap.counted = checked  # type: ignore[method-assign]
    return seen
