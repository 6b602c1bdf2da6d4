"""seed000-pages: the three realistic page shapes the IE plug-in paper measured (77 objects × 1.2 KB, 24 × 2 KB,
5 × 6.2 KB) in real Chromium and real Firefox, site ON (lanefetch) vs OFF, on the `wcdma`, `lte`, `sat` and `lan`
links, side by side in one run (LANEFETCH_BENCH_PROFILES=wcdma,lte,sat,lan, LANEFETCH_BENCH_BROWSERS=
chromium,firefox and LANEFETCH_BENCH_SHAPES=77,24,5 to choose). Goal on `lan`: no slower. One report per browser:
`seed000-pages` (Chromium), `seed000-pages-firefox`."""

from __future__ import annotations

import os
from pathlib import Path

from bench import report
from bench.netlab import PROFILES, LinkProfile
from bench.page_load import BROWSER_NAMES, VARIANT_HEADER, WARM_PORT, PageLab, PageShape, Run, method, variant_row

ALL_SHAPES = [PageShape(77, 1200), PageShape(24, 2000), PageShape(5, 6200)]
#: LANEFETCH_BENCH_SHAPES=77,24 measures only the pages of these object counts (a quick look).
_CHOSEN = os.environ.get("LANEFETCH_BENCH_SHAPES", "").split(",")
SHAPES = [s for s in ALL_SHAPES if _CHOSEN == [""] or str(s.images) in _CHOSEN]
NAME = "seed000-pages"
#: Each browser run loads the page right after the browser started (HELPER_START: when the helper starts), and
#: then its warm copy on another origin (helper running, no connection or learned pipelining carried over).
KINDS = (("", "first page after browser start"), ("-warm", "next page (helper running)"))
#: When ON's helper process starts, relative to the first page.
HELPER_START = {
    browser: "both variants navigate 2.5 s after the browser started; for ON the site is enabled and the helper "
             "started meanwhile (" + how + "), and the navigation waits until 1 s after the helper is up if that is "
             "later (a user turns the site on in the popup, then reloads), so its start-up is not inside this load"
             + ("" if not os.environ.get("LANEFETCH_BENCH_COLD_HELPER") else
                " — except in this run (LANEFETCH_BENCH_COLD_HELPER=1): the driver navigates as soon as "
                + ("the site was enabled" if browser == "chromium" else "the helper connected")
                + ", the helper's start-up work inside this load")
    for browser, how in (("chromium", "the extension connects to it"),
                         ("firefox", "the extension starts it when the site is enabled"))
}


def _describe(name: str, p: LinkProfile) -> str:
    if not p.emulated:
        return f"`{name}`: plain veth, no emulation"
    return f"`{name}`: RTT {p.rtt_ms:g} ms, {p.down_kbit:g} / {p.up_kbit:g} kbit/s down / up"


ALL_PROFILES = "wcdma,lte,sat,lan"
#: A run on some links only (LANEFETCH_BENCH_PROFILES=lan) writes its own report beside the four-link one.
_PROFILES = os.environ.get("LANEFETCH_BENCH_PROFILES", ALL_PROFILES)


def _report_name(browser: str) -> str:
    name = NAME if browser == "chromium" else f"{NAME}-{browser}"
    return name if _PROFILES == ALL_PROFILES else f"{name}-{_PROFILES.replace(',', '-')}"


