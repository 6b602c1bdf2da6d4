"""The network lab is faithful: connect time ≈ RTT, bulk goodput ≈ rate, slow start and drop-tail show,
multi-link source routing works, everything is cleaned up, and real nginx/Apache serve and log."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.netlab import PROFILES, ClientDelay, Host, Lab, LinkProfile, cleanup_stale
from bench.servers import compression_conf, start_apache, start_nginx

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces and TUN devices"),
]

PORT = 9000
TCP_IP_OVERHEAD = 52  # IPv4 20 + TCP 20 + timestamps 12: wire bytes per segment beyond the payload


@pytest.fixture
def lab() -> Iterator[Lab]:
    with Lab() as lb:
        yield lb


def _listener(host: Host, ip: str) -> socket.socket:
    srv = host.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((ip, PORT))
    srv.listen(16)
    return srv


def _connect_times(
    client: Host, addr: tuple[str, int], n: int = 3, *, source: str | None = None, device: str | None = None
) -> list[float]:
    """TCP handshake durations (ms) of n fresh connections, each after the previous one has closed."""
    out = []
    for _ in range(n):
        with client.socket(source=source, device=device) as s:
            s.settimeout(10)
            t0 = time.monotonic()
            s.connect(addr)
            out.append((time.monotonic() - t0) * 1000)
        time.sleep(0.05)  # let the FIN exchange clear a slow uplink before the next SYN
    return out


def _download(
    client: Host, server: Host, server_ip: str, nbytes: int, rcvbuf: int | None = None
) -> tuple[list[tuple[float, int]], int]:
    """Send nbytes server → client over one TCP connection; client-side (time, bytes so far) marks and MSS."""
    srv = _listener(server, server_ip)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(16)
            conn.sendall(b"x" * nbytes)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    with client.socket() as s:
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(60)
        s.connect((server_ip, PORT))
        mss = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
        s.sendall(b"go")
        marks = [(time.monotonic(), 0)]
        got = 0
        while got < nbytes and (chunk := s.recv(1 << 16)):
            got += len(chunk)
            marks.append((time.monotonic(), got))
    th.join(10)
    srv.close()
    assert got == nbytes
    return marks, mss


# ------------------------------------------------------------------------------------------ fidelity


@pytest.mark.parametrize("name", ["wcdma", "lte", "sat", "bench2"])
def test_connect_time_is_one_rtt(lab: Lab, name: str) -> None:
    client, server = lab.host("client"), lab.host("server")
    link = lab.link(client, server, PROFILES[name])
    srv = _listener(server, link.b_ip)
    median = statistics.median(_connect_times(client, (link.b_ip, PORT)))
    srv.close()
    rtt = PROFILES[name].rtt_ms
    assert rtt <= median <= rtt * 1.15, f"{name}: connect {median:.1f} ms vs RTT {rtt} ms"


@pytest.mark.parametrize(
    ("name", "nbytes", "slow_start"),
    [("lte", 4_000_000, True), ("wcdma", 150_000, False), ("bench2", 600_000, True)],
)
def test_bulk_goodput_matches_rate(lab: Lab, name: str, nbytes: int, slow_start: bool) -> None:
    prof = PROFILES[name]
    assert prof.down_kbit is not None
    bdp = prof.down_kbit * 1000 / 8 * prof.rtt_ms / 1000
    # A receive window a bit above the BDP fills the pipe; the queue is made larger than any window the
    # kernel can advertise for that buffer (at most twice SO_RCVBUF), so no loss-recovery stall can hide the
    # link rate whatever the timing (losses are test_drop_tail's subject). With the default 1-BDP queue,
    # 8 drops were once seen in CI on lte.
    rcvbuf = int(1.25 * bdp)
    client, server = lab.host("client"), lab.host("server")
    link = lab.link(client, server, dataclasses.replace(prof, queue_bytes=2 * rcvbuf + 64 * 1024))
    marks, mss = _download(client, server, link.b_ip, nbytes, rcvbuf=rcvbuf)

    # Steady state: the last 60 % of the transfer time (slow start is over).
    t_first = next(t for t, b in marks if b > 0)
    t_end, _ = marks[-1]
    t_mid = t_first + 0.4 * (t_end - t_first)
    b_mid = max(b for t, b in marks if t <= t_mid)
    goodput = (nbytes - b_mid) * 8 / (t_end - t_mid) / 1000
    expected = prof.down_kbit * mss / (mss + TCP_IP_OVERHEAD)
    stats = link.stats()
    assert stats is not None
    assert goodput < expected * 1.03, f"{name}: {goodput:.0f} kbit/s is above the link rate ({expected:.0f})"
    late = stats["down"]["late_packets"] / max(1, stats["down"]["packets"])
    if goodput < expected * 0.97 and late > 0.01:
        # A userspace carrier cannot keep a rate when the machine gives it no CPU: say so rather than pass.
        pytest.skip(f"{name}: {goodput:.0f} kbit/s vs {expected:.0f}, emulator starved ({late:.0%} packets late)")
    assert goodput > expected * 0.97, f"{name}: {goodput:.0f} kbit/s vs {expected:.0f} expected ({late:.1%} late)"

    if slow_start:  # the first RTT of data carries about the initial window, far below rate × RTT
        first_rtt = max(b for t, b in marks if t < t_first + prof.rtt_ms / 1000)
        assert first_rtt <= 0.5 * bdp, f"{name}: {first_rtt} B in the first RTT vs BDP {bdp:.0f} B"
    assert stats["down"]["bytes"] >= nbytes and stats["down"]["dropped_queue"] == 0


def test_drop_tail_small_queue_drops_and_bounds_backlog(lab: Lab) -> None:
    client, server = lab.host("client"), lab.host("server")
    link = lab.link(client, server, LinkProfile(rtt_ms=40, down_kbit=4000, up_kbit=1000, queue_bytes=6000))
    _download(client, server, link.b_ip, 400_000)
    stats = link.stats()
    assert stats is not None
    assert stats["down"]["dropped_queue"] > 0
    assert stats["down"]["max_backlog_bytes"] <= 6000
    assert stats["up"]["dropped_queue"] == 0


def test_random_loss_rate(lab: Lab) -> None:
    client, server = lab.host("client"), lab.host("server")
    link = lab.link(client, server, LinkProfile(rtt_ms=10, loss=0.2))
    rx = server.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind((link.b_ip, PORT))
    rx.settimeout(0.5)
    received = 0

    def receive() -> None:
        nonlocal received
        with contextlib.suppress(TimeoutError):
            while rx.recv(64):
                received += 1

    th = threading.Thread(target=receive)
    th.start()
    with client.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        for i in range(1000):
            tx.sendto(b"%d" % i, (link.b_ip, PORT))
            if i % 50 == 49:
                time.sleep(0.005)  # stay far below the TUN device queue
    th.join(10)
    rx.close()
    stats = link.stats()
    assert stats is not None and stats["up"]["dropped_loss"] + stats["up"]["packets"] == 1000
    assert received == stats["up"]["packets"]
    assert 0.74 <= received / 1000 <= 0.86, received


def test_per_client_delay(lab: Lab) -> None:
    client, server = lab.host("client"), lab.host("server")
    delays = ClientDelay(dist="uniform", params=(100.0, 400.0), seed=7)
    link = lab.link(client, server, LinkProfile(rtt_ms=50, per_client_delay=delays))
    extra_ip = link.a_ip.rsplit(".", 1)[0] + ".3"
    client.run(["ip", "addr", "add", f"{extra_ip}/24", "dev", link.a_dev])
    srv = _listener(server, link.b_ip)
    measured = {ip: statistics.median(_connect_times(client, (link.b_ip, PORT), source=ip))
                for ip in (link.a_ip, extra_ip)}
    srv.close()
    stats = link.stats()
    assert stats is not None
    drawn = stats["client_delay_ms"]  # one draw per client address, reported by the emulator
    assert set(drawn) == set(measured) and len(set(drawn.values())) == 2
    for ip, ms in measured.items():
        want = 50 + drawn[ip]
        assert want <= ms <= want * 1.1, (ip, ms, want)


def test_multi_link_routing_by_source_and_device(lab: Lab) -> None:
    client, server = lab.host("client"), lab.host("server")
    fast, slow = lab.links(client, server, [LinkProfile(rtt_ms=50), LinkProfile(rtt_ms=200)])
    srv = _listener(server, "0.0.0.0")
    # One server address (server.ip on lo) reached over the link the client picks.
    by_src = [statistics.median(_connect_times(client, (server.ip, PORT), source=ln.a_ip)) for ln in (fast, slow)]
    by_dev = [statistics.median(_connect_times(client, (server.ip, PORT), device=ln.a_dev)) for ln in (fast, slow)]
    default = statistics.median(_connect_times(client, (server.ip, PORT)))
    srv.close()
    # Which link carried it, told apart by round trip (the midpoint 125 ms, so CPU load cannot blur it; the
    # emulator's own accuracy is checked by the profile tests).
    for ms in (by_src, by_dev):
        assert 50 <= ms[0] < 125 <= 200 <= ms[1] < 300, ms
    assert 50 <= default < 125, default  # unbound sockets use the first link
    stats = [ln.stats() for ln in (fast, slow)]
    assert all(s is not None and s["up"]["packets"] >= 12 and s["down"]["packets"] >= 12 for s in stats)


# ------------------------------------------------------------------------------------------- cleanup


def _lab_leftovers(prefix: str) -> list[str]:
    """Namespaces and root-namespace devices whose name starts with prefix."""
    def ip(*args: str) -> str:
        return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout

    names = [ln.split()[0] for ln in ip("netns", "list").splitlines() if ln.strip()]
    names += re.findall(r"^\d+: ([^:@\s]+)", ip("-o", "link"), re.MULTILINE)
    return [n for n in names if n.startswith(prefix)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours is dead for our purpose
    return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()


def test_close_removes_namespaces_links_and_processes() -> None:
    with Lab() as lb:
        a, b = lb.host("a"), lb.host("b")
        link = lb.link(a, b, PROFILES["lte"])
        plain = lb.link(lb.root, b)
        sleeper = b.popen(["sleep", "60"])
        emu = link.emulator
        assert emu is not None
        prefix = f"lf{os.getpid()}-{lb.id}-"
        assert len(_lab_leftovers(prefix)) == 2
    assert _lab_leftovers(prefix) == []
    assert not _lab_leftovers(f"lf{os.getpid()}l{plain.index}")
    assert sleeper.poll() is not None and emu.poll() is not None
    assert link.final_stats is not None and link.final_stats["up"]["packets"] == 0
    rules = subprocess.run(["ip", "rule"], capture_output=True, text=True, check=True).stdout
    assert str(plain.table) not in rules


def test_sigterm_cleans_up_and_stale_cleanup_removes_dead_leftovers(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from bench.netlab import Lab, PROFILES
        with Lab() as lab:
            a, b = lab.host("a"), lab.host("b")
            lab.link(a, b, PROFILES["wcdma"])
            lab.link(lab.root, b)
            p = b.popen(["sleep", "60"])
            print(p.pid, flush=True)
            time.sleep(60)
        """
    )
    tests_dir = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(tests_dir)})
    try:
        assert child.stdout is not None
        sleeper = int(child.stdout.readline())
        assert _lab_leftovers(f"lf{child.pid}-")
        child.send_signal(signal.SIGTERM)
        child.wait(15)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert _lab_leftovers(f"lf{child.pid}") == []
    assert not _alive(sleeper)

    # A namespace left by a pid that no longer exists (as after SIGKILL) is removed by cleanup_stale.
    dead = child.pid
    subprocess.run(["ip", "netns", "add", f"lf{dead}-1-leftover"], check=True)
    assert f"lf{dead}-1-leftover" in cleanup_stale()
    assert _lab_leftovers(f"lf{dead}-") == []


