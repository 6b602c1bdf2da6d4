"""real-pages (issue 17, "Measured on real pages"): documentation pages from Debian packages (`real_pages.CORPUS`)
in real Chromium and Firefox, site ON (lanefetch) vs OFF, served by Apache and nginx (HTTP/1.1, gzip for text as a
real site does) over `wcdma`, `lte`, `sat` and `lan`, ON/OFF order alternating round by round.

Selectors (comma lists; default all): LANEFETCH_BENCH_PAGES (corpus names), LANEFETCH_BENCH_SERVERS (apache, nginx,
nginx-h2), LANEFETCH_BENCH_PROFILES (links), LANEFETCH_BENCH_BROWSERS (chromium, firefox). A run on a subset writes its
own report, named after what it selected (`results/real-pages-chromium-apache.md`), beside the full one.

Server nginx-h2 (issue 18): the same nginx over HTTPS, h2 and http/1.1 offered by ALPN, its certificate from a
throwaway CA. In Chromium the CA is trusted by an NSS store in a HOME of the lab's own. In Firefox (FIREFOX_HTTPS)
every load's fresh profile trusts it; OFF loads the page from nginx, ON is a site opted into "Accelerate HTTPS on
this site" before a Firefox restart (the site's CA installed into the profile by `lanefetch firefox-https add`, the
extension's storage saying enabled and opted in): Firefox sends CONNECT to the helper, which fetches from nginx.
The helper trusts the throwaway CA through LANEFETCH_TEST_UPSTREAM_CA_FILE in both browsers. A Firefox load whose
helper log (LANEFETCH_LOG=DEBUG) does not account for every request of the page nginx answered fails the run (ON),
as does one where a helper fetched anything (OFF): Firefox falls back to direct silently.

LANEFETCH_BENCH_VISIT=second (issue 20; Chromium and Firefox): each ON load is a *second visit* of a page the helper
learned (PageLab.second_visit: two learning ON loads, then the helper's HTTP cache emptied with its learned pages
kept, then the measured ON load in a fresh browser); OFF is a fresh browser as always. The report's name ends in
`-second-visit`.

LANEFETCH_BENCH_VISIT=first (issue 20; Chromium, and Firefox for what it carries over): each ON load is a *first
visit* of a page, by a helper that
has seen one load of another page of the corpus (PageLab.first_visit: so it knows the browser's field profile, as
for anyone who used lanefetch before; the page's learned history empty; the helper's stored responses deleted and
the browser's cache fresh), the pages served on a public address (Lab.public_address) for ON and OFF alike, so
the helper fetches the document, as for a real site (on the lab's private address Chromium loads a local
document itself and nothing can be discovered from it). The report's name ends in `-first-visit`. In Firefox
(proxy mode, no flight) what the earlier load leaves is the helper's origin records (pipelining, protocol, round
trip: a site's next page after a restart of Firefox).
LANEFETCH_BENCH_VISIT=sibling: as first, but the helper's earlier loads are of the page's two siblings
(`RealPage.siblings`: other pages of its package, same path shape), as for a reader who opened two pages of the
site before (the stored responses deleted as for a first visit). The report's name ends in `-sibling-visit`.
LANEFETCH_BENCH_VISIT=revisit (Chromium only): a return to a page after its freshness ran out. The servers say
`Cache-Control: no-cache` (every use of a stored response revalidates, ETag / Last-Modified, as once a site's
max-age has passed); each ON load is the third load of the page by one helper (two learning ON loads, the helper's
cache and learned pages kept, the second learning load and the measured one one Chromium profile restarted
between: PageLab.second_visit with keep_stored), each OFF load the second of one Chromium profile (restarted
between, its own cache warm: the driver's --repeat); both on the public address as for a first visit. The
report's name ends in `-revisit`.
LANEFETCH_BENCH_VISIT=again (Chromium only): a return to a page in the tab that showed it (a link back to it): every
load, ON and OFF, is the second navigation to the page in one tab of a fresh browser (the first logged, not
measured), the browser's caches and, ON, the helper's warm with what each fetched, the tab intercepted since its
first load (its Network events on, so the browser's protocol to the origin known: over h2 its requests are the
browser's connection's unless the helper holds them). The servers say `Cache-Control: no-cache` as for a revisit
(every stored response revalidated, rather than a heuristic freshness from the files' Last-Modified). On the public
address as for a first visit, or with LANEFETCH_BENCH_ADDRESS=private on the lab's private one (Chromium then loads
the document itself: over h2 the browser's protocol to the origin is known from it, and the page's requests go to
the helper only to be answered from what it holds). The report's name ends in `-again` (`-again-private`).
Unset: every ON load is a fresh helper's and the lab's address private, as in issue 17's runs. With
LANEFETCH_BENCH_ADDRESS=public on the public address instead (a new user's first page of a real site: the helper,
knowing nothing, fetches the document and reads it); the report's name ends in `-public`.
The pure parts are `page_deps` (waves), `page_limit` (T_min) and `real_pages_report` (rows, verdicts).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence

from bench import page_deps, report
from bench import real_pages_report as rr
from bench.netlab import PROFILES
from bench.page_load import BROWSER_NAMES, HTTPS_SERVERS, PageLab, Run, breakdown_lines, helper_line, method
from bench.real_pages import CORPUS, RealPage, install_missing
from bench.servers import COMPRESSED_TYPES, AccessRecord, compression_conf, revalidate_conf

NAME = "real-pages"
_ALL = {
    "LANEFETCH_BENCH_PAGES": [p.name for p in CORPUS],
    "LANEFETCH_BENCH_SERVERS": ["apache", "nginx", "nginx-h2"],
    "LANEFETCH_BENCH_PROFILES": ["wcdma", "lte", "sat", "lan"],
    "LANEFETCH_BENCH_BROWSERS": ["chromium", "firefox"],
}
# Taken when named, not run by default: nginx over HTTPS with HTTP/1.1 only (Firefox's HTTPS acceleration of a site
# that does not speak h2).
_NAMED_ONLY = {"LANEFETCH_BENCH_SERVERS": ["nginx-tls"]}


SERVER_LABELS = {"apache": "Apache", "nginx": "nginx", "nginx-h2": "nginx over HTTPS (h2 offered)",
                 "nginx-tls": "nginx over HTTPS (HTTP/1.1 only)"}


def _chosen(var: str) -> list[str]:
    raw = os.environ.get(var, "")
    names = [n for n in raw.split(",") if n] or _ALL[var]
    known = [*_ALL[var], *_NAMED_ONLY.get(var, [])]
    unknown = set(names) - set(known)
    if unknown:
        raise SystemExit(f"{var}: unknown {', '.join(sorted(unknown))} (have: {', '.join(known)})")
    return names


VISITS = ("fresh", "first", "sibling", "second", "revisit", "again")


def visit_mode() -> str:
    """One of VISITS: "fresh" when LANEFETCH_BENCH_VISIT is unset."""
    visit = os.environ.get("LANEFETCH_BENCH_VISIT", "") or "fresh"
    if visit not in VISITS:
        raise SystemExit(f"LANEFETCH_BENCH_VISIT: {', '.join(VISITS[1:])} (or unset), not {visit!r}")
    return visit


def report_name(chosen: dict[str, list[str]], visit: str = "fresh") -> str:
    """`real-pages` for the full matrix; a subset adds what it selected, selector by selector; `-second-visit`,
    `-first-visit`, `-sibling-visit`, `-revisit` or `-again`."""
    parts = [NAME]
    for var in ("LANEFETCH_BENCH_BROWSERS", "LANEFETCH_BENCH_SERVERS", "LANEFETCH_BENCH_PROFILES",
                "LANEFETCH_BENCH_PAGES"):
        if set(chosen[var]) != set(_ALL[var]):  # the order (which link first) does not make a subset
            parts += chosen[var]
    tail = {"fresh": [], "revisit": ["revisit"], "again": ["again"]}.get(visit, [visit, "visit"])
    return "-".join([*parts, *tail])


def _alternate_second_visits(pl: PageLab, pages: Sequence[RealPage], rounds: int, log: Callable[[str], None],
                             revisit: bool = False) -> dict[RealPage, dict[str, list[Run]]]:
    """As PageLab.alternate, with every ON load a second visit (PageLab.second_visit); the learning loads are
    logged, not measured. `revisit`: the helper's stored responses kept, and every OFF load the second of one
    browser profile (the driver's --repeat; the first logged, not measured)."""
    runs: dict[RealPage, dict[str, list[Run]]] = {p: {"on": [], "off": []} for p in pages}
    rtt = pl.profile.rtt_ms / 1000
    for r in range(rounds):
        for page in pages:
            for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                if mode == "on":
                    learning, d = pl.second_visit(page, keep_stored=revisit)
                else:
                    learning = pl.load(page, "off", repeat=revisit)
                    d = learning.pop()
                for k, ld in enumerate(learning):
                    log(f"round {r + 1} {page.name} {mode} earlier load {k + 1}: {_describe(ld, rtt)}")
                runs[page][mode].append(d)
                revalidated = f" ({d.get('not_modified', 0)} × 304)" if revisit else ""
                log(f"round {r + 1} {page.name} {mode}: {_describe(d, rtt)}{breakdown_lines(d)}{revalidated}")
    return runs


def _alternate_again(pl: PageLab, pages: Sequence[RealPage], rounds: int,
                     log: Callable[[str], None]) -> dict[RealPage, dict[str, list[Run]]]:
    """As PageLab.alternate, with every load (ON and OFF) the page's second in one tab of a fresh browser
    (PageLab.load's `again`; the first logged, not measured)."""
    runs: dict[RealPage, dict[str, list[Run]]] = {p: {"on": [], "off": []} for p in pages}
    rtt = pl.profile.rtt_ms / 1000
    for r in range(rounds):
        for page in pages:
            for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                first, d = pl.load(page, mode, again=True)
                log(f"round {r + 1} {page.name} {mode} first load in the tab: {_describe(first, rtt)}")
                runs[page][mode].append(d)
                log(f"round {r + 1} {page.name} {mode}: {_describe(d, rtt)}{breakdown_lines(d)} "
                    f"({d.get('not_modified', 0)} × 304)")
    return runs


def _alternate_first_visits(pl: PageLab, pages: Sequence[RealPage], rounds: int,
                            log: Callable[[str], None], sibling: bool = False) -> dict[RealPage, dict[str, list[Run]]]:
    """As PageLab.alternate, with every ON load a first visit (PageLab.first_visit) after one load of another
    page of the corpus (the next one in the corpus's order; logged, not measured), or with `sibling` after one
    load of each of the page's siblings (the last one logged)."""
    runs: dict[RealPage, dict[str, list[Run]]] = {p: {"on": [], "off": []} for p in pages}
    rtt = pl.profile.rtt_ms / 1000
    for r in range(rounds):
        for page in pages:
            for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                if mode == "on":
                    other = CORPUS[(CORPUS.index(page) + 1) % len(CORPUS)]
                    before = page.sibling_pages() if sibling else [other]
                    primer, d = pl.first_visit(page, before)
                    log(f"round {r + 1} {page.name} helper's earlier load "
                        f"({before[-1].name}{before[-1].page if sibling else ''}): {_describe(primer, rtt)}")
                else:
                    d = pl.load(page, "off")[0]
                runs[page][mode].append(d)
                log(f"round {r + 1} {page.name} {mode}: {_describe(d, rtt)}{breakdown_lines(d)}")
    return runs


def answers(d: Run) -> list[AccessRecord]:
    """The load's answers as the page got them: a body the helper asked in pieces (its flight's large images and
    fonts: several 206 answers of one path) is one answer of their bytes together. The corpus has no media, the one
    thing a browser itself asks in ranges."""
    whole = [r for r in d["records"] if r.status != 206]
    pieces: dict[str, list[AccessRecord]] = {}
    for r in d["records"]:
        if r.status == 206:
            pieces.setdefault(r.path, []).append(r)
    return whole + [dataclasses.replace(rs[0], status=200, body_bytes=sum(r.body_bytes for r in rs))
                    for rs in pieces.values()]


def _requests(d: Run) -> list[rr.Request]:
    return [rr.Request(r.path, r.status, r.body_bytes) for r in d["records"]]


def _drop_strays(d: Run, page: RealPage) -> None:
    """Drops from a load's records what belongs to another page of the corpus: a request the previous browser run
    made after its load event (a favicon) is logged when the server is done with it, which may be after this load's
    log position was taken. Requests and connections are recounted; `strays` says how many were dropped (their bytes
    may still be in this load's link counters: a few kB at most)."""
    others = tuple(f"/{p.name}/" for p in CORPUS if p != page)
    own = [r for r in d["records"] if not r.path.startswith(others)]
    d["strays"] = len(d["records"]) - len(own)
    d["records"], d["all_requests"], d["conns"] = own, len(own), len({r.connection for r in own})


def _load(d: Run, rtt_s: float) -> rr.Load:
    return rr.Load(wall_s=d["wall_s"], nav_s=d["load_s"], down_bytes=d["down_bytes"], up_bytes=d["up_bytes"],
                   connections=d["conns"], requests=d["all_requests"], waves=load_waves(d, rtt_s),
                   cpu_browser_s=d.get("cpu_browser_s"), cpu_helper_s=d.get("cpu_helper_s"))


def load_waves(d: Run, rtt_s: float) -> int:
    """The waves the load spent on its critical path as the server saw them (page_deps.critical_waves), from its
    access log: per path, when its first request arrived (the record's end less its duration) and when its last
    answer ended. Computed once per load (its log line and its report row both ask)."""
    if "waves" in d:
        return int(d["waves"])
    # The corpus page with most of the load's records (a late request of the previous page's may be among them).
    counts = Counter(p for r in d["records"] for p in CORPUS if r.path.startswith(f"/{p.name}/"))
    if not counts:
        d["waves"] = 0
        return 0
    page = counts.most_common(1)[0][0]
    times: dict[str, tuple[float, float]] = {}
    prefix = f"/{page.name}"
    for r in d["records"]:
        if not r.path.startswith(prefix + "/"):
            continue  # another page's (a stray favicon): not on this page's chains
        path = r.path.split("?", 1)[0].removeprefix(prefix)
        asked, ended = r.end_time - r.duration, r.end_time
        first, last = times.get(path, (asked, ended))
        times[path] = (min(first, asked), max(last, ended))
    d["waves"] = page_deps.critical_waves(_graph(page), page.page, times, rtt_s)
    return int(d["waves"])


@functools.cache
def _graph(page: RealPage) -> dict[str, list[str]]:
    return page_deps.dependency_graph(page.page, page.read)


def _describe(d: Run, rtt_s: float) -> str:
    fails = sum(1 for r in d["records"] if r.status >= 400)
    protocols = "+".join(sorted({r.request.rsplit(" ", 1)[-1] for r in d["records"]}))
    split = (f" (before the navigation {d['before_nav_s']:.3f} s, after the load event {d['after_load_s']:.3f} s)"
             if "before_nav_s" in d else "")
    return (f"wall {d['wall_s']:.3f} s{split}, nav {d['load_s']:.3f} s, {d['all_requests']} reqs ({fails} ≥ 400) on "
            f"{d['conns']} conns ({protocols}), {sum(r.body_bytes for r in d['records'])} B bodies, images "
            f"{d['decoded']}/{d['images']} decoded, waves {load_waves(d, rtt_s)}, link up {d['up_bytes']} B down "
            f"{d['down_bytes']} B "
            f"({d.get('up_drops', 0) + d.get('down_drops', 0)} drops, {d.get('late', 0)} late)"
            + (f", CPU browser {d['cpu_browser_s']:.2f} s helper {d['cpu_helper_s']:.2f} s "
               f"({d.get('cpu_ended', 0)} processes ended)" if "cpu_browser_s" in d else "")
            + (f", {pieces} of them pieces (206)" if (pieces := sum(r.status == 206 for r in d["records"])) else "")
            + "".join(f"; {path} asked {n}×" for path, n in Counter(r.path for r in answers(d)).items() if n > 1)
            + (f"; layout {d['layout']}, screen {d.get('screen', '-')}, {len(d.get('fonts', []))} font faces, "
               f"{len(d.get('console', []))} console messages" if "layout" in d else "")
            + helper_line(d))


def _answers(d: Run, again: dict[str, int]) -> str:
    """Each path asked for again, how many more times, and the body bytes and status of each of its answers."""
    out = []
    for path, n in sorted(again.items()):
        recs = [r for r in answers(d) if r.path == path]
        out.append(f"{path} +{n} (answers: {', '.join(f'{r.status} {r.body_bytes} B' for r in recs)})")
    return "; ".join(out)


def _oddities(page: RealPage, off: Sequence[Run], on: Sequence[Run]) -> list[str]:
    """What an ON load did that the OFF loads did not: fewer images decoded, more 4xx answers, a path every OFF load
    asked the server for (before the load event) that it did not, a path asked for more often than in any OFF load
    (with the bytes those extra answers carried), a console message, fonts, a layout or a viewport as drawn unlike
    every OFF load's (real_pages_report.behaved_otherwise)."""
    out = []
    off_counts = [Counter(r.path for r in answers(d)) for d in off]
    off_decoded = min(d["decoded"] for d in off)
    off_fails = max(sum(1 for r in d["records"] if r.status >= 400) for d in off)
    always = set.intersection(*({r.path for r in d["records"]} for d in off))
    for k, d in enumerate(on):
        fails = sum(1 for r in d["records"] if r.status >= 400)
        missing = sorted(always - {r.path for r in d["records"]})
        counts = Counter(r.path for r in answers(d))
        again = {p: n - max(c[p] for c in off_counts) for p, n in counts.items() if n > max(c[p] for c in off_counts)}
        otherwise = rr.behaved_otherwise(off, d)
        if d["decoded"] < off_decoded or fails > off_fails or missing or again or otherwise:
            out.append(f"{page.name} ON load {k + 1}: {d['decoded']} images decoded (OFF: ≥ {off_decoded}), "
                       f"{fails} answers ≥ 400 (OFF: ≤ {off_fails})"
                       + (f", not asked of the server: {', '.join(missing)}" if missing else "")
                       + (f", asked again (more often than any OFF load): {_answers(d, again)}" if again else "")
                       + "".join(f", {o}" for o in otherwise))
    return out


Measured = dict[tuple[str, str], dict[str, dict[RealPage, dict[str, list[Run]]]]]

FRESH_PUBLIC = (
    "**Fresh, on a public address (`LANEFETCH_BENCH_ADDRESS=public`)**: every ON load is a fresh helper's (nothing "
    "learned, not even the browser's request fields), as in the default run, but the pages are served on an address "
    "that browser, extension and helper take for a public one (`Lab.public_address`), for ON and OFF alike: a new "
    "user's first page of a real site, whose document the helper fetches and reads (on the lab's private address "
    "Chromium loads the document itself).")

SECOND_VISIT = (
    "**Second visit (issue 20, `LANEFETCH_BENCH_VISIT=second`)**: every ON load is the second visit of a page the "
    "helper learned: two learning ON loads of the page (each a fresh Chromium; the helper records a load when the "
    "browser quits and it stops), then the helper's HTTP cache emptied with its learned pages and origins kept (a "
    "bench step: the table `entries` of its cache database deleted; no product path empties one without the other, "
    "clearing the cache forgets the learned pages too), then the measured load in a fresh Chromium (its own cache "
    "empty). OFF: a fresh Chromium, as always. Issue 20's aims: second visit ≥ 2× (the speed-up column), bytes never "
    "asked for ≤ 5 % (bounded here by the downlink column: ON's bytes over OFF's, which also holds whatever else ON "
    "adds or saves). In Firefox (proxy mode) the same with fresh Firefox profiles, the helper's cache directory "
    "kept; Firefox keeps no response the helper answered from its flight beyond its own cache, which is fresh too."
)


FIRST_VISIT = (
    "**First visit (issue 20, `LANEFETCH_BENCH_VISIT=first`)**: every ON load is the first visit of a page by a "
    "helper that has seen one ON load of *another* page of the corpus (the next in the corpus's order; a fresh "
    "Chromium, the same helper state): so the helper knows this browser's field profile (Accept per destination, "
    "Accept-Language, User-Agent: the same for every site) and nothing of the measured page; then the helper's "
    "stored responses deleted (a bench step; its learned pages, none of the measured page, kept), then the "
    "measured load in a fresh Chromium (its cache empty). The pages are served on a public address for ON and OFF "
    "alike (`Lab.public_address`, routed only between the lab's two namespaces), so that in Chromium ON the helper "
    "fetches the document, as it does for a real site (a page on a private address is loaded by Chromium itself). "
    "Issue 20's aims: first visit ≥ 1.3× (the speed-up column), bytes never asked for ≤ 5 % (the waste column "
    "below: bytes the server sent ON beyond what any OFF load asked for). Firefox (proxy mode: no flight, no "
    "discovery): the earlier load leaves the helper's origin records (pipelining, protocol, round trip), what a "
    "site's next page after a restart of Firefox starts from."
)


FIREFOX_HTTPS = (
    "**Firefox over HTTPS (`nginx-h2`)**: every load a fresh Firefox profile whose certificate store (NSS "
    "`certutil`, as the product installs its own CAs) trusts the throwaway CA. OFF: Firefox loads the page from "
    "nginx itself (h2 by ALPN). ON: the site enabled and opted into \"Accelerate HTTPS on this site\" as before a "
    "Firefox restart: the helper's certificate authority for the site created and installed into the profile before "
    "Firefox starts (`lanefetch firefox-https add`, the opt-in's own code), the extension's storage saying the site "
    "is enabled and opted in, and the navigation once the extension routes the site's https requests to the helper "
    "(its helper reported the CA active). Firefox then sends CONNECT to the helper's proxy, the helper ends Firefox's "
    "TLS with a certificate it mints and fetches the requests from nginx over h2 (it trusts the throwaway CA through "
    "`LANEFETCH_TEST_UPSTREAM_CA_FILE`). Each load's helper log (`LANEFETCH_LOG=DEBUG`) must account for every "
    "request of the page nginx answered (ON) and name none (OFF), or the run fails: Firefox falls back to a direct "
    "connection silently. Firefox's connections to the helper are local and not on the emulated link; nginx's "
    "connections column counts the helper's."
)


REVISIT = (
    "**Revisit (`LANEFETCH_BENCH_VISIT=revisit`)**: a return to a page after its freshness ran out. The servers "
    "answer with `Cache-Control: no-cache` (Apache mod_headers, nginx `add_header`): a stored response is used only "
    "after a revalidation (ETag, Last-Modified), as happens on every site once its max-age has passed. ON: the third "
    "load of the page by one helper (two learning ON loads, its cache and learned pages kept; the second learning "
    "load and the measured one are one Chromium profile, restarted between, so the browser's own cache holds what "
    "it fetched itself, such as favicons). OFF: the second load of one Chromium profile, restarted between (its own "
    "cache warm: every stored response revalidated). Both on the public address, as for a first visit."
)


AGAIN = (
    "**Again (`LANEFETCH_BENCH_VISIT=again`)**: a return to a page in the tab that showed it. Every load, ON and "
    "OFF, is the second navigation to the page in one tab of a fresh Chromium (the first logged, not measured): "
    "the browser's caches warm with what it fetched itself and, ON, the helper's with what the helper fetched; the "
    "tab intercepted since its first load, so the browser's protocol to the origin is known (over h2 the page's "
    "requests are the browser's connection's unless the helper holds them). The servers answer with "
    "`Cache-Control: no-cache`, as for a revisit: every stored response is revalidated. Both on the public address "
    "(a report named `-again-private`: the lab's private one, where Chromium loads the document itself)."
)


SIBLING_VISIT = (
    "**Sibling visit (`LANEFETCH_BENCH_VISIT=sibling`)**: as the first visit above, except that the helper's earlier "
    "loads are one ON load of each of the page's two siblings (other pages of its package in the same folder, so "
    "of the same path shape; `RealPage.siblings`), as for a reader who opened two pages of the site before; their "
    "stored responses deleted as for a first visit (what the siblings asked for comes over the link again)."
)


def waste(page_offs: Sequence[Run], d: Run) -> int:
    """Body bytes the server sent in ON load d beyond what any OFF load of the page asked for: each path's
    answers past the most any OFF load got (a prefetch nobody claimed, or one refused and fetched again)."""
    off_counts = [Counter(r.path for r in answers(o)) for o in page_offs]
    by_path: dict[str, list[int]] = {}
    for r in answers(d):
        by_path.setdefault(r.path, []).append(r.body_bytes)
    extra = 0
    for path, sizes in by_path.items():
        allowed = max(c[path] for c in off_counts)
        extra += sum(sorted(sizes)[:max(len(sizes) - allowed, 0)])
    return extra


def run(rounds: int) -> int:
    """The scenario; every load's screenshot is kept for the run (in LANEFETCH_BENCH_SCREENSHOTS, else a directory
    removed afterwards) so that a screen hashed unlike the OFF loads' is compared pixel by pixel
    (real_pages_report.behaved_otherwise)."""
    if os.environ.get("LANEFETCH_BENCH_SCREENSHOTS"):
        return _run(rounds)
    with tempfile.TemporaryDirectory(prefix="lf-bench-screens-") as screens:
        os.environ["LANEFETCH_BENCH_SCREENSHOTS"] = screens
        try:
            return _run(rounds)
        finally:
            del os.environ["LANEFETCH_BENCH_SCREENSHOTS"]


def _run(rounds: int) -> int:
    chosen = {var: _chosen(var) for var in _ALL}
    visit = visit_mode()
    address = os.environ.get("LANEFETCH_BENCH_ADDRESS", "")
    if address not in ("", "public", "private"):
        raise SystemExit(f"LANEFETCH_BENCH_ADDRESS: public or private (or unset), not {address!r}")
    private = visit == "again" and address == "private"
    fresh_public = visit == "fresh" and address == "public"
    sibling = visit == "sibling"
    first = visit == "first" or sibling
    if visit not in ("fresh", "first", "sibling", "second") and chosen["LANEFETCH_BENCH_BROWSERS"] != ["chromium"]:
        raise SystemExit(f"LANEFETCH_BENCH_VISIT={visit}: Chromium only (LANEFETCH_BENCH_BROWSERS=chromium)")
    pages = [p for p in CORPUS if p.name in chosen["LANEFETCH_BENCH_PAGES"]]
    others = [CORPUS[(CORPUS.index(p) + 1) % len(CORPUS)] for p in pages] if first and not sibling else []
    install_missing([*pages, *(o for o in others if o not in pages)])
    others += [s for p in pages for s in p.sibling_pages()] if sibling else []
    name = report_name(chosen, visit) + ("-private" if private else "") + ("-public" if fresh_public else "")
    report.RESULTS.mkdir(exist_ok=True)
    log_path = report.RESULTS / f"{name}.log"
    measured: Measured = {}
    ccs: dict[str, None] = {}  # the servers' congestion controls, in the order met
    with log_path.open("w") as log_file:
        def log(line: str) -> None:
            print(line, flush=True)
            log_file.write(line + "\n")
            log_file.flush()

        for server in chosen["LANEFETCH_BENCH_SERVERS"]:
            for browser in chosen["LANEFETCH_BENCH_BROWSERS"]:
                for link in chosen["LANEFETCH_BENCH_PROFILES"]:
                    served = [*pages, *(o for o in dict.fromkeys(others) if o not in pages)]
                    kind = server.removesuffix("-h2").removesuffix("-tls")
                    conf = compression_conf(kind) + (revalidate_conf(kind) if visit in ("revisit", "again") else "")
                    with PageLab(PROFILES[link], served, browser, conf, server=server, warm_port=False,
                                 public=first or visit == "revisit" or (visit == "again" and not private)
                                 or fresh_public) as pl:
                        where = f"{server} {browser} {link}"
                        ccs[pl.server_cc] = None

                        def log_here(line: str, where: str = where) -> None:
                            log(f"[{where}] {line}")

                        if visit == "again":
                            runs = _alternate_again(pl, pages, rounds, log_here)
                        elif visit in ("second", "revisit"):
                            runs = _alternate_second_visits(pl, pages, rounds, log_here, revisit=visit == "revisit")
                        elif first:
                            runs = _alternate_first_visits(pl, pages, rounds, log_here, sibling)
                        else:
                            rtt = PROFILES[link].rtt_ms / 1000
                            runs = pl.alternate(pages, rounds, describe=lambda d, rtt=rtt: _describe(d, rtt),
                                                log=log_here)
                    for page, by_variant in runs.items():
                        for d in (d for ds in by_variant.values() for d in ds):
                            _drop_strays(d, page)
                    measured.setdefault((server, browser), {})[link] = runs
                    # Rewritten after every link: a run cut short still leaves what it measured.
                    _write(name, chosen, pages, measured, rounds, log_path.name, visit, ", ".join(ccs),
                           fresh_public=fresh_public)
    return 0


def _write(name: str, chosen: dict[str, list[str]], pages: Sequence[RealPage], measured: Measured, rounds: int,
           log_name: str, visit: str = "fresh", server_cc: str = "", *, fresh_public: bool = False) -> None:
    statics = {p: p.static_waves() for p in pages}
    rows: list[list[str]] = []
    facts_rows: list[list[str]] = []
    oddities: list[str] = []
    wastes: list[str] = []
    tally = {"never_slower": 0, "gain": 0, "near_limit": 0, "bytes": 0}
    applied = dict.fromkeys(tally, 0)
    for (server, browser), by_link in measured.items():
        for page in pages:
            # The page's facts from every OFF load of this browser and server (the browser alone decides what the
            # page needs; the server decides the bytes).
            offs = [d for runs in by_link.values() for d in runs[page]["off"]]
            facts = rr.typical_facts(rr.page_facts(_requests(d), f"/{page.name}", statics[page]) for d in offs)
            facts_rows.append([*rr.facts_row(page.name, page.package, page.url_path, facts), BROWSER_NAMES[browser],
                               server])
            for link, runs in by_link.items():
                off, on = runs[page]["off"], runs[page]["on"]
                p = PROFILES[link]
                rtt = p.rtt_ms / 1000
                c = rr.cell([_load(d, rtt) for d in off], [_load(d, rtt) for d in on], facts, p.rtt_ms,
                            p.down_kbit if p.emulated else None,
                            handshakes=2 if server in HTTPS_SERVERS else 1)
                v = rr.verdicts(c, link, facts)
                for k in tally:
                    said = getattr(v, k)
                    applied[k] += said != "n/a"
                    tally[k] += said == "met"
                rows.append(rr.row(page.name, link, BROWSER_NAMES[browser], server, c, v))
                oddities += [f"{link} {browser} {server}: {o}" for o in _oddities(page, off, on)]
                page_bytes = sorted(sum(r.body_bytes for r in d["records"]) for d in off)[len(off) // 2]
                wasted = sorted(waste(off, d) for d in on)
                wastes.append(f"{page.name} {link} {browser} {server}: median {wasted[len(wasted) // 2]} B, worst "
                              f"{wasted[-1]} B of the page's {page_bytes} B (OFF median, bodies): worst "
                              f"{100 * wasted[-1] / max(page_bytes, 1):.1f} %")
    done = sum(len(v) for v in measured.values())
    planned = (len(chosen["LANEFETCH_BENCH_SERVERS"]) * len(chosen["LANEFETCH_BENCH_BROWSERS"])
               * len(chosen["LANEFETCH_BENCH_PROFILES"]))
    links = chosen["LANEFETCH_BENCH_PROFILES"]
    lines = [
        *([] if done == planned else [f"**Partial**: {done} of {planned} server × browser × link runs done.", ""]),
        " ".join(method(b, " / ".join(SERVER_LABELS[s] for s in chosen["LANEFETCH_BENCH_SERVERS"]),
                        images_checked=False)
                 for b in chosen["LANEFETCH_BENCH_BROWSERS"]),
        "",
        f"Servers: {', '.join(chosen['LANEFETCH_BENCH_SERVERS'])} (HTTP/1.1, keep-alive; `nginx-h2`: the same nginx "
        "over HTTPS offering h2 and http/1.1 by ALPN, certificate from a throwaway CA that only the browser's store "
        "(Chromium: an NSS store in a HOME of the lab's own; Firefox: each fresh profile's) and the helper trust; "
        "TCP congestion control "
        f"{server_cc or 'unknown'}, `LANEFETCH_BENCH_SERVER_CC`), each gzipping "
        f"{', '.join(COMPRESSED_TYPES)} (nginx `gzip_comp_level 6`, Apache mod_deflate's default). Instead of PNG "
        "grids, the pages are Debian documentation packages' own pages, copied at run time from the installed "
        "package (symlinks resolved) into the server's docroot under `/NAME/`; real pages' images are counted, not "
        "checked. Every run is a fresh browser (no HTTP cache) loading one page once, the navigation soon after "
        "the browser started (2.5 s in both variants, ON with the site enabled and the helper up ≥ 1 s before).",
        *(["", FIREFOX_HTTPS] if set(HTTPS_SERVERS) & set(chosen["LANEFETCH_BENCH_SERVERS"])
          and "firefox" in chosen["LANEFETCH_BENCH_BROWSERS"] else []),
        *(["", FRESH_PUBLIC] if fresh_public else []),
        *(["", SECOND_VISIT] if visit == "second" else []),
        *(["", FIRST_VISIT] if visit in ("first", "sibling") else []),
        *(["", SIBLING_VISIT] if visit == "sibling" else []),
        *(["", REVISIT] if visit == "revisit" else []),
        *(["", AGAIN] if visit == "again" else []),
        "",
        f"{rounds} browser runs per page, link, browser, server and variant, ON/OFF order alternating round by "
        "round. Links: " + "; ".join(f"`{n}` " + (f"RTT {PROFILES[n].rtt_ms:g} ms, {PROFILES[n].down_kbit:g} / "
                                                   f"{PROFILES[n].up_kbit:g} kbit/s" if PROFILES[n].emulated
                                                   else "plain veth") for n in links) + ".",
        "",
        "## The pages",
        "",
        "Measured from the OFF loads (the browser alone decides what the page needs), medians over the loads: "
        "requests the server saw before the load event, less the document; response bodies as served; depth = the "
        "deepest wave among them (`page_deps`: document 1, what it names 2, what a stylesheet names 3, what a "
        "script fetched one after the deepest script).",
        "",
        *report.table([*rr.FACTS_HEADER, "browser", "server"], facts_rows),
        "",
        "## ON vs OFF",
        "",
        *report.table(rr.HEADER, rows),
        "",
        "Speed-up = OFF median / ON median, brackets: 90 % bootstrap interval (OFF and ON resampled on their own). "
        "Wall = the driver's navigation call → load event (Chromium ON: the extension's gate included); nav = "
        "`loadEventEnd - startTime` of the page that finally loaded. Bytes = the link's counters (emulated links: IP "
        "packets; `lan`: the veth device's Ethernet frames), read once the link is quiet after the load (nothing "
        "either way for two round trips, at most 15 s: a response the load event does not wait for is counted), ON "
        "median / OFF median: downlink (worst = largest ON "
        "load / OFF median), then uplink. Conns = distinct client connections in the server's access log, medians. "
        "Waves = the waves a load spent on its critical path as the server saw them (`page_deps.critical_waves`, "
        "medians): the longest chain of requested paths from the document (1), each body naming the next, counting "
        "a step only where the next was asked half a round trip or more after its parent's answer ended (found in "
        "that body); a prefetched or preloaded path costs its chain no wave. "
        "T_min = (1 + depth) × RTT + bytes served × 8 / downlink rate (`page_limit.py`: one TCP handshake — for "
        "`nginx-h2` two, TCP + TLS 1.3 — one round trip per wave, bodies only, no headers or slow start, not "
        "overlapped); ON ÷ T_min uses ON's median wall clock. Best possible = OFF's median wall clock ÷ T_min: the "
        "speed-up a client at the page's physical limit would have, so a goal above it is beyond any client (on "
        "`wcdma` bytes ÷ rate make most of T_min and OFF is already near it). "
        "CPU s = CPU seconds (user + system, medians) spent during a load, from its navigation call to its load "
        "event and then during the quiet wait above (not while the driver reads the page and takes its "
        "screenshot), by the browser's processes (OFF, then ON: lanefetch's extension runs in them) and by "
        "lanefetch's helper (ON: the native host, which in Firefox is the proxy, with its discovery worker and "
        "forkserver; `tree_cpu.py`), read from "
        "`/proc/<pid>/stat` of the driver's process tree every 0.1 s and at both ends (a process that ended keeps "
        "what it had at its last sample, plus what its parent's cutime gained beyond that). On a machine of two "
        "cores the helper's CPU competes with the page's parsing and layout.",
        "",
        "Verdicts (issue 17, Done when): never slower = the wall-clock interval reaches 0.97 (upper end ≥ 0.97); "
        "≥ 1.5× = median wall-clock speed-up, on `sat` and `wcdma` for pages of ≥ 20 subresources; ≤ 1.3 T_min = "
        "ON's median wall clock, on `sat`; bytes ≤ 1.02 = every ON load's downlink ≤ 1.02 × OFF's median. "
        + "; ".join(f"{k.replace('_', ' ')}: {tally[k]} of {applied[k]} met" for k in tally) + ".",
        "",
        "## What ON did that OFF did not",
        "",
        *([f"- {o}" for o in oddities] or ["Nothing: every ON load decoded as many images as the OFF loads, had no "
                                           "more 4xx answers, asked the server for every path all OFF loads did, "
                                           "logged no console message no OFF load logged, and used the font faces, "
                                           "laid the page out and drew its viewport as an OFF load did (layout: every "
                                           "element's box, hashed; viewport: its screenshot, hashed)."]),
        "",
        "## Bytes the server sent ON that no OFF load asked for",
        "",
        "Per ON load: each path's answers beyond the most any OFF load of the page got (a prefetch nobody claimed, "
        "or one the fidelity rule refused and the browser fetched again), body bytes as served (gzip where served "
        "so), against the page's body bytes (OFF median).",
        "",
        *[f"- {w}" for w in wastes],
        "",
        f"Per-load lines: `{log_name}`.",
    ]
    report.write(name, "real-pages: documentation pages from Debian packages, site on vs off", lines)
