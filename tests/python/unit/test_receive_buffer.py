"""Every connection starts with room to receive RECEIVE_ROOM in flight (transport.grow_receive_buffer): the kernel's
receive buffer is grown through the receive low-water mark, the mark is put back so reads return what has arrived,
and a socket whose mark cannot be put back is a connect failure of that address, closed, never used."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest
from lanefetch.engine import transport as transport_module
from lanefetch.engine.errors import FetchError
from lanefetch.engine.timing import ConnectTiming
from lanefetch.engine.transport import RECEIVE_ROOM, grow_receive_buffer, open_transport

pytestmark = pytest.mark.skipif(not hasattr(socket, "SO_RCVLOWAT"), reason="no SO_RCVLOWAT here")


def _receive_buffer(sock: socket.socket) -> int:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)


def _connected_pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname(), timeout=5)
    server, _ = listener.accept()
    return listener, client, server


def test_a_connection_gets_room_for_a_mib_and_still_reads_a_single_byte() -> None:
    listener, client, server = _connected_pair()
    try:
        before = _receive_buffer(client)
        assert before < RECEIVE_ROOM  # (else this test would show nothing: tcp_rmem's default is 128 KiB)
        grow_receive_buffer(client)
        assert _receive_buffer(client) >= RECEIVE_ROOM
        assert client.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == 1
        server.sendall(b"x")
        client.settimeout(5)  # a mark left at a MiB would make this read wait, then fail loudly
        assert client.recv(10) == b"x"
    finally:
        for sock in (client, server, listener):
            sock.close()


class _RefusingSocket(socket.socket):
    """A socket whose kernel refuses the receive low-water mark at `refuse_at` (the first setting or the reset)."""

    refuse_at = 0
    settings = 0

    def setsockopt(self, level: int, option: int, value: object, *rest: object) -> None:  # type: ignore[override]
        if level == socket.SOL_SOCKET and option == socket.SO_RCVLOWAT:
            self.settings += 1
            if self.settings == self.refuse_at:
                raise OSError(22, "Invalid argument")
        super().setsockopt(level, option, value, *rest)  # type: ignore[call-overload]


def test_a_kernel_that_refuses_growth_leaves_the_socket_as_it_was() -> None:
    sock = _RefusingSocket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.refuse_at = 1
        before = _receive_buffer(sock)
        grow_receive_buffer(sock)
        assert _receive_buffer(sock) == before
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == 1
    finally:
        sock.close()


def test_a_mark_that_cannot_be_put_back_is_raised() -> None:
    sock = _RefusingSocket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.refuse_at = 2
        with pytest.raises(OSError):
            grow_receive_buffer(sock)
    finally:
        sock.close()


async def test_an_address_whose_mark_sticks_fails_and_its_socket_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    grown: list[socket.socket] = []

    def stuck(sock: socket.socket) -> None:
        grown.append(sock)
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(transport_module, "grow_receive_buffer", stuck)
    before = len(os.listdir("/proc/self/fd"))
    try:
        with pytest.raises(FetchError) as failed:
            await open_transport([(socket.AF_INET, ("127.0.0.1", port))], server_hostname=None, tls=None,
                                 timing=ConnectTiming(), connect_timeout=5)
    finally:
        server.close()
        await server.wait_closed()
    assert failed.value.code == "connect_failed"
    assert f"127.0.0.1:{port}" in failed.value.message
    assert len(grown) == 1 and grown[0].fileno() == -1  # closed
    assert len(os.listdir("/proc/self/fd")) <= before
