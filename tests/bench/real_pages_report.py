"""real-pages: from measured loads to the report's rows and issue 17's verdicts (pure: numbers in, numbers and
words out; the scenario does the measuring).

Theory of operation. A page's facts (subresources, bytes as served, dependency depth) come from what a real OFF load
asked the server for (its access log: the browser alone decides what a page needs), each request placed in its wave
by the static reading of the document and its stylesheets (`page_deps`). One cell of the report is one page × link
× browser × server: the OFF and ON loads of that cell, alternating in one run. From them: medians, the speed-ups
OFF ÷ ON by wall clock (navigation call → load event, Chromium's gate included) and by navigation timing, each with
its 90 % bootstrap interval (`report.ratio_interval`), the ON/OFF downlink bytes ratio (medians; the worst ON load
against OFF's median too), connections, the waves each load spent on its critical path (`page_deps.critical_waves`,
medians), T_min (`page_limit.t_min`), ON ÷ T_min and the best possible speed-up OFF ÷ T_min (what a client at the
page's physical limit would have: where a goal is beyond any client), and the CPU seconds the browser (OFF, ON) and
the helper (ON) spent per load (medians; `tree_cpu`: on a machine of two cores the helper competes with the page's
parsing and layout). The verdicts are issue 17's
"Done when", one per criterion, each "met", "not met" or "n/a" (does not apply to that cell):

- never slower: the wall-clock speed-up's 90 % interval reaches 0.97 (its upper end ≥ 0.97);
- gain: the median wall-clock speed-up ≥ 1.5× — only on `sat` and `wcdma`, only for pages of ≥ 20 subresources;
- near the limit: ON's median wall clock ≤ 1.3 × T_min — only on `sat`;
- bytes: every ON load's downlink bytes ≤ 1.02 × OFF's median.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import page_deps, page_limit, report

NEVER_SLOWER = 0.97
GAIN = 1.5
GAIN_LINKS = ("sat", "wcdma")
GAIN_MIN_SUBRESOURCES = 20
TMIN_FACTOR = 1.3
TMIN_LINKS = ("sat",)
BYTES_FACTOR = 1.02


@dataclass(frozen=True)
class Request:
    """One access log line of a load: path (query included, as requested), status, body bytes as served."""

    path: str
    status: int
    body_bytes: int


@dataclass(frozen=True)
class PageFacts:
    subresources: int  # requests before the load event, the document not counted
    body_bytes: int  # response bodies as served (content-coded where the server compressed)
    depth: int  # waves: the document 1, what it names 2, ...
    not_found: int  # requests answered 4xx (asked for by the page, absent from the docroot)


def page_facts(requests: Sequence[Request], prefix: str, static_waves: Mapping[str, int]) -> PageFacts:
    """What one load asked for. `prefix` is the page's docroot folder ("/django"), `static_waves` are below it."""
    paths = []
    for r in requests:
        path = r.path.split("?", 1)[0]
        paths.append(path[len(prefix):] if path.startswith(prefix + "/") else path)
    depth = max(page_deps.waves_of_requests(static_waves, paths).values(), default=1)
    return PageFacts(
        subresources=max(len(requests) - 1, 0),
        body_bytes=sum(r.body_bytes for r in requests),
        depth=depth,
        not_found=sum(1 for r in requests if 400 <= r.status < 500),
    )


def typical_facts(facts: Iterable[PageFacts]) -> PageFacts:
    """The median of each fact over several loads (the browser may differ by a request from load to load)."""
    fs = list(facts)
    if not fs:
        raise ValueError("no loads")

    def med(xs: list[int]) -> int:
        return round(report.median(xs))

    return PageFacts(med([f.subresources for f in fs]), med([f.body_bytes for f in fs]),
                     med([f.depth for f in fs]), med([f.not_found for f in fs]))


