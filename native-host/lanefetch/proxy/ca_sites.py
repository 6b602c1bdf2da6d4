"""The sites the user opted into Firefox HTTPS acceleration, made true on disk and in Firefox: one CA per site
(ca_certs.py), its key readable by the user only under the user's data directory, installed into the Firefox
profile the extension runs in (ca_firefox.py), removed from both when the site leaves the set.

One CA per site rather than one CA regenerated whenever the set changes: a CA Firefox has not loaded yet (added
while it runs) is trusted only after a restart, so regenerating would stop every other site until then; per site,
turning one site on or off touches nothing else, and a stolen key is worth one site.

A site that is a public suffix (`com`, `co.uk`, `github.io`: names under which unrelated parties register their
own) is refused, and a CA installed for one earlier is removed: its name constraint would cover every site under
it, and so would its key. Either scope: an X.509 dNSName constraint always covers the subdomains too.

State per profile (a directory named by a hash of the profile's path): `state.json` and, per CA, `<serial>.pem`
and `<serial>.key` (mode 0600), in folders of mode 0700 (each one the helper makes). Nothing here ever leaves
the machine."""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from publicsuffixlist import PublicSuffixList

from . import ca_firefox
from .ca_certs import RENEW_BEFORE, Authority, Site, make_authority

SiteStateName = Literal["active", "restart_needed", "failed"]
_LABEL = re.compile(r"[a-z0-9_-]+")  # what a site's name is made of (no `*`: X.509 refuses it in a constraint)
_HELPER_STARTED = time.time()


