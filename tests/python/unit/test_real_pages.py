"""The pure parts of the real-pages benchmark: what a page's document and stylesheets name and in which wave
(page_deps), the physical limit T_min (page_limit), and the report's facts, cells and verdicts
(real_pages_report). Small fixtures written here: no Debian documentation package needed."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from bench import page_deps, page_limit, png
from bench import real_pages_report as rr
from hypothesis import given
from hypothesis import strategies as st

DOC = """<!doctype html><html><head>
<link rel="stylesheet" href="../_static/default.css" />
<link rel="stylesheet" href="https://fonts.example/x.css">
<link rel="next" href="tutorial08.html">
<link rel="shortcut icon" href="/favicon.png">
<script src="../_static/doctools.js"></script>
<script>var notFetched = "x.js";</script>
<style>body { background: url('../_static/bg.png') }</style>
</head><body>
<img src="../_images/a.png" alt=""><img src="data:image/png;base64,AAAA" alt="">
<img srcset="../_images/b.png 1x, ../_images/b@2x.png 2x" alt="">
<a href="other.html">not a resource</a>
<div style="background-image: url(&quot;../_static/div.gif&quot;)"></div>
</body></html>"""

FILES = {
    "/intro/page.html": DOC,
    "/_static/default.css": '@import "reset.css";\n/* url(commented.png) */\n.note { background: url(note.png) }',
    "/_static/reset.css": "@font-face { font-family: F; src: url('fonts/f.woff2') format('woff2'); }",
}


def test_html_names_stylesheets_scripts_images_icons_and_inline_urls_not_links_or_inline_scripts() -> None:
    refs, base = page_deps.html_references(DOC)
    assert base is None
    assert refs == ["../_static/default.css", "https://fonts.example/x.css", "/favicon.png", "../_static/doctools.js",
                    "../_static/bg.png", "../_images/a.png", "data:image/png;base64,AAAA", "../_images/b.png",
                    "../_static/div.gif"]


def test_css_names_imports_and_urls_outside_comments() -> None:
    assert page_deps.css_references(FILES["/_static/default.css"]) == ["reset.css", "note.png"]
    assert page_deps.css_references("@import url(a.css); x { src: url( \"b c.woff\" ) }") == ["a.css", "b c.woff"]


@pytest.mark.parametrize(("base", "ref", "want"), [
    ("/a/b/page.html", "../c.css", "/a/c.css"),
    ("/a/page.html", "/x/y.png?v=1#f", "/x/y.png"),
    ("/a/page.html", "img%20one.png", "/a/img one.png"),
    ("/a/page.html", "data:image/png;base64,AA", None),
    ("/a/page.html", "https://elsewhere.example/x.js", None),
    ("/a/page.html", "//elsewhere.example/x.js", None),
    ("/a/page.html", "#top", None),
    ("/a/page.html", "/other/", "/other/"),
    ("/a/page.html", "  ", None),
])
def test_resolve_keeps_only_this_servers_paths(base: str, ref: str, want: str | None) -> None:
    assert page_deps.resolve(base, ref) == want


def test_graph_and_waves_follow_document_then_stylesheet_chains() -> None:
    graph = page_deps.dependency_graph("/intro/page.html", FILES.get)
    waves = page_deps.waves(graph, "/intro/page.html")
    assert waves == {
        "/intro/page.html": 1,
        "/_static/default.css": 2, "/favicon.png": 2, "/_static/doctools.js": 2, "/_static/bg.png": 2,
        "/_images/a.png": 2, "/_images/b.png": 2, "/_static/div.gif": 2,
        "/_static/reset.css": 3, "/_static/note.png": 3,
        "/_static/fonts/f.woff2": 4,
    }


def test_a_resource_named_twice_takes_its_earliest_wave_and_cycles_end() -> None:
    graph = {"/p.html": ["/a.css", "/f.woff"], "/a.css": ["/b.css", "/f.woff"], "/b.css": ["/a.css"]}
    assert page_deps.waves(graph, "/p.html") == {"/p.html": 1, "/a.css": 2, "/f.woff": 2, "/b.css": 3}


def test_base_href_moves_the_documents_references() -> None:
    files = {"/d/p.html": '<base href="/other/"><img src="x.png">'}
    assert page_deps.waves(page_deps.dependency_graph("/d/p.html", files.get), "/d/p.html") == \
        {"/d/p.html": 1, "/other/x.png": 2}


def test_what_a_script_fetched_comes_one_wave_after_the_deepest_script() -> None:
    static = {"/p.html": 1, "/a.js": 2, "/c.css": 2, "/f.woff2": 3}
    got = page_deps.waves_of_requests(static, ["/p.html", "/a.js", "/c.css", "/f.woff2", "/search-index.js"])
    assert got["/search-index.js"] == 3 and got["/f.woff2"] == 3
    assert page_deps.waves_of_requests({"/p.html": 1}, ["/p.html", "/favicon.ico"])["/favicon.ico"] == 2


CHAIN = page_deps.dependency_graph("/intro/page.html", FILES.get)
RTT = 0.6


def _browser_alone(paths: list[str]) -> dict[str, tuple[float, float]]:
    """Each path asked a round trip after the body naming it ended (its answer takes 0.1 s at the server)."""
    waves = page_deps.waves_of_requests(page_deps.waves(CHAIN, "/intro/page.html"), paths)
    return {p: (waves[p] * (RTT + 0.1), waves[p] * (RTT + 0.1) + 0.1) for p in paths}


def test_the_browser_alone_spends_a_wave_per_body_that_names_the_next() -> None:
    paths = ["/intro/page.html", "/_static/default.css", "/_images/a.png", "/_static/reset.css",
             "/_static/fonts/f.woff2"]
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", _browser_alone(paths), RTT) == 4
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", _browser_alone(paths[:3]), RTT) == 2


def test_a_flight_asked_with_the_document_spends_one_wave_and_a_pipelined_child_none() -> None:
    # Every path asked 10 ms after the document: known before any body came (a prefetch).
    flight = {p: (0.01 if p != "/intro/page.html" else 0.0, 0.4) for p in
              ["/intro/page.html", "/_static/default.css", "/_static/reset.css", "/_static/fonts/f.woff2"]}
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", flight, RTT) == 1
    # The font asked right when its stylesheet's answer ended (pipelined behind it): no round trip of its own;
    # the stylesheet found in the document's answer: one.
    times = {"/intro/page.html": (0.0, 0.1), "/_static/default.css": (0.8, 0.9), "/_static/reset.css": (1.7, 1.8),
             "/_static/fonts/f.woff2": (1.8, 1.9)}
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", times, RTT) == 3


def test_a_child_asked_before_its_parent_came_does_not_take_that_parents_chain() -> None:
    # reset.css prefetched with the document: default.css (found in the document) did not gate it, so neither it
    # nor the font it names (asked once its own answer was in) sits on default.css's chain.
    times = {"/intro/page.html": (0.0, 0.1), "/_static/default.css": (0.8, 0.9), "/_static/reset.css": (0.05, 0.2),
             "/_static/fonts/f.woff2": (0.55, 0.6)}
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", times, RTT) == 2


def test_what_a_script_fetched_waits_on_a_script_and_an_orphan_on_the_document() -> None:
    times = {"/intro/page.html": (0.0, 0.1), "/_static/doctools.js": (0.8, 0.9), "/search-index.js": (1.6, 1.7),
             "/_static/note.png": (0.2, 0.3)}  # its stylesheet never asked: hangs from the document, asked early
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", times, RTT) == 3
    assert page_deps.critical_waves(CHAIN, "/intro/page.html", {"/_images/a.png": (0.0, 1.0)}, RTT) == 0


@given(st.lists(st.sampled_from(sorted(page_deps.waves(CHAIN, "/intro/page.html"))), min_size=1, unique=True),
       st.lists(st.tuples(st.floats(0, 10), st.floats(0, 3)), min_size=12, max_size=12))
def test_critical_waves_never_exceed_the_loads_depth_and_the_document_counts_one(
        paths: list[str], spans: list[tuple[float, float]]) -> None:
    requested = ["/intro/page.html", *(p for p in paths if p != "/intro/page.html")]
    times = {p: (start, start + length) for p, (start, length) in zip(requested, spans, strict=False)}
    depth = max(page_deps.waves_of_requests(page_deps.waves(CHAIN, "/intro/page.html"), requested).values())
    got = page_deps.critical_waves(CHAIN, "/intro/page.html", times, RTT)
    assert 1 <= got <= depth


@pytest.mark.parametrize(("depth", "rtt", "size", "kbit", "hs", "want"), [
    (1, 0.6, 0, 10_000, 1, 1.2),  # a bare document: handshake + its round trip
    (4, 0.6, 1_250_000, 10_000, 1, 5 * 0.6 + 1.0),  # sat: 4 waves, 1.25 MB at 10 Mbit/s = 1 s
    (3, 0.4, 48_000, 384, 1, 4 * 0.4 + 1.0),  # wcdma: 48 kB at 384 kbit/s = 1 s
    (3, 0.06, 0, 20_000, 2, 5 * 0.06),  # TCP + TLS: two round trips before the first request
])
def test_t_min_counts_handshakes_waves_and_bytes(depth: int, rtt: float, size: int, kbit: float, hs: int,
                                                 want: float) -> None:
    assert page_limit.t_min(depth, rtt, size, kbit, handshakes=hs) == pytest.approx(want)


def test_t_min_has_no_limit_on_an_unlimited_link_and_refuses_nonsense() -> None:
    assert page_limit.t_min(3, 0.0, 10_000, None) is None
    with pytest.raises(ValueError):
        page_limit.t_min(0, 0.1, 1, 1000)


@given(st.integers(1, 10), st.floats(0, 1), st.integers(0, 10**7), st.floats(1, 10**6), st.integers(1, 9),
       st.integers(1, 10**6))
def test_t_min_grows_with_each_of_its_terms(depth: int, rtt: float, size: int, kbit: float, more: int,
                                            more_bytes: int) -> None:
    base = page_limit.t_min(depth, rtt, size, kbit)
    assert base is not None and base >= size * 8 / (kbit * 1000)
    deeper = page_limit.t_min(depth + more, rtt, size, kbit)
    bigger = page_limit.t_min(depth, rtt, size + more_bytes, kbit)
    assert deeper is not None and bigger is not None and deeper >= base and bigger > base


def test_page_facts_from_one_load_strip_the_docroot_folder_and_count_4xx() -> None:
    static = {"/intro/page.html": 1, "/_static/default.css": 2, "/_static/reset.css": 3, "/_static/doctools.js": 2}
    reqs = [rr.Request("/dj/intro/page.html", 200, 9000), rr.Request("/dj/_static/default.css", 200, 300),
            rr.Request("/dj/_static/reset.css?v=2", 200, 700), rr.Request("/dj/_static/doctools.js", 200, 4000),
            rr.Request("/dj/_static/search.js", 200, 1000), rr.Request("/favicon.ico", 404, 196)]
    f = rr.page_facts(reqs, "/dj", static)
    assert f == rr.PageFacts(subresources=5, body_bytes=15196, depth=3, not_found=1)


def test_typical_facts_are_medians() -> None:
    fs = [rr.PageFacts(20, 1000, 3, 0), rr.PageFacts(21, 1100, 4, 1), rr.PageFacts(20, 1050, 3, 0)]
    assert rr.typical_facts(fs) == rr.PageFacts(20, 1050, 3, 0)
    with pytest.raises(ValueError):
        rr.typical_facts([])


def _loads(walls: list[float], down: int, conns: int = 6) -> list[rr.Load]:
    return [rr.Load(wall_s=w, nav_s=w - 0.1, down_bytes=down + k, up_bytes=1000, connections=conns, requests=21)
            for k, w in enumerate(walls)]


FACTS_BIG = rr.PageFacts(subresources=24, body_bytes=250_000, depth=4, not_found=0)


def test_cell_medians_speedups_bytes_and_t_min() -> None:
    off = _loads([6.0, 6.2, 5.8, 6.1, 5.9], 300_000)
    on = _loads([3.0, 3.1, 2.9, 3.2, 2.8], 300_000, conns=2)
    c = rr.cell(off, on, FACTS_BIG, rtt_ms=600, down_kbit=10_000)
    assert (c.off_wall, c.on_wall, c.wall_speedup) == (6.0, 3.0, 2.0)
    assert c.nav_speedup == pytest.approx(5.9 / 2.9)
    assert c.wall_interval[0] <= 2.0 <= c.wall_interval[1]
    assert c.bytes_ratio == pytest.approx(300_002 / 300_002) and c.worst_bytes_ratio == pytest.approx(300_004 / 300_002)
    assert (c.off_conns, c.on_conns) == (6, 2) and c.up_ratio == 1.0
    assert c.t_min == pytest.approx(5 * 0.6 + 0.2) and c.on_over_t_min == pytest.approx(3.0 / 3.2)
    assert rr.verdicts(c, "sat", FACTS_BIG) == rr.Verdicts("met", "met", "met", "met")
    assert rr.verdicts(c, "sat", FACTS_BIG).all_met()


def test_verdicts_say_not_met_and_apply_only_where_issue_17_asks() -> None:
    off = _loads([1.0, 1.0, 1.0, 1.0, 1.0], 100_000)
    slower = _loads([1.3, 1.3, 1.3, 1.3, 1.3], 110_000)
    c = rr.cell(off, slower, FACTS_BIG, rtt_ms=600, down_kbit=10_000)
    v = rr.verdicts(c, "sat", FACTS_BIG)
    assert v == rr.Verdicts(never_slower="not met", gain="not met", near_limit="met", bytes="not met")
    assert not v.all_met()
    small = rr.PageFacts(subresources=12, body_bytes=50_000, depth=3, not_found=0)
    assert rr.verdicts(c, "wcdma", small).gain == "n/a"  # fewer than 20 subresources
    assert rr.verdicts(c, "lte", FACTS_BIG).gain == "n/a" and rr.verdicts(c, "lte", FACTS_BIG).near_limit == "n/a"
    tls = rr.cell(off, slower, FACTS_BIG, rtt_ms=600, down_kbit=10_000, handshakes=2)
    assert tls.t_min is not None and c.t_min is not None and tls.t_min == pytest.approx(c.t_min + 0.6)
    lan = rr.cell(off, slower, FACTS_BIG, rtt_ms=0, down_kbit=None)
    assert lan.t_min is None and rr.verdicts(lan, "lan", FACTS_BIG).near_limit == "n/a"


def test_never_slower_is_met_while_the_interval_reaches_097() -> None:
    off = _loads([1.0, 1.1, 0.9, 1.0, 1.05], 100_000)
    on = _loads([1.02, 1.12, 0.92, 1.01, 1.0], 100_000)
    c = rr.cell(off, on, FACTS_BIG, rtt_ms=60, down_kbit=20_000)
    assert c.wall_interval[0] < 0.97 <= c.wall_interval[1]
    assert rr.verdicts(c, "lte", FACTS_BIG).never_slower == "met"


def test_row_has_one_cell_per_header_column() -> None:
    c = rr.cell(_loads([2.0] * 3, 1000), _loads([1.0] * 3, 1000), FACTS_BIG, rtt_ms=400, down_kbit=384)
    r = rr.row("p", "wcdma", "Chromium", "apache", c, rr.verdicts(c, "wcdma", FACTS_BIG))
    assert len(r) == len(rr.HEADER) and r[6].startswith("**2.00×**")
    assert len(rr.facts_row("p", "pkg", "/p/x.html", FACTS_BIG)) == len(rr.FACTS_HEADER)


def test_best_possible_is_off_over_t_min_and_cpu_is_each_parts_median() -> None:
    """OFF ÷ T_min: the speed-up a client at the page's physical limit would have (on wcdma the bytes dominate it,
    so it says where 1.5× is beyond any client); the CPU column: OFF's browser, ON's browser, ON's helper."""
    def with_cpu(loads: list[rr.Load], browser: list[float], helper: list[float]) -> list[rr.Load]:
        return [dataclasses.replace(d, cpu_browser_s=b, cpu_helper_s=h) for d, b, h in zip(loads, browser, helper,
                                                                                               strict=True)]

    off = with_cpu(_loads([6.0, 6.2, 5.8], 300_000), [1.0, 1.4, 1.2], [0.0, 0.0, 0.0])
    on = with_cpu(_loads([5.0, 5.1, 4.9], 300_000), [0.9, 0.7, 0.8], [0.3, 0.5, 0.1])
    facts = rr.PageFacts(subresources=24, body_bytes=240_000, depth=3, not_found=0)
    c = rr.cell(off, on, facts, rtt_ms=400, down_kbit=384)
    assert c.t_min == pytest.approx(4 * 0.4 + 5.0) and c.best_speedup == pytest.approx(6.0 / 6.6)
    assert (c.off_cpu_browser, c.on_cpu_browser, c.on_cpu_helper) == (1.2, 0.8, 0.3)
    r = dict(zip(rr.HEADER, rr.row("p", "wcdma", "Chromium", "apache", c, rr.verdicts(c, "wcdma", facts)),
                 strict=True))
    assert r["best possible (OFF ÷ T_min)"] == "0.91×" and rr.verdicts(c, "wcdma", facts).gain == "not met"
    assert r["CPU s OFF browser / ON browser / ON helper"] == "1.20 / 0.80 / 0.30"
    # Loads of an older driver (no CPU) and a link with no rate (no T_min) say so.
    lan = rr.cell(_loads([1.0, 1.0], 1000), [*_loads([0.8], 1000), *on[:1]], facts, rtt_ms=0, down_kbit=None)
    r = dict(zip(rr.HEADER, rr.row("p", "lan", "Chromium", "apache", lan, rr.verdicts(lan, "lan", facts)),
                 strict=True))
    assert lan.best_speedup is None and r["best possible (OFF ÷ T_min)"] == "–"
    assert r["CPU s OFF browser / ON browser / ON helper"] == "– / – / –"


