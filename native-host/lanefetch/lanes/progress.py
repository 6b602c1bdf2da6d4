"""A one-line progress bar for large downloads on a terminal (the CLI's stderr)."""

from __future__ import annotations

import time
from typing import TextIO

MIN_SIZE = 1024 * 1024  # smaller bodies are done before a bar would help


class ProgressBar:
    def __init__(self, stream: TextIO, label: str, total: int | None, interval: float = 0.1) -> None:
        self.stream, self.label, self.total, self.interval = stream, label[-40:], total, interval
        self.start = time.monotonic()
        self._last = 0.0
        self.done = 0

    def update(self, nbytes: int) -> None:
        self.done += nbytes
        t = time.monotonic()
        if t - self._last >= self.interval:
            self._last = t
            self._draw(t)

    def finish(self) -> None:
        self._draw(time.monotonic())
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self, t: float) -> None:
        rate = self.done / max(t - self.start, 1e-6)
        speed = f"{rate * 8 / 1e6:6.2f} Mbit/s"
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(frac * 30)
            text = f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}% {self.done / 1e6:8.2f} MB {speed}"
        else:
            text = f"\r{self.label} {self.done / 1e6:8.2f} MB {speed}"
        self.stream.write(text)
        self.stream.flush()
