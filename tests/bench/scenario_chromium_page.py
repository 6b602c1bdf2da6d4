"""Browser page benchmark: real Chromium (issue 3, `chromium-page`) or real Firefox ESR (issue 7, `firefox-page`),
Debian's, headless, built extension, in the lab's client namespace loads an nginx page with 80 images of 2 KB over
an emulated link; page load time (navigation start → load event, all images decoded) with the site ON (lanefetch
helper) vs OFF, alternating, fresh profile (and for Chromium fresh helper cache) every run. nginx's access log tells
which connection served each request and whether it came pipelined. Profiles: bench2 and wcdma
(LANEFETCH_BENCH_PROFILES=bench2,wcdma to choose)."""

from __future__ import annotations

import os

from bench import report
from bench.netlab import PROFILES, LinkProfile
from bench.page_load import BROWSER_NAMES, VARIANT_HEADER, PageLab, PageShape, method, variant_row

SHAPE = PageShape(80, 1968)  # 80 PNG images of ~2 KB (25 × 25 random pixels, as first measured)
IMAGES = SHAPE.images
#: What the wall clock includes for ON besides the page load.
WALL_NOTE = {
    "chromium": (", which for ON includes the extension's gate: blocked first try, debugger attach, navigate again"),
    "firefox": ("; the helper was already running: Firefox routes nothing through it before the native port is up"),
}


def _profile(name: str, profile: LinkProfile, rounds: int, browser: str) -> tuple[list[str], dict[str, float]]:
    with PageLab(profile, [SHAPE], browser) as pl:
        runs = pl.alternate([SHAPE], rounds, log=lambda line: print(f"[{name}] {line}", flush=True))[SHAPE]
        tmin_or_none = pl.t_min(runs["on"])
    size = SHAPE.size
    med = {m: report.median([d["load_s"] for d in runs[m]]) for m in runs}
    wall = {m: report.median([d["wall_s"] for d in runs[m]]) for m in runs}
    rows = [variant_row(f"OFF ({BROWSER_NAMES[browser]} alone)", runs["off"]),
            variant_row("ON (lanefetch)", runs["on"])]
    # Physical lower bound for ON's traffic (PageLab.t_min): this scenario runs on rate-limited links only.
    assert tmin_or_none is not None
    tmin = tmin_or_none
    rows.append(["T_min estimate", f"{tmin:.3f}", "", "", "", "", "", ""])
    lines = [
        f"## {name}: RTT {profile.rtt_ms} ms, {profile.down_kbit} kbit/s down, {profile.up_kbit} kbit/s up",
        "",
        f"{IMAGES} PNG images × ~{size} B, {rounds} rounds (order alternating on/off, off/on).",
        "",
        *report.table(VARIANT_HEADER, rows),
        "",
        (f"**ON is {med['off'] / med['on']:.2f}× faster** by load time (navigation start → load event); "
        f"{wall['off'] / wall['on']:.2f}× by wall clock (page.goto → load event{WALL_NOTE[browser]})."),
        "",
        (f"T_min = 3 RTT + max(bytes up / up rate, bytes down / down rate) with ON's median link bytes: the best any "
         f"variant could do here is {med['off'] / tmin:.2f}× faster than OFF; ON is at {med['on'] / tmin:.2f}× T_min."),
        "",
    ]
    return lines, {"ratio": med["off"] / med["on"], "on": med["on"], "off": med["off"],
                   "wall_ratio": wall["off"] / wall["on"], "tmin": tmin}


def run(rounds: int, browser: str = "chromium") -> int:
    names = os.environ.get("LANEFETCH_BENCH_PROFILES", "bench2,wcdma").split(",")
    lines = [
        method(browser),
        "",
    ]
    summary = []
    for name in names:
        part, s = _profile(name, PROFILES[name], rounds, browser)
        lines += part
        summary.append([name, f"{s['off']:.3f}", f"{s['on']:.3f}", f"{s['ratio']:.2f}×", f"{s['wall_ratio']:.2f}×",
                        f"{s['tmin']:.3f}", f"{s['off'] / s['tmin']:.2f}×"])
    lines += ["## Summary", "", *report.table(["link", "OFF median s", "ON median s", "speed-up (load)",
                                               "speed-up (wall)", "T_min est. s", "best possible speed-up"], summary)]
    report.write(f"{browser}-page", f"{BROWSER_NAMES[browser]} page benchmark: 80 × 2 KB images, site on vs off", lines)
    return 0


def run_firefox(rounds: int) -> int:
    return run(rounds, "firefox")
