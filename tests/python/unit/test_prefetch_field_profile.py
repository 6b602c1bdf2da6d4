"""field_profile.py: a browser's fields learned from one page's loads reproduce, exactly, what that browser sends
for another page's subresources (the user's privacy signals DNT and Sec-GPC included); observations not made by
the page itself teach nothing; Sec-Fetch-Site by the Fetch standard; the record round-trips; plan.py uses the
profile only where learned fields are missing and never for a request that would carry the site's cookies."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.prefetch.field_profile import (
    TAUGHT_ACCEPT,
    FieldProfile,
    decode,
    encode,
    fields_for,
    learn,
    learn_navigation,
    mixed_content,
    relation,
    site_for,
    trustworthy,
    with_accept,
)
from lanefetch.prefetch.learned import History, observe
from lanefetch.prefetch.plan import plan
from lanefetch.prefetch.resource import Subresource

HOSTS = ["a.example", "www.a.example", "cdn.a.example", "b.test", "example.co.uk", "x.example.co.uk",
         "y.example.co.uk", "127.0.0.1", "localhost", "203.0.114.9"]
SCHEMES = ["http", "https"]
KINDS = [("style", "no-cors"), ("script", "no-cors"), ("script", "cors"), ("image", "no-cors"),
         ("font", "cors"), ("empty", "cors")]

urls = st.builds(lambda s, h, p: f"{s}://{h}/{p}", st.sampled_from(SCHEMES), st.sampled_from(HOSTS),
                 st.sampled_from(["a.css", "b/c.js", "i.png", "f.woff2"]))


class Browser:
    """A model browser: its constants, and the Fetch standard's rules for the rest (Origin on a cors request to
    another origin; Sec-Fetch-* only to potentially trustworthy URLs)."""

    def __init__(self, ua: str, language: str | None, accept: dict[tuple[str, str], str | None],
                 signals: tuple[tuple[str, str], ...] = ()) -> None:
        self.ua, self.language, self.accept, self.signals = ua, language, accept, signals

    def headers(self, url: str, destination: str, mode: str, page: str) -> list[tuple[str, str]]:
        out = [("User-Agent", self.ua)]
        if self.accept[(destination, mode)] is not None:
            out.append(("Accept", str(self.accept[(destination, mode)])))
        if self.language is not None:
            out.append(("Accept-Language", self.language))
        site = relation(url, page)
        assert site is not None
        if trustworthy(url):
            out += [("Sec-Fetch-Dest", destination), ("Sec-Fetch-Mode", mode), ("Sec-Fetch-Site", site)]
        if mode == "cors" and site != "same-origin":
            out.append(("Origin", page.split("/", 3)[0] + "//" + page.split("/", 3)[2]))
        return out + list(self.signals)  # the user's privacy signals, on every request

    def navigation(self, url: str) -> tuple[tuple[str, str], ...]:
        """The fields of the browser's request of a page (a typed navigation), lowercased as the helper keeps them."""
        out = [("User-Agent", self.ua), ("Accept", "text/html,*/*;q=0.8")]
        if self.language is not None:
            out.append(("Accept-Language", self.language))
        if trustworthy(url):
            out += [("Sec-Fetch-Dest", "document"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Site", "none")]
        return tuple(sorted((k.lower(), v) for k, v in [*out, *self.signals]))


browsers = st.builds(
    Browser, st.sampled_from(["UA/1", "Mozilla/5.0 (X11) Chrome/156"]), st.one_of(st.none(), st.just("en,fr;q=0.9")),
    st.fixed_dictionaries({k: st.one_of(st.none(), st.sampled_from(["*/*", "text/css,*/*;q=0.1", "image/avif,*/*"]))
                           for k in KINDS}),
    st.sampled_from([(), (("Sec-GPC", "1"),), (("DNT", "1"), ("Sec-GPC", "1"))]))
requests = st.lists(st.tuples(urls, st.sampled_from(KINDS)), min_size=1, max_size=12)


@given(browsers, urls, requests, urls, st.sampled_from(KINDS))
def test_what_one_page_taught_reproduces_the_browser_for_another(browser: Browser, page: str,
                                                                 seen: list[tuple[str, tuple[str, str]]],
                                                                 url: str, kind: tuple[str, str]) -> None:
    observed = [observe(u, d, m, 1, browser.headers(u, d, m, page)) for u, (d, m) in seen]
    profiles = learn({}, page, observed, 100.0)
    assert set(profiles) == {browser.ua}
    profile = profiles[browser.ua]
    other_page = url.rsplit("/", 1)[0] + "/other.html"  # another page, of whatever site
    destination, mode = kind
    got = fields_for(profile, Subresource(url, destination, mode, "include", other_page), other_page)
    kinds_seen = {k for _, k in seen}
    secure_seen = {trustworthy(u) for u, _ in seen}
    if kind in kinds_seen and trustworthy(url) in secure_seen:
        want = tuple(sorted((k.lower(), v) for k, v in browser.headers(url, destination, mode, other_page)))
        assert got == want
    else:
        assert got is None  # never seen that way: unknown, nothing planned


@given(browsers, urls, requests, urls, st.sampled_from(KINDS), st.booleans())
def test_the_accept_taught_ahead_answers_for_its_kinds_once_a_load_taught_the_rest(
        browser: Browser, page: str, seen: list[tuple[str, tuple[str, str]]], url: str, kind: tuple[str, str],
        before_load: bool) -> None:
    """browser_fields (the extension's probe) gives the browser's Accept for TAUGHT_ACCEPT's kinds, before or after
    a load: alone it plans nothing (the other fields are the page's to teach); with any load that taught the rest,
    a kind the probe gave is answered exactly as the browser sends it, never seen on the page; and a kind it did
    not give is as if there were no probe."""
    taught = {k: browser.accept[k] for k in KINDS}  # the probe's message may name any kind: only its own count
    alone = with_accept(None, browser.ua, taught, 5.0)
    assert alone is not None
    assert all(fields_for(alone, Subresource(u, d, m, "include", page), page) is None for u, (d, m) in seen)
    observed = [observe(u, d, m, 1, browser.headers(u, d, m, page)) for u, (d, m) in seen]
    if before_load:
        profile = learn({browser.ua: alone}, page, observed, 10.0)[browser.ua]
    else:
        after = with_accept(learn({}, page, observed, 10.0)[browser.ua], browser.ua, taught, 20.0)
        assert after is not None
        profile = after
    assert set(profile.accept) == {k for _, k in seen} | set(TAUGHT_ACCEPT)
    other_page = url.rsplit("/", 1)[0] + "/other.html"
    destination, mode = kind
    got = fields_for(profile, Subresource(url, destination, mode, "include", other_page), other_page)
    known = kind in TAUGHT_ACCEPT or kind in {k for _, k in seen}
    if known and trustworthy(url) in {trustworthy(u) for u, _ in seen}:
        assert got == tuple(sorted((k.lower(), v) for k, v in browser.headers(url, destination, mode, other_page)))
    else:
        assert got is None


@given(browsers, urls, urls, st.sampled_from(KINDS), st.booleans(), requests)
def test_the_document_s_own_request_and_the_accept_taught_ahead_answer_for_a_first_page(
        browser: Browser, page: str, url: str, kind: tuple[str, str], probed: bool,
        seen: list[tuple[str, tuple[str, str]]]) -> None:
    """Chromium's first page: the probe's Accept (with_accept) and the request of the page's own document
    (learn_navigation) give exactly what the browser sends for a subresource of a kind the probe asked, to a URL as
    trustworthy as the page's; nothing for any other kind or trustworthiness. A navigation teaches no Accept, and
    never changes what a subresource request taught (that is newer knowledge of the same fields)."""
    taught = {k: browser.accept[k] for k in TAUGHT_ACCEPT} if probed else {}
    ahead = with_accept(None, browser.ua, taught, 5.0)
    profiles = {browser.ua: ahead} if ahead is not None else {}
    profile = learn_navigation(profiles, page, browser.navigation(page), 6.0)[browser.ua]
    assert profile.accept == taught and profile.updated_at == 6.0
    destination, mode = kind
    got = fields_for(profile, Subresource(url, destination, mode, "include", page), page)
    if kind in taught and trustworthy(url) == trustworthy(page):
        assert got == tuple(sorted((k.lower(), v) for k, v in browser.headers(url, destination, mode, page)))
    else:
        assert got is None
    assert learn_navigation({browser.ua: profile}, page, browser.navigation(page), 7.0) == {}  # nothing new
    observed = [observe(u, d, m, 1, browser.headers(u, d, m, page)) for u, (d, m) in seen]
    learned = learn({}, page, observed, 8.0)[browser.ua]
    # A navigation that contradicts every field the requests taught (its language, its signals, and Sec-Fetch-*
    # sent exactly where the browser does not send them) changes none of them: it only fills what is unknown.
    other = Browser(browser.ua, "xx", browser.accept, (("DNT", "1"),))
    contrary = tuple(sorted(
        [(k, v) for k, v in other.navigation(url) if not k.startswith("sec-fetch-")]
        + ([] if trustworthy(url) else [("sec-fetch-dest", "document"), ("sec-fetch-mode", "navigate"),
                                         ("sec-fetch-site", "none")])))
    after = learn_navigation({browser.ua: learned}, url, contrary, 9.0).get(browser.ua, learned)
    assert (after.accept_language, after.signals, after.accept) == (learned.accept_language, learned.signals,
                                                                   learned.accept)
    assert after.sec_fetch[trustworthy(url)] == learned.sec_fetch.get(trustworthy(url), not trustworthy(url))
    assert all(after.sec_fetch[k] == v for k, v in learned.sec_fetch.items())


def test_the_accept_taught_ahead_changes_nothing_it_knew_and_belongs_to_one_user_agent() -> None:
    known = with_accept(PROFILE, "UA/1", {("image", "no-cors"): "*/*"}, 99.0)
    assert known is PROFILE  # nothing new: not even its time
    changed = with_accept(PROFILE, "UA/1", {("image", "no-cors"): "image/avif,*/*", ("font", "cors"): None}, 99.0)
    assert changed is not None
    assert changed.accept == {**PROFILE.accept, ("image", "no-cors"): "image/avif,*/*", ("font", "cors"): None}
    assert changed.updated_at == 99.0 and changed.sec_fetch == PROFILE.sec_fetch and changed.origin == PROFILE.origin
    other = with_accept(PROFILE, "UA/9", {("image", "no-cors"): "*/*"}, 99.0)
    assert other is not None
    assert other.user_agent == "UA/9" and other.accept == {("image", "no-cors"): "*/*"} and not other.language_known
    # only the probe's kinds: nothing else taught, nothing changed (a new browser gets no empty profile either)
    assert with_accept(PROFILE, "UA/1", {("empty", "cors"): "*/*", ("image", "cors"): "x"}, 99.0) is PROFILE
    assert with_accept(None, "UA/9", {("empty", "cors"): "*/*"}, 99.0) is None
    # an empty Accept is a value like another (known only once taught)
    assert with_accept(PROFILE, "UA/1", {("font", "cors"): ""}, 99.0) is not PROFILE


@given(browsers, urls, urls, st.sampled_from(KINDS))
def test_an_observation_not_made_by_the_page_teaches_nothing(browser: Browser, page: str, url: str,
                                                             kind: tuple[str, str]) -> None:
    destination, mode = kind
    headers = browser.headers(url, destination, mode, page)
    framed = [(k, "cross-site" if k == "Sec-Fetch-Site" and v != "cross-site" else "same-origin")
              if k == "Sec-Fetch-Site" else (k, v) for k, v in headers]
    foreign = [*[(k, v) for k, v in headers if k != "Origin"], ("Origin", "https://elsewhere.example")]
    for fields in (framed, foreign):
        if fields == headers:
            continue
        assert learn({}, page, [observe(url, destination, mode, 1, fields)], 1.0) == {}


@given(st.sampled_from(SCHEMES), st.sampled_from(HOSTS), st.sampled_from(SCHEMES), st.sampled_from(HOSTS))
def test_sec_fetch_site_is_symmetric_and_same_origin_only_for_one_origin(s1: str, h1: str, s2: str, h2: str) -> None:
    a, b = f"{s1}://{h1}/x", f"{s2}://{h2}/y"
    assert relation(a, b) == relation(b, a)
    assert (relation(a, b) == "same-origin") == ((s1, h1) == (s2, h2))


def test_sec_fetch_site_examples() -> None:
    assert relation("https://cdn.a.example/x.css", "https://www.a.example/") == "same-site"
    assert relation("https://x.example.co.uk/", "https://y.example.co.uk/") == "same-site"
    assert relation("https://one.co.uk/", "https://two.co.uk/") == "cross-site"  # co.uk is a public suffix
    assert relation("https://a.github.io/", "https://b.github.io/") == "cross-site"  # so is github.io
    assert relation("http://www.a.example/", "https://www.a.example/") == "cross-site"  # schemeful
    assert relation("https://127.0.0.1:8443/", "https://127.0.0.1/") == "same-site"
    assert trustworthy("http://127.0.0.1/") and trustworthy("http://app.localhost/") and not trustworthy("http://a.b/")


@given(browsers, urls, requests)
def test_the_record_round_trips_and_expires(browser: Browser, page: str,
                                            seen: list[tuple[str, tuple[str, str]]]) -> None:
    observed = [observe(u, d, m, 1, browser.headers(u, d, m, page)) for u, (d, m) in seen]
    profile = learn({}, page, observed, 1000.0)[browser.ua]
    assert decode(encode(profile), 1000.0 + 60) == profile
    assert decode(encode(profile), 1000.0 + 31 * 24 * 3600) is None
    assert decode(encode(profile), 999.0) is None
    assert decode("{}", 1000.0) is None and decode("not json", 1000.0) is None


PAGE = "http://www.a.example/doc.html"
UA = [("user-agent", "UA/1"), ("accept-language", "en")]
PROFILE = FieldProfile("UA/1", "en", True, {("style", "no-cors"): "text/css,*/*;q=0.1",
                                            ("image", "no-cors"): "*/*"}, {False: False}, {})


def test_plan_gives_discovered_requests_the_profile_s_fields_and_no_cookie_bearing_one_on_a_cookie_site() -> None:
    same = Subresource("http://www.a.example/s.css", "style", "no-cors", "include", PAGE)
    sibling = Subresource("http://img.a.example/i.png", "image", "no-cors", "include", PAGE)
    other = Subresource("http://cdn.b.test/i.png", "image", "no-cors", "include", PAGE)
    found = [(same, 1), (sibling, 1), (other, 1)]
    assert plan(None, None, found).items == []  # no learned fields, no profile: nothing
    items = plan(None, None, found, profile=PROFILE, page_url=PAGE).items
    assert [(i.url, dict(i.headers)["accept"]) for i in items] == [
        (same.url, "text/css,*/*;q=0.1"), (sibling.url, "*/*"), (other.url, "*/*")]
    assert all(dict(i.headers)["user-agent"] == "UA/1" and "origin" not in dict(i.headers) for i in items)
    # the browser holds cookies for the page's site: its own requests would carry them, a prefetch without them
    # would be refused; the other site's requests are still planned
    assert [i.url for i in plan(None, None, found, profile=PROFILE, page_url=PAGE, cookies_on_site=True).items] == [
        other.url]
    # a learned credentialed request of another origin: that origin's cookie-bearing requests are not planned
    learned = History([[observe("http://cdn.b.test/x.png", "image", "no-cors", 1, [*UA, ("cookie", "c=1")])]])
    assert [i.url for i in plan(learned, None, found, profile=PROFILE, page_url=PAGE).items] == [same.url, sibling.url]


def test_a_profile_kept_before_it_knew_the_privacy_signals_plans_nothing_until_a_load_teaches_them() -> None:
    kept = json.loads(encode(PROFILE))
    del kept["ps"]  # as a record written before the signals were learned
    old = decode(json.dumps(kept), PROFILE.updated_at)
    assert old is not None and old.signals is None
    assert fields_for(old, Subresource("http://www.a.example/a.css", "style", "no-cors", "include", PAGE), PAGE) is None
    taught = learn({old.user_agent: old}, PAGE, [observe("http://www.a.example/b.css", "style", "no-cors", 1,
                                                          [("User-Agent", "UA/1"), ("Accept-Language", "en"),
                                                           ("Accept", "text/css,*/*;q=0.1"), ("Sec-GPC", "1")])], 5.0)
    sub = Subresource("http://www.a.example/a.css", "style", "no-cors", "include", PAGE)
    assert ("sec-gpc", "1") in (fields_for(taught["UA/1"], sub, PAGE) or ())


def test_what_a_cross_origin_stylesheet_asks_carries_the_site_its_browser_computes() -> None:
    # Chromium computes the Sec-Fetch-Site of a stylesheet's @import and background image against the page, Firefox
    # against the stylesheet (no-cors only: a font, cors, is the page's in both): field_profile.site_for, checked in
    # the real browsers by test_prefetch_browsers.py.
    secure = "https://www.a.example/doc.html"
    sheet = "https://cdn.b.test/site.css"
    imported = Subresource("https://cdn.b.test/more.css", "style", "no-cors", "include", sheet)
    font = Subresource("https://cdn.b.test/f.woff2", "font", "cors", "same-origin", sheet)
    own = Subresource("https://cdn.b.test/own.css", "style", "no-cors", "include", secure)
    assert [site_for(s, secure) for s in (imported, font, own)] == ["cross-site"] * 3
    assert [site_for(s, secure, sheet_sets_site=True) for s in (imported, font, own)] == [
        "same-origin", "cross-site", "cross-site"]
    profile = FieldProfile("UA/1", "en", True, {("style", "no-cors"): "text/css,*/*;q=0.1"}, {True: True}, {})
    sent = {sets: dict(plan(None, None, [(imported, 2)], profile=profile, page_url=secure,
                            sheet_sets_site=sets).items[0].headers) for sets in (False, True)}
    assert sent[False]["sec-fetch-site"] == "cross-site" and sent[True]["sec-fetch-site"] == "same-origin"


def test_an_https_page_s_plain_http_subresources_are_never_planned() -> None:
    # Mixed content: the browser blocks an https page's http:// script and stylesheet and asks an image's https URL
    # instead, so a prefetch of the http:// URL would cross the link in plaintext and never be asked for
    secure = "https://www.a.example/doc.html"
    profile = FieldProfile("UA/1", "en", True, {("style", "no-cors"): "text/css,*/*;q=0.1",
                                                ("image", "no-cors"): "*/*"}, {True: True, False: False}, {})
    plain = Subresource("http://www.a.example/s.css", "style", "no-cors", "include", secure)
    image = Subresource("http://cdn.b.test/i.png", "image", "no-cors", "include", secure)
    local = Subresource("http://127.0.0.1:8080/i.png", "image", "no-cors", "include", secure)  # trustworthy
    safe = Subresource("https://cdn.b.test/s.css", "style", "no-cors", "include", secure)
    items = plan(None, None, [(plain, 1), (image, 1), (local, 1), (safe, 1)], profile=profile, page_url=secure).items
    assert [i.url for i in items] == [safe.url, local.url]
    assert [mixed_content(s.url, secure) for s in (plain, image, local, safe)] == [True, True, False, False]
    assert not mixed_content(plain.url, PAGE)  # an http page's http requests are its own
    # a stylesheet's requests are the document's: an https sheet on an http page may name http:// ones
    assert not mixed_content("http://cdn.b.test/f.woff2", PAGE)


def test_a_learned_request_of_the_origin_lends_its_fields_but_not_its_site_where_the_sheet_sets_it() -> None:
    # The page's history has the CDN's stylesheet, linked by the page (cross-site); on this load that sheet names an
    # @import: Firefox asks it same-origin (the sheet's), Chromium cross-site (the page's), whatever the template says
    secure = "https://www.a.example/doc.html"
    sheet = "https://cdn.b.test/site.css"
    learned = History([[observe(sheet, "style", "no-cors", 1, [
        ("user-agent", "UA/1"), ("accept", "text/css,*/*;q=0.1"), ("sec-fetch-dest", "style"),
        ("sec-fetch-mode", "no-cors"), ("sec-fetch-site", "cross-site")])]])
    imported = Subresource("https://cdn.b.test/more.css", "style", "no-cors", "include", sheet)
    sites = {sets: dict(plan(learned, None, [(imported, 2)], page_url=secure, sheet_sets_site=sets).items[-1].headers)
             for sets in (False, True)}
    assert sites[False]["sec-fetch-site"] == "cross-site" and sites[True]["sec-fetch-site"] == "same-origin"
    assert sites[True]["accept"] == "text/css,*/*;q=0.1"  # the rest of the learned fields as they were
