"""Do nginx and Apache honour HTTP/2 priorities, and which kind? A measurement, not a test (nothing is asserted).

    python -m bench.h2_priority            (from tests/, with tests/python on PYTHONPATH; root: the lab)

Each server (TLS + h2 on loopback, throwaway CA) gets, on one fresh h2 connection, N_LOW requests for 2 MiB files
and then ONE request for another 2 MiB file marked urgent, all in one write once both sides' SETTINGS are
exchanged; client windows are 2 GiB, so the server alone decides the order of the DATA frames. What is printed is
where in the received byte stream the urgent response completed (MiB received by then, of the total) and where the
others did on average. Last of N_LOW + 1 means priority was ignored; about 2 MiB means the server sent it first.

Variants: `none` (no signal), `rfc9218` (`priority: u=0` on the urgent request, `u=7` on the others, and
SETTINGS_NO_RFC7540_PRIORITIES = 1), `priority_update` (the same urgencies as RFC 9218 PRIORITY_UPDATE frames
sent before the HEADERS, no header), `tree` (RFC 7540 priority in HEADERS: the urgent stream exclusive on stream 0
with weight 256, the others weight 1), `tree_weights` (the same weights, all siblings: no exclusive flag)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import tempfile
from pathlib import Path
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, StreamEnded
from h2.settings import SettingCodes, Settings

N_LOW = 10
ROUNDS = 5  # per server and variant: the median (min–max) is printed
SIZE = 2 * 1024 * 1024
VARIANTS = ("none", "rfc9218", "priority_update", "tree", "tree_weights")
_NO_RFC7540_PRIORITIES = 0x9
_PRIORITY_UPDATE = 0x10


def _priority_update(stream_id: int, value: str) -> bytes:
    payload = stream_id.to_bytes(4, "big") + value.encode()
    return len(payload).to_bytes(3, "big") + bytes([_PRIORITY_UPDATE, 0]) + (0).to_bytes(4, "big") + payload


def probe(port: int, ca: Path, variant: str) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=20), server_hostname="localhost")
    assert sock.selected_alpn_protocol() == "h2"
    c = H2Connection(H2Configuration(client_side=True, header_encoding=None))
    settings: dict[int, int] = {SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1, SettingCodes.ENABLE_PUSH: 0}
    if variant in ("rfc9218", "priority_update"):
        settings[_NO_RFC7540_PRIORITIES] = 1
    # All in the FIRST SETTINGS frame: RFC 9218 §2.1 forbids changing NO_RFC7540_PRIORITIES later (Apache's
    # nghttp2 closes the connection if a second SETTINGS frame carries it).
    c.local_settings = Settings(client=True, initial_values=settings)
    c.initiate_connection()
    c.increment_flow_control_window(2**31 - 1 - 65535)
    sock.sendall(c.data_to_send())
    # Wait for the server's SETTINGS and its ACK of ours, so every window is in force before the requests.
    while c.local_settings.initial_window_size != 2**31 - 1:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection before acknowledging our SETTINGS")
        c.receive_data(data)
        sock.sendall(c.data_to_send())
    paths = [f"/low{i}.bin" for i in range(N_LOW)] + ["/urgent.bin"]
    streams: dict[int, str] = {}
    prefix = b""
    for path in paths:
        sid = c.get_next_available_stream_id()
        streams[sid] = path
        urgent = path == "/urgent.bin"
        headers = [(":method", "GET"), (":scheme", "https"), (":authority", f"localhost:{port}"), (":path", path)]
        kw: dict[str, Any] = {}
        if variant == "rfc9218":
            headers.append(("priority", "u=0" if urgent else "u=7"))
        elif variant == "priority_update":
            prefix += _priority_update(sid, "u=0" if urgent else "u=7")
        elif variant == "tree":
            kw = {"priority_weight": 256, "priority_depends_on": 0, "priority_exclusive": True} if urgent else {
                "priority_weight": 1, "priority_depends_on": 0, "priority_exclusive": False}
        elif variant == "tree_weights":  # weights alone, all streams siblings on stream 0 (what the session sends)
            kw = {"priority_weight": 256 if urgent else 1, "priority_depends_on": 0, "priority_exclusive": False}
        c.send_headers(sid, headers, end_stream=True, **kw)
    sock.sendall(prefix + c.data_to_send())
    received = 0
    done: dict[str, float] = {}
    while len(done) < len(paths):
        data = sock.recv(262144)
        if not data:
            break
        for ev in c.receive_data(data):
            if isinstance(ev, DataReceived):
                received += len(ev.data or b"")
            elif isinstance(ev, StreamEnded) and ev.stream_id in streams:
                done[streams[ev.stream_id]] = received / 2**20
        sock.sendall(c.data_to_send())
    sock.close()
    lows = [v for k, v in done.items() if k != "/urgent.bin"]
    rank = sorted(done, key=lambda k: done[k]).index("/urgent.bin") + 1 if "/urgent.bin" in done else None
    return {"urgent_mib": done.get("/urgent.bin"), "low_mean_mib": sum(lows) / max(1, len(lows)),
            "total_mib": received / 2**20, "urgent_rank": rank}


async def _engine_probe(port: int, ca: Path, weights: bool) -> dict[str, Any]:
    """The same shape fetched by lanefetch's engine: 10 images then one stylesheet, one batch. Where in the bytes
    the sink received did the stylesheet complete? weights=False sends every stream the default weight (16)."""
    from lanefetch.engine import Engine, EngineConfig, FetchRequest, Page, h2_session

    received = 0
    done: dict[str, float] = {}

    class Sink:
        async def head(self, r: Any, h: Any) -> None: ...
        async def body(self, r: Any, d: bytes) -> None:
            nonlocal received
            received += len(d)
        async def end(self, r: Any, n: int, t: Any) -> None:
            done[r.id] = received / 2**20
        async def error(self, r: Any, e: Any) -> None: ...
        async def timing(self, r: Any, t: Any) -> None: ...

    saved = h2_session.tree_weight
    if not weights:
        h2_session.tree_weight = lambda urgency: 16  # type: ignore[assignment]
    engine = Engine(EngineConfig(ca_file=str(ca)))
    try:
        base = f"https://localhost:{port}"
        reqs = [FetchRequest(f"low{i}", "GET", f"{base}/low{i}.bin", resource_type="image") for i in range(N_LOW)]
        reqs.append(FetchRequest("css", "GET", f"{base}/urgent.bin", resource_type="stylesheet"))
        # The images first, in a batch of their own: they are on the wire before the stylesheet is asked for, as
        # on a page whose stylesheet is found late; the server then chooses between streams it already has.
        first = asyncio.ensure_future(engine.fetch(reqs[:-1], Sink(), Page(address_space="loopback")))
        for _ in range(2000):  # bounded (20 s): until the images' first bytes arrive, so their streams are open
            if received or first.done():
                break
            await asyncio.sleep(0.01)
        await engine.fetch(reqs[-1:], Sink(), Page(address_space="loopback"))
        await first
    finally:
        await engine.aclose()
        h2_session.tree_weight = saved
    rank = sorted(done, key=lambda k: done[k]).index("css") + 1
    return {"urgent_mib": done["css"], "urgent_rank": rank,
            "low_mean_mib": sum(v for k, v in done.items() if k != "css") / N_LOW}


def _spread(xs: list[float], fmt: str = ".1f") -> str:
    xs = sorted(xs)
    return f"{xs[len(xs) // 2]:{fmt}} ({xs[0]:{fmt}}–{xs[-1]:{fmt}})"


def run() -> str:
    from tls_pki import make_test_pki

    from bench.netlab import Lab
    from bench.servers import start_apache, start_nginx

    lines = [f"{N_LOW} × 2 MiB requested u=7/weight 1, then 1 × 2 MiB urgent (u=0 / exclusive weight 256); "
             "where the urgent one completed in the 22 MiB received, median (min–max) of "
             f"{ROUNDS} connections:", "",
             "| server | variant | urgent done at (MiB) | its rank of 11 | others' mean (MiB) |",
             "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as d, Lab() as lab:
        pki = make_test_pki(Path(d), "lanefetch priority probe CA")
        root = Path(d) / "www"
        root.mkdir()
        for i in range(N_LOW):
            (root / f"low{i}.bin").write_bytes(bytes([i]) * SIZE)
        (root / "urgent.bin").write_bytes(b"u" * SIZE)
        for kind, start in (("nginx", start_nginx), ("apache", start_apache)):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            srv = start(lab.root, root, "127.0.0.1", port, tls=(pki / "srv.pem", pki / "srv.key"), http2=True)
            for variant in [*VARIANTS, "engine: weights", "engine: no weights"]:
                if variant.startswith("engine"):
                    rs = [asyncio.run(_engine_probe(port, pki / "ca.pem", variant == "engine: weights"))
                          for _ in range(ROUNDS)]
                else:
                    rs = [probe(port, pki / "ca.pem", variant) for _ in range(ROUNDS)]
                lines.append(f"| {kind} | {variant} | {_spread([r['urgent_mib'] for r in rs])} | "
                             f"{_spread([r['urgent_rank'] for r in rs], '.0f')} | "
                             f"{_spread([r['low_mean_mib'] for r in rs])} |")
            srv.stop()
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
