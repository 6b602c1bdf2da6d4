"""Pure helpers of the benchmarks and the demo: exact-size PNGs that decode, counting the connections a
server holds from /proc/net/tcp, the best possible time of a body over fresh links, and which window limited each
round trip of a captured download."""

from __future__ import annotations

import struct
import zlib

import pytest
from bench import png, report
from bench.cli_fetch import IP_OVERHEAD, best_possible
from bench.netlab import LINK_SETS, LinkProfile
from bench.pcap_flights import MSS, flights, parse
from bench.server_connections import held


def _decode(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw scanlines; checks signature, chunk CRCs and IEND."""
    assert data.startswith(png.SIGNATURE)
    pos, idat, size = len(png.SIGNATURE), b"", (0, 0)
    while True:
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        pos += 12 + n
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            assert pos == len(data)
            return size[0], size[1], zlib.decompress(idat)


@pytest.mark.parametrize("size", [300, 1200, 1229, 2000, 2048, 6200])
def test_noise_png_has_exact_size_and_decodes(size: int) -> None:
    data, side = png.noise(size, seed=size)
    assert len(data) == size
    w, h, raw = _decode(data)
    assert (w, h) == (side, side) and len(raw) == h * (1 + 3 * w)


def test_encode_rejects_bad_rows_and_padding() -> None:
    with pytest.raises(ValueError):
        png.encode(2, 1, [b"\x00" * 5])
    with pytest.raises(ValueError):
        png.encode(1, 1, [b"\x00" * 3], padding=5)


TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0200E70A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0
   1: 0200E70A:0050 0AFAE70A:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4
   2: 0200E70A:0050 0BFAE70A:A1B3 08 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4
   3: 0200E70A:0050 0CFAE70A:A1B4 06 00000000:00000000 00:00000000 00000000     0        0 0 3 0 0 0
   4: 0200E70A:1F90 0DFAE70A:A1B5 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4
   5: 0AFAE70A:0050 0200E70A:0050 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0 20 4
"""


def test_held_counts_established_and_close_wait_on_the_port() -> None:
    # listen, TIME_WAIT, another local port are not held; row 5 is local port 80 too (a client bound to :80)
    assert held(80, TCP) == 3
    assert held(8080, TCP) == 1
    assert held(443, TCP) == 0


def test_best_possible_over_fresh_links() -> None:
    lane = LINK_SETS["2x5mbit"][0]  # 5 Mbit/s, 100 ms
    rate = 5e6 / 8
    # a body inside the initial window: handshake + request round trip + its serialization
    assert best_possible(1_000, [lane]) == pytest.approx(0.2 + 1_000 * IP_OVERHEAD / rate, abs=1e-6)
    # slow start: 14,480 + 28,960 + 57,920 B in the first three round trips, then the full rate
    one = best_possible(1_000_000, [lane])
    ramp = 3 * 0.1 - (14_480 + 28_960 + 57_920) / rate
    assert one == pytest.approx(0.2 + 1_000_000 * IP_OVERHEAD / rate + ramp, abs=1e-6)
    two, three = best_possible(1_000_000, [lane] * 2), best_possible(1_000_000, [lane] * 3)
    assert two == pytest.approx(0.2 + 1_000_000 * IP_OVERHEAD / (2 * rate) + ramp, abs=1e-6)
    assert 1.7 < one / two < 1.72 and 2.2 < one / three < 2.3  # the links cannot give 1.95× / 2.9× on 1 MB
    # unequal links end together: the faster one starts earlier and carries more
    fast, slow = LinkProfile(rtt_ms=80, down_kbit=10_000), LinkProfile(rtt_ms=120, down_kbit=5_000)
    both = best_possible(10_000_000, [fast, slow])
    assert best_possible(10_000_000, [fast]) > both > 10_000_000 * IP_OVERHEAD / (15e6 / 8)


def test_ratio_interval_brackets_the_ratio_and_narrows_with_runs() -> None:
    off, on = [1.0, 1.1, 0.9, 1.05, 0.95], [0.5, 0.55, 0.45, 0.52, 0.48]
    lo, hi = report.ratio_interval(off, on)
    assert lo <= report.median(off) / report.median(on) <= hi
    assert lo > 1.6 and hi < 2.5
    assert report.ratio_interval(off, on) == (lo, hi), "seeded: the same report for the same runs"
    wide = report.ratio_interval([1.0, 2.0, 0.5], [1.0, 0.6, 1.7])
    narrow = report.ratio_interval([1.0, 2.0, 0.5] * 10, [1.0, 0.6, 1.7] * 10)
    assert wide[1] - wide[0] > narrow[1] - narrow[0]
    assert report.ratio_interval([2.0], [1.0]) == (2.0, 2.0)
    with pytest.raises(ValueError):
        report.ratio_interval([], [1.0])


_STAMP = "2026-11-29 21:50:01,100 lanefetch-host[42]"
_OPEN = "open: dns 0-0, tcp 0-601, tls end 1203, alpn h2"
_TIMES = "pos None/None, queued 1 sent 2 first 3 last 4 ms, 900 B on the wire, 0 retries"
HELPER_LOG = "".join(f"{_STAMP} {line}\n" for line in [
    "WARNING LANEFETCH_TEST_UPSTREAM_CA_FILE is set: origins are verified against /tmp/ca.pem only",
    f"DEBUG conn 1 to https://10.231.1.2:443 {_OPEN}",
    f"DEBUG conn 2 to https://10.9.9.9:443 {_OPEN}",
    f"DEBUG https://10.231.1.2/p/index.html: conn 1 {_TIMES}",
    f"DEBUG https://10.231.1.2/p/a.css?v=2: conn 1 {_TIMES}",
    f"DEBUG https://10.9.9.9/p/a.css: conn 2 {_TIMES}",
    # Failed (the origin's certificate refused): nothing sent; the browser fetched it itself.
    "DEBUG https://10.231.1.2/p/b.js: conn None pos None/None, queued 1 sent None first None last None ms, "
    "0 B on the wire, 0 retries",
    "DEBUG CONNECT 10.231.1.2:443 tunnelled: the origin speaks HTTP/2",
    "DEBUG CONNECT 10.231.1.2:443 tunnelled: the origin speaks HTTP/2",
    "DEBUG CONNECT 10.9.9.9:443 tunnelled: the origin speaks HTTP/2",
])


def test_helper_log_names_what_the_helper_fetched_and_its_connections() -> None:
    from bench import helper_log

    urls = helper_log.fetched(HELPER_LOG)
    assert urls == ["https://10.231.1.2/p/index.html", "https://10.231.1.2/p/a.css?v=2", "https://10.9.9.9/p/a.css"]
    assert helper_log.opened(HELPER_LOG, "10.231.1.2") == ["h2"]
    assert helper_log.opened("", "10.231.1.2") == []
    assert helper_log.tunnelled_h2(HELPER_LOG, "10.231.1.2") == 2 and helper_log.tunnelled_h2("", "10.231.1.2") == 0


def test_what_the_server_answered_that_the_helper_did_not_fetch() -> None:
    from bench import helper_log

    urls = helper_log.fetched(HELPER_LOG)
    assert helper_log.not_fetched(["/p/index.html", "/p/a.css?v=2"], urls, "10.231.1.2") == []
    # Asked twice of the server, fetched once by the helper; another host's fetch accounts for nothing here.
    assert helper_log.not_fetched(["/p/index.html", "/p/a.css?v=2", "/p/a.css?v=2", "/p/a.css", "/favicon.ico"],
                                  urls, "10.231.1.2") == ["/favicon.ico", "/p/a.css", "/p/a.css?v=2"]
    assert helper_log.not_fetched(["/p/index.html"], [], "10.231.1.2") == ["/p/index.html"]
    assert helper_log.not_fetched(["/p/b.js"], urls, "10.231.1.2") == ["/p/b.js"], "a failed request is not fetched"


def _tcp(t: float, up: bool, flags: str, *, seq: tuple[int, int] | None = None, ack: int | None = None,
         win: int = 0, options: str = "nop", length: int = 0) -> str:
    """One line as `tcpdump -n -tt -S -i any` prints it (client 10.0.0.1:40000, server 10.0.0.2:443)."""
    ends = ("10.0.0.1.40000", "10.0.0.2.443") if up else ("10.0.0.2.443", "10.0.0.1.40000")
    parts = [f"{t:.6f} ?     {'Out' if up else 'In '} IP {ends[0]} > {ends[1]}: Flags [{flags}]"]
    if seq is not None:
        parts.append(f"seq {seq[0]}:{seq[1]}" if seq[1] != seq[0] else f"seq {seq[0]}")
    if ack is not None:
        parts.append(f"ack {ack}")
    parts += [f"win {win}", f"options [{options}]", f"length {length}"]
    return ", ".join(parts)


def test_flights_split_by_gaps_and_say_when_the_clients_window_was_what_limited_them() -> None:
    # Round trip 0.1 s, window scale 4: the client's advertised windows are 16 × the field.
    lines = [
        _tcp(0.000, True, "S", seq=(1000, 1000), win=64240, options="mss 1460,nop,wscale 4"),
        _tcp(0.100, False, "S.", seq=(5000, 5000), ack=1001, win=65160, options="mss 1460,nop,wscale 7"),
        _tcp(0.100, True, ".", ack=5001, win=1000),  # right edge 5001 + 16000 = 21001
        _tcp(0.101, True, "P.", seq=(1001, 1101), ack=5001, win=1000, length=100),
        # A flight of two segments, a round trip after the edge above was sent: 13104 B of room left.
        _tcp(0.250, False, ".", seq=(5001, 5001 + MSS), ack=1101, win=64, length=MSS),
        _tcp(0.251, False, "P.", seq=(5001 + MSS, 5001 + 2 * MSS), ack=1101, win=64, length=MSS),
        _tcp(0.252, True, ".", ack=5001 + 2 * MSS, win=500),  # a lower edge (7897 + 8000): the higher one stands
        # 0.149 s later (more than a third of the round trip): the next flight, up to the edge but 104 B.
        _tcp(0.400, False, "P.", seq=(5001 + 2 * MSS, 20897), ack=1101, win=64, length=20897 - 5001 - 2 * MSS),
    ]
    conns = parse("\n".join([*lines, "a line tcpdump printed that is no packet"]))
    assert list(conns) == [40000]
    rtt, fs = flights(conns[40000])
    assert rtt == pytest.approx(0.1)
    assert [(f.packets, f.bytes) for f in fs] == [(2, 2 * MSS), (1, 20897 - 5001 - 2 * MSS)]
    assert fs[0].room == 21001 - (5001 + 2 * MSS)
    assert fs[1].room == 104  # under a segment: the client's window, not the server's, ended this flight


def test_flights_of_a_capture_that_missed_the_handshake_are_not_guessed() -> None:
    conns = parse(_tcp(0.5, False, "P.", seq=(1, 101), ack=1, win=64, length=100))
    assert flights(conns[40000]) == (None, [])
