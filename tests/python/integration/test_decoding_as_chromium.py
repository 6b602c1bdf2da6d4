"""Coded bodies through the whole stack (service.py: engine, cache, decoding sink) from a scripted server on
127.0.0.1, delivered as Chromium would have shown them (stream/decode.py): a gzip body of several members whose
first's trailer is wrong is its first member, a br body cut before its end (the HTTP body complete) is what decoded,
and a stored body that does not decode is dropped and fetched again in full, never served nor revalidated."""

from __future__ import annotations

import asyncio
import gzip
import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import brotli
from lanefetch.engine import EngineConfig, FetchRequest
from lanefetch.service import FetchService, ServiceConfig
from misbehaving_servers import LOOPBACK, Received, RecordingSink, ScriptedServer, ServerConn, response

SCRIPT = b"console.log('the first member');\n" * 400
LATER = b"console.log('a later member Chromium never shows');\n" * 50


def first_member_with_a_wrong_trailer(body: bytes) -> bytes:
    member = gzip.compress(body, mtime=0)
    return member[:-8] + struct.pack("<II", zlib.crc32(body) ^ 0xFFFFFFFF, len(body) + 1)


def not_gzip_inside(body: bytes) -> bytes:
    """A gzip header, then deflate data zlib refuses (a reserved block type): a body Chromium fails."""
    member = bytearray(gzip.compress(body, mtime=0))
    member[10] |= 0x06
    return bytes(member)


@asynccontextmanager
async def stack(cache: Path | None = None) -> AsyncIterator[FetchService]:
    service = FetchService(ServiceConfig(EngineConfig(), cache_dir=cache))
    try:
        yield service
    finally:
        await service.aclose()


async def get(service: FetchService, srv: ScriptedServer, path: str, rid: str) -> RecordingSink:
    sink = RecordingSink()
    request = FetchRequest(rid, "GET", srv.url(path), [], decode=True)
    await asyncio.wait_for(service.fetch([request], sink, LOOPBACK), 20)
    sink.check_once([request])
    return sink


async def test_a_gzip_body_is_its_first_member_its_trailer_unchecked() -> None:
    """A body of two gzip members, the first's CRC32 and ISIZE wrong (a proxy that rewrote the body): Chromium
    inflates the first member, reads its trailer unchecked and ignores the second; the helper failed the body
    (`decode_failed`, the page losing a script the browser runs) or, trailer right, delivered both members."""
    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            body = first_member_with_a_wrong_trailer(SCRIPT) + gzip.compress(LATER)
            if req.path == "/right":
                body = gzip.compress(SCRIPT) + gzip.compress(LATER)
            await conn.answer(req, response(200, body, headers=[("Content-Type", "text/javascript"),
                                                                ("Content-Encoding", "gzip")]))

    async with ScriptedServer(run) as srv, stack() as service:
        for i, path in enumerate(["/wrong", "/right"]):
            record = (await get(service, srv, path, str(i))).records[str(i)]
            assert record.error is None, record.error
            assert bytes(record.body) == SCRIPT
            assert record.head is not None and record.head.decoded
            assert not any(k.lower() == "content-encoding" for k, _ in record.head.headers)


async def test_a_br_body_cut_before_its_end_is_delivered_as_far_as_it_decodes() -> None:
    """The HTTP body is whole (its Content-Length says so) but the brotli stream in it stops early: Chromium ends the
    load without an error, with what decoded; the helper failed it."""
    script = b"".join(b"console.log(%d);\n" % i for i in range(3000))
    coded = brotli.compress(script)
    cut = coded[: len(coded) * 2 // 3]

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.answer(req, response(200, cut, headers=[("Content-Encoding", "br")]))

    async with ScriptedServer(run) as srv, stack() as service:
        record = (await get(service, srv, "/cut.js", "0")).records["0"]
        assert record.error is None, record.error
        assert 0 < len(record.body) < len(script) and script.startswith(bytes(record.body))


async def test_a_stored_body_that_does_not_decode_is_fetched_again_in_full(tmp_path: Path) -> None:
    """The first answer is stored (with a validator) but does not decode: its request fails, as in Chromium. Stored
    fresh, the next request of it was answered from the store with the same failure; stored to be revalidated, a 304
    served the broken body again. Now the entry is dropped and the request goes without conditional fields, its new
    answer delivered and stored in its place."""
    seen: list[Received] = []

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            seen.append(req)
            if req.header("if-none-match"):
                await conn.answer(req, response(304, headers=[("ETag", '"v1"')], with_body=False))
                continue
            body = not_gzip_inside(SCRIPT) if len(seen) == 1 else gzip.compress(SCRIPT)
            headers = [("Content-Type", "text/javascript"), ("Content-Encoding", "gzip"), ("ETag", '"v1"'),
                       ("Cache-Control", "max-age=600" if req.path == "/fresh" else "no-cache")]
            await conn.answer(req, response(200, body, headers=headers))

    for path in ("/fresh", "/revalidated"):
        seen.clear()
        async with ScriptedServer(run) as srv, stack(tmp_path / path.strip("/")) as service:
            first = (await get(service, srv, path, "a")).records["a"]
            assert first.error is not None and first.error.code == "decode_failed"
            second = (await get(service, srv, path, "b")).records["b"]
            assert second.error is None, second.error
            assert bytes(second.body) == SCRIPT
            assert len(seen) == 2, [r.path for r in seen]
            assert seen[1].header("if-none-match") is None and seen[1].header("if-modified-since") is None
            third = (await get(service, srv, path, "c")).records["c"]  # the new answer is what is stored now
            assert third.error is None and bytes(third.body) == SCRIPT
            assert third.report is not None
            assert third.report.cache == ("hit" if path == "/fresh" else "revalidated")


async def test_bytes_after_a_br_stream_and_an_unknown_coding_are_shown_as_chromium_shows_them(tmp_path: Path) -> None:
    """A br body with bytes after its stream's end is what the stream decodes to (Chromium drops what follows), and
    a body under a coding Chromium does not know goes as it came, with its Content-Encoding and Content-Length: the
    helper failed both (`decode_failed`). Asked twice, the br body comes the second time from the store, where it
    is kept as it came."""
    seen: list[Received] = []
    coded = brotli.compress(SCRIPT) + bytes(range(256)) * 100

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            seen.append(req)
            headers = [("Content-Type", "text/javascript"), ("Cache-Control", "max-age=600")]
            if req.path == "/after.js":
                await conn.answer(req, response(200, coded, headers=[*headers, ("Content-Encoding", "br")]))
            else:
                headers.append(("Content-Encoding", "gzip, x-custom"))
                await conn.answer(req, response(200, SCRIPT, headers=headers))

    async with ScriptedServer(run) as srv, stack(tmp_path / "cache") as service:
        for rid in ("a", "b"):  # from the server, then from the store
            after = (await get(service, srv, "/after.js", f"{rid}1")).records[f"{rid}1"]
            assert after.error is None, after.error
            assert bytes(after.body) == SCRIPT
            unknown = (await get(service, srv, "/unknown.js", f"{rid}2")).records[f"{rid}2"]
            assert unknown.error is None, unknown.error
            assert bytes(unknown.body) == SCRIPT
            assert unknown.head is not None and unknown.head.decoded
            assert unknown.head.get("content-encoding") == "gzip, x-custom"
            assert unknown.head.get("content-length") == str(len(SCRIPT))
        # the br body served again from the store (stored as it came); the other is asked again, the store not
        # serving a coding the request's Accept-Encoding did not offer (cache/policy.py)
        assert [r.path for r in seen] == ["/after.js", "/unknown.js", "/unknown.js"]
