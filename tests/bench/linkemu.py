"""Packet carrier between two TUN devices: a userspace link emulator (netem is absent from our kernel).

netlab opens two TUN devices (IFF_TUN | IFF_NO_PI), moves each into its namespace and starts this module as
a child process with both fds inherited::

    python linkemu.py --fd-a 3 --fd-b 4 --config '{"up": {...}, "down": {...}, ...}'

Side "a" is the client end, "b" the server end; "up" is a→b, "down" is b→a. Each direction is an
independent drop-tail queue in front of a serializer of ``rate_kbit`` followed by a fixed one-way
``delay_ms``: a packet arriving at t departs at ``max(t, last_departure) + size*8/rate`` and is
delivered ``delay_ms`` later. It is dropped when the bytes still waiting for serialization plus its own
size would exceed ``queue_bytes``, or at random with probability ``loss``.

Optional per-client extra delay ("client_delay"): each client address (source of a→b packets,
destination of b→a packets) gets one extra round-trip delay, looked up in ``table`` or drawn once from
a seeded distribution, applied half in each direction.

Protocol on stdio (the parent's pipe is also the lifeline: EOF on stdin stops the carrier):
  stdout: ``ready`` once both fds are being read; a JSON counters line answering ``stats`` on stdin;
  a final JSON counters line on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import ipaddress
import json
import math
import os
import random
import signal
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

MAX_PACKET = 65536
READ_BURST = 256  # packets drained per readiness callback before yielding to timers


@dataclass
class Counters:
    packets: int = 0
    bytes: int = 0
    dropped_queue: int = 0
    dropped_loss: int = 0
    ignored: int = 0  # non-IPv4 (the lab is IPv4 only)
    max_backlog_bytes: int = 0
    late_packets: int = 0  # delivered more than 2 ms after due: the carrier was starved of CPU


@dataclass
class Direction:
    name: str
    delay_s: float
    rate_bps: float | None  # bits per second; None = unlimited
    queue_bytes: int | None
    loss: float
    counters: Counters = field(default_factory=Counters)
    busy_until: float = 0.0  # when the serializer finishes the last accepted packet

    def admit(self, now: float, size: int, rng: random.Random) -> float | None:
        """Return the departure time of a packet arriving now, or None if it is dropped."""
        c = self.counters
        if self.loss and rng.random() < self.loss:
            c.dropped_loss += 1
            return None
        if self.rate_bps is None:
            return now
        backlog = max(0.0, self.busy_until - now) * self.rate_bps / 8
        if self.queue_bytes is not None and backlog + size > self.queue_bytes:
            c.dropped_queue += 1
            return None
        c.max_backlog_bytes = max(c.max_backlog_bytes, int(backlog) + size)
        self.busy_until = max(now, self.busy_until) + size * 8 / self.rate_bps
        return self.busy_until


class ClientDelays:
    """One extra round-trip delay (seconds) per client address, fixed on first sight."""

    def __init__(self, spec: dict[str, Any] | None) -> None:
        spec = spec or {}
        self._known: dict[bytes, float] = {
            ipaddress.IPv4Address(a).packed: ms / 1000 for a, ms in spec.get("table", {}).items()
        }
        self._dist: str | None = spec.get("dist")
        self._params: list[float] = list(spec.get("params", []))
        self._rng = random.Random(spec.get("seed", 0))
        self.enabled = bool(self._known or self._dist)

    def rtt_extra(self, addr: bytes) -> float:
        extra = self._known.get(addr)
        if extra is None:
            extra = self._draw() / 1000
            self._known[addr] = extra
        return extra

    def _draw(self) -> float:
        p = self._params
        if self._dist == "uniform":
            return self._rng.uniform(p[0], p[1])
        if self._dist == "lognormal":  # params: median ms, sigma
            return self._rng.lognormvariate(math.log(p[0]), p[1])
        if self._dist == "choice":
            return self._rng.choice(p)
        return 0.0

    def table(self) -> dict[str, float]:
        return {str(ipaddress.IPv4Address(a)): round(s * 1000, 3) for a, s in self._known.items()}


class Carrier:
    def __init__(self, fd_a: int, fd_b: int, config: dict[str, Any]) -> None:
        self.loop = asyncio.get_running_loop()
        self.fds = {"a": fd_a, "b": fd_b}
        self.up = _direction("up", config["up"])
        self.down = _direction("down", config["down"])
        self.client_delays = ClientDelays(config.get("client_delay"))
        self.rng = random.Random(config.get("seed", 1))
        # One heap of (deliver_at, seq, fd, packet) and one timer for its head: keeps FIFO order on ties.
        self._heap: list[tuple[float, int, int, bytes, Counters]] = []
        self._seq = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self.stopped = asyncio.Event()

    def start(self) -> None:
        for fd in self.fds.values():
            os.set_blocking(fd, False)
        self.loop.add_reader(self.fds["a"], self._on_readable, self.fds["a"], self.up, self.fds["b"])
        self.loop.add_reader(self.fds["b"], self._on_readable, self.fds["b"], self.down, self.fds["a"])

    def _on_readable(self, src: int, d: Direction, dst: int) -> None:
        for _ in range(READ_BURST):
            try:
                pkt = os.read(src, MAX_PACKET)
            except BlockingIOError:
                return
            except OSError:  # device gone (namespace deleted): nothing more to carry
                self.stopped.set()
                return
            self._carry(pkt, d, dst)

    def _carry(self, pkt: bytes, d: Direction, dst: int) -> None:
        if len(pkt) < 20 or pkt[0] >> 4 != 4:
            d.counters.ignored += 1
            return
        now = self.loop.time()
        depart = d.admit(now, len(pkt), self.rng)
        if depart is None:
            return
        d.counters.packets += 1
        d.counters.bytes += len(pkt)
        at = depart + d.delay_s
        if self.client_delays.enabled:
            client = pkt[12:16] if d is self.up else pkt[16:20]
            at += self.client_delays.rtt_extra(client) / 2
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, dst, pkt, d.counters))
        if at < self._timer_at:
            self._arm(at)

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = self.loop.call_at(at, self._deliver)

    def _deliver(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        # Timers fire up to ~1 ms late (epoll granularity); deliver everything due by then in order.
        horizon = self.loop.time() + 0.0002
        heap = self._heap
        late = horizon - 0.0022
        while heap and heap[0][0] <= horizon:
            at, _, fd, pkt, counters = heapq.heappop(heap)
            if at < late:
                counters.late_packets += 1
            try:  # noqa: SIM105 (hot path: a plain try is cheaper than contextlib.suppress)
                os.write(fd, pkt)
            except OSError:
                pass  # receiving device is down or gone: the packet is lost, as on a real link
        if heap:
            self._arm(heap[0][0])

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"up": asdict(self.up.counters), "down": asdict(self.down.counters)}
        if self.client_delays.enabled:
            out["client_delay_ms"] = self.client_delays.table()
        return out


def _direction(name: str, cfg: dict[str, Any]) -> Direction:
    rate = cfg.get("rate_kbit")
    return Direction(
        name=name,
        delay_s=cfg.get("delay_ms", 0.0) / 1000,
        rate_bps=rate * 1000.0 if rate else None,
        queue_bytes=cfg.get("queue_bytes"),
        loss=cfg.get("loss", 0.0),
    )


async def _serve(fd_a: int, fd_b: int, config: dict[str, Any]) -> None:
    carrier = Carrier(fd_a, fd_b, config)
    carrier.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, carrier.stopped.set)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def commands() -> None:
        while line := await reader.readline():
            if line.strip() == b"stats":
                _emit(json.dumps(carrier.stats()))
        carrier.stopped.set()  # parent closed the pipe (or died)

    task = asyncio.create_task(commands())
    _emit("ready")
    await carrier.stopped.wait()
    task.cancel()
    _emit(json.dumps(carrier.stats()))


def _emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fd-a", type=int, required=True)
    ap.add_argument("--fd-b", type=int, required=True)
    ap.add_argument("--config", required=True, help="JSON: {up: {...}, down: {...}, client_delay, seed}")
    args = ap.parse_args(argv)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -5)  # timing fidelity when the machine is busy
    asyncio.run(_serve(args.fd_a, args.fd_b, json.loads(args.config)))


if __name__ == "__main__":
    main()
