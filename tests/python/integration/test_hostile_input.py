"""Hostile input to the helper (issue 15, "Integrity"): frames parsed under limits (size, width, number of values,
depth, numbers), hosts the resolver cannot take, and exceptions where none was expected. Each case used to end
the host, hang requests, or answer a batch with one id-less error; now each is the error of the one message or
request it concerns, and everything else goes on."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import struct
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from lanefetch import protocol
from lanefetch.bridge import framing
from lanefetch.bridge.framing import BadFrame, FrameDecoder, encode
from lanefetch.bridge.host import Host
from lanefetch.engine import Engine, EngineConfig, FetchError, FetchRequest, Page
from lanefetch.engine.fetcher import BatchResult
from lanefetch.engine.origin_policy import OriginPolicy
from lanefetch.engine.pool import OriginPool
from lanefetch.engine.request import Origin, parse_target, site_name_problem
from lanefetch.engine.timing import ConnectTiming
from lanefetch.prefetch.page_loads import LoadEnded
from lanefetch.proxy import ca_firefox
from lanefetch.service import FetchService
from local_app import serve_app
from misbehaving_servers import LOOPBACK, RecordingSink
from test_bridge import HostProcess, frame, running_host

WAIT = 20  # s: every wait below fails loudly after this


def raw_frame(data: bytes) -> bytes:
    return struct.pack("=I", len(data)) + data


def request(rid: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"id": rid, "method": "GET", "url": url, "headers": [], **extra}


def a_batch(bid: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "batch", "batch_id": bid, "page": {"address_space": "loopback"}, "requests": requests}


# -- frames parsed under limits --------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [100_000, framing.MAX_DEPTH + 1])
def test_deep_nesting_is_refused_and_the_stream_goes_on(depth: int) -> None:
    deep = b'{"type":"ping","nonce":' + b"[" * depth + b"]" * depth + b"}"
    items = FrameDecoder().feed(raw_frame(deep) + frame({"type": "ping"}))
    assert isinstance(items[0], BadFrame) and items[0].code == "bad_message" and "nested" in items[0].reason
    assert items[1:] == [{"type": "ping"}]


def test_nesting_the_protocol_uses_is_fine() -> None:
    ok = {"a": json.loads("[" * (framing.MAX_DEPTH - 1) + "]" * (framing.MAX_DEPTH - 1))}
    assert FrameDecoder().feed(frame(ok)) == [ok]


@pytest.mark.parametrize("number", ["9" * 5000, "1" * (framing.MAX_NUMBER_CHARS + 1), "1." + "5" * 100, "NaN",
                                    "-Infinity"])
def test_numbers_beyond_limits_are_refused(number: str) -> None:
    data = f'{{"type":"batch","x":{number},"requests":[{{"id":"r1"}},{{"id":"r2"}}]}}'.encode()
    (item,) = FrameDecoder().feed(raw_frame(data))
    assert isinstance(item, BadFrame) and item.code == "bad_message", item
    assert item.ids == ("r1", "r2")  # the refused batch's requests are named, to be answered


def test_ordinary_numbers_parse() -> None:
    msg = {"a": [1, -2, 2**63, 1.5, -1e-300, 1e300]}
    assert FrameDecoder().feed(frame(msg)) == [msg]


def test_many_small_values_are_refused_before_parsing() -> None:
    # 3 bytes of `{},` became a 64-byte dict: 60 MiB of them took 1.5 GB
    data = b'{"a":[' + b"{}," * framing.MAX_VALUES + b'{}],"id":"r9"}'
    (item,) = FrameDecoder().feed(raw_frame(data))
    assert isinstance(item, BadFrame) and item.code == "too_large" and item.ids == ("r9",)


def test_wide_text_has_the_lower_limit() -> None:
    def ping(nonce_start: str) -> bytes:
        head = f'{{"type":"ping","nonce":"{nonce_start}'.encode()
        return head + b"a" * (framing.FROM_BROWSER_MAX_WIDE + 1 - len(head) - 2) + b'"}'

    for wide in ("é", "\\u00e9"):  # a character beyond ASCII, or a \u escape of one
        (item,) = FrameDecoder().feed(raw_frame(ping(wide)))
        assert isinstance(item, BadFrame) and item.code == "too_large", wide
    (item,) = FrameDecoder().feed(raw_frame(ping("a")))
    assert isinstance(item, dict)


def test_oversized_frame_is_refused_at_once_never_buffered_and_names_its_ids() -> None:
    dec = FrameDecoder(max_size=4096)
    reqs = [request(f"req-{i}", f"http://127.0.0.1/{'x' * 100}") for i in range(150)]
    big = json.dumps(a_batch("b", reqs)).encode()
    stream = raw_frame(big) + frame({"type": "ping"})
    items: list[Any] = []
    for i in range(0, len(stream), 7):  # ids cut at every possible place
        items += dec.feed(stream[i : i + 7])
        if i == 7:
            assert items and items[0].code == "too_large" and items[0].report, "not refused when its length came"
        # what is left to skip (and of the ping after it), never what was read
        assert dec.pending <= max(0, len(big) + 4 - (i + 7)) + 32
    _refused, named, ping = items
    assert named.report is False and named.ids == tuple(r["id"] for r in reqs)
    assert ping == {"type": "ping"} and dec.pending == 0


def test_ids_are_found_only_as_keys_with_a_string() -> None:
    data = json.dumps({"type": "batch", "x": '"id":"fake"', "requests": [{"id": "real"}, {"id": 5}], "y": [1, 2]})
    assert framing.ids_in(data.encode() + b"garbage") == ("real",)


def test_lone_surrogates_go_back_as_escapes() -> None:
    assert json.loads(encode({"id": "\ud800x"})[4:]) == {"id": "\ud800x"}


# Peak RSS from /proc (VmHWM, kB): getrusage's ru_maxrss would carry the parent's peak over fork and exec.
_MEASURE = """
import sys
from lanefetch.bridge.framing import FrameDecoder, BadFrame

