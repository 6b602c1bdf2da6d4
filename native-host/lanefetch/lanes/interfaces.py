"""Network interfaces a lane can use: discovery (name, addresses, up/down), the user's policy per
interface (enabled, weight, metered, daily byte cap, kept in a JSON file), today's byte counts, and
binding a socket to an interface.

Binding: Linux SO_BINDTODEVICE where permitted (root or CAP_NET_RAW on older kernels), else the
interface's own source address, which only takes that interface if routing sends that source there
(`route_warning` checks); macOS IP_BOUND_IF; Windows IP_UNICAST_IF (IPv4)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import ipaddress
import json
import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

_SIOCGIFFLAGS = 0x8913
_SIOCGIFADDR = 0x8915
_IFF_UP, _IFF_LOOPBACK, _IFF_RUNNING = 0x1, 0x8, 0x40
_IP_BOUND_IF = 25  # macOS <netinet/in.h>
_IP_UNICAST_IF = 31  # Windows <ws2ipdef.h>


@dataclass(frozen=True)
class Interface:
    name: str
    index: int
    up: bool
    loopback: bool
    addresses: tuple[str, ...]


def _ioctl(sock: socket.socket, request: int, name: str) -> bytes | None:
    import fcntl  # Unix only (discover() calls this on Linux): importing it at the top breaks the CLI on Windows

    try:
        return fcntl.ioctl(sock.fileno(), request, struct.pack("256s", name.encode()[:15]))
    except OSError:
        return None


def _ipv6_addresses() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with contextlib.suppress(OSError), open("/proc/net/if_inet6") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6:
                raw = parts[0]
                addr = ":".join(raw[i : i + 4] for i in range(0, 32, 4))
                out.setdefault(parts[5], []).append(socket.inet_ntop(socket.AF_INET6, socket.inet_pton(
                    socket.AF_INET6, addr)))
    return out


def discover() -> list[Interface]:
    """The interfaces of this host (this network namespace on Linux), by index. Addresses and up/down
    are read on Linux; elsewhere only names and indexes are known (up=True, no addresses)."""
    result: list[Interface] = []
    linux = sys.platform.startswith("linux")
    v6 = _ipv6_addresses() if linux else {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for index, name in socket.if_nameindex():
            if not linux:
                result.append(Interface(name, index, True, name.startswith("lo"), ()))
                continue
            flags_raw = _ioctl(s, _SIOCGIFFLAGS, name)
            flags = struct.unpack_from("H", flags_raw, 16)[0] if flags_raw else 0
            addrs: list[str] = []
            addr_raw = _ioctl(s, _SIOCGIFADDR, name)
            if addr_raw:
                addrs.append(socket.inet_ntoa(addr_raw[20:24]))
            addrs += v6.get(name, [])
            up = bool(flags & _IFF_UP) and bool(flags & _IFF_RUNNING)
            result.append(Interface(name, index, up, bool(flags & _IFF_LOOPBACK), tuple(addrs)))
    return result


# ------------------------------------------------------------------------------------------------ policy


@dataclass
class InterfacePolicy:
    enabled: bool = True
    weight: float = 1.0  # a lane's share before its throughput is measured
    metered: bool = False  # used only when metered interfaces are allowed
    daily_cap_bytes: int | None = None  # stop using it for the day after this many bytes


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "lanefetch"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer at a time: the CLI and every running helper share the policy file (else one writer's counts,
    merged from the file as it was before another's write, would replace them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        try:
            import fcntl
        except ImportError:  # Windows: a byte-range lock on the lock file's first byte
            import msvcrt

            # LK_LOCK retries for about ten seconds before it raises OSError: a writer stuck that long is a
            # clear error, not a reason to write unlocked.
            lock.seek(0)
            msvcrt.locking(lock.fileno(), msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined,unused-ignore]
            try:
                yield
            finally:
                lock.seek(0)
                msvcrt.locking(lock.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass(frozen=True)
class StoreChanges:
    """What one PolicyStore changed: policies set, bytes counted on usage_day."""

    policies: dict[str, InterfacePolicy]
    usage_day: str
    usage: dict[str, int]


@dataclass
class PolicyStore:
    """The user's interface policy and today's byte counts, in config_dir()/interfaces.json.

    Several processes write the file (the CLI, each running helper): `save` (or `write(snapshot())` in a thread)
    merges only what this store changed (policies given to `set_policy`, bytes given to `count`) into the file as it
    is then, under a lock, so nobody's change is lost."""

    path: Path = field(default_factory=lambda: config_dir() / "interfaces.json")
    policies: dict[str, InterfacePolicy] = field(default_factory=dict)
    usage_day: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    _changed: set[str] = field(default_factory=set, repr=False)
    _pending_day: str = field(default="", repr=False)
    _pending: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: Path | None = None) -> PolicyStore:
        store = cls() if path is None else cls(path)
        try:
            raw = json.loads(store.path.read_text())
        except FileNotFoundError:
            return store
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read the interface policy {store.path}: {e}") from None
        try:
            for name, p in raw.get("interfaces", {}).items():
                cap = p.get("daily_cap_bytes")
                policy = InterfacePolicy(
                    enabled=bool(p.get("enabled", True)), weight=float(p.get("weight", 1.0)),
                    metered=bool(p.get("metered", False)), daily_cap_bytes=None if cap is None else int(cap),
                )
                if not (math.isfinite(policy.weight) and policy.weight > 0):
                    raise ValueError(f"{name}: weight must be above 0, not {policy.weight}")
                if policy.daily_cap_bytes is not None and policy.daily_cap_bytes < 0:
                    raise ValueError(f"{name}: daily_cap_bytes must not be negative")
                store.policies[name] = policy
            store.usage_day = str(raw.get("usage_day", ""))
            store.usage = {k: int(v) for k, v in raw.get("usage", {}).items()}
        except (AttributeError, TypeError, ValueError, OverflowError) as e:  # Overflow: int() of JSON 1e999 (inf)
            raise ValueError(f"cannot read the interface policy {store.path}: {e}") from None
        return store

    def save(self) -> None:
        """Merge this store's changes into the file now, and read back what others wrote."""
        merged = self.write(self.snapshot())
        self.policies, self.usage_day, self.usage = merged.policies, merged.usage_day, merged.usage

    def snapshot(self) -> StoreChanges:
        """This store's changes since the last snapshot (taken on the event loop; write() may then run in a
        thread), and forgotten here: they are the writer's now."""
        changes = StoreChanges({n: self.policy(n) for n in self._changed}, self._pending_day, self._pending)
        self._changed, self._pending = set(), {}
        return changes

    def write(self, changes: StoreChanges) -> PolicyStore:
        """Merge changes into the file as it is now (an unreadable file is left alone: OSError); the result."""
        with _locked(self.path):
            try:
                disk = PolicyStore.load(self.path)
            except ValueError as e:
                raise OSError(f"{e} (not overwritten: fix or delete it)") from None
            disk.policies.update(changes.policies)
            today = _counting_day(disk.usage_day)
            if disk.usage_day != today:
                disk.usage_day, disk.usage = today, {}
            if changes.usage_day == today:
                for name, nbytes in changes.usage.items():
                    disk.usage[name] = disk.usage.get(name, 0) + nbytes
            data = {"interfaces": {k: asdict(v) for k, v in disk.policies.items()},
                    "usage_day": disk.usage_day, "usage": disk.usage}
            # Replaced whole (a reader never sees half a file), with the old file's mode (a file the user made 0600
            # stays so) and synced first (else a power loss may leave an empty file where the policy was).
            # A name of its own (not one shared ".tmp"): a writer that does not hold the lock (a file system
            # without locks) must not write into, or rename away, another writer's half-written file.
            fd, tmp_name = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
            tmp = Path(tmp_name)
            try:
                with open(fd, "w", encoding="utf-8") as f:
                    f.write(json.dumps(data, indent=2))
                    f.flush()
                    with contextlib.suppress(OSError):
                        os.chmod(tmp, os.stat(self.path).st_mode & 0o777)
                    os.fsync(f.fileno())
                tmp.replace(self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    tmp.unlink()  # a full disk leaves no half-written file behind
                raise
        return disk

    def set_policy(self, name: str, policy: InterfacePolicy) -> None:
        """Change one interface's policy (written by the next `save`)."""
        self.policies[name] = policy
        self._changed.add(name)

    def policy(self, name: str) -> InterfacePolicy:
        """A copy: change it with set_policy."""
        p = self.policies.get(name)
        return InterfacePolicy() if p is None else dataclasses.replace(p)

    def used_today(self, name: str) -> int:
        return self.usage.get(name, 0) if self.usage_day == _counting_day(self.usage_day) else 0

    def count(self, name: str, nbytes: int) -> None:
        today = _counting_day(self.usage_day)
        if self.usage_day != today:
            self.usage_day, self.usage = today, {}
        if self._pending_day != today:
            self._pending_day, self._pending = today, {}
        self.usage[name] = self.usage.get(name, 0) + nbytes
        self._pending[name] = self._pending.get(name, 0) + nbytes

    def why_not(self, iface: Interface, allow_metered: bool) -> str | None:
        """None if the interface may carry a lane now, else why not."""
        p = self.policy(iface.name)
        if iface.loopback:
            return "loopback"
        if not iface.up:
            return "down"
        if not any(_reaches_beyond_the_link(a) for a in iface.addresses):
            return "no address"
        if not p.enabled:
            return "disabled"
        if p.metered and not allow_metered:
            return "metered"
        if p.daily_cap_bytes is not None and self.used_today(iface.name) >= p.daily_cap_bytes:
            return f"daily cap of {p.daily_cap_bytes} bytes reached"
        return None


def _reaches_beyond_the_link(address: str) -> bool:
    """Not link-local: 169.254/16 (what an interface whose DHCP failed gives itself) and fe80::/10 (every IPv6
    interface has one) reach no server beyond the link, so an interface with only those carries no lane."""
    try:
        return not ipaddress.ip_address(address).is_link_local
    except ValueError:
        return False


def _today() -> str:
    return dt.date.today().isoformat()


def _counting_day(recorded: str) -> str:
    """The day bytes are counted on now: today, or the recorded day when that is one or two days after today. Local
    dates go back across midnight when the time zone moves west (up to two days: UTC+14 to UTC-12) or the clock is
    set back; starting that day's counts afresh would let a metered interface at its cap carry another day's worth,
    so the later day goes on counting until today passes it. A day further ahead was a wrong clock: afresh."""
    today = _today()
    try:
        ahead = (dt.date.fromisoformat(recorded) - dt.date.fromisoformat(today)).days
    except ValueError:  # nothing recorded yet, or not a date
        return today
    return recorded if 0 < ahead <= 2 else today


# ----------------------------------------------------------------------------------------------- binding


@dataclass(frozen=True)
class Binding:
    """How a lane's sockets leave through its interface."""

    interface: Interface
    method: str  # "device" (SO_BINDTODEVICE / IP_BOUND_IF / IP_UNICAST_IF) or "source address"

    def source_for(self, family: int) -> str | None:
        want6 = family == socket.AF_INET6
        for a in self.interface.addresses:
            if (":" in a) == want6 and _reaches_beyond_the_link(a):
                return a
        return None

    def setup(self, sock: socket.socket) -> None:
        """Applied to every socket of the lane before it connects."""
        if self.method == "device":
            bind_to_device(sock, self.interface)
        else:
            src = self.source_for(sock.family)
            if src is None:
                raise OSError(f"{self.interface.name} has no address of this family")
            sock.bind((src, 0))


def bind_to_device(sock: socket.socket, iface: Interface) -> None:
    if sys.platform.startswith("linux"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.name.encode())
    elif sys.platform == "darwin":
        level = socket.IPPROTO_IPV6 if sock.family == socket.AF_INET6 else socket.IPPROTO_IP
        sock.setsockopt(level, 125 if sock.family == socket.AF_INET6 else _IP_BOUND_IF, iface.index)
    elif sys.platform == "win32" and sock.family == socket.AF_INET:
        sock.setsockopt(socket.IPPROTO_IP, _IP_UNICAST_IF, socket.htonl(iface.index))
    else:
        raise PermissionError("binding to a device is not available here")


def binding_for(iface: Interface) -> Binding:
    """Bind to the device where this process may; else to the interface's source address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            bind_to_device(probe, iface)
            return Binding(iface, "device")
        except OSError:
            return Binding(iface, "source address")


def route_warning(binding: Binding, destination: str) -> str | None:
    """With source-address binding, whether the kernel's routing would send packets from that source out
    of another interface (then this lane is not really separate): a warning to show, or None."""
    if binding.method == "device" or not sys.platform.startswith("linux"):
        return None
    src = binding.source_for(socket.AF_INET6 if ":" in destination else socket.AF_INET)
    if src is None:
        return None
    try:
        out = subprocess.run(["ip", "-j", "route", "get", destination, "from", src], capture_output=True,
                             text=True, timeout=5, check=False)
        routes = json.loads(out.stdout or "[]")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    dev = routes[0].get("dev") if routes else None
    if dev and dev != binding.interface.name:
        return (f"{binding.interface.name}: bound by source address {src} (no permission for SO_BINDTODEVICE), "
                f"but routing sends it out of {dev}: add a policy rule (ip rule add from {src} table N)")
    return None


def parse_interface_arg(text: str) -> tuple[str, float | None]:
    """`NAME` or `NAME:WEIGHT` (the CLI's --interface)."""
    name, sep, weight = text.rpartition(":") if ":" in text else (text, "", "")
    if not sep:
        return text, None
    try:
        w = float(weight)
    except ValueError:
        raise ValueError(f"interface weight must be a number, got {weight!r}") from None
    if not (math.isfinite(w) and w > 0):
        raise ValueError(f"interface weight must be a number above 0, got {weight!r}")
    return name, w


def choose(
    names_weights: Iterable[tuple[str, float | None]], store: PolicyStore, allow_metered: bool,
    found: list[Interface] | None = None, warn: Callable[[str], None] | None = None,
) -> list[tuple[Interface, float]]:
    """The lanes to use: the named interfaces (all usable ones when none are named), with weights."""
    found = discover() if found is None else found
    by_name = {i.name: i for i in found}
    wanted = list(names_weights)
    if not wanted:
        wanted = [(i.name, None) for i in found if store.why_not(i, allow_metered) is None]
    lanes: list[tuple[Interface, float]] = []
    for name, weight in wanted:
        iface = by_name.get(name)
        if iface is None:
            raise ValueError(f"no interface named {name!r} (have: {', '.join(sorted(by_name))})")
        reason = store.why_not(iface, allow_metered)
        if reason is not None:
            if warn is not None:
                warn(f"interface {name} not used: {reason}")
            continue
        lanes.append((iface, weight if weight is not None else store.policy(name).weight))
    return lanes