def test_a_subset_names_its_report_after_what_it_selected_in_any_order() -> None:
    from bench.scenario_real_pages import _ALL, report_name

    assert report_name(dict(_ALL)) == "real-pages"
    links = ["sat", "wcdma", "lte", "lan"]  # another order of all links: not a subset
    assert report_name({**_ALL, "LANEFETCH_BENCH_PROFILES": links}) == "real-pages"
    chosen = {**_ALL, "LANEFETCH_BENCH_BROWSERS": ["chromium"], "LANEFETCH_BENCH_SERVERS": ["apache"],
              "LANEFETCH_BENCH_PAGES": ["rust-std"]}
    assert report_name(chosen) == "real-pages-chromium-apache-rust-std"


def test_a_late_request_of_another_corpus_page_is_not_this_loads() -> None:
    from bench.real_pages import CORPUS
    from bench.scenario_real_pages import _drop_strays
    from bench.servers import AccessRecord

    def rec(path: str, conn: str) -> AccessRecord:
        return AccessRecord(conn, 1, None, "10.0.0.1", 1, 200, 10, 0.0, 0.0, f"GET {path} HTTP/1.1")

    page, other = CORPUS[0], CORPUS[1]
    d = {"records": [rec(f"/{page.name}/a.html", "c1"), rec("/favicon.ico", "c1"),
                     rec(f"/{other.name}/favicon.png", "c9")], "all_requests": 3, "conns": 2}
    _drop_strays(d, page)
    assert [r.path for r in d["records"]] == [f"/{page.name}/a.html", "/favicon.ico"]
    assert (d["strays"], d["all_requests"], d["conns"]) == (1, 2, 1)


