"""Firefox HTTPS acceleration refuses public suffixes as sites (issue 15): a CA constrained to `com` or `github.io`
would be trusted for every site under it. The Public Suffix List comes bundled with the helper (no network)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from lanefetch.proxy.ca_certs import Site, make_authority
from lanefetch.proxy.ca_sites import HttpsSites, ProfileState, public_suffix_problem

NOW = datetime.datetime.now(datetime.UTC)


@pytest.mark.parametrize("site", [
    Site("domain", "com"), Site("domain", "co.uk"), Site("domain", "github.io"), Site("host", "github.io"),
    Site("host", "com"), Site("domain", "com."), Site("domain", "foo.ck"),  # *.ck: every foo.ck is a suffix
    Site("domain", "xn--p1ai"), Site("domain", ""),
])
def test_public_suffixes_are_refused(site: Site) -> None:
    problem = public_suffix_problem(site)
    assert problem is not None and "public suffix" in problem and "every site under it" in problem


@pytest.mark.parametrize("site", [
    Site("domain", "example.com"), Site("domain", "bbc.co.uk"), Site("domain", "foo.github.io"),
    Site("host", "www.example.org"), Site("domain", "www.ck"), Site("domain", "127.0.0.1"), Site("host", "[::1]"),
])
def test_registrable_domains_hosts_and_addresses_are_taken(site: Site) -> None:
    assert public_suffix_problem(site) is None


def test_a_sync_refuses_them_with_the_reason_and_removes_a_ca_installed_for_one_before(tmp_path: Path) -> None:
    sites = HttpsSites(tmp_path / "data", None, home=tmp_path)  # no Firefox profile: nothing goes into NSS
    # A CA for co.uk left by an earlier version, loaded by the running browser (installed before it started).
    state = ProfileState(tmp_path / "data", None)
    earlier = state.write_authority(make_authority(Site("domain", "co.uk"), NOW))
    earlier.installed_at = 0.0
    state.save([earlier])
    key = state.dir / f"{earlier.serial}.key"
    assert key.exists()

    result = sites.sync([Site("domain", "co.uk"), Site("host", "github.io"), Site("domain", "example.com")])
    by_name = {s.site.name: s for s in result.sites}
    for name in ("co.uk", "github.io"):
        assert by_name[name].state == "failed"
        assert by_name[name].detail is not None and "public suffix" in by_name[name].detail
    assert by_name["example.com"].detail is not None and "public suffix" not in by_name["example.com"].detail
    assert not key.exists() and state.load() == []
    assert sites.authority_for("www.bbc.co.uk") is None and sites.authority_for("co.uk") is None

