"""The system proxy the helper reports in hello (bridge/system_proxy.py): found in the environment, GNOME's
settings (a fake gsettings) and macOS's / Windows' settings (injected), named without credentials, and a
gsettings that is missing, fails or hangs is no proxy found, within its time limit. A setting that asks only for
WPAD counts where the WPAD server is found (an injected lookup: never this machine's DNS), which is looked up only
then, kept a few minutes (an injected clock) and waited for a bounded time."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from lanefetch import protocol
from lanefetch.bridge import system_proxy
from lanefetch.bridge.system_proxy import Found, WpadLookup

DESKTOP = {"XDG_CURRENT_DESKTOP": "GNOME"}


def no_settings() -> Mapping[str, str]:
    return {}


def gsettings(mode: str | None, autoconfig_url: str | None = "") -> system_proxy.Runner:
    def run(argv: Sequence[str]) -> str | None:
        assert list(argv[:3]) == ["gsettings", "get", "org.gnome.system.proxy"], argv
        value = {"mode": mode, "autoconfig-url": autoconfig_url}[argv[3]]
        return None if value is None else f"'{value}'\n"
    return run


def never_run(argv: Sequence[str]) -> str | None:
    raise AssertionError(f"ran {argv}")


def found_at(host: str | None) -> system_proxy.Wpad:
    return lambda: host


def detect(env: Mapping[str, str], platform: str, system: system_proxy.Callable[[], Mapping[str, str]],
           run: system_proxy.Runner) -> str | None:
    """Where detect says a proxy is set (a WPAD server answering where one is looked up: the tests of the
    settings; tests of WPAD's own below)."""
    return system_proxy.detect(env, platform, system, run, wpad=found_at("wpad.corp.example")).where


@pytest.mark.parametrize("name", ["http_proxy", "https_proxy", "all_proxy", "HTTPS_PROXY", "ALL_PROXY"])
def test_a_proxy_in_the_environment_is_found_and_named_without_credentials(name: str) -> None:
    found = detect({name: "http://alice:s3cret@proxy.corp.example:3128/"}, "linux", no_settings, gsettings("none"))
    assert found == f"proxy.corp.example:3128 ({name} in the environment)"
    assert "s3cret" not in found and "alice" not in found


def test_other_environment_proxies() -> None:
    assert detect({"all_proxy": "socks5://[2001:db8::1]:1080"}, "linux", no_settings, never_run) == \
        "[2001:db8::1]:1080 (all_proxy in the environment)"
    assert detect({"http_proxy": "proxy.lan:8080"}, "linux", no_settings, never_run) == \
        "proxy.lan:8080 (http_proxy in the environment)"
    # Chromium's PAC URL from the environment: a proxy set, though which one only the script says
    assert detect({"auto_proxy": "http://wpad.lan/proxy.pac"}, "linux", no_settings, never_run) == \
        "auto_proxy in the environment"
    assert detect({"SOCKS_SERVER": "socks.lan:1080"}, "linux", no_settings, never_run) == \
        "socks.lan:1080 (SOCKS_SERVER in the environment)"
    # A value that does not parse is still a proxy set
    assert detect({"https_proxy": "http://proxy:99999999"}, "linux", no_settings, never_run) == \
        "https_proxy in the environment"


def test_no_proxy_set_or_only_exclusions_or_other_schemes() -> None:
    env = {"no_proxy": "localhost,.corp", "ftp_proxy": "http://ftp-proxy:21", "http_proxy": "  ", "PATH": "/bin"}
    assert detect({**env, **DESKTOP}, "linux", no_settings, gsettings("none")) is None
    assert detect(DESKTOP, "linux", no_settings, gsettings(None)) is None, "no gsettings (or it failed): none found"


@pytest.mark.parametrize(("mode", "url", "said"), [
    ("manual", "", "GNOME's proxy settings (manual)"),
    ("auto", "http://u:pw@wpad.corp/proxy.pac?t=1",
     "a proxy auto-configuration script, http://wpad.corp/proxy.pac (GNOME's proxy settings)"),
    # No script named: Chromium looks WPAD up
    ("auto", "", "proxy auto-detection, WPAD (GNOME's proxy settings)"),
    # The address not read (gsettings failed that time): the automatic configuration still counts
    ("auto", None, "automatic proxy configuration (GNOME's proxy settings)"),
    ("none", "http://wpad.corp/proxy.pac", None)])
def test_gnome_settings(mode: str, url: str | None, said: str | None) -> None:
    for session in ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "DBUS_SESSION_BUS_ADDRESS"):
        assert detect({session: "x"}, "linux", no_settings, gsettings(mode, url)) == said