def test_a_body_asked_in_pieces_is_one_answer_and_no_waste() -> None:
    from bench.scenario_real_pages import answers, waste
    from bench.servers import AccessRecord

    def rec(path: str, status: int, size: int) -> AccessRecord:
        return AccessRecord("c1", 1, None, "10.0.0.1", 1, status, size, 0.0, 0.0, f"GET {path} HTTP/1.1")

    off = {"records": [rec("/p/a.png", 200, 100), rec("/p/b.css", 200, 10)]}
    on = {"records": [rec("/p/a.png", 206, 50), rec("/p/a.png", 206, 50), rec("/p/b.css", 200, 10)]}
    assert sorted((r.path, r.status, r.body_bytes) for r in answers(on)) == [("/p/a.png", 200, 100),
                                                                             ("/p/b.css", 200, 10)]
    assert waste([off], on) == 0
    # a split that fell back: the pieces, then the whole body again for the browser's request
    fell_back = {"records": [*on["records"], rec("/p/a.png", 200, 100)]}
    assert waste([off], fell_back) == 100


def test_a_second_visit_run_says_so_in_its_name() -> None:
    from bench.scenario_real_pages import _ALL, report_name

    chosen = {**_ALL, "LANEFETCH_BENCH_BROWSERS": ["chromium"], "LANEFETCH_BENCH_SERVERS": ["apache"],
              "LANEFETCH_BENCH_PROFILES": ["sat"]}
    assert report_name(chosen, "second") == "real-pages-chromium-apache-sat-second-visit"
    assert report_name(chosen, "first") == "real-pages-chromium-apache-sat-first-visit"
    assert report_name(chosen, "sibling") == "real-pages-chromium-apache-sat-sibling-visit"
    assert report_name(chosen, "revisit") == "real-pages-chromium-apache-sat-revisit"
    assert report_name(chosen, "again") == "real-pages-chromium-apache-sat-again"


