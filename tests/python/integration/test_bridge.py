"""Native messaging: framing, the protocol definition in shared/, and the real lanefetch-host process."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import resource
import struct
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from lanefetch import protocol
from lanefetch.bridge import install as installer
from lanefetch.bridge.framing import (
    TO_BROWSER_MAX,
    BadFrame,
    FrameDecoder,
    MessageTooLarge,
    encode,
)
from lanefetch.bridge.host import TEST_UPSTREAM_CA_ENV, TEST_WORKING_INTERVAL_ENV, Host, serve
from lanefetch.bridge.stdio import open_stdio
from lanefetch.bridge.system_proxy import TEST_WPAD_ENV, Found
from lanefetch.engine.config import EngineConfig
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app
from waits import until

REPO = Path(__file__).resolve().parents[3]
HOST = Path(sys.executable).parent / "lanefetch-host"


def frame(obj: Any) -> bytes:
    data = json.dumps(obj).encode()
    return struct.pack("=I", len(data)) + data


# -- framing ---------------------------------------------------------------------------------------------


def test_round_trip_in_any_pieces() -> None:
    msgs = [{"type": "ping", "nonce": str(i)} for i in range(50)]
    stream = b"".join(encode(m) for m in msgs)
    dec = FrameDecoder()
    out: list[Any] = []
    for i in range(0, len(stream), 7):
        out += dec.feed(stream[i : i + 7])
    assert out == msgs and dec.pending == 0


def test_exactly_one_mebibyte_is_allowed_one_more_is_not() -> None:
    overhead = len(json.dumps({"d": ""}, separators=(",", ":")))
    assert len(encode({"d": "x" * (TO_BROWSER_MAX - overhead)})) == TO_BROWSER_MAX + 4
    with pytest.raises(MessageTooLarge):
        encode({"d": "x" * (TO_BROWSER_MAX - overhead + 1)})


def test_garbage_is_reported_and_the_stream_goes_on() -> None:
    dec = FrameDecoder(max_size=1000)
    bad_json = b"{nope"
    items = dec.feed(struct.pack("=I", len(bad_json)) + bad_json)
    items += dec.feed(frame([1, 2]))
    items += dec.feed(struct.pack("=I", 5000) + b"z" * 3000)  # oversized: skipped without buffering
    assert dec.pending == 2000
    items += dec.feed(b"z" * 2000 + frame({"type": "ping"}))
    items += dec.feed(struct.pack("=I", 2) + b"\xff\xfe")
    kinds = [i.code if isinstance(i, BadFrame) else i for i in items]
    assert kinds == ["bad_message", "bad_message", "too_large", {"type": "ping"}, "bad_message"]


# -- the one protocol definition ----------------------------------------------------------------------------


def test_shared_examples_against_schema() -> None:
    examples = json.loads((REPO / "shared" / "protocol.examples.json").read_text())
    for msg in examples["valid"]:
        assert protocol.check(msg, "ToHost") is None or protocol.check(msg, "ToExtension") is None, msg
    for case in examples["invalid"]:
        msg = case["message"]
        assert protocol.check(msg, "ToHost") and protocol.check(msg, "ToExtension"), case["why"]


def test_packaged_schema_is_the_shared_one() -> None:
    assert protocol.schema() == json.loads((REPO / "shared" / "protocol.schema.json").read_text())


def test_hello_compatibility() -> None:
    assert protocol.check(protocol.hello(1), "ToExtension") is None
    bad = protocol.hello(2)
    assert bad["compatible"] is False and "protocol 2" in bad["message"]
    assert protocol.check(bad, "ToExtension") is None


# -- installer ---------------------------------------------------------------------------------------------


def test_install_and_uninstall(tmp_path: Path) -> None:
    udd = tmp_path / "udd"
    run = [sys.executable, "-m", "lanefetch"]
    out = subprocess.run([*run, "install", "--chromium-user-data-dir", str(udd)], capture_output=True, text=True,
                         check=True)
    path = udd / "NativeMessagingHosts" / "org.lanefetch.helper.json"
    assert str(path) in out.stdout
    m = json.loads(path.read_text())
    ident = protocol.identity()
    assert m["allowed_origins"] == [f"chrome-extension://{ident['chromium_extension_id']}/"]
    assert os.access(m["path"], os.X_OK) and m["type"] == "stdio"
    ff = installer.targets(["firefox"], tmp_path, None)
    installer.install(ff, HOST)
    assert json.loads(ff[0].manifest_path.read_text())["allowed_extensions"] == [ident["firefox_extension_id"]]
    subprocess.run([*run, "uninstall", "--chromium-user-data-dir", str(udd)], check=True, capture_output=True)
    assert not path.exists()


# -- the real host process -----------------------------------------------------------------------------------

BIG = os.urandom(3 * 1024 * 1024 + 17)


# /held answers wait until this many /held requests arrived (or 10 s): while they wait, no connection is free again, so
# each request of a batch of that many needs a connection of its own whichever connection's task runs first.
HELD = EngineConfig().connections_per_origin


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    held: list[web.Request] = []
    all_held = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name == "held":
            held.append(request)
            if len(held) >= HELD:
                all_held.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_held.wait(), 10)
            return web.Response(text=f"held {len(held)}")
        if name == "big":
            return web.Response(body=BIG, content_type="application/octet-stream")
        if name == "cookie":
            return web.Response(text=request.headers.get("Cookie", ""))
        return web.Response(text=f"hello {name}")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}"


class HostProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.sizes: list[int] = []

    async def send(self, obj: Any) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(frame(obj) if not isinstance(obj, bytes) else obj)
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout
        (size,) = struct.unpack("=I", await asyncio.wait_for(self.proc.stdout.readexactly(4), 20))
        self.sizes.append(size)
        msg: dict[str, Any] = json.loads(await self.proc.stdout.readexactly(size))
        assert protocol.check(msg, "ToExtension") is None, msg
        return msg

    async def until(self, kind: str) -> list[dict[str, Any]]:
        got = []
        for _ in range(10_000):
            m = await self.recv()
            got.append(m)
            if m["type"] == kind:
                return got
        raise AssertionError(f"no {kind}")


@asynccontextmanager
async def running_host(env: dict[str, str], exit_within: float = 10) -> AsyncIterator[HostProcess]:
    """The real lanefetch-host as a browser starts it; at the end its stdin is closed (the browser's port closing)
    and it must exit within `exit_within` seconds (else it is killed and the test fails)."""
    proc = await asyncio.create_subprocess_exec(
        str(HOST), "manifest.json", "test@ext", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        limit=4 * 1024 * 1024, env=env,
    )
    try:
        yield HostProcess(proc)
    finally:
        if proc.returncode is None:
            assert proc.stdin
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), exit_within)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                raise AssertionError(f"lanefetch-host did not exit {exit_within} s after its stdin closed") from None


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostProcess]:
    # never the runner's own cache
    async with running_host({**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}) as h:
        yield h


def batch(bid: str, reqs: list[tuple[str, str]], space: str = "loopback", **extra: Any) -> dict[str, Any]:
    return {"type": "batch", "batch_id": bid, "page": {"address_space": space},
            "requests": [{"id": i, "method": "GET", "url": u, "headers": [], **extra} for i, u in reqs]}


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_hello_is_answered_once_the_start_up_work_is_done(host: HostProcess, browser: str) -> None:
    # A page loaded at the hello shares the machine with nothing of the helper's start: its discovery worker (a
    # process the forkserver forks) is up before the answer, while the extension still leaves pages to the browser.
    await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": browser})
    assert (await host.recv())["compatible"]
    workers = [w for server in _children(host.proc.pid) for w in _children(server)]
    assert workers, "no discovery worker when the hello was answered"


async def test_hello_is_answered_where_the_discovery_process_cannot_start(tmp_path: Path) -> None:
    # A TMPDIR deep enough puts the forkserver's socket past AF_UNIX's 108 bytes: no worker process. The hello is
    # answered all the same (discovery runs in a thread), not failed as an internal error.
    deep = tmp_path / ("d" * 110)
    deep.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(deep)}
    async with running_host(env) as h:
        await h.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"})
        reply = await h.recv()
        assert reply["type"] == "hello" and reply["compatible"], reply


async def test_hello_says_where_the_system_proxy_the_browser_shares_with_the_helper_is_set(tmp_path: Path) -> None:
    # Started by a browser whose environment sets a proxy (the browser's default setting follows it): the helper,
    # which would fetch around it, says so; the extension then keeps lanefetch off (proxy-policy.ts).
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "https_proxy": "http://alice:s3cret@proxy.corp.example:3128"}
    async with running_host(env) as h:
        await h.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
        reply = await h.recv()
        assert reply["compatible"] and protocol.check(reply, "ToExtension") is None, reply
        assert reply["system_proxy"] == "proxy.corp.example:3128 (https_proxy in the environment)"


@pytest.mark.parametrize("wpad", ["", "wpad.lan.example"])
async def test_auto_detection_alone_is_a_system_proxy_only_where_a_wpad_server_is_found(tmp_path: Path,
                                                                                         wpad: str) -> None:
    # KDE set to auto-detect (Windows' default, elsewhere): the helper says a proxy is set only where `wpad`
    # resolves (here the test's answer, never this machine's DNS), and names the server found
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "kioslaverc").write_text("[Proxy Settings]\nProxyType=3\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path),
           "KDE_FULL_SESSION": "true", TEST_WPAD_ENV: wpad}
    async with running_host(env) as h:
        await h.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
        reply = await h.recv()
        assert reply["compatible"] and protocol.check(reply, "ToExtension") is None, reply
        if wpad:
            assert reply["system_proxy"] == "proxy auto-detection, WPAD (KDE's proxy settings)"
            assert reply["wpad"] == "wpad.lan.example"
        else:
            assert "system_proxy" not in reply and "wpad" not in reply, reply


async def test_a_system_proxy_set_or_removed_while_the_helper_runs_is_told_once_each_time() -> None:
    # GNOME's (macOS's, Windows') settings change under a running browser, which follows them at once.
    sent: list[dict[str, Any]] = []
    reads = 0
    setting: list[str | None] = [None]

    async def send(message: dict[str, Any]) -> None:
        assert protocol.check(message, "ToExtension") is None, message
        sent.append(message)

    def detect(browser_auto_detect: bool) -> Found:
        nonlocal reads
        reads += 1
        return Found(setting[0])

    host = Host(FetchService(), send, system_proxy=detect)
    host.system_proxy_recheck = 0.01
    try:
        await host.handle({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
        assert sent[0]["type"] == "hello" and "system_proxy" not in sent[0]
        await until(lambda: reads >= 3, "the settings read again")
        assert len(sent) == 1, "nothing changed: nothing told"
        setting[0] = "GNOME's proxy settings (manual)"
        await until(lambda: len(sent) >= 2, "the new proxy told", seen=lambda: sent)
        assert sent[1] == {"type": "system_proxy", "system_proxy": "GNOME's proxy settings (manual)"}
        seen = reads
        await until(lambda: reads >= seen + 3, "the settings read again")
        assert len(sent) == 2, "told once"
        setting[0] = None
        await until(lambda: len(sent) >= 3, "the proxy's removal told", seen=lambda: sent)
        assert sent[2] == {"type": "system_proxy"}
    finally:
        await host.close()
    assert host._system_proxy_watch is not None and host._system_proxy_watch.done()


async def test_a_system_proxy_read_that_never_returns_stalls_neither_hello_nor_the_helpers_exit() -> None:
    # A settings store that does not answer (a gsettings past its own limit, a registry or a home directory that
    # hangs): hello goes out without it (none found, as for a gsettings that does not answer), the watch waits for
    # that one read instead of starting more, tells what it finds once it comes, and the thread reading it does not
    # keep the helper's process alive at exit.
    sent: list[dict[str, Any]] = []
    release = threading.Event()
    readers: list[threading.Thread] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    def detect(browser_auto_detect: bool) -> Found:
        readers.append(threading.current_thread())
        if len(readers) > 1:
            return Found(None)
        release.wait(30)
        return Found("GNOME's proxy settings (manual)")  # said only by the read that hung: its answer is not dropped

    host = Host(FetchService(), send, system_proxy=detect)
    host.system_proxy_limit = 0.05
    host.system_proxy_recheck = 0.01
    try:
        async with asyncio.timeout(5):  # a fail-safe: the hello is not held for the read
            await host.handle({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
        assert sent[0]["type"] == "hello" and sent[0]["compatible"] and "system_proxy" not in sent[0], sent
        assert len(readers) == 1 and readers[0].daemon, "one read, in a thread that does not hold the exit"
        for _ in range(20):  # the watch's rounds while that read hangs
            await asyncio.sleep(0.01)
        assert len(readers) == 1 and len(sent) == 1
        release.set()
        await until(lambda: len(sent) >= 2, "the late answer told", seen=lambda: sent)
        assert sent[1] == {"type": "system_proxy", "system_proxy": "GNOME's proxy settings (manual)"}
    finally:
        release.set()
        await host.close()


async def test_a_wpad_server_found_is_told_and_the_browsers_auto_detection_has_it_looked_up_at_once() -> None:
    # Windows' default (auto-detection alone) counts only with a WPAD server found, which hello names; the
    # browser's own auto-detection (auto_detect) has the next read made at once, and looked up, not after 10 s.
    sent: list[dict[str, Any]] = []
    asked: list[bool] = []

    async def send(message: dict[str, Any]) -> None:
        assert protocol.check(message, "ToExtension") is None, message
        sent.append(message)

    def detect(browser_auto_detect: bool) -> Found:
        asked.append(browser_auto_detect)
        return Found("proxy auto-detection, WPAD (Windows' proxy settings)", "wpad.corp.example") if len(asked) == 1 \
            else Found(None, "wpad.corp.example" if browser_auto_detect else None)

    host = Host(FetchService(), send, system_proxy=detect)
    host.system_proxy_recheck = 3600.0  # only a wake reads again within this test
    try:
        await host.handle({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
        assert sent[0]["system_proxy"] == "proxy auto-detection, WPAD (Windows' proxy settings)"
        assert sent[0]["wpad"] == "wpad.corp.example" and asked == [False]
        await host.handle({"type": "auto_detect", "on": True})
        await until(lambda: len(sent) >= 2, "the read the browser's auto-detection asked for told", seen=lambda: sent)
        assert sent[1] == {"type": "system_proxy", "wpad": "wpad.corp.example"} and asked[-1] is True
        await host.handle({"type": "auto_detect", "on": True})  # no change: no read
        await host.handle({"type": "auto_detect", "on": False})
        await until(lambda: len(sent) >= 3, "auto-detection off told", seen=lambda: sent)
        assert sent[2] == {"type": "system_proxy"} and asked[-1] is False
    finally:
        await host.close()


async def test_host_streams_a_batch(host: HostProcess, origin: str) -> None:
    await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
    hello = await host.recv()
    assert hello["compatible"] and {"pipelining", "decode", "cache"} <= set(hello["capabilities"])
    reqs = [("big", f"{origin}/big"), *[(f"s{i}", f"{origin}/s{i}") for i in range(10)]]
    await host.send(batch("b1", reqs))
    msgs = await host.until("batch_done")
    bodies: dict[str, bytes] = {}
    per_id: dict[str, list[str]] = {}
    for m in msgs:
        if "id" in m:
            per_id.setdefault(m["id"], []).append(m["type"])
        if m["type"] == "body":
            bodies[m["id"]] = bodies.get(m["id"], b"") + base64.b64decode(m["data"])
    assert hashlib.sha256(bodies["big"]).digest() == hashlib.sha256(BIG).digest()
    for i in range(10):
        assert bodies[f"s{i}"] == f"hello s{i}".encode()
    for rid, kinds in per_id.items():
        assert kinds[0] == "head" and kinds[-2:] == ["end", "timing"], rid
        assert set(kinds[1:-2]) <= {"body"}
    assert max(host.sizes) <= TO_BROWSER_MAX
    assert sum(1 for k in per_id["big"] if k == "body") >= 4  # 3 MiB had to be split
    assert msgs[-1]["connections"] >= 1


async def test_preconnect_reports_the_round_trip_and_the_batch_finds_the_connection(
    host: HostProcess, origin: str
) -> None:
    await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
    await host.recv()
    await host.send({"type": "preconnect", "url": f"{origin}/page", "page": {"address_space": "loopback"}})
    # Every connection the origin may have serving it is opened ahead of the page (plain http: the per-origin
    # limit), each reporting its connect time.
    for _ in range(EngineConfig().connections_per_origin):
        rtt = await host.recv()
        assert rtt["type"] == "origin_rtt" and rtt["origin"] == origin and 0 <= rtt["rtt_ms"] < 1000
    sent_at = time.time() * 1000
    # Held answers: a connection answered at once would be free again and might take a second request before another
    # preconnected connection's task ran (a busy machine), and that request's timing rightly has no connect.
    await host.send(batch("b1", [(f"r{i}", f"{origin}/held") for i in range(HELD)]))
    msgs = await host.until("batch_done")
    assert not [m for m in msgs if m["type"] == "origin_rtt"], "no new connection was needed"
    timings = [m for m in msgs if m["type"] == "timing"]
    assert len(timings) == HELD
    for t in timings:
        assert t["timing"]["connect_end"] is not None and t["timing"]["connect_end"] < sent_at


async def test_host_survives_bad_input(host: HostProcess, origin: str) -> None:
    await host.send(struct.pack("=I", 5) + b"{{{{{")
    assert (await host.recv())["code"] == "bad_message"
    await host.send({"type": "launch-missiles"})
    assert (await host.recv())["code"] == "bad_message"
    await host.send({"type": "batch", "batch_id": "x", "page": {"address_space": "nowhere"},
                     "requests": [{"id": "r1", "method": "GET", "url": f"{origin}/a", "headers": []}]})
    first, second = await host.recv(), await host.recv()
    assert first["code"] == "bad_message" and "id" not in first
    assert second == {**second, "type": "error", "id": "r1", "code": "bad_message"}
    await host.send({"type": "ping", "nonce": "still alive"})
    assert await host.recv() == {"type": "pong", "nonce": "still alive"}


async def test_host_refuses_private_targets_for_public_pages(host: HostProcess, origin: str) -> None:
    await host.send(batch("b", [("c", f"{origin}/cookie")], space="public"))
    msgs = await host.until("batch_done")
    assert msgs[0]["type"] == "error" and msgs[0]["code"] == "blocked_address"


async def test_host_forwards_cookie_and_cancels(host: HostProcess, origin: str) -> None:
    req = batch("b", [("c", f"{origin}/cookie")])
    req["requests"][0]["headers"] = [["Cookie", "session=42"]]
    await host.send(req)
    msgs = await host.until("batch_done")
    body = b"".join(base64.b64decode(m["data"]) for m in msgs if m["type"] == "body")
    assert body == b"session=42"
    await host.send({"type": "cancel", "ids": ["nonexistent"]})
    await host.send({"type": "ping"})
    assert (await host.recv())["type"] == "pong"


async def test_host_exits_when_the_browser_closes_the_port(host: HostProcess) -> None:
    assert host.proc.stdin
    host.proc.stdin.close()
    assert await asyncio.wait_for(host.proc.wait(), 10) == 0


async def test_the_helper_logs_to_the_file_named_in_its_environment(tmp_path: Path) -> None:
    """Browsers keep a native helper's standard error out of sight: LANEFETCH_LOG_FILE sends its log to a file."""
    log_file = tmp_path / "helper.log"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "LANEFETCH_LOG": "INFO",
           "LANEFETCH_LOG_FILE": str(log_file), TEST_UPSTREAM_CA_ENV: str(tmp_path / "no-ca.pem")}
    async with running_host(env) as h:
        await h.send({"type": "ping"})
        assert (await h.recv())["type"] == "pong"
    text = log_file.read_text()
    assert f"{TEST_UPSTREAM_CA_ENV} is set" in text and "WARNING" in text, text



