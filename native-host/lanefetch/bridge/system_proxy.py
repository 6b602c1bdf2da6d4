"""Whether the system has a proxy set, which a browser left at its default proxy setting ("use the system's proxy
settings": Chromium's `system`, Firefox's `system`) follows. The helper connects directly and honours no proxy,
so the extension keeps lanefetch off while the browser says "system" and the helper says one is set here (in its
hello: `system_proxy`); `lanefetch doctor` reports it too.

An automatic configuration counts as a proxy set: a PAC script always (which proxy it picks, if any, only the
script says, and the helper would have to fetch it to know), auto-detection alone (WPAD: no script named, no proxy
set) only where the host `wpad` resolves, as the browsers find a WPAD server (Chromium and Windows fetch
http://wpad/wpad.dat, the resolver adding its search domains; "Automatically detect settings" is on by default in
Windows, and without this lanefetch stayed off for most Windows users where the network has no WPAD at all). That
lookup is the one network access here (never a PAC script's or WPAD's file): made only where a setting (or the
browser's own auto-detection setting, which the extension tells) asks for WPAD and nothing else is set, bounded
(WPAD_LOOKUP_S) and kept a few minutes (WPAD_RECHECK_S); its host travels in hello as `wpad`. A server that DHCP
alone names (Windows' WinHTTP asks DHCP first) is not seen. Where a proxy is found, each read without touching the
network:
- the environment the helper shares with the browser that started it: http_proxy, https_proxy, all_proxy,
  auto_proxy (a PAC URL, Chromium) and SOCKS_SERVER, in either case, as Chromium and Firefox read them on Linux;
- GNOME's settings (org.gnome.system.proxy mode `manual`, or `auto`: a PAC script at its autoconfig-url, or WPAD
  where that is empty), through `gsettings`, on Linux where it is installed and a desktop session is there to hold
  them (XDG_CURRENT_DESKTOP, DESKTOP_SESSION or a session bus named in the environment: without one, gsettings has
  no user's settings to read, and dconf would create its files under the cache directory of a helper that may serve
  only private browsing), with a time limit: an answer that does not come is taken as none (logged);
- KDE's settings (kioslaverc's [Proxy Settings] ProxyType: 1 manual, 2 a PAC script, 3 WPAD, 4 the environment
  variables it names), in a KDE session, from the files Chromium reads there ($KDEHOME/share/config; else
  ~/.config and $XDG_CONFIG_DIRS, the user's file last, for KDE 5 and 6, ~/.kde and ~/.kde4's share/config before):
  Chromium on KDE reads these, not GNOME's (a file that cannot be read is none there, logged);
- macOS's and Windows' system settings, as `urllib.request.getproxies()` reads them; on macOS also `scutil --proxy`
  (time-limited as gsettings), the dictionary Chromium reads (SCDynamicStoreCopyProxies), for what urllib does not
  read there: a PAC script, WPAD and a SOCKS proxy; on Windows also what Chromium reads of Internet Settings beside
  them (WinHttpGetIEProxyConfigForCurrentUser): AutoConfigURL, and "Automatically detect settings" (WPAD; on by
  default in Windows: it counts where `wpad` resolves).

Kept simple, on the safe side: any proxy found counts, whatever hosts it excludes (no_proxy, ignore-hosts), and
whichever of these sources the browser reads on this desktop (Chromium on GNOME reads gsettings, not the
environment). Pure core (`detect`), given the environment, the OS settings, a gsettings runner, a file reader and
the WPAD lookup; `detect_here` is the shell, `WpadLookup` the lookup's cache and bound."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# Lower case first: where both cases are set, the browsers read the lower-case one.
ENV_NAMES = ("https_proxy", "http_proxy", "all_proxy", "auto_proxy", "socks_server")
# What urllib reads of macOS's and Windows' settings, by scheme: those the helper's requests would go through.
SYSTEM_SCHEMES = ("https", "http", "all", "socks")
DESKTOP_SESSION_NAMES = ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "DBUS_SESSION_BUS_ADDRESS")
GSETTINGS_TIMEOUT_S = 2.0
# The description travels in hello (schema: maxLength 512) and is shown in the popup.
MAX_NAMED = 200

# What a setting that asks only for proxy auto-detection (WPAD: no script named, no proxy set) is called; it counts
# only where the host `wpad` resolves (`detect`).
WPAD_ALONE = "proxy auto-detection, WPAD"
WPAD_HOST = "wpad"
# A lookup of `wpad` is kept this long (the settings are read every 10 s: the network is asked at most this often)
WPAD_RECHECK_S = 300.0
# and waited for at most this long (a lookup that takes longer goes on: its answer is kept when it comes).
WPAD_LOOKUP_S = 2.0
# Tests: the lookup's answer, whatever the machine's DNS says ("" does not resolve, a value resolves, named so).
TEST_WPAD_ENV = "LANEFETCH_TEST_WPAD"
MAX_HOST = 253

# kioslaverc's ProxyType: 0 none, 1 manual, 4 the environment variables named there; and automatic ones, which the
# helper cannot follow (it would have to fetch the script, or look WPAD up), so they count as a proxy set.
KDE_AUTOMATIC = {"2": "a proxy auto-configuration script", "3": WPAD_ALONE}
KDE_PROXY_KEYS = ("httpsProxy", "httpProxy", "socksProxy")

INTERNET_SETTINGS = r"Software\Microsoft\Windows\CurrentVersion\Internet Settings"
# DefaultConnectionSettings (under Internet Settings\Connections), the settings Windows' dialog writes: a version,
# a counter, then these flags (a DWORD, little-endian; WinInet's PROXY_TYPE_*).
WINDOWS_AUTO_PROXY_URL, WINDOWS_AUTO_DETECT = 0x04, 0x08

# How each automatic configuration found is named (and the environment's PAC URL): `automatic` tells them apart.
AUTOMATIC = ("a proxy auto-configuration script", WPAD_ALONE, "automatic proxy configuration",
             "auto_proxy ", "AUTO_PROXY ")

Runner = Callable[[Sequence[str]], str | None]
Reader = Callable[[Path], str | None]
# The WPAD server's host where `wpad` resolves, else None (a lookup: see WpadLookup).
Wpad = Callable[[], str | None]


@dataclass(frozen=True)
class Found:
    """What the helper says of the system's proxy (hello, system_proxy): `where` one is set (a few words for the
    user; None: none is), and `wpad`, the WPAD server's host, where it was looked up and resolved (because a setting
    asks only for auto-detection, then `where` names that setting; or because the browser's own setting does)."""

    where: str | None
    wpad: str | None = None


