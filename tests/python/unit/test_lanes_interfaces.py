"""Lanes' interface input and routing without a network: the CLI's --interface argument, and which split requests
go over the default route alone (targets on this machine)."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest
from lanefetch.lanes import interfaces
from lanefetch.lanes.interfaces import Binding, Interface, InterfacePolicy, PolicyStore, choose, parse_interface_arg
from lanefetch.lanes.splitting_fetcher import _on_this_machine


def test_interface_arg_with_weight() -> None:
    assert parse_interface_arg("eth0") == ("eth0", None)
    assert parse_interface_arg("wlan0:2.5") == ("wlan0", 2.5)


@pytest.mark.parametrize("weight", ["0", "-1", "nan", "inf", "1e999", "-inf", "x", ""])
def test_interface_arg_refuses_a_weight_not_above_0_or_not_finite(weight: str) -> None:
    """An infinite weight (as `interfaces set --weight` and the policy file refuse it) made the split's fair share of
    a lane without estimates inf/inf: int(NaN) raised out of the schedule and the download failed."""
    with pytest.raises(ValueError, match="interface weight"):
        parse_interface_arg(f"eth0:{weight}")


@pytest.mark.parametrize("host", ["localhost", "localhost.", "app.localhost", "app.localhost.", "127.0.0.1", "::1"])
def test_a_target_on_this_machine_splits_over_the_default_route(host: str) -> None:
    """A host written with its trailing dot is the same host: `localhost.` was split over the interface lanes, whose
    bound sockets cannot reach loopback."""
    assert _on_this_machine(host)


@pytest.mark.parametrize("host", ["example.org", "example.org.", "localhost.example", "10.0.0.1", "2001:db8::1"])
def test_a_target_elsewhere_uses_the_lanes(host: str) -> None:
    assert not _on_this_machine(host)


@pytest.mark.parametrize("text", [
    '{"interfaces": {"eth0": {"daily_cap_bytes": 1e999}}}',
    '{"interfaces": {"eth0": {"daily_cap_bytes": Infinity}}}',
    '{"usage_day": "2026-01-01", "usage": {"eth0": 1e999}}',
])
def test_a_policy_file_with_an_infinite_count_is_a_clear_error(tmp_path: Path, text: str) -> None:
    """JSON's 1e999 (or Python's Infinity) reads as an infinite float, and int() of it raised OverflowError, which
    neither the helper's lane setup nor the options page expect: the split request (or the page) failed with an
    internal error instead of the helper saying the file is unreadable and going on without it."""
    path = tmp_path / "interfaces.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="cannot read the interface policy"):
        PolicyStore.load(path)


@pytest.mark.parametrize("addresses", [("fe80::1c2:3ff:fe04:506",), ("169.254.17.3",), ("169.254.17.3", "fe80::1")])
def test_an_interface_with_only_link_local_addresses_has_no_lane(tmp_path: Path, addresses: tuple[str, ...]) -> None:
    """An interface whose DHCP failed (169.254.x.x) or that only has its IPv6 link-local address reaches no server
    on the Internet, yet it counted as having an address: it was chosen as a lane (listed 'yes'), and bound by
    source address a 169.254 source went out of the default route, where no answer comes back."""
    store = PolicyStore(tmp_path / "interfaces.json")
    iface = Interface("wlan0", 3, True, False, addresses)
    assert store.why_not(iface, allow_metered=False) == "no address"
    assert choose([], store, allow_metered=False, found=[iface]) == []
    binding = Binding(iface, "source address")
    assert binding.source_for(socket.AF_INET) is None
    assert binding.source_for(socket.AF_INET6) is None


def test_an_interface_with_a_routable_address_beside_link_local_ones_carries_a_lane(tmp_path: Path) -> None:
    iface = Interface("eth1", 2, True, False, ("169.254.1.1", "192.168.1.20", "fe80::1", "2001:db8::20"))
    assert PolicyStore(tmp_path / "interfaces.json").why_not(iface, allow_metered=False) is None
    binding = Binding(iface, "source address")
    assert binding.source_for(socket.AF_INET) == "192.168.1.20"
    assert binding.source_for(socket.AF_INET6) == "2001:db8::20"


def _capped_store(path: Path, today: list[str], monkeypatch: pytest.MonkeyPatch) -> PolicyStore:
    monkeypatch.setattr(interfaces, "_today", lambda: today[0])
    store = PolicyStore(path)
    store.set_policy("wwan0", InterfacePolicy(daily_cap_bytes=1000))
    store.count("wwan0", 1000)
    store.save()
    return store


def test_the_daily_count_survives_the_date_going_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Just after midnight the time zone moved west (travel) or the clock was set back: the date went back a day, and
    every write and count started that 'new' day's counts at 0, so a metered interface at its cap carried another
    day's worth. The counts on file for the day just after today go on counting."""
    today = ["2026-03-02"]
    path = tmp_path / "interfaces.json"
    wwan = Interface("wwan0", 4, True, False, ("10.64.1.2",))
    store = _capped_store(path, today, monkeypatch)
    today[0] = "2026-03-01"
    assert store.used_today("wwan0") == 1000
    assert store.why_not(wwan, allow_metered=True) == "daily cap of 1000 bytes reached"
    other = PolicyStore.load(path)
    assert other.why_not(wwan, allow_metered=True) == "daily cap of 1000 bytes reached"
    other.count("wwan0", 10)
    other.save()
    store.count("wwan0", 5)
    store.write(store.snapshot())
    assert PolicyStore.load(path).used_today("wwan0") == 1015
    today[0] = "2026-03-03"  # the next day after that: afresh
    assert PolicyStore.load(path).used_today("wwan0") == 0