def test_no_desktop_session_no_gsettings() -> None:
    # Nothing to read there, and dconf would write its files under the helper's cache directory
    assert detect({"PATH": "/usr/bin"}, "linux", no_settings, never_run) is None


def test_macos_and_windows_settings_not_gsettings() -> None:
    def corp() -> Mapping[str, str]:
        return {"http": "http://bob:pw@proxy.corp:8080", "ftp": "ftp://x"}

    for platform in ("darwin", "win32"):
        assert detect({}, platform, corp, never_run) == "proxy.corp:8080 (the system's proxy settings)"
        assert detect({}, platform, lambda: {"ftp": "ftp://x"}, scutil(SCUTIL_NONE)) is None
        assert detect({"https_proxy": "p:1"}, platform, corp, never_run) == "p:1 (https_proxy in the environment)"

    def unreadable() -> Mapping[str, str]:
        raise OSError("registry")
    assert detect({}, "win32", unreadable, never_run) is None


SCUTIL_NONE = """<dictionary> {
  ExceptionsList : <array> {
    0 : *.local
    1 : 169.254/16
  }
  FTPPassive : 1
  HTTPEnable : 0
}
"""


def scutil(output: str | None) -> system_proxy.Runner:
    def run(argv: Sequence[str]) -> str | None:
        assert list(argv) == ["scutil", "--proxy"]
        return output
    return run


@pytest.mark.parametrize(("settings", "said"), [
    ("ProxyAutoConfigEnable : 1\n  ProxyAutoConfigURLString : http://u:pw@wpad.corp/proxy.pac?key=secret\n",
     "a proxy auto-configuration script, http://wpad.corp/proxy.pac (macOS's proxy settings)"),
    ("ProxyAutoDiscoveryEnable : 1\n", "proxy auto-detection, WPAD (macOS's proxy settings)"),
    ("SOCKSEnable : 1\n  SOCKSPort : 1080\n  SOCKSProxy : socks.corp\n", "socks.corp:1080 (macOS's proxy settings)"),
    ("ProxyAutoConfigEnable : 0\n  ProxyAutoDiscoveryEnable : 0\n  SOCKSEnable : 0\n  SOCKSProxy : socks.corp\n",
     None),
    ("__SCOPED__ : <dictionary> {\n    en0 : <dictionary> {\n      ProxyAutoDiscoveryEnable : 1\n    }\n  }\n",
     None)])
def test_macos_automatic_configuration_and_socks(settings: str, said: str | None) -> None:
    # What urllib does not read of macOS's settings (its _scproxy reads HTTP, HTTPS and FTP only): `scutil --proxy`
    # says the same dictionary Chromium reads (SCDynamicStoreCopyProxies), the global one, not the scoped ones.
    output = SCUTIL_NONE.replace("  FTPPassive : 1\n", "  " + settings)
    assert detect({}, "darwin", no_settings, scutil(output)) == said
    assert detect({}, "darwin", no_settings, scutil(None)) is None, "no scutil, or it failed: none found"


def test_what_is_said_fits_the_hello() -> None:
    found = detect({"https_proxy": "http://" + "a" * 600 + ".example:1"}, "linux", no_settings, never_run)
    assert found is not None and len(found) <= system_proxy.MAX_NAMED
    hello = protocol.hello(protocol.PROTOCOL_VERSION, system_proxy=found)
    assert hello["system_proxy"] == found and protocol.check(hello, "ToExtension") is None
    assert "system_proxy" not in protocol.hello(protocol.PROTOCOL_VERSION)
    assert "system_proxy" not in protocol.hello(protocol.PROTOCOL_VERSION + 1, system_proxy=found)