@dataclass(frozen=True)
class Load:
    """What one browser load measured."""

    wall_s: float  # navigation call → load event (Chromium's gate included)
    nav_s: float  # navigation timing: startTime → loadEventEnd of the page that finally loaded
    down_bytes: int  # link counters, IP packets
    up_bytes: int
    connections: int  # distinct client connections in the server's access log
    requests: int
    waves: int = 0  # waves on its critical path as the server saw them (page_deps.critical_waves)
    #: CPU seconds (user + system) the browser's processes and the helper's (tree_cpu) spent during the load: the
    #: navigation call → load event, then the bench's quiet wait. None: not measured (an older driver).
    cpu_browser_s: float | None = None
    cpu_helper_s: float | None = None


@dataclass(frozen=True)
class Cell:
    """One page × link × browser × server, summarised."""

    off_wall: float
    on_wall: float
    wall_speedup: float
    wall_interval: tuple[float, float]
    off_nav: float
    on_nav: float
    nav_speedup: float
    nav_interval: tuple[float, float]
    bytes_ratio: float  # median ON downlink / median OFF downlink
    worst_bytes_ratio: float  # the largest ON load's downlink / median OFF downlink
    up_ratio: float  # median ON uplink / median OFF uplink (issue 18: within 10 % over h2)
    off_conns: float
    on_conns: float
    off_requests: float
    on_requests: float
    off_waves: float
    on_waves: float
    t_min: float | None
    on_over_t_min: float | None
    best_speedup: float | None = None  # OFF median wall / T_min: the speed-up of a client at the physical limit
    off_cpu_browser: float | None = None  # medians of the loads' CPU seconds (None: a load has none)
    on_cpu_browser: float | None = None
    on_cpu_helper: float | None = None


def cell(off: Sequence[Load], on: Sequence[Load], facts: PageFacts, rtt_ms: float,
         down_kbit: float | None, handshakes: int = 1) -> Cell:
    """`handshakes`: round trips before the first request (1: TCP; 2: TCP + TLS 1.3), for T_min."""
    if not off or not on:
        raise ValueError("both variants need loads")
    med = report.median
    off_wall, on_wall = med([d.wall_s for d in off]), med([d.wall_s for d in on])
    off_nav, on_nav = med([d.nav_s for d in off]), med([d.nav_s for d in on])
    off_down = med([d.down_bytes for d in off])
    tmin = page_limit.t_min(facts.depth, rtt_ms / 1000, facts.body_bytes, down_kbit, handshakes)
    return Cell(
        off_wall=off_wall, on_wall=on_wall, wall_speedup=off_wall / on_wall,
        wall_interval=report.ratio_interval([d.wall_s for d in off], [d.wall_s for d in on]),
        off_nav=off_nav, on_nav=on_nav, nav_speedup=off_nav / on_nav,
        nav_interval=report.ratio_interval([d.nav_s for d in off], [d.nav_s for d in on]),
        bytes_ratio=med([d.down_bytes for d in on]) / off_down,
        worst_bytes_ratio=max(d.down_bytes for d in on) / off_down,
        up_ratio=med([d.up_bytes for d in on]) / med([d.up_bytes for d in off]),
        off_conns=med([d.connections for d in off]), on_conns=med([d.connections for d in on]),
        off_requests=med([d.requests for d in off]), on_requests=med([d.requests for d in on]),
        off_waves=med([d.waves for d in off]), on_waves=med([d.waves for d in on]),
        t_min=tmin, on_over_t_min=None if tmin is None else on_wall / tmin,
        best_speedup=None if tmin is None else off_wall / tmin,
        off_cpu_browser=_median_or_none([d.cpu_browser_s for d in off]),
        on_cpu_browser=_median_or_none([d.cpu_browser_s for d in on]),
        on_cpu_helper=_median_or_none([d.cpu_helper_s for d in on]),
    )


def _median_or_none(xs: Sequence[float | None]) -> float | None:
    known = [x for x in xs if x is not None]
    return report.median(known) if xs and len(known) == len(xs) else None


@dataclass(frozen=True)
class Verdicts:
    never_slower: str
    gain: str
    near_limit: str
    bytes: str

    def all_met(self) -> bool:
        return all(v in ("met", "n/a") for v in (self.never_slower, self.gain, self.near_limit, self.bytes))


