"""Which TLS session a new connection to an origin offers: the sessions its earlier connections received (sans-I/O).

Theory of operation
- A browser resumes TLS sessions: a new connection to a server it spoke with before offers the session (a TLS 1.2
  ticket, RFC 5077; a TLS 1.3 pre-shared key, RFC 8446 §2.2). Over TLS 1.2 the resumed handshake takes one round
  trip instead of two; over TLS 1.3 it takes one either way but the server sends no certificate chain and no
  signature, a few kB of each connection's downlink. Without it the helper paid, beside the browser alone, a round
  trip per later connection to a TLS 1.2 origin (600 ms on a satellite link) and the chain again per connection.
- Partitioned as the browser partitions: one store per OriginPool, that is per (origin, address space, top-level
  site). A session received under one top-level site is never offered under another (a ticket names its client to
  the server, so it would link the two sites' visits).
- TLS 1.3 sessions are offered once (RFC 8446 §C.4: a client SHOULD NOT reuse a ticket, which would let an
  observer link its connections; BoringSSL, so Chromium, does the same): a session taken is forgotten, and never
  kept again when the connection that resumed it hands it back; that connection's own new ticket (a server sends
  one on every TLS 1.3 handshake, resumed ones too) is a new session. TLS 1.2 sessions are offered again, as the
  browser does (its handshake shows the certificates in the clear anyway: nothing is hidden by using one once).
- Fresh: a session past its lifetime (its creation time plus the server's lifetime hint) is dropped; the newest is
  offered first; at most CAPACITY kept.
- Only a session that holds a ticket is kept. A TLS 1.3 connection gets its tickets after its handshake (with the
  first answer), so a connection opened together with the first finds none and handshakes in full: no connection
  ever waits for a ticket.
The shell (pool.py) collects each connection's current session when another connection is about to handshake and
when the connection closes; transport.py offers the one taken here.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

CAPACITY = 4  # sessions kept per pool (Chromium's session cache keeps few per server too)
SPENT_MEMORY = 64  # ids of TLS 1.3 sessions already offered, remembered so a connection cannot hand one back


class Session(Protocol):
    """What is used of an ssl.SSLSession."""

    @property
    def id(self) -> bytes: ...
    @property
    def has_ticket(self) -> bool: ...
    @property
    def time(self) -> int: ...  # created, seconds since the epoch
    @property
    def timeout(self) -> int: ...  # its lifetime, seconds (the server's hint)


S = TypeVar("S", bound=Session)


@dataclass
class _Kept(Generic[S]):
    session: S
    reusable: bool  # TLS 1.2: may be offered again


def expired(session: Session, now: float) -> bool:
    """Is the session past its lifetime at `now` (seconds since the epoch)?"""
    return now >= session.time + session.timeout


class SessionTickets(Generic[S]):
    """The sessions one pool may offer to its next connections."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._kept: list[_Kept[S]] = []
        self._spent: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, session: S, now: float, reusable: bool) -> None:
        """A connection holds `session` (reusable: it is TLS 1.2's). Kept unless it holds no ticket, is past its
        lifetime, was offered already (TLS 1.3) or is kept already."""
        if not session.has_ticket or not session.id or expired(session, now) or session.id in self._spent:
            return
        if any(k.session.id == session.id for k in self._kept):
            return
        self._kept.append(_Kept(session, reusable))
        self._kept.sort(key=lambda k: k.session.time)
        del self._kept[: max(0, len(self._kept) - self.capacity)]  # the oldest go

    def take(self, now: float) -> S | None:
        """The session the next connection offers, or None (it handshakes in full)."""
        self._kept = [k for k in self._kept if not expired(k.session, now)]
        if not self._kept:
            return None
        newest = self._kept[-1]
        if not newest.reusable:
            self._kept.pop()
            self._spent[newest.session.id] = None
            while len(self._spent) > SPENT_MEMORY:
                self._spent.popitem(last=False)
        return newest.session
