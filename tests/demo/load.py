"""What one demo page load measured."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Load:
    """One page load as the browser, nginx and the link saw it."""

    page: dict[str, Any]  # the driver's JSON: load_s, wall_s, resources, time_origin, records (lanefetch's)
    requests: int  # subresource requests nginx answered
    connections: int  # nginx connections that carried them
    pipelined: int  # of those requests, how many arrived pipelined (nginx's $pipe)
    up_bytes: int  # bytes the emulated link carried towards the server (requests, ACKs)
    down_bytes: int  # and towards the browser
    drops: int  # packets the link's drop-tail queues dropped (both directions): each costs a retransmission
