"""The whole page in one flight, through the real lanefetch-host process (native messaging on its stdin/stdout,
its HTTP cache and learned pages on disk) against aiohttp on 127.0.0.1, as Chromium's debugger mode drives it:
a `preconnect` when a navigation starts, then the page's batches (its document, then its subresources).

Two loads of a page are recorded (each ends at the next navigation of the page, with a page_report); the third
navigation starts a flight before any batch comes; the batch's requests are answered from it (the server never
sees them again; their timing says cache "prefetch"), a request whose fields differ from the learned ones is
fetched anew, and the report of the load says what was answered and wasted. Private browsing learns nothing."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from test_bridge import HostProcess, running_host
from test_prefetch_pages import Server, counting_server

HELLO = {"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"}
ASSETS = {"/static/site.css": (b"p{margin:0}" * 300, "stylesheet"), "/static/app.js": (b"void 0;" * 400, "script"),
          "/img/logo.png": (b"\x89PNG" * 900, "image"), "/img/photo.png": (b"P" * 7000, "image")}
ACCEPT = {"stylesheet": "text/css,*/*;q=0.1", "script": "*/*", "image": "image/avif,image/webp,*/*;q=0.8"}


# A stylesheet whose rule gives an element of a streamed document its background image
BG = {"/bg/bg.css": (b".note { background: url(note.png) }", "text/css"),
      "/bg/note.png": (b"\x89PNG" * 300, "image/png")}


def _answer(path: str) -> web.Response:
    if path in BG:
        body, kind = BG[path]
        return web.Response(body=body, content_type=kind, headers={"Cache-Control": "no-store"})
    if path.startswith("/docs/"):
        return web.Response(body=b"<!doctype html><title>doc</title>", content_type="text/html",
                            headers={"Cache-Control": "no-store"})
    # no-store: only a flight can save a trip (the helper's HTTP cache answers nothing here)
    return web.Response(body=ASSETS[path][0], headers={"Cache-Control": "no-store"})


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with counting_server(_answer) as state:
        yield state


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostProcess]:
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}) as h:
        await h.send(HELLO)
        assert (await h.recv())["type"] == "hello"
        yield h


def page(server: Server, private: bool = False) -> dict[str, Any]:
    return {"address_space": "loopback", "top_site": "http://127.0.0.1", "url": f"{server.url}/docs/a.html",
            "private_browsing": private}


def request(rid: str, url: str, kind: str, accept: str | None = None) -> dict[str, Any]:
    """A request as Chromium's debugger mode sends it (its bodies always decoded: Fetch.fulfillRequest)."""
    headers = [["Accept", accept or ACCEPT.get(kind, "*/*")], ["User-Agent", "UA/1"], ["Accept-Language", "en"]]
    return {"id": rid, "method": "GET", "url": url, "headers": headers, "resource_type": kind, "decode": True}


