"""Engine benchmark (issue 2): 100 × 2 KB objects from nginx over an emulated link with 200 ms RTT,
2 Mbit/s down, 512 kbit/s up: lanefetch pipelined vs the browser-like baseline (6 connections, one
request at a time each) vs the physical limit T_min. Variants alternate round by round."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.cli_fetch import BASELINE, PIPELINED, best_possible, fetch, t_min
from bench.netlab import PROFILES, Lab
from bench.servers import start_nginx

OBJECTS = 100
SIZE = 2048


def run(rounds: int) -> int:
    profile = PROFILES["bench2"]
    assert profile.rtt_ms and profile.down_kbit and profile.up_kbit
    variants = {
        "lanefetch (pipelined, 4 conns)": PIPELINED,
        "baseline (6 conns, no pipelining)": BASELINE,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    conns: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as docroot, Lab() as lab:
        for i in range(OBJECTS):
            Path(docroot, f"o{i:03d}.bin").write_bytes(os.urandom(SIZE))
        server = lab.host("server")
        client = lab.host("client")
        link = lab.link(client, server, profile)
        start_nginx(server, docroot, link.b_ip)
        urls = [f"http://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)]
        sizes = dict.fromkeys(urls, SIZE)
        fetch(client, urls[:1], [])  # warm the server's page cache
        last: dict[str, Any] = {}
        for _ in range(rounds):
            for name, extra in variants.items():
                data = fetch(client, urls, extra, sizes)
                times[name].append(data["elapsed_s"])
                conns[name] = data["max_concurrent_connections"]
                last = data
        tmin = t_min(last, profile)
    lf = report.median(times["lanefetch (pipelined, 4 conns)"])
    base = report.median(times["baseline (6 conns, no pipelining)"])
    rows = [
        [name, f"{report.median(ts):.3f}", f"{min(ts):.3f}–{max(ts):.3f}", conns[name],
         f"{report.median(ts) / tmin:.2f}"]
        for name, ts in times.items()
    ]
    rows.append(["T_min (physical limit)", f"{tmin:.3f}", "", "", "1.00"])
    lines = [
        f"Link: RTT {profile.rtt_ms} ms, {profile.down_kbit} kbit/s down, {profile.up_kbit} kbit/s up "
        f"(packet-level emulation, drop-tail queue). Server: nginx. {OBJECTS} objects × {SIZE} B. "
        f"{rounds} rounds, variants alternating; each run is a fresh `lanefetch fetch` process "
        "(pipelining learned from scratch every time).",
        "",
        *report.table(["variant", "median s", "range s", "max concurrent conns", "× T_min"], rows),
        "",
        f"**Pipelined vs baseline: {base / lf:.2f}× faster** (goal ≥ 2×); "
        f"**pipelined / T_min: {lf / tmin:.2f}** (goal ≤ 1.5, aim 1.2).",
        "",
        "T_min = connect RTT + 1 RTT + max(bytes up / up rate, bytes down / down rate), with the HTTP bytes "
        "actually exchanged scaled by 1500/1460 for IP+TCP headers.",
    ]
    report.write("engine", "Engine benchmark: pipelining over a 200 ms / 2 Mbit/s link", lines)
    return 0


def run_h2(rounds: int) -> int:
    """The same 100 × 2 KB over the same link, HTTPS: lanefetch over HTTP/2 (nginx TLS + http2, one connection)
    vs lanefetch pipelining HTTP/1.1 over TLS (nginx TLS without http2) and over plain http (the `engine`
    scenario's variant), all from one nginx docroot, variants alternating. The CLI trusts the lab's throwaway CA
    (`--ca-file`); the server certificate names the server's lab address."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "python"))  # the tests' throwaway PKI, shared with them
    from tls_pki import make_test_pki

    profile = PROFILES["bench2"]
    assert profile.rtt_ms and profile.down_kbit and profile.up_kbit
    h2 = "lanefetch h2 (https, 1 conn)"
    h1s = "lanefetch HTTP/1.1 pipelined (https, 4 conns)"
    h1 = "lanefetch HTTP/1.1 pipelined (http, 4 conns)"
    times: dict[str, list[float]] = {h2: [], h1s: [], h1: []}
    conns: dict[str, int] = {}
    protocols: dict[str, set[str]] = {name: set() for name in times}
    data_of: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as docroot, tempfile.TemporaryDirectory() as pkidir, Lab() as lab:
        for i in range(OBJECTS):
            Path(docroot, f"o{i:03d}.bin").write_bytes(os.urandom(SIZE))
        server = lab.host("server")
        client = lab.host("client")
        link = lab.link(client, server, profile)
        pki = make_test_pki(Path(pkidir), "lanefetch bench CA", ips=(link.b_ip,))
        Path(pkidir).chmod(0o755)
        tls = (pki / "srv.pem", pki / "srv.key")
        start_nginx(server, docroot, link.b_ip, 80)
        start_nginx(server, docroot, link.b_ip, 443, tls=tls, http2=True)
        start_nginx(server, docroot, link.b_ip, 8443, tls=tls)
        ca = ["--ca-file", str(pki / "ca.pem")]
        variants = {
            h2: ([f"https://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)], [*PIPELINED, *ca]),
            h1s: ([f"https://{link.b_ip}:8443/o{i:03d}.bin" for i in range(OBJECTS)], [*PIPELINED, *ca]),
            h1: ([f"http://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)], PIPELINED),
        }
        for urls, extra in variants.values():
            fetch(client, urls[:1], extra)  # warm the server's page cache (and the TLS session machinery)
        for r in range(rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                urls, extra = variants[name]
                data = fetch(client, urls, extra, dict.fromkeys(urls, SIZE))
                times[name].append(data["elapsed_s"])
                conns[name] = data["max_concurrent_connections"]
                protocols[name] |= {(q.get("connection") or {}).get("protocol") or "?" for q in data["requests"]}
                data_of[name] = data
    tmin = {name: t_min(d, profile) for name, d in data_of.items()}
    rtt = profile.rtt_ms / 1000
    rows = []
    for name, ts in times.items():
        m = report.median(ts)
        tls_min = tmin[name] + (rtt if name != h1 else 0.0)
        rows.append([name, ", ".join(sorted(protocols[name])), f"{m:.3f}", f"{min(ts):.3f}–{max(ts):.3f}",
                     conns[name], f"{tmin[name]:.3f}", f"{m / tmin[name]:.2f}", f"{m / tls_min:.2f}"])
    lf2, lf1s, lf1 = (report.median(times[n]) for n in (h2, h1s, h1))
    # The best one fresh TLS 1.3 connection can do: TCP and TLS handshakes, the request's round trip, then slow
    # start from IW10 up to the link's rate (cli_fetch.deliverable), for the DATA bytes h2 carried.
    one_conn = best_possible(sum(q["wire_bytes"] for q in data_of[h2]["requests"]), [profile]) + rtt
    lines = [
        f"Link: RTT {profile.rtt_ms} ms, {profile.down_kbit} kbit/s down, {profile.up_kbit} kbit/s up "
        f"(packet-level emulation, drop-tail queue). Server: nginx (TLS 1.3; h2 on :443, HTTP/1.1 only on :8443, "
        f"plain http on :80). {OBJECTS} objects × {SIZE} B. {rounds} rounds, variants alternating (order reversed "
        "every other round); each run is a fresh `lanefetch fetch` process (nothing learned between runs).",
        "",
        *report.table(["variant", "protocol used", "median s", "range s", "max concurrent conns", "T_min s",
                       "× T_min", "× T_min + TLS RTT"], rows),
        "",
        f"**h2 / T_min: {lf2 / tmin[h2]:.2f}** (issue 18's goal ≤ 1.2); h2 / (T_min + the TLS 1.3 handshake's "
        f"round trip): {lf2 / (tmin[h2] + rtt):.2f}. h2 vs HTTP/1.1 pipelined over TLS: {lf1s / lf2:.2f}× "
        f"faster; vs plain-http pipelining: {lf1 / lf2:.2f}×. The best one fresh TLS 1.3 connection could do "
        f"(handshakes, request round trip, slow start from IW10): {one_conn:.3f} s, h2 at {lf2 / one_conn:.2f}× "
        "that.",
        "",
        "T_min = connect RTT + 1 RTT + max(bytes up / up rate, bytes down / down rate), with the HTTP bytes "
        "actually exchanged scaled by 1500/1448 for IP+TCP headers (for h2: the DATA bytes; HPACK'd headers, frame "
        "and TLS record overhead are not counted, so it is a little low). Over TLS no client can avoid the "
        "handshake's round trip, hence the last column.",
    ]
    report.write("engine-h2", "Engine benchmark over HTTP/2: 100 × 2 KB over a 200 ms / 2 Mbit/s link", lines)
    return 0
