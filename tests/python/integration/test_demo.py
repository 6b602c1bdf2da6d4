"""`npm start` (tests/demo): the headless demo loads the demo site OFF and ON through the emulated wcdma link in
Chromium (and on the unshaped link in Firefox), prints the comparison, writes its files, and leaves nothing behind,
also when interrupted with Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from demo import site
from lanefetch.engine.config import EngineConfig
from PIL import Image

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces and TUN devices"),
]

TESTS = Path(__file__).resolve().parents[2]
SUBRESOURCES = 68  # 4 style sheets, 4 scripts, 48 tiles, 12 icons (tests/demo/site.py)


def _namespaces_of(pid: int) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith(f"lf{pid}-")]


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if text in (p / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(p.name))
            except OSError:
                continue
    return pids


def _demo(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # profiles and the site live under tmp_path
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.Popen([sys.executable, "-m", "demo", *args], cwd=TESTS, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def _png(path: Path) -> Image.Image:
    """The decoded picture (raises if the file is not a whole PNG)."""
    with Image.open(path) as im:
        assert im.format == "PNG"
        im.load()
        return im.convert("RGB")


def _run_to_end(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = _demo(tmp_path, *args)
    try:
        text, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc, text


def _assert_nothing_left(proc: subprocess.Popen[str], tmp_path: Path) -> None:
    assert _namespaces_of(proc.pid) == []
    assert _processes_mentioning(str(tmp_path)) == []
    assert not list(tmp_path.glob("lf-demo-*"))


def _both_loads(out: Path, browser: str) -> dict[str, Any]:
    """timings.json, checked for what holds in every browser: both loads got every file, OFF without lanefetch, and
    the page's text names the browser in use and not the other."""
    summary: dict[str, Any] = json.loads((out / "timings.json").read_text())
    off, on = summary["off"], summary["on"]
    assert off["page"]["resources"] == on["page"]["resources"] == SUBRESOURCES
    assert off["requests"] == on["requests"] == SUBRESOURCES
    assert off["pipelined"] == 0 and off["page"]["records"] == []
    assert off["page"]["names"] == on["page"]["names"] == [browser]
    return summary


def _assert_outputs(text: str, out: Path, summary: dict[str, Any]) -> None:
    """What every headless demo writes and prints: the comparison and a short summary in the terminal (no
    per-request table there), the table in requests.md (named in the terminal), OFF and ON side by side in page.png
    under a caption with both times, the timing page under a caption with the measured OFF time."""
    off_s, on_s = summary["off"]["page"]["load_s"], summary["on"]["page"]["load_s"]
    assert f"| page load time (navigation → load event) | {off_s:.2f} s | {on_s:.2f} s |" in text, text
    # nginx's pipelined count is at most lanefetch's: the browser's requests it sent pipelined, and those answered
    # from its prefetch flight (a first visit's: what the page's document names), whose own sends the records do not
    # show; each row says what it counts
    sent = re.search(r"\| requests sent pipelined \(another unanswered on the connection\) \| 0 \| (\d+) \|", text)
    flown = re.search(r"\| requests answered from the helper's prefetch flight \| 0 \| (\d+) \|", text)
    seen = re.search(r"\| requests nginx had in its buffer when it finished the one before \(both kinds\) "
                     r"\| 0 \| (\d+) \|", text)
    assert sent and flown and seen, text
    assert int(sent.group(1)) + int(flown.group(1)) > 0
    assert int(seen.group(1)) <= int(sent.group(1)) + int(flown.group(1))
    assert int(seen.group(1)) == summary["on"]["pipelined"]
    assert "| file | fetched by |" not in text and "/tiles/" not in text, "the per-request table goes to a file"
    assert len(text.splitlines()) <= 30, text
    assert f"Written into {out}/:" in text and "requests.md" in text
    table = (out / "requests.md").read_text()
    assert "| file | fetched by | queued | connect | sent | first byte | done | connection |" in table
    assert table.count("\n| /") == 1 + SUBRESOURCES, table
    pair = _png(out / "page.png")
    assert pair.width >= 2 * 1200 and pair.height > 1000, pair.size  # two pages (1280 px viewports) side by side
    _assert_timing_page_shot(out / "timing-panel.png")


def _assert_timing_page_shot(path: Path) -> None:
    """The timing page's screenshot under its caption: every row shown (about 20 px each), and not a blank page."""
    panel = _png(path)
    assert panel.size[0] == 1500 and panel.size[1] >= 20 * SUBRESOURCES, panel.size
    colors = panel.getcolors(maxcolors=1 << 16)
    assert colors is None or len(colors) > 50, "the timing page screenshot looks empty"


