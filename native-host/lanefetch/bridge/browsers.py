"""Which browsers lanefetch can register with, where each one looks for native-messaging host manifests on
Linux, macOS and Windows, and how to tell that a browser is present. Pure data and pure functions: the
filesystem and PATH are passed in, so every operating system's answer is testable on any of them.

Sources: Chrome's native-messaging documentation (per-user and system locations, Windows registry keys),
MDN "Native manifests" (Firefox), and the locations real installers use for Brave, Edge and Vivaldi.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

OS = Literal["linux", "darwin", "windows"]
Family = Literal["chromium", "firefox"]


def current_os(platform: str) -> OS:
    """sys.platform → the OS whose conventions apply (BSDs follow Linux's)."""
    if platform == "win32":
        return "windows"
    if platform == "darwin":
        return "darwin"
    return "linux"


@dataclass(frozen=True)
class Browser:
    id: str
    name: str
    family: Family
    linux_config: str  # Chromium family: the user-data dir under $XDG_CONFIG_HOME; Firefox: under $HOME
    linux_system: str
    mac_support: str  # under ~/Library/Application Support (per user) and, for most, /Library/Application Support
    mac_system: str
    windows_key: str  # under HKCU or HKLM; the host is registered at <key>\NativeMessagingHosts\<host name>
    windows_data: str  # the profile directory under %LOCALAPPDATA% (Chromium family) or %APPDATA% (Firefox)
    executables: tuple[str, ...]  # names on PATH (Linux)
    mac_app: str  # under /Applications
    flatpak: str
    snap: str | None


BROWSERS: tuple[Browser, ...] = (
    Browser("chrome", "Google Chrome", "chromium", "google-chrome", "/etc/opt/chrome/native-messaging-hosts",
            "Google/Chrome", "/Library/Google/Chrome/NativeMessagingHosts", r"Software\Google\Chrome",
            "Google/Chrome/User Data", ("google-chrome", "google-chrome-stable"), "Google Chrome.app",
            "com.google.Chrome", None),
    Browser("chromium", "Chromium", "chromium", "chromium", "/etc/chromium/native-messaging-hosts",
            "Chromium", "/Library/Application Support/Chromium/NativeMessagingHosts", r"Software\Chromium",
            "Chromium/User Data", ("chromium", "chromium-browser"), "Chromium.app",
            "org.chromium.Chromium", "chromium"),
    Browser("brave", "Brave", "chromium", "BraveSoftware/Brave-Browser", "/etc/opt/brave/native-messaging-hosts",
            "BraveSoftware/Brave-Browser",
            "/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
            r"Software\BraveSoftware\Brave-Browser", "BraveSoftware/Brave-Browser/User Data",
            ("brave-browser", "brave"), "Brave Browser.app", "com.brave.Browser", "brave"),
    Browser("edge", "Microsoft Edge", "chromium", "microsoft-edge", "/etc/opt/edge/native-messaging-hosts",
            "Microsoft Edge", "/Library/Microsoft/Edge/NativeMessagingHosts", r"Software\Microsoft\Edge",
            "Microsoft/Edge/User Data", ("microsoft-edge", "microsoft-edge-stable"), "Microsoft Edge.app",
            "com.microsoft.Edge", None),
    Browser("vivaldi", "Vivaldi", "chromium", "vivaldi", "/etc/opt/vivaldi/native-messaging-hosts",
            "Vivaldi", "/Library/Application Support/Vivaldi/NativeMessagingHosts", r"Software\Vivaldi",
            "Vivaldi/User Data", ("vivaldi", "vivaldi-stable"), "Vivaldi.app", "com.vivaldi.Vivaldi", None),
    Browser("firefox", "Firefox", "firefox", ".mozilla", "/usr/lib/mozilla/native-messaging-hosts",
            "Mozilla", "/Library/Application Support/Mozilla/NativeMessagingHosts", r"Software\Mozilla",
            "Mozilla/Firefox", ("firefox", "firefox-esr"), "Firefox.app", "org.mozilla.firefox", "firefox"),
)
BY_ID = {b.id: b for b in BROWSERS}


def browser(browser_id: str) -> Browser:
    try:
        return BY_ID[browser_id]
    except KeyError:
        raise ValueError(f"unknown browser {browser_id!r} (known: {', '.join(BY_ID)})") from None


def _config_home(home: Path, env: Mapping[str, str]) -> Path:
    xdg = env.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"


def user_data_dir(b: Browser, os_: OS, home: Path, env: Mapping[str, str]) -> Path:
    """The browser's own per-user directory: its presence means the browser has run for this user."""
    if os_ == "linux":
        return home / b.linux_config if b.family == "firefox" else _config_home(home, env) / b.linux_config
    if os_ == "darwin":
        return home / "Library" / "Application Support" / b.mac_support
    var = "APPDATA" if b.family == "firefox" else "LOCALAPPDATA"
    default = home / "AppData" / ("Roaming" if b.family == "firefox" else "Local")
    return Path(env.get(var) or default) / b.windows_data


def manifest_dir(b: Browser, os_: OS, home: Path, env: Mapping[str, str], system: bool) -> Path:
    """Linux and macOS: the directory the browser reads host manifests from. Windows: where lanefetch keeps
    the manifest file its registry value names (the browser finds it through the registry, not by place)."""
    if os_ == "linux":
        if system:
            return Path(b.linux_system)
        if b.family == "firefox":
            return home / ".mozilla" / "native-messaging-hosts"
        return _config_home(home, env) / b.linux_config / "NativeMessagingHosts"
    if os_ == "darwin":
        if system:
            return Path(b.mac_system)
        return home / "Library" / "Application Support" / b.mac_support / "NativeMessagingHosts"
    if system:
        base = Path(env.get("PROGRAMDATA") or r"C:\ProgramData")
    else:
        base = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")
    return base / "lanefetch" / "NativeMessagingHosts" / b.id


def registry_key(b: Browser, host_name: str) -> str:
    return f"{b.windows_key}\\NativeMessagingHosts\\{host_name}"


@dataclass(frozen=True)
class Sandboxed:
    """A Flatpak or Snap browser: found, but a plain manifest does not make it start the helper."""

    browser: Browser
    kind: Literal["flatpak", "snap"]
    where: Path

    @property
    def advice(self) -> str:
        name = self.browser.name
        if self.kind == "snap" and self.browser.family == "firefox":
            return (f"{name} (Snap) starts native helpers through the desktop's WebExtensions portal, which reads "
                    "~/.mozilla/native-messaging-hosts: lanefetch registers it there; Firefox asks once whether "
                    "lanefetch may start. Not tested by lanefetch's own suite.")
        if self.kind == "flatpak" and self.browser.family == "firefox":
            return (f"{name} (Flatpak) can start native helpers only from Firefox 157 on and with the "
                    "xdg-native-messaging-proxy service running on the host; otherwise install Firefox from your "
                    "distribution's packages (or Mozilla's) and run `lanefetch install` again.")
        return (f"{name} ({'Flatpak' if self.kind == 'flatpak' else 'Snap'}) runs in a sandbox that cannot "
                "start programs installed outside it, so it cannot use the lanefetch helper. Install the "
                "browser's deb/rpm package instead and run `lanefetch install` again.")


@dataclass(frozen=True)
class Found:
    native: tuple[Browser, ...]
    sandboxed: tuple[Sandboxed, ...]


def detect(os_: OS, home: Path, env: Mapping[str, str], exists: Callable[[Path], bool] = Path.exists,
           which: Callable[[str], str | None] | None = None) -> Found:
    """Browsers present for this user: their profile directory exists, or (Linux) a launcher is on PATH, or
    (macOS) the app is in /Applications. Flatpak and Snap installs are reported separately."""
    if which is None:
        import shutil

        path = env.get("PATH", os.defpath)

        def which(name: str) -> str | None:
            return shutil.which(name, path=path)

    native: list[Browser] = []
    sandboxed: list[Sandboxed] = []
    for b in BROWSERS:
        present = exists(user_data_dir(b, os_, home, env))
        if os_ == "linux":
            present = present or any(which(x) is not None for x in b.executables)
            fp = home / ".var" / "app" / b.flatpak
            if exists(fp):
                sandboxed.append(Sandboxed(b, "flatpak", fp))
            if b.snap is not None and exists(home / "snap" / b.snap):
                sandboxed.append(Sandboxed(b, "snap", home / "snap" / b.snap))
        elif os_ == "darwin":
            present = present or exists(Path("/Applications") / b.mac_app)
        if present:
            native.append(b)
    # Snap Firefox reads the ordinary ~/.mozilla location through the portal: register it like a native one.
    snap_ff = any(s.kind == "snap" and s.browser.family == "firefox" for s in sandboxed)
    if snap_ff and BY_ID["firefox"] not in native:
        native.append(BY_ID["firefox"])
    return Found(tuple(native), tuple(sandboxed))
