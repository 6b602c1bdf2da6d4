"""chromium-repeat (issue 4): the second visit of a page after a browser restart on the same profile. ON is served
from the helper's warm cache, OFF from Chromium's own warm HTTP cache, with the images fresh (`expires 1h`) or
needing revalidation (`Cache-Control: no-cache`, ETag → 304). Real Chromium, nginx, the emulated link (PageLab).
Profiles: wcdma (LANEFETCH_BENCH_PROFILES=wcdma,lte to choose). Goal: ON not slower; with revalidation, faster."""

from __future__ import annotations

import os

from bench import report
from bench.netlab import PROFILES
from bench.page_load import PageLab, PageShape, Run, method

SHAPE = PageShape(80, 1968)  # the chromium-page page: 80 PNG images of ~2 KB
NAME = "chromium-repeat"
CACHING = {
    "fresh": "location ~ \\.png$ { expires 1h; }",
    "revalidate": "location ~ \\.png$ { add_header Cache-Control no-cache; }",
}
VARIANTS = (("off", "OFF (Chromium's cache)"), ("on", "ON (helper cache)"))


def run(rounds: int) -> int:
    names = os.environ.get("LANEFETCH_BENCH_PROFILES", "wcdma").split(",")
    report.RESULTS.mkdir(exist_ok=True)
    summary: list[list[str]] = []
    with (report.RESULTS / f"{NAME}.log").open("w") as log_file:
        def log(line: str) -> None:
            print(line, flush=True)
            log_file.write(line + "\n")
            log_file.flush()

        for name in names:
            for caching, conf in CACHING.items():
                runs: dict[str, list[Run]] = {"on": [], "off": []}
                with PageLab(PROFILES[name], [SHAPE], nginx_conf=conf) as pl:
                    for r in range(rounds):
                        for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                            first, second = pl.load(SHAPE, mode, repeat=True)
                            runs[mode].append(second)
                            log(f"[{name} {caching}] round {r + 1} {mode}: first visit {first['load_s']:.3f} s, second "
                                f"visit {second['load_s']:.3f} s, {second['all_requests']} requests "
                                f"({second['not_modified']} × 304, {second['img_pipelined']} pipelined)")
                med = {m: report.median([d["load_s"] for d in runs[m]]) for m in runs}
                for m, label in VARIANTS:
                    ls = [d["load_s"] for d in runs[m]]
                    summary.append([name, caching, label, f"{med[m]:.3f}", f"{min(ls):.3f}–{max(ls):.3f}",
                                    f"{report.median([d['all_requests'] for d in runs[m]]):g}",
                                    f"{report.median([d['not_modified'] for d in runs[m]]):g}",
                                    f"**{med['off'] / med[m]:.2f}×**" if m == "on" else ""])
    lines = [
        method("chromium"),
        "",
        f"Repeat visit of {SHAPE.name} ({SHAPE.images} images): each run loads the page once in a fresh profile, "
        "restarts Chromium on that profile (its own disk cache warm for OFF; for ON the helper's cache, kept in the "
        "profile, warm, and the helper started again by the extension) and measures the second visit (navigation "
        "start → load event, every image decoded; for ON the gate's blocked first try is before navigation start). "
        f"{rounds} runs per variant, ON/OFF order alternating. Requests and 304s of the second visit from nginx's "
        "access log (the document is always fetched: nginx sends it without caching headers).",
        "",
        *report.table(["link", "images", "variant", "median load s", "range s", "requests (median)", "304s (median)",
                       "ON speed-up"], summary),
    ]
    report.write(NAME, "Chromium repeat visit: helper cache vs Chromium's own cache", lines)
    return 0