@pytest.mark.parametrize(("variable", "value"), [
    ("LANEFETCH_LOG", "debug"), ("LANEFETCH_LOG", "loud"), ("LANEFETCH_LOG_FILE", "/nonexistent/lanefetch/helper.log"),
])
async def test_a_log_setting_it_cannot_use_never_stops_the_helper(tmp_path: Path, variable: str, value: str) -> None:
    """docs/cli.md has users set these in the browser's environment; one mistyped (a level in lower case, a file in
    a folder that is not there) costs at most the log, never the helper, which the browser would only see gone."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), variable: value}
    async with running_host(env) as h:
        await h.send({"type": "ping"})
        assert (await h.recv())["type"] == "pong"

async def test_threaded_stdio_serves_the_host(tmp_path: Path) -> None:
    """The Windows path (a thread on each pipe) carries the protocol like the event-loop pipes do."""
    to_host_r, to_host_w = os.pipe()
    from_host_r, from_host_w = os.pipe()
    reader, writer = await open_stdio(to_host_r, from_host_w, threaded=True)
    served = asyncio.create_task(serve(reader, writer, ServiceConfig(cache_dir=tmp_path / "cache")))
    hello = {"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"}
    await asyncio.to_thread(os.write, to_host_w, frame(hello) + frame({"type": "ping", "nonce": "n1"}))

    def read_message() -> dict[str, Any]:
        (size,) = struct.unpack("=I", os.read(from_host_r, 4))
        data = b""
        while len(data) < size:
            data += os.read(from_host_r, size - len(data))
        msg: dict[str, Any] = json.loads(data)
        return msg

    got = [await asyncio.wait_for(asyncio.to_thread(read_message), 20) for _ in range(2)]
    assert [m["type"] for m in got] == ["hello", "pong"] and got[0]["compatible"]
    os.close(to_host_w)  # the browser closes the port: the host ends
    await asyncio.wait_for(served, 20)
    for fd in (to_host_r, from_host_r, from_host_w):
        os.close(fd)


async def test_a_port_closed_before_its_answer_ends_the_host_quietly(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The browser quits with a message still to answer: the host stops as at its stdin's end (no traceback, no
    "failed to handle" error, exit status 0), instead of failing the message and ending on the answer's error."""

    class Gone:
        def write(self, data: bytes) -> None:
            pass

        async def drain(self) -> None:
            raise ConnectionResetError("Connection lost")

    reader = asyncio.StreamReader()
    reader.feed_data(frame({"type": "ping", "nonce": "n"}) + frame({"type": "ping", "nonce": "m"}))
    reader.feed_eof()
    with caplog.at_level(logging.DEBUG, logger="lanefetch"):
        await asyncio.wait_for(serve(reader, Gone(), ServiceConfig(cache_dir=tmp_path / "cache")), 20)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


