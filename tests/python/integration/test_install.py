"""`lanefetch install`: where each browser's manifest goes on Linux, macOS and Windows (registry writes through a
dict-backed Registry, since winreg exists only on Windows), which browsers are found, and the real thing on
Linux: the CLI registers the found browsers in a scratch home and each manifest starts a working helper."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lanefetch import protocol
from lanefetch.bridge import browsers as catalogue
from lanefetch.bridge import install as installer
from lanefetch.bridge.registry import Hive

REPO = Path(__file__).resolve().parents[3]
HOST = Path(sys.executable).parent / "lanefetch-host"
LANEFETCH = Path(sys.executable).parent / "lanefetch"
NAME = protocol.identity()["native_host_name"]


class DictRegistry:
    """The Registry interface over a dict: {(hive, key): default value}."""

    def __init__(self) -> None:
        self.values: dict[tuple[Hive, str], str] = {}

    def set_default(self, hive: Hive, key: str, value: str) -> None:
        self.values[(hive, key)] = value

    def get_default(self, hive: Hive, key: str) -> str | None:
        return self.values.get((hive, key))

    def delete_key(self, hive: Hive, key: str) -> bool:
        return self.values.pop((hive, key), None) is not None


ALL = [b.id for b in catalogue.BROWSERS]


def dirs(platform: str, home: Path, env: dict[str, str], system: bool = False) -> dict[str, Path]:
    return {t.browser: t.directory for t in installer.targets(ALL, home, None, system=system, platform=platform,
                                                               env=env)}


def test_linux_locations() -> None:
    home = Path("/home/u")
    user = dirs("linux", home, {})
    assert user == {
        "chrome": home / ".config/google-chrome/NativeMessagingHosts",
        "chromium": home / ".config/chromium/NativeMessagingHosts",
        "brave": home / ".config/BraveSoftware/Brave-Browser/NativeMessagingHosts",
        "edge": home / ".config/microsoft-edge/NativeMessagingHosts",
        "vivaldi": home / ".config/vivaldi/NativeMessagingHosts",
        "firefox": home / ".mozilla/native-messaging-hosts",
    }
    # Chromium-family browsers follow XDG_CONFIG_HOME; Firefox always uses ~/.mozilla (a relative XDG is invalid)
    xdg = dirs("linux", home, {"XDG_CONFIG_HOME": "/cfg"})
    assert xdg["chrome"] == Path("/cfg/google-chrome/NativeMessagingHosts")
    assert xdg["firefox"] == home / ".mozilla/native-messaging-hosts"
    assert dirs("linux", home, {"XDG_CONFIG_HOME": "rel"})["chrome"] == user["chrome"]
    system = dirs("linux", home, {}, system=True)
    assert system["chrome"] == Path("/etc/opt/chrome/native-messaging-hosts")
    assert system["chromium"] == Path("/etc/chromium/native-messaging-hosts")
    assert system["edge"] == Path("/etc/opt/edge/native-messaging-hosts")
    assert system["firefox"] == Path("/usr/lib/mozilla/native-messaging-hosts")
    assert all(t.registry_key is None for t in installer.targets(ALL, home, None, platform="linux", env={}))
    # a custom --user-data-dir moves every Chromium-family browser's lookup, not Firefox's
    udd = installer.targets(["chromium", "brave", "firefox"], home, Path("/x"), platform="linux", env={})
    assert [t.directory for t in udd] == [Path("/x/NativeMessagingHosts")] * 2 + [user["firefox"]]


def test_macos_locations() -> None:
    home = Path("/Users/u")
    support = home / "Library/Application Support"
    user = dirs("darwin", home, {})
    assert user["chrome"] == support / "Google/Chrome/NativeMessagingHosts"
    assert user["chromium"] == support / "Chromium/NativeMessagingHosts"
    assert user["brave"] == support / "BraveSoftware/Brave-Browser/NativeMessagingHosts"
    assert user["edge"] == support / "Microsoft Edge/NativeMessagingHosts"
    assert user["vivaldi"] == support / "Vivaldi/NativeMessagingHosts"
    assert user["firefox"] == support / "Mozilla/NativeMessagingHosts"
    system = dirs("darwin", home, {}, system=True)
    assert system["chrome"] == Path("/Library/Google/Chrome/NativeMessagingHosts")
    assert system["edge"] == Path("/Library/Microsoft/Edge/NativeMessagingHosts")
    assert system["firefox"] == Path("/Library/Application Support/Mozilla/NativeMessagingHosts")


def test_windows_registration_through_the_registry(tmp_path: Path) -> None:
    env = {"LOCALAPPDATA": str(tmp_path / "local"), "PROGRAMDATA": str(tmp_path / "programdata")}
    ts = installer.targets(ALL, tmp_path, None, platform="win32", env=env)
    keys = {t.browser: (t.hive, t.registry_key) for t in ts}
    assert keys["chrome"] == ("HKCU", rf"Software\Google\Chrome\NativeMessagingHosts\{NAME}")
    assert keys["chromium"] == ("HKCU", rf"Software\Chromium\NativeMessagingHosts\{NAME}")
    assert keys["edge"] == ("HKCU", rf"Software\Microsoft\Edge\NativeMessagingHosts\{NAME}")
    assert keys["brave"] == ("HKCU", rf"Software\BraveSoftware\Brave-Browser\NativeMessagingHosts\{NAME}")
    assert keys["vivaldi"] == ("HKCU", rf"Software\Vivaldi\NativeMessagingHosts\{NAME}")
    assert keys["firefox"] == ("HKCU", rf"Software\Mozilla\NativeMessagingHosts\{NAME}")
    assert all(t.directory.is_relative_to(tmp_path / "local" / "lanefetch") for t in ts)
    system = installer.targets(["chrome"], tmp_path, None, system=True, platform="win32", env=env)[0]
    assert system.hive == "HKLM" and system.directory.is_relative_to(tmp_path / "programdata")
    with pytest.raises(ValueError, match="registry"):
        installer.targets(["chromium"], tmp_path, tmp_path / "udd", platform="win32", env=env)

    reg = DictRegistry()
    exe = tmp_path / "Scripts" / "lanefetch-host.exe"
    written = installer.install(ts, exe, reg)
    assert len(written) == len(ALL) == len(reg.values)
    for t in ts:
        # the key's default value is the manifest's full path; the manifest names the .exe launcher
        assert reg.get_default("HKCU", t.registry_key or "") == str(t.manifest_path)
        m = json.loads(t.manifest_path.read_text())
        assert m["path"] == str(exe) and m["name"] == NAME
    ff = json.loads(ts[-1].manifest_path.read_text())
    assert ff["allowed_extensions"] == [protocol.identity()["firefox_extension_id"]]
    assert installer.uninstall(ts, reg) == written
    assert reg.values == {} and not any(t.manifest_path.exists() for t in ts)
    with pytest.raises(ValueError, match="not a Python file"):
        installer.install(ts[:1], tmp_path / "host.py", reg)


def test_windows_without_the_exe_gets_a_cmd_wrapper(tmp_path: Path) -> None:
    path = installer.host_launcher("win32", tmp_path)  # no lanefetch-host.exe exists on this machine
    assert path == tmp_path / "lanefetch-host.cmd"
    text = path.read_bytes().decode()
    assert text == f'@echo off\r\n"{sys.executable}" -m lanefetch.bridge.host %*\r\n'
    with pytest.raises(FileNotFoundError):
        installer.host_launcher("win32", None)
    assert installer.host_launcher("linux", tmp_path) == HOST  # elsewhere the pip-made launcher


def test_detection(tmp_path: Path) -> None:
    home = tmp_path
    (home / ".config/BraveSoftware/Brave-Browser").mkdir(parents=True)
    (home / ".var/app/org.chromium.Chromium").mkdir(parents=True)
    (home / "snap/firefox").mkdir(parents=True)
    on_path = {"microsoft-edge-stable"}
    found = catalogue.detect("linux", home, {}, which=lambda n: f"/usr/bin/{n}" if n in on_path else None)
    # Brave by its profile, Edge by its launcher, Snap Firefox (which reads ~/.mozilla through the portal)
    assert [b.id for b in found.native] == ["brave", "edge", "firefox"]
    assert [(s.browser.id, s.kind) for s in found.sandboxed] == [("chromium", "flatpak"), ("firefox", "snap")]
    assert "cannot use the lanefetch helper" in found.sandboxed[0].advice
    assert "portal" in found.sandboxed[1].advice
    mac = catalogue.detect("darwin", home, {}, exists=lambda p: p == Path("/Applications/Vivaldi.app"))
    assert [b.id for b in mac.native] == ["vivaldi"] and mac.sandboxed == ()
    win = catalogue.detect("windows", home, {"LOCALAPPDATA": "C:/L", "APPDATA": "C:/R"},
                           exists=lambda p: p in (Path("C:/L/Google/Chrome/User Data"), Path("C:/R/Mozilla/Firefox")))
    assert [b.id for b in win.native] == ["chrome", "firefox"]


def run(*args: str, home: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {"PATH": path}
    return subprocess.run([str(LANEFETCH), *args, "--home", str(home)], capture_output=True, text=True, env=env,
                          timeout=120, cwd=REPO)


def test_cli_registers_the_found_browsers_and_they_work(tmp_path: Path) -> None:
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    (home / ".config/microsoft-edge").mkdir(parents=True)
    (home / ".var/app/com.google.Chrome").mkdir(parents=True)
    bin_dir.mkdir()
    firefox = bin_dir / "firefox-esr"
    firefox.write_text("#!/bin/sh\nexit 0\n")
    firefox.chmod(0o755)
    out = run("install", home=home, path=str(bin_dir))
    assert out.returncode == 0, out.stderr
    edge = home / ".config/microsoft-edge/NativeMessagingHosts" / f"{NAME}.json"
    ff = home / ".mozilla/native-messaging-hosts" / f"{NAME}.json"
    assert f"registered {edge} -> {HOST}" in out.stdout and f"registered {ff} -> {HOST}" in out.stdout
    assert "Google Chrome (Flatpak)" in out.stdout  # explained, not registered
    assert sorted(p.relative_to(home) for p in home.rglob("*.json")) == sorted(p.relative_to(home) for p in (edge, ff))

    doctor = run("doctor", home=home, path=str(bin_dir))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert doctor.stdout.count("answered hello (protocol 1") == 2
    assert "WARN  Google Chrome (flatpak)" in doctor.stdout

    out = run("uninstall", home=home, path=str(bin_dir))
    assert out.returncode == 0 and not edge.exists() and not ff.exists()


def test_cli_with_no_browser_found_says_so(tmp_path: Path) -> None:
    out = run("install", home=tmp_path, path=str(tmp_path))
    assert out.returncode == 1
    assert "found no browser" in out.stderr and "--browser" in out.stderr
    assert list(tmp_path.iterdir()) == []
    # a browser named but not found: refused with the reason and what to do, nothing written
    named = run("install", "--browser", "vivaldi", home=tmp_path, path=str(tmp_path))
    assert named.returncode == 1
    assert "not registering for Vivaldi: it was not found for this user" in named.stderr, named.stderr
    assert "vivaldi or vivaldi-stable on PATH" in named.stderr and "--force" in named.stderr
    assert list(tmp_path.iterdir()) == []
    # --force: registered as asked, with the warning
    forced = run("install", "--browser", "vivaldi", "--force", home=tmp_path, path=str(tmp_path))
    assert forced.returncode == 0, forced.stderr
    assert "warning: registering for Vivaldi as asked (--force)" in forced.stderr
    assert (tmp_path / ".config/vivaldi/NativeMessagingHosts" / f"{NAME}.json").exists()
    # a named Chromium user-data-dir says where that browser is: no --force needed
    udd = run("install", "--chromium-user-data-dir", str(tmp_path / "udd"), home=tmp_path, path=str(tmp_path))
    assert udd.returncode == 0 and udd.stderr == "", udd.stderr


def test_cli_named_browser_found_only_as_flatpak_is_refused_with_the_sandbox_reason(tmp_path: Path) -> None:
    (tmp_path / ".var/app/com.google.Chrome").mkdir(parents=True)
    out = run("install", "--browser", "chrome", home=tmp_path, path=str(tmp_path))
    assert out.returncode == 1
    assert "not registering for Google Chrome" in out.stderr and "sandbox" in out.stderr, out.stderr
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")
def test_a_system_wide_registration_never_names_a_helper_another_user_can_replace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`install --system` makes every user's browser run the manifest's program: one under a user's home (pipx's
    ~/.local/bin, run with sudo) lets that user run code as everyone else. It is refused, and nothing written."""
    from lanefetch import cli

    bin_dir = tmp_path / "home" / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / "lanefetch-host"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    if os.geteuid() == 0:  # (root runs the tests here: the program belongs to an ordinary user, as after pipx)
        for p in (exe, bin_dir):
            os.chown(p, 65534, 65534)
    written: list[object] = []
    monkeypatch.setattr(installer, "host_launcher", lambda **_: exe)
    monkeypatch.setattr(installer, "install", lambda ts, executable=None, registry=None: written.append(ts) or [])
    code = cli.main(["install", "--system", "--browser", "firefox", "--force", "--home", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and written == [], err
    assert str(bin_dir) in err and "every user" in err
    root_owned = Path("/usr/bin/env")
    if all(p.stat().st_uid == 0 and not p.stat().st_mode & 0o022 for p in (root_owned.resolve(), *root_owned.parents)):
        assert installer.system_wide_problem(root_owned) is None  # a program only root can change is fine
