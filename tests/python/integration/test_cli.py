"""`lanefetch fetch` run as a subprocess against scripted servers on 127.0.0.1: the --json report, byte-exact
--out files, exit status with a one-line reason, and --no-pipeline / --connections / --depth seen from the
server's side."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import signal
import socket
import struct
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
from misbehaving_servers import (
    Scenario,
    ScriptedServer,
    ServerConn,
    content,
    held,
    ordinary,
    response,
    well_behaved,
    wrong_length,
)

REPO = Path(__file__).resolve().parents[3]
LANEFETCH = REPO / ".venv" / "bin" / "lanefetch"
TIMING_POINTS = {"queued", "dns_start", "dns_end", "connect_start", "connect_end", "tls_end", "sent", "first_byte",
                 "last_byte"}


async def run_lanefetch(*args: str, timeout: float = 30, tty: str | None = None, stdout: int | None = None,
                        env: dict[str, str] | None = None, cwd: Path = REPO) -> tuple[int, bytes, bytes]:
    """The CLI's exit status, stdout and stderr. tty="stdout" or "stderr": that stream is a terminal (a pty of
    120 columns), whose bytes are returned in its place; "both": both are that terminal, whose bytes are returned
    as stdout; stdout: a file descriptor to give it instead."""
    argv = [str(LANEFETCH)] if LANEFETCH.exists() else [sys.executable, "-m", "lanefetch"]
    master = slave = None
    if tty is not None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**(env or os.environ), "TERM": "xterm-256color", "COLUMNS": "120"}
    pipe = asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(
        *argv, *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=slave if tty in ("stdout", "both") else pipe if stdout is None else stdout,
        stderr=slave if tty in ("stderr", "both") else pipe,
    )
    terminal = b""
    try:
        if slave is not None:
            os.close(slave)  # the child's copy is the last: reading the pty ends when the child is gone
        reading = asyncio.create_task(asyncio.to_thread(_read_pty, master)) if master is not None else None
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        if reading is not None:
            terminal = await asyncio.wait_for(reading, timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    finally:
        if master is not None:
            os.close(master)
    assert proc.returncode is not None
    if tty in ("stdout", "both"):
        out = terminal
    elif tty == "stderr":
        err = terminal
    return proc.returncode, out or b"", err or b""


def _read_pty(fd: int) -> bytes:
    data = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


async def run_cli(*args: str, timeout: float = 30, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    code, out, err = await run_lanefetch("fetch", *args, timeout=timeout, env=env)
    return code, out.decode(errors="replace"), err.decode()


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


async def test_text_output_and_success_exit(tmp_path: Path) -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, out, err = await run_cli("--out", str(tmp_path), srv.url("/r/a/10"), srv.url("/r/b/20"))
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


async def test_output_file_and_remote_name_like_curl(tmp_path: Path) -> None:
    """-o FILE: the one body into FILE (- is standard output); -O: each body into the current directory under its
    URL's basename; -o with several URLs, or two ways at once, is refused with the subcommand's usage."""
    async with ScriptedServer(well_behaved()) as srv:
        target = tmp_path / "sub" / "page.bin"
        target.parent.mkdir()
        code, _, err = await run_cli("-o", str(target), srv.url("/r/a/70000"))
        assert code == 0, err
        assert target.read_bytes() == content("/r/a/70000") and sorted(target.parent.iterdir()) == [target]
        code, out, err = await run_lanefetch("fetch", "-o", "-", srv.url("/r/b/3000"))
        assert code == 0 and out == content("/r/b/3000"), err
        here = tmp_path / "here"
        here.mkdir()
        code, _, err = await run_lanefetch("fetch", "-O", srv.url("/r/c/2048"), srv.url("/r/d/17"), cwd=here)
        assert code == 0, err
        assert {f.name: f.read_bytes() for f in here.iterdir()} == {"2048": content("/r/c/2048"),
                                                                    "17": content("/r/d/17")}
        for bad in (["-o", str(tmp_path / "x"), srv.url("/r/e/1"), srv.url("/r/f/1")],
                    ["-O", "--out", str(tmp_path), srv.url("/r/e/1")]):
            code, _, err = await run_cli(*bad)
            assert code == 2 and err.startswith("usage: lanefetch fetch"), err
            assert "-o FILE" in err.splitlines()[-1], err


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
        code, _, err = await run_cli("--json", "--depth", "3", "--connections", "1", *(srv.url(p) for p in paths(20)))
        assert code == 0, err
        assert srv.connections[0].max_outstanding == 3, srv.connections[0].outstanding_at_answer


async def test_header_option_forwards_end_to_end_headers_only() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, _, err = await run_cli("--header", "X-Test: one two", "--header", "Connection: close",
                                     "--header", "Upgrade: h2c", "--json", srv.url("/r/a/10"))
        assert code == 0, err
        got = srv.requests[0]
        assert got.header("X-Test") == "one two"
        assert got.header("Upgrade") is None and got.header("Connection") is None


async def test_bad_arguments() -> None:
    code, _, err = await run_cli("--connections", "0", "http://127.0.0.1:1/")
    assert code == 2 and err.strip()
    for n in ("0", "-3"):  # taken as 1 by the engine, silently: refused as --connections is
        code, _, err = await run_cli("--h2-connections", n, "http://127.0.0.1:1/")
        assert code == 2 and "--h2-connections" in err, err
    code, _, err = await run_cli("--header", "no colon", "http://127.0.0.1:1/")
    assert code == 2 and "header" in err


# ------------------------------------------------------------------------------ as a person meets it (issue 19)


def missing_pages() -> Scenario:
    """Ordinary answers, except 404 with a small HTML body for /missing/..."""

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            if req.path.startswith("/missing/"):
                await conn.answer(req, response(404, b"<h1>no such page</h1>\n"))
            else:
                await conn.answer(req, ordinary(req))

    return run


def own_config(tmp_path: Path) -> dict[str, str]:
    """The interface policy of a fresh user, not this machine's."""
    return {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}