def test_every_corpus_page_has_two_siblings_of_its_path_shape() -> None:
    """A sibling visit's earlier loads teach the helper the page's shape (prefetch/learned.py's shape key): each
    sibling is another page of the package, served under the same folder, with the same path shape."""
    from bench.real_pages import CORPUS
    from lanefetch.prefetch.learned import page_keys

    for page in CORPUS:
        assert len(page.sibling_pages()) == 2
        keys = page_keys("http://h.example" + page.url_path)
        for sibling in page.sibling_pages():
            assert sibling.name == page.name and sibling.page != page.page and sibling.url_path != page.url_path
            other = page_keys("http://h.example" + sibling.url_path)
            assert keys is not None and other is not None and other.shape == keys.shape


def test_emptying_the_helpers_http_cache_keeps_its_learned_pages_and_origins(tmp_path: Path) -> None:
    """The second-visit bench's step: stored responses gone, learned pages and origins kept."""
    from bench.page_load import empty_http_cache
    from lanefetch.cache.entry import StoredHead
    from lanefetch.cache.sqlite_store import SqliteStore

    store = SqliteStore(tmp_path, 1 << 20)
    store.put("https://a.example", "GET", "https://a.example/x.png", "", StoredHead(200, "OK", "1.1", [], 1.0, 2.0),
              b"png")
    store.keep_pages("https://a.example", {"u:https://a.example/": "{}"}, 3.0)
    store.learn("https://a.example", {"https://a.example": "{}"})
    store.close()
    assert empty_http_cache(tmp_path) == 1
    store = SqliteStore(tmp_path, 1 << 20)
    try:
        assert store.lookup("https://a.example", "GET", "https://a.example/x.png") == []
        assert store.pages("https://a.example", ["u:https://a.example/"]) == {"u:https://a.example/": "{}"}
        assert store.learned("https://a.example", ["https://a.example"]) == {"https://a.example": "{}"}
    finally:
        store.close()


