"""What a helper's own log says it did for a page load, so a benchmark can tell a load that went through the helper
from one the browser made itself (Firefox falls back to a direct connection, silently, where the helper's proxy
closes a tunnel unanswered or the extension does not route a request).

The helper logs at DEBUG (LANEFETCH_LOG=DEBUG, LANEFETCH_LOG_FILE=FILE; bridge/host.py's format) one line per
request it fetched (engine/exchange.py: `URL: conn N pos ...`) and one per connection it opened (engine/connection.py:
`conn N to ORIGIN open: ... alpn PROTO`). The server's access log says what was asked of it; every answer it gave
that no fetched request of the helper accounts for was the browser's own."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from urllib.parse import urlsplit

# A request the helper failed is logged too, with no connection and nothing sent or received: not fetched.
_FETCHED = re.compile(r" DEBUG (\S+): conn \d+ pos \S+, queued \S+ sent \d+ first \d+ ")
_OPENED = re.compile(r" DEBUG conn \d+ to (\S+) open: .*, alpn (\S+)$")
# proxy/server.py: a CONNECT to an origin known to speak HTTP/2 is left to Firefox's own h2 through the tunnel.
_TUNNELLED_H2 = re.compile(r" DEBUG CONNECT (\S+) tunnelled: the origin speaks HTTP/2$")


def fetched(log: str) -> list[str]:
    """The URLs of the requests the helper fetched, an answer received (one per exchange, in log order)."""
    return [m.group(1) for line in log.splitlines() if (m := _FETCHED.search(line))]


def opened(log: str, host: str) -> list[str]:
    """The ALPN protocol of each connection the helper opened to `host` ("None": none negotiated)."""
    return [m.group(2) for line in log.splitlines()
            if (m := _OPENED.search(line)) and urlsplit(m.group(1)).hostname == host]


def tunnelled_h2(log: str, host: str) -> int:
    """How many CONNECTs to `host` the helper tunnelled untouched because the origin speaks HTTP/2 (what went
    through them is Firefox's own, by design)."""
    return sum(1 for line in log.splitlines()
               if (m := _TUNNELLED_H2.search(line)) and urlsplit(f"//{m.group(1)}").hostname == host)


def not_fetched(served: Iterable[str], urls: Iterable[str], host: str) -> list[str]:
    """The request targets (path and query, one per answer the server gave) that no request the helper fetched
    from `host` accounts for, each as often as it is unaccounted for."""
    by_helper = Counter(_target(u) for u in urls if urlsplit(u).hostname == host)
    left = Counter(served) - by_helper
    return sorted(left.elements())


def _target(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