class _Captured:
    """A port's browser end that keeps every frame the host writes."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        out, data = [], self.data
        while data:
            (size,) = struct.unpack("=I", data[:4])
            out.append(json.loads(data[4 : 4 + size]))
            data = data[4 + size :]
        return out


async def test_an_answer_too_large_for_the_port_is_the_asked_answers_error_with_its_nonce(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The options page waits for the answer of its nonce: an interfaces list over the port's 1 MiB (256
    interfaces with 64 long addresses each) is not dropped for a bare error that names no request (the page waited
    its 10 s, then said the helper was unavailable and asked again, forever); it is an interfaces_state with that
    nonce and the error, which the page shows."""
    from lanefetch.bridge import host as host_module
    from lanefetch.lanes.interface_report import InterfaceRow, PolicyAnswer
    from lanefetch.lanes.interfaces import InterfacePolicy

    row = InterfaceRow("x" * 250, True, True, tuple(f"fe80::{i:02x}:{'a' * 50}%veth" for i in range(64)),
                       InterfacePolicy(), 0, None, "device")
    monkeypatch.setattr(host_module, "list_or_change", lambda name, change: PolicyAnswer([row] * 256, "/p.json"))
    reader = asyncio.StreamReader()
    reader.feed_data(frame({"type": "interfaces", "action": "list", "nonce": "q7"}))
    reader.feed_eof()
    port = _Captured()
    await asyncio.wait_for(serve(reader, port, ServiceConfig(cache_dir=tmp_path / "cache")), 20)
    [answer] = port.messages()
    assert answer["type"] == "interfaces_state" and answer["nonce"] == "q7" and "interfaces" not in answer, answer
    assert "too large" in answer["error"]
    assert protocol.check(answer, "ToExtension") is None


