"""A bounded wait for a condition in the tests' event loop: polls every 10 ms and fails loudly (AssertionError
naming what never happened) once `seconds` have passed, so no test waits forever and none asserts on a clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(check: Callable[[], bool], what: str, *, seconds: float = 10.0,
                seen: Callable[[], object] | None = None) -> None:
    for _ in range(max(1, round(seconds / 0.01))):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"waited {seconds:g} s for {what}" + (f"; seen: {seen()!r}" if seen is not None else ""))