async def test_progress_on_a_terminal_stderr(tmp_path: Path) -> None:
    big, small = "/r/big/3000000", "/r/small/5000"
    async with ScriptedServer(well_behaved()) as srv:
        code, _, tty = await run_lanefetch("fetch", "--out", str(tmp_path), srv.url(big), srv.url(small),
                                           tty="stderr")
        assert code == 0, tty
        text = tty.decode(errors="replace")
        # the batch's row at its end: both bodies' bytes of both bodies' total, a speed, a time left
        assert "2 files" in text and "3.0/3.0 MB" in text, text
        assert "/s" in text and "0:00:00" in text, text
        assert "3000000" in text  # a body's own row, named after it
        assert (tmp_path / "3000000").read_bytes() == content(big)

        for quiet in ("--quiet", "-s"):
            code, _, tty = await run_lanefetch("fetch", quiet, "--out", str(tmp_path / "q"), srv.url(big),
                                               tty="stderr")
            assert code == 0 and tty == b"", tty


async def test_split_progress_has_a_row_per_lane(tmp_path: Path) -> None:
    """--split on a terminal: under the body's row, a row per lane carrying it (here the one lane a fetch from this
    machine has, the default route), with that lane's bytes."""
    big = "/r/big/3000000"
    async with ScriptedServer(well_behaved()) as srv:
        code, _, tty = await run_lanefetch("fetch", "--split", "--out", str(tmp_path), srv.url(big), tty="stderr",
                                           env=own_config(tmp_path))
        assert code == 0, tty
        text = tty.decode(errors="replace")
        assert "↳ over default route" in text and re.search(r"over default route[^\n]*\d\.\d/\? MB", text), text
        assert (tmp_path / "3000000").read_bytes() == content(big)
        code, _, tty = await run_lanefetch("fetch", "--out", str(tmp_path / "plain"), srv.url(big), tty="stderr")
        assert code == 0 and "↳" not in tty.decode(errors="replace"), "no lane rows without --split"


async def test_one_url_body_goes_to_stdout() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, out, err = await run_lanefetch("fetch", srv.url("/r/a/70000"))
        assert code == 0 and err == b"", err
        assert out == content("/r/a/70000")
        # --json: the report alone, the body is not mixed into it
        code, out, err = await run_lanefetch("fetch", "--json", srv.url("/r/a/70000"))
        assert code == 0, err
        assert json.loads(out)["requests"][0]["bytes"] == 70000


async def test_several_urls_without_out_are_refused() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, out, err = await run_cli(srv.url("/r/a/10"), srv.url("/r/b/20"))
        assert code == 2 and out == ""
        assert err.startswith("usage: lanefetch fetch") and "--out DIR" in err and "--json" in err, err
        assert srv.connections == []


async def test_binary_body_is_not_written_to_a_terminal() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        url = srv.url("/r/a/70000")
        assert b"\0" in content("/r/a/70000")
        code, tty, err = await run_lanefetch("fetch", url, tty="stdout")
        assert code == 1
        assert tty == b"", tty[:200]
        message = err.decode()
        assert url in message and "binary" in message and "--out DIR" in message and "> FILE" in message, message


