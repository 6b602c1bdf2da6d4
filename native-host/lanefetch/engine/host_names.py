"""How a URL's host becomes the addresses the helper may connect to: which hosts are answered here, without
asking the system's resolver, and the thin shell that asks it for the rest.

Theory of operation. Two kinds of host never go to the resolver:

- an IP literal (IPv6 with or without brackets) is its own answer; asking getaddrinfo for it only costs a thread
  hop (milliseconds on a busy machine, in front of every connection);
- `localhost` and every name under `.localhost`, with or without a fully qualified name's final dot, are this
  machine: 127.0.0.1, then ::1. RFC 6761 §6.3 lets name libraries answer them so and never send them to DNS, and
  Chromium does exactly that (net::IsLocalHostname), Firefox likewise. Asking the
  resolver was weaker than the browser both ways: a resolver that answers `foo.localhost` with a public address
  (a hostile or misconfigured DNS server, a search domain appended by glibc) would have the helper fetch from
  the Internet what the browser fetches from this machine, as if it were the loopback page's own; and a
  resolver that does not know `*.localhost` (glibc with /etc/hosts and DNS only) failed a page the browser
  loads. The browser's address space for such a host is loopback (extension/src/sites/address-space.ts), and
  so is every address answered here, so the address policy (address_policy.py) judges them as it always did.

Everything else is asked of the resolver, injected (`Resolve`: loop.getaddrinfo in the helper), so a test can
play a hostile one. The answer is in getaddrinfo's shape; which of its addresses a page may reach is the
caller's to decide (address_policy.may_connect), after this."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

SockAddr = tuple[object, ...]  # (address, port) for IPv4; IPv6 adds flow info and scope id
AddrInfo = tuple[int, int, int, str, SockAddr]  # one getaddrinfo entry

# getaddrinfo(host, port, type=SOCK_STREAM), as asyncio's loop offers it.
Resolve = Callable[..., Awaitable[Sequence[AddrInfo]]]

# Where a localhost name leads, in the order they are tried: IPv4 first, as Chromium's resolver answers it.
LOCALHOST_ADDRESSES = ("127.0.0.1", "::1")


def is_localhost_name(host: str) -> bool:
    """`localhost` or a name under `.localhost` (case-insensitive, one final dot allowed), as Chromium's
    net::IsLocalHostname decides it."""
    name = host.lower().removesuffix(".")
    return name == "localhost" or name.endswith(".localhost")


def is_this_machine(host: str) -> bool:
    """A URL's host that names this machine, as Chromium's net::IsLocalhost decides it: a localhost name or a
    loopback address (IPv6 in brackets or not)."""
    if is_localhost_name(host):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _entry(address: str, port: int) -> AddrInfo:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))


def answered_here(host: str, port: int) -> list[AddrInfo] | None:
    """getaddrinfo's answer for a host that needs no resolver (an IP literal, a localhost name); None for a name
    the resolver must be asked about."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        if is_localhost_name(host):
            return [_entry(a, port) for a in LOCALHOST_ADDRESSES]
        return None
    return [_entry(str(ip), port)]


async def resolve(host: str, port: int, ask: Resolve) -> Sequence[AddrInfo]:
    """Every address `host` has, answered here where it can be, else by `ask` (the resolver's errors pass
    through as they are)."""
    here = answered_here(host, port)
    if here is not None:
        return here
    return await ask(host, port, type=socket.SOCK_STREAM)