NONE = Found(None)


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


def _named_script(value: str) -> str:
    """A PAC script's address for the user: scheme, host[:port] and path, without credentials or query."""
    text = value.strip()
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return ""
    where = _named(text) if parts.scheme in ("http", "https") else ""
    path = parts.path if all(c.isprintable() and not c.isspace() for c in parts.path) else ""
    return f"{parts.scheme}://{where}{path}" if where else ""


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
    # Windows' automatic configuration (windows_automatic)
    if proxies.get("autoconfig", "").strip():
        where = _named_script(proxies["autoconfig"])
        return f"a proxy auto-configuration script, {where} (Windows' proxy settings)" if where else \
            "a proxy auto-configuration script (Windows' proxy settings)"
    if proxies.get("autodetect"):
        return f"{WPAD_ALONE} (Windows' proxy settings)"
    return None


def windows_automatic(value: Callable[[str], object]) -> dict[str, str]:
    """Windows' automatic configuration, from Internet Settings' values (`value(name)`, None where there is none):
    `autoconfig`, the PAC script's address, and `autodetect` where "Automatically detect settings" is on. Read from
    DefaultConnectionSettings' flags, as WinINet and WinHTTP do (where that is missing, from the AutoDetect value a
    policy may set); AutoConfigURL counts on its own too (a policy may set only that, and WinINet follows it)."""
    found: dict[str, str] = {}
    url = value("AutoConfigURL")
    if isinstance(url, str) and url.strip():
        found["autoconfig"] = url.strip()
    blob = value("DefaultConnectionSettings")
    if isinstance(blob, bytes):
        flags = int.from_bytes(blob[8:12], "little") if len(blob) >= 12 else 0
        detects = bool(flags & WINDOWS_AUTO_DETECT)
        if flags & WINDOWS_AUTO_PROXY_URL and "autoconfig" not in found:
            found["autoconfig"] = _connection_script(blob) or "(unnamed)"  # counts, named or not
    else:
        detects = value("AutoDetect") == 1
    if detects:
        found["autodetect"] = "on"
    return found