async def test_http_error_status_is_printed_and_fail_exits_22(tmp_path: Path) -> None:
    async with ScriptedServer(missing_pages()) as srv:
        url = srv.url("/missing/page")
        code, out, err = await run_lanefetch("fetch", url)
        assert code == 0  # like curl without -f: the server answered
        assert out == b"<h1>no such page</h1>\n"
        assert f"{url}: HTTP 404 Not Found" in err.decode() and "--fail" in err.decode(), err

        for flag in ("--fail", "-f"):
            code, out, err = await run_lanefetch("fetch", flag, url)
            assert code == 22, err
            assert out == b""  # the error page is not the body asked for
            assert err.decode().strip() == f"lanefetch: {url}: HTTP 404 Not Found"

        # in a batch with --out: the good body is kept, the error page is not written, the exit status is 22
        good = srv.url("/r/good/5000")
        code, _, err = await run_lanefetch("fetch", "--fail", "--out", str(tmp_path), good, url)
        assert code == 22 and url in err.decode(), err
        assert sorted(os.listdir(tmp_path)) == ["5000"]


async def test_interface_without_split_warns(tmp_path: Path) -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, _, err = await run_cli("--interface", "lo", "--json", srv.url("/r/a/10"), env=own_config(tmp_path))
        assert code == 0, err
        assert "warning: --interface is used only with --split" in err and "Add --split" in err, err


async def test_split_with_one_usable_interface_warns(tmp_path: Path) -> None:
    async with ScriptedServer(well_behaved()) as srv:
        # loopback is never a lane: what is left is the default route alone
        code, _, err = await run_cli("--split", "--interface", "lo", "--json", srv.url("/r/a/10"),
                                     env=own_config(tmp_path))
        assert code == 0, err
        assert "interface lo not used" in err, err
        assert "--split has one interface to use (the default route)" in err, err
        assert "--interface NAME --interface NAME2" in err, err


@pytest.mark.parametrize("args", [["--json"], []])
async def test_closed_stdout_ends_quietly(args: list[str]) -> None:
    async with ScriptedServer(well_behaved()) as srv:
        read_end, write_end = os.pipe()
        os.close(read_end)  # `| head` that has already gone
        try:
            code, _, err = await run_lanefetch("fetch", *args, srv.url("/r/a/200000"), stdout=write_end)
        finally:
            os.close(write_end)
        assert err == b"", err.decode()
        assert code == 141


async def test_bad_flag_prints_the_subcommands_usage() -> None:
    code, _, err = await run_lanefetch("fetch", "--bogus", "http://127.0.0.1:1/")
    text = err.decode()
    assert code == 2 and text.startswith("usage: lanefetch fetch ") and "--split" in text, text
    assert "lanefetch fetch: error: unrecognized arguments: --bogus" in text
    code, _, err = await run_lanefetch("cache", "stats", "--bogus")
    assert code == 2 and err.decode().startswith("usage: lanefetch cache "), err


async def test_help_has_examples() -> None:
    for args in (["--help"], ["fetch", "--help"]):
        code, out, _ = await run_lanefetch(*args)
        text = out.decode()
        assert code == 0 and "examples:" in text, text
        assert "lanefetch fetch https://example.org/file.iso > file.iso" in text
        assert "--out pages https://" in text
        assert "--split --interface eth0 --interface wlan0" in text
        assert "lanefetch fetch --json " in text


async def test_plurals_in_the_report() -> None:
    async with ScriptedServer(well_behaved()) as srv:
        code, out, err = await run_cli("--head", srv.url("/r/a/10"))
        assert code == 0, err
        assert "1 request in" in out and "over 1 connection (" in out, out
        port = closed_port()
        code, _, err = await run_cli(f"http://127.0.0.1:{port}/x")
        assert code == 1 and "1 of 1 request failed" in err, err


async def test_quiet_drops_warnings_and_notices_not_errors(tmp_path: Path) -> None:
    async with ScriptedServer(missing_pages()) as srv:
        url = srv.url("/missing/page")
        code, _, err = await run_cli("-s", "--interface", "lo", "--json", url, env=own_config(tmp_path))
        assert code == 0 and err == "", err
        code, _, err = await run_cli("-s", "-f", url)
        assert code == 22 and url in err, err