def peak():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])

before = peak()
dec, out = FrameDecoder(), []
with open(sys.argv[1], "rb", buffering=0) as f:
    while piece := f.read(256 * 1024):  # as the host reads stdin
        out += dec.feed(piece)
print(peak() - before, type(out[0]).__name__)
"""


def _batch_bytes(size: int) -> bytes:
    """A batch as the extension's largest would be: long URLs, a few headers (ASCII), `size` bytes at most."""
    reqs, total, i = [], 200, 0
    while total + 70_000 < size:
        url = "http://127.0.0.1/" + "a" * 65_000
        reqs.append(request(f"r{i}", url, headers=[["Accept", "*/*"], ["Cookie", "c" * 4000]]))
        total, i = total + 69_200, i + 1
    return json.dumps(a_batch("b", reqs), separators=(",", ":")).encode()


def _peak_rss_growth_kb(tmp_path: Path, data: bytes) -> tuple[int, str]:
    path = tmp_path / "frame.bin"
    path.write_bytes(raw_frame(data))
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, check=True,
                         timeout=120)
    grown, kind = out.stdout.split()
    path.unlink()
    return int(grown), kind


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from /proc (Linux)")
def test_peak_memory_of_the_largest_frames(tmp_path: Path) -> None:
    """The largest ASCII frame accepted parses in about twice its size (it was 3×: the buffer, a slice of it and a
    copy of that); a frame over the limit costs nothing (60 MiB was buffered whole: the limit was 64 MiB)."""
    data = _batch_bytes(framing.FROM_BROWSER_MAX)
    assert len(data) > framing.FROM_BROWSER_MAX - 200_000
    grown, kind = _peak_rss_growth_kb(tmp_path, data)
    assert kind == "dict" and grown * 1024 < 2.5 * len(data), f"peak RSS grew by {grown} kB for {len(data)} bytes"
    grown, kind = _peak_rss_growth_kb(tmp_path, _batch_bytes(60 * 1024 * 1024))
    assert kind == "BadFrame" and grown < 8 * 1024, f"peak RSS grew by {grown} kB for a refused frame"


# -- hosts and names the resolver cannot take ---------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "http://a..b/", f"http://{'a' * 64}.test/", f"http://{'a.' * 127}test/", "http://\u00e9\u0000x/",
    "http://a b/", "http://%00/", "http://\ud800/", "http://.../", "http://\u00ad\u00ad..x/",
])
def test_hosts_the_resolver_cannot_take_are_bad_urls(url: str) -> None:
    with pytest.raises(FetchError) as caught:
        parse_target(url)
    assert caught.value.code == "bad_url"