def _said(ok: bool) -> str:
    return "met" if ok else "not met"


def verdicts(c: Cell, link: str, facts: PageFacts) -> Verdicts:
    gain_applies = link in GAIN_LINKS and facts.subresources >= GAIN_MIN_SUBRESOURCES
    near_applies = link in TMIN_LINKS and c.on_over_t_min is not None
    return Verdicts(
        never_slower=_said(c.wall_interval[1] >= NEVER_SLOWER),
        gain=_said(c.wall_speedup >= GAIN) if gain_applies else "n/a",
        near_limit=_said(c.on_over_t_min is not None and c.on_over_t_min <= TMIN_FACTOR) if near_applies else "n/a",
        bytes=_said(c.worst_bytes_ratio <= BYTES_FACTOR),
    )


HEADER = ["page", "link", "browser", "server", "OFF wall s", "ON wall s", "speed-up wall (90 %)", "OFF nav s",
          "ON nav s", "speed-up nav (90 %)", "bytes ON/OFF: down (worst), up", "conns OFF / ON", "waves OFF / ON",
          "T_min s", "ON ÷ T_min", "best possible (OFF ÷ T_min)", "CPU s OFF browser / ON browser / ON helper",
          "never slower", "≥ 1.5×", "≤ 1.3 T_min", "bytes ≤ 1.02"]


def row(page: str, link: str, browser: str, server: str, c: Cell, v: Verdicts) -> list[str]:
    """One line under HEADER."""
    return [
        page, link, browser, server, f"{c.off_wall:.3f}", f"{c.on_wall:.3f}",
        f"**{c.wall_speedup:.2f}×** ({c.wall_interval[0]:.2f}–{c.wall_interval[1]:.2f})",
        f"{c.off_nav:.3f}", f"{c.on_nav:.3f}",
        f"{c.nav_speedup:.2f}× ({c.nav_interval[0]:.2f}–{c.nav_interval[1]:.2f})",
        f"{c.bytes_ratio:.3f} ({c.worst_bytes_ratio:.3f}), {c.up_ratio:.2f}", f"{c.off_conns:g} / {c.on_conns:g}",
        f"{c.off_waves:g} / {c.on_waves:g}",
        "–" if c.t_min is None else f"{c.t_min:.2f}", "–" if c.on_over_t_min is None else f"{c.on_over_t_min:.2f}",
        "–" if c.best_speedup is None else f"{c.best_speedup:.2f}×", cpu_column(c),
        v.never_slower, v.gain, v.near_limit, v.bytes,
    ]


def cpu_column(c: Cell) -> str:
    """"OFF browser / ON browser / ON helper", CPU seconds (medians), "–" for what was not measured."""
    return " / ".join("–" if x is None else f"{x:.2f}" for x in (c.off_cpu_browser, c.on_cpu_browser, c.on_cpu_helper))


FACTS_HEADER = ["page", "package", "URL path", "subresources", "kB served (gzip where text)", "depth (waves)",
                "4xx answers"]


def facts_row(name: str, package: str, url_path: str, f: PageFacts) -> list[str]:
    return [name, package, f"`{url_path}`", str(f.subresources), f"{f.body_bytes / 1000:.1f}", str(f.depth),
            str(f.not_found)]


#: Levels (of 255) a pixel's channel may differ by between two screenshots of one screen. Anti-aliasing drawn at
#: another moment moves edges by a level or two: rust-std's search box in Chromium over h2, whose four rounded corners
#: (30 pixels) were one level lighter in every ON load than in every OFF load, the boxes, text and colours the same
#: (2026-12-05). A missing image, colour, glyph or box moves pixels by far more.
SCREEN_TOLERANCE = 8