async def test_an_https_state_too_large_for_the_port_keeps_its_nonce_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTPS sites' state of 256 sites, each with a long detail, in 64 profiles with long paths, passes the
    port's 1 MiB: it is not a bare error naming no question (the popup kept every opted-in site "pending", never
    saying why), but an https_state with the nonce of its https_sites, no site in it (none counts as active) and the
    error."""
    from lanefetch.proxy.ca_certs import Site
    from lanefetch.proxy.ca_sites import SiteState, SyncResult
    from lanefetch.proxy.service import ProxyService

    async def sync_https(self: ProxyService, sites: list[Site]) -> SyncResult:
        profiles = [tmp_path / f"profile{i}-{'p' * 3000}" for i in range(64)]
        return SyncResult(profiles, "every profile",
                          [SiteState(site, "failed", detail="certutil said: " + "x" * 4000) for site in sites])

    monkeypatch.setattr(ProxyService, "sync_https", sync_https)
    reader = asyncio.StreamReader()
    reader.feed_data(frame({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"}))
    sites = [{"scope": "domain", "name": f"site{i}.example"} for i in range(256)]
    reader.feed_data(frame({"type": "https_sites", "sites": sites, "nonce": "h9"}))
    reader.feed_eof()
    port = _Captured()
    await asyncio.wait_for(serve(reader, port, ServiceConfig(cache_dir=tmp_path / "cache")), 20)
    [answer] = [m for m in port.messages() if m["type"] not in ("hello", "system_proxy")]
    assert answer["type"] == "https_state" and answer["nonce"] == "h9", answer
    assert answer["sites"] == [] and answer["profiles"] == [], answer
    assert "too large" in answer["error"]
    assert protocol.check(answer, "ToExtension") is None


async def test_threaded_stdin_stops_reading_while_the_host_does_not() -> None:
    """The Windows path's stdin thread feeds the host's reader only as fast as the host reads it: while the host
    does not (its read loop waits for the port to take its answers), what the browser sends stays in the pipe and
    then in the browser, as with the event-loop pipes, instead of piling up in the helper's memory."""
    to_host_r, to_host_w = os.pipe()
    from_host_r, from_host_w = os.pipe()
    limit = 256 * 1024
    reader, _ = await open_stdio(to_host_r, from_host_w, threaded=True, limit=limit)
    os.set_blocking(to_host_w, False)
    written, refused, chunk = 0, 0, b"x" * 65536
    try:
        # Until the pipe stays full for 50 tries the loop had time to run between (at most 64 MiB written).
        while refused < 50 and written < 64 * 1024 * 1024:
            try:
                written += os.write(to_host_w, chunk)
                refused = 0
            except BlockingIOError:
                refused += 1
                await asyncio.sleep(0.01)
        # The reader holds at most twice its limit (then the thread stops) and one read of the thread's
        assert written <= 2 * limit + 2 * 256 * 1024 + 1024 * 1024, f"{written} bytes taken while nobody read them"
        got = 0  # reading again resumes the thread: everything written arrives, then the end
        os.set_blocking(to_host_w, True)
        os.close(to_host_w)
        to_host_w = -1
        while data := await asyncio.wait_for(reader.read(1024 * 1024), 20):
            got += len(data)
        assert got == written
    finally:
        for fd in (to_host_w, to_host_r, from_host_r, from_host_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


@pytest.fixture
async def held_origin() -> AsyncIterator[tuple[str, asyncio.Event, asyncio.Event]]:
    """An origin whose /hold answers only once the test releases it (and says when the request arrived)."""
    arrived, release = asyncio.Event(), asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.match_info["name"] == "hold":
            arrived.set()
            await asyncio.wait_for(release.wait(), 20)
        return web.Response(text=f"hello {request.match_info['name']}")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}", arrived, release