def test_a_page_is_copied_with_its_packages_modification_times(tmp_path: Path) -> None:
    from bench.real_pages import RealPage

    pkg = tmp_path / "pkg"
    (pkg / "intro").mkdir(parents=True)
    (pkg / "_static").mkdir()
    (pkg / "intro" / "page.html").write_text('<link rel="stylesheet" href="../_static/site.css"><p>x</p>')
    (pkg / "_static" / "site.css").write_text("p { color: red }")
    old = 1_607_634_677  # 2020-12-10, as Debian's python-django-doc ships console-tabs.css
    for f in (pkg / "intro" / "page.html", pkg / "_static" / "site.css"):
        os.utime(f, (old, old))
    docroot = tmp_path / "www"
    RealPage("p", "pkg", str(pkg), "/intro/page.html").write(docroot)
    copied = [docroot / "p" / "intro" / "page.html", docroot / "p" / "_static" / "site.css"]
    assert [int(f.stat().st_mtime) for f in copied] == [old, old], "Last-Modified years old, as on a real site"


def _reading(console: list[str] | None = None, fonts: list[str] | None = None,
             layout: str | None = "a1/900") -> dict[str, object]:
    d: dict[str, object] = {"console": console if console is not None else [],
                            "fonts": fonts if fonts is not None else ["Fira Sans 400 normal: loaded"]}
    if layout is not None:
        d["layout"] = layout
    return d