def screen_difference(a: bytes, b: bytes, tolerance: int = SCREEN_TOLERANCE) -> int | None:
    """How many pixels of two PNG screenshots differ by more than `tolerance` levels in a colour channel; None when
    their sizes differ (then no pixel compares)."""
    from PIL import Image, ImageChops  # Pillow, here through matplotlib (the dev extras), as tests/demo uses it

    with Image.open(io.BytesIO(a)) as pa, Image.open(io.BytesIO(b)) as pb:
        ia, ib = pa.convert("RGB"), pb.convert("RGB")
    if ia.size != ib.size:
        return None
    red, green, blue = ImageChops.difference(ia, ib).split()
    worst = ImageChops.lighter(ImageChops.lighter(red, green), blue)  # per pixel, its most changed channel
    return sum(worst.histogram()[tolerance + 1:])


def kept_screenshot(digest: str) -> bytes | None:
    """The PNG a driver kept for `digest` in LANEFETCH_BENCH_SCREENSHOTS (page_measure.ts screenDigest), if any."""
    where = os.environ.get("LANEFETCH_BENCH_SCREENSHOTS")
    path = Path(where) / f"{digest}.png" if where and re.fullmatch("[0-9a-f]+", digest) else None
    return path.read_bytes() if path is not None and path.is_file() else None


def behaved_otherwise(off: Sequence[Mapping[str, object]], on: Mapping[str, object],
                      screenshot: Callable[[str], bytes | None] = kept_screenshot) -> list[str]:
    """How an ON load behaved unlike every OFF load of its page (issue 20: "no page behaves differently — same
    resources, same rendering, same console"), from the drivers' readings (bench/page_measure.ts): a console error or
    warning, or an uncaught error, that no OFF load had; font faces used or failed unlike every OFF load's; a layout
    (every element's box, hashed) or a viewport as drawn (its screenshot, hashed) unlike every OFF load's. A screen
    whose hash is unlike every OFF load's is the same screen where `screenshot` has its PNG and an OFF load's and no
    pixel between them differs by more than SCREEN_TOLERANCE (anti-aliasing); where it differs, how many pixels do.
    Empty: as the browser alone. A reading an older driver did not take is not compared."""
    out = []

    def readings(d: Mapping[str, object], key: str) -> list[str] | None:
        value = d.get(key)
        return [str(x) for x in value] if isinstance(value, list) else None

    off_console = [readings(d, "console") for d in off]
    seen = {m for ms in off_console if ms is not None for m in ms}
    mine = readings(on, "console")
    if mine is not None and all(ms is not None for ms in off_console):
        new = sorted(set(mine) - seen)
        if new:
            out.append("console: " + " | ".join(new))
    off_fonts = [readings(d, "fonts") for d in off]
    fonts = readings(on, "fonts")
    if fonts is not None and all(f is not None for f in off_fonts) \
            and all(sorted(fonts) != sorted(f or []) for f in off_fonts):
        others = " / ".join(", ".join(o) or "none" for o in sorted({tuple(sorted(f or [])) for f in off_fonts}))
        out.append(f"fonts: {', '.join(sorted(fonts)) or 'none'} (OFF: {others})")
    for key in ("layout", "screen"):
        theirs = {d.get(key) for d in off}
        hashed = on.get(key)
        if isinstance(hashed, str) and None not in theirs and hashed not in theirs:
            names = sorted(str(x) for x in theirs)
            pixels = _pixels_unlike(hashed, names, screenshot) if key == "screen" else None
            if pixels == 0:
                continue
            varied = f" (the OFF loads' own {key}s differ)" if len(theirs) > 1 else ""
            differ = f": {pixels} pixels differ by more than {SCREEN_TOLERANCE} levels" if pixels else ""
            out.append(f"{key} {hashed} (OFF: {', '.join(names)}){varied}{differ}")
    return out


def _pixels_unlike(mine: str, theirs: Sequence[str], screenshot: Callable[[str], bytes | None]) -> int | None:
    """The fewest pixels by which screenshot `mine` differs (screen_difference) from one of `theirs`; None when a
    PNG is missing or no size matches."""
    png, *others = (screenshot(h) for h in (mine, *theirs))
    if png is None or None in others:
        return None
    counts = [c for o in others if o is not None and (c := screen_difference(png, o)) is not None]
    return min(counts) if counts else None
