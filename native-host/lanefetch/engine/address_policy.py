"""Never weaker than the browser: a page may not make the helper reach a more private address space
than its own (the idea of Private Network Access). Checked on the resolved addresses, after DNS."""

from __future__ import annotations

import ipaddress
from typing import Literal

AddressSpace = Literal["public", "private", "loopback"]

_RANK: dict[str, int] = {"loopback": 0, "private": 1, "public": 2}

# Ranges a public page must not reach besides what ipaddress calls private: CGNAT and benchmarking nets.
_EXTRA_PRIVATE = [ipaddress.ip_network("100.64.0.0/10"), ipaddress.ip_network("198.18.0.0/15")]


def address_space_of(address: str) -> AddressSpace:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_unspecified:
        return "loopback"
    if ip.is_global and not any(ip in net for net in _EXTRA_PRIVATE if net.version == ip.version):
        return "public"
    # private, link-local, unique-local, multicast, reserved: all treated as non-public
    return "private"


def may_connect(page_space: AddressSpace, target_address: str) -> bool:
    """A page may reach its own address space and anything more public, nothing more private."""
    return _RANK[address_space_of(target_address)] >= _RANK[page_space]
