"""Firefox HTTPS acceleration: the per-site CAs (name constraints present and critical, short validity, key files
readable by the user only), a leaf outside the constraints failing verification (cryptography's verifier and
OpenSSL through Python's ssl), install/removal in a real NSS store with certutil, and the helper's proxy
terminating TLS for a covered host, tunnelling others untouched, and refusing a bad upstream certificate."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import os
import socket
import ssl
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError
from lanefetch import doctor
from lanefetch.engine import Engine, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from lanefetch.engine.request import Origin
from lanefetch.proxy import ca_firefox
from lanefetch.proxy.ca_certs import CA_VALIDITY, Authority, Site, make_authority, make_leaf
from lanefetch.proxy.ca_sites import HttpsSites, remove_all, status
from lanefetch.proxy.server import ProxyListener, basic_credentials
from lanefetch.proxy.tls_terminator import TlsTerminator
from lanefetch.service import FetchService, ServiceConfig
from waits import until

NOW = datetime.datetime.now(datetime.UTC)
LANEFETCH = Path(sys.executable).parent / "lanefetch"
pytestmark = pytest.mark.skipif(not ca_firefox.certutil_available(), reason="certutil (libnss3-tools) not installed")


def verify(ca: Authority, leaf_cert: x509.Certificate, name: x509.DNSName | x509.IPAddress) -> None:
    verifier = PolicyBuilder().store(Store([ca.cert])).time(NOW).build_server_verifier(name)
    verifier.verify(leaf_cert, [])


def test_a_site_ca_is_name_constrained_short_lived_and_for_tls_servers_only() -> None:
    ca = make_authority(Site("domain", "example.com"), NOW)
    nc = ca.cert.extensions.get_extension_for_class(x509.NameConstraints)
    assert nc.critical
    permitted = {str(n.value) for n in nc.value.permitted_subtrees or []}
    assert permitted == {"example.com", "0.0.0.0/32", "::/128"}  # and no IP address anyone uses
    bc = ca.cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and bc.value.ca and bc.value.path_length == 0
    eku = ca.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
    assert ca.not_after - NOW <= CA_VALIDITY
    ip_ca = make_authority(Site("domain", "127.0.0.1"), NOW)
    permitted = {str(n.value) for n in
                 ip_ca.cert.extensions.get_extension_for_class(x509.NameConstraints).value.permitted_subtrees or []}
    assert permitted == {"invalid", "127.0.0.1/32"}


def test_leaves_inside_verify_and_leaves_outside_fail_with_cryptography_and_openssl(tmp_path: Path) -> None:
    ca = make_authority(Site("domain", "example.com"), NOW)
    good = make_leaf(ca, "www.example.com", NOW)
    verify(ca, good.cert, x509.DNSName("www.example.com"))
    assert good.cert.not_valid_after_utc <= ca.not_after
    with pytest.raises(ValueError, match="not part of"):
        make_leaf(ca, "evil.test", NOW)
    for host, name in (("evil.test", x509.DNSName("evil.test")),
                       ("example.com.evil.test", x509.DNSName("example.com.evil.test")),
                       ("10.0.0.1", x509.IPAddress(ipaddress.ip_address("10.0.0.1")))):
        outside = make_leaf(ca, host, NOW, check_coverage=False)  # what a thief of the key could mint
        with pytest.raises(VerificationError):
            verify(ca, outside.cert, name)
        assert _openssl_accepts(tmp_path, ca, outside, host) is False, host
    assert _openssl_accepts(tmp_path, ca, good, "www.example.com") is True


def _openssl_accepts(tmp_path: Path, ca: Authority, leaf: object, host: str) -> bool:
    """A real TLS handshake in memory: OpenSSL verifies the server's chain against the CA alone."""
    from lanefetch.proxy.tls_terminator import _load_chain

    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_chain(server, leaf.chain_pem, leaf.key)  # type: ignore[attr-defined]
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem())
    client = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname=host)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for side, out, into in ((c, c_out, s_in), (s, s_out, c_in)):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLCertVerificationError:
                return False
            except ssl.SSLError:
                if side is s:
                    continue
                return False
            into.write(out.read())
        try:
            c.do_handshake()
            return True
        except ssl.SSLWantReadError:
            continue
        except ssl.SSLCertVerificationError:
            return False
    return False


