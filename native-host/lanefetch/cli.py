"""The `lanefetch` command: fetch URLs as one pipelined batch, run the native-messaging host,
register it with browsers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from . import __version__, log_setup, stop_signals
from .bridge.browsers import BROWSERS
from .cache.location import default_cache_dir
from .engine import DeliveredHead, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from .engine.transport import make_tls_context
from .lanes.interfaces import parse_interface_arg
from .lanes.interfaces_command import interfaces_command, interfaces_parser
from .progress import DownloadProgress
from .proxy.ca_cli import firefox_https_command, firefox_https_parser
from .service import FetchService, ServiceConfig


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _is_binary(data: bytes) -> bool:
    return b"\0" in data  # curl's test: text on a terminal has no NUL byte, nearly every binary format has some


def _part_name(name: str) -> str:
    """Where a body is written until it is whole, then renamed to `name`."""
    return f".{name}.lanefetch-part"


class _Result:
    def __init__(self, request: FetchRequest) -> None:
        self.request = request
        self.status: int | None = None
        self.reason = ""
        self.bytes = 0
        self.error: FetchError | None = None
        self.report: TimingReport | None = None
        self.file: IO[bytes] | None = None
        self.path: Path | None = None
        self.part: Path | None = None  # the body is written here, and renamed to `path` once it is whole
        self.saved: Path | None = None  # `path` once the whole body is there: what the report names, nothing else
        self.withheld = False  # an HTTP error's body under --fail: not written anywhere
        self.refused = False  # a binary body not written to the terminal


class _CliSink:
    """Collects results; with an output directory, streams each body into its file; with `stdout`, the one
    body to standard output."""

    def __init__(self, out_dir: Path | None, *, stdout: IO[bytes] | None = None, fail: bool = False,
                 progress: DownloadProgress | None = None, stop: Callable[[str], None] | None = None) -> None:
        self.out_dir = out_dir
        self.stdout = stdout
        self.stdout_is_terminal = stdout is not None and stdout.isatty()
        self.fail = fail
        self.progress = progress
        self.stop = stop  # abandon a request whose body has nowhere to go
        self.stdout_closed = False
        self.results: dict[str, _Result] = {}
        self._names: set[str] = set()

    def _name_for(self, url: str) -> str:
        base = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or "index.html"
        # Decoded, a %2F is a "/": a character of the name, never a step out of the directory (nor to "/").
        base = base.replace("/", "_").replace("\\", "_") if base not in (".", "..") else "index.html"
        name, n = base, 1
        # Two URLs with one basename: keep both. A body's part file is a name taken too: a URL named like it
        # (".x.lanefetch-part") would have been renamed over it while it arrived, or truncated it once whole.
        while name in self._names or _part_name(name) in self._names:
            n += 1
            stem, dot, ext = base.rpartition(".")
            name = f"{stem}-{n}.{ext}" if dot and stem else f"{base}-{n}"
        self._names.update((name, _part_name(name)))
        return name

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        r = self.results[request.id]
        r.status, r.reason = head.status, head.reason
        r.withheld = self.fail and head.status >= 400  # like curl -f: an error page is not the file asked for
        size = next((int(v) for k, v in head.headers if k.lower() == "content-length" and v.isdigit()), None)
        if self.progress is not None:
            label = unquote(urlsplit(request.url).path.rsplit("/", 1)[-1]) or request.url
            self.progress.begin(request.id, label, None if head.decoded or request.method == "HEAD" else size)
        if self.out_dir is not None and not r.withheld:
            if r.path is None:
                r.path = self.out_dir / self._name_for(request.url)
            # Under a name of its own until the body is whole: an interrupted fetch leaves no file that looks
            # complete (nor truncates the one -o names).
            r.part = r.path.with_name(_part_name(r.path.name))
            try:
                r.file = r.part.open("wb")
            except (OSError, ValueError) as e:  # ValueError: a NUL byte in the name
                self._cannot_write(r, e)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        r = self.results[request.id]
        r.bytes += len(data)
        if self.progress is not None:
            self.progress.advance(request.id, len(data))
        if r.file is not None:
            try:
                r.file.write(data)
            except OSError as e:  # the disk is full, ...
                self._cannot_write(r, e)
        elif self.stdout is not None and not (r.withheld or r.refused or self.stdout_closed):
            if self.stdout_is_terminal and _is_binary(data):
                r.refused = True
                self._stop(request)
                return
            try:
                self.stdout.write(data)
                self.stdout.flush()  # a pipe's reader sees the body as it arrives
            except BrokenPipeError:
                self.stdout_closed = True  # the reader is gone (`| head`): nothing more to fetch for it
                self._stop(request)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        r = self.results[request.id]
        try:
            self._close(r)
            if r.part is not None and r.path is not None:
                r.part.replace(r.path)
                r.part, r.saved = None, r.path
        except OSError as e:  # a directory of that name, ...
            self._cannot_write(r, e)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        r = self.results[request.id]
        if r.error is None:  # not the cancel that followed a failed write: that failure is the reason
            r.error = error
        self._discard(r)

    def _cannot_write(self, r: _Result, e: Exception) -> None:
        """The body has nowhere to go: the request fails with the reason (never raised into the engine, whose
        connection it would end with the batch left waiting), and the rest of its body is not fetched."""
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        r.error = FetchError("internal", f"cannot write {r.path}: {reason}")
        with contextlib.suppress(OSError):
            self._discard(r)
        self._stop(r.request)

    def abandon(self) -> None:
        """The fetch ended without finishing some bodies (Ctrl-C): remove what they wrote."""
        for r in self.results.values():
            self._discard(r)

    def _discard(self, r: _Result) -> None:
        self._close(r)
        if r.part is not None:
            part, r.part = r.part, None
            with contextlib.suppress(ValueError):  # a name that could not be created (a NUL byte)
                part.unlink(missing_ok=True)  # never leave a truncated body behind

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.results[request.id].report = report

    def _stop(self, request: FetchRequest) -> None:
        if self.stop is not None:
            self.stop(request.id)

    def _close(self, r: _Result) -> None:
        if self.progress is not None:
            self.progress.end(r.request.id)
        if r.file is not None:
            file, r.file = r.file, None
            file.close()


def _parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"header must look like 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def _parse_interface(text: str) -> tuple[str, float | None]:
    try:
        return parse_interface_arg(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _request_json(r: _Result) -> dict[str, Any]:
    rep = r.report
    conn = rep.connection if rep else None
    return {
        "url": r.request.url,
        "status": r.status,
        "bytes": r.bytes,
        "error": None if r.error is None else {"code": r.error.code, "message": r.error.message},
        "timing": rep.timing.as_epoch_ms() if rep else None,
        "connection": None if conn is None else asdict(conn),  # the same record as the protocol's timing
        "retries": rep.retries if rep else 0,
        "cache": rep.cache if rep else "none",
        "wire_bytes": rep.wire_bytes if rep else 0,
        "file": None if r.saved is None else str(r.saved),
        "lanes": None if rep is None or rep.lanes is None else [asdict(lane) for lane in rep.lanes],
    }


def _warn(text: str) -> None:
    print(f"lanefetch: warning: {text}", file=sys.stderr)


def _where_bodies_go(args: argparse.Namespace) -> str | None:
    """None when the bodies have a place (a directory, standard output, nowhere for --json or --head);
    else why not and what to do."""
    if args.out is not None or args.json or args.head or len(args.urls) == 1:
        return None
    return (f"{len(args.urls)} URLs and no --out: standard output takes one body. Give --out DIR to keep each "
            "body in DIR, or --json for the report alone (the bodies are then not kept)")


def _output_choice(args: argparse.Namespace) -> str | None:
    """-o FILE and -O in curl's sense, folded into --out (and the one body's file name): None, or why the
    combination cannot be."""
    if sum((args.output is not None, args.remote_name, args.out is not None)) > 1:
        return "give one of -o FILE, -O and --out DIR"
    if args.remote_name:
        args.out = Path(".")
    if args.output is not None:
        if len(args.urls) != 1:
            return (f"-o FILE takes one URL ({len(args.urls)} given): use -O or --out DIR to keep each body under "
                    "its URL's name")
        if str(args.output) == "-":
            args.output = None  # standard output, as without -o
        elif args.output.name in ("", "..") or args.output.is_dir():  # ".", "" and "/" have no name
            return (f"-o FILE names a directory ({args.output}): give a file name, or --out DIR to keep the body "
                    "there under its URL's name")
        else:
            args.out = args.output.parent
    return None


def _check_split(args: argparse.Namespace, service: FetchService) -> None:
    """--interface and --split each do nothing without the other's conditions: say so rather than fetch as if
    all were well."""
    warn = (lambda _: None) if args.quiet else _warn
    if args.interface and not args.split:
        warn("--interface is used only with --split; fetching over the default route. Add --split to fetch "
              "large bodies as byte ranges over the named interfaces")
    if not args.split:
        return
    lanes = service.splitter().lanes  # named interfaces are checked (and found) before anything is fetched
    if len(lanes) < 2:
        name = (lanes[0].spec.name if lanes else None) or "the default route"
        warn(f"--split has one interface to use ({name}), so each body comes over it alone. Name two or more "
              "with --interface NAME --interface NAME2, or allow more with `lanefetch interfaces set NAME "
              "--enable` (see `lanefetch interfaces`)")


async def _fetch(args: argparse.Namespace) -> int:
    config = ServiceConfig(
        EngineConfig(
            connections_per_origin=args.connections,
            pipeline_depth=args.depth,
            pipelining=not args.no_pipeline,
            inflight_budget=args.inflight_budget,
            h2_receive_cap=not args.h2_open_window,
            h2_connections=args.h2_connections,
            ca_file=args.ca_file,
        ),
        cache_dir=(args.cache_dir or default_cache_dir()) if args.cache else None,
        lanes=[(n, w or 1.0) for n, w in args.interface] if args.interface else None,
    )
    to_stdout = args.out is None and not args.json and not args.head
    show = not args.quiet and sys.stderr.isatty()
    if args.ca_file is not None:
        # Read now, as the engine will at the first https:// URL: there its error would end the whole batch.
        try:
            make_tls_context(args.ca_file)
        except OSError as e:  # not there, not a certificate (ssl.SSLError), ...
            print(f"lanefetch: cannot use --ca-file {args.ca_file}: {e.strerror or e}", file=sys.stderr)
            return 2
    if args.out is not None:
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a file of that name, no permission, ...
            print(f"lanefetch: cannot use {args.out} as the directory for the bodies: {e.strerror or e}",
                  file=sys.stderr)
            return 2
    service = FetchService(config, warn=None if args.quiet else _warn)
    stops: set[asyncio.Task[None]] = set()

    def stop(request_id: str) -> None:
        # From inside the sink's callback: the cancel runs after it returns, as the engine expects.
        task = asyncio.get_running_loop().create_task(service.cancel_and_close(request_id))
        stops.add(task)
        task.add_done_callback(stops.discard)

    progress: DownloadProgress | None = None
    sink: _CliSink | None = None
    try:
        try:
            _check_split(args, service)
        except ValueError as e:  # a bad --interface or interface policy
            print(f"lanefetch: {e}", file=sys.stderr)
            return 2
        # Not over a body on the terminal (like curl): rows redrawn in place would overwrite the body's lines.
        if show and not (to_stdout and sys.stdout.isatty()):
            progress = DownloadProgress(sys.stderr, len(args.urls))
            if args.split:
                service.observe_lanes(progress.lane)
        sink = _CliSink(args.out, stdout=sys.stdout.buffer if to_stdout else None, fail=args.fail,
                        progress=progress, stop=stop)
        requests = []
        for i, url in enumerate(args.urls):
            req = FetchRequest(id=str(i), method="HEAD" if args.head else "GET", url=url,
                               headers=list(args.header), decode=args.decode, split=args.split)
            sink.results[req.id] = _Result(req)
            if args.output is not None:  # -o FILE: the one body's file is named, not derived from its URL
                sink.results[req.id].path = args.output
            requests.append(req)
        start = time.monotonic()
        result = await service.fetch(requests, sink, Page(address_space=args.as_page))
        # A resource that changed during a split fetch starts over once, from scratch.
        changed = [r.request for r in sink.results.values()
                   if r.request.split and r.error is not None and r.error.code == "resource_changed"]
        if changed:
            for req in changed:
                old, sink.results[req.id] = sink.results[req.id], _Result(req)
                sink.results[req.id].path = old.path  # the same file name as the first attempt's
            await service.fetch(changed, sink, Page(address_space=args.as_page))
        elapsed = time.monotonic() - start  # the last byte; closing connections is not part of the fetch
        if stops:
            await asyncio.gather(*stops)
    finally:
        if sink is not None:
            sink.abandon()  # bodies still arriving when the fetch stopped (Ctrl-C): none left half-written
        if progress is not None:
            progress.close()
        await service.aclose()
    if sink.stdout_closed:
        raise BrokenPipeError  # main() ends quietly, as after any write to a closed standard output
    results = [sink.results[r.id] for r in requests]
    if args.json:
        json.dump({
            "elapsed_s": round(elapsed, 6),
            "connections": result.connections,
            "max_concurrent_connections": result.max_concurrent_connections,
            "requests": [_request_json(r) for r in results],
        }, sys.stdout, indent=2)
        print()
    elif not to_stdout or show:
        # With the body on standard output the report goes to the terminal watching, and only there.
        report = sys.stderr if to_stdout else sys.stdout
        for r in results:
            conn = r.report.connection if r.report else None
            where = f"conn {conn.id} #{conn.pipeline_position} depth {conn.pipeline_depth}" if conn else "-"
            if r.report is not None and r.report.cache != "none":
                where = f"cache {r.report.cache}" if conn is None else f"{where} ({r.report.cache})"
            status = r.status if r.error is None else f"ERR {r.error.code}"
            print(f"{status!s:>8} {r.bytes:>10} B  {where:<26} {r.request.url}", file=report)
            for lane in (r.report.lanes or []) if r.report else []:
                rate = "-" if lane.throughput_bps is None else f"{lane.throughput_bps / 1e6:.2f} Mbit/s"
                state = f"  down: {lane.down}" if lane.down else ""
                print(f"{'':>8} {lane.bytes:>10} B  lane {lane.interface} "
                      f"({_plural(lane.requests, 'request')}, {rate}){state}", file=report)
        print(f"{_plural(len(results), 'request')} in {elapsed:.3f} s over "
              f"{_plural(result.connections, 'connection')} (at most {result.max_concurrent_connections} at once)",
              file=report)
    sys.stdout.flush()  # here, where a closed standard output is caught, not at the interpreter's exit
    refused = [r for r in results if r.refused]
    for r in refused:
        print(f"lanefetch: {r.request.url}: the body is binary; not writing it to the terminal. Give --out DIR, "
              "or send standard output to a file or program (> FILE, | PROGRAM)", file=sys.stderr)
    failed = [r for r in results if r.error is not None and not r.refused]
    if failed:
        first = failed[0]
        assert first.error is not None
        print(f"lanefetch: {len(failed)} of {_plural(len(results), 'request')} failed; first: {first.request.url}: "
              f"{first.error.code}: {first.error.message}", file=sys.stderr)
        return 1
    if refused:
        return 1
    http_errors = [r for r in results if r.status is not None and r.status >= 400]
    for r in http_errors:
        status = f"HTTP {r.status} {r.reason}".rstrip()
        if args.fail:
            print(f"lanefetch: {r.request.url}: {status}", file=sys.stderr)
        elif not args.quiet:
            print(f"lanefetch: {r.request.url}: {status} (exit status 0 all the same; --fail makes it 22)",
                  file=sys.stderr)
    return 22 if args.fail and http_errors else 0


def _cache_command(args: argparse.Namespace) -> int:
    import sqlite3

    from .cache.sqlite_store import SqliteStore

    directory: Path = args.cache_dir or default_cache_dir()
    try:
        store = SqliteStore(directory, ServiceConfig().cache_max_bytes)
    except (OSError, sqlite3.Error) as e:  # a file of that name, no permission, ...
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        print(f"lanefetch: cannot open the cache in {directory}: {reason}", file=sys.stderr)
        return 1
    try:
        if args.action == "clear":
            print(f"removed {_plural(store.clear(), 'entry', 'entries')} from {store.path}")
        else:
            st = store.stats()
            print(f"location: {st.location}\nentries:  {st.entries}\nbytes:    {st.bytes}")
    finally:
        store.close()
    return 0


def _install(args: argparse.Namespace, remove: bool) -> int:
    from .bridge import install as installer  # here: it loads the protocol schema, which `fetch` need not wait for

    try:
        p = installer.plan(args.browser, args.home, args.chromium_user_data_dir, system=args.system)
    except ValueError as e:
        print(f"lanefetch: {e}", file=sys.stderr)
        return 2
    for s in p.sandboxed:
        print(f"note: {s.advice}")
    if p.not_found and not remove:
        # A registration for a browser that is not there does nothing, and nothing would ever say so: refuse
        # unless the user insists (a browser installed somewhere lanefetch does not look).
        for b in p.not_found:
            reason = p.why_not_found(b)
            if not args.force:
                print(f"lanefetch: not registering for {b.name}: {reason}. Install or start {b.name} first, or "
                      "pass --force if it is installed where lanefetch does not look", file=sys.stderr)
                return 1
            print(f"lanefetch: warning: registering for {b.name} as asked (--force): {reason}", file=sys.stderr)
    if not p.targets:
        print("lanefetch: found no browser for this user (looked for " + ", ".join(b.name for b in BROWSERS)
              + "); name one with --browser", file=sys.stderr)
        return 1
    try:
        if remove:
            for path in installer.uninstall(p.targets):
                print(f"removed {path}")
            return 0
        exe = installer.host_launcher(wrapper_dir=p.targets[0].directory.parent)
        if args.system and (problem := installer.system_wide_problem(exe)) is not None:
            print(f"lanefetch: {problem}", file=sys.stderr)
            return 1
        for path in installer.install(p.targets, exe):
            print(f"registered {path} -> {exe}")
    except (FileNotFoundError, PermissionError) as e:
        hint = " (system-wide needs administrator rights)" if args.system and isinstance(e, PermissionError) else ""
        print(f"lanefetch: {e}{hint}", file=sys.stderr)
        return 1
    return 0


FETCH_EXAMPLES = """\
examples:
  lanefetch fetch https://example.org/file.iso > file.iso
      one URL: its body goes to standard output, like curl
  lanefetch fetch -o page.html https://example.org/
      one URL into the file page.html (-O: into ./index.html, named after the URL, like curl)
  lanefetch fetch --out pages https://example.org/ https://example.org/style.css https://example.org/app.js
      several URLs: each body into the folder pages/ (named after the URL's last path segment)
  lanefetch fetch --split --interface eth0 --interface wlan0 --out . https://example.org/big.iso
      one large body as byte ranges over two network interfaces at once
  lanefetch fetch --json https://example.org/ https://example.org/a.css
      a JSON report (status, bytes, timings, connection) per URL; the bodies are not kept
  lanefetch fetch --fail https://example.org/missing || echo "not there"
      an HTTP status of 400 or more exits with status 22
"""


def build_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="lanefetch", description="Pipelined HTTP/1.1 fetching for slow links.",
                                epilog=FETCH_EXAMPLES + "  lanefetch install\n      register the helper with "
                                "the browsers found for this user\n\nlanefetch COMMAND --help: that "
                                "command's options.", formatter_class=raw)
    p.add_argument("--version", action="version", version=f"lanefetch {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fetch", help="fetch URLs as one batch over pipelined persistent connections",
                       description="Fetch URLs as one batch over pipelined persistent connections. One URL's "
                       "body goes to standard output unless --out is given.", epilog=FETCH_EXAMPLES,
                       formatter_class=raw)
    f.add_argument("urls", nargs="+", metavar="URL")
    f.add_argument("--json", action="store_true",
                   help="print one JSON object with timings per request (bodies go only to --out)")
    f.add_argument("--out", type=Path, metavar="DIR", help="write each body to DIR/<basename of the URL path> "
                   "(several URLs need it, -O, --json or --head; without it one URL's body goes to standard output)")
    f.add_argument("-o", "--output", type=Path, metavar="FILE",
                   help="write the one URL's body to FILE (like curl -o; - is standard output)")
    f.add_argument("-O", "--remote-name", action="store_true",
                   help="write each body into the current directory under its URL's basename (like curl -O; "
                   "the same as --out .)")
    f.add_argument("-f", "--fail", action="store_true",
                   help="an HTTP status of 400 or more: exit status 22, the body not written (like curl -f)")
    f.add_argument("-s", "--quiet", action="store_true",
                   help="no progress, report or warnings on stderr (errors still); progress shows only when "
                   "stderr is a terminal anyway")
    f.add_argument("--no-pipeline", action="store_true", help="one request at a time per connection")
    f.add_argument("--connections", type=int, default=6, metavar="N", help="connections per origin (6, as browsers)")
    f.add_argument("--depth", type=int, default=16, metavar="N", help="maximum pipeline depth (16)")
    f.add_argument("--inflight-budget", action="store_true",
                   help="bound an origin's unanswered requests to about two bandwidth-delay products")
    f.add_argument("--h2-connections", type=int, default=EngineConfig.h2_connections, metavar="N",
                   help="HTTP/2 connections per origin whose round trip is 100 ms or more or not known yet (one "
                   "below); a batch is shared among them (default: %(default)s; 1: one always, as browsers)")
    f.add_argument("--h2-open-window", action="store_true",
                   help="over HTTP/2, open the connection's receive window to 16 MiB at once instead of keeping "
                   "what the server has outstanding near 1.5 bandwidth-delay products")
    f.add_argument("--header", type=_parse_header, action="append", default=[], metavar="'K: V'")
    f.add_argument("--decode", action="store_true", help="decode gzip/deflate/br/zstd bodies")
    f.add_argument("--head", action="store_true", help="send HEAD instead of GET")
    f.add_argument("--as-page", choices=["public", "private", "loopback"], default="loopback",
                   help="fetch as a page in this address space would (default: the local user, anything)")
    f.add_argument("--ca-file", help="trust only this CA file (testing); default: the system trust store")
    f.add_argument("--cache", action="store_true", help="use (and fill) the helper's persistent HTTP cache")
    f.add_argument("--cache-dir", type=Path, metavar="DIR", help=f"the cache's directory ({default_cache_dir()})")
    f.add_argument("--split", action="store_true", help="fetch large bodies as byte ranges over several interfaces")
    f.add_argument("--interface", type=_parse_interface, action="append", default=[], metavar="NAME[:WEIGHT]",
                   help="with --split: use this interface (repeat; default: those the interface policy allows)")
    interfaces_parser(sub)
    firefox_https_parser(sub)

    c = sub.add_parser("cache", help="the helper's HTTP cache: stats or clear")
    c.add_argument("action", choices=["stats", "clear"])
    c.add_argument("--cache-dir", type=Path, metavar="DIR", help=f"the cache's directory ({default_cache_dir()})")

    sub.add_parser("host", help="run the native-messaging host on stdio (browsers start lanefetch-host)")

    for name, text in (("install", "register"), ("uninstall", "unregister")):
        i = sub.add_parser(name, help=f"{text} the native-messaging host for browsers of this user")
        i.add_argument("--browser", choices=["all", *(b.id for b in BROWSERS)], default="all",
                       help="one browser, or all found for this user (default)")
        i.add_argument("--system", action="store_true",
                       help="for every user of this machine (needs root/administrator)")
        i.add_argument("--chromium-user-data-dir", type=Path, metavar="DIR",
                       help="a Chromium --user-data-dir: the manifest goes to DIR/NativeMessagingHosts")
        i.add_argument("--home", type=Path, default=Path.home(), help=argparse.SUPPRESS)
        if name == "install":
            i.add_argument("--force", action="store_true",
                           help="register the browser named by --browser even though it was not found for this "
                           "user (installed where lanefetch does not look); without it such a name is refused, "
                           "since a registration nobody reads would fail silently")
    d = sub.add_parser("doctor", help="check the helper's registration with each browser and say how to fix it")
    d.add_argument("--browser", choices=["all", *(b.id for b in BROWSERS)], default="all")
    d.add_argument("--chromium-user-data-dir", type=Path, metavar="DIR",
                   help="check the registration for a Chromium --user-data-dir")
    d.add_argument("--home", type=Path, default=Path.home(), help=argparse.SUPPRESS)
    for command_parser in sub.choices.values():
        command_parser.set_defaults(command_parser=command_parser)  # its errors print its own usage
    return p


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse leaves a subcommand's unknown arguments to the top-level parser, whose usage says nothing
        # about the subcommand's options: let the subcommand's own parser complain.
        args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # Standard output was closed (`lanefetch fetch --json ... | head`): end quietly like other Unix tools.
        # Python would report the failed flush again at exit, so standard output now goes nowhere.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE: what a shell reports for a tool ended by a closed pipe


def _main(argv: list[str] | None) -> int:
    args = _parse(argv)
    if os.environ.get("LANEFETCH_LOG"):
        log_setup.configure(os.environ, sys.stderr, "%(name)s %(message)s")
    if args.command == "fetch":
        if args.connections < 1 or args.depth < 1:
            args.command_parser.error("--connections and --depth must be at least 1")
        if args.h2_connections < 1:
            args.command_parser.error("--h2-connections must be at least 1")
        output_error = _output_choice(args)
        if output_error is not None:
            args.command_parser.error(output_error)
        if args.head and args.out is not None:
            # A HEAD answer has no body: an empty file would pass for an empty resource, and would replace the
            # one of that name already there (the body a GET fetched).
            if not args.quiet:
                _warn(f"--head fetches no body: nothing is written to {args.output or args.out}")
            args.out = args.output = None
        refusal = _where_bodies_go(args)
        if refusal is not None:
            args.command_parser.error(refusal)
        return stop_signals.run(_fetch(args))
    if args.command == "cache":
        return _cache_command(args)
    if args.command == "interfaces":
        return interfaces_command(args)
    if args.command == "firefox-https":
        return firefox_https_command(args)
    if args.command == "host":
        from .bridge.host import main as host_main

        return host_main([])
    if args.command in ("install", "uninstall"):
        if args.chromium_user_data_dir is not None and args.browser == "all":
            args.browser = "chromium"
        return _install(args, remove=args.command == "uninstall")
    if args.command == "doctor":
        from . import doctor

        findings = doctor.run(args.browser, args.home, args.chromium_user_data_dir)
        print(doctor.render(findings))
        return 1 if any(f.status == "fail" for f in findings) else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
