"""Network lab for tests and benchmarks: network namespaces joined by plain or emulated links.

    from bench.netlab import Lab, PROFILES
    with Lab() as lab:                         # creates nothing yet; cleans up on exit, SIGTERM/SIGHUP, atexit
        server = lab.host("server")            # new netns "lf<pid>-<n>-server", lo up, own address server.ip
        client = lab.host("client")
        l1 = lab.link(lab.root, server)        # plain veth pair (no emulation)
        l2 = lab.link(client, server, PROFILES["wcdma"])   # emulated: linkemu carries packets between 2 TUNs
        proc = server.popen(["nginx", ...])    # tracked, terminated on exit
        out = client.run(["curl", f"http://{l2.b_ip}/"])   # bounded timeout
        sock = client.socket()                 # a socket of this process that lives in the client netns

Addressing (all inside 10.231.0.0/16, reserved for the lab):
  * link N gets 10.231.N.0/24: ``a_ip`` = .1 on side a, ``b_ip`` = .2 on side b (connected routes).
  * every namespace host gets ``host.ip`` = 10.231.0.K/32 on lo, reachable from each linked peer (the main
    route uses the host pair's first link).
  * per-link policy routing on both ends: traffic with source ``a_ip`` (or a socket bound with
    SO_BINDTODEVICE to ``a_dev``) leaves through that link whatever the destination, so a multi-homed
    client reaches ``server.ip`` over the link it chose; replies follow the connected route back.

Side a is the client end: a profile's "down" rate is b→a, "up" is a→b.
Traffic only ever goes to loopback or to addresses inside namespaces this lab created.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import json
import math
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Literal, Self, TypeVar

NET = "10.231"
PUBLIC_IP = "100.128.231.2"  # Lab.public_address: just outside 100.64.0.0/10 (CGNAT), globally routable
PREFIX = "lf"
RULE_PREF = 1000
TABLE_BASE = 1 << 30  # policy table = TABLE_BASE + (pid << 8) + link index: stale cleanup decodes the pid
MTU = 1500
LINKEMU = Path(__file__).with_name("linkemu.py")

_NS_RE = re.compile(rf"^{PREFIX}(\d+)-")
_DEV_RE = re.compile(rf"^{PREFIX}(\d+)l\d+[ab]$")
_USED_NET_RE = re.compile(rf"\b{re.escape(NET)}\.(\d+)\.(\d+)")

T = TypeVar("T")
Socket = socket.socket  # Host.socket() shadows the module name inside the class


# --------------------------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class ClientDelay:
    """Extra round-trip delay per client address (half applied each way), fixed on first sight.

    ``table`` maps address → ms; other addresses draw from ``dist`` with ``params``:
    "uniform" (low_ms, high_ms), "lognormal" (median_ms, sigma), "choice" (ms, ms, ...). Seeded.
    """

    table: Mapping[str, float] = field(default_factory=dict)
    dist: Literal["uniform", "lognormal", "choice"] | None = None
    params: tuple[float, ...] = ()
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"table": dict(self.table), "dist": self.dist, "params": list(self.params), "seed": self.seed}


@dataclass(frozen=True)
class LinkProfile:
    """Link characteristics. Rates in kbit/s (None = unlimited); "down" is b→a, "up" a→b.

    ``queue_bytes`` is the drop-tail buffer in front of each direction's serializer; None picks
    max(one BDP at that direction's rate, 32 full packets). ``loss`` is a per-packet drop probability.
    ``per_client_delay`` adds per-client-address round-trip delay (a ClientDelay, or a mapping addr → ms).
    """

    rtt_ms: float = 0.0
    down_kbit: float | None = None
    up_kbit: float | None = None
    queue_bytes: int | None = None
    loss: float = 0.0
    per_client_delay: ClientDelay | Mapping[str, float] | None = None

    @property
    def emulated(self) -> bool:
        return bool(self.rtt_ms or self.down_kbit or self.up_kbit or self.loss or self.per_client_delay)

    def queue_for(self, rate_kbit: float | None) -> int | None:
        if self.queue_bytes is not None or rate_kbit is None:
            return self.queue_bytes
        bdp = rate_kbit * 1000 / 8 * self.rtt_ms / 1000
        return max(math.ceil(bdp), 32 * MTU)

    def emulator_config(self) -> dict[str, Any]:
        def direction(rate: float | None) -> dict[str, Any]:
            return {
                "delay_ms": self.rtt_ms / 2,
                "rate_kbit": rate,
                "queue_bytes": self.queue_for(rate),
                "loss": self.loss,
            }

        pcd = self.per_client_delay
        if pcd is not None and not isinstance(pcd, ClientDelay):
            pcd = ClientDelay(table=dict(pcd))
        return {
            "up": direction(self.up_kbit),
            "down": direction(self.down_kbit),
            "client_delay": pcd.to_json() if pcd else None,
        }


PROFILES: dict[str, LinkProfile] = {
    "lan": LinkProfile(),
    "wcdma": LinkProfile(rtt_ms=400, down_kbit=384, up_kbit=64),
    "lte": LinkProfile(rtt_ms=60, down_kbit=20_000, up_kbit=5_000),
    "sat": LinkProfile(rtt_ms=600, down_kbit=10_000, up_kbit=2_000),
    "bench2": LinkProfile(rtt_ms=200, down_kbit=2_000, up_kbit=512),  # the engine benchmark
}

_LANE = LinkProfile(rtt_ms=100, down_kbit=5_000, up_kbit=1_000)
#: Multi-link sets for the lanes feature: pass to ``Lab.links``.
LINK_SETS: dict[str, tuple[LinkProfile, ...]] = {
    "2x5mbit": (_LANE, _LANE),
    "3x5mbit": (_LANE, _LANE, _LANE),
    "10+5mbit": (
        LinkProfile(rtt_ms=80, down_kbit=10_000, up_kbit=2_000),
        LinkProfile(rtt_ms=120, down_kbit=5_000, up_kbit=1_000),
    ),
}


# ------------------------------------------------------------------------------------------ utilities


def _ip(args: Sequence[str], *, check: bool = True) -> str:
    r = subprocess.run(["ip", *args], check=False, capture_output=True, text=True, timeout=15)
    if check and r.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _ip_batch(ns: str | None, cmds: Sequence[str]) -> None:
    """Run several `ip` commands in one process (in namespace ns, or the root namespace)."""
    argv = ["ip", *(["-n", ns] if ns else []), "-batch", "-"]
    r = subprocess.run(
        argv, input="\n".join(cmds) + "\n", check=False, capture_output=True, text=True, timeout=15
    )
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed: {r.stderr.strip()}\ncommands:\n" + "\n".join(cmds))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_CLONE_NEWNET = 0x40000000


def in_netns(ns: str, fn: Callable[[], T]) -> T:
    """Call fn in a throwaway thread that has joined netns ns (namespaces are per thread).

    Sockets created there stay in that namespace for their whole life, usable from any thread.
    """
    result: list[T] = []
    error: list[BaseException] = []

    def body() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/run/netns/{ns}") as f:
                if libc.setns(f.fileno(), _CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            result.append(fn())
        except BaseException as e:
            error.append(e)

    t = threading.Thread(target=body, name=f"netns-{ns}")
    t.start()
    t.join()
    if error:
        raise error[0]
    return result[0]


class _LineReader:
    """Bounded-time line reads from a child's stdout pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""

    def readline(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError("no line from child")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("child closed its output")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()


# --------------------------------------------------------------------------------------- hosts, links


class Host:
    """A network namespace (or the root namespace: ``ns is None``) owned by a Lab."""

    def __init__(self, lab: Lab, name: str, ns: str | None, ip: str | None) -> None:
        self.lab = lab
        self.name = name
        self.ns = ns
        self._ip = ip
        self._routed_peers: set[str] = set()

    def __repr__(self) -> str:
        return f"Host({self.name!r}, ns={self.ns!r}, ip={self._ip!r})"

    @property
    def ip(self) -> str:
        """This host's own address (10.231.0.K/32 on lo), reachable over every link to it."""
        if self._ip is None:
            raise ValueError("the root namespace has no lab address: use a link's a_ip/b_ip")
        return self._ip

    def argv(self, argv: Sequence[str]) -> list[str]:
        """argv wrapped to run inside this namespace."""
        return [*(["ip", "netns", "exec", self.ns] if self.ns else []), *argv]

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start a process in this namespace; the lab terminates it (and its process group) on exit."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        kwargs.setdefault("start_new_session", True)  # own process group: stop() reaches its children
        proc = subprocess.Popen(self.argv(argv), **kwargs)
        self.lab._track(proc)
        return proc

    def run(
        self, argv: Sequence[str], *, timeout: float = 30.0, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run to completion in this namespace (killed after timeout); output captured as text."""
        return subprocess.run(
            self.argv(argv), input=input, capture_output=True, text=True, timeout=timeout, check=check
        )

    def socket(
        self, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM, *,
        source: str | None = None, device: str | None = None,
    ) -> Socket:
        """A socket created inside this namespace (the test process can then use it directly),
        optionally bound to a source address and/or a device (SO_BINDTODEVICE): that picks the link."""
        s = socket.socket(family, type) if self.ns is None else in_netns(self.ns, lambda: socket.socket(family, type))
        try:
            if device:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
            if source:
                s.bind((source, 0))
        except BaseException:
            s.close()
            raise
        return s

    def connect(self, addr: tuple[str, int], timeout: float = 10.0, *, source: str | None = None,
                device: str | None = None) -> Socket:
        """A TCP socket of this namespace connected to addr (see socket() for source/device)."""
        s = self.socket(source=source, device=device)
        try:
            s.settimeout(timeout)
            s.connect(addr)
        except BaseException:
            s.close()
            raise
        return s


@dataclass
class Link:
    """A link between hosts a and b; side a is the client side (down = b→a)."""

    index: int
    a: Host
    b: Host
    a_dev: str
    b_dev: str
    a_ip: str
    b_ip: str
    profile: LinkProfile | None
    table: int
    emulator: subprocess.Popen[bytes] | None = None
    final_stats: dict[str, Any] | None = None  # emulator counters, filled when the link is closed
    _lines: _LineReader | None = None

    @property
    def subnet(self) -> str:
        return f"{NET}.{self.index}.0/24"

    def stats(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """Live emulator counters: {"up": {...}, "down": {...}}; None for a plain veth link."""
        if self.emulator is None or self._lines is None:
            return self.final_stats
        if self.emulator.poll() is not None:
            return self.final_stats
        assert self.emulator.stdin is not None
        self.emulator.stdin.write(b"stats\n")
        self.emulator.stdin.flush()
        stats: dict[str, Any] = json.loads(self._lines.readline(timeout))
        return stats

    def close(self) -> None:
        """Stop the emulator (its TUN devices vanish with it) and keep its final counters."""
        emu = self.emulator
        if emu is None or emu.poll() is not None:
            return
        assert emu.stdin is not None and self._lines is not None
        with contextlib.suppress(OSError):
            emu.stdin.close()  # EOF = stop
        try:
            while True:  # the last line is the final counters; earlier unread lines are skipped
                line = self._lines.readline(3.0)
                if line.startswith("{"):
                    self.final_stats = json.loads(line)
        except (EOFError, TimeoutError, ValueError):
            pass
        stop_process(emu)


def stop_process(proc: subprocess.Popen[Any], grace: float = 3.0) -> None:
    """SIGTERM the process group we created (start_new_session), then SIGKILL after grace."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


class Lab:
    """Owner of namespaces, links and processes; ``close()`` (or leaving ``with``) removes them all."""

    # Process-wide, so indexes stay unique across labs; starting at a pid-derived offset makes concurrent
    # processes pick different subnets even before they see each other's in the root namespace.
    _link_counter = os.getpid() % 254
    _host_counter = os.getpid() % 254
    _lab_counter = 0
    _lock = threading.Lock()

    def __init__(self, *, clean_stale: bool = True) -> None:
        if os.geteuid() != 0:
            raise PermissionError("the network lab needs root (network namespaces, TUN devices)")
        self.pid = os.getpid()
        with Lab._lock:
            Lab._lab_counter += 1
            self.id = Lab._lab_counter
        self.root = Host(self, "root", None, None)
        self.hosts: list[Host] = []
        self._links: list[Link] = []
        self._procs: list[subprocess.Popen[Any]] = []
        self._deferred: list[Callable[[], None]] = []
        self._old_handlers: dict[int, Any] = {}
        self._closed = False
        if clean_stale:
            cleanup_stale()
        atexit.register(self.close)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Raise so `with Lab()` unwinds and cleans up; a plain default handler would leave namespaces behind.
        raise SystemExit(128 + signum)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- building

    def host(self, name: str) -> Host:
        """A new namespace with lo up and its own address ``ip`` (10.231.0.K/32 on lo)."""
        if not re.fullmatch(r"[A-Za-z0-9_.]{1,40}", name):
            raise ValueError(f"bad host name {name!r}")
        ns = f"{PREFIX}{self.pid}-{self.id}-{name}"
        with _root_lock():
            k = self._next_host(_root_used())
        _ip(["netns", "add", ns])
        h = Host(self, name, ns, f"{NET}.0.{k}")
        self.hosts.append(h)
        _ip_batch(ns, ["link set lo up", f"addr add {h.ip}/32 dev lo"])
        return h

    def link(self, a: Host, b: Host, profile: LinkProfile | None = None) -> Link:
        """Join a (client side) and b with a new /24. Emulated through linkemu when the profile asks for
        delay, rate, loss or per-client delay; otherwise a veth pair. Returns when packets can flow."""
        if a is b:
            raise ValueError("a link needs two different hosts")
        emulated = profile is not None and profile.emulated
        fds: list[int] = []
        try:
            with _root_lock():  # allocation and root-namespace changes are atomic across processes
                used = _root_used()
                idx = self._next_link(used)
                link = Link(
                    index=idx, a=a, b=b,
                    a_dev=f"{PREFIX}{self.pid}l{idx}a", b_dev=f"{PREFIX}{self.pid}l{idx}b",
                    a_ip=f"{NET}.{idx}.1", b_ip=f"{NET}.{idx}.2",
                    profile=profile, table=TABLE_BASE + (self.pid << 8) + idx,
                )
                self._links.append(link)
                if emulated:
                    fds = [_open_tun(link.a_dev), _open_tun(link.b_dev)]
                cmds = [] if emulated else [f"link add {link.a_dev} type veth peer name {link.b_dev}"]
                cmds += [f"link set dev {d} netns {h.ns}" for h, d in ((a, link.a_dev), (b, link.b_dev)) if h.ns]
                if cmds:
                    _ip_batch(None, cmds)
                self._configure_end(link, a, link.a_dev, link.a_ip, b, used)
                self._configure_end(link, b, link.b_dev, link.b_ip, a, used)
            if emulated:
                assert profile is not None
                self._start_emulator(link, profile, fds)
        finally:
            for fd in fds:  # the emulator holds its own copies; ours would keep the devices alive
                os.close(fd)
        return link

    def public_address(self, link: Link, ip: str = PUBLIC_IP) -> str:
        """The server end (b) of link answers on ip too (a /32 on its lo), which the client end (a) reaches over
        link only: a page served there is *public* to the browser, the extension and the helper (their address
        policies judge the IP literal), as a real site is. The address is outside every special-purpose range
        (so: someone's on the Internet), which is why it is routed only between the lab's own two namespaces:
        neither has any other route out, nothing leaves them."""
        if link.a.ns is None or link.b.ns is None:
            raise ValueError("a public address only between two lab namespaces")
        _ip_batch(link.b.ns, [f"addr add {ip}/32 dev lo"])
        _ip_batch(link.a.ns, [f"route add {ip}/32 via {link.b_ip} dev {link.a_dev}"])
        return ip

    def links(self, a: Host, b: Host, profiles: Sequence[LinkProfile | None]) -> list[Link]:
        """Several parallel links between a and b (multi-interface client), e.g. ``LINK_SETS["2x5mbit"]``."""
        return [self.link(a, b, p) for p in profiles]

    def _configure_end(
        self, link: Link, h: Host, dev: str, ip: str, peer: Host, root_used: set[tuple[int, int]]
    ) -> None:
        t = link.table
        cmds = [
            f"link set dev {dev} mtu {MTU} addrgenmode none",  # no IPv6 link-local chatter on the lab links
            f"addr add {ip}/24 dev {dev}",
            f"link set dev {dev} up",
            f"route add default dev {dev} table {t}",
            f"rule add from {ip} lookup {t} pref {RULE_PREF}",
            f"rule add oif {dev} lookup {t} pref {RULE_PREF}",
        ]
        # Another process's host may hold the same 10.231.0.K in the root namespace: then keep its route.
        clash = h.ns is None and peer._ip is not None and (0, int(peer._ip.rsplit(".", 1)[1])) in root_used
        if peer._ip and peer._ip not in h._routed_peers and not clash:
            h._routed_peers.add(peer._ip)
            cmds.append(f"route add {peer._ip}/32 dev {dev}")
        _ip_batch(h.ns, cmds)

    def _start_emulator(self, link: Link, profile: LinkProfile, fds: list[int]) -> None:
        cfg = json.dumps(profile.emulator_config())
        argv = [sys.executable, str(LINKEMU), "--fd-a", str(fds[0]), "--fd-b", str(fds[1]), "--config", cfg]
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=fds, start_new_session=True
        )
        self._track(proc)
        link.emulator = proc
        assert proc.stdout is not None
        link._lines = _LineReader(proc.stdout.fileno())
        try:
            line = link._lines.readline(10.0)
        except (TimeoutError, EOFError) as e:
            raise RuntimeError(f"link emulator for {link.a_dev} did not start: {e}") from e
        if line != "ready":
            raise RuntimeError(f"link emulator for {link.a_dev}: unexpected {line!r}")

    # -- allocation: unique within the process, and free in the root namespace (other labs may use it)

    @staticmethod
    def _next_link(used: set[tuple[int, int]]) -> int:
        taken = {x for x, _ in used}
        for _ in range(254):
            Lab._link_counter = Lab._link_counter % 254 + 1
            if Lab._link_counter not in taken:
                return Lab._link_counter
        raise RuntimeError("no free lab subnet")

    @staticmethod
    def _next_host(used: set[tuple[int, int]]) -> int:
        taken = {y for x, y in used if x == 0}
        for _ in range(254):
            Lab._host_counter = Lab._host_counter % 254 + 1
            if Lab._host_counter not in taken:
                return Lab._host_counter
        raise RuntimeError("no free lab host address")

    def _track(self, proc: subprocess.Popen[Any]) -> None:
        self._procs.append(proc)

    def defer(self, fn: Callable[[], None]) -> None:
        """Run fn at close, after every process has stopped (e.g. remove a server's temp dir)."""
        self._deferred.append(fn)

    # -- teardown

    def close(self) -> None:
        """Stop every process, emulator and namespace this lab created. Idempotent; never raises."""
        if self._closed or os.getpid() != self.pid:  # a forked child must not tear down its parent's lab
            return
        self._closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        for sig, old in self._old_handlers.items():
            with contextlib.suppress(Exception):
                signal.signal(sig, old)
        emulators = {id(link.emulator) for link in self._links}
        for proc in reversed(self._procs):  # servers and clients first, link emulators last
            if id(proc) not in emulators:
                stop_process(proc)
        for link in self._links:
            with contextlib.suppress(Exception):
                link.close()
        for h in self.hosts:
            assert h.ns is not None
            _remove_namespace(h.ns)
        # Devices still in the root namespace: root ends, and pairs of a link() that failed half-way.
        present = _root_devices()
        for link in self._links:
            for dev in (link.a_dev, link.b_dev):
                if dev in present:
                    _ip(["link", "del", dev], check=False)
            if link.a.ns is None or link.b.ns is None:
                _del_rules(link.table)
        for fn in reversed(self._deferred):
            with contextlib.suppress(Exception):
                fn()


@contextlib.contextmanager
def _root_lock() -> Iterator[None]:
    os.makedirs("/run/lock", exist_ok=True)
    with open("/run/lock/lanefetch-netlab.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        with Lab._lock:
            yield


def _root_devices() -> set[str]:
    return set(re.findall(r"^\d+: ([^:@\s]+)", _ip(["-o", "link"], check=False), re.MULTILINE))


def _root_used() -> set[tuple[int, int]]:
    """(third, fourth) octets of 10.231.x.y addresses and routes present in the root namespace."""
    text = _ip(["-4", "-o", "addr"]) + _ip(["-4", "route", "show", "table", "all"])
    return {(int(x), int(y)) for x, y in _USED_NET_RE.findall(text)}


def _open_tun(name: str) -> int:
    tunsetiff, iff_tun, iff_no_pi = 0x400454CA, 0x0001, 0x1000
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, tunsetiff, struct.pack("16sH", name.encode(), iff_tun | iff_no_pi))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _remove_namespace(ns: str) -> None:
    """Kill what is left inside ns (only our descendants can be there), then delete it."""
    for _ in range(3):
        pids = [int(p) for p in _ip(["netns", "pids", ns], check=False).split()]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    _ip(["netns", "del", ns], check=False)


def _del_rules(table: int) -> None:
    for _ in range(4):  # "from" and "oif" rule per link end; bounded
        if subprocess.run(["ip", "rule", "del", "pref", str(RULE_PREF), "table", str(table)],
                          check=False, capture_output=True, timeout=10).returncode:
            break


def cleanup_stale() -> list[str]:
    """Remove lab namespaces, root devices and policy rules left by processes that no longer exist."""
    removed: list[str] = []
    for line in _ip(["netns", "list"], check=False).splitlines():
        ns = line.split()[0] if line.strip() else ""
        if (m := _NS_RE.match(ns)) and not _pid_alive(int(m.group(1))):
            _remove_namespace(ns)
            removed.append(ns)
    for dev in _root_devices():
        if (m := _DEV_RE.match(dev)) and not _pid_alive(int(m.group(1))):
            _ip(["link", "del", dev], check=False)
            removed.append(dev)
    for table in {int(t) for t in re.findall(r"lookup (\d+)", _ip(["rule", "show"], check=False))}:
        if TABLE_BASE <= table < 2 * TABLE_BASE and not _pid_alive((table - TABLE_BASE) >> 8):
            _del_rules(table)
            removed.append(f"rules of table {table}")
    return removed

