"""Whether the system has a proxy set, which a browser left at its default proxy setting ("use the system's proxy
settings": Chromium's `system`, Firefox's `system`) follows. The helper connects directly and honours no proxy,
so the extension keeps lanefetch off while the browser says "system" and the helper says one is set here (in its
hello: `system_proxy`); `lanefetch doctor` reports it too.

Where a proxy is found, each read without touching the network (never WPAD or a PAC script):
- the environment the helper shares with the browser that started it: http_proxy, https_proxy, all_proxy,
  auto_proxy (a PAC URL, Chromium) and SOCKS_SERVER, in either case, as Chromium and Firefox read them on Linux;
- GNOME's settings (org.gnome.system.proxy mode `manual` or `auto`), through `gsettings`, on Linux where it is
  installed and a desktop session is there to hold them (XDG_CURRENT_DESKTOP, DESKTOP_SESSION or a session bus named
  in the environment: without one, gsettings has no user's settings to read, and dconf would create its files
  under the cache directory of a helper that may serve only private browsing), with a time limit: an answer that
  does not come is taken as none (logged);
- macOS's and Windows' system settings, as `urllib.request.getproxies()` reads them.

Kept simple, on the safe side: any proxy found counts, whatever hosts it excludes (no_proxy, ignore-hosts), and
whichever of these sources the browser reads on this desktop (Chromium on GNOME reads gsettings, not the
environment). Pure core (`detect`), given the environment, the OS settings and a gsettings runner; `detect_here`
is the shell."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence

log = logging.getLogger(__name__)

# Lower case first: where both cases are set, the browsers read the lower-case one.
ENV_NAMES = ("https_proxy", "http_proxy", "all_proxy", "auto_proxy", "socks_server")
# What urllib reads of macOS's and Windows' settings, by scheme: those the helper's requests would go through.
SYSTEM_SCHEMES = ("https", "http", "all", "socks")
DESKTOP_SESSION_NAMES = ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "DBUS_SESSION_BUS_ADDRESS")
GSETTINGS_TIMEOUT_S = 2.0
# The description travels in hello (schema: maxLength 512) and is shown in the popup.
MAX_NAMED = 200

Runner = Callable[[Sequence[str]], str | None]


def _named(value: str) -> str:
    """The proxy's host[:port] for the user, without credentials (http://user:secret@host:3128 → host:3128)."""
    text = value.strip()
    try:
        parts = urllib.parse.urlsplit(text if "://" in text else f"http://{text}")
        host, port = parts.hostname or "", parts.port
    except ValueError:  # an unparsable value (a bad port) is still a proxy set: named by where it is set only
        return ""
    if not host or not all(c.isprintable() and not c.isspace() for c in host):
        return ""
    named = f"[{host}]" if ":" in host else host
    return f"{named}:{port}" if port is not None else named


def from_environment(env: Mapping[str, str]) -> str | None:
    for name in ENV_NAMES:
        for key in (name, name.upper()):
            value = env.get(key, "")
            if value.strip():
                where = _named(value) if name != "auto_proxy" else ""
                return f"{where} ({key} in the environment)" if where else f"{key} in the environment"
    return None


def from_system_settings(proxies: Mapping[str, str]) -> str | None:
    for scheme in SYSTEM_SCHEMES:
        value = proxies.get(scheme, "")
        if value.strip():
            where = _named(value)
            return f"{where} (the system's proxy settings)" if where else "the system's proxy settings"
    return None


def from_gnome(run: Runner) -> str | None:
    said = run(["gsettings", "get", "org.gnome.system.proxy", "mode"])
    mode = said.strip().strip("'\"") if said is not None else ""
    if mode == "manual":
        return "GNOME's proxy settings (manual)"
    if mode == "auto":
        return "GNOME's proxy settings (automatic)"
    return None


def detect(env: Mapping[str, str], platform: str, system: Callable[[], Mapping[str, str]], run: Runner) -> str | None:
    """Where a system proxy is set, in a few words for the user (no credentials), or None if none is."""
    found = from_environment(env)
    if found is None and platform in ("darwin", "win32"):
        try:
            found = from_system_settings(system())
        except Exception as e:  # a settings store that cannot be read is no proxy found, and said in the log
            log.warning("cannot read the system's proxy settings: %r", e)
    if found is None and platform not in ("darwin", "win32") and any(env.get(k) for k in DESKTOP_SESSION_NAMES):
        found = from_gnome(run)
    return found[:MAX_NAMED] if found is not None else None


def run_bounded(argv: Sequence[str], timeout: float = GSETTINGS_TIMEOUT_S) -> str | None:
    """A command's output; None if it is not installed, failed or took longer than `timeout`."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return None
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("%s: %r; taken as no system proxy there", argv[0], e)
        return None
    return done.stdout if done.returncode == 0 else None


def os_settings() -> Mapping[str, str]:
    if sys.platform == "darwin":
        return urllib.request.getproxies_macosx_sysconf()
    if sys.platform == "win32":
        return urllib.request.getproxies_registry()
    return {}


def detect_here() -> str | None:
    return detect(os.environ, sys.platform, os_settings, run_bounded)