def test_an_on_load_that_behaved_as_an_off_load_says_nothing() -> None:
    off = [_reading(console=["warning: x (u)"]), _reading(console=["warning: x (u)"], layout="b2/900")]
    assert rr.behaved_otherwise(off, _reading(console=["warning: x (u)"], layout="b2/900")) == []
    assert rr.behaved_otherwise(off, _reading()) == []


def test_a_console_message_fonts_or_layout_no_off_load_had_are_each_named() -> None:
    off = [_reading(), _reading()]
    said = rr.behaved_otherwise(off, _reading(console=["error: Failed to load resource (http://h/x.css)"]))
    assert said == ["console: error: Failed to load resource (http://h/x.css)"]
    said = rr.behaved_otherwise(off, _reading(fonts=["Fira Sans 400 normal: error"]))
    assert said == ["fonts: Fira Sans 400 normal: error (OFF: Fira Sans 400 normal: loaded)"]
    said = rr.behaved_otherwise(off, _reading(layout="ff/900"))
    assert said == ["layout ff/900 (OFF: a1/900)"]
    said = rr.behaved_otherwise([_reading(), _reading(layout="b2/900")], _reading(layout="ff/900"))
    assert said == ["layout ff/900 (OFF: a1/900, b2/900) (the OFF loads' own layouts differ)"]
    drawn = [{**_reading(), "screen": "5ee"}, {**_reading(), "screen": "5ee"}]
    assert rr.behaved_otherwise(drawn, {**_reading(), "screen": "5ee"}) == []
    assert rr.behaved_otherwise(drawn, {**_reading(), "screen": "bad"}) == ["screen bad (OFF: 5ee)"]