async def answers(host: HostProcess, batch_id: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Each request's timing cache value until the batch is done (no request may fail), and the page reports
    that arrived meanwhile."""
    caches: dict[str, str] = {}
    reports = []
    for m in await host.until("batch_done"):
        assert m["type"] != "error", m
        if m["type"] == "timing":
            caches[m["id"]] = m["cache"]
        elif m["type"] == "page_report":
            reports.append(m)
    return caches, reports


async def load(host: HostProcess, server: Server, n: int, private: bool = False,
               flies: bool = False) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """One load of the page as Chromium's debugger mode makes it: navigation, document, then its subresources."""
    p = page(server, private)
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    if flies:  # the flight leaves before any batch of the load comes; this waits for it so the test is not a race
        await seen_all(server, n)
    await host.send({"type": "batch", "batch_id": f"d{n}", "page": p,
                     "requests": [request(f"d{n}", p["url"], "document", "text/html")]})
    _, reports = await answers(host, f"d{n}")
    subresources = [request(f"r{n}-{i}", server.url + path, kind) for i, (path, (_, kind)) in enumerate(ASSETS.items())]
    await host.send({"type": "batch", "batch_id": f"b{n}", "page": p, "requests": subresources})
    caches, more = await answers(host, f"b{n}")
    return caches, reports + more


async def seen_all(server: Server, times: int) -> None:
    """Until the server has seen every asset `times` times (the flight's requests); fails loudly after 20 s."""
    for _ in range(2000):
        if all(server.seen.count(path) >= times for path in ASSETS):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the flight never reached the server: {server.seen}")


async def test_third_load_is_answered_from_its_flight(host: HostProcess, server: Server) -> None:
    first, _ = await load(host, server, 1)
    assert set(first.values()) == {"none"}
    # The second navigation ends the first load (recorded, reported); one load is not stable, but the newest
    # load's requests are guesses within the budget's floor (these assets are small): they fly and answer.
    second, reports = await load(host, server, 2, flies=True)
    assert [(r["recorded"], r["flight"]) for r in reports] == [(len(ASSETS), False)]
    assert set(second.values()) == {"prefetch"}

    # the third navigation: the flight leaves before any batch of the load comes
    p = page(server)
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    await seen_all(server, 3)
    server.seen.clear()
    await host.send({"type": "batch", "batch_id": "d3", "page": p,
                     "requests": [request("d3", p["url"], "document", "text/html")]})
    _, reports = await answers(host, "d3")
    assert [(r["recorded"], r["answered"], r["wasted_bytes"]) for r in reports] == [(len(ASSETS), len(ASSETS), 0)]
    photo = server.url + "/img/photo.png"
    subresources = [request(f"r3-{i}", server.url + path, kind) for i, (path, (_, kind)) in enumerate(ASSETS.items())]
    subresources[-1] = request("r3-3", photo, "image", "image/png")  # not the fields the flight reproduced
    await host.send({"type": "batch", "batch_id": "b3", "page": p, "requests": subresources})
    caches, _ = await answers(host, "b3")
    assert caches == {"r3-0": "prefetch", "r3-1": "prefetch", "r3-2": "prefetch", "r3-3": "none"}
    assert server.seen == ["/docs/a.html", "/img/photo.png"], f"answered requests reached the server: {server.seen}"

    # the next navigation ends the third load: its flight's report
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    report = (await host.until("page_report"))[-1]
    assert report["request"] == "d3", "the load's first request names it"
    assert report["flight"] and report["sent"] == len(ASSETS) and report["answered"] == 3
    assert report["refused_by_fidelity"] == {"header:accept": 1}
    assert report["wasted_bytes"] == len(ASSETS["/img/photo.png"][0])
    assert report["claimed_bytes"] == sum(len(b) for path, (b, _) in ASSETS.items() if path != "/img/photo.png")


async def test_private_browsing_learns_nothing(host: HostProcess, server: Server) -> None:
    for n in range(1, 4):
        caches, reports = await load(host, server, n, private=True)
        assert set(caches.values()) == {"none"} and reports == []
    assert all(server.seen.count(path) == 3 for path in ASSETS)
    p = page(server, private=True)
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    await host.send({"type": "ping", "nonce": "n"})
    until_pong = await host.until("pong")
    assert [m["type"] for m in until_pong if m["type"] != "origin_rtt"] == ["pong"], "no page_report: nothing learned"


async def test_clearing_the_cache_forgets_learned_pages_and_the_loads_under_way(
    host: HostProcess, server: Server,
) -> None:
    await load(host, server, 1)
    await load(host, server, 2, flies=True)  # the first load's requests fly as guesses
    await host.send({"type": "cache", "action": "clear", "nonce": "c"})
    cleared = (await host.until("cache_stats"))[-1]
    assert cleared.get("cleared", 0) >= 0 and "error" not in cleared, cleared
    caches, reports = await load(host, server, 3)  # its navigation ended the second load, which records nothing
    assert set(caches.values()) == {"none"}, "no flight: nothing learned is left"
    assert [(r["recorded"], r["flight"]) for r in reports] == [(0, True)]
    assert all(server.seen.count(path) == 3 for path in ASSETS), server.seen


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None and st[1] == pid:
            found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z"  # a zombie has ended (pid 1 here may not reap orphans at once)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
async def test_a_killed_host_closes_its_port_and_leaves_no_discovery_process(host: HostProcess,
                                                                                  server: Server) -> None:
    # A navigation begins a page load, which starts discovery's worker process (through a forkserver).
    p = page(server)
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    started = await _discovery_worker(host.proc.pid, 400)
    assert started is not None, "no discovery worker process under the host"
    host.proc.kill()  # no shutdown of any kind: a crash, an OOM kill
    try:
        assert host.proc.stdout
        # The port closes for the browser: no child of the helper holds its stdout.
        await asyncio.wait_for(host.proc.stdout.read(), 20)
        for _ in range(400):
            if not any(_running(pid) for pid in started):
                break
            await asyncio.sleep(0.05)
        assert not [pid for pid in started if _running(pid)], "discovery processes outlived the helper"
    finally:
        for pid in started:  # whatever the verdict, this test leaves nothing running
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


async def flight_plan(host: HostProcess, p: dict[str, Any]) -> bool:
    """A navigation that raced the attach asks whether its page has a flight; the answer names its URL."""
    await host.send({"type": "preconnect", "url": p["url"], "page": p, "ask_flight": True})
    answer = (await host.until("flight_plan"))[-1]
    assert answer["url"] == p["url"]
    return bool(answer["flight"])


async def test_a_racing_navigation_is_told_whether_its_page_has_a_flight(host: HostProcess, server: Server) -> None:
    # Never loaded: no flight (the extension then navigates again, so the document comes through the helper).
    assert await flight_plan(host, page(server)) is False
    p = page(server)
    await host.send({"type": "batch", "batch_id": "d1", "page": p,
                     "requests": [request("d1", p["url"], "document", "text/html")]})
    await answers(host, "d1")
    subresources = [request(f"r1-{i}", server.url + path, kind) for i, (path, (_, kind)) in enumerate(ASSETS.items())]
    await host.send({"type": "batch", "batch_id": "b1", "page": p, "requests": subresources})
    await answers(host, "b1")
    # Its next navigation: the first load is recorded first, and a flight starts from it.
    assert await flight_plan(host, page(server)) is True
    await seen_all(server, 2)
    # Private browsing learns nothing: never a flight; a plain preconnect is answered nothing of the kind.
    assert await flight_plan(host, page(server, private=True)) is False
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    await host.send({"type": "ping", "nonce": "n"})
    assert all(m["type"] != "flight_plan" for m in await host.until("pong"))


async def test_requests_the_browser_fetched_itself_teach_the_page(host: HostProcess, server: Server) -> None:
    """An h2 page without a flight: its requests go to the browser at once and the extension only tells the helper
    (`browser_fetched`). Nothing is answered or fetched for them; the page is learned, so its next navigation has a
    flight, which fetches them."""
    p = page(server)
    assert await flight_plan(host, p) is False
    told = [request(f"t1-{i}", server.url + path, kind) for i, (path, (_, kind)) in enumerate(ASSETS.items())]
    await host.send({"type": "browser_fetched", "page": p, "requests": told})
    # One not valid (no URL) in a message of its own: refused with a reason naming it, nothing else lost.
    await host.send({"type": "browser_fetched", "page": p, "requests": [{"id": "bad", "method": "GET", "headers": []}]})
    await host.send({"type": "ping", "nonce": "n"})
    replies = await host.until("pong")
    assert [m["type"] for m in replies if m["type"] not in ("origin_rtt", "pong")] == ["error"], replies
    assert server.seen == [], "told, never fetched"
    assert await flight_plan(host, page(server)) is True
    await seen_all(server, 1)


async def _discovery_worker(pid: int, polls: int) -> tuple[int, int] | None:
    """The (forkserver, worker) pair under the host, polled `polls` times 50 ms apart; None if it never came."""
    for _ in range(polls):
        started = next(((c, k[0]) for c in _children(pid) if (k := _children(c))), None)
        if started is not None:
            return started
        await asyncio.sleep(0.05)
    return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_a_hello_starts_the_discovery_worker_before_any_page(tmp_path: Path, browser: str) -> None:
    # Starting it blocked a fresh helper's event loop ~40 ms at its first navigation (the preconnect, the flight
    # question waited): a helper starts it at hello, Chromium's for its batches, Firefox's for its proxy's pages.
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}) as h:
        await h.send({**HELLO, "browser": browser})
        assert (await h.recv())["type"] == "hello"
        await h.send({"type": "ping", "nonce": "p"})
        await h.until("pong")
        started = await _discovery_worker(h.proc.pid, 400)
        try:
            assert started is not None, "no discovery worker after hello"
        finally:
            for pid in started or ():
                if _running(pid):
                    os.kill(pid, signal.SIGKILL)


