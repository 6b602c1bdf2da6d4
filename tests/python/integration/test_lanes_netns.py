"""Split fetches over real emulated links (TUN link emulator, one namespace per side) from real nginx:
`lanefetch fetch --split --interface ...` in the client namespace, every body SHA-256-exact, the lanes'
byte shares checked against the links' rates, and a link killed mid-transfer."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bench.netlab import LINK_SETS, Host, Lab, Link
from bench.servers import ServerHandle, start_nginx
from tls_pki import make_test_pki

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces"),
]

LANEFETCH = str(Path(sys.executable).parent / "lanefetch")
FILES = {"tiny.bin": 1, "small.bin": 15_000, "edge.bin": 20_480, "mid.bin": 400_000, "big.bin": 1_500_000,
         "large.bin": 3_000_000}


@dataclass
class Net:
    client: Host
    links: list[Link]
    srv: ServerHandle
    files: dict[str, bytes]
    out: Path
    docroot: Path
    srv_h2: ServerHandle  # the same docroot over TLS + HTTP/2 (port 443), its certificate from ca
    ca: Path


def _net(tmp: Path, link_set: str) -> Iterator[Net]:
    docroot = tmp / "docroot"
    docroot.mkdir()
    files = {}
    for name, size in FILES.items():
        files[name] = hashlib.shake_256(name.encode()).digest(size)
        (docroot / name).write_bytes(files[name])
    (docroot / "norange").mkdir()
    (docroot / "norange" / "big.bin").write_bytes(files["big.bin"])
    with Lab() as lab:
        server, client = lab.host("server"), lab.host("client")
        links = lab.links(client, server, LINK_SETS[link_set])
        srv = start_nginx(server, docroot, "0.0.0.0", extra_conf="location /norange/ { max_ranges 0; }")
        (tmp / "pki").mkdir()
        pki = make_test_pki(tmp / "pki", "lanefetch lanes h2 CA", ips=(server.ip,))
        srv_h2 = start_nginx(server, docroot, "0.0.0.0", 443, tls=(pki / "srv.pem", pki / "srv.key"), http2=True)
        yield Net(client, links, srv, files, tmp / "out", docroot, srv_h2, pki / "ca.pem")


@pytest.fixture(scope="module", autouse=True)
def own_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CLI counts each lane's bytes in config_dir()/interfaces.json: point it at a directory of the test's
    own, so a test run never writes the machine user's interface policy file."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        yield


@pytest.fixture(scope="module")
def equal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Net]:
    yield from _net(tmp_path_factory.mktemp("equal"), "2x5mbit")


@pytest.fixture(scope="module")
def unequal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Net]:
    yield from _net(tmp_path_factory.mktemp("unequal"), "10+5mbit")


def argv(net: Net, names: list[str], links: list[Link] | None = None, *, h2: bool = False) -> list[str]:
    lanes = [a for link in (links or net.links) for a in ("--interface", link.a_dev)]
    urls = [f"{'https' if h2 else 'http'}://{net.srv.host.ip}/{n}" for n in names]
    tls = ["--ca-file", str(net.ca)] if h2 else []
    return [LANEFETCH, "fetch", "--json", "--as-page", "private", "--out", str(net.out), "--split", *lanes, *tls,
            *urls]


def check_exact(net: Net, result: dict[str, Any]) -> None:
    for r in result["requests"]:
        name = r["url"].rsplit("/", 1)[1]
        assert r["error"] is None and r["status"] == 200, r
        got = Path(r["file"]).read_bytes()
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(net.files[name]).hexdigest(), name


def run(net: Net, names: list[str]) -> dict[str, Any]:
    out = net.client.run(argv(net, names), timeout=120)
    result: dict[str, Any] = json.loads(out.stdout)
    check_exact(net, result)
    return result


def test_equal_links_share_a_large_body(equal: Net) -> None:
    r = run(equal, ["big.bin"])["requests"][0]
    lanes = {lane["interface"]: lane for lane in r["lanes"]}
    assert set(lanes) == {link.a_dev for link in equal.links}
    shares = [lanes[link.a_dev]["bytes"] / 1_500_000 for link in equal.links]
    assert all(0.3 < s < 0.7 for s in shares), shares
    assert all(lane["down"] is None for lane in lanes.values())
    # the bytes really went over both links (the emulators counted them)
    for link in equal.links:
        stats = link.stats()
        assert stats is not None and stats["down"]["bytes"] > 400_000, (link.a_dev, stats)


def test_small_files_come_in_one_exchange(equal: Net) -> None:
    names = ["tiny.bin", "small.bin", "edge.bin"]
    before = len(equal.srv.access_log())
    res = run(equal, names)
    assert all(r["lanes"] is None for r in res["requests"])  # never split
    records = equal.srv.access_log(wait_for=before + 2 * len(names))[before:]
    # the first lane: one exchange per file; the other lane's speculative range lay past the end (416)
    assert sorted(r.status for r in records) == [206] * len(names) + [416] * len(names), records


def test_unequal_links_split_by_rate(unequal: Net) -> None:
    r = run(unequal, ["large.bin"])["requests"][0]
    lanes = {lane["interface"]: lane for lane in r["lanes"]}
    fast, slow = (lanes[link.a_dev]["bytes"] for link in unequal.links)  # 10 and 5 Mbit/s
    assert 1.3 < fast / slow < 3.0, (fast, slow)


def test_server_ignoring_range_is_streamed(equal: Net) -> None:
    """nginx with max_ranges 0 answers 200 to the first range request: that one exchange is the answer.
    The other lane's speculative range got a 200 too: its connection was closed at once, so that link did
    not carry a second copy."""
    stats = equal.links[1].stats()
    before = int(stats["down"]["bytes"]) if stats else 0
    out = equal.client.run(argv(equal, ["norange/big.bin"]), timeout=120)
    r = json.loads(out.stdout)["requests"][0]
    assert r["error"] is None and r["status"] == 200 and r["lanes"] is None
    assert Path(r["file"]).read_bytes() == equal.files["big.bin"]
    stats = equal.links[1].stats()
    assert stats is not None and int(stats["down"]["bytes"]) - before < 300_000  # of 1.5 MB


def test_split_over_h2_uses_one_h2_connection_per_interface(equal: Net) -> None:
    """An https origin speaking h2: the split's ranges go over h2, each lane (interface) one h2 connection to
    the origin carrying all of that lane's ranges as streams; the body SHA-exact."""
    before = len(equal.srv_h2.access_log())
    out = equal.client.run(argv(equal, ["large.bin"], h2=True), timeout=120)
    result = json.loads(out.stdout)
    check_exact(equal, result)
    r = result["requests"][0]
    lanes = {lane["interface"]: lane for lane in r["lanes"]}
    assert set(lanes) == {link.a_dev for link in equal.links}
    assert all(lane["bytes"] > 500_000 for lane in lanes.values()), lanes  # of 3 MB: both lanes carried it
    records = equal.srv_h2.access_log(wait_for=before + 2)[before:]
    assert {rec.request.rsplit(" ", 1)[1] for rec in records} == {"HTTP/2.0"}, records
    by_lane: dict[str, set[str]] = {}
    for rec in records:
        by_lane.setdefault(rec.remote_addr, set()).add(rec.connection)
    assert set(by_lane) == {link.a_ip for link in equal.links}, by_lane  # each lane left by its own link
    assert all(len(conns) == 1 for conns in by_lane.values()), by_lane  # one h2 connection per interface
    assert len(records) > len(by_lane), "several ranges went as streams on a lane's one connection"


