"""Download progress on the CLI's stderr, drawn by rich: a row per body while it arrives (bytes so far and
expected, speed, time left), for a batch of several a row for the whole batch, and under a --split body a row per
lane (network interface) carrying it, with that lane's bytes and speed, so a person sees each link's share."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


class DownloadProgress:
    """Keyed by request id. begin() again for a key starts that body over (a split fetch restarted after the
    resource changed): its bytes so far no longer count."""

    def __init__(self, stream: TextIO, requests: int) -> None:
        self._progress = Progress(
            # A body's name comes from its URL: shown as it is, never read as rich markup ("[/b]" would raise).
            TextColumn("{task.description}", markup=False, table_column=None),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(file=stream),
            # Standard output carries bodies or the report: rich must never route it through the progress.
            redirect_stdout=False,
        )
        self._requests = requests
        self._rows: dict[str, TaskID] = {}
        self._sizes: dict[str, int | None] = {}
        self._done: dict[str, int] = {}
        self._lanes: dict[tuple[str, str], TaskID] = {}  # (body, lane) -> its row under the body's
        # One body: its own row says it all. Several: a row for the batch, whose total is known once every
        # body's size is (until then rich shows bytes so far, speed, and no time left).
        self._total = None if requests < 2 else self._progress.add_task(f"{requests} files", total=None)
        self._progress.start()

    def begin(self, key: str, label: str, size: int | None) -> None:
        row = self._rows.get(key)
        if row is None:
            self._rows[key] = self._progress.add_task(label[-40:], total=size)
        else:
            self._progress.reset(row, total=size, visible=True)
        self._sizes[key] = size
        self._done[key] = 0
        self._update_total()

    def advance(self, key: str, nbytes: int) -> None:
        row = self._rows.get(key)
        if row is None:
            return
        self._done[key] += nbytes
        self._progress.advance(row, nbytes)
        self._update_total()

    def lane(self, key: str, lane: str, nbytes: int) -> None:
        """Bytes of a split body that just arrived on one lane (they count for the body through advance())."""
        if key not in self._rows or nbytes <= 0:
            return
        row = self._lanes.get((key, lane))
        if row is None:
            row = self._lanes[key, lane] = self._progress.add_task(f"  ↳ over {lane}", total=None)
        self._progress.advance(row, nbytes)

    def end(self, key: str) -> None:
        row = self._rows.get(key)
        if row is not None and self._total is not None:
            # Finished bodies leave the screen to those still arriving; the batch row keeps their bytes.
            self._progress.update(row, visible=False)
            for (body, _), lane_row in self._lanes.items():
                if body == key:
                    self._progress.update(lane_row, visible=False)

    def close(self) -> None:
        self._progress.stop()

    def _update_total(self) -> None:
        if self._total is None:
            return
        sizes = list(self._sizes.values())
        known = len(sizes) == self._requests and all(s is not None for s in sizes)
        total = sum(s or 0 for s in sizes) if known else None
        self._progress.update(self._total, total=total, completed=sum(self._done.values()))