# -------------------------------------------------------------------------------------------- servers


@pytest.fixture
def docroot(tmp_path: Path) -> Path:
    root = tmp_path / "www"
    root.mkdir()
    (root / "a.txt").write_bytes(b"A" * 1000)
    (root / "b.txt").write_bytes(b"B" * 2000)
    return root


def _pipelined(ip: str, port: int, paths: list[str]) -> bytes:
    reqs = b"".join(f"GET {p} HTTP/1.1\r\nHost: lab\r\n\r\n".encode() for p in paths)
    with socket.create_connection((ip, port), timeout=10) as s:
        s.sendall(reqs)  # all requests in one segment: the server sees them pipelined
        data = b""
        while data.count(b"HTTP/1.1 200") < len(paths) or not data.endswith(b"B" * 100):
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
        return data


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx not installed")
def test_nginx_serves_and_logs_pipelining(lab: Lab, docroot: Path) -> None:
    server = lab.host("server")
    link = lab.link(lab.root, server)
    srv = start_nginx(server, docroot, link.b_ip, 80, keepalive_requests=50)
    out = lab.root.run(["curl", "-sS", srv.url("/a.txt")]).stdout
    assert out == "A" * 1000
    _pipelined(link.b_ip, 80, ["/a.txt", "/b.txt"])
    recs = srv.access_log(wait_for=3)
    assert [r.path for r in recs] == ["/a.txt", "/a.txt", "/b.txt"]
    first, second = recs[1], recs[2]
    assert first.connection == second.connection != recs[0].connection
    assert (first.request_no, second.request_no) == (1, 2)
    assert (first.pipelined, second.pipelined) == (False, True)
    assert second.status == 200 and second.body_bytes == 2000 and second.remote_addr == link.a_ip