# -- a real NSS store ------------------------------------------------------------------------------------------

@pytest.fixture
def profile(tmp_path: Path) -> Path:
    p = tmp_path / "profile"
    p.mkdir()
    subprocess.run(["certutil", "-N", "--empty-password", "-d", f"sql:{p}"], check=True, capture_output=True)
    return p


def listed(profile: Path) -> str:
    return subprocess.run(["certutil", "-L", "-d", f"sql:{profile}"], check=True, capture_output=True,
                          text=True).stdout


def test_opt_in_installs_a_private_ca_trusted_after_a_restart_and_opt_out_removes_it(
        tmp_path: Path, profile: Path) -> None:
    root = tmp_path / "data" / "firefox-https"
    site = Site("domain", "127.0.0.1")
    running = HttpsSites(root, ca_firefox.RunningFirefox(profile, started=time.time() - 60), home=tmp_path)
    r = running.sync([site])
    assert [s.state for s in r.sites] == ["restart_needed"] and r.profiles == [profile]
    assert "runs in" in r.which
    assert running.authority_for("127.0.0.1") is None, "this Firefox has not loaded the CA: nothing is terminated"
    nick = running.state.load()[0].nickname
    assert nick in listed(profile) and "C,," in listed(profile)
    keys = list(root.rglob("*.key"))
    assert len(keys) == 1 and stat.S_IMODE(keys[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(keys[0].parent.stat().st_mode) == 0o700
    # Firefox restarted: the CA was there before it started.
    restarted = HttpsSites(root, ca_firefox.RunningFirefox(profile, started=time.time() + 1), home=tmp_path)
    assert [s.state for s in restarted.sync([site]).sites] == ["active"]
    assert restarted.authority_for("127.0.0.1") is not None
    assert restarted.authority_for("127.0.0.2") is None
    assert [x["site"] for x in status(root)] == ["domain:127.0.0.1"]
    assert all(status(root)[0]["profiles"].values())
    assert len(list(root.rglob("*.key"))) == 1, "no second CA while the first is fresh"
    # Turning the site off: out of the store, key deleted.
    restarted.sync([])
    assert "lanefetch" not in listed(profile) and not list(root.rglob("*.key"))
    assert restarted.authority_for("127.0.0.1") is None


def test_the_folders_made_for_ca_keys_are_the_users_alone_whatever_the_umask(tmp_path: Path, profile: Path) -> None:
    """Every folder the helper makes on the way to a CA's key and certificate is mode 0700, not only the last: under
    a umask of 0 the ones above it were world-writable, where another user could move the profile's folder aside
    and put one of theirs in its place, and have their own certificate imported into Firefox as the site's CA."""
    data = tmp_path / "data"
    root = data / "firefox-https"
    old = os.umask(0)
    try:
        running = HttpsSites(root, ca_firefox.RunningFirefox(profile, started=time.time() - 60), home=tmp_path)
        assert [s.state for s in running.sync([Site("domain", "127.0.0.1")]).sites] == ["restart_needed"]
    finally:
        os.umask(old)
    key = next(root.rglob("*.key"))
    made = [d for d in key.parents if d == data or data in d.parents]
    assert made and {str(d): stat.S_IMODE(d.stat().st_mode) for d in made} == {str(d): 0o700 for d in made}
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in key.parent.iterdir()} == {
        f.name: 0o600 for f in key.parent.iterdir()}


def test_a_ca_that_expired_while_firefox_ran_ends_no_connect(tmp_path: Path, profile: Path) -> None:
    """Firefox can run longer than a site's CA lives (30 days; its successor is trusted only after a restart). Once
    the CA it loaded has expired, no CONNECT of the site is ended with a leaf of it (Firefox would show a certificate
    error where it alone loads the site, or minting failed on a leaf that ends before it starts): they are
    tunnelled, as for a site not opted in."""
    clock = [time.time() - CA_VALIDITY.total_seconds() - 3600]  # the sync that made the CA: 30 days and 1 h ago
    sites = HttpsSites(root := tmp_path / "data" / "firefox-https",
                       ca_firefox.RunningFirefox(profile, started=clock[0] + 1), home=tmp_path, clock=lambda: clock[0])
    assert [s.state for s in sites.sync([Site("domain", "127.0.0.1")]).sites] == ["active"]
    assert sites.authority_for("127.0.0.1") is not None and list(root.rglob("*.key"))
    clock[0] = time.time()  # no sync since: the CA Firefox loaded is still the one
    assert sites.authority_for("127.0.0.1") is None
    terminator = TlsTerminator(sites)
    assert terminator.context_for("127.0.0.1") is None
    assert not terminator.covers(Origin("https", "127.0.0.1", 443))


def test_remove_all_undoes_everything(tmp_path: Path, profile: Path) -> None:
    root = tmp_path / "data" / "firefox-https"
    HttpsSites(root, ca_firefox.RunningFirefox(profile, time.time()), home=tmp_path).sync(
        [Site("domain", "example.com"), Site("host", "www.example.org")])
    assert listed(profile).count("lanefetch") == 2
    report = doctor.check_firefox_https(root.parent)
    assert report.status == "ok" and "example.com, www.example.org" in report.detail, report
    cli = subprocess.run([str(LANEFETCH), "firefox-https", "status", "--data-dir", str(root.parent)],
                         capture_output=True, text=True, check=True).stdout
    assert "2 local certificate authorities" in cli and str(profile) in cli and "host:www.example.org" in cli
    done = remove_all(root, tmp_path)
    assert len(done) == 2 and "lanefetch" not in listed(profile) and not list(root.rglob("*.key"))
    assert status(root) == []
    assert "not enabled" in doctor.check_firefox_https(root.parent).detail


def test_the_cli_adds_a_site_ca_to_a_profile_before_firefox_starts_and_the_helper_uses_that_one(
        tmp_path: Path, profile: Path) -> None:
    data = tmp_path / "data"
    root = data / "firefox-https"
    HttpsSites(root, ca_firefox.RunningFirefox(profile, 0.0), home=tmp_path).sync([Site("domain", "example.com")])

    def add(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(LANEFETCH), "firefox-https", "add", *argv, "--data-dir", str(data)],
                              capture_output=True, text=True, check=False)

    done = add("--scope", "host", "--profile", str(profile), "10.0.0.2")
    assert done.returncode == 0 and "from its next start" in done.stdout, done
    assert listed(profile).count("lanefetch") == 2, "the profile's other site is kept"
    # The Firefox started after the add: the helper it starts finds the CA active and mints from it, no new one.
    started = HttpsSites(root, ca_firefox.RunningFirefox(profile, time.time() + 1), home=tmp_path)
    states = started.sync([Site("domain", "example.com"), Site("host", "10.0.0.2")]).sites
    assert [s.state for s in states] == ["active", "active"]
    assert started.authority_for("10.0.0.2") is not None and len(list(root.rglob("*.key"))) == 2
    assert add("--profile", str(profile), "com").returncode == 1, "a public suffix is refused as by the popup"
    assert add("10.0.0.3").returncode == 2, "no profile named"  # (argparse's own refusal)
    assert add("--profile", str(profile), "a b").returncode == 2


