"""Chromium page benchmark (issue 3): real Chromium (Debian's, headless, built extension) in the lab's client
namespace loads an nginx page with 80 images of 2 KB over an emulated link; page load time (navigation start →
load event, all images decoded) with the site ON (lanefetch helper) vs OFF, alternating, fresh profile and fresh
helper cache every run. nginx's access log tells which connection served each request and whether it came
pipelined. Profiles: bench2 and wcdma (LANEFETCH_BENCH_PROFILES=bench2,wcdma to choose)."""

from __future__ import annotations

import json
import os
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any

from bench import report
from bench.netlab import PROFILES, Host, Lab, Link, LinkProfile
from bench.servers import ServerHandle, start_nginx

IMAGES = 80
REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests/bench/chromium_page_driver.ts"
NODE = "node"


def _png(seed: int) -> bytes:
    """A valid 25×25 RGB PNG of random pixels (incompressible): about 2 KB."""
    w = h = 25
    raw = b"".join(b"\x00" + os.urandom(w * 3) for _ in range(h))
    raw = raw[:1] + bytes([seed % 256]) + raw[2:]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _docroot(d: str) -> int:
    size = 0
    tags = []
    for i in range(IMAGES):
        data = _png(i)
        size += len(data)
        Path(d, f"i{i:03d}.png").write_bytes(data)
        tags.append(f'<img src="i{i:03d}.png" width="25" height="25" alt="">')
    Path(d, "index.html").write_text(
        "<!doctype html><html><head><meta charset=utf-8><title>lanefetch bench</title></head><body>\n"
        + "\n".join(tags) + "\n</body></html>\n"
    )
    return size // IMAGES


def _one(client: Host, link: Link, srv: ServerHandle, url: str, mode: str) -> dict[str, Any]:
    before = len(srv.access_log())
    s0 = link.stats() or {}
    with tempfile.TemporaryDirectory(prefix="lf-bench-cache-") as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        proc = client.popen([NODE, "--import", "tsx", str(DRIVER), url, mode, str(IMAGES)], cwd=str(REPO), env=env,
                            stdout=-1, stderr=-1, text=True)
        out, err = proc.communicate(timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"driver ({mode}) failed: {err.strip()[-2000:]}")
    data = json.loads(out.strip().splitlines()[-1])
    recs = srv.access_log(wait_for=before + IMAGES + 1)[before:]
    imgs = [r for r in recs if r.path.endswith(".png")]
    data["img_requests"] = len(imgs)
    data["img_conns"] = len({r.connection for r in imgs})
    data["img_pipelined"] = sum(1 for r in imgs if r.pipelined)
    data["all_requests"] = len(recs)
    s1 = link.stats() or {}
    for d in ("up", "down"):
        a, b = s0.get(d, {}), s1.get(d, {})
        data[f"{d}_bytes"] = b.get("bytes", 0) - a.get("bytes", 0)
        data[f"{d}_drops"] = b.get("dropped_queue", 0) - a.get("dropped_queue", 0)
    return data


