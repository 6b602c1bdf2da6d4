"""The CLI's sink (lanefetch/cli.py's _CliSink) driven by hand, in orders a batch can deliver: where each body's
file goes under --out, and that no body's file takes the place of another's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lanefetch.cli import _CliSink, _Result
from lanefetch.engine import DeliveredHead, FetchRequest

HEAD = DeliveredHead(200, "OK", "1.1", [], False)


@pytest.mark.parametrize("overlap", [True, False])
async def test_a_name_like_another_bodys_part_file_takes_neither_place(tmp_path: Path, overlap: bool) -> None:
    """A URL whose file name is another body's `.NAME.lanefetch-part` (that body's file while it arrives): each
    body keeps a file of its own. That part file used to be replaced by the other body, renamed over it (NAME then
    held the wrong body) or, when the other was whole first, truncated by opening it (that body lost)."""
    sink = _CliSink(tmp_path)
    plain = FetchRequest("0", "GET", "http://a.test/x")
    part_named = FetchRequest("1", "GET", "http://a.test/.x.lanefetch-part")
    for r in (plain, part_named):
        sink.results[r.id] = _Result(r)
    if overlap:  # the part-named body arrives whole while the plain one is half there
        await sink.head(plain, HEAD)
        await sink.body(plain, b"plain ")
    await sink.head(part_named, HEAD)
    await sink.body(part_named, b"part-named")
    await sink.end(part_named, 10, [])
    if not overlap:  # the plain body starts once the other is whole
        await sink.head(plain, HEAD)
        await sink.body(plain, b"plain ")
    await sink.body(plain, b"whole")
    await sink.end(plain, 11, [])
    assert len(os.listdir(tmp_path)) == 2, os.listdir(tmp_path)
    for request, body in ((plain, b"plain whole"), (part_named, b"part-named")):
        saved = sink.results[request.id].saved
        assert saved is not None and saved.read_bytes() == body, (request.url, saved)
    # the first to arrive keeps its own name
    assert (tmp_path / ("x" if overlap else ".x.lanefetch-part")).exists()