def test_a_site_added_on_the_cli_with_a_final_dot_is_the_site_without_it(tmp_path: Path, profile: Path) -> None:
    """`firefox-https add example.com.` names the site example.com, as the extension names a page's site (it drops
    the dot). Kept with the dot, its CA covered no host (hosts are compared without theirs) while the CLI said it was
    installed, and the extension's example.com replaced it by a new CA that needed another restart."""
    data = tmp_path / "data"
    done = subprocess.run([str(LANEFETCH), "firefox-https", "add", "--profile", str(profile), "example.com.",
                           "--data-dir", str(data)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done
    started = HttpsSites(data / "firefox-https", ca_firefox.RunningFirefox(profile, time.time() + 1), home=tmp_path)
    installed = started.state.load()
    assert [s.state for s in started.sync([Site("domain", "example.com")]).sites] == ["active"]
    assert started.state.load() == installed, "the Firefox started after the add uses the CA it added"
    assert started.authority_for("www.example.com.") is not None
    assert listed(profile).count("lanefetch") == 1


def test_without_the_running_firefox_every_profile_of_the_user_is_used(tmp_path: Path) -> None:
    base = tmp_path / ".mozilla" / "firefox"
    for name in ("a.default", "b.work"):
        (base / name).mkdir(parents=True)
        subprocess.run(["certutil", "-N", "--empty-password", "-d", f"sql:{base / name}"], check=True)
    (base / "profiles.ini").write_text("[Profile0]\nName=a\nIsRelative=1\nPath=a.default\n\n"
                                       "[Profile1]\nName=b\nIsRelative=1\nPath=b.work\n")
    r = HttpsSites(tmp_path / "data", None, home=tmp_path).sync([Site("domain", "example.com")])
    assert sorted(r.profiles) == [base / "a.default", base / "b.work"] and "every Firefox profile" in r.which
    assert all("lanefetch" in listed(p) for p in r.profiles)


def _fake_proc(tmp_path: Path, program: str) -> tuple[Path, Path]:
    """A /proc with process 4242 running `program` and holding nothing open yet; returns it and its fd folder."""
    proc = tmp_path / "proc"
    (proc / "4242" / "fd").mkdir(parents=True)
    (proc / "4242" / "exe").symlink_to(f"/usr/lib/{program}/{program}")
    (proc / "4242" / "stat").write_text("4242 (" + program + ") S" + " 0" * 18 + " 500 0 0\n")
    (proc / "stat").write_text("cpu 1 2 3\nbtime 1700000000\n")
    return proc, proc / "4242" / "fd"


def test_the_running_firefox_is_found_once_it_opens_its_certificate_store(tmp_path: Path, profile: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    proc, fds = _fake_proc(tmp_path, "firefox-esr")
    assert ca_firefox.parent_firefox(4242, proc) is None, "the store is not open yet"
    opener = threading.Timer(0.3, lambda: (fds / "31").symlink_to(profile / "cert9.db"))
    opener.start()
    try:
        found = ca_firefox.parent_firefox(4242, proc, wait_s=20.0)
    finally:
        opener.join()
    assert found is not None, "the Firefox parent was not found within 20 s of opening its certificate store"
    assert found.profile == profile
    assert found.started == 1700000000 + 500 / os.sysconf("SC_CLK_TCK")

    other, _ = _fake_proc(tmp_path / "other", "python3")

    def no_wait(seconds: float) -> None:
        raise AssertionError(f"a parent that is not Firefox is not waited for (asked to sleep {seconds} s)")

    monkeypatch.setattr(ca_firefox.time, "sleep", no_wait)
    assert ca_firefox.parent_firefox(4242, other, wait_s=20.0) is None


def test_a_sync_finds_the_firefox_unknown_at_start_and_installs_into_its_profile(tmp_path: Path,
                                                                                  profile: Path) -> None:
    running = ca_firefox.RunningFirefox(profile, time.time() - 60)
    sites = HttpsSites(tmp_path / "data", None, home=tmp_path, find=lambda: running)
    r = sites.sync([Site("domain", "example.com")])
    assert r.profiles == [profile] and "runs in" in r.which
    assert [s.state for s in r.sites] == ["restart_needed"]
    assert "lanefetch" in listed(profile)


def test_opting_out_removes_the_ca_made_for_every_profile_before_the_running_firefox_was_found(
        tmp_path: Path, profile: Path) -> None:
    """The first sync came before Firefox opened its store: the CA went into every profile (the all-profiles
    state). Once the Firefox is found its own profile's state is used, and turning the site off must still take
    the earlier CA out of the store and delete its key."""
    base = tmp_path / ".mozilla" / "firefox"
    base.mkdir(parents=True)
    (base / "profiles.ini").write_text(f"[Profile0]\nName=a\nIsRelative=0\nPath={profile}\n")
    found: list[ca_firefox.RunningFirefox | None] = [None]
    root = tmp_path / "data"
    sites = HttpsSites(root, None, home=tmp_path, find=lambda: found[0])
    site = Site("domain", "example.com")
    assert [s.state for s in sites.sync([site]).sites] == ["restart_needed"]
    assert listed(profile).count("lanefetch") == 1
    found[0] = ca_firefox.RunningFirefox(profile, time.time() - 60)
    sites.sync([site])
    sites.sync([])  # the user turned the site off
    assert "lanefetch" not in listed(profile), listed(profile)
    assert not list(root.rglob("*.key"))


def test_a_wildcard_site_is_refused_and_the_other_sites_of_its_sync_are_kept_track_of(
        tmp_path: Path, profile: Path) -> None:
    """`*.example.org` is no site (a wildcard can be no name constraint): it is refused with a reason, and the CAs
    made for the other sites of the same sync are recorded, so turning them off takes them out of the store."""
    root = tmp_path / "data"
    sites = HttpsSites(root, ca_firefox.RunningFirefox(profile, time.time() - 60), home=tmp_path)
    result = sites.sync([Site("domain", "example.com"), Site("domain", "*.example.org"), Site("host", "*")])
    by_name = {s.site.name: s for s in result.sites}
    assert by_name["example.com"].state == "restart_needed"
    assert by_name["*.example.org"].state == "failed" and by_name["*"].state == "failed"
    assert listed(profile).count("lanefetch") == 1
    sites.sync([])
    assert "lanefetch" not in listed(profile) and not list(root.rglob("*.key"))


# -- the proxy terminating TLS ---------------------------------------------------------------------------------

class Quiet:
    async def proxied(self, context_id: str, request: FetchRequest) -> None: ...
    async def failed(self, request: FetchRequest, error: FetchError) -> None: ...
    async def timing(self, request: FetchRequest, report: TimingReport, response: object = None) -> None: ...


async def _https_server(ca: Authority, host: str) -> tuple[asyncio.Server, int, list[str]]:
    leaf = make_leaf(ca, host, NOW, check_coverage=False)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    from lanefetch.proxy.tls_terminator import _load_chain
    _load_chain(ctx, leaf.chain_pem, leaf.key)
    seen: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readuntil(b"\r\n\r\n")
            seen.append(line.split(b"\r\n")[0].decode())
            body = b"hello over tls"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, host, 0, ssl=ctx)
    return server, server.sockets[0].getsockname()[1], seen


@pytest.fixture
async def setting(tmp_path: Path, profile: Path) -> AsyncIterator[dict[str, object]]:
    upstream_ca = make_authority(Site("domain", "127.0.0.1"), NOW)  # the origin's own (test) CA
    rogue_ca = make_authority(Site("domain", "127.0.0.1"), NOW)  # trusted by nobody
    (tmp_path / "upstream-ca.pem").write_bytes(upstream_ca.cert_pem())
    good, good_port, good_seen = await _https_server(upstream_ca, "127.0.0.1")
    bad, bad_port, _ = await _https_server(rogue_ca, "127.0.0.1")
    sites = HttpsSites(tmp_path / "data", ca_firefox.RunningFirefox(profile, time.time() - 5), home=tmp_path)
    sites.sync([Site("domain", "127.0.0.1")])
    sites.firefox = ca_firefox.RunningFirefox(profile, time.time() + 1)  # "restarted"
    assert [s.state for s in sites.sync([Site("domain", "127.0.0.1")]).sites] == ["active"]
    engine = Engine(EngineConfig(ca_file=str(tmp_path / "upstream-ca.pem")))
    listener = ProxyListener(engine, Page(address_space="loopback", top_site="https://127.0.0.1"), "s" * 24, Quiet(),
                             "c1", tls=TlsTerminator(sites))
    port = await listener.start()
    lanefetch_ca = tmp_path / "lanefetch-ca.pem"
    auth = sites.authority_for("127.0.0.1")
    assert auth is not None
    lanefetch_ca.write_bytes(auth.cert_pem())
    yield {"port": port, "good": good_port, "bad": bad_port, "seen": good_seen, "lanefetch_ca": lanefetch_ca,
           "upstream_ca": tmp_path / "upstream-ca.pem"}
    await listener.close()
    await engine.aclose()
    for s in (good, bad):
        s.close()


async def _connect(port: int, target: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    auth = base64.b64decode(basic_credentials("s" * 24).split()[1]).decode()
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Basic "
                 f"{base64.b64encode(auth.encode()).decode()}\r\n\r\n".encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(1024), 20)
    return reader, writer, answer


async def test_covered_hosts_are_terminated_with_a_lanefetch_leaf_and_fetched_by_the_engine(
        setting: dict[str, object]) -> None:
    reader, writer, answer = await _connect(setting["port"], f"127.0.0.1:{setting['good']}")  # type: ignore[arg-type]
    assert answer.startswith(b"HTTP/1.1 200")
    ctx = ssl.create_default_context(cafile=str(setting["lanefetch_ca"]))
    await writer.start_tls(ctx, server_hostname="127.0.0.1")
    tls = writer.get_extra_info("ssl_object")
    assert tls.version() in ("TLSv1.2", "TLSv1.3") and tls.selected_alpn_protocol() in (None, "http/1.1")
    peer = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
    assert peer.issuer.rfc4514_string().startswith("O=lanefetch") or "lanefetch" in peer.issuer.rfc4514_string()
    writer.write(f"GET /hello HTTP/1.1\r\nHost: 127.0.0.1:{setting['good']}\r\n\r\n".encode())
    data = b""
    while b"hello over tls" not in data:
        chunk = await asyncio.wait_for(reader.read(4096), 20)
        assert chunk, data
        data += chunk
    assert data.startswith(b"HTTP/1.1 200") and setting["seen"] == ["GET /hello HTTP/1.1"]
    # Another host on this tunnel is refused: the tunnel serves the host it was certified for.
    writer.write(b"GET /x HTTP/1.1\r\nHost: 127.0.0.2\r\n\r\n")
    assert (await asyncio.wait_for(reader.read(4096), 20)).startswith(b"HTTP/1.1 421")
    writer.close()


async def test_hosts_not_covered_are_tunnelled_untouched(setting: dict[str, object], tmp_path: Path) -> None:
    own_ca = make_authority(Site("domain", "127.0.0.2"), NOW)
    (tmp_path / "own-ca.pem").write_bytes(own_ca.cert_pem())
    server, port, _ = await _https_server(own_ca, "127.0.0.2")
    for trusted, ok in ((setting["lanefetch_ca"], False), (tmp_path / "own-ca.pem", True)):
        _, writer, answer = await _connect(setting["port"], f"127.0.0.2:{port}")  # type: ignore[arg-type]
        assert answer.startswith(b"HTTP/1.1 200")
        ctx = ssl.create_default_context(cafile=str(trusted))
        if ok:  # the origin's own certificate reaches the client
            await writer.start_tls(ctx, server_hostname="127.0.0.2")
        else:
            with pytest.raises(ssl.SSLCertVerificationError):  # never a lanefetch leaf for a host not opted in
                await writer.start_tls(ctx, server_hostname="127.0.0.2")
        writer.close()
    server.close()


async def test_a_bad_upstream_certificate_is_never_accepted(setting: dict[str, object]) -> None:
    reader, writer, answer = await _connect(setting["port"], f"127.0.0.1:{setting['bad']}")  # type: ignore[arg-type]
    assert answer.startswith(b"HTTP/1.1 200")
    await writer.start_tls(ssl.create_default_context(cafile=str(setting["lanefetch_ca"])), server_hostname="127.0.0.1")
    writer.write(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{setting['bad']}\r\n\r\n".encode())
    assert await asyncio.wait_for(reader.read(4096), 30) == b"", "closed without an answer"
    writer.close()
    # The next CONNECT to that origin is closed unanswered: Firefox goes direct and shows the certificate error.
    _, writer2, answer2 = await _connect(setting["port"], f"127.0.0.1:{setting['bad']}")  # type: ignore[arg-type]
    assert answer2 == b""
    writer2.close()


# -- the protocol through the real host process ------------------------------------------------------------

@pytest.fixture
def home_profile(tmp_path: Path) -> Path:
    base = tmp_path / ".mozilla" / "firefox"
    (base / "p.default").mkdir(parents=True)
    subprocess.run(["certutil", "-N", "--empty-password", "-d", f"sql:{base / 'p.default'}"], check=True)
    (base / "profiles.ini").write_text("[Profile0]\nName=p\nIsRelative=1\nPath=p.default\n")
    return base


async def test_the_extension_sets_the_opted_in_sites_through_the_host(tmp_path: Path, home_profile: Path) -> None:
    from lanefetch import protocol
    from test_bridge import running_host

    base = home_profile
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    async with running_host(env, exit_within=20) as h:
        await h.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"})
        assert "https_sites" in (await h.recv())["capabilities"]
        await h.send({"type": "https_sites", "sites": [{"scope": "domain", "name": "Example.com"}], "nonce": "n1"})
        state = await h.recv()
        assert protocol.check(state, "ToExtension") is None, state
        assert state["nonce"] == "n1" and state["profiles"] == [str(base / "p.default")]
        assert [(s["name"], s["state"]) for s in state["sites"]] == [("example.com", "restart_needed")]
        assert "lanefetch domain example.com" in listed(base / "p.default")
        assert list((tmp_path / "data" / "lanefetch" / "firefox-https").rglob("*.key"))
        await h.send({"type": "https_sites", "sites": []})
        assert (await h.recv())["sites"] == []
        assert "lanefetch" not in listed(base / "p.default")


# -- proxy mode's upstream over HTTP/2 ---------------------------------------------------------------------------

class Timings(Quiet):
    def __init__(self) -> None:
        self.reports: dict[str, TimingReport] = {}

    async def timing(self, request: FetchRequest, report: TimingReport, response: object = None) -> None:
        self.reports[request.url] = report


@pytest.mark.skipif(not Path("/usr/sbin/nginx").exists() and not Path("/usr/bin/nginx").exists(),
                    reason="needs nginx")
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the lab that runs (and stops) nginx")
async def test_proxy_upstream_speaks_h2_to_an_h2_origin(tmp_path: Path, profile: Path) -> None:
    """Firefox speaks HTTP/1.1 to the helper inside the terminated tunnel; the helper's engine (ProxyService's,
    from service.py, as the host composes it) speaks h2 to an origin that offers it: several requests on the
    tunnel, bodies exact, all on ONE upstream h2 connection (nginx's log: HTTP/2.0, one connection serial)."""
    from bench.netlab import Lab
    from bench.servers import start_nginx
    from lanefetch.proxy.service import ProxyService
    from tls_pki import make_test_pki

    (tmp_path / "pki").mkdir()
    pki = make_test_pki(tmp_path / "pki", "upstream h2 CA", ips=("127.0.0.1",))
    docroot = tmp_path / "www"
    docroot.mkdir()
    files = {f"/f{i}.js": os.urandom(1000 + 9000 * i) for i in range(8)}
    for path, data in files.items():
        (docroot / path.lstrip("/")).write_bytes(data)
    observer = Timings()
    # What the proxy learns of origins is kept in the host's cache database (a FetchService of its own here)
    host_cache = FetchService(ServiceConfig(cache_dir=tmp_path / "cache"))
    svc = ProxyService(EngineConfig(ca_file=str(pki / "ca.pem")), observer, https_data=tmp_path / "data",
                       records=host_cache.cache_for)
    sites = HttpsSites(tmp_path / "data", ca_firefox.RunningFirefox(profile, time.time() - 5), home=tmp_path)
    sites.sync([Site("domain", "127.0.0.1")])
    sites.firefox = ca_firefox.RunningFirefox(profile, time.time() + 1)  # "restarted": the site's CA is trusted
    assert [s.state for s in sites.sync([Site("domain", "127.0.0.1")]).sites] == ["active"]
    svc.https, svc.tls = sites, TlsTerminator(sites)
    lanefetch_ca = tmp_path / "lanefetch-ca.pem"
    auth = sites.authority_for("127.0.0.1")
    assert auth is not None
    lanefetch_ca.write_bytes(auth.cert_pem())
    with Lab() as lab:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        srv = start_nginx(lab.root, docroot, "127.0.0.1", port, tls=(pki / "srv.pem", pki / "srv.key"), http2=True)
        listener = await svc.open("c1", Page(address_space="loopback", top_site="https://127.0.0.1"))
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         f"Proxy-Authorization: {basic_credentials(svc.secret)}\r\n\r\n".encode())
            assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)).startswith(b"HTTP/1.1 200")
            await writer.start_tls(ssl.create_default_context(cafile=str(lanefetch_ca)), server_hostname="127.0.0.1")
            for path, data in files.items():  # one after another on the tunnel, as a browser connection does
                writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
                assert head.startswith(b"HTTP/1.1 200"), head
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                assert await asyncio.wait_for(reader.readexactly(length), 20) == data, path

            async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
                r, w = await asyncio.open_connection("127.0.0.1", listener.port)
                w.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"Proxy-Authorization: {basic_credentials(svc.secret)}\r\n\r\n".encode())
                assert (await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 20)).startswith(b"HTTP/1.1 200")
                return r, w

            # The origin is known to speak h2 now, but this page's tunnel is still open: a new one is ended here too.
            _, second = await connect()
            await asyncio.wait_for(second.start_tls(ssl.create_default_context(cafile=str(lanefetch_ca)),
                                                    server_hostname="127.0.0.1"), 20)
            second.close()
            writer.close()
            await until(lambda: not any(listener._ending.values()), "the ended tunnels closing", seconds=10)
            # None is open: the next CONNECT is tunnelled untouched, Firefox's own h2 to the origin (its own
            # certificate reaches the client, h2 offered by ALPN); no lanefetch leaf.
            reader, writer = await connect()
            direct = ssl.create_default_context(cafile=str(pki / "ca.pem"))
            direct.set_alpn_protocols(["h2", "http/1.1"])
            await asyncio.wait_for(writer.start_tls(direct, server_hostname="127.0.0.1"), 20)
            assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2"
            writer.close()
        finally:
            await svc.aclose()
        # A later session remembers the origin as h2 (its pool starts from that), but its first page of the origin
        # is ended here as before: only a handshake of this session's own makes its CONNECTs tunnelled.
        later = ProxyService(EngineConfig(ca_file=str(pki / "ca.pem")), Timings(), https_data=tmp_path / "data",
                             records=host_cache.cache_for)
        later.https, later.tls = sites, TlsTerminator(sites)
        page = Page(address_space="loopback", top_site="https://127.0.0.1")
        try:
            assert await later.fetcher.speaks_h2(f"https://127.0.0.1:{port}/", page), "the origin's h2 not remembered"
            listener = await later.open("c1", page)
            r, w = await asyncio.open_connection("127.0.0.1", listener.port)
            w.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"Proxy-Authorization: {basic_credentials(later.secret)}\r\n\r\n".encode())
            assert (await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 20)).startswith(b"HTTP/1.1 200")
            # The lanefetch leaf answers: ended here, not tunnelled
            await asyncio.wait_for(w.start_tls(ssl.create_default_context(cafile=str(lanefetch_ca)),
                                               server_hostname="127.0.0.1"), 20)
            w.close()
        finally:
            await later.aclose()
            await host_cache.aclose()
        log = srv.access_log(wait_for=len(files), timeout=10)
    assert len(log) == len(files)
    assert {rec.request.rsplit(" ", 1)[1] for rec in log} == {"HTTP/2.0"}, "the helper spoke h2 upstream"
    assert len({rec.connection for rec in log}) == 1, "one upstream h2 connection for the whole tunnel"
    conns = [r.connection for r in observer.reports.values()]
    assert len(conns) == len(files) and all(c is not None and c.protocol == "h2" for c in conns)
