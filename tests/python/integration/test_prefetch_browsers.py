"""Discovery against the real browsers: real Chromium and Firefox ESR (headless) load a page from 127.0.0.1 and the
server records every request they make with its Sec-Fetch-Dest and Sec-Fetch-Mode. Each request discovery predicts
for the document and its stylesheet must be one the browser really made, with the same URL byte for byte (a space and a
non-ASCII name in a reference included), the same destination and the same mode; what discovery leaves out on
purpose (noscript, template, nomodule, an unused @font-face) the browser does not request either; a used font is
requested as discovery said (cors), and only then; the background images discover_backgrounds.py expects (a rule
whose selector matches a shown element and wins its cascade) are requested as images, those it leaves out (a
hidden element, one a `display: none` rule hides, a rule that loses, to specificity or to `!important`, one that
matches nothing, a :hover, a :not() with a list) are not. A stylesheet on another origin (localhost): its
@import, font and background image are requested with the Sec-Fetch-Site field_profile.site_for gives for the
browser (Chromium: the page's; Firefox: the stylesheet's for no-cors requests)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from lanefetch.prefetch.discover_backgrounds import background_rules, expected_backgrounds
from lanefetch.prefetch.discover_css import discover_css
from lanefetch.prefetch.discover_html import discover_html
from lanefetch.prefetch.field_profile import site_for
from local_app import serve_app

BROWSERS = {"chromium": shutil.which("chromium"), "firefox": shutil.which("firefox-esr")}
# Requested by a browser's speculative parser though the page never uses it (seen: Firefox 153 ESR fetches an
# image and a stylesheet inside <template>; Chromium 156 neither). Discovery leaves them out: a prefetch missed
# costs nothing, one wasted costs bytes.
SPECULATIVE = {"firefox": {"/p/template.png", "/p/tpl.css"}}

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>t</title>
<link rel="stylesheet" href="a.css">
<link rel="stylesheet" href="{cross}/x/cross.css">
<link rel="stylesheet" href="print.css" media="print">
<link rel="preload" href="/fonts/pre.woff2" as="font" type="font/woff2" crossorigin>
<link rel="modulepreload" href="/js/dep.mjs">
<script src="c.js"></script>
<script type="module" src="/js/m.mjs"></script>
<script nomodule src="legacy.js"></script>
<noscript><link rel="stylesheet" href="noscript.css"></noscript>
</head><body>
<p class="f">Text in the used face.</p>
<img src="i.png" alt=""><img src="My Pics/caf\u00e9.png" alt="">
<img src="x.png" crossorigin="anonymous" alt="">
<template><img src="template.png"></template>
<p>para<template><p><link rel="stylesheet" href="tpl.css"></template></p>
<!-- <img src="comment.png"> -->
<div class="bg-shown">shown</div><div class="bg-hidden" hidden>hidden</div><div class="bg-over">over</div>
<div class="bg-modal">modal</div><div class="bg-imp">important</div><p class="bg-x bg-y">not</p>
<div class="bg-cross xf">cross</div>
</body></html>"""
# On another origin (localhost: cross-site to 127.0.0.1): what a stylesheet asks carries the Sec-Fetch-Site
# field_profile.site_for says, the page's in Chromium, the sheet's for no-cors requests in Firefox
CROSS_CSS = b"""@import url(imp.css);
@font-face { font-family: Cross; src: url(/x/cross.woff2) format("woff2"); }
.xf { font-family: Cross, sans-serif; }
.bg-cross { background: url(/x/bg-cross.png) }
"""
CSS = b"""@import url("b.css");
@font-face { font-family: Used; src: url(/fonts/used.woff2) format("woff2"), url(/fonts/used.woff) format("woff"); }
@font-face { font-family: Unused; src: url(/fonts/unused.woff2) format("woff2"); }
.f { font-family: Used, sans-serif; }
.bg-shown { background: url(/img/bg-shown.png) no-repeat }
.bg-hidden { background-image: url(/img/bg-hidden.png) }
.bg-over { background: url(/img/bg-lost.png) }
div.bg-over { background: url(/img/bg-won.png) }
.bg-absent { background: url(/img/bg-absent.png) }
.bg-shown:hover { background: url(/img/bg-hover.png) }
.bg-modal { display: none; background: url(/img/bg-modal.png) }
.bg-imp { background: none !important } div.bg-imp { background: url(/img/bg-imp.png) }
.bg-x:not(.bg-z, .bg-y) { background: url(/img/bg-not.png) }
"""
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


@dataclass
class Seen:
    url: str
    dest: str
    mode: str
    site: str = ""