def _screen(width: int, height: int, shade: int = 200, changed: dict[tuple[int, int], int] | None = None) -> bytes:
    """A PNG screenshot: a grey field of `shade`, with `changed` pixels ((x, y) → their grey)."""
    changed = changed or {}
    rows = [b"".join(bytes([changed.get((x, y), shade)] * 3) for x in range(width)) for y in range(height)]
    return png.encode(width, height, rows)


def test_screens_that_differ_only_by_anti_aliasing_are_the_same_screen() -> None:
    base = _screen(40, 20)
    corners = {(0, 0): 201, (39, 0): 199, (0, 19): 208, (39, 19): 192}  # a level or a few, as rust-std's box corners
    assert rr.screen_difference(base, base) == 0
    assert rr.screen_difference(base, _screen(40, 20, changed=corners)) == 0
    assert rr.screen_difference(base, _screen(40, 20, changed={(5, 5): 209, (6, 5): 191})) == 2  # 9 levels: beyond
    assert rr.screen_difference(base, _screen(40, 20, shade=60)) == 800  # another colour everywhere
    assert rr.screen_difference(base, _screen(20, 40)) is None  # no pixel compares


@given(st.lists(st.integers(0, 255), min_size=12, max_size=12), st.lists(st.integers(0, 255), min_size=12,
                                                                           max_size=12))
