"""Never weaker than the browser: a page may not make the helper reach a more private address space than its
own (the idea of Private Network Access). Checked on the resolved addresses, after DNS.

Theory of operation. Every address falls in one of three spaces, ranked loopback < private < public. The
space is decided by explicit ranges, not by `ipaddress.is_global`, which calls public several ranges that lead
into private space (site-local fec0::/10, NAT64 or 6to4 around a private IPv4, IPv4-translated ::ffff:0:a.b.c.d,
Teredo around a private server or client) and multicast. The ranges are those of the IANA IPv4 and IPv6
Special-Purpose Address Registries (every entry, with its RFC, in the tables below), plus multicast and the
deprecated site-local range. The most specific range that holds the address decides; an address in no range
is public for IPv4, and for IPv6 public only inside global unicast 2000::/3 (the rest of the IPv6 space is
reserved or unassigned, never a public host).

Some IPv6 ranges carry an IPv4 address inside (IPv4-mapped and -translated, NAT64, 6to4, Teredo): an IPv6
connection to them ends at, or is relayed to, that IPv4 host. Such an address is classified by the range and
by every IPv4 address it may carry, and the more private wins: 64:ff9b::a00:1 (NAT64 around 10.0.0.1) is
private, 2002:7f00:1:: (6to4 around 127.0.0.1) loopback.

The unspecified addresses (0.0.0.0 and ::) reach this machine when connected to (Linux), so they are loopback,
and so is the rest of 0.0.0.0/8 ("this network"). Everything a registry says is not globally reachable is
private; only what it marks globally reachable (or leaves to the embedded address) is public."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

AddressSpace = Literal["public", "private", "loopback"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_RANK: dict[str, int] = {"loopback": 0, "private": 1, "public": 2}

# How an IPv6 range carries IPv4 addresses: a function giving every IPv4 address the IPv6 address may lead to.
Embedded = Callable[[ipaddress.IPv6Address], list[ipaddress.IPv4Address]]


def _v4(bits: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(bits & 0xFFFFFFFF)


def _low32(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4-mapped, IPv4-translated and NAT64 /96: the last 32 bits."""
    return [_v4(int(ip))]


