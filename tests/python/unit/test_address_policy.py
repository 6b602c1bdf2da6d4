"""The address policy (engine/address_policy.py): every non-public range stays non-public whatever address in
it is drawn, every IPv6 form that carries an IPv4 address is at least as private as that address, and public
addresses stay public."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from lanefetch.engine.address_policy import (
    _RANK,
    IPV4_RANGES,
    IPV6_RANGES,
    AddressSpace,
    Range,
    address_space_of,
    may_connect,
)

NON_PUBLIC = [r for r in (*IPV4_RANGES, *IPV6_RANGES) if r.space != "public"]
# Public ranges that carry an IPv4 address take that address's space; the others are public through and through.
PUBLIC_PLAIN = [r for r in (*IPV4_RANGES, *IPV6_RANGES) if r.space == "public" and r.embedded is None]


def _nested_public(r: Range) -> list[Range]:
    """Public entries more specific than r (192.0.0.9/32 inside private 192.0.0.0/24): they override it."""
    return [p for p in PUBLIC_PLAIN + [x for x in IPV6_RANGES if x.embedded is not None]
            if p.network.version == r.network.version and p.network != r.network
            and p.network.subnet_of(r.network)]  # type: ignore[arg-type]


def _address_in(net: ipaddress.IPv4Network | ipaddress.IPv6Network, offset: int) -> str:
    return str(net[offset % net.num_addresses])


@pytest.mark.parametrize("r", NON_PUBLIC, ids=lambda r: f"{r.network} {r.name}")
@given(offset=st.integers(min_value=0, max_value=2**128))
def test_every_address_in_a_non_public_range_is_non_public(r: Range, offset: int) -> None:
    address = _address_in(r.network, offset)
    ip = ipaddress.ip_address(address)
    if any(ip in p.network for p in _nested_public(r)):
        return  # a public entry nested inside (the registry's own exceptions), tested below
    space = address_space_of(address)
    assert space != "public", f"{address} in {r.network} ({r.name}, {r.rfc}) came out public"
    assert _RANK[space] <= _RANK[r.space]


PRIVATE_V4 = [r for r in IPV4_RANGES if r.space != "public"]


def _embed(form: str, v4: int) -> list[str]:
    """The IPv6 addresses that carry v4 in each form the policy knows."""
    if form == "mapped":
        return [str(ipaddress.IPv6Address((0xFFFF << 32) | v4))]
    if form == "translated":
        return [str(ipaddress.IPv6Address((0xFFFF << 48) | v4))]
    if form == "compatible":
        return [str(ipaddress.IPv6Address(v4))] if v4 > 1 else []
    if form == "nat64":
        return [str(ipaddress.IPv6Address((0x64FF9B << 96) | v4))]
    if form == "nat64-local":  # RFC 6052 formats inside 64:ff9b:1::/48: /48, /56, /64, /96
        base = 0x0064FF9B0001 << 80
        o = v4.to_bytes(4, "big")
        out = [base | v4]
        out.append(base | (int.from_bytes(o[:2], "big") << 64) | (int.from_bytes(o[2:], "big") << 40))  # /48
        out.append(base | (o[0] << 64) | (int.from_bytes(o[1:], "big") << 32))  # /56
        out.append(base | (v4 << 24))  # /64
        return [str(ipaddress.IPv6Address(x)) for x in out]
    if form == "6to4":
        return [str(ipaddress.IPv6Address((0x2002 << 112) | (v4 << 80) | 1))]
    if form == "teredo-server":
        return [str(ipaddress.IPv6Address((0x20010000 << 96) | (v4 << 64) | 0x8000_0000_F7F6_F7F7))]  # client 8.9.8.8
    if form == "teredo-client":
        server = int(ipaddress.IPv4Address("198.41.0.4")) << 64
        return [str(ipaddress.IPv6Address((0x20010000 << 96) | server | (~v4 & 0xFFFFFFFF)))]
    raise AssertionError(form)


FORMS = ["mapped", "translated", "compatible", "nat64", "nat64-local", "6to4", "teredo-server", "teredo-client"]


@pytest.mark.parametrize("form", FORMS)
@given(data=st.data())
def test_an_ipv6_form_carrying_a_non_public_ipv4_is_non_public(form: str, data: st.DataObject) -> None:
    r = data.draw(st.sampled_from(PRIVATE_V4))
    v4 = ipaddress.IPv4Address(_address_in(r.network, data.draw(st.integers(min_value=0, max_value=2**32))))
    # the registry's public exceptions nested in a non-public range (192.0.0.9 and .10 in 192.0.0.0/24) are public
    # inside any form too: test_an_ipv6_form_carrying_a_public_ipv4_is_public covers them
    assume(not any(v4 in p.network for p in _nested_public(r)))
    inner = address_space_of(str(v4))
    for address in _embed(form, int(v4)):
        space = address_space_of(address)
        assert space != "public", f"{address} ({form} around {v4}) came out public"
        assert _RANK[space] <= _RANK[inner], f"{address} ({form} around {v4}, {inner}) came out {space}"


PUBLIC_V4 = ["8.8.8.8", "1.1.1.1", "9.9.9.9", "93.184.215.14", "151.101.1.69", "140.82.112.3", "198.41.0.4",
             "192.0.0.9", "192.0.0.10", "192.31.196.1", "192.52.193.1", "192.175.48.6", "100.63.255.255",
             "100.128.0.0", "172.15.255.255", "172.32.0.0", "11.0.0.1", "223.255.255.254", "1.0.0.0"]
PUBLIC_V6 = ["2606:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:82b::200e", "2620:fe::fe",
             "2001:1::1", "2001:1::2", "2001:1::3", "2001:3::1", "2001:4:112::1", "2001:20::1", "2001:30::1",
             "2620:4f:8000::1", "2400:cb00::1", "3ffe::1"]


@pytest.mark.parametrize("address", PUBLIC_V4 + PUBLIC_V6)
def test_known_public_addresses_stay_public(address: str) -> None:
    assert address_space_of(address) == "public"


@pytest.mark.parametrize("form", ["mapped", "translated", "nat64", "6to4", "teredo-server", "teredo-client"])
@given(v4=st.sampled_from(PUBLIC_V4))
def test_an_ipv6_form_carrying_a_public_ipv4_is_public(form: str, v4: str) -> None:
    for address in _embed(form, int(ipaddress.IPv4Address(v4))):
        assert address_space_of(address) == "public", address


@given(st.ip_addresses(v=4))
def test_public_ipv4_is_exactly_what_no_non_public_range_holds(ip: ipaddress.IPv4Address) -> None:
    most_specific = max((r for r in IPV4_RANGES if ip in r.network), key=lambda r: r.network.prefixlen, default=None)
    expected: AddressSpace = most_specific.space if most_specific else "public"
    assert address_space_of(str(ip)) == expected


# What Python's is_global got wrong, and a table of specific addresses across the registries.
@pytest.mark.parametrize(("address", "space"), [
    ("0.0.0.0", "loopback"), ("0.1.2.3", "loopback"), ("127.255.0.1", "loopback"), ("::", "loopback"),
    ("::1", "loopback"), ("10.0.0.1", "private"), ("100.64.0.1", "private"), ("169.254.169.254", "private"),
    ("172.31.255.255", "private"), ("192.0.0.8", "private"), ("192.0.0.170", "private"), ("192.0.2.1", "private"),
    ("192.88.99.1", "private"), ("192.168.0.1", "private"), ("198.19.255.255", "private"),
    ("198.51.100.7", "private"), ("203.0.113.9", "private"), ("224.0.0.251", "private"),
    ("239.255.255.250", "private"), ("240.0.0.1", "private"), ("255.255.255.255", "private"),
    ("fec0::1", "private"),  # site-local: is_global says True
    ("64:ff9b::a00:1", "private"), ("64:ff9b::7f00:1", "loopback"), ("64:ff9b::808:808", "public"),
    ("64:ff9b:1::c0a8:101", "private"), ("64:ff9b:1:7f00:1::", "loopback"),
    ("2002:c0a8:101::1", "private"), ("2002:7f00:1::", "loopback"), ("2002:808:808::1", "public"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.1.1.1", "private"), ("::ffff:8.8.8.8", "public"),
    ("::ffff:0:127.0.0.1", "loopback"), ("::ffff:0:192.168.1.1", "private"), ("::ffff:0:8.8.8.8", "public"),
    ("::127.0.0.1", "loopback"), ("::10.0.0.1", "private"),
    ("2001:0:7f00:1::", "loopback"),  # Teredo server 127.0.0.1
    ("2001:0:4136:e378:8000:63bf:f5ff:fefe", "private"),  # Teredo client ~f5ff:fefe = 10.0.1.1
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "private"),  # client 192.0.2.45 (documentation)
    ("2001:0:4136:e378:8000:63bf:f7f6:f7f7", "public"),  # client 8.9.8.8
    ("ff02::1", "private"), ("ff0e::1", "private"), ("fe80::1%eth0", "private"), ("fd12:3456::1", "private"),
    ("100::1", "private"), ("100:0:0:1::1", "private"), ("2001:2::1", "private"), ("2001:10::1", "private"),
    ("2001:db8::1", "private"), ("3fff::1", "private"), ("5f00::1", "private"), ("2001:5::1", "private"),
    ("1::1", "private"), ("4000::1", "private"), ("2001:4860:4860::8844", "public"),
])
def test_address_table(address: str, space: str) -> None:
    assert address_space_of(address) == space


def test_a_public_page_reaches_none_of_the_hidden_private_forms() -> None:
    for address in ["fec0::1", "64:ff9b::a00:1", "2002:a00:1::", "::ffff:0:a00:1", "2001:0:a00:1::", "ff02::1"]:
        assert not may_connect("public", address), address
        assert may_connect("private", address) or address_space_of(address) == "loopback"
    assert not may_connect("private", "2002:7f00:1::") and may_connect("loopback", "2002:7f00:1::")


def test_every_table_entry_names_its_rfc() -> None:
    for r in (*IPV4_RANGES, *IPV6_RANGES):
        assert r.rfc.startswith("RFC") and r.name, r