def _har_entries(path: Path, files: list[str]) -> list[dict[str, Any]]:
    """The HAR's entries, one per file of the ON load, each answered 200 (the driver also checked the HAR with the
    panel tests' HAR validator, or the demo would have failed)."""
    har = json.loads(path.read_text())
    assert har["log"]["version"] == "1.2" and har["log"]["creator"]["name"] == "lanefetch"
    entries: list[dict[str, Any]] = har["log"]["entries"]
    assert sorted(urlsplit(e["request"]["url"]).path for e in entries) == files
    for e in entries:
        assert e["response"]["status"] == 200 and e["time"] > 0, e["request"]["url"]
    return entries


def test_headless_demo_compares_off_and_on(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc, text = _run_to_end(tmp_path, "--out", str(out))  # no display: headless without being asked
    assert proc.returncode == 0, text
    assert "No display" in text and "emulated `wcdma` link" in text
    summary = _both_loads(out, "Chromium")
    _assert_outputs(text, out, summary)
    on = summary["on"]
    # ON: the helper fetched every subresource, and nginx saw some of them pipelined
    helper = [r for r in on["page"]["records"] if r["outcome"] == "fulfilled" and r["timing"] is not None]
    assert len(helper) == SUBRESOURCES, [(r["url"], r["outcome"], r["reason"]) for r in on["page"]["records"]]
    assert [r["url"] for r in on["page"]["records"] if r not in helper] == [summary["url"]]  # Chromium's own
    # ...over no more connections than the helper opens to one origin (the demo page has one origin)
    assert on["pipelined"] > 0 and on["connections"] <= EngineConfig().connections_per_origin
    # The HAR: the document fetched by Chromium, every subresource by the helper.
    files = sorted(["/index.html", *site.subresource_paths()])
    for e in _har_entries(out / "page.har", files):
        document = e["request"]["url"] == summary["url"]
        assert e["_lanefetch"]["outcome"] == ("passed" if document else "accelerated"), e["request"]["url"]
    assert f"the ON load as HAR 1.2 ({len(files)} requests; checked against the HAR schema)" in text
    _assert_nothing_left(proc, tmp_path)


def test_headless_demo_in_firefox(tmp_path: Path) -> None:
    """Firefox (proxy mode), on the `bench2` link (200 ms: shorter for CI than wcdma; on `lte` or `lan` the round trip
    is below the step-aside threshold and lanefetch would leave the subresources to Firefox): every file of the ON
    load, the document too, fetched by the helper; the page's screenshot, the timing page's screenshot and the load's
    HAR."""
    out = tmp_path / "out"
    proc, text = _run_to_end(tmp_path, "--headless", "--browser", "firefox", "--link", "bench2", "--out", str(out))
    assert proc.returncode == 0, text
    assert "Loading the demo page with lanefetch OFF (Firefox alone)" in text
    summary = _both_loads(out, "Firefox")
    _assert_outputs(text, out, summary)
    on = summary["on"]
    files = sorted(["/index.html", *site.subresource_paths()])
    fetched = sorted(urlsplit(r["url"]).path for r in on["page"]["records"]
                     if r["outcome"] == "fulfilled" and r["timing"] is not None)
    assert fetched == files, on["page"]["records"]
    assert on["connections"] <= 6
    entries = _har_entries(out / "page.har", files)
    assert all(e["_lanefetch"]["outcome"] == "accelerated" for e in entries), [e["_lanefetch"] for e in entries]
    # Firefox's records as complete as Chromium's: its own request types, MIME types, both heads, the body's size
    # apart from the wire's (which carries the head too).
    kinds = {".html": ("document", "text/html"), ".css": ("stylesheet", "text/css"),
             ".js": ("script", "application/javascript"), ".png": ("image", "image/png")}
    for e in entries:
        url = e["request"]["url"]
        kind = next(v for k, v in kinds.items() if url.endswith(k))
        assert (e["_resourceType"], e["response"]["content"]["mimeType"]) == kind, url
        assert e["request"]["headers"] and e["response"]["headers"], url
        assert 0 < e["response"]["content"]["size"] < e["response"]["_transferSize"], url
    assert f"the ON load as HAR 1.2 ({len(files)} requests; checked against the HAR schema)" in text
    _assert_nothing_left(proc, tmp_path)


def test_ctrl_c_cleans_up(tmp_path: Path) -> None:
    proc = _demo(tmp_path, "--headless", "--out", str(tmp_path / "out"))
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        seen = []
        for line in proc.stdout:  # bounded by the deadline and the child's own end
            seen.append(line)
            if "lanefetch OFF" in line:
                break
            if time.monotonic() > deadline:
                raise AssertionError("the demo never began its OFF load in 120 s:\n" + "".join(seen))
        else:
            raise AssertionError("the demo ended before its OFF load:\n" + "".join(seen))
        time.sleep(3)  # the browser is starting or loading in the client namespace
        assert _namespaces_of(proc.pid), "the demo should be running in its namespaces"
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, rest
    assert "interrupted" in rest
    _assert_nothing_left(proc, tmp_path)
