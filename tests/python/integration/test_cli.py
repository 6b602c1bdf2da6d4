"""`lanefetch fetch` run as a subprocess against scripted servers on 127.0.0.1: the --json report, byte-exact
--out files, exit status with a one-line reason, and --no-pipeline / --connections / --depth seen from the
server's side."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from misbehaving_servers import ScriptedServer, content, well_behaved, wrong_length

REPO = Path(__file__).resolve().parents[3]
LANEFETCH = REPO / ".venv" / "bin" / "lanefetch"
TIMING_POINTS = {"queued", "dns_start", "dns_end", "connect_start", "connect_end", "tls_end", "sent", "first_byte",
                 "last_byte"}


async def run_cli(*args: str, timeout: float = 30) -> tuple[int, str, str]:
    argv = [str(LANEFETCH)] if LANEFETCH.exists() else [sys.executable, "-m", "lanefetch"]
    proc = await asyncio.create_subprocess_exec(
        *argv, "fetch", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def paths(n: int, prefix: str = "/r") -> list[str]:
    sizes = [2048, 200_000, 17, 65536, 1, 9000]
    return [f"{prefix}/f{i}/{sizes[i % len(sizes)]}" for i in range(n)]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


async def test_json_report() -> None:
    async with ScriptedServer(well_behaved(settle=0.02)) as srv:
        ps = paths(12)
        code, out, err = await run_cli("--json", "--connections", "1", *(srv.url(p) for p in ps))
        assert code == 0, err
        assert err == ""
        doc: dict[str, Any] = json.loads(out)
        assert {"elapsed_s", "connections", "max_concurrent_connections", "requests"} <= doc.keys()
        assert isinstance(doc["elapsed_s"], float) and doc["elapsed_s"] > 0
        assert doc["connections"] == 1 == len(srv.connections)
        assert doc["max_concurrent_connections"] == 1
        reqs = doc["requests"]
        assert [r["url"] for r in reqs] == [srv.url(p) for p in ps]
        for r, p in zip(reqs, ps, strict=True):
            assert r["status"] == 200 and r["error"] is None and r["bytes"] == len(content(p))
            assert r["wire_bytes"] >= r["bytes"] and r["retries"] == 0
            t = r["timing"]
            assert t.keys() >= TIMING_POINTS, t.keys()
            assert t["tls_end"] is None  # plain http
            assert t["queued"] <= t["sent"] <= t["first_byte"] <= t["last_byte"]
            conn = r["connection"]
            assert conn["remote_address"] == f"127.0.0.1:{srv.port}"
            assert conn["local_address"].startswith("127.0.0.1:")
            assert conn["local_address"] == f"127.0.0.1:{srv.connections[0].peer[1]}"
        # the first request opened the connection (it carries the connect timing), the others reused it
        first = reqs[0]
        assert first["connection"]["reused"] is False and first["timing"]["connect_start"] is not None
        assert first["timing"]["connect_start"] <= first["timing"]["connect_end"] <= first["timing"]["sent"]
        assert all(r["connection"]["reused"] for r in reqs[1:])
        # elapsed_s spans the batch: from before the first request was queued to after the last byte (same clock)
        span_ms = max(r["timing"]["last_byte"] for r in reqs) - min(r["timing"]["queued"] for r in reqs)
        assert span_ms <= doc["elapsed_s"] * 1000 + 0.01, (span_ms, doc["elapsed_s"])
        assert sorted(r["connection"]["pipeline_position"] for r in reqs) == list(range(1, 13))
        # pipelined by default: the server saw requests pile up, and the report says so
        assert srv.connections[0].max_outstanding >= 2
        assert max(r["connection"]["pipeline_depth"] for r in reqs) >= 2


async def test_text_output_and_success_exit() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, out, err = await run_cli(srv.url("/r/a/10"), srv.url("/r/b/20"))
        assert code == 0 and err == ""
        lines = out.strip().splitlines()
        assert len(lines) == 3 and "2 requests" in lines[-1]
        assert "200" in lines[0] and srv.url("/r/a/10") in lines[0]


async def test_out_writes_byte_exact_files(tmp_path: Path) -> None:
    async with ScriptedServer(well_behaved()) as srv:
        ps = [*paths(10), "/chunked/c/70000", "/other/dir/f3/65536", "/"]
        out_dir = tmp_path / "out"
        code, _, err = await run_cli("--out", str(out_dir), *(srv.url(p) for p in ps))
        assert code == 0, err
        files = {f.name: f.read_bytes() for f in out_dir.iterdir()}
        # every body is there, byte for byte; two URLs with one basename ("65536") both kept
        assert sorted(map(len, files.values())) == sorted(len(content(p)) for p in ps)
        assert sorted(files.values()) == sorted(content(p) for p in ps)
        assert files["70000"] == content("/chunked/c/70000")
        assert files["index.html"] == content("/")
        assert {"65536", "65536-2"} <= files.keys()


async def test_out_with_decode(tmp_path: Path) -> None:
    async with ScriptedServer(well_behaved()) as srv:
        ps = ["/enc/gzip/a/5000", "/enc/br/b/5001", "/enc/zstd/c/5002", "/enc/gzip+br/d/5003", "/enc/deflate/e/5004"]
        raw, dec = tmp_path / "raw", tmp_path / "dec"
        code, _, err = await run_cli("--out", str(raw), *(srv.url(p) for p in ps))
        assert code == 0, err
        code, _, err = await run_cli("--decode", "--out", str(dec), *(srv.url(p) for p in ps))
        assert code == 0, err
        for p in ps:
            name = p.rsplit("/", 1)[1]
            assert (dec / name).read_bytes() == content(p)
            assert (raw / name).read_bytes() != content(p)  # without --decode: the encoded bytes


async def test_failure_exit_status_and_one_line_reason(tmp_path: Path) -> None:
    port = closed_port()
    async with ScriptedServer(well_behaved()) as srv:
        good = srv.url("/r/good/5000")
        bad = f"http://127.0.0.1:{port}/r/bad/10"
        out_dir = tmp_path / "out"
        code, _, err = await run_cli("--out", str(out_dir), good, bad)
        assert code == 1
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert bad in lines[0] and "connect_failed" in lines[0] and "1 of 2" in lines[0], lines[0]
        assert (out_dir / "5000").read_bytes() == content("/r/good/5000")  # what worked is still delivered


async def test_failure_json_and_no_truncated_file(tmp_path: Path) -> None:
    ps = ["/r/a/3000", "/r/broken/50000", "/r/c/4000"]
    async with ScriptedServer(wrong_length("/r/broken/50000", +100)) as srv:
        out_dir = tmp_path / "out"
        code, out, err = await run_cli("--json", "--out", str(out_dir), *(srv.url(p) for p in ps))
        assert code == 1
        assert len(err.strip().splitlines()) == 1 and "connection_lost" in err, err
        doc = json.loads(out)
        by_url = {r["url"]: r for r in doc["requests"]}
        broken = by_url[srv.url("/r/broken/50000")]
        assert broken["error"]["code"] == "connection_lost" and broken["file"] is None
        assert not (out_dir / "50000").exists(), "a truncated body was left behind"
        assert (out_dir / "3000").read_bytes() == content("/r/a/3000")
        assert (out_dir / "4000").read_bytes() == content("/r/c/4000")


@pytest.mark.parametrize("url,code_name", [
    ("ftp://127.0.0.1/x", "bad_url"), ("file:///etc/hostname", "bad_url"), ("http://127.0.0.1:1/x", "connect_failed"),
])
async def test_failure_reasons(url: str, code_name: str) -> None:
    code, _, err = await run_cli(url)
    assert code == 1 and len(err.strip().splitlines()) == 1 and code_name in err, err


async def test_as_page_public_is_refused_before_connecting() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, _, err = await run_cli("--as-page", "public", srv.url("/r/a/10"))
        assert code == 1 and "blocked_address" in err and len(err.strip().splitlines()) == 1, err
        assert srv.connections == []


async def test_no_pipeline_one_request_per_connection_at_a_time() -> None:
    async with ScriptedServer(well_behaved(settle=0.03)) as srv:
        ps = paths(16)
        code, out, err = await run_cli("--json", "--no-pipeline", "--connections", "2", *(srv.url(p) for p in ps))
        assert code == 0, err
        doc = json.loads(out)
        assert len(srv.connections) <= 2 and doc["connections"] == len(srv.connections)
        for c in srv.connections:
            assert c.max_outstanding == 1, c.outstanding_at_answer
            assert all(r.unanswered_at_arrival == 0 for r in c.received)
        assert max(len(c.received) for c in srv.connections) > 1, "connections were not kept alive"
        assert all(r["connection"]["pipeline_depth"] == 1 for r in doc["requests"])
        assert sorted(r.path for r in srv.requests) == sorted(ps)


async def test_no_pipeline_six_connections_baseline() -> None:
    async with ScriptedServer(well_behaved(settle=0.03)) as srv:
        ps = paths(24)
        code, out, err = await run_cli("--json", "--no-pipeline", "--connections", "6", *(srv.url(p) for p in ps))
        assert code == 0, err
        doc = json.loads(out)
        assert 2 <= len(srv.connections) <= 6
        assert doc["max_concurrent_connections"] <= 6
        assert all(c.max_outstanding == 1 for c in srv.connections)


async def test_depth_limits_the_pipeline() -> None:
    async with ScriptedServer(well_behaved(settle=0.03)) as srv:
        code, _, err = await run_cli("--depth", "3", "--connections", "1", *(srv.url(p) for p in paths(20)))
        assert code == 0, err
        assert srv.connections[0].max_outstanding == 3, srv.connections[0].outstanding_at_answer


async def test_header_option_forwards_end_to_end_headers_only() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, _, err = await run_cli("--header", "X-Test: one two", "--header", "Connection: close",
                                     "--header", "Upgrade: h2c", srv.url("/r/a/10"))
        assert code == 0, err
        got = srv.requests[0]
        assert got.header("X-Test") == "one two"
        assert got.header("Upgrade") is None and got.header("Connection") is None


async def test_bad_arguments() -> None:
    code, _, err = await run_cli("--connections", "0", "http://127.0.0.1:1/")
    assert code == 2 and err.strip()
    code, _, err = await run_cli("--header", "no colon", "http://127.0.0.1:1/")
    assert code == 2 and "header" in err
