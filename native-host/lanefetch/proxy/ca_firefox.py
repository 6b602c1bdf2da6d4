"""Firefox's side of the local certificate authorities: which profile the extension runs in, when that Firefox
started, and adding/removing a CA in the profile's NSS certificate store with `certutil` (Debian: libnss3-tools).

Firefox reads its certificate store when it starts: a CA added while it runs is trusted after the next restart
(measured with Firefox ESR 153; a removal is also fully in effect only then, but the helper stops using a removed
CA at once). Enterprise policy (`Certificates.Install`) needs root and also applies only at start-up, and
`security.enterprise_roots.enabled` does not read Linux's store, so certutil into the profile is what works.

The profile: Firefox starts the helper itself, so the helper's parent process is Firefox, holding its profile's
`cert9.db` open (Linux: /proc/<ppid>/fd). When that cannot be seen, every profile in profiles.ini is used."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CERTUTIL = "certutil"
NICK_PREFIX = "lanefetch "


class NssError(Exception):
    pass


@dataclass(frozen=True)
class RunningFirefox:
    profile: Path
    started: float  # epoch seconds: CAs added before this are trusted by this Firefox


def parent_firefox(ppid: int | None = None, proc: Path = Path("/proc"), wait_s: float = 0.0) -> RunningFirefox | None:
    """The Firefox that started this helper (Linux), from the files its process holds open. Firefox may start the
    helper before it opens its certificate store: with `wait_s`, a parent whose program is Firefox is looked at
    again (every 0.1 s) until then."""
    ppid = os.getppid() if ppid is None else ppid
    deadline = time.monotonic() + wait_s
    while True:
        found = _holding_cert_store(ppid, proc)
        if found is not None or time.monotonic() >= deadline or not _runs_firefox(ppid, proc):
            return found
        time.sleep(0.1)


def _runs_firefox(pid: int, proc: Path) -> bool:
    try:
        return os.path.basename(os.readlink(proc / str(pid) / "exe")).startswith("firefox")
    except OSError:
        return False


def _holding_cert_store(pid: int, proc: Path) -> RunningFirefox | None:
    fd_dir = proc / str(pid) / "fd"
    try:
        links = [os.readlink(fd_dir / fd) for fd in os.listdir(fd_dir)]
    except OSError:
        return None
    profile = next((Path(t).parent for t in links if Path(t).name == "cert9.db"), None)
    started = process_start(pid, proc)
    if profile is None or started is None:
        return None
    return RunningFirefox(profile, started)


def process_start(pid: int, proc: Path = Path("/proc")) -> float | None:
    """A process's start time in epoch seconds (Linux /proc: ticks since boot plus the boot time)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = int(fields[19])  # field 22 of stat(5), counted after "pid (comm)"
        boot = next(int(line.split()[1]) for line in (proc / "stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot_time(boot) + ticks / os.sysconf("SC_CLK_TCK")


def boot_time(btime: int) -> float:
    """The boot time in epoch seconds, to the sub-second. /proc/stat's btime is truncated to whole seconds, which
    put a Firefox started right after a CA was installed up to a second *before* the install: it would be told to
    restart again (seen on a machine up for 3 hours: a process started 0.2 s earlier came out 1.05 s earlier).
    The wall clock minus CLOCK_BOOTTIME (the clock /proc's start ticks count) is exact; btime stays the answer
    where that clock is missing or disagrees (another /proc than this machine's)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is None:
        return float(btime)
    precise = time.time() - time.clock_gettime(boottime)
    return precise if abs(precise - btime) < 2 else float(btime)


def firefox_dirs(home: Path, env: Mapping[str, str] = os.environ) -> list[Path]:
    """Where Firefox keeps profiles.ini for this user (Linux: Debian's and Snap's)."""
    del env
    return [home / ".mozilla" / "firefox", home / "snap" / "firefox" / "common" / ".mozilla" / "firefox"]


def all_profiles(home: Path) -> list[Path]:
    """Every profile listed in the user's profiles.ini files."""
    out: list[Path] = []
    for base in firefox_dirs(home):
        ini = base / "profiles.ini"
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(ini.read_text(encoding="utf-8"))
        except (OSError, configparser.Error, UnicodeDecodeError):
            continue
        for section in parser.sections():
            if not section.startswith("Profile") or "path" not in parser[section]:
                continue
            raw = parser[section]["path"]
            path = base / raw if parser[section].get("isrelative", "1") == "1" else Path(raw)
            if path.is_dir() and path not in out:
                out.append(path)
    return out


def certutil_available() -> bool:
    return shutil.which(CERTUTIL) is not None


def _certutil(args: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    if not certutil_available():
        raise NssError("certutil is not installed (Debian/Ubuntu: apt install libnss3-tools; "
                       "Fedora: nss-tools; Arch: nss)")
    for attempt in range(3):  # the store can be busy for a moment (Firefox or another certutil writing it)
        try:
            r = subprocess.run([CERTUTIL, *args], capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise NssError(f"certutil failed: {e}") from None
        if r.returncode == 0 or attempt == 2 or "-D" in args:
            return r
        time.sleep(0.3)
    raise AssertionError("unreachable")


def _db(profile: Path) -> str:
    return f"sql:{profile}"


def add_ca(profile: Path, nickname: str, cert_pem_file: Path) -> None:
    """Trust the CA for TLS servers only ("C,,": not e-mail, not code signing)."""
    if not (profile / "cert9.db").exists():
        raise NssError(f"{profile} has no certificate store (cert9.db): start Firefox with it once")
    r = _certutil(["-A", "-n", nickname, "-t", "C,,", "-i", str(cert_pem_file), "-d", _db(profile)])
    if r.returncode != 0:
        raise NssError(f"certutil could not add {nickname!r} to {profile}: {r.stderr.strip() or r.stdout.strip()}")


def remove_ca(profile: Path, nickname: str) -> None:
    """Delete every certificate of this nickname; a missing one is fine (removed already)."""
    for _ in range(8):  # certutil -D removes one certificate per call
        if nickname not in lanefetch_nicknames(profile):
            return
        r = _certutil(["-D", "-n", nickname, "-d", _db(profile)])
        if r.returncode != 0:
            raise NssError(f"certutil could not remove {nickname!r} from {profile}: {r.stderr.strip()}")
    raise NssError(f"{nickname!r} is still in {profile}")


def lanefetch_nicknames(profile: Path) -> list[str]:
    """The lanefetch CAs in a profile's store."""
    if not (profile / "cert9.db").exists():
        return []
    r = _certutil(["-L", "-d", _db(profile)])
    if r.returncode != 0:
        raise NssError(f"certutil could not list {profile}: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        # "[token:]<nickname>   <trust flags>": the flags are the last column.
        name = line.rsplit(None, 1)[0].strip() if line.strip() else ""
        name = name.split(":", 1)[1] if name.startswith("NSS Certificate DB:") else name
        if name.startswith(NICK_PREFIX) and name not in out:
            out.append(name)
    return out


def now() -> float:
    return time.time()