@pytest.mark.parametrize(("url", "host"), [
    ("http://B\u00fccher.de/x", "xn--bcher-kva.de"), ("http://[::1]:81/", "::1"),
    ("http://example.com./", "example.com."),
    (f"http://{'a' * 63}.test/", f"{'a' * 63}.test"), ("http://my_host/", "my_host"),
])
def test_hosts_that_are_fine(url: str, host: str) -> None:
    assert parse_target(url).origin.host == host


@pytest.mark.parametrize(("url", "host"), [
    ("https://fa\u00df.de/", "xn--fa-hia.de"), ("https://\u03b2\u03cc\u03bb\u03bf\u03c2.com/", "xn--nxasmm1c.com"),
    ("https://\U0001f4a9.la/", "xn--ls8h.la"),
])
def test_an_international_host_is_the_one_the_browser_reaches(url: str, host: str) -> None:
    """A non-ASCII host becomes the A-label the browser's URL parser makes (WHATWG: UTS #46, non-transitional), so
    the helper connects to, names in SNI and verifies the host the browser would. Python's "idna" codec is IDNA 2003,
    which maps ß to ss and final sigma to sigma: faß.de went to fass.de, another registrant's server."""
    assert parse_target(url).origin.host == host


@pytest.mark.parametrize(("name", "fine"), [
    ("example.com", True), ("[::1]", True), ("10.0.0.1", True), ("xn--bcher-kva.de", True),
    ("b\u00fccher.de", False), ("a\x00b", False), ("a" * 64, False), ("[zz]", False), ("a:b", False), ("a b", False),
])
def test_https_site_names(name: str, fine: bool) -> None:
    assert (site_name_problem(name) is None) is fine


async def test_an_idna_error_in_the_resolver_is_dns_failed() -> None:
    """Defence in depth behind the URL check: the resolver's own IDNA step raises UnicodeError, not OSError."""
    engine = Engine(EngineConfig())
    try:
        pool = OriginPool(engine, Origin("http", "a" * 64 + ".test", 80), "loopback", OriginPolicy(16), None)
        with pytest.raises(FetchError) as caught:
            await pool._resolve(ConnectTiming())
        assert caught.value.code == "dns_failed"
    finally:
        await engine.aclose()


# -- the engine: one request's failure is its own -------------------------------------------------------------------


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=f"hello {request.match_info['name']}")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}"


async def test_a_bad_host_fails_only_its_own_request(origin: str) -> None:
    engine = Engine(EngineConfig(total_timeout=60))
    try:
        reqs = [FetchRequest("good1", "GET", f"{origin}/one"), FetchRequest("idna", "GET", "http://\u00ad\u00ad..x/"),
                FetchRequest("label", "GET", f"http://{'a' * 64}.test/"), FetchRequest("good2", "GET", f"{origin}/two")]
        sink = RecordingSink()
        await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), WAIT)
        sink.check_once(reqs)
        assert bytes(sink.records["good1"].body) == b"hello one" and bytes(sink.records["good2"].body) == b"hello two"
        for rid in ("idna", "label"):
            error = sink.records[rid].error
            assert error is not None and error.code == "bad_url", (rid, error)
    finally:
        await engine.aclose()


async def test_an_unexpected_error_with_one_request_fails_only_it(origin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lanefetch.engine import engine as engine_module

    real = engine_module.validate

    def bug_for_one(req: FetchRequest) -> Any:
        if req.id == "unlucky":
            raise RuntimeError("a bug in validation")
        return real(req)

    monkeypatch.setattr(engine_module, "validate", bug_for_one)
    engine = Engine(EngineConfig(total_timeout=60))
    try:
        reqs = [FetchRequest("unlucky", "GET", f"{origin}/u"), FetchRequest("fine", "GET", f"{origin}/f")]
        sink = RecordingSink()
        await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), WAIT)
        sink.check_once(reqs)
        error = sink.records["unlucky"].error
        assert error is not None and error.code == "internal" and "a bug in validation" in error.message
        assert bytes(sink.records["fine"].body) == b"hello f"
    finally:
        await engine.aclose()