def _plot(ratios: dict[str, dict[tuple[PageShape, str], float]], browser: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    links = list(ratios)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    width = 0.8 / len(SHAPES)
    for ax, (when, title) in zip(axes, KINDS, strict=True):
        for k, shape in enumerate(SHAPES):
            xs = [i + (k - (len(SHAPES) - 1) / 2) * width for i in range(len(links))]
            ax.bar(xs, [ratios[link][(shape, when)] for link in links], width, label=shape.name, color=f"C{k}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(range(len(links)), links)
        ax.set(title=title)
    axes[0].set(ylabel="OFF median / ON median (higher = ON faster)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{BROWSER_NAMES[browser]} page load, lanefetch ON vs OFF")
    return report.save_figure(fig, _report_name(browser))


def run(rounds: int) -> int:
    for browser in os.environ.get("LANEFETCH_BENCH_BROWSERS", "chromium,firefox").split(","):
        _run_browser(rounds, browser)
    return 0


def _run_browser(rounds: int, browser: str) -> None:
    names = _PROFILES.split(",")
    report.RESULTS.mkdir(exist_ok=True)
    log_path = report.RESULTS / f"{_report_name(browser)}.log"
    summary: list[list[str]] = []
    details: list[str] = []
    ratios: dict[str, dict[tuple[PageShape, str], float]] = {}
    intervals: dict[tuple[str, PageShape, str], tuple[float, float]] = {}
    with log_path.open("w") as log_file:
        def log(line: str) -> None:
            print(line, flush=True)
            log_file.write(line + "\n")
            log_file.flush()

        for name in names:
            profile = PROFILES[name]
            with PageLab(profile, SHAPES, browser) as pl:
                runs = pl.alternate(SHAPES, rounds, log=lambda line, n=name: log(f"[{n}] {line}"), warm=True)
                tmins = {s: pl.t_min(runs[s]["on-warm"]) for s in SHAPES}
            ratios[name] = {}
            details += [f"## {_describe(name, profile)}", ""]
            for shape in SHAPES:
                r: dict[str, list[Run]] = runs[shape]
                med = {k: report.median([d["load_s"] for d in r[k]]) for k in r}
                row = [name, shape.name]
                for when, _title in KINDS:
                    ratio = med[f"off{when}"] / med[f"on{when}"]
                    ratios[name][(shape, when)] = ratio
                    lo, hi = report.ratio_interval([d["load_s"] for d in r[f"off{when}"]],
                                                   [d["load_s"] for d in r[f"on{when}"]])
                    intervals[(name, shape, when)] = (lo, hi)
                    row += [f"{med[f'off{when}']:.3f}", f"{med[f'on{when}']:.3f}",
                            f"**{ratio:.2f}×** ({lo:.2f}–{hi:.2f})"]
                on_w, off_w = r["on-warm"], r["off-warm"]
                tmin = tmins[shape]
                row += [
                    f"{min(d['load_s'] for d in on_w):.2f}–{max(d['load_s'] for d in on_w):.2f}",
                    f"{sum(d['img_pipelined'] for d in on_w)}/{sum(d['img_requests'] for d in on_w)}",
                    f"{sum(d['up_drops'] + d['down_drops'] for d in off_w)} / "
                    f"{sum(d['up_drops'] + d['down_drops'] for d in on_w)}",
                    "" if tmin is None else f"{med['off-warm'] / tmin:.2f}×",
                ]
                summary.append(row)
                rows = [variant_row(label, r[k]) for k, label in (
                    ("off", "OFF, first page"), ("on", "ON, first page"),
                    ("off-warm", "OFF, next page"), ("on-warm", "ON, next page"))]
                details += [f"### {shape.name}", "", *report.table(VARIANT_HEADER, rows), ""]
    plot = _plot(ratios, browser)
    verdict = ""
    if "lan" in ratios:
        parts = []
        for when, title in KINDS:
            said = []
            for s in SHAPES:
                lo, hi = intervals[("lan", s, when)]
                state = "met" if lo >= 0.97 else "**not met**" if hi < 0.97 else "not settled"
                said.append(f"{s.name} {ratios['lan'][(s, when)]:.2f}× ({state})")
            parts.append(f"{title}: {', '.join(said)}")
        verdict = ("On `lan` (goal: no slower, within 3 %; met when the whole 90 % interval is at 0.97× or above, "
                   "not met when it is all below): " + "; ".join(parts) + ".")
    lines = [
        method(browser) + " On `lan` the link is a plain veth pair (no emulation).",
        "",
        f"Pages: {', '.join(s.name for s in SHAPES)} (PNG images of exactly that size, incompressible). "
        f"{rounds} browser runs per page, link and variant, ON/OFF order alternating round by round. Each run "
        f"loads the page right after the browser started ({HELPER_START[browser]}), then the page's copy on another "
        f"origin (port {WARM_PORT}) in the same tab: the browser and the helper are running, but no connection "
        "or learned pipelining carries over.",
        "",
        *report.table(["link", "page", "OFF s (first)", "ON s (first)", "speed-up (first)", "OFF s (next)",
                       "ON s (next)", "speed-up (next)", "ON range s (next)", "ON images pipelined (next)",
                       "queue drops OFF / ON (next)", "best possible (next)"], summary),
        "",
        verdict,
        "",
        f"![speed-up per link and page]({plot.name})",
        "",
        "Times are medians of load time (navigation start → load event); a speed-up's brackets are a 90 % "
        "bootstrap interval (OFF and ON runs resampled on their own). Links: "
        + "; ".join(_describe(n, PROFILES[n]) for n in names) + f". Per-run lines: `{log_path.name}`. "
        "Best possible = OFF / T_min, T_min = 3 RTT + the busier direction's serialization of ON's link bytes.",
        "",
        *details,
    ]
    report.write(_report_name(browser),
                 f"seed000-pages: three realistic pages in {BROWSER_NAMES[browser]}, site on vs off, four links", lines)