def _six_to_four(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """6to4 (RFC 3056): 2002:V4ADDR::/48, the IPv4 address in bits 16–47."""
    return [_v4(int(ip) >> 80)]


def _teredo(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Teredo (RFC 4380): the server's IPv4 in bits 32–63, the client's (bit-inverted) in the last 32."""
    return [_v4(int(ip) >> 64), _v4(~int(ip))]


def _nat64_local(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) holds a network-specific prefix of any RFC 6052 length
    the operator chose (/48, /56, /64 or /96 fit in it), unknown here: every reading the address can be is taken,
    and the caller lets the most private win. A reading of length L < 96 needs bits 64–71 (the "u" octet) and
    the suffix after the IPv4 zero (RFC 6052 §2.2); the /96 reading always applies."""
    n = int(ip)
    out = [_v4(n)]  # /96: bits 96–127
    for prefix in (48, 56, 64):
        suffix_start = prefix + 40  # 32 bits of IPv4 plus the 8-bit u octet
        if (n >> 56) & 0xFF or n & ((1 << (128 - suffix_start)) - 1):
            continue
        bits = 0
        pos = prefix
        for _ in range(4):  # four octets, skipping the u octet at bits 64–71
            if pos == 64:
                pos = 72
            bits = (bits << 8) | ((n >> (120 - pos)) & 0xFF)
            pos += 8
        out.append(_v4(bits))
    return out


@dataclass(frozen=True)
class Range:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    space: AddressSpace
    name: str
    rfc: str
    embedded: Embedded | None = None


def _r(net: str, space: AddressSpace, name: str, rfc: str, embedded: Embedded | None = None) -> Range:
    return Range(ipaddress.ip_network(net), space, name, rfc, embedded)


# IANA IPv4 Special-Purpose Address Registry, every entry; "public" where the registry says globally reachable.
IPV4_RANGES: tuple[Range, ...] = (
    _r("0.0.0.0/8", "loopback", "This network", "RFC 791 §3.2"),  # connecting to 0.0.0.0 reaches this host
    _r("0.0.0.0/32", "loopback", "This host on this network", "RFC 1122 §3.2.1.3"),
    _r("10.0.0.0/8", "private", "Private-Use", "RFC 1918"),
    _r("100.64.0.0/10", "private", "Shared Address Space (CGNAT)", "RFC 6598"),
    _r("127.0.0.0/8", "loopback", "Loopback", "RFC 1122 §3.2.1.3"),
    _r("169.254.0.0/16", "private", "Link Local", "RFC 3927"),
    _r("172.16.0.0/12", "private", "Private-Use", "RFC 1918"),
    _r("192.0.0.0/24", "private", "IETF Protocol Assignments", "RFC 6890 §2.1"),
    _r("192.0.0.0/29", "private", "IPv4 Service Continuity Prefix", "RFC 7335"),
    _r("192.0.0.8/32", "private", "IPv4 dummy address", "RFC 7600"),
    _r("192.0.0.9/32", "public", "Port Control Protocol Anycast", "RFC 7723"),
    _r("192.0.0.10/32", "public", "Traversal Using Relays around NAT Anycast", "RFC 8155"),
    _r("192.0.0.170/32", "private", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2"),
    _r("192.0.0.171/32", "private", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2"),
    _r("192.0.2.0/24", "private", "Documentation (TEST-NET-1)", "RFC 5737"),
    _r("192.31.196.0/24", "public", "AS112-v4", "RFC 7535"),
    _r("192.52.193.0/24", "public", "AMT", "RFC 7450"),
    _r("192.88.99.0/24", "private", "Deprecated (6to4 Relay Anycast)", "RFC 7526"),
    _r("192.168.0.0/16", "private", "Private-Use", "RFC 1918"),
    _r("192.175.48.0/24", "public", "Direct Delegation AS112 Service", "RFC 7534"),
    _r("198.18.0.0/15", "private", "Benchmarking", "RFC 2544"),
    _r("198.51.100.0/24", "private", "Documentation (TEST-NET-2)", "RFC 5737"),
    _r("203.0.113.0/24", "private", "Documentation (TEST-NET-3)", "RFC 5737"),
    _r("240.0.0.0/4", "private", "Reserved", "RFC 1112 §4"),
    _r("255.255.255.255/32", "private", "Limited Broadcast", "RFC 8190, RFC 919 §7"),
    # Not in the special-purpose registry: multicast (IPv4 Multicast Address Space Registry). No page's resource.
    _r("224.0.0.0/4", "private", "Multicast", "RFC 5771"),
)

# IANA IPv6 Special-Purpose Address Registry, every entry. Ranges whose registry entry says "N/A" for global
# reachability and that carry an IPv4 address are "public" here and take the embedded address's space.
IPV6_RANGES: tuple[Range, ...] = (
    _r("::1/128", "loopback", "Loopback Address", "RFC 4291"),
    _r("::/128", "loopback", "Unspecified Address", "RFC 4291"),  # like 0.0.0.0: reaches this host
    _r("::ffff:0:0/96", "public", "IPv4-mapped Address", "RFC 4291", _low32),
    _r("64:ff9b::/96", "public", "IPv4-IPv6 Translat.", "RFC 6052", _low32),
    _r("64:ff9b:1::/48", "private", "IPv4-IPv6 Translat. (local-use)", "RFC 8215", _nat64_local),
    _r("100::/64", "private", "Discard-Only Address Block", "RFC 6666"),
    _r("100:0:0:1::/64", "private", "Dummy IPv6 Prefix", "RFC 9780"),
    _r("2001::/23", "private", "IETF Protocol Assignments", "RFC 2928"),
    _r("2001::/32", "public", "TEREDO", "RFC 4380, RFC 8190", _teredo),
    _r("2001:1::1/128", "public", "Port Control Protocol Anycast", "RFC 7723"),
    _r("2001:1::2/128", "public", "Traversal Using Relays around NAT Anycast", "RFC 8155"),
    _r("2001:1::3/128", "public", "DNS-SD Service Registration Protocol Anycast", "RFC 9665"),
    _r("2001:2::/48", "private", "Benchmarking", "RFC 5180, RFC Errata 1752"),
    _r("2001:3::/32", "public", "AMT", "RFC 7450"),
    _r("2001:4:112::/48", "public", "AS112-v6", "RFC 7535"),
    _r("2001:10::/28", "private", "Deprecated (previously ORCHID)", "RFC 4843"),
    _r("2001:20::/28", "public", "ORCHIDv2", "RFC 7343"),
    _r("2001:30::/28", "public", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374"),
    _r("2001:db8::/32", "private", "Documentation", "RFC 3849"),
    _r("2002::/16", "public", "6to4", "RFC 3056", _six_to_four),
    _r("2620:4f:8000::/48", "public", "Direct Delegation AS112 Service", "RFC 7534"),
    _r("3fff::/20", "private", "Documentation", "RFC 9637"),
    _r("5f00::/16", "private", "Segment Routing (SRv6) SIDs", "RFC 9602"),
    _r("fc00::/7", "private", "Unique-Local", "RFC 4193, RFC 8190"),
    _r("fe80::/10", "private", "Link-Local Unicast", "RFC 4291"),
    # Not in the special-purpose registry (IPv6 Address Space Registry): site-local, deprecated but still routed
    # inside sites that use it; multicast; SIIT's IPv4-translated form ::ffff:0:a.b.c.d, which carries an IPv4.
    _r("fec0::/10", "private", "Site-Local (deprecated)", "RFC 3879"),
    _r("ff00::/8", "private", "Multicast", "RFC 4291 §2.7"),
    _r("::ffff:0:0:0/96", "public", "IPv4-translated Address", "RFC 2765 §2.1", _low32),
    # Deprecated IPv4-compatible ::a.b.c.d: a kernel with a sit tunnel may still carry it to that IPv4 host.
    _r("::/96", "private", "IPv4-compatible Address (deprecated)", "RFC 4291 §2.5.5.1", _low32),
)

_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")  # RFC 4291 §2.4; everything else in IPv6 is not a public host

# Most specific first: the first range that holds an address decides.
_V4 = sorted(IPV4_RANGES, key=lambda r: -r.network.prefixlen)
_V6 = sorted(IPV6_RANGES, key=lambda r: -r.network.prefixlen)


def _more_private(a: AddressSpace, b: AddressSpace) -> AddressSpace:
    return a if _RANK[a] <= _RANK[b] else b


def _space_v4(ip: ipaddress.IPv4Address) -> AddressSpace:
    for r in _V4:
        if ip in r.network:
            return r.space
    return "public"


def _space_v6(ip: ipaddress.IPv6Address) -> AddressSpace:
    for r in _V6:
        if ip in r.network:
            space = r.space
            if r.embedded is not None:
                for v4 in r.embedded(ip):
                    space = _more_private(space, _space_v4(v4))
            return space
    return "public" if ip in _GLOBAL_UNICAST else "private"


def address_space_of(address: str) -> AddressSpace:
    """The address space of an IP address (IPv6 may carry a %zone). Raises ValueError for anything else."""
    ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv4Address):
        return _space_v4(ip)
    return _space_v6(ip)


def may_connect(page_space: AddressSpace, target_address: str) -> bool:
    """A page may reach its own address space and anything more public, nothing more private."""
    return _RANK[address_space_of(target_address)] >= _RANK[page_space]