def test_a_count_from_a_clock_far_ahead_starts_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock set a year ahead and then corrected must not keep an interface at its cap for a year."""
    today = ["2027-03-02"]
    path = tmp_path / "interfaces.json"
    _capped_store(path, today, monkeypatch)
    today[0] = "2026-03-02"
    store = PolicyStore.load(path)
    assert store.used_today("wwan0") == 0
    store.count("wwan0", 7)
    store.save()
    assert PolicyStore.load(path).usage == {"wwan0": 7}


def test_a_write_keeps_the_files_mode_and_reaches_the_disk_before_it_replaces_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each write replaces the policy file with a new one: made under the umask, a file the user restricted (0600)
    became readable again; and not synced first, a power loss could leave an empty file in its place."""
    path = tmp_path / "interfaces.json"
    store = PolicyStore(path)
    store.set_policy("wwan0", InterfacePolicy(daily_cap_bytes=1000))
    store.save()
    path.chmod(0o600)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    store.count("wwan0", 10)
    store.save()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert synced, "the new file was not synced before it replaced the old one"
    assert PolicyStore.load(path).used_today("wwan0") == 10


def test_writers_without_a_lock_never_share_a_half_written_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows (no fcntl) with the lock unavailable: a second writer running while the first is between writing
    its new file and putting it in place neither truncates that file nor renames it away (the first writer's
    write used to fail, its counts lost)."""
    path = tmp_path / "interfaces.json"
    PolicyStore(path).save()
    monkeypatch.setitem(sys.modules, "fcntl", None)  # import fails, as on Windows

    class NoLock:
        LK_LOCK, LK_UNLCK = 1, 0

        @staticmethod
        def locking(fd: int, mode: int, n: int) -> None:
            """A file system where locks do nothing."""

    monkeypatch.setitem(sys.modules, "msvcrt", NoLock)
    second = PolicyStore(path)
    second.count("wlan0", 5)
    real_fsync = os.fsync
    entered: list[int] = []

    def fsync(fd: int) -> None:
        if not entered:
            entered.append(fd)
            second.save()  # the other writer, between this writer's write and its replace
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    first = PolicyStore(path)
    first.set_policy("wwan0", InterfacePolicy(daily_cap_bytes=1000))
    first.save()
    assert PolicyStore.load(path).policy("wwan0").daily_cap_bytes == 1000
    assert not list(tmp_path.glob("*.tmp*")), "a writer's file was left behind"


def test_on_windows_a_write_holds_the_lock_file_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without fcntl the write still holds a lock (msvcrt's), so a helper's counts and the CLI's policy change
    never replace each other."""
    path = tmp_path / "interfaces.json"
    monkeypatch.setitem(sys.modules, "fcntl", None)
    calls: list[int] = []

    class Msvcrt:
        LK_LOCK, LK_UNLCK = 1, 0

        @staticmethod
        def locking(fd: int, mode: int, n: int) -> None:
            calls.append(mode)

    monkeypatch.setitem(sys.modules, "msvcrt", Msvcrt)
    store = PolicyStore(path)
    store.count("wlan0", 5)
    store.save()
    assert calls == [Msvcrt.LK_LOCK, Msvcrt.LK_UNLCK]
    assert PolicyStore.load(path).used_today("wlan0") == 5
