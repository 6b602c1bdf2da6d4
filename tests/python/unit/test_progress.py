"""The CLI's progress rows (lanefetch/progress.py), rendered into a string: a split body shows a row per lane under
its own, with that lane's bytes; a batch hides a finished body's rows (its lanes' too)."""

from __future__ import annotations

import io

from lanefetch.progress import DownloadProgress


def test_a_split_body_has_a_row_per_lane_with_its_bytes() -> None:
    out = io.StringIO()
    progress = DownloadProgress(out, 1)
    progress.begin("0", "big.iso", 3000)
    for lane, n in (("eth0", 1000), ("wlan0", 2000)):
        progress.lane("0", lane, n)
        progress.advance("0", n)
    progress.lane("0", "eth0", 0)  # nothing arrived: no row of its own, no change
    progress.lane("unknown", "eth0", 10)  # a body without a row (no head yet): ignored
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("big.iso") and "3.0/3.0 kB" in lines[0], lines
    assert lines[1].strip().startswith("↳ over eth0") and "1.0/? kB" in lines[1], lines
    assert lines[2].strip().startswith("↳ over wlan0") and "2.0/? kB" in lines[2], lines
    assert len(lines) == 3, lines


def test_a_finished_body_of_a_batch_leaves_with_its_lanes() -> None:
    out = io.StringIO()
    progress = DownloadProgress(out, 2)
    progress.begin("0", "a.bin", 10)
    progress.begin("1", "b.bin", 10)
    progress.lane("0", "eth0", 10)
    progress.advance("0", 10)
    progress.end("0")
    progress.close()
    text = out.getvalue()
    assert "2 files" in text and "b.bin" in text
    assert "a.bin" not in text and "eth0" not in text, text


def test_a_name_with_brackets_is_shown_as_it_is() -> None:
    """A body's name is the URL's, not rich markup: `[a]` is not dropped as a style, nor `[/b]` refused as a
    closing tag that matches none (which raised out of the progress, ending the command with a traceback)."""
    out = io.StringIO()
    progress = DownloadProgress(out, 2)
    progress.begin("0", "photo[a].jpg", 10)
    progress.begin("1", "x[/b].txt", 10)
    progress.close()
    text = out.getvalue()
    assert "photo[a].jpg" in text and "x[/b].txt" in text, text
