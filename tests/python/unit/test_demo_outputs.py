"""The demo's outputs that need no browser: the OFF/ON picture and the timing page's caption (tests/demo/compose.py),
the page's words per browser and link (tests/demo/site.py), and the terminal's comparison and summary
(tests/demo/tables.py). The headless demo itself runs in tests/python/integration/test_demo.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.netlab import PROFILES
from demo import compose, site, tables
from demo.load import Load
from PIL import Image


def _solid(width: int, height: int, colour: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (width, height), colour)


def test_side_by_side_puts_off_left_and_on_right_under_a_caption() -> None:
    off, on = _solid(640, 500, (255, 0, 0)), _solid(640, 480, (0, 0, 255))
    pic = compose.side_by_side(off, on, 7.49, 3.25, "Chromium, emulated `wcdma` link")
    assert pic.width == 640 + compose.GAP + 640
    top = pic.height - 500  # the caption bars above the screenshots
    assert top > 60
    assert pic.getpixel((10, top + 10)) == (255, 0, 0)
    assert pic.getpixel((640 + compose.GAP + 10, top + 10)) == (0, 0, 255)
    # the caption bar carries text (white pixels on the dark bar), not just colour
    bar = pic.crop((0, 0, pic.width, top))
    assert (255, 255, 255) in {c for _, c in bar.getcolors(maxcolors=1 << 16) or []}


@pytest.mark.parametrize(("off", "on", "words"), [
    (7.49, 3.25, "2.30× faster with lanefetch (7.49 s → 3.25 s)"),
    (7.49, 7.43, "1.01× faster with lanefetch (7.49 s → 7.43 s)"),
    (3.00, 6.00, "2.00× slower with lanefetch (3.00 s → 6.00 s)"),
])
def test_speedup_words_say_slower_when_it_was(off: float, on: float, words: str) -> None:
    assert compose.speedup_words(off, on) == words


def test_captioned_keeps_the_screenshot_whole_under_the_bar() -> None:
    shot = _solid(1500, 900, (0, 128, 0))
    pic = compose.captioned(shot, ["first line", "a much longer second line " * 20])
    assert pic.width == 1500 and pic.height > 900 + 60  # the long line wrapped onto more lines
    assert pic.crop((0, pic.height - 900, 1500, pic.height)).getcolors() == [(1500 * 900, (0, 128, 0))]


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_demo_page_talks_about_the_browser_in_use(tmp_path: Path, browser: str) -> None:
    n = site.build(tmp_path, browser, "lte", PROFILES["lte"])
    page = (tmp_path / "index.html").read_text()
    assert n == 68 and "BROWSER_NOTES" not in page and "LINK_LEDE" not in page
    assert ("Chromium" in page) == (browser == "chromium")
    assert ("Firefox" in page) == (browser == "firefox")
    assert ("started debugging this browser" in page) == (browser == "chromium")
    assert "0.06 s" in page and "20000 kbit/s" in page  # the link it is served over, not wcdma's numbers
    assert "3G" not in page and "Pos/depth" not in page


def _record(depth: int | None) -> dict[str, Any]:
    conn = None if depth is None else {"id": 1, "pipeline_position": depth, "pipeline_depth": depth}
    return {"timing": None if depth is None else {"connection": conn}}


def test_pipelined_counts_are_explained_and_consistent() -> None:
    """lanefetch's count (depth above 1) and nginx's ($pipe, a subset) are two rows with their meaning, and the
    summary names the larger one lanefetch measured."""
    page: dict[str, Any] = {"load_s": 3.0, "resources": 4, "records": [_record(None), _record(1), _record(2),
                                                                         _record(3)]}
    on = Load(page, requests=3, connections=1, pipelined=1, up_bytes=0, down_bytes=0, drops=0)
    off = Load({"load_s": 6.0, "resources": 4, "records": []}, 3, 3, 0, 0, 0, 0)
    text = "\n".join(tables.comparison(off, on))
    assert "| requests sent pipelined (another unanswered on the connection) | 0 | 2 |" in text
    assert "| requests answered from the helper's prefetch flight | 0 | 0 |" in text
    assert "| requests nginx had in its buffer when it finished the one before (both kinds) | 0 | 1 |" in text
    assert "2.00× faster" in text
    slower = "\n".join(tables.comparison(Load({**off.page, "load_s": 2.91}, 3, 3, 0, 0, 0, 0), on))
    assert "| 2.91 s | 3.00 s | 1.03× slower |" in slower, slower
    summary = tables.summary(on)
    assert len(summary) <= 3
    assert summary[0] == ("With lanefetch ON the helper fetched 3 of the 4 requests (1 left to the browser) on 1 "
                          "connection; 2 went out pipelined, up to 3 in flight on one connection; 0 were answered "
                          "from its prefetch flight.")