async def test_a_batch_id_in_use_is_refused_whole_and_the_running_batch_goes_on(
    host: HostProcess, held_origin: tuple[str, asyncio.Event, asyncio.Event]
) -> None:
    origin, arrived, release = held_origin
    await host.send(batch("b1", [("h", f"{origin}/hold")]))
    await asyncio.wait_for(arrived.wait(), 20)
    # Same batch id while b1 runs: each of its requests gets its error; an id of b1 ("h") is not answered here.
    await host.send(batch("b1", [("x", f"{origin}/x"), ("h", f"{origin}/y")]))
    await host.send({"type": "ping", "nonce": "after"})
    meanwhile = [m for m in await host.until("pong") if m["type"] != "origin_rtt"]
    assert meanwhile == [{"type": "error", "code": "bad_message", "message": "batch id already in use", "id": "x"},
                         {"type": "pong", "nonce": "after"}]
    release.set()
    msgs = await host.until("batch_done")
    assert {m.get("id") for m in msgs if m["type"] != "batch_done"} == {"h"}
    body = b"".join(base64.b64decode(m["data"]) for m in msgs if m["type"] == "body")
    assert body == b"hello hold"
    # b1 is over: its id may be used again.
    await host.send(batch("b1", [("x", f"{origin}/x")]))
    again = await host.until("batch_done")
    assert next(m["type"] for m in again if m.get("id") == "x") == "head"


