"""Registering the native-messaging host with browsers, and removing it.

Linux and macOS: a manifest file in each browser's host directory (per user, or system-wide with `system`).
Windows: the manifest file under %LOCALAPPDATA% (or %PROGRAMDATA%) plus a registry key whose default value
names it. Where each browser looks is in browsers.py; registry access goes through registry.Registry."""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import protocol
from . import browsers as catalogue
from .registry import Hive, Registry

HOST_EXECUTABLE = "lanefetch-host"


@dataclass(frozen=True)
class Target:
    browser: str  # an id from browsers.BROWSERS: "chrome", "chromium", "brave", "edge", "vivaldi", "firefox"
    directory: Path
    registry_key: str | None = None  # Windows: the key whose default value names manifest_path
    hive: Hive = "HKCU"

    @property
    def manifest_path(self) -> Path:
        return self.directory / f"{protocol.identity()['native_host_name']}.json"


def host_executable(platform: str = sys.platform) -> Path:
    """The `lanefetch-host` launcher pip (or pipx) installed with this Python: a manifest cannot carry
    arguments, and on Windows it must name an .exe/.cmd, never a .py."""
    name = HOST_EXECUTABLE + (".exe" if platform == "win32" else "")
    candidates = [Path(sys.executable).parent / name, Path(sysconfig.get_path("scripts")) / name]
    for c in candidates:
        if c.is_file():
            return c.absolute()
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed next to {sys.executable} nor on PATH "
                                "(install lanefetch with pipx or pip, which create it)")
    return Path(found).absolute()


def windows_wrapper(python: Path) -> str:
    """A .cmd that starts the host with this Python, for an install without the pip-made .exe.
    Browsers start .cmd/.bat hosts through cmd.exe, passing stdin/stdout through."""
    return f'@echo off\r\n"{python}" -m lanefetch.bridge.host %*\r\n'


def host_launcher(platform: str = sys.platform, wrapper_dir: Path | None = None) -> Path:
    """host_executable(); on Windows without the pip-made .exe, a .cmd wrapper written into wrapper_dir."""
    try:
        return host_executable(platform)
    except FileNotFoundError:
        if platform != "win32" or wrapper_dir is None:
            raise
    wrapper_dir.mkdir(parents=True, exist_ok=True)
    path = wrapper_dir / f"{HOST_EXECUTABLE}.cmd"
    path.write_text(windows_wrapper(Path(sys.executable)), encoding="utf-8", newline="")
    return path


def targets(browsers: list[str], home: Path, chromium_user_data_dir: Path | None, *, system: bool = False,
            platform: str = sys.platform, env: Mapping[str, str] = os.environ) -> list[Target]:
    """Where each browser finds the manifest. With a Chromium user-data-dir (Linux, macOS), Chromium-family
    browsers look in DIR/NativeMessagingHosts (and not in their default directory)."""
    os_ = catalogue.current_os(platform)
    host_name = protocol.identity()["native_host_name"]
    out: list[Target] = []
    for bid in browsers:
        b = catalogue.browser(bid)
        if chromium_user_data_dir is not None and b.family == "chromium":
            if os_ == "windows":
                raise ValueError("on Windows browsers find hosts through the registry, not the user-data-dir")
            out.append(Target(b.id, chromium_user_data_dir / "NativeMessagingHosts"))
            continue
        directory = catalogue.manifest_dir(b, os_, home, env, system)
        if os_ == "windows":
            out.append(Target(b.id, directory, catalogue.registry_key(b, host_name), "HKLM" if system else "HKCU"))
        else:
            out.append(Target(b.id, directory))
    return out


def manifest(browser: str, executable: Path) -> dict[str, object]:
    ident = protocol.identity()
    if executable.suffix.lower() == ".py":
        raise ValueError(f"a host manifest must name an executable, not a Python file: {executable}")
    m: dict[str, object] = {
        "name": ident["native_host_name"],
        "description": "lanefetch helper: pipelined fetching for the lanefetch extension",
        "path": str(executable),
        "type": "stdio",
    }
    if catalogue.browser(browser).family == "firefox":
        m["allowed_extensions"] = [ident["firefox_extension_id"]]
    else:
        m["allowed_origins"] = [f"chrome-extension://{ident['chromium_extension_id']}/"]
    return m


