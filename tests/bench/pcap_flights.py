"""What limited each round trip of a download: the server's congestion window or the client's receive window, from
the pcaps `LANEFETCH_BENCH_PCAP=DIR` wrote (page_load.PageLab._capture, taken on the client's side):

    python -m bench.pcap_flights DIR [MIN_KB]     (from tests/; tcpdump reads the files)

Theory of operation. A TCP sender in slow start sends a flight per round trip: what its congestion window allows,
but never beyond the right edge of the receiver's window (the last ACK's number plus its advertised window, scaled
by the SYN's window-scale option). Seen from the client, a flight is a run of data packets from the server with no
gap longer than a third of the connection's round trip (its SYN → SYN-ACK). The window the server obeyed when it
sent a packet is the one the client advertised a round trip before that packet arrived (the ACK had to reach the
server, the data had to come back), so each flight is reported with the room that window left it: under one
full-sized segment, the flight was the client's receive window's (Linux grows that window as the application reads
what arrived, once per round trip: tcp_rcv_space_adjust), not the server's congestion window.

Per file, each connection that carried at least MIN_KB (default 100) kB down: per flight, its start (s after the
connection's SYN), bytes and packets, and the room left under the client's window ("rwnd" when under a segment)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(r"^(\d+\.\d+) .*?IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\]"
                   r"(?:, seq (\d+)(?::(\d+))?)?(?:, ack (\d+))?, win (\d+)(?:, options \[([^\]]*)\])?, length (\d+)")
_SERVER_PORTS = {80, 443, 8080, 8443}
MSS = 1448  # a full segment's payload with TCP timestamps (the lab's links: MTU 1500)


@dataclass(frozen=True)
class Packet:
    t: float
    up: bool  # client → server
    flags: str
    seq_end: int | None  # the sequence number after the payload (absolute: tcpdump -S), None without payload
    ack: int | None
    win: int  # as on the wire (unscaled)
    options: str
    payload: int


@dataclass
class Flight:
    start: float
    end: float
    bytes: int = 0
    packets: int = 0
    room: int | None = None  # the least, over its packets, of the client's window's right edge (as the server saw
    # it) less the packet's last byte; None before the client advertised any window a round trip earlier


@dataclass
class Connection:
    port: int  # the client's
    packets: list[Packet] = field(default_factory=list)

    def down(self) -> int:
        return sum(p.payload for p in self.packets if not p.up)


def parse(text: str) -> dict[int, Connection]:
    """`tcpdump -n -tt -S` lines into connections by the client's port."""
    conns: dict[int, Connection] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        t, _src, sport, _dst, dport, flags, _s1, s2, ack, win, options, length = m.groups()
        up = int(dport) in _SERVER_PORTS
        if not up and int(sport) not in _SERVER_PORTS:
            continue
        port = int(sport) if up else int(dport)
        conns.setdefault(port, Connection(port)).packets.append(Packet(
            float(t), up, flags, int(s2) if s2 else None, int(ack) if ack else None, int(win), options or "",
            int(length)))
    return conns


def flights(conn: Connection) -> tuple[float | None, list[Flight]]:
    """The connection's round trip (SYN → SYN-ACK; None if the capture missed it) and its downstream flights."""
    syn = next((p for p in conn.packets if p.up and p.flags == "S"), None)
    syn_ack = next((p for p in conn.packets if not p.up and p.flags == "S."), None)
    if syn is None or syn_ack is None:
        return None, []
    rtt = syn_ack.t - syn.t
    scale = int(m.group(1)) if (m := re.search(r"wscale (\d+)", syn.options)) else 0
    # The right edges the client advertised (ack + scaled window), in the order it sent them (a capture's order).
    edges = [(p.t, p.ack + (p.win << scale)) for p in conn.packets if p.up and p.ack is not None and p.flags != "S"]
    # edges[:seen] were sent a round trip or more before the packet at hand; edge: the right-most of them
    seen = 0
    edge: int | None = None
    out: list[Flight] = []
    for p in conn.packets:
        if p.up or not p.payload or p.seq_end is None:
            continue
        while seen < len(edges) and edges[seen][0] <= p.t - rtt:
            edge = edges[seen][1] if edge is None else max(edge, edges[seen][1])
            seen += 1
        if not out or p.t - out[-1].end > rtt / 3:
            out.append(Flight(p.t, p.t))
        f = out[-1]
        f.end, f.bytes, f.packets = p.t, f.bytes + p.payload, f.packets + 1
        if edge is not None:
            f.room = edge - p.seq_end if f.room is None else min(f.room, edge - p.seq_end)
    return rtt, out


def main(argv: list[str]) -> int:
    least = int(argv[1]) * 1000 if len(argv) > 1 else 100_000
    for pcap in sorted(Path(argv[0]).glob("*.pcap")):
        text = subprocess.run(["tcpdump", "-r", str(pcap), "-n", "-tt", "-S"], capture_output=True, text=True,
                              check=True).stdout
        for conn in parse(text).values():
            if conn.down() < least:
                continue
            rtt, fs = flights(conn)
            print(f"{pcap.name} port {conn.port}: {conn.down()} B down, round trip "
                  f"{'?' if rtt is None else f'{rtt * 1000:.0f} ms'}")
            t0 = next((p.t for p in conn.packets if p.up and p.flags == "S"), conn.packets[0].t)
            for f in fs:
                room = "?" if f.room is None else ("rwnd" if f.room < MSS else f"{f.room}")
                print(f"  {f.start - t0:7.3f} s  {f.bytes:>8} B  {f.packets:>4} pkts  room {room}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