def _connection_script(blob: bytes) -> str:
    """The PAC script's address in DefaultConnectionSettings: after the flags, three length-prefixed strings (the
    proxy server, the bypass list, the script's address); "" where the blob ends early."""
    at = 12
    for _ in range(2):
        at += 4 + int.from_bytes(blob[at:at + 4], "little")
    size = int.from_bytes(blob[at:at + 4], "little")
    text = blob[at + 4:at + 4 + size]
    return text.decode("latin-1") if len(text) == size and len(blob) >= at + 4 else ""


if sys.platform == "win32":
    import winreg

    def _internet_settings(name: str) -> object:
        """One value of the user's Internet Settings (DefaultConnectionSettings: of its Connections subkey); None if
        there is none."""
        key = INTERNET_SETTINGS + ("\\Connections" if name == "DefaultConnectionSettings" else "")
        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, key) as k:
                return winreg.QueryValueEx(k, name)[0]
        except OSError:
            return None


def from_gnome(run: Runner) -> str | None:
    said = run(["gsettings", "get", "org.gnome.system.proxy", "mode"])
    mode = said.strip().strip("'\"") if said is not None else ""
    if mode == "manual":
        return "GNOME's proxy settings (manual)"
    if mode != "auto":
        return None
    # Named for the user: a script's address (read only here, one more bounded call), or none, for WPAD
    said = run(["gsettings", "get", "org.gnome.system.proxy", "autoconfig-url"])
    if said is None:
        return "automatic proxy configuration (GNOME's proxy settings)"
    url = said.strip().strip("'\"")
    if not url:
        return f"{WPAD_ALONE} (GNOME's proxy settings)"
    where = _named_script(url)
    return f"a proxy auto-configuration script, {where} (GNOME's proxy settings)" if where else \
        "a proxy auto-configuration script (GNOME's proxy settings)"


def from_macos(said: str | None) -> str | None:
    """`scutil --proxy`'s global dictionary (its top-level "Key : value" lines; the per-interface ones under
    __SCOPED__ are indented further)."""
    keys: dict[str, str] = {}
    for line in (said or "").splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            key, sep, value = line.strip().partition(" : ")
            if sep:
                keys[key] = value.strip()
    for scheme in ("HTTPS", "HTTP", "SOCKS"):
        if keys.get(f"{scheme}Enable") == "1" and keys.get(f"{scheme}Proxy"):
            port = keys.get(f"{scheme}Port", "")
            where = _named(f"{keys[f'{scheme}Proxy']}:{port}" if port else keys[f"{scheme}Proxy"])
            return f"{where} (macOS's proxy settings)" if where else "macOS's proxy settings"
    if keys.get("ProxyAutoConfigEnable") == "1":
        where = _named_script(keys.get("ProxyAutoConfigURLString", ""))
        return f"a proxy auto-configuration script, {where} (macOS's proxy settings)" if where else \
            "a proxy auto-configuration script (macOS's proxy settings)"
    if keys.get("ProxyAutoDiscoveryEnable") == "1":
        return f"{WPAD_ALONE} (macOS's proxy settings)"
    return None


def kde_session(env: Mapping[str, str]) -> bool:
    """Whether Chromium takes this desktop for KDE (and reads kioslaverc): as base/nix/xdg_util.cc decides."""
    if "KDE" in env.get("XDG_CURRENT_DESKTOP", "").split(":"):
        return True
    return env.get("DESKTOP_SESSION", "") in ("kde", "kde4", "kde-plasma") or "KDE_FULL_SESSION" in env