def default_data_dir(platform: str = sys.platform, env: Mapping[str, str] = os.environ,
                     home: Path | None = None) -> Path:
    """The user's data directory for lanefetch (Linux: $XDG_DATA_HOME/lanefetch, else ~/.local/share/lanefetch)."""
    home = home if home is not None else Path.home()
    if platform == "win32":
        base = env.get("APPDATA")
        return (Path(base) if base else home / "AppData" / "Roaming") / "lanefetch"
    if platform == "darwin":
        return home / "Library" / "Application Support" / "lanefetch"
    xdg = env.get("XDG_DATA_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "lanefetch"
    return home / ".local" / "share" / "lanefetch"


def https_root(data_dir: Path | None = None) -> Path:
    return (data_dir or default_data_dir()) / "firefox-https"


@dataclass
class InstalledCa:
    scope: str
    name: str
    serial: str  # hex; names the files
    nickname: str
    installed_at: float  # epoch seconds
    not_after: float
    profiles: list[str] = field(default_factory=list)

    @property
    def site(self) -> Site:
        return Site("domain" if self.scope == "domain" else "host", self.name)


@dataclass(frozen=True)
class SiteState:
    site: Site
    state: SiteStateName
    expires: float | None = None
    detail: str | None = None


@dataclass(frozen=True)
class SyncResult:
    profiles: list[Path]
    which: str  # how the profiles were chosen, for the user
    sites: list[SiteState]


@functools.cache
def _public_suffixes() -> PublicSuffixList:
    # The Public Suffix List bundled in the `publicsuffixlist` package (pinned in pyproject.toml, refreshed with
    # its releases): read from the installed package, never fetched at run time. Chosen over tldextract, which
    # fetches the list over the network unless told not to, and over reading the extension's tldts data, whose
    # list is compiled into JavaScript. Both ICANN and private entries count (github.io is a private one), and
    # a name on no rule is a public suffix too (the list's default rule "*"), as browsers treat it.
    return PublicSuffixList()


def public_suffix_problem(site: Site) -> str | None:
    """Why `site` may not get a CA (its name is a public suffix, or no DNS name a constraint can hold: a wildcard),
    or None. Addresses are no domain names."""
    if site.address() is not None:
        return None
    name = site.name.lower().rstrip(".")
    if name and not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return (f"{name} is not a site's DNS name (letters, digits, hyphens and underscores; a wildcard such as "
                "*.example.com is none): name the site itself, such as example.com")
    if not name or _public_suffixes().is_public(name):
        example = f"example.{name}" if name else "example.com"
        return (f"{name or '(empty)'} is a public suffix (Public Suffix List): a certificate authority for it "
                f"would be trusted for every site under it; choose one site, such as {example}, instead")
    return None


def _private_dir(path: Path) -> Path:
    """`path` made mode 0700, and every folder made on the way to it too: mkdir(parents=True) makes those by the
    umask alone (world-writable under a umask of 0, where another user could swap the profile's folder for one
    of theirs and have their certificate imported as the site's CA)."""
    for folder in reversed([path, *path.parents]):
        if not folder.exists():
            with contextlib.suppress(FileExistsError):  # made meanwhile by another helper: its mode is its own
                folder.mkdir(mode=0o700)
    path.chmod(0o700)
    return path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


class ProfileState:
    """The CAs lanefetch installed for one Firefox profile (or for 'all profiles')."""

    def __init__(self, root: Path, profile: Path | None) -> None:
        label = str(profile) if profile is not None else "all-profiles"
        self.dir = root / "profiles" / hashlib.sha256(label.encode()).hexdigest()[:16]
        self.profile = profile

    @classmethod
    def every(cls, root: Path) -> list[ProfileState]:
        out = []
        for d in sorted((root / "profiles").glob("*")):
            try:
                meta = json.loads((d / "state.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            ps = cls(root, Path(meta["profile"]) if meta.get("profile") else None)
            ps.dir = d
            out.append(ps)
        return out

    def load(self) -> list[InstalledCa]:
        try:
            meta = json.loads((self.dir / "state.json").read_text(encoding="utf-8"))
            return [InstalledCa(**c) for c in meta.get("cas", [])]
        except (OSError, ValueError, TypeError):
            return []

    def save(self, cas: list[InstalledCa]) -> None:
        _private_dir(self.dir)
        body = json.dumps({"profile": str(self.profile) if self.profile else None,
                           "cas": [asdict(c) for c in cas]}, indent=1)
        _write_private(self.dir / "state.json.tmp", body.encode())
        os.replace(self.dir / "state.json.tmp", self.dir / "state.json")

    def authority(self, ca: InstalledCa) -> Authority | None:
        try:
            return Authority.from_pem(ca.site, (self.dir / f"{ca.serial}.pem").read_bytes(),
                                      (self.dir / f"{ca.serial}.key").read_bytes())
        except (OSError, ValueError):
            return None

    def write_authority(self, auth: Authority) -> InstalledCa:
        _private_dir(self.dir)
        serial = f"{auth.cert.serial_number:x}"
        _write_private(self.dir / f"{serial}.key", auth.key_pem())
        _write_private(self.dir / f"{serial}.pem", auth.cert_pem())
        return InstalledCa(auth.site.scope, auth.site.name, serial, auth.nickname, time.time(),
                           auth.not_after.timestamp())

    def uninstall(self, ca: InstalledCa) -> list[str]:
        """Remove the CA from every profile it went into and delete its files; the problems, if any."""
        problems = []
        for p in ca.profiles:
            try:
                ca_firefox.remove_ca(Path(p), ca.nickname)
            except ca_firefox.NssError as e:
                problems.append(str(e))
        for suffix in (".key", ".pem"):
            with contextlib.suppress(FileNotFoundError):
                (self.dir / f"{ca.serial}{suffix}").unlink()
        return problems


def _drop_unwanted(state: ProfileState, wanted: list[Site], refused: Mapping[Site, str],
                   now: float) -> list[InstalledCa]:
    """Uninstall the state's CAs of sites not wanted (or refused, or expired); the others."""
    kept: list[InstalledCa] = []
    for ca in state.load():
        if ca.site not in wanted or ca.site in refused or ca.not_after <= now:
            state.uninstall(ca)
        else:
            kept.append(ca)
    return kept


class HttpsSites:
    """Used by the helper for one Firefox: `sync` makes the opted-in set true, `authority_for` gives the CA a host's
    certificate is minted from (only CAs this Firefox has loaded, i.e. installed before it started)."""

    def __init__(self, root: Path, firefox: ca_firefox.RunningFirefox | None, home: Path | None = None,
                 clock: Callable[[], float] = time.time,
                 find: Callable[[], ca_firefox.RunningFirefox | None] | None = None) -> None:
        self.root = root
        self.firefox = firefox
        # Asked again at each sync while the running Firefox is unknown (it may not hold its store open yet).
        self._find = find
        self.home = home if home is not None else Path.home()
        self.clock = clock
        self.state = ProfileState(root, firefox.profile if firefox else None)
        self._loaded: dict[Site, Authority] = {}

    @property
    def browser_started(self) -> float:
        # Without /proc (not Linux) the browser's start is unknown: the helper's own start is the best guess.
        return self.firefox.started if self.firefox else _HELPER_STARTED

    def targets(self) -> tuple[list[Path], str]:
        if self.firefox is not None:
            return [self.firefox.profile], f"the Firefox profile lanefetch runs in ({self.firefox.profile})"
        found = ca_firefox.all_profiles(self.home)
        return found, ("every Firefox profile of this user (the running one could not be determined): "
                       + (", ".join(str(p) for p in found) or "none found"))

    def sync(self, wanted: list[Site]) -> SyncResult:
        if self.firefox is None and self._find is not None and (found := self._find()) is not None:
            self.firefox = found
            self.state = ProfileState(self.root, found.profile)
        now = self.clock()
        profiles, which = self.targets()
        refused = {site: problem for site in wanted if (problem := public_suffix_problem(site)) is not None}
        kept = _drop_unwanted(self.state, wanted, refused, now)
        if self.firefox is not None:
            # CAs made for every profile (this one too) while the running Firefox was unknown (before it opened its
            # store, or in an earlier session): a site turned off must leave the store through those as well.
            shared = ProfileState(self.root, None)
            if shared.dir != self.state.dir and (before := shared.load()):
                left = _drop_unwanted(shared, wanted, refused, now)
                if left != before:
                    shared.save(left)
        states = []
        for site in wanted:
            if site in refused:
                states.append(SiteState(site, "failed", detail=refused[site]))
            else:
                states.append(self._ensure(site, kept, profiles, now))
        # Of the CAs this Firefox has loaded the newest serves, older ones go; ones not loaded yet wait for a restart.
        final = []
        for site in {c.site for c in kept}:
            mine = [c for c in kept if c.site == site]
            loaded = [c for c in mine if c.installed_at < self.browser_started]
            newest = max(loaded, key=lambda c: c.not_after, default=None)
            for c in mine:
                if c in loaded and c is not newest:
                    self.state.uninstall(c)
                else:
                    final.append(c)
        if final or self.state.dir.exists():
            self.state.save(final)
        self._loaded = {}
        for ca in sorted(final, key=lambda c: c.not_after):
            if ca.installed_at < self.browser_started and (auth := self.state.authority(ca)) is not None:
                self._loaded[ca.site] = auth
        return SyncResult(profiles, which, states)

    def _ensure(self, site: Site, kept: list[InstalledCa], profiles: list[Path], now: float) -> SiteState:
        mine = [c for c in kept if c.site == site]
        fresh = [c for c in mine if c.not_after - now > RENEW_BEFORE.total_seconds()]
        if not fresh:
            if not profiles:
                return SiteState(site, "failed", detail="no Firefox profile found to install the certificate into")
            auth = make_authority(site, datetime.datetime.fromtimestamp(now, datetime.UTC))
            ca = self.state.write_authority(auth)
            ca.installed_at = now
            for p in profiles:
                try:
                    ca_firefox.add_ca(p, ca.nickname, self.state.dir / f"{ca.serial}.pem")
                    ca.profiles.append(str(p))
                except ca_firefox.NssError as e:
                    self.state.uninstall(ca)
                    return SiteState(site, "failed", detail=str(e))
            kept.append(ca)
            mine.append(ca)
        usable = [c for c in mine if c.installed_at < self.browser_started]
        expires = max((c.not_after for c in mine), default=None)
        if usable:
            return SiteState(site, "active", expires)
        return SiteState(site, "restart_needed", expires,
                         "Firefox trusts a new certificate authority after it restarts")

    def authority_for(self, host: str) -> Authority | None:
        """The loaded CA whose site covers host (an exact-host site wins over its domain), while it is valid: Firefox
        may run past its expiry (a successor waits for a restart), and a leaf of it would then fail in Firefox
        where the site loads without lanefetch (minting one even raised)."""
        best: Authority | None = None
        now = self.clock()
        for site, auth in self._loaded.items():
            if auth.not_after.timestamp() <= now:
                continue
            if site.covers(host) and (best is None or site.scope == "host"):
                best = auth
        return best


def status(root: Path) -> list[dict[str, Any]]:
    """Everything lanefetch installed, per profile, and whether each CA is still in that profile's store."""
    out = []
    for ps in ProfileState.every(root):
        for ca in ps.load():
            present = {}
            for p in ca.profiles:
                try:
                    present[p] = ca.nickname in ca_firefox.lanefetch_nicknames(Path(p))
                except ca_firefox.NssError:
                    present[p] = False
            out.append({"site": ca.site.key, "nickname": ca.nickname, "installed_at": ca.installed_at,
                        "not_after": ca.not_after, "profiles": present,
                        "key_file": str(ps.dir / f"{ca.serial}.key")})
    return out


def remove_all(root: Path, home: Path) -> list[str]:
    """Undo everything: every lanefetch CA out of every profile lanefetch used or the user has, every key deleted.
    Returns what was done (and problems)."""
    done: list[str] = []
    profiles: set[Path] = set(ca_firefox.all_profiles(home))
    for ps in ProfileState.every(root):
        for ca in ps.load():
            profiles.update(Path(p) for p in ca.profiles)
            problems = ps.uninstall(ca)
            done.append(f"removed {ca.nickname}" + (f" (problems: {'; '.join(problems)})" if problems else ""))
        for f in ps.dir.iterdir():
            f.unlink()
        ps.dir.rmdir()
    for p in sorted(profiles):
        try:
            for nick in ca_firefox.lanefetch_nicknames(p):
                ca_firefox.remove_ca(p, nick)
                done.append(f"removed {nick} from {p}")
        except ca_firefox.NssError as e:
            done.append(f"problem: {e}")
    return done
