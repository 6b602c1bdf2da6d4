"""bridge/host.py's _BatchSink: what one batch's requests say to the browser, in the protocol's order per id."""

from __future__ import annotations

import asyncio
from typing import Any

from lanefetch.bridge.host import BODY_CHUNK, _BatchSink
from lanefetch.engine import FetchError, FetchRequest


async def test_a_request_answered_while_its_body_is_sent_in_pieces_gets_no_more_of_it() -> None:
    """A piece larger than one message goes out as several; a cancel that answers the request between two of them
    (the browser reads slowly: the port's lock is held) ends it. Nothing of its body may follow its error: once the
    batch is done the id is free again, and a late piece would reach the browser's next request of that id."""
    lock = asyncio.Lock()  # the host's send: one message at a time
    sent: list[dict[str, Any]] = []
    first_out, browser_reads = asyncio.Event(), asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        async with lock:
            sent.append(message)
            if message["type"] == "body" and not first_out.is_set():
                first_out.set()
                await browser_reads.wait()  # the port drains slowly

    sink = _BatchSink(send)
    request = FetchRequest(id="r1", method="GET", url="http://127.0.0.1/", headers=[])
    body = asyncio.create_task(sink.body(request, b"x" * (3 * BODY_CHUNK)))
    await asyncio.wait_for(first_out.wait(), 10)
    cancel = asyncio.create_task(sink.error(request, FetchError("cancelled", "cancelled by the caller")))
    for _ in range(100):  # the error is waiting for the port
        if "r1" in sink.answered:
            break
        await asyncio.sleep(0)
    assert "r1" in sink.answered
    browser_reads.set()
    await asyncio.wait_for(asyncio.gather(body, cancel), 10)
    kinds = [m["type"] for m in sent if m.get("id") == "r1"]
    assert kinds[-1] == "error", kinds
