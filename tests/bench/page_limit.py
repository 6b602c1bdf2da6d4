"""T_min: the physical limit of one page load over one link, the floor no client can beat (pure).

    T_min = (handshakes + depth) × RTT + body bytes × 8 / downlink rate

What it counts, exactly:
- `depth` round trips, one per dependency wave (`page_deps.waves`: the document is wave 1, what it names wave 2,
  what a stylesheet names wave 3, ...): a request of wave k cannot be sent before a body of wave k−1 arrived.
- `handshakes` round trips before the first request: 1 for a fresh TCP connection over plain HTTP (what both
  variants pay: every load starts a fresh browser with no connection), 2 for TCP + TLS 1.3. No DNS (the pages are
  addressed by IP).
- The response bodies as served (content-coded where the server compresses: the bytes a perfect client cannot
  avoid), serialized once at the link's downlink rate. No HTTP headers, no TCP/IP overhead, no request bytes on the
  uplink, no slow start, no queueing: all of those only add.
- The serialization is added to the round trips, as the issue's formula has it, not overlapped with them. A client
  that moves earlier waves' bytes during later round trips could beat T_min by at most min(bytes/rate, depth × RTT),
  so it is the issue's yardstick rather than a strict floor; on the pages here the last waves (fonts, images) carry
  most of the bytes. On an unemulated link (no rate) there is no limit to speak of: None.
"""

from __future__ import annotations


def t_min(depth: int, rtt_s: float, body_bytes: int, down_kbit: float | None, handshakes: int = 1) -> float | None:
    """Seconds; None when the link has no rate (plain veth)."""
    if depth < 1 or handshakes < 0 or body_bytes < 0 or rtt_s < 0:
        raise ValueError(f"depth ≥ 1, handshakes, bytes and RTT ≥ 0: got {depth}, {handshakes}, {body_bytes}, {rtt_s}")
    if not down_kbit:
        return None
    return (handshakes + depth) * rtt_s + body_bytes * 8 / (down_kbit * 1000)
