"""Lanes' interface input and routing without a network: the CLI's --interface argument, and which split requests
go over the default route alone (targets on this machine)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lanefetch.lanes.interfaces import PolicyStore, parse_interface_arg
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
