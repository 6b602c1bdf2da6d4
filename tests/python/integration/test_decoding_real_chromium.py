"""The helper's decoding (stream/decode.py, through the whole service with `decode`) against real headless Chromium's
own, on the same coded bodies from a server on 127.0.0.1: each is loaded as a document (`--dump-dom`) and fetched by
the helper, and both show the same lines of it. The bodies are the ones where a decoder stricter or looser than
Chromium's differs: a gzip first member with a wrong trailer followed by another member, a gzip header CRC that is
wrong, raw deflate, and gzip, br and zstd bodies cut short (zstd's, one block, shows nothing yet in either)."""

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
BODIES: dict[str, tuple[str, bytes]] = {
    "gzip-wrong-trailer-then-a-member": ("gzip", MEMBER[:-8] + struct.pack("<II", 0, 1)
                                         + gzip.compress(b"<p>line 999999</p>")),
    "gzip-wrong-header-crc": ("gzip", b"\x1f\x8b\x08\x02\0\0\0\0\0\xff\0\0" + raw_deflate(BODY) + MEMBER[-8:]),
    "raw-deflate": ("deflate", raw_deflate(BODY)),
    "gzip-cut": ("gzip", half(MEMBER)),
    "br-cut": ("br", half(brotli.compress(BODY))),
    "zstd-cut": ("zstd", half(zstandard.ZstdCompressor().compress(BODY))),
}


@pytest.fixture
async def base() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.Response:
        if request.match_info["name"] not in BODIES:  # the favicon
            return web.Response(status=404)
        coding, data = BODIES[request.match_info["name"]]
        return web.Response(body=data, headers={"Content-Type": "text/html", "Content-Encoding": coding})

    app = web.Application()
    app.router.add_get("/{name}", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}"


async def chromium_lines(url: str, profile: Path) -> list[int]:
    """The lines Chromium shows of the document at url (its DOM once loaded); its processes gone after."""
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
    assert b"<html" in dom, f"Chromium showed no document for {url}: {dom[:200]!r}"
    return [int(n) for n in LINE.findall(dom)]


async def helper_lines(url: str) -> list[int]:
    service = FetchService(ServiceConfig(EngineConfig()))
    try:
        sink = RecordingSink()
        request = FetchRequest("0", "GET", url, [], decode=True)
        await asyncio.wait_for(service.fetch([request], sink, LOOPBACK), 20)
    finally:
        await service.aclose()
    record = sink.records["0"]
    assert record.error is None, f"the helper failed a body Chromium shows: {record.error!r}"
    return [int(n) for n in LINE.findall(bytes(record.body))]


@pytest.mark.parametrize("name", sorted(BODIES))
async def test_the_helper_shows_what_chromium_shows(name: str, base: str, tmp_path: Path) -> None:
    url = f"{base}/{name}"
    shown = await chromium_lines(url, tmp_path / "profile")
    assert await helper_lines(url) == shown
    if not name.endswith("-cut"):
        assert shown == list(range(3000))
