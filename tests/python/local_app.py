"""An aiohttp application served on 127.0.0.1 (ephemeral port) for the duration of a test."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serve_app(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """Yields the port; the server and its connections are gone when the block ends."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()