def test_run_bounded_missing_failing_and_hanging_commands() -> None:
    assert system_proxy.run_bounded(["/nonexistent/gsettings"]) is None
    assert system_proxy.run_bounded([sys.executable, "-c", "print('manual')"]) == "manual\n"
    assert system_proxy.run_bounded([sys.executable, "-c", "import sys; sys.exit(1)"]) is None
    # A hang ends at the limit (no clock asserted: the command would sleep far longer than the test's timeout)
    assert system_proxy.run_bounded([sys.executable, "-c", "import time; time.sleep(600)"], timeout=0.5) is None


KIOSLAVERC = "[Proxy Settings]\nProxyType={kind}\nhttpProxy={http}\nProxy Config Script={pac}\nNoProxyFor=localhost\n"


def kde_home(tmp_path: Path, text: str, where: str = ".config") -> dict[str, str]:
    (tmp_path / where).mkdir(parents=True, exist_ok=True)
    (tmp_path / where / "kioslaverc").write_text(text)
    return {"HOME": str(tmp_path), "XDG_CURRENT_DESKTOP": "KDE", "KDE_SESSION_VERSION": "6"}


@pytest.mark.parametrize(("kind", "said"), [
    ("1", "proxy.corp.example:3128 (KDE's proxy settings)"),
    ("2", "a proxy auto-configuration script, http://wpad.corp.example/proxy.pac (KDE's proxy settings)"),
    ("3", "proxy auto-detection, WPAD (KDE's proxy settings)"),
    ("0", None)])
def test_kde_settings(tmp_path: Path, kind: str, said: str | None) -> None:
    # Chromium on KDE reads kioslaverc, not GNOME's settings (which say none here)
    env = kde_home(tmp_path, KIOSLAVERC.format(kind=kind, http="http://alice:pw@proxy.corp.example 3128",
                                               pac="http://bob:pw@wpad.corp.example/proxy.pac?t=secret"))
    assert detect(env, "linux", no_settings, gsettings("none")) == said


def test_kde_settings_in_the_environment_and_the_files_chromium_reads(tmp_path: Path) -> None:
    # ProxyType 4: the proxy is in the environment variable named there, whatever its name
    env = kde_home(tmp_path, KIOSLAVERC.format(kind="4", http="CORP_PROXY", pac=""))
    assert detect(env, "linux", no_settings, gsettings("none")) is None
    assert detect({**env, "CORP_PROXY": "http://proxy.corp:8080"}, "linux", no_settings, gsettings("none")) == \
        "proxy.corp:8080 (KDE's proxy settings: CORP_PROXY)"
    # Set system-wide (XDG_CONFIG_DIRS), the user's own file over it; KDEHOME instead of both
    system = tmp_path / "xdg"
    system.mkdir()
    (system / "kioslaverc").write_text("[Proxy Settings]\nProxyType[$i]=3\n")
    env = {"HOME": str(tmp_path / "nobody"), "DESKTOP_SESSION": "kde-plasma",
           "XDG_CONFIG_DIRS": f"/nonexistent:{system}"}
    assert detect(env, "linux", no_settings, gsettings("none")) == "proxy auto-detection, WPAD (KDE's proxy settings)"
    user = kde_home(tmp_path, "[General]\nProxyType=1\n[Proxy Settings]\nProxyType=0\n")
    assert detect({**env, **user}, "linux", no_settings, gsettings("none")) is None
    kde4 = kde_home(tmp_path / "k", "[Proxy Settings]\nProxyType=1\n", "share/config")
    assert detect({**env, **user, "KDEHOME": kde4["HOME"]}, "linux", no_settings, gsettings("none")) == \
        "KDE's proxy settings (manual)"
    # Not read outside a KDE session (nor on GNOME, where Chromium reads gsettings)
    user = kde_home(tmp_path, "[Proxy Settings]\nProxyType=1\n")
    assert detect({**user, "KDE_FULL_SESSION": "true"}, "linux", no_settings, gsettings("none")) == \
        "KDE's proxy settings (manual)"
    assert detect({**user, "XDG_CURRENT_DESKTOP": "GNOME"}, "linux", no_settings, gsettings("none")) is None


def connection(flags: int) -> bytes:
    """Internet Settings\\Connections' DefaultConnectionSettings: a version, a counter, then the flags."""
    return bytes([0x46, 0, 0, 0, 7, 0, 0, 0, flags, 0, 0, 0]) + bytes(20)