async def test_a_running_batch_is_said_working_until_it_is_done(tmp_path: Path) -> None:
    """A pipelined answer may be held for longer than the extension waits for a head (a slow link): while a batch
    runs the helper says it is working on it, so the extension does not let the browser fetch its requests too;
    once the batch is done, no more."""
    release = {"a": asyncio.Event(), "b": asyncio.Event()}
    arrived = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def handler(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        arrived[name].set()
        await asyncio.wait_for(release[name].wait(), 20)
        return web.Response(text=f"hello {name}")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), TEST_WORKING_INTERVAL_ENV: "0.1"}
    async with serve_app(app) as port, running_host(env) as host:
        origin = f"http://127.0.0.1:{port}"

        async def next_said() -> dict[str, Any]:
            while (m := await host.recv())["type"] == "origin_rtt":
                pass
            return m

        await host.send(batch("b1", [("a", f"{origin}/a")]))
        await asyncio.wait_for(arrived["a"].wait(), 20)
        assert [await next_said() for _ in range(2)] == [{"type": "working", "batch_id": "b1"}] * 2
        release["a"].set()
        msgs = [m for m in await host.until("batch_done") if m["type"] not in ("working", "origin_rtt")]
        assert [m["type"] for m in msgs] == ["head", "body", "end", "timing", "batch_done"]
        # b1 is done: while b2 runs (three of its intervals), nothing more is said of b1
        await host.send(batch("b2", [("b", f"{origin}/b")]))
        await asyncio.wait_for(arrived["b"].wait(), 20)
        assert [await next_said() for _ in range(3)] == [{"type": "working", "batch_id": "b2"}] * 3
        release["b"].set()
        await host.until("batch_done")