def kioslaverc_files(env: Mapping[str, str]) -> list[Path]:
    """The kioslaverc files Chromium reads in a KDE session, the one that wins last."""
    if env.get("KDEHOME"):
        return [Path(env["KDEHOME"], "share", "config", "kioslaverc")]
    home = env.get("HOME", "")
    if not home:
        return []
    # KDE 3 and 4 (~/.kde, or ~/.kde4 where a distribution put it: Chromium takes the newer one) kept it there;
    # read too, on the safe side, before KDE 5 and 6's own files.
    files = [Path(home, d, "share", "config", "kioslaverc") for d in (".kde", ".kde4")]
    dirs = [d for d in env.get("XDG_CONFIG_DIRS", "").split(":") if d]
    return files + [Path(d, "kioslaverc") for d in reversed(dirs)] + [Path(home, ".config", "kioslaverc")]


def kde_settings(texts: Sequence[str]) -> dict[str, str]:
    """[Proxy Settings] of kioslaverc files, a later file's keys over an earlier one's (KConfig's cascade)."""
    settings: dict[str, str] = {}
    for text in texts:
        group = ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                group = line[1:line.find("]")] if "]" in line else ""
                continue
            key, eq, value = line.partition("=")
            if group != "Proxy Settings" or not eq or line.startswith("#"):
                continue
            key = key.strip()
            if key.endswith("]"):  # key[$e] (expanded) or key[$i] (immutable) is the key; key[de] a translation
                key, _, marker = key[:-1].partition("[")
                if not marker.startswith("$"):
                    continue
            settings[key.strip()] = value.strip()
    return settings