@pytest.mark.parametrize(("values", "said"), [
    ({"AutoConfigURL": "http://u:pw@wpad.corp/proxy.pac", "DefaultConnectionSettings": connection(0x05)},
     "a proxy auto-configuration script, http://wpad.corp/proxy.pac (Windows' proxy settings)"),
    # "Automatically detect settings" (Chromium then looks WPAD up)
    ({"DefaultConnectionSettings": connection(0x09)}, "proxy auto-detection, WPAD (Windows' proxy settings)"),
    ({"AutoDetect": 1}, "proxy auto-detection, WPAD (Windows' proxy settings)"),
    ({"DefaultConnectionSettings": connection(0x01), "AutoDetect": 1, "AutoConfigURL": ""}, None),
    ({"DefaultConnectionSettings": b"\x46", "AutoDetect": "1"}, None),
    # The script named in the connection's settings only (flag 0x04), or not even there
    ({"DefaultConnectionSettings": connection(0x05)[:12] + bytes(4) + (5).to_bytes(4, "little") + b"<loc>"
      + (20).to_bytes(4, "little") + b"http://pac.corp/x.js" + bytes(8)},
     "a proxy auto-configuration script, http://pac.corp/x.js (Windows' proxy settings)"),
    ({"DefaultConnectionSettings": connection(0x05)[:14]},
     "a proxy auto-configuration script (Windows' proxy settings)"),
    ({}, None)])
def test_windows_automatic_configuration(values: dict[str, object], said: str | None) -> None:
    # What urllib does not read of Windows' Internet Settings (it reads ProxyEnable and ProxyServer): what Chromium
    # reads too (WinHttpGetIEProxyConfigForCurrentUser)
    settings = system_proxy.windows_automatic(values.get)
    assert detect({}, "win32", lambda: settings, never_run) == said


def looked_up(host: str | None) -> tuple[system_proxy.Wpad, list[None]]:
    calls: list[None] = []

    def wpad() -> str | None:
        calls.append(None)
        return host
    return wpad, calls


WINDOWS_WPAD = {"DefaultConnectionSettings": connection(0x09)}  # Windows' default: "Automatically detect settings"


@pytest.mark.parametrize("host", [None, "wpad.corp.example"])
def test_wpad_alone_counts_only_where_the_wpad_server_is_found(tmp_path: Path, host: str | None) -> None:
    # Windows' default, GNOME's and KDE's auto-detection, macOS's Auto Proxy Discovery: each a proxy only where
    # `wpad` resolves (the browser then fetches its script), named with the server found
    kde = kde_home(tmp_path, KIOSLAVERC.format(kind="3", http="", pac=""))
    macos = SCUTIL_NONE.replace("  FTPPassive : 1\n", "  ProxyAutoDiscoveryEnable : 1\n")
    for env, platform, system, run, where in [
            ({}, "win32", lambda: system_proxy.windows_automatic(WINDOWS_WPAD.get), never_run, "Windows'"),
            (DESKTOP, "linux", no_settings, gsettings("auto", ""), "GNOME's"),
            (kde, "linux", no_settings, gsettings("none"), "KDE's"),
            ({}, "darwin", no_settings, scutil(macos), "macOS's")]:
        wpad, calls = looked_up(host)
        found = system_proxy.detect(env, platform, system, run, wpad=wpad)
        assert len(calls) == 1
        assert found == (Found(f"proxy auto-detection, WPAD ({where} proxy settings)", host) if host else Found(None))


def test_wpad_is_not_looked_up_where_no_setting_asks_for_it_or_another_proxy_counts(tmp_path: Path) -> None:
    def never_looked_up() -> str | None:
        raise AssertionError("looked wpad up")
    pac = {"AutoConfigURL": "http://pac.corp/x.pac", **WINDOWS_WPAD}  # a script named: it counts, WPAD or not
    assert system_proxy.detect({}, "win32", lambda: system_proxy.windows_automatic(pac.get), never_run,
                               wpad=never_looked_up) == \
        Found("a proxy auto-configuration script, http://pac.corp/x.pac (Windows' proxy settings)")
    assert system_proxy.detect({"https_proxy": "p:1"}, "win32", lambda: {"autodetect": "on"}, never_run,
                               wpad=never_looked_up) == Found("p:1 (https_proxy in the environment)")
    assert system_proxy.detect({}, "win32", no_settings, never_run, wpad=never_looked_up) == Found(None)
    assert system_proxy.detect(DESKTOP, "linux", no_settings, gsettings("none"), wpad=never_looked_up) == Found(None)
    # GNOME asks for WPAD, KDE's settings (read too, on the safe side) set a proxy: that one counts, no lookup
    kde = kde_home(tmp_path, "[Proxy Settings]\nProxyType=1\n")
    session = {**kde, "DBUS_SESSION_BUS_ADDRESS": "unix:x"}
    assert system_proxy.detect(session, "linux", no_settings, gsettings("auto", ""), wpad=never_looked_up) == \
        Found("KDE's proxy settings (manual)")