async def test_an_encoded_slash_in_the_url_never_names_a_file_outside_the_out_directory(tmp_path: Path) -> None:
    """The file name is the URL's last path segment decoded: a %2F in it is a character of that name, never a
    directory step (`..%2F` out of --out or -O's directory, `%2Fhome%2F…` anywhere)."""
    async with ScriptedServer(well_behaved()) as srv:
        out_dir = tmp_path / "deep" / "out"
        escaped = tmp_path / "deep" / "escaped"
        absolute = tmp_path / "absolute"
        urls = [srv.url("/r/a/..%2Fescaped"), srv.url("/r/b/" + str(absolute).replace("/", "%2F"))]
        code, _, err = await run_cli("--out", str(out_dir), *urls)
        assert code == 0, err
        assert not escaped.exists() and not absolute.exists()
        files = sorted(f.name for f in out_dir.iterdir())
        assert len(files) == 2 and all("/" not in f for f in files), files


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
async def test_ctrl_c_mid_body_leaves_no_truncated_file(tmp_path: Path, stop: signal.Signals, status: int) -> None:
    """Ctrl-C (or `kill`, or the terminal closing) while a body arrives into --out (or -o FILE): no half-written file
    is left behind looking like the whole one (nor under any other name), as after any failed body; the exit status
    is the shell's for that signal (128 + its number)."""
    from waits import until

    argv = [str(LANEFETCH)] if LANEFETCH.exists() else [sys.executable, "-m", "lanefetch"]

    def written(d: Path) -> bool:
        return d.is_dir() and any(f.stat().st_size > 0 for f in d.iterdir())

    async with ScriptedServer(held()) as srv:
        for option, path in (("--out", tmp_path / "out"), ("-o", tmp_path / "o" / "named.bin")):
            where = path if option == "--out" else path.parent
            proc = await asyncio.create_subprocess_exec(
                *argv, "fetch", option, str(path), srv.url("/half/100000"), cwd=REPO,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            try:
                await until(lambda d=where: written(d), f"the body being written into {where}")  # type: ignore[misc]
                proc.send_signal(stop)
                await asyncio.wait_for(proc.communicate(), 30)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            assert proc.returncode == status
            assert list(where.iterdir()) == [], f"{option}: a truncated body was left behind"


@pytest.mark.parametrize("name", ["taken", "x%00y", "x" * 300])
async def test_a_body_that_cannot_be_written_fails_its_request_not_the_command(tmp_path: Path, name: str) -> None:
    """A file --out cannot create (a directory of that name is there, a NUL byte, a name too long for the file
    system): that request fails with the reason and exit status 1, the others are kept; the command never hangs
    (the error raised out of the sink had killed the connection's task, leaving the batch waiting forever)."""
    out_dir = tmp_path / "out"
    (out_dir / "taken").mkdir(parents=True)
    async with ScriptedServer(well_behaved()) as srv:
        bad, good = srv.url(f"/r/a/{name}"), srv.url("/r/b/5000")
        code, _, err = await run_cli("--out", str(out_dir), bad, good, timeout=20)
        assert code == 1, err
        assert bad in err and "cannot write" in err, err
        assert (out_dir / "5000").read_bytes() == content("/r/b/5000")
        assert sorted(f.name for f in out_dir.iterdir()) == ["5000", "taken"]


async def test_out_naming_a_file_is_refused_with_a_reason_not_a_traceback(tmp_path: Path) -> None:
    """--out (or -o's directory) that cannot be a directory (a file is there): a one-line reason and status 2, as
    for any bad argument, not a Python traceback with status 1."""
    taken = tmp_path / "taken"
    taken.write_bytes(b"mine")
    async with ScriptedServer(well_behaved()) as srv:
        for args in (["--out", str(taken)], ["-o", str(taken / "x")]):
            code, _, err = await run_cli(*args, srv.url("/r/a/100"))
            assert code == 2 and "Traceback" not in err, err
            assert len(err.strip().splitlines()) == 1 and str(taken) in err, err
        assert taken.read_bytes() == b"mine" and not srv.requests, "nothing fetched"


async def test_json_names_only_files_written(tmp_path: Path) -> None:
    """--json's `file` is a file that holds the body: not -o FILE's name when --fail withheld the error page."""
    async with ScriptedServer(missing_pages()) as srv:
        target = tmp_path / "page.html"
        code, out, err = await run_cli("--json", "--fail", "-o", str(target), srv.url("/missing/page"))
        assert code == 22, err
        assert not target.exists()
        assert json.loads(out)["requests"][0]["file"] is None, out
        code, out, err = await run_cli("--json", "--fail", "-o", str(target), srv.url("/r/a/100"))
        assert code == 0, err
        assert json.loads(out)["requests"][0]["file"] == str(target) and target.read_bytes() == content("/r/a/100")


async def test_head_writes_no_file(tmp_path: Path) -> None:
    """--head has no body to keep: --out, -O and -o FILE write nothing (an empty file would look like an empty
    resource, and replaced the one already there under that name), and a warning says so."""
    async with ScriptedServer(well_behaved()) as srv:
        out_dir = tmp_path / "out"
        out_dir.mkdir()
        (out_dir / "5000").write_bytes(b"mine")
        mine = tmp_path / "mine.bin"
        mine.write_bytes(b"mine too")
        for args in (["--out", str(out_dir)], ["--json", "--out", str(out_dir)], ["-o", str(mine)]):
            code, out, err = await run_cli("--head", *args, srv.url("/r/a/5000"))
            assert code == 0, err
            where = str(mine) if "-o" in args else str(out_dir)
            assert err.strip() == f"lanefetch: warning: --head fetches no body: nothing is written to {where}", err
            if "--json" in args:
                assert json.loads(out)["requests"][0]["file"] is None, out
            else:
                assert "200" in out and srv.url("/r/a/5000") in out, out
        assert sorted(f.name for f in out_dir.iterdir()) == ["5000"] and (out_dir / "5000").read_bytes() == b"mine"
        assert sorted(os.listdir(tmp_path)) == ["mine.bin", "out"] and mine.read_bytes() == b"mine too"
        assert [r.method for r in srv.requests] == ["HEAD"] * 3


@pytest.mark.parametrize("target", [".", "", "/", "..", "dir"])
async def test_output_naming_a_directory_is_refused_before_fetching(tmp_path: Path, target: str) -> None:
    """-o FILE that names no file (".", "", "/", "..", a directory already there) is a bad argument: status 2 and
    the reason before anything is fetched, not an internal error (or a failed write) after the body came."""
    (tmp_path / "dir").mkdir()
    async with ScriptedServer(well_behaved()) as srv:
        code, _, err = await run_lanefetch("fetch", "-o", target, srv.url("/r/a/100"), cwd=tmp_path)
        text = err.decode()
        assert code == 2 and text.startswith("usage: lanefetch fetch"), text
        assert "-o FILE" in text.splitlines()[-1] and "a directory" in text.splitlines()[-1], text
        assert not srv.requests and sorted(os.listdir(tmp_path)) == ["dir"]


@pytest.mark.parametrize("kind", ["missing", "not a certificate"])
async def test_a_ca_file_that_cannot_be_used_is_refused_with_a_reason_not_a_traceback(tmp_path: Path,
                                                                                       kind: str) -> None:
    """--ca-file that is not there or holds no certificate: a one-line reason and status 2 before anything is
    fetched (nor --out made), not a Python traceback raised out of the batch at the first https:// URL."""
    ca = tmp_path / "ca.pem"
    if kind != "missing":
        ca.write_text("not a certificate\n")
    async with ScriptedServer(well_behaved()) as srv:
        code, _, err = await run_cli("--ca-file", str(ca), "--out", str(tmp_path / "out"),
                                     f"https://127.0.0.1:{closed_port()}/x", srv.url("/r/a/100"))
        assert code == 2 and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1 and str(ca) in err and "--ca-file" in err, err
        assert not srv.requests and not (tmp_path / "out").exists()


@pytest.mark.parametrize("action", ["stats", "clear"])
async def test_cache_in_a_directory_that_cannot_be_used_is_a_reason_not_a_traceback(tmp_path: Path,
                                                                                    action: str) -> None:
    """`lanefetch cache stats|clear` whose directory cannot be made (a file of that name): status 1 and a one-line
    reason naming it, not a Python traceback."""
    taken = tmp_path / "taken"
    taken.write_bytes(b"mine")
    code, out, err = await run_lanefetch("cache", action, "--cache-dir", str(taken))
    text = err.decode()
    assert code == 1 and out == b"" and "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1 and str(taken) in text, text
    assert taken.read_bytes() == b"mine"


def page_text(size: int) -> bytes:
    return b"".join(b"line %05d of a text page\n" % i for i in range(size // 26 + 1))[:size]


def text_pages(size: int) -> Scenario:
    """Every path: 200 with page_text(size)."""
    body = page_text(size)

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            await conn.answer(req, response(200, body))

    return run


async def test_no_progress_over_a_body_written_to_the_terminal() -> None:
    """One URL's text body to standard output, a terminal that is stderr's too: the progress rows, redrawn in
    place, would overwrite the body's lines; like curl, no progress then (the body is its own progress)."""
    async with ScriptedServer(text_pages(300_000)) as srv:
        code, tty, _ = await run_lanefetch("fetch", srv.url("/page.txt"), tty="both")
        assert code == 0, tty[-500:]
        assert "━".encode() not in tty, tty[-500:]
        assert tty.replace(b"\r\n", b"\n").startswith(page_text(300_000)), tty[:200]
