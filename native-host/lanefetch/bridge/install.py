"""Registering the native-messaging host with browsers (per user, Linux), and removing it."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import protocol

HOST_EXECUTABLE = "lanefetch-host"


@dataclass(frozen=True)
class Target:
    browser: str  # "chromium", "chrome" or "firefox"
    directory: Path

    @property
    def manifest_path(self) -> Path:
        return self.directory / f"{protocol.identity()['native_host_name']}.json"


def host_executable() -> Path:
    """The `lanefetch-host` script installed beside this Python (a manifest cannot carry arguments)."""
    beside = Path(sys.executable).parent / HOST_EXECUTABLE
    if beside.exists():
        return beside.absolute()
    found = shutil.which(HOST_EXECUTABLE)
    if found is None:
        raise FileNotFoundError(f"{HOST_EXECUTABLE} is not installed next to {sys.executable} nor on PATH")
    return Path(found).absolute()


def targets(browsers: list[str], home: Path, chromium_user_data_dir: Path | None) -> list[Target]:
    """Where each browser looks for per-user host manifests on Linux. With a Chromium user-data-dir,
    Chromium looks in DIR/NativeMessagingHosts (and not in ~/.config/chromium)."""
    out: list[Target] = []
    for b in browsers:
        if b == "chromium":
            d = (chromium_user_data_dir if chromium_user_data_dir is not None
                 else home / ".config" / "chromium") / "NativeMessagingHosts"
            out.append(Target(b, d))
        elif b == "chrome":
            out.append(Target(b, home / ".config" / "google-chrome" / "NativeMessagingHosts"))
        elif b == "firefox":
            out.append(Target(b, home / ".mozilla" / "native-messaging-hosts"))
        else:
            raise ValueError(f"unknown browser {b!r}")
    return out


def manifest(browser: str, executable: Path) -> dict[str, object]:
    ident = protocol.identity()
    m: dict[str, object] = {
        "name": ident["native_host_name"],
        "description": "lanefetch helper: pipelined fetching for the lanefetch extension",
        "path": str(executable),
        "type": "stdio",
    }
    if browser == "firefox":
        m["allowed_extensions"] = [ident["firefox_extension_id"]]
    else:
        m["allowed_origins"] = [f"chrome-extension://{ident['chromium_extension_id']}/"]
    return m


def install(ts: list[Target], executable: Path | None = None) -> list[Path]:
    exe = executable or host_executable()
    written = []
    for t in ts:
        t.directory.mkdir(parents=True, exist_ok=True)
        tmp = t.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest(t.browser, exe), indent=2) + "\n", encoding="utf-8")
        tmp.replace(t.manifest_path)
        written.append(t.manifest_path)
    return written


def uninstall(ts: list[Target]) -> list[Path]:
    removed = []
    for t in ts:
        if t.manifest_path.exists():
            t.manifest_path.unlink()
            removed.append(t.manifest_path)
    return removed
