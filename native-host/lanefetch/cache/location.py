"""Where the persistent cache lives: the platform's per-user cache directory.

Linux and other Unix: $XDG_CACHE_HOME/lanefetch, else ~/.cache/lanefetch; macOS:
~/Library/Caches/lanefetch; Windows: %LOCALAPPDATA%\\lanefetch\\Cache."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def default_cache_dir(
    platform: str = sys.platform, env: Mapping[str, str] = os.environ, home: Path | None = None
) -> Path:
    home = home if home is not None else Path.home()
    if platform == "win32":
        base = env.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "lanefetch" / "Cache"
    if platform == "darwin":
        return home / "Library" / "Caches" / "lanefetch"
    xdg = env.get("XDG_CACHE_HOME")
    # The XDG spec: a relative path is invalid and must be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "lanefetch"
    return home / ".cache" / "lanefetch"