def _profile(name: str, profile: LinkProfile, rounds: int) -> tuple[list[str], dict[str, float]]:
    runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as docroot, Lab() as lab:
        size = _docroot(docroot)
        server = lab.host("server")
        client = lab.host("client")
        link = lab.link(client, server, profile)
        srv = start_nginx(server, docroot, link.b_ip)
        url = f"http://{link.b_ip}/index.html"
        client.run(["curl", "-s", "-o", "/dev/null", url], check=False, timeout=30)  # server page cache warm
        for r in range(rounds):
            for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                d = _one(client, link, srv, url, mode)
                print(f"[{name}] round {r + 1} {mode}: load {d['load_s']:.3f} s, wall {d['wall_s']:.3f} s, "
                      f"{d['img_requests']} img reqs on {d['img_conns']} conns, {d['img_pipelined']} pipelined, "
                      f"link up {d['up_bytes']} B ({d['up_drops']} drops) "
                      f"down {d['down_bytes']} B ({d['down_drops']} drops)",
                      flush=True)
                runs[mode].append(d)
    med = {m: report.median([d["load_s"] for d in runs[m]]) for m in runs}
    wall = {m: report.median([d["wall_s"] for d in runs[m]]) for m in runs}
    rows = []
    for m, label in (("off", "OFF (Chromium alone)"), ("on", "ON (lanefetch)")):
        ds = runs[m]
        ls = [d["load_s"] for d in ds]
        rows.append([
            label, f"{med[m]:.3f}", f"{min(ls):.3f}–{max(ls):.3f}", f"{wall[m]:.3f}",
            f"{report.median([d['img_conns'] for d in ds]):g}",
            f"{sum(d['img_pipelined'] for d in ds)}/{sum(d['img_requests'] for d in ds)}",
            f"{report.median([d['up_bytes'] for d in ds]) / 1000:.1f} / "
            f"{report.median([d['down_bytes'] for d in ds]) / 1000:.1f}",
            f"{sum(d['up_drops'] + d['down_drops'] for d in ds)}",
        ])
    # Physical lower bound for ON's traffic: connect + document + images = 3 RTT, plus the busier direction's
    # serialization time of the bytes ON actually put on the link (IP/TCP headers and ACKs included).
    assert profile.rtt_ms and profile.down_kbit and profile.up_kbit
    up = report.median([d["up_bytes"] for d in runs["on"]])
    down = report.median([d["down_bytes"] for d in runs["on"]])
    tmin = 3 * profile.rtt_ms / 1000 + max(up * 8 / (profile.up_kbit * 1000), down * 8 / (profile.down_kbit * 1000))
    rows.append(["T_min estimate", f"{tmin:.3f}", "", "", "", "", "", ""])
    lines = [
        f"## {name}: RTT {profile.rtt_ms} ms, {profile.down_kbit} kbit/s down, {profile.up_kbit} kbit/s up",
        "",
        f"{IMAGES} PNG images × ~{size} B, {rounds} rounds (order alternating on/off, off/on).",
        "",
        *report.table(["variant", "median load s", "range s", "median wall s", "median image conns",
                       "images pipelined (all runs)", "median kB up / down on the link",
                       "queue drops (all runs)"], rows),
        "",
        (f"**ON is {med['off'] / med['on']:.2f}× faster** by load time (navigation start → load event); "
        f"{wall['off'] / wall['on']:.2f}× by wall clock (first page.goto → load event, which for ON includes "
        "the extension's gate: blocked first try, debugger attach, navigate again)."),
        "",
        (f"T_min = 3 RTT + max(bytes up / up rate, bytes down / down rate) with ON's median link bytes: the best any "
         f"variant could do here is {med['off'] / tmin:.2f}× faster than OFF; ON is at {med['on'] / tmin:.2f}× T_min."),
        "",
    ]
    return lines, {"ratio": med["off"] / med["on"], "on": med["on"], "off": med["off"],
                   "wall_ratio": wall["off"] / wall["on"], "tmin": tmin}


def run(rounds: int) -> int:
    names = os.environ.get("LANEFETCH_BENCH_PROFILES", "bench2,wcdma").split(",")
    lines = [
        ("Real Chromium (headless, `/usr/lib/chromium/chromium`, built extension) runs in the lab's client namespace; "
        "nginx (HTTP/1.1, keep-alive) behind a packet-level emulated link. Every run: fresh Chromium profile (no HTTP "
        "cache) and, for ON, the helper registered into it, the page's host enabled and a fresh `XDG_CACHE_HOME` "
        "(no helper cache). Load time = `PerformanceNavigationTiming.loadEventEnd - startTime` of the page that "
        "finally loaded, after checking every image decoded (`img.decode()`, `naturalWidth > 0`). The page's "
        "document is fetched by Chromium itself in both variants (private page). Image connection and pipelining "
        "counts come from nginx's access log (`$connection`, `$pipe`)."),
        "",
    ]
    summary = []
    for name in names:
        part, s = _profile(name, PROFILES[name], rounds)
        lines += part
        summary.append([name, f"{s['off']:.3f}", f"{s['on']:.3f}", f"{s['ratio']:.2f}×", f"{s['wall_ratio']:.2f}×",
                        f"{s['tmin']:.3f}", f"{s['off'] / s['tmin']:.2f}×"])
    lines += ["## Summary", "", *report.table(["link", "OFF median s", "ON median s", "speed-up (load)",
                                               "speed-up (wall)", "T_min est. s", "best possible speed-up"], summary)]
    report.write("chromium-page", "Chromium page benchmark: 80 × 2 KB images, site on vs off", lines)
    return 0
