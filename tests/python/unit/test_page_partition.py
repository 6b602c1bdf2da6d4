"""A cross-site frame's requests (Page.frame_site) keep their state apart from the page's: the browser keys its
HTTP cache by the top-level site and the frame's site, so the helper's cache, origin records and connections are
partitioned by both, and nothing of such a frame is learned or flown as the page's."""

from __future__ import annotations

from lanefetch.bridge.host import _to_page
from lanefetch.engine.fetcher import Page
from lanefetch.prefetch.learned import may_learn
from lanefetch.prefetch.load_log import load_key

TOP = "https://shop.example"


def test_partition_is_the_top_level_site_or_both_sites_never_equal_to_a_page_s_own() -> None:
    assert Page(top_site=TOP).partition == TOP
    framed = Page(top_site=TOP, frame_site="https://video.example")
    assert framed.partition not in (TOP, "https://video.example")
    # a frame of the top-level site inside a cross-site one is keyed apart from the page's own requests too
    assert Page(top_site=TOP, frame_site=TOP).partition != TOP
    assert Page(top_site=TOP, frame_site="https://a.example").partition != Page(
        top_site=TOP, frame_site="https://b.example").partition


def test_nothing_of_a_cross_site_frame_is_learned_as_the_page_s() -> None:
    page = Page(top_site=TOP, url=f"{TOP}/")
    assert may_learn(page) and load_key(page) is not None
    framed = Page(top_site=TOP, url=f"{TOP}/", frame_site="https://video.example")
    assert not may_learn(framed) and load_key(framed) is None


def test_a_firefox_container_s_pages_are_a_partition_of_their_own_and_teach_nothing() -> None:
    """Firefox keeps a container's cookies and connections apart from every other's: the helper's connections and
    origin records for its pages too (a server would otherwise see two identities' requests on one connection),
    and nothing is learned from them to be flown in another container's pages (nor the default's in its)."""
    work = Page(top_site=TOP, url=f"{TOP}/", cookie_store="firefox-container-2")
    assert work.partition not in (TOP, Page(top_site=TOP, cookie_store="firefox-container-3").partition)
    assert Page(top_site=TOP, frame_site="https://video.example", cookie_store="firefox-container-2").partition not in (
        work.partition, Page(top_site=TOP, frame_site="https://video.example").partition)
    assert not may_learn(work) and load_key(work) is None


def test_the_host_reads_a_page_s_cookie_store() -> None:
    page = _to_page({"address_space": "public", "top_site": TOP, "cookie_store": "firefox-container-2"})
    assert page.cookie_store == "firefox-container-2"
    assert _to_page({"address_space": "public", "top_site": TOP}).cookie_store == ""
