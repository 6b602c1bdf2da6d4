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
        for r in range(rounds):
            # The order reversed every other round, as the report says: a variant always run first (or always
            # right after the other) would carry whatever that position costs or gains into its median.
            order = list(variants.items())
            for name, extra in (order if r % 2 == 0 else order[::-1]):
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
        f"{rounds} rounds, variants alternating (order reversed every other round); each run is a fresh "
        "`lanefetch fetch` process (pipelining learned from scratch every time).",
        "",
        *report.table(["variant", "median s", "range s", "max concurrent conns", "× T_min"], rows),
        "",
        f"**Pipelined vs baseline: {base / lf:.2f}× faster** (goal ≥ 2×); "
        f"**pipelined / T_min: {lf / tmin:.2f}** (goal ≤ 1.5, aim 1.2).",
        "",
        "T_min = connect RTT + 1 RTT + max(bytes up / up rate, bytes down / down rate), with the HTTP bytes "
        "actually exchanged scaled by 1500/1448 for IP+TCP headers.",
    ]
    report.write("engine", "Engine benchmark: pipelining over a 200 ms / 2 Mbit/s link", lines)
    return 0


def run_h2(rounds: int) -> int:
    """The same 100 × 2 KB over the same link, HTTPS: lanefetch over HTTP/2 (nginx TLS + http2; the default's two
    connections on this link, and one) vs lanefetch pipelining HTTP/1.1 over TLS (nginx TLS without http2) and over
    plain http (the `engine` scenario's variant), all from one nginx docroot, variants alternating. The CLI trusts
    the lab's throwaway CA (`--ca-file`); the server certificate names the server's lab address."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "python"))  # the tests' throwaway PKI, shared with them
    from tls_pki import make_test_pki

    profile = PROFILES["bench2"]
    assert profile.rtt_ms and profile.down_kbit and profile.up_kbit
    h2 = "lanefetch h2 (https, the default: 2 conns on this link)"
    warm = "lanefetch h2, warm (https, the default's 2 conns opened by a preconnect)"
    h2_open = "lanefetch h2, window opened at once (`--h2-open-window`)"
    warm_open = "lanefetch h2, warm, window opened at once"
    h1s = "lanefetch HTTP/1.1 pipelined (https, 4 conns)"
    h1 = "lanefetch HTTP/1.1 pipelined (http, 4 conns)"
    h2_one = "lanefetch h2, 1 conn (`--h2-connections 1`)"
    warm_one = "lanefetch h2, warm, 1 conn"
    h2_three = "lanefetch h2, 3 conns (`--h2-connections 3`)"
    warm_three = "lanefetch h2, warm, 3 conns"
    warms = (warm, warm_open, warm_one, warm_three)
    times: dict[str, list[float]] = {h2: [], warm: [], h2_open: [], warm_open: [], h2_one: [], warm_one: [],
                                     h2_three: [], warm_three: [], h1s: [], h1: []}
    conns: dict[str, int] = {}
    counts = {name: {"dropped_queue": 0, "late_packets": 0} for name in times}  # the link's, summed over rounds
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
        h2_urls = [f"https://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)]
        h2_base = [*PIPELINED, *ca]
        variants = {
            h2: (h2_urls, h2_base),
            warm: (h2_urls, h2_base),
            h2_open: (h2_urls, [*h2_base, "--h2-open-window"]),
            warm_open: (h2_urls, [*h2_base, "--h2-open-window"]),
            h2_one: (h2_urls, [*h2_base, "--h2-connections", "1"]),
            warm_one: (h2_urls, [*h2_base, "--h2-connections", "1"]),
            h2_three: (h2_urls, [*h2_base, "--h2-connections", "3"]),
            warm_three: (h2_urls, [*h2_base, "--h2-connections", "3"]),
            h1s: ([f"https://{link.b_ip}:8443/o{i:03d}.bin" for i in range(OBJECTS)], h2_base),
            h1: ([f"http://{link.b_ip}/o{i:03d}.bin" for i in range(OBJECTS)], PIPELINED),
        }
        for name, (urls, extra) in variants.items():
            # warm the server's page cache (and the TLS session machinery)
            fetch(client, urls[:1], extra, warm=name in warms)
        for r in range(rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                urls, extra = variants[name]
                before = link.stats() or {}
                data = fetch(client, urls, extra, dict.fromkeys(urls, SIZE), warm=name in warms)
                after = link.stats() or {}
                for key in ("dropped_queue", "late_packets"):
                    counts[name][key] += sum(after.get(d, {}).get(key, 0) - before.get(d, {}).get(key, 0)
                                             for d in ("up", "down"))
                times[name].append(data["elapsed_s"])
                conns[name] = data["max_concurrent_connections"]
                protocols[name] |= {(q.get("connection") or {}).get("protocol") or "?" for q in data["requests"]}
                data_of[name] = data
    rtt = profile.rtt_ms / 1000
    # A warm batch pays no connect round trip: its T_min is 1 RTT + bytes / rate.
    tmin = {name: t_min(d, profile) - (rtt if name in warms else 0.0) for name, d in data_of.items()}
    rows = []
    for name, ts in times.items():
        m = report.median(ts)
        tls = "n/a" if name in warms else f"{m / (tmin[name] + (rtt if name != h1 else 0.0)):.2f}"
        rows.append([name, ", ".join(sorted(protocols[name])), f"{m:.3f}", f"{min(ts):.3f}–{max(ts):.3f}",
                     conns[name], f"{tmin[name]:.3f}", f"{m / tmin[name]:.2f}", tls,
                     f"{counts[name]['dropped_queue']} / {counts[name]['late_packets']}"])
    lf2, lfw, lf1s, lf1 = (report.median(times[n]) for n in (h2, warm, h1s, h1))
    # The best one fresh TLS 1.3 connection can do: TCP and TLS handshakes, the request's round trip, then slow
    # start from IW10 up to the link's rate (cli_fetch.deliverable), for the DATA bytes h2 carried. Warm: the
    # same without the two handshakes (the connection's window still starts at IW10: nothing was sent on it).
    h2_bytes = sum(q["wire_bytes"] for q in data_of[h2]["requests"])
    one_conn = best_possible(h2_bytes, [profile]) + rtt
    one_warm = best_possible(sum(q["wire_bytes"] for q in data_of[warm]["requests"]), [profile]) - rtt
    lines = [
        f"Link: RTT {profile.rtt_ms} ms, {profile.down_kbit} kbit/s down, {profile.up_kbit} kbit/s up "
        f"(packet-level emulation, drop-tail queue of {profile.queue_for(profile.down_kbit)} B down). Server: nginx "
        f"(TLS 1.3; h2 on :443, HTTP/1.1 only on :8443, plain http on :80). {OBJECTS} objects × {SIZE} B. "
        f"{rounds} rounds, variants alternating (order reversed every other round); each run is a fresh process "
        "(nothing learned between runs): `lanefetch fetch` for the cold variants, `bench.warm_fetch` for the warm "
        "ones, which open the connections with the helper's preconnect, wait until they speak h2 and the server's "
        "SETTINGS arrived, and only then start the clock and fetch the batch with the CLI's configuration.",
        "",
        *report.table(["variant", "protocol used", "median s", "range s", "max concurrent conns", "T_min s",
                       "× T_min", "× T_min + TLS RTT", "link drops / late packets (all rounds)"], rows),
        "",
        f"**Cold: h2 / T_min {lf2 / tmin[h2]:.2f}; warm: h2 / T_min {lfw / tmin[warm]:.2f}** (issue 18's goal "
        f"≤ 1.2). Cold h2 / (T_min + the TLS 1.3 handshake's round trip): {lf2 / (tmin[h2] + rtt):.2f}. h2 vs "
        f"HTTP/1.1 pipelined over TLS: {lf1s / lf2:.2f}× faster; vs plain-http pipelining: {lf1 / lf2:.2f}×. "
        f"The best one fresh TLS 1.3 connection could do (handshakes, request round trip, slow start from IW10): "
        f"{one_conn:.3f} s = {one_conn / tmin[h2]:.2f} × T_min, cold h2 with one connection at "
        f"{report.median(times[h2_one]) / one_conn:.2f}× that; on an open connection whose window starts at IW10 "
        f"(request round trip, slow start): {one_warm:.3f} s = {one_warm / tmin[warm]:.2f} × warm T_min, warm h2 "
        f"with one connection at {report.median(times[warm_one]) / one_warm:.2f}× that. The default opens two on "
        "this link (200 ms: pool_plan.h2_connection_count), together starting at twice the initial window.",
        "",
        "Cold T_min = connect RTT + 1 RTT + max(bytes up / up rate, bytes down / down rate); warm T_min = 1 RTT + "
        "max(bytes up / up rate, bytes down / down rate) (the batch on a connection already open). The HTTP bytes "
        "actually exchanged are scaled by 1500/1448 for IP+TCP headers (for h2: the DATA bytes; HPACK'd headers, "
        "frame and TLS record overhead are not counted, so it is a little low). Neither counts TCP slow start; "
        "over TLS no client can avoid the handshake's round trip, hence the `+ TLS RTT` column. Link drops: "
        "packets the emulated link's drop-tail queue dropped; late: packets it delivered > 2 ms late (the "
        "emulator short of CPU).",
    ]
    report.write("engine-h2", "Engine benchmark over HTTP/2: 100 × 2 KB over a 200 ms / 2 Mbit/s link", lines)
    return 0