def system_wide_problem(executable: Path, platform: str = sys.platform) -> str | None:
    """Why a manifest for every user of the machine may not name `executable`, or None: each user's browser runs
    it, so nobody but root may be able to change it, nor any directory on its path (or on its link's target's):
    a program under a user's home (pipx's ~/.local/bin, registered with sudo) would let that user run code as every
    other user. POSIX owners and modes; Windows is not checked here."""
    if platform == "win32":
        return None
    import stat

    for path in (executable.absolute(), executable.resolve()):
        for p in (path, *path.parents):
            st = p.stat()
            if st.st_uid != 0 or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
                return (f"{p} can be changed by a user other than root, and a registration for every user "
                        f"(--system) would have every user's browser run {executable}: install lanefetch where "
                        "only root can change it, or register per user (without --system)")
    return None


def _registry(ts: list[Target], registry: Registry | None) -> Registry | None:
    if registry is not None or not any(t.registry_key for t in ts):
        return registry
    from .registry import WindowsRegistry

    return WindowsRegistry()


def install(ts: list[Target], executable: Path | None = None, registry: Registry | None = None) -> list[Path]:
    exe = executable or host_executable()
    reg = _registry(ts, registry)
    written = []
    for t in ts:
        t.directory.mkdir(parents=True, exist_ok=True)
        tmp = t.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest(t.browser, exe), indent=2) + "\n", encoding="utf-8")
        tmp.replace(t.manifest_path)
        if t.registry_key is not None and reg is not None:
            reg.set_default(t.hive, t.registry_key, str(t.manifest_path))
        written.append(t.manifest_path)
    return written


def uninstall(ts: list[Target], registry: Registry | None = None) -> list[Path]:
    reg = _registry(ts, registry)
    removed = []
    for t in ts:
        if t.registry_key is not None and reg is not None:
            reg.delete_key(t.hive, t.registry_key)
        if t.manifest_path.exists():
            t.manifest_path.unlink()
            removed.append(t.manifest_path)
    return removed


@dataclass(frozen=True)
class Plan:
    targets: list[Target]
    sandboxed: tuple[catalogue.Sandboxed, ...]
    detected: bool  # targets are the browsers found (not ones the user named)
    not_found: tuple[catalogue.Browser, ...] = ()  # named by the user, yet not found for this user

    def why_not_found(self, browser: catalogue.Browser) -> str:
        """Why a named browser looks absent, and what would change that."""
        boxed = [s for s in self.sandboxed if s.browser.id == browser.id]
        if boxed:
            return boxed[0].advice
        return (f"it was not found for this user (no profile directory, no {' or '.join(browser.executables)} "
                "on PATH)")


def plan(choice: str, home: Path, chromium_user_data_dir: Path | None, *, system: bool = False,
         platform: str = sys.platform, env: Mapping[str, str] = os.environ) -> Plan:
    """`choice` is a browser id, or "all": every browser found for this user (all of them with `system`,
    since other users' browsers cannot be seen)."""
    os_ = catalogue.current_os(platform)
    found = catalogue.detect(os_, home, env)
    not_found: tuple[catalogue.Browser, ...] = ()
    if choice != "all":
        ids = [choice]
        # A named user-data-dir is where that Chromium keeps its profile: the user has shown where it is.
        if chromium_user_data_dir is None and catalogue.browser(choice) not in found.native:
            not_found = (catalogue.browser(choice),)
    elif system:
        ids = [b.id for b in catalogue.BROWSERS]
    else:
        ids = [b.id for b in found.native]
    return Plan(targets(ids, home, chromium_user_data_dir, system=system, platform=platform, env=env),
                found.sandboxed, choice == "all", not_found)