def test_resource_changing_mid_transfer_restarts_cleanly(equal: Net) -> None:
    """The file is replaced while the split runs (new ETag): the ranges no longer match, the partial file is
    dropped and the CLI fetches the new version once more from scratch."""
    path = equal.docroot / "changing.bin"
    old = hashlib.shake_256(b"old").digest(2_000_000)
    new = hashlib.shake_256(b"new").digest(2_000_000)
    path.write_bytes(old)
    def carried() -> int:
        stats = equal.links[0].stats()
        return int(stats["down"]["bytes"]) if stats else 0

    start = carried()
    proc = subprocess.Popen(equal.client.argv(argv(equal, ["changing.bin"])), stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(400):  # wait (bounded: 20 s) until the old version is on its way, then replace it
            if carried() - start > 200_000:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the first lane carried {carried() - start} bytes in 20 s: the fetch never began")
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(new)
        os.utime(tmp, (time.time() + 5, time.time() + 5))  # a different Last-Modified, so a different ETag
        tmp.replace(path)
        stdout, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    r = json.loads(stdout)["requests"][0]
    assert r["error"] is None and r["status"] == 200
    got = Path(r["file"]).read_bytes()
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(new).hexdigest()


def test_link_killed_mid_transfer(equal: Net) -> None:
    """One link's emulator stops half-way (its device vanishes): the other lane takes over its ranges.
    Last in this module: the link stays dead."""
    def carried() -> int:
        stats = equal.links[1].stats()
        return int(stats["down"]["bytes"]) if stats else 0

    start = carried()
    proc = subprocess.Popen(equal.client.argv(argv(equal, ["large.bin"])), stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(400):  # wait (bounded: 20 s) until the doomed lane carries data
            if carried() - start > 300_000:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the second lane carried {carried() - start} bytes in 20 s: nothing to kill mid-run")
        equal.links[1].close()
        stdout, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = json.loads(stdout)
    check_exact(equal, result)
    lanes = {lane["interface"]: lane for lane in result["requests"][0]["lanes"]}
    assert lanes[equal.links[1].a_dev]["down"] is not None
    assert lanes[equal.links[0].a_dev]["down"] is None