async def test_an_unexpected_connect_failure_fails_its_requests_and_the_pool_recovers(
    origin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connect task that died of anything but FetchError used to stay 'connecting' forever: its origin's
    requests waited for the total timeout (300 s)."""
    real = OriginPool.open_transport
    failures = [RuntimeError("a bug while connecting")]

    async def first_fails(self: OriginPool, timing: ConnectTiming) -> Any:
        if failures:
            raise failures.pop()
        return await real(self, timing)

    monkeypatch.setattr(OriginPool, "open_transport", first_fails)
    engine = Engine(EngineConfig(total_timeout=300, connections_per_origin=1))
    try:
        sink = RecordingSink()
        first = [FetchRequest("a", "GET", f"{origin}/a")]
        try:
            await asyncio.wait_for(engine.fetch(first, sink, LOOPBACK), WAIT)
        except TimeoutError:
            raise AssertionError(f"the request was not answered within {WAIT} s of its connect failing") from None
        error = sink.records["a"].error
        assert error is not None and error.code == "internal" and "a bug while connecting" in error.message
        again = [FetchRequest("b", "GET", f"{origin}/b")]
        await asyncio.wait_for(engine.fetch(again, sink, LOOPBACK), WAIT)
        assert bytes(sink.records["b"].body) == b"hello b", sink.records["b"]
    finally:
        await engine.aclose()


# -- the host in-process: a bug in one message or batch ----------------------------------------------------------


class _Sent:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        assert protocol.check(message, "ToExtension") is None, message
        self.messages.append(message)


async def test_a_failing_handler_is_reported_and_the_host_goes_on(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _Sent()
    host = Host(FetchService(), sent)
    try:
        async def broken(*_: Any) -> dict[str, Any]:
            raise KeyError("a bug")

        monkeypatch.setattr(host, "_cache_command", broken)
        await host.handle({"type": "cache", "action": "stats", "nonce": "n"})
        await host.handle({"type": "ping", "nonce": "after"})
        assert sent.messages[0]["type"] == "error" and sent.messages[0]["code"] == "internal"
        assert "KeyError" in sent.messages[0]["message"]
        assert sent.messages[1]["type"] == "cache_stats" and sent.messages[1]["nonce"] == "n"  # the page's answer
        assert "KeyError" in sent.messages[1]["error"]
        assert sent.messages[2] == {"type": "pong", "nonce": "after"}
    finally:
        await host.close()


async def test_a_page_report_for_a_browser_that_quit_is_dropped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """When the browser quits, the loads still open end and report to a port nobody reads: that is no error."""
    async def gone(message: dict[str, Any]) -> None:
        raise ConnectionResetError("Connection lost")

    host = Host(FetchService(), gone)
    try:
        with caplog.at_level(logging.DEBUG, logger="lanefetch.host"):
            await host._page_ended(LoadEnded(Page(top_site="example.org"), "https://example.org/", None, 3, "d1"))
        assert "no reader" in caplog.text and not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        await host.close()


async def test_a_batch_that_fails_answers_each_of_its_requests_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _Sent()
    engine = FetchService()

    async def half_then_bug(requests: list[FetchRequest], sink: Any, page: Page | None = None) -> Any:
        await sink.error(requests[0], FetchError("bad_url", "answered before the bug"))
        raise RuntimeError("a bug in the engine")

    monkeypatch.setattr(engine, "fetch", half_then_bug)
    host = Host(engine, sent)
    try:
        await host.handle(a_batch("b1", [request("r1", "http://127.0.0.1/"), request("r2", "http://127.0.0.1/")]))
        for _ in range(100):
            if any(m["type"] == "batch_done" for m in sent.messages):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"no batch_done: {sent.messages}")
        answers = [(m.get("id"), m["type"], m.get("code")) for m in sent.messages]
        assert answers == [("r1", "error", "bad_url"), ("r2", "error", "internal"), (None, "batch_done", None)]
    finally:
        await host.close()


@pytest.mark.parametrize("copies", [
    [request("r2", "http://127.0.0.1/b", method="POST", body="not base64!"), request("r2", "http://127.0.0.1/c")],
    [request("r2", "http://127.0.0.1/b"), request("r2", "http://127.0.0.1/c")],
])
async def test_a_request_id_repeated_in_a_batch_is_answered_once(monkeypatch: pytest.MonkeyPatch,
                                                                 copies: list[dict[str, Any]]) -> None:
    """The extension routes answers by request id: two requests of one batch under one id must not get an error for
    one copy and an answer for the other (the id answered twice, perhaps with the other URL's response). The id gets
    one error, none of its copies is fetched, and the rest of the batch is."""
    sent = _Sent()
    host = Host(FetchService(), sent)
    fetched: list[str] = []

    async def answered(requests: list[FetchRequest], sink: Any, page: Page) -> Any:
        for r in requests:
            fetched.append(r.url)
            await sink.end(r, 0, [])
        return BatchResult(0, 0)

    monkeypatch.setattr(host.loads, "fetch", answered)
    try:
        await host.handle(a_batch("b1", [request("r1", "http://127.0.0.1/a"), *copies]))
        for _ in range(200):
            if any(m["type"] == "batch_done" for m in sent.messages):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError(f"no batch_done: {sent.messages}")
        answers = [(m["id"], m["type"]) for m in sent.messages if m["type"] in ("end", "error") and "id" in m]
        assert sorted(answers) == [("r1", "end"), ("r2", "error")], sent.messages
        assert fetched == ["http://127.0.0.1/a"]
    finally:
        await host.close()


async def test_a_batch_refused_whole_never_answers_a_running_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers are routed by request id: an error naming the id of a request another batch is fetching would answer
    that request (the extension lets the browser fetch it, and drops the helper's own answer when it comes). A batch
    refused whole answers only the ids that are not in use, as a batch refused for its id or a frame refused unread
    do; the running request is answered by its own batch, once."""
    sent = _Sent()
    host = Host(FetchService(), sent)
    release = asyncio.Event()

    async def held(requests: list[FetchRequest], sink: Any, page: Page) -> Any:
        await asyncio.wait_for(release.wait(), WAIT)
        for r in requests:
            await sink.end(r, 0, [])
        return BatchResult(0, 0)

    monkeypatch.setattr(host.loads, "fetch", held)
    try:
        await host.handle(a_batch("b1", [request("r1", "http://127.0.0.1/a")]))
        # The batch itself is at fault (its page names no address space): refused whole, every request named.
        refused = {**a_batch("b2", [request("r1", "http://127.0.0.1/b"), request("r2", "http://127.0.0.1/c")]),
                   "page": {"top_site": "127.0.0.1"}}
        await host.handle(refused)
        answered = [(m["id"], m["type"]) for m in sent.messages if "id" in m]
        assert answered == [("r2", "error")], sent.messages
        release.set()
        for _ in range(200):
            if any(m["type"] == "batch_done" for m in sent.messages):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError(f"no batch_done: {sent.messages}")
        assert [(m["id"], m["type"]) for m in sent.messages if m.get("id") == "r1"] == [("r1", "end")]
    finally:
        await host.close()


async def test_a_batch_with_some_invalid_requests_fetches_the_others(origin: str) -> None:
    sent = _Sent()
    host = Host(FetchService(), sent)
    try:
        bad = [request("lower", f"{origin}/x", method="get"), {"id": "no-headers", "method": "GET", "url": "x"}]
        await host.handle(a_batch("b1", [request("ok", f"{origin}/ok"), *bad]))
        for _ in range(400):
            if any(m["type"] == "batch_done" for m in sent.messages):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"no batch_done: {sent.messages}")
        final = {m["id"]: (m["type"], m.get("code")) for m in sent.messages if m["type"] in ("end", "error")}
        assert final == {"ok": ("end", None), "lower": ("error", "bad_message"), "no-headers": ("error", "bad_message")}
        assert not [m for m in sent.messages if m["type"] == "error" and "id" not in m]
    finally:
        await host.close()


# -- the real host process ----------------------------------------------------------------------------------------


@pytest.fixture
def firefox_home(tmp_path: Path) -> dict[str, str]:
    """A HOME with one Firefox profile (certutil's NSS store), so https_sites really makes CAs."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    if ca_firefox.certutil_available():
        base = tmp_path / ".mozilla" / "firefox"
        (base / "p.default").mkdir(parents=True)
        subprocess.run(["certutil", "-N", "--empty-password", "-d", f"sql:{base / 'p.default'}"], check=True)
        (base / "profiles.ini").write_text("[Profile0]\nName=p\nIsRelative=1\nPath=p.default\n")
    return env


async def recv_until(host: HostProcess, done: Any, what: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    try:
        while not got or not done(got[-1]):
            got.append(await asyncio.wait_for(host.recv(), WAIT))
    except (TimeoutError, asyncio.IncompleteReadError) as e:
        code = host.proc.returncode
        raise AssertionError(f"waiting for {what}: {e!r}; host exit code {code}; got {got}") from None
    return got


async def pong(host: HostProcess, nonce: str) -> list[dict[str, Any]]:
    """Everything the host says until it answers a ping: it is alive and has handled what came before."""
    await host.send({"type": "ping", "nonce": nonce})
    return await recv_until(host, lambda m: m == {"type": "pong", "nonce": nonce}, f"pong {nonce}")


@pytest.mark.skipif(not ca_firefox.certutil_available(), reason="certutil (libnss3-tools) not installed")
async def test_the_host_survives_bad_preconnects_and_site_names(firefox_home: dict[str, str]) -> None:
    async with running_host(firefox_home, exit_within=20) as host:
        await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"})
        assert "https_sites" in (await host.recv())["capabilities"]
        for url in ("http://\u00ad\u00ad..x/", f"http://{'a' * 64}.test/", "http://\u00e9\x00x/", "http://\ud800/"):
            await host.send({"type": "preconnect", "url": url, "page": {"address_space": "loopback"}})
        await pong(host, "after preconnects")
        sites = [{"scope": "domain", "name": n} for n in ("b\u00fccher.de", "a\x00b", "a" * 70, "example.com")]
        await host.send({"type": "https_sites", "sites": sites, "nonce": "s1"})
        (state,) = await recv_until(host, lambda m: m["type"] == "https_state", "https_state")
        states = {s["name"]: s["state"] for s in state["sites"]}
        assert states == {"b\u00fccher.de": "failed", "a\x00b": "failed", "a" * 70: "failed",
                          "example.com": "restart_needed"}, state
        await pong(host, "after https_sites")


async def test_a_batch_with_a_bad_url_fetches_the_others_through_the_host(tmp_path: Path, origin: str) -> None:
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}) as host:
        reqs = [request("ok1", f"{origin}/a"), request("idna", "http://\u00ad\u00ad..x/"),
                request("ok2", f"{origin}/b")]
        await host.send(a_batch("b1", reqs))
        msgs = await recv_until(host, lambda m: m["type"] == "batch_done", "batch_done")
        final = {m["id"]: (m["type"], m.get("code")) for m in msgs if m["type"] in ("end", "error") and "id" in m}
        assert final == {"ok1": ("end", None), "idna": ("error", "bad_url"), "ok2": ("end", None)}, msgs
        assert not [m for m in msgs if m["type"] == "error" and "id" not in m], msgs


async def test_an_oversized_batch_is_answered_per_request_through_the_host(tmp_path: Path) -> None:
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}) as host:
        reqs = [request(f"r{i}", "http://127.0.0.1/" + "a" * 60_000) for i in range(600)]
        data = json.dumps(a_batch("big", reqs)).encode()
        assert len(data) > framing.FROM_BROWSER_MAX
        await host.send(raw_frame(data))  # the host reads it while it comes, and says one error meanwhile
        msgs = await pong(host, "after the big batch")
        assert msgs[0] == {**msgs[0], "type": "error", "code": "too_large"} and "id" not in msgs[0]
        assert [m.get("id") for m in msgs[1:-1]] == [r["id"] for r in reqs]
        assert {m["code"] for m in msgs[1:-1]} == {"too_large"}



def test_the_reason_for_a_message_full_of_errors_looks_at_few_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 850 kB batch of bad headers made jsonschema collect ~250,000 errors (11 s with the host deaf)."""
    import jsonschema.exceptions

    made = 0
    real_init = jsonschema.exceptions.ValidationError.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(jsonschema.exceptions.ValidationError, "__init__", counting)
    reqs = [request(f"r{i}", "http://127.0.0.1/", headers=[1] * 120) for i in range(2000)]
    reason = protocol.check(a_batch("b", reqs), "ToHost")
    assert reason is not None and "headers" in reason
    assert made < 5000, f"{made} errors made to word one reason"


def test_the_protocol_definition_states_the_limits() -> None:
    """shared/protocol.schema.json is the one definition: its description says what the helper accepts."""
    said = protocol.schema()["description"]
    for limit in (framing.FROM_BROWSER_MAX, framing.FROM_BROWSER_MAX_WIDE, framing.MAX_VALUES):
        assert f"{limit:,}" in said, limit
    assert f"nest at most {framing.MAX_DEPTH} levels" in said
    assert f"numbers of at most {framing.MAX_NUMBER_CHARS} characters" in said
