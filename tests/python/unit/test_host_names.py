"""Hosts answered without the resolver (engine/host_names.py): `localhost` and `*.localhost` are this machine
(127.0.0.1, then ::1) whatever a resolver would say, IP literals are their own answer, and every other name is
asked of the resolver, which is injected here (a hostile one that answers every name with a public address)."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.address_policy import address_space_of, may_connect
from lanefetch.engine.host_names import AddrInfo, answered_here, is_localhost_name, is_this_machine, resolve

PUBLIC = "93.184.216.34"


class HostileResolver:
    """Answers every name with a public address, and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int, *, type: int = 0) -> Sequence[AddrInfo]:
        self.asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (PUBLIC, port))]


label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
subdomains = st.lists(label, min_size=0, max_size=4)


@given(subdomains, st.sampled_from(["localhost", "LOCALHOST", "LocalHost"]), st.booleans(),
       st.integers(min_value=1, max_value=65535))
async def test_localhost_names_are_loopback_and_never_reach_the_resolver(
        labels: list[str], tld: str, final_dot: bool, port: int) -> None:
    host = ".".join([*labels, tld]) + ("." if final_dot else "")
    resolver = HostileResolver()
    infos = await resolve(host, port, resolver)
    assert resolver.asked == []
    assert [(i[0], i[4][0], i[4][1]) for i in infos] == [
        (socket.AF_INET, "127.0.0.1", port), (socket.AF_INET6, "::1", port)]
    assert all(address_space_of(str(i[4][0])) == "loopback" for i in infos)
    # so a loopback page reaches them, and a private or public page reaches none of them
    assert all(may_connect("loopback", str(i[4][0])) for i in infos)
    assert not any(may_connect(space, str(i[4][0])) for i in infos for space in ("private", "public"))


@pytest.mark.parametrize("host", [
    "localhost.com", "localhost.example", "xlocalhost", "my-localhost", "localhost.localdomain",
    "foo.localhost.evil.example", "localhost..", "example.com"])
async def test_other_names_are_asked_of_the_resolver(host: str) -> None:
    assert not is_localhost_name(host)
    resolver = HostileResolver()
    infos = await resolve(host, 80, resolver)
    assert resolver.asked == [host]
    assert [i[4][0] for i in infos] == [PUBLIC]


@given(st.ip_addresses(), st.integers(min_value=1, max_value=65535), st.booleans())
async def test_an_ip_literal_is_its_own_answer(ip: object, port: int, bracketed: bool) -> None:
    literal = str(ip)
    host = f"[{literal}]" if bracketed and ":" in literal else literal
    resolver = HostileResolver()
    infos = await resolve(host, port, resolver)
    assert resolver.asked == []
    assert [(i[4][0], i[4][1]) for i in infos] == [(literal, port)]
    assert infos[0][0] == (socket.AF_INET6 if ":" in literal else socket.AF_INET)


def test_only_names_the_resolver_must_answer_are_left_to_it() -> None:
    assert answered_here("example.com", 443) is None
    assert answered_here("localhost", 443) is not None
    assert answered_here("::1", 443) is not None


@pytest.mark.parametrize(("host", "here"), [
    ("localhost", True), ("LOCALHOST.", True), ("a.b.localhost", True), ("127.0.0.1", True), ("127.8.9.10", True),
    ("::1", True), ("[::1]", True), ("localhost.example", False), ("10.0.0.1", False),
    ("[::2]", False), ("", False), ("example.com", False)])
def test_this_machine_is_a_localhost_name_or_a_loopback_address(host: str, here: bool) -> None:
    # As Chromium's net::IsLocalhost: what is "this machine" both for the codings offered (request.py) and for a
    # potentially trustworthy http URL (prefetch/field_profile.py).
    assert is_this_machine(host) is here