@pytest.mark.skipif(shutil.which("apache2") is None, reason="apache2 not installed")
def test_apache_serves_and_logs(lab: Lab, docroot: Path) -> None:
    server = lab.host("server")
    link = lab.link(lab.root, server)
    srv = start_apache(server, docroot, link.b_ip, 8080, max_keepalive_requests=10)
    out = lab.root.run(["curl", "-sS", srv.url("/a.txt")]).stdout
    assert out == "A" * 1000
    _pipelined(link.b_ip, 8080, ["/a.txt", "/b.txt"])
    recs = srv.access_log(wait_for=3)
    assert [r.path for r in recs] == ["/a.txt", "/a.txt", "/b.txt"]
    first, second = recs[1], recs[2]
    assert first.connection == second.connection != recs[0].connection
    assert (first.request_no, second.request_no) == (1, 2)
    assert second.status == 200 and second.body_bytes == 2000 and second.end_time >= first.end_time


@pytest.mark.parametrize("kind", ["nginx", "apache"])
def test_compression_conf_gzips_text_as_a_real_site_and_logs_the_bytes_sent(lab: Lab, tmp_path: Path,
                                                                            kind: str) -> None:
    if shutil.which("nginx" if kind == "nginx" else "apache2") is None:
        pytest.skip(f"{kind} not installed")
    root = tmp_path / "www"
    root.mkdir()
    css = b".note { background: url(note.png) }\n" * 200
    (root / "a.css").write_bytes(css)
    (root / "b.png").write_bytes(b"\x89PNG" + b"x" * 4000)
    server = lab.host("server")
    link = lab.link(lab.root, server)
    start = start_nginx if kind == "nginx" else start_apache
    srv = start(server, root, link.b_ip, 8081, extra_conf=compression_conf(kind))

    def get(path: str, *headers: str) -> tuple[str, int]:
        out = lab.root.run(["curl", "-sS", "-o", "/dev/null", "-D", "-", "-w", "%{size_download}",
                            *(a for h in headers for a in ("-H", h)), srv.url(path)]).stdout
        return out.lower(), int(out.rsplit("\n", 1)[-1])

    head, size = get("/a.css", "Accept-Encoding: gzip")
    assert "content-encoding: gzip" in head and size < len(css) // 10
    head, size = get("/a.css")  # no Accept-Encoding: identity
    assert "content-encoding" not in head and size == len(css)
    head, size = get("/b.png", "Accept-Encoding: gzip")  # images are served as they are
    assert "content-encoding" not in head and size == 4004
    recs = srv.access_log(wait_for=3)
    assert [r.body_bytes for r in recs][1:] == [len(css), 4004]
    assert 0 < recs[0].body_bytes < len(css) // 10  # the log counts what was sent: the gzip body
