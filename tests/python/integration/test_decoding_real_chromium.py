"""The helper's decoding (stream/decode.py, through the whole service with `decode`) against real headless Chromium's
own, on the same coded bodies from a server on 127.0.0.1: each is loaded as a document (`--dump-dom`) and fetched by
the helper, and both show the same lines of it. The bodies are the ones where a decoder stricter or looser than
Chromium's differs: a gzip first member with a wrong trailer followed by another member, a gzip header CRC that is
wrong, raw deflate, and gzip, br and zstd bodies cut short (zstd's, one block, shows nothing yet in either); a br body
with bytes after the end of its stream (ignored); a Content-Encoding naming a coding Chromium does not undo (`foo`,
`gzip, foo`, `identity, gzip`, `gzip,`: the body shown as it came, here plain HTML); and one Chromium fails before the
body (an empty item between commas, a second empty field line: ERR_CONTENT_DECODING_FAILED, no document)."""

from __future__ import annotations

import asyncio
import gzip
import os
import re
import shutil
import signal
import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import brotli
import pytest
import zstandard
from aiohttp import web
from lanefetch.engine import EngineConfig, FetchRequest
from lanefetch.service import FetchService, ServiceConfig
from local_app import serve_app
from misbehaving_servers import LOOPBACK, RecordingSink
from multidict import CIMultiDict

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

BODY = b"".join(b"<p>line %d</p>\n" % i for i in range(3000))
# A line's start: the last, cut, is shown too (Chromium's parser closes its element at the end of the document)
LINE = re.compile(rb"<p>line (\d+)")


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


def half(data: bytes) -> bytes:
    return data[: len(data) // 2]


MEMBER = gzip.compress(BODY, mtime=0)
AFTER = bytes(range(256)) * 300  # what follows a br stream's end, in the same read and in later ones
BODIES: dict[str, tuple[str | list[str], bytes]] = {
    "gzip-wrong-trailer-then-a-member": ("gzip", MEMBER[:-8] + struct.pack("<II", 0, 1)
                                         + gzip.compress(b"<p>line 999999</p>")),
    "gzip-wrong-header-crc": ("gzip", b"\x1f\x8b\x08\x02\0\0\0\0\0\xff\0\0" + raw_deflate(BODY) + MEMBER[-8:]),
    "raw-deflate": ("deflate", raw_deflate(BODY)),
    "gzip-cut": ("gzip", half(MEMBER)),
    "br-cut": ("br", half(brotli.compress(BODY))),
    "zstd-cut": ("zstd", half(zstandard.ZstdCompressor().compress(BODY))),
    "br-then-bytes": ("br", brotli.compress(BODY) + b"\n<!-- more -->\n"),
    "br-then-many-bytes": ("br", brotli.compress(BODY) + AFTER),
    "unknown-coding": ("x-lanefetch-unknown", BODY),
    "gzip-then-unknown": ("gzip, x-lanefetch-unknown", BODY),
    "identity-then-gzip": ("identity, gzip", BODY),
    "gzip-then-an-empty-item": ("gzip,", BODY),
    # Chromium fails these: an empty item between two commas, or a second empty line, was not offered
    "gzip-empty-br-failed": ("gzip, , br", brotli.compress(MEMBER)),
    "gzip-then-an-empty-line-failed": (["gzip", ""], MEMBER),
}


@pytest.fixture
async def base() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.Response:
        if request.match_info["name"] not in BODIES:  # the favicon
            return web.Response(status=404)
        coding, data = BODIES[request.match_info["name"]]
        headers = CIMultiDict([("Content-Type", "text/html")])
        for line in [coding] if isinstance(coding, str) else coding:
            headers.add("Content-Encoding", line)
        return web.Response(body=data, headers=headers)

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}"


async def chromium_lines(url: str, profile: Path) -> list[int] | None:
    """The lines Chromium shows of the document at url (its DOM once loaded), None where it shows none (the load
    failed: headless Chromium dumps nothing then); its processes gone after."""
    assert CHROMIUM is not None
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        f"--user-data-dir={profile}", "--dump-dom", url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, start_new_session=True, cwd=profile.parent)
    try:
        dom, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: this Chromium's processes only
            await proc.wait()
    if not dom.strip():
        return None
    assert b"<html" in dom, f"Chromium showed no document for {url}: {dom[:200]!r}"
    return [int(n) for n in LINE.findall(dom)]


async def helper_lines(url: str) -> list[int] | None:
    """The lines of what the helper delivers, None where it fails the body as `decode_failed` (the request then
    goes to the browser, which fails it itself)."""
    service = FetchService(ServiceConfig(EngineConfig()))
    try:
        sink = RecordingSink()
        request = FetchRequest("0", "GET", url, [], decode=True)
        await asyncio.wait_for(service.fetch([request], sink, LOOPBACK), 20)
    finally:
        await service.aclose()
    record = sink.records["0"]
    if record.error is not None:
        assert record.error.code == "decode_failed", record.error
        return None
    return [int(n) for n in LINE.findall(bytes(record.body))]


@pytest.mark.parametrize("name", sorted(BODIES))
async def test_the_helper_shows_what_chromium_shows(name: str, base: str, tmp_path: Path) -> None:
    url = f"{base}/{name}"
    shown = await chromium_lines(url, tmp_path / "profile")
    assert await helper_lines(url) == shown
    if name.endswith("-failed"):
        assert shown is None
    elif not name.endswith("-cut"):
        assert shown == list(range(3000))