def from_kde(settings: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    kind = settings.get("ProxyType", "0").strip()
    if kind == "4":  # the proxies are in the environment variables named here (Chromium reads them from its own)
        for key in KDE_PROXY_KEYS:
            for name in settings.get(key, "").split(","):
                value = env.get(name.strip(), "") if name.strip() else ""
                if value.strip():
                    where = _named(value)
                    return f"{where} (KDE's proxy settings: {name.strip()})" if where else \
                        f"KDE's proxy settings ({name.strip()} in the environment)"
        return None
    if kind == "1":
        for key in KDE_PROXY_KEYS:
            # KDE writes "http://proxy 3128" (host, a space, the port); older ones "http://proxy:3128"
            where = _named(settings.get(key, "").strip().replace(" ", ":", 1))
            if where:
                return f"{where} (KDE's proxy settings)"
        return "KDE's proxy settings (manual)"
    where = _named_script(settings.get("Proxy Config Script", "")) if kind == "2" else ""
    automatic = KDE_AUTOMATIC.get(kind)
    if automatic is None:
        return None
    return f"{automatic}, {where} (KDE's proxy settings)" if where else f"{automatic} (KDE's proxy settings)"


def read_text(path: Path) -> str | None:
    """A settings file's text; None if there is none or it cannot be read (logged: no proxy found there)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        log.warning("cannot read %s: %r; taken as no system proxy there", path, e)
        return None


def automatic(found: str) -> bool:
    """Whether what `detect` found is an automatic configuration (a PAC script, WPAD): a proxy it may pick, or not."""
    return found.startswith(AUTOMATIC)


def detect(env: Mapping[str, str], platform: str, system: Callable[[], Mapping[str, str]], run: Runner,
           read: Reader = read_text, *, wpad: Wpad, browser_auto_detect: bool = False) -> Found:
    """Where a system proxy is set, in a few words for the user (no credentials), and the WPAD server, where one
    was looked up (`wpad`, called at most once): only where a setting asks for auto-detection alone and nothing
    else is set (Chromium and Windows use WPAD only where `wpad` resolves or DHCP names a server: a setting that
    is on by default in Windows would otherwise keep lanefetch off where the network has no WPAD at all), or where
    the browser's own setting is auto-detection (`browser_auto_detect`). Never looked up otherwise."""
    wpad_alone: str | None = None
    found: str | None = None
    for source in _sources(env, platform, system, run, read):
        said = source()
        if said is not None and said.startswith(WPAD_ALONE):
            wpad_alone = wpad_alone or said  # counts only if nothing else does and the server is there
        elif said is not None:
            found = said
            break
    server = wpad() if browser_auto_detect or (found is None and wpad_alone is not None) else None
    if found is None and server is not None:
        found = wpad_alone
    return Found(found[:MAX_NAMED] if found is not None else None, server)


def _sources(env: Mapping[str, str], platform: str, system: Callable[[], Mapping[str, str]], run: Runner,
             read: Reader) -> list[Callable[[], str | None]]:
    """Each place a proxy may be set here, in the order read (each read only if none before found a proxy)."""
    def settings() -> str | None:
        try:
            return from_system_settings(system())
        except Exception as e:  # a settings store that cannot be read is no proxy found, and said in the log
            log.warning("cannot read the system's proxy settings: %r", e)
            return None

    def kde() -> str | None:
        texts = [read(path) for path in kioslaverc_files(env)]
        return from_kde(kde_settings([t for t in texts if t is not None]), env)

    sources: list[Callable[[], str | None]] = [lambda: from_environment(env)]
    if platform in ("darwin", "win32"):
        sources.append(settings)
    if platform == "darwin":
        sources.append(lambda: from_macos(run(["scutil", "--proxy"])))
    if platform not in ("darwin", "win32") and any(env.get(k) for k in DESKTOP_SESSION_NAMES):
        sources.append(lambda: from_gnome(run))
    if platform not in ("darwin", "win32") and kde_session(env):
        sources.append(kde)
    return sources


def resolve_wpad(env: Mapping[str, str]) -> str | None:
    """The host `wpad`, looked up as the browsers do (an unqualified name: the system's resolver adds its search
    domains): its canonical name (or `wpad`) if it resolves, else None. TEST_WPAD_ENV, where set, answers instead."""
    if TEST_WPAD_ENV in env:
        return _printable_host(env[TEST_WPAD_ENV]) or None
    try:
        infos = socket.getaddrinfo(WPAD_HOST, 80, type=socket.SOCK_STREAM, flags=socket.AI_CANONNAME)
    except (OSError, UnicodeError):  # gaierror: it does not resolve
        return None
    if not infos:
        return None
    return _printable_host(infos[0][3]) or WPAD_HOST


def _printable_host(name: str) -> str:
    name = name.strip().rstrip(".")
    ok = 0 < len(name) <= MAX_HOST and all(c.isalnum() or c in "-._:" for c in name) and name.isascii()
    return name if ok else ""


class WpadLookup:
    """The WPAD server, looked up at most once every `recheck` seconds (`clock`), the answer kept in between; a
    lookup is waited for at most `limit` seconds, in a daemon thread of its own (a resolver that never answers holds
    neither the system proxy read nor the helper's exit): one that takes longer is taken as none found this time,
    goes on, and its answer is kept when it comes. One lookup at a time."""

    def __init__(self, resolve: Wpad, clock: Callable[[], float] = time.monotonic, recheck: float = WPAD_RECHECK_S,
                 limit: float = WPAD_LOOKUP_S) -> None:
        self._resolve = resolve
        self._clock = clock
        self.recheck = recheck
        self.limit = limit
        self._lock = threading.Lock()
        self._answer: tuple[float, str | None] | None = None  # (when it came, the host)
        self._under_way: threading.Event | None = None

    def __call__(self) -> str | None:
        with self._lock:
            if self._answer is not None and self._clock() - self._answer[0] < self.recheck:
                return self._answer[1]
            done = self._under_way
            if done is None:
                done = self._under_way = threading.Event()
                threading.Thread(target=self._look_up, args=(done,), name="lanefetch-wpad", daemon=True).start()
        if not done.wait(self.limit):
            log.warning("looking up %r took longer than %.0f s: taken as no WPAD server until it answers",
                        WPAD_HOST, self.limit)
            return None
        with self._lock:
            return self._answer[1] if self._answer is not None else None

    def _look_up(self, done: threading.Event) -> None:
        try:
            host = self._resolve()
        except Exception as e:  # taken as no answer: none found (kept as any answer is)
            log.warning("looking up %r failed: %r", WPAD_HOST, e)
            host = None
        with self._lock:
            self._answer = (self._clock(), host)
            self._under_way = None
        done.set()


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
        return {**urllib.request.getproxies_registry(), **windows_automatic(_internet_settings)}
    return {}


WPAD = WpadLookup(lambda: resolve_wpad(os.environ))


def detect_here(browser_auto_detect: bool = False) -> Found:
    return detect(os.environ, sys.platform, os_settings, run_bounded, wpad=WPAD,
                  browser_auto_detect=browser_auto_detect)