async def test_a_proxy_that_cannot_open_is_that_page_contexts_error(tmp_path: Path) -> None:
    """A Firefox page context whose listener cannot be opened (no file descriptor left) gets an error naming it,
    and the host goes on: contexts closed free descriptors and the next open works."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    async with running_host(env) as h:
        await h.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"})
        assert (await h.recv())["type"] == "hello"
        await h.send({"type": "ping", "nonce": "warm"})  # the cache and validator are open before the limit drops
        await h.until("pong")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        used = len(os.listdir(f"/proc/{h.proc.pid}/fd"))
        limit = used + 8  # room for three contexts' two listeners each, not for 20
        resource.prlimit(h.proc.pid, resource.RLIMIT_NOFILE, (limit, hard))
        ready, failed = [], []
        for i in range(20):
            await h.send({"type": "proxy_open", "context_id": f"c{i}", "page": {"address_space": "public"}})
            m = await h.recv()
            (ready if m["type"] == "proxy_ready" else failed).append(m)
        assert ready and failed, (ready, failed)
        assert all(m["type"] == "error" and m["code"] == "internal" and m["id"].startswith("c") for m in failed)
        assert {m["id"] for m in failed}.isdisjoint(m["context_id"] for m in ready)
        for m in ready:
            await h.send({"type": "proxy_close", "context_id": m["context_id"]})
        await h.send({"type": "proxy_open", "context_id": "after", "page": {"address_space": "public"}})
        m = await h.recv()
        assert m["type"] == "proxy_ready" and m["context_id"] == "after"
        resource.prlimit(h.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