def test_a_screen_difference_is_symmetric_and_none_with_itself(a: list[int], b: list[int]) -> None:
    one = png.encode(4, 1, [bytes(a)])
    other = png.encode(4, 1, [bytes(b)])
    assert rr.screen_difference(one, one) == 0
    n = rr.screen_difference(one, other)
    assert n == rr.screen_difference(other, one)
    worst = [max(abs(a[3 * i + c] - b[3 * i + c]) for c in range(3)) for i in range(4)]
    assert n == sum(1 for w in worst if w > rr.SCREEN_TOLERANCE)


def test_a_screen_hashed_otherwise_is_compared_pixel_by_pixel_where_both_pngs_are_kept() -> None:
    kept = {"5ee": _screen(40, 20), "a11": _screen(40, 20, changed={(3, 3): 201}),
            "bad": _screen(40, 20, changed={(x, 2): 0 for x in range(4)})}
    drawn = [{**_reading(), "screen": "5ee"}, {**_reading(), "screen": "5ee"}]
    assert rr.behaved_otherwise(drawn, {**_reading(), "screen": "a11"}, kept.get) == []
    assert rr.behaved_otherwise(drawn, {**_reading(), "screen": "bad"}, kept.get) == [
        "screen bad (OFF: 5ee): 4 pixels differ by more than 8 levels"]
    # a PNG not kept: the hashes decide, as without screenshots
    assert rr.behaved_otherwise(drawn, {**_reading(), "screen": "0ff"}, kept.get) == ["screen 0ff (OFF: 5ee)"]


def test_a_kept_screenshot_is_read_by_its_digest_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANEFETCH_BENCH_SCREENSHOTS", str(tmp_path))
    (tmp_path / "5ee.png").write_bytes(b"png")
    (tmp_path / "x.png").write_bytes(b"not a digest's")
    assert rr.kept_screenshot("5ee") == b"png"
    assert rr.kept_screenshot("a11") is None
    assert rr.kept_screenshot("x") is None
    assert rr.kept_screenshot("../5ee") is None
    assert rr.kept_screenshot("") is None
    monkeypatch.delenv("LANEFETCH_BENCH_SCREENSHOTS")
    assert rr.kept_screenshot("5ee") is None


def test_a_reading_an_older_driver_did_not_take_is_not_compared() -> None:
    older = {"images": 3}
    assert rr.behaved_otherwise([older], _reading(console=["error: e (u)"], layout="ff/1")) == []
    assert rr.behaved_otherwise([_reading()], older) == []
    # one OFF load without the readings: nothing to compare against for sure
    assert rr.behaved_otherwise([_reading(), older], _reading(console=["error: e (u)"], fonts=["X 400 normal: error"],
                                                                 layout="ff/1")) == []


def test_on_is_compared_with_each_off_load_not_with_their_intersection() -> None:
    two_fonts = ["A 400 normal: loaded", "B 700 normal: loaded"]
    off = [_reading(console=["warning: only once (u)"], fonts=two_fonts), _reading(fonts=["A 400 normal: loaded"])]
    # like one of the OFF loads (fonts in another order, a message one OFF load had): nothing to say
    same = _reading(console=["warning: only once (u)"], fonts=list(reversed(two_fonts)))
    assert rr.behaved_otherwise(off, same) == []
    assert rr.behaved_otherwise(off, _reading(fonts=["A 400 normal: loaded"])) == []
    # like none of them
    said = rr.behaved_otherwise(off, _reading(fonts=["B 700 normal: loaded"]))
    assert said == ["fonts: B 700 normal: loaded (OFF: A 400 normal: loaded / A 400 normal: loaded, B 700 normal: "
                    "loaded)"]