def test_the_browsers_own_auto_detection_has_wpad_looked_up_whatever_the_system_says() -> None:
    wpad, calls = looked_up("wpad.corp.example")
    assert system_proxy.detect({}, "linux", no_settings, never_run, wpad=wpad, browser_auto_detect=True) == \
        Found(None, "wpad.corp.example")
    assert system_proxy.detect({"https_proxy": "p:1"}, "linux", no_settings, never_run, wpad=wpad,
                               browser_auto_detect=True) == Found("p:1 (https_proxy in the environment)",
                                                                  "wpad.corp.example")
    assert len(calls) == 2
    assert system_proxy.detect({}, "linux", no_settings, never_run, wpad=found_at(None), browser_auto_detect=True) \
        == Found(None)


def test_the_wpad_server_fits_the_hello_and_the_system_proxy_message() -> None:
    hello = protocol.hello(protocol.PROTOCOL_VERSION, system_proxy="proxy auto-detection, WPAD (x)",
                           wpad="wpad.corp.example")
    assert hello["wpad"] == "wpad.corp.example" and protocol.check(hello, "ToExtension") is None
    told = protocol.system_proxy(None, "w" * 253)
    assert told == {"type": "system_proxy", "wpad": "w" * 253} and protocol.check(told, "ToExtension") is None
    assert protocol.system_proxy(None, None) == {"type": "system_proxy"}
    assert protocol.check({"type": "auto_detect", "on": True}, "ToHost") is None


def test_the_lookup_is_overridden_for_tests_and_named_printably() -> None:
    assert system_proxy.resolve_wpad({system_proxy.TEST_WPAD_ENV: ""}) is None
    assert system_proxy.resolve_wpad({system_proxy.TEST_WPAD_ENV: "wpad.test.example."}) == "wpad.test.example"
    assert system_proxy.resolve_wpad({system_proxy.TEST_WPAD_ENV: "wpad\x1b[31m.evil"}) is None


def test_the_lookup_is_kept_a_few_minutes_and_made_again_after() -> None:
    now = [1000.0]
    answers = ["wpad.a.example", None]
    calls: list[None] = []

    def resolve() -> str | None:
        calls.append(None)
        return answers[len(calls) - 1]
    lookup = WpadLookup(resolve, clock=lambda: now[0], recheck=300.0, limit=30.0)
    assert lookup() == "wpad.a.example"
    now[0] += 299.0
    assert lookup() == "wpad.a.example" and len(calls) == 1, "kept: the network is not asked every 10 s"
    now[0] += 1.0
    assert lookup() is None and len(calls) == 2, "asked again after recheck: the server went away"


def test_a_lookup_that_does_not_answer_in_time_is_none_found_and_its_late_answer_is_kept() -> None:
    release = threading.Event()
    calls: list[None] = []

    def resolve() -> str | None:
        calls.append(None)
        assert release.wait(30), "never released"
        return "wpad.slow.example"
    lookup = WpadLookup(resolve, clock=lambda: 0.0, limit=0.01)
    assert lookup() is None, "not waited for past the limit"
    assert lookup() is None and len(calls) == 1, "one lookup at a time"
    release.set()
    lookup.limit = 30.0  # the lookup under way is waited for (bounded), not made again
    assert lookup() == "wpad.slow.example" and len(calls) == 1
    assert lookup() == "wpad.slow.example" and len(calls) == 1


def test_a_lookup_that_fails_is_none_found() -> None:
    def resolve() -> str | None:
        raise RuntimeError("resolver broke")
    assert WpadLookup(resolve, limit=30.0)() is None