async def test_a_document_the_browser_loads_itself_is_read_as_it_streams(host: HostProcess, server: Server) -> None:
    """A page on a private address (Chromium's `local_document`): the browser loads the document itself, the
    extension tells its request (browser_fetched) and streams its bytes (browser_document). What the document names
    is the browser's to ask for (fetched when asked, not flown); the background image its stylesheet's rule gives
    an element of the streamed document flies, and the browser's request for it is answered from the flight. Bytes
    that are not base64 are refused with a reason, and nothing else is lost."""
    await host.send({"type": "browser_fields", "user_agent": "UA/1", "accept": [
        {"destination": "style", "mode": "no-cors", "value": ACCEPT["stylesheet"]},
        {"destination": "image", "mode": "no-cors", "value": ACCEPT["image"]}]})
    p = page(server)
    await host.send({"type": "preconnect", "url": p["url"], "page": p})
    document = request("doc", p["url"], "document", "text/html")
    await host.send({"type": "browser_fetched", "page": p, "requests": [document]})
    html = b"<!doctype html><meta charset=utf-8><link rel=stylesheet href=/bg/bg.css><div class=note>n</div>"
    await host.send({"type": "browser_document", "page": p, "id": "doc", "data": "not base64!"})
    await host.send({"type": "browser_document", "page": p, "id": "doc", "status": 200,
                     "content_type": "text/html", "data": base64.b64encode(html[:40]).decode()})
    await host.send({"type": "browser_document", "page": p, "id": "doc", "data": base64.b64encode(html[40:]).decode(),
                     "end": "whole"})
    await host.send({"type": "ping", "nonce": "n"})
    replies = await host.until("pong")
    errors = [m for m in replies if m["type"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "bad_message" and "base64" in errors[0]["message"], replies
    await host.send({"type": "batch", "batch_id": "b1", "page": p,
                     "requests": [request("css", f"{server.url}/bg/bg.css", "stylesheet")]})
    caches, _ = await answers(host, "b1")
    assert caches == {"css": "none"}, "the stylesheet the document names is the browser's to ask for"
    for _ in range(2000):  # the flight's request; fails loudly after 20 s
        if "/bg/note.png" in server.seen:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError(f"the background image was not flown: {server.seen}")
    assert server.seen == ["/bg/bg.css", "/bg/note.png"], "never the document, which is the browser's"
    await host.send({"type": "batch", "batch_id": "b2", "page": p,
                     "requests": [request("img", f"{server.url}/bg/note.png", "image")]})
    caches, _ = await answers(host, "b2")
    assert caches == {"img": "prefetch"}
    assert server.seen.count("/bg/note.png") == 1


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
async def test_a_helper_the_browser_terminates_records_its_page_loads_first(tmp_path: Path, server: Server) -> None:
    """Firefox ends a helper that is still running when its port closes with SIGTERM (then SIGKILL), as does a
    logout: the helper stops as at its stdin's end, so the load under way is recorded and the next session flies."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    async with running_host(env) as first:
        await first.send(HELLO)
        assert (await first.recv())["type"] == "hello"
        await load(first, server, 1)
        first.proc.terminate()
        assert await asyncio.wait_for(first.proc.wait(), 20) == 128 + signal.SIGTERM  # stopped, not killed
    async with running_host(env) as second:
        await second.send(HELLO)
        assert (await second.recv())["type"] == "hello"
        assert await flight_plan(second, page(server)) is True, "the terminated helper's load was not recorded"
