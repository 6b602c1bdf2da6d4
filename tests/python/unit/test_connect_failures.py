"""A socket that cannot be made for one address (no such address family here, the helper at its file limit) is a
connect failure of that address (transport.open_transport): the next address is tried, the error names each
failure if none answers, and no socket is left open."""

from __future__ import annotations

import asyncio
import os
import resource
import socket

import pytest
from lanefetch.engine.errors import FetchError
from lanefetch.engine.timing import ConnectTiming
from lanefetch.engine.transport import open_transport

NO_SUCH_FAMILY = 250  # no address family of Linux: socket() says EAFNOSUPPORT, as for AF_INET6 with IPv6 off


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) - 1  # (less the one listing them)


async def _listener() -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_an_unsupported_family_is_passed_over_for_the_next_address() -> None:
    server, port = await _listener()
    try:
        transport = await open_transport([(NO_SUCH_FAMILY, ("::1", port, 0, 0)), (socket.AF_INET, ("127.0.0.1", port))],
                                         server_hostname=None, tls=None, timing=ConnectTiming(), connect_timeout=5)
        assert transport.remote_address == f"127.0.0.1:{port}"
        transport.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_every_address_failing_is_named_and_leaks_no_socket() -> None:
    before = _open_fds()
    with pytest.raises(FetchError) as failed:
        await open_transport([(NO_SUCH_FAMILY, ("::1", 9, 0, 0)), (NO_SUCH_FAMILY, ("::2", 9, 0, 0))],
                             server_hostname=None, tls=None, timing=ConnectTiming(), connect_timeout=5)
    assert failed.value.code == "connect_failed"
    assert "[::1]:9" in failed.value.message and "[::2]:9" in failed.value.message
    assert "address family is not supported" in failed.value.message
    assert _open_fds() == before


async def test_the_file_limit_reached_is_a_connect_failure_named_as_such() -> None:
    server, port = await _listener()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = _open_fds()
    try:
        lowest_free = os.dup(0)
        os.close(lowest_free)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))  # a new descriptor is over the limit
        with pytest.raises(FetchError) as failed:
            await open_transport([(socket.AF_INET, ("127.0.0.1", port))], server_hostname=None, tls=None,
                                 timing=ConnectTiming(), connect_timeout=5)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        server.close()
        await server.wait_closed()
    assert failed.value.code == "connect_failed"
    assert "too many open files" in failed.value.message
    assert _open_fds() <= before
