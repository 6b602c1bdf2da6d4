"""Sans-I/O admission of the connections to the helper's proxy ports: how many may be open, per listener (one page
context: its port and its split port) and in total, so that no local program can exhaust the helper's file
descriptors or crowd out the browser.

Theory of operation. Any local program can connect to 127.0.0.1; only the extension's browser knows the session
secret. A connection is *unauthenticated* from accept until a head with the right credentials arrives, then
*authenticated* until it closes. The two are counted apart:

- Unauthenticated connections get small caps (per listener and in total). A new connection is always taken, and
  when a cap is full the oldest unauthenticated one is closed to make room: idle sockets a program leaves open
  only push each other out, and a browser connection, which sends its credentials in its first bytes, is
  authenticated long before it would be the oldest.
- Authenticated connections have their own caps, above what a browser opens (Firefox: 32 persistent connections
  per proxy, 900 in all). Beyond them the connection that just proved itself is refused (closed unanswered: the
  browser fails over to a direct connection); nothing open is taken away from a request in flight.

So the open connections never exceed the sum of the caps whatever is done to the ports, and unauthenticated
clients never take an authenticated connection's place."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

C = TypeVar("C", bound=Hashable)  # a connection

# A browser connects and sends its first head at once; 64 per listener covers Firefox opening all 32 connections it
# allows per proxy on both of a context's ports in one burst. 256 in total bounds what idle sockets can hold.
UNAUTHENTICATED_PER_LISTENER = 64
UNAUTHENTICATED_TOTAL = 256
# Firefox opens at most 900 connections in all (network.http.max-connections); a context's tunnels to an opted-in
# domain's many hosts can exceed 32 per proxy, so the per-listener cap is set well above that.
AUTHENTICATED_PER_LISTENER = 256
AUTHENTICATED_TOTAL = 900


@dataclass(frozen=True)
class Caps:
    unauthenticated_per_listener: int = UNAUTHENTICATED_PER_LISTENER
    unauthenticated_total: int = UNAUTHENTICATED_TOTAL
    authenticated_per_listener: int = AUTHENTICATED_PER_LISTENER
    authenticated_total: int = AUTHENTICATED_TOTAL


class Admission(Generic[C]):
    """Connections and listeners are any hashable keys; the shell closes what `opened` returns, and closes a
    connection `authenticated` refuses."""

    def __init__(self, caps: Caps | None = None) -> None:
        self.caps = caps or Caps()
        self._unauthenticated: OrderedDict[C, Hashable] = OrderedDict()  # connection → listener, oldest first
        self._authenticated: dict[C, Hashable] = {}

    def counts(self, listener: Hashable | None = None) -> tuple[int, int]:
        """(unauthenticated, authenticated) open, for one listener or in total."""
        if listener is None:
            return len(self._unauthenticated), len(self._authenticated)
        return (sum(1 for v in self._unauthenticated.values() if v == listener),
                sum(1 for v in self._authenticated.values() if v == listener))

    def opened(self, connection: C, listener: Hashable) -> list[C]:
        """A connection was accepted; returns the unauthenticated connections to close to make room for it."""
        evict: list[C] = []
        mine = [c for c, lst in self._unauthenticated.items() if lst == listener]
        while len(mine) >= self.caps.unauthenticated_per_listener:
            oldest = mine.pop(0)
            del self._unauthenticated[oldest]
            evict.append(oldest)
        while len(self._unauthenticated) >= self.caps.unauthenticated_total:
            oldest, _ = self._unauthenticated.popitem(last=False)
            evict.append(oldest)
        self._unauthenticated[connection] = listener
        return evict

    def authenticated(self, connection: C) -> bool:
        """The connection sent the right credentials: True if it may stay (now counted as authenticated); False if
        the authenticated caps are full (it is forgotten here; the shell closes it). True again for one already
        authenticated."""
        if connection in self._authenticated:
            return True
        listener = self._unauthenticated.pop(connection, None)
        if listener is None:
            return False  # closed to make room meanwhile
        in_listener = sum(1 for v in self._authenticated.values() if v == listener)
        if (len(self._authenticated) >= self.caps.authenticated_total
                or in_listener >= self.caps.authenticated_per_listener):
            return False
        self._authenticated[connection] = listener
        return True

    def closed(self, connection: C) -> None:
        self._unauthenticated.pop(connection, None)
        self._authenticated.pop(connection, None)