@dataclass
class Server:
    base: str = ""
    cross: str = ""  # the same server on another origin
    page: str = ""
    seen: list[Seen] = field(default_factory=list)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server()

    async def handler(request: web.Request) -> web.StreamResponse:
        state.seen.append(Seen(f"http://{request.host}{request.raw_path}", request.headers.get("Sec-Fetch-Dest", ""),
                               request.headers.get("Sec-Fetch-Mode", ""), request.headers.get("Sec-Fetch-Site", "")))
        path = request.path
        cors = {"Access-Control-Allow-Origin": "*"}
        if path == "/p/page.html":
            return web.Response(body=state.page.encode(), content_type="text/html", charset="utf-8")
        if path == "/p/a.css":
            return web.Response(body=CSS, content_type="text/css")
        if path == "/x/cross.css":
            return web.Response(body=CROSS_CSS, content_type="text/css")
        if path.endswith(".css"):
            return web.Response(body=b"p{}", content_type="text/css")
        if path.endswith((".js", ".mjs")):
            return web.Response(body=b"void 0;", content_type="text/javascript", headers=cors)
        if path.endswith(".png"):
            return web.Response(body=PNG, content_type="image/png", headers=cors)
        if path.startswith("/fonts/") or path.endswith(".woff2"):
            return web.Response(body=b"not really a font", content_type="font/woff2", headers=cors)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serve_app(app) as port:
        state.base, state.cross = f"http://127.0.0.1:{port}", f"http://localhost:{port}"
        state.page = PAGE.replace("{cross}", state.cross)
        yield state


async def _load(browser: str, url: str, profile: Path) -> None:
    """The page loaded once, to its load event, in a fresh profile; the browser's processes gone after."""
    binary = BROWSERS[browser]
    if binary is None:
        pytest.skip(f"{browser} is not installed")
    if browser == "chromium":
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", url]
    else:
        args = ["--headless", "-no-remote", "-profile", str(profile), "--screenshot", str(profile / "shot.png"), url]
    proc = await asyncio.create_subprocess_exec(
        binary, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True, cwd=profile.parent)
    try:
        await asyncio.wait_for(proc.wait(), 90)
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: this Chromium's processes only
            await proc.wait()


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    (tmp_path / "profile").mkdir()
    return tmp_path / "profile"


@pytest.mark.parametrize("browser", sorted(BROWSERS))
async def test_discovery_predicts_requests_the_browser_really_makes(browser: str, server: Server,
                                                                    profile: Path) -> None:
    page = f"{server.base}/p/page.html"
    await _load(browser, page, profile)
    made = {(s.url, s.dest, s.mode) for s in server.seen}
    urls = {s.url for s in server.seen}
    assert (page, "document", "navigate") in made, f"{browser} did not load the page: {server.seen}"

    found = discover_html(server.page.encode(), page)
    sheet = f"{server.base}/p/a.css"
    found += discover_css(CSS, sheet)
    predicted = {(s.url, s.destination, s.mode) for s in found if not s.conditional}
    assert predicted - made == set(), f"predicted but not made as predicted: {predicted - made}; made: {made}"
    assert f"{server.base}/p/My%20Pics/caf%C3%A9.png" in urls

    # conditional: the used face's first usable source was requested as a cors font, the unused face never
    fonts = {(s.url, s.destination, s.mode) for s in found if s.conditional}
    used = (f"{server.base}/fonts/used.woff2", "font", "cors")
    assert used in fonts and used in made
    assert (f"{server.base}/fonts/unused.woff2", "font", "cors") in fonts
    assert f"{server.base}/fonts/unused.woff2" not in urls

    # background images: those expected (guesses) are requested, the others are not
    shown = {(s.url, s.destination, s.mode)
             for s in expected_backgrounds(server.page.encode(), "utf-8", background_rules(CSS, sheet))}
    assert shown == {(f"{server.base}/img/bg-shown.png", "image", "no-cors"),
                     (f"{server.base}/img/bg-won.png", "image", "no-cors")}
    assert shown - made == set(), f"expected but not made: {shown - made}; made: {made}"
    for name in ("bg-hidden", "bg-lost", "bg-absent", "bg-hover", "bg-modal", "bg-imp", "bg-not"):
        assert f"{server.base}/img/{name}.png" not in urls

    # a cross-origin stylesheet's @import, font and background image: asked as discovery says, with the
    # Sec-Fetch-Site field_profile.site_for gives for this browser
    cross = f"{server.cross}/x/cross.css"
    asked = [*discover_css(CROSS_CSS, cross),
             *expected_backgrounds(server.page.encode(), "utf-8", background_rules(CROSS_CSS, cross))]
    assert {s.url for s in asked} == {f"{server.cross}/x/imp.css", f"{server.cross}/x/cross.woff2",
                                      f"{server.cross}/x/bg-cross.png"}
    sites = {s.url: s.site for s in server.seen}
    for sub in asked:
        assert (sub.url, sub.destination, sub.mode) in made, f"{sub.url} not made as predicted: {made}"
        assert sites[sub.url] == site_for(sub, page, sheet_sets_site=browser == "firefox"), (sub.url, sites[sub.url])

    # left out on purpose, and not requested by the browser either (but for what its speculative parser takes)
    for name in ("/p/noscript.css", "/p/legacy.js", "/p/template.png", "/p/tpl.css", "/p/comment.png"):
        assert all(s.url != f"{server.base}{name}" for s in found)
        if name not in SPECULATIVE.get(browser, ()):
            assert f"{server.base}{name}" not in urls
