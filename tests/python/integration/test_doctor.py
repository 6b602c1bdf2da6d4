"""`lanefetch doctor`: each thing a user can get wrong is found and comes with a fix; a good registration is
proven by starting the registered executable and exchanging hello with it (the real lanefetch-host)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lanefetch import __version__, doctor, protocol
from lanefetch.bridge import install as installer
from lanefetch.bridge import system_proxy
from lanefetch.bridge.system_proxy import Found
from lanefetch.lanes.interfaces import Interface, InterfacePolicy, PolicyStore
from test_install import DictRegistry

HOST = Path(sys.executable).parent / "lanefetch-host"
IDENT = protocol.identity()


def registered(tmp_path: Path, browser: str = "chromium") -> installer.Target:
    t = installer.targets([browser], tmp_path, None, platform="linux", env={})[0]
    installer.install([t], HOST)
    return t


def script(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "fake-host"
    p.write_text(f"#!{sys.executable}\n{body}\n")
    p.chmod(0o755)
    return p


def rewrite(t: installer.Target, **fields: object) -> None:
    m = json.loads(t.manifest_path.read_text())
    m.update(fields)
    t.manifest_path.write_text(json.dumps(m))


def only(findings: list[doctor.Finding]) -> doctor.Finding:
    assert len(findings) == 1, findings
    return findings[0]


def test_working_registration_answers_hello(tmp_path: Path) -> None:
    for browser in ("chromium", "firefox"):
        f = only(doctor.check_target(registered(tmp_path, browser)))
        assert f.status == "ok", f
        assert f"lanefetch {__version__} answered hello (protocol {protocol.PROTOCOL_VERSION}" in f.detail


def test_missing_and_broken_manifests(tmp_path: Path) -> None:
    t = installer.targets(["brave"], tmp_path, None, platform="linux", env={})[0]
    f = only(doctor.check_target(t))
    assert (f.status, f.fix) == ("fail", "lanefetch install --browser brave")
    assert str(t.manifest_path) in f.detail

    t = registered(tmp_path)
    t.manifest_path.write_text("{not json")
    assert "cannot be read" in only(doctor.check_target(t)).detail

    t = registered(tmp_path)
    rewrite(t, allowed_origins=["chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"])
    f = only(doctor.check_target(t))
    assert f.status == "fail" and "allowed_origins" in f.detail and IDENT["chromium_extension_id"] in f.detail

    t = registered(tmp_path)
    rewrite(t, path=str(tmp_path / "gone" / "lanefetch-host"))
    f = only(doctor.check_target(t))
    assert f.status == "fail" and "does not exist" in f.detail and f.fix == "lanefetch install --browser chromium"

    t = registered(tmp_path)
    rewrite(t, path="lanefetch-host", type="socket")
    f = only(doctor.check_target(t))
    assert "not absolute" in f.detail and "'socket'" in f.detail


def test_executable_that_does_not_work(tmp_path: Path) -> None:
    t = registered(tmp_path)
    rewrite(t, path=str(script(tmp_path, "import sys\nprint('Traceback: boom', file=sys.stderr)\nsys.exit(3)")))
    f = only(doctor.check_target(t))
    assert f.status == "fail" and "exited with status 3" in f.detail and "boom" in f.detail
    assert "pipx reinstall lanefetch" in f.fix

    rewrite(t, path=str(script(tmp_path, "import time\ntime.sleep(60)")))
    f = only(doctor.check_target(t, timeout=2))
    assert f.status == "fail" and "no answer to hello within 2 s" in f.detail


def test_incompatible_helper_is_reported_with_its_message(tmp_path: Path) -> None:
    # A helper from the future: answers hello as the protocol allows, compatible=false with its reason.
    answer = {"type": "hello", "protocol": 1, "helper_version": "9.0.0", "compatible": False, "capabilities": [],
              "message": "The helper is newer: update the extension."}
    body = (f"import json, struct, sys\nsys.stdin.buffer.read()\nb = json.dumps({answer!r}).encode()\n"
            "sys.stdout.buffer.write(struct.pack('=I', len(b)) + b)")
    t = registered(tmp_path)
    rewrite(t, path=str(script(tmp_path, body)))
    f = only(doctor.check_target(t))
    assert f.status == "fail" and "lanefetch 9.0.0" in f.detail and "update the extension" in f.detail


def test_windows_registration_checked_through_the_registry(tmp_path: Path) -> None:
    env = {"LOCALAPPDATA": str(tmp_path)}
    t = installer.targets(["edge"], tmp_path, None, platform="win32", env=env)[0]
    reg = DictRegistry()
    f = only(doctor.check_target(t, reg))
    assert f.status == "fail" and "no registry key HKCU\\Software\\Microsoft\\Edge" in f.detail
    installer.install([t], HOST, reg)  # this machine's real launcher stands in for lanefetch-host.exe
    assert only(doctor.check_target(t, reg)).status == "ok"
    elsewhere = tmp_path / "moved" / t.manifest_path.name
    elsewhere.parent.mkdir()
    t.manifest_path.rename(elsewhere)
    reg.set_default("HKCU", t.registry_key or "", str(elsewhere))
    warn, ok = doctor.check_target(t, reg)
    assert warn.status == "warn" and str(elsewhere) in warn.detail and ok.status == "ok"


def test_python_version_and_render(tmp_path: Path) -> None:
    assert doctor.check_python((3, 11, 0)).status == "ok"
    old = doctor.check_python((3, 10, 12), "/usr/bin/python3")
    assert old.status == "fail" and "3.10.12" in old.detail and "3.11" in old.fix
    text = doctor.render([old, doctor.check_firefox_https(tmp_path)])  # never the runner's own data dir
    assert text.splitlines()[0].startswith("FAIL  Python: 3.10.12")
    assert text.splitlines()[1].startswith("      fix: ")
    assert "Firefox HTTPS: not enabled" in text


def test_run_reports_every_part(tmp_path: Path) -> None:
    registered(tmp_path, "firefox")
    findings = doctor.run("all", tmp_path, None, platform="linux", env={"PATH": str(tmp_path)})
    topics = [f.topic for f in findings]
    # Firefox is checked because it has a manifest, though no Firefox was found on this PATH
    assert topics == ["lanefetch", "Python", "Firefox", "System proxy", "Interfaces", "Firefox HTTPS"]
    assert findings[2].status == "ok"
    none = doctor.run("all", tmp_path / "empty", None, platform="linux", env={"PATH": str(tmp_path)})
    assert [f.topic for f in none if f.status == "fail"] == ["Browsers"]


def test_a_system_proxy_is_a_warning_that_says_what_to_do(tmp_path: Path) -> None:
    proxied = doctor.run("all", tmp_path, None, platform="linux",
                         env={"PATH": str(tmp_path), "https_proxy": "http://bob:pw@proxy.corp.example:8080"})
    found = only([f for f in proxied if f.topic == "System proxy"])
    assert found.status == "warn" and "proxy.corp.example:8080 (https_proxy in the environment)" in found.detail
    assert "lanefetch stays off" in found.detail and "pw" not in found.detail and "no proxy" in found.fix
    text = doctor.render([found])
    assert text.startswith("WARN  System proxy: set: proxy.corp.example:8080") and "\n      fix: " in text
    assert doctor.check_system_proxy(Found(None)).status == "ok"


@pytest.mark.parametrize("found", [
    "proxy auto-detection, WPAD (Windows' proxy settings)",
    "a proxy auto-configuration script, http://wpad.corp/proxy.pac (GNOME's proxy settings)",
    "automatic proxy configuration (GNOME's proxy settings)", "auto_proxy in the environment"])
def test_an_automatic_proxy_configuration_is_said_to_be_one(found: str) -> None:
    # Windows turns auto-detection on by default: the words must not say a proxy is surely used, and must say how
    # to turn it off where the network has none
    said = doctor.check_system_proxy(Found(found))
    assert said.status == "warn" and found in said.detail and "lanefetch stays off" in said.detail
    assert "may pick a proxy" in said.detail and "goes through it" not in said.detail
    assert "turn the automatic proxy configuration off" in said.fix and "Automatically detect settings" in said.fix
    manual = doctor.check_system_proxy(Found("proxy.corp:3128 (KDE's proxy settings)"))
    assert "goes through it" in manual.detail and "automatic" not in manual.fix


def test_a_wpad_server_found_is_named_as_the_reason(tmp_path: Path) -> None:
    said = doctor.check_system_proxy(Found("proxy auto-detection, WPAD (GNOME's proxy settings)", "wpad.corp.example"))
    assert said.status == "warn" and "lanefetch stays off" in said.detail
    assert said.detail.startswith("automatic proxy detection found a WPAD server at wpad.corp.example")
    assert "Automatically detect settings" in said.fix
    # The whole check, on a KDE desktop set to auto-detect: the WPAD server the test lookup says is there
    # (LANEFETCH_TEST_WPAD in doctor's environment; never this machine's DNS) makes it a proxy, and none does not
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "kioslaverc").write_text("[Proxy Settings]\nProxyType=3\n")
    for wpad, status in [("", "ok"), ("wpad.lan.example", "warn")]:
        env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "KDE_FULL_SESSION": "true",
               system_proxy.TEST_WPAD_ENV: wpad}
        found = only([f for f in doctor.run("all", tmp_path, None, platform="linux", env=env)
                      if f.topic == "System proxy"])
        assert found.status == status, found
    assert "found a WPAD server at wpad.lan.example" in found.detail


def test_interfaces_for_lanes(tmp_path: Path) -> None:
    eth = Interface("eth0", 2, True, False, ("192.0.2.2",))
    wlan = Interface("wlan0", 3, True, False, ("198.51.100.7",))
    down = Interface("usb0", 4, False, False, ())
    lo = Interface("lo", 1, True, True, ("127.0.0.1",))
    store = PolicyStore(tmp_path / "interfaces.json")
    both = doctor.check_interfaces([lo, eth, wlan, down], store)
    assert both.status == "ok"
    assert both.detail == ("lanes can split large downloads over eth0 192.0.2.2, wlan0 198.51.100.7; "
                           "not used: usb0 (down)")
    store.policies["wlan0"] = InterfacePolicy(metered=True)  # used only when named with --interface
    one = doctor.check_interfaces([lo, eth, wlan], store)
    assert one.status == "info" and "one usable interface" in one.detail and "wlan0 (metered)" in one.detail
    none = doctor.check_interfaces([lo, down], store)
    assert none.status == "warn" and "lanefetch interfaces" in none.fix


def test_unreadable_interface_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "lanefetch").mkdir()
    (tmp_path / "lanefetch" / "interfaces.json").write_text("{")
    bad = doctor.check_interfaces()
    assert bad.status == "fail" and "interfaces.json" in bad.detail and "delete it" in bad.fix
