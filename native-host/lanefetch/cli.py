"""The `lanefetch` command: fetch URLs as one pipelined batch, run the native-messaging host,
register it with browsers."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from . import __version__
from .bridge.browsers import BROWSERS
from .cache.location import default_cache_dir
from .engine import DeliveredHead, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from .lanes.interfaces import parse_interface_arg
from .lanes.interfaces_command import interfaces_command, interfaces_parser
from .lanes.progress import MIN_SIZE as PROGRESS_MIN_SIZE
from .lanes.progress import ProgressBar
from .proxy.ca_cli import firefox_https_command, firefox_https_parser
from .service import FetchService, ServiceConfig


class _Result:
    def __init__(self, request: FetchRequest) -> None:
        self.request = request
        self.status: int | None = None
        self.bytes = 0
        self.error: FetchError | None = None
        self.report: TimingReport | None = None
        self.file: IO[bytes] | None = None
        self.path: Path | None = None
        self.progress: ProgressBar | None = None


class _CliSink:
    """Collects results; with an output directory, streams each body into its file."""

    def __init__(self, out_dir: Path | None, progress: bool = False) -> None:
        self.out_dir = out_dir
        self.show_progress = progress  # a bar on stderr for large split downloads
        self.results: dict[str, _Result] = {}
        self._names: set[str] = set()

    def _name_for(self, url: str) -> str:
        base = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or "index.html"
        base = base.replace("\\", "_") if base not in (".", "..") else "index.html"
        name, n = base, 1
        while name in self._names:  # two URLs with one basename: keep both
            n += 1
            stem, dot, ext = base.rpartition(".")
            name = f"{stem}-{n}.{ext}" if dot and stem else f"{base}-{n}"
        self._names.add(name)
        return name

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        r = self.results[request.id]
        r.status = head.status
        size = next((int(v) for k, v in head.headers if k.lower() == "content-length" and v.isdigit()), None)
        if self.show_progress and request.split and (size or 0) >= PROGRESS_MIN_SIZE:
            r.progress = ProgressBar(sys.stderr, request.url, size)
        if self.out_dir is not None:
            r.path = self.out_dir / self._name_for(request.url)
            r.file = r.path.open("wb")

    async def body(self, request: FetchRequest, data: bytes) -> None:
        r = self.results[request.id]
        r.bytes += len(data)
        if r.progress is not None:
            r.progress.update(len(data))
        if r.file is not None:
            r.file.write(data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        self._close(self.results[request.id])

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        r = self.results[request.id]
        r.error = error
        self._close(r)
        if r.path is not None:
            r.path.unlink(missing_ok=True)  # never leave a truncated body behind

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        self.results[request.id].report = report

    @staticmethod
    def _close(r: _Result) -> None:
        if r.progress is not None:
            r.progress.finish()
            r.progress = None
        if r.file is not None:
            r.file.close()
            r.file = None


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
        "file": str(r.path) if r.path and r.error is None else None,
        "lanes": None if rep is None or rep.lanes is None else [asdict(lane) for lane in rep.lanes],
    }


async def _fetch(args: argparse.Namespace) -> int:
    config = ServiceConfig(
        EngineConfig(
            connections_per_origin=args.connections,
            pipeline_depth=args.depth,
            pipelining=not args.no_pipeline,
            inflight_budget=args.inflight_budget,
            ca_file=args.ca_file,
        ),
        cache_dir=(args.cache_dir or default_cache_dir()) if args.cache else None,
        lanes=[(n, w or 1.0) for n, w in args.interface] if args.interface else None,
    )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    sink = _CliSink(args.out, progress=args.split and sys.stderr.isatty())
    requests = []
    for i, url in enumerate(args.urls):
        req = FetchRequest(id=str(i), method="HEAD" if args.head else "GET", url=url,
                           headers=list(args.header), decode=args.decode, split=args.split)
        sink.results[req.id] = _Result(req)
        requests.append(req)
    engine = FetchService(config)
    try:
        if args.split:
            engine.splitter()  # named interfaces are checked (and found) before anything is fetched or timed
        start = time.monotonic()
        result = await engine.fetch(requests, sink, Page(address_space=args.as_page))
        # A resource that changed during a split fetch starts over once, from scratch.
        changed = [r.request for r in sink.results.values()
                   if r.request.split and r.error is not None and r.error.code == "resource_changed"]
        if changed:
            for req in changed:
                sink.results[req.id] = _Result(req)
            await engine.fetch(changed, sink, Page(address_space=args.as_page))
        elapsed = time.monotonic() - start  # the last byte; closing connections is not part of the fetch
    except ValueError as e:  # a bad --interface or interface policy
        print(f"lanefetch: {e}", file=sys.stderr)
        return 2
    finally:
        await engine.aclose()
    results = [sink.results[r.id] for r in requests]
    if args.json:
        json.dump({
            "elapsed_s": round(elapsed, 6),
            "connections": result.connections,
            "max_concurrent_connections": result.max_concurrent_connections,
            "requests": [_request_json(r) for r in results],
        }, sys.stdout, indent=2)
        print()
    else:
        for r in results:
            conn = r.report.connection if r.report else None
            where = f"conn {conn.id} #{conn.pipeline_position} depth {conn.pipeline_depth}" if conn else "-"
            if r.report is not None and r.report.cache != "none":
                where = f"cache {r.report.cache}" if conn is None else f"{where} ({r.report.cache})"
            status = r.status if r.error is None else f"ERR {r.error.code}"
            print(f"{status!s:>8} {r.bytes:>10} B  {where:<26} {r.request.url}")
            for lane in (r.report.lanes or []) if r.report else []:
                rate = "-" if lane.throughput_bps is None else f"{lane.throughput_bps / 1e6:.2f} Mbit/s"
                state = f"  down: {lane.down}" if lane.down else ""
                print(f"{'':>8} {lane.bytes:>10} B  lane {lane.interface} ({lane.requests} requests, {rate}){state}")
        print(f"{len(results)} requests in {elapsed:.3f} s over {result.connections} connections "
              f"(at most {result.max_concurrent_connections} at once)")
    failed = [r for r in results if r.error is not None]
    if failed:
        first = failed[0]
        assert first.error is not None
        print(f"lanefetch: {len(failed)} of {len(results)} requests failed; first: {first.request.url}: "
              f"{first.error.code}: {first.error.message}", file=sys.stderr)
        return 1
    return 0


def _cache_command(args: argparse.Namespace) -> int:
    from .cache.sqlite_store import SqliteStore

    directory: Path = args.cache_dir or default_cache_dir()
    store = SqliteStore(directory, ServiceConfig().cache_max_bytes)
    try:
        if args.action == "clear":
            print(f"removed {store.clear()} entries from {store.path}")
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
        for path in installer.install(p.targets, exe):
            print(f"registered {path} -> {exe}")
    except (FileNotFoundError, PermissionError) as e:
        hint = " (system-wide needs administrator rights)" if args.system and isinstance(e, PermissionError) else ""
        print(f"lanefetch: {e}{hint}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lanefetch", description="Pipelined HTTP/1.1 fetching for slow links.")
    p.add_argument("--version", action="version", version=f"lanefetch {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fetch", help="fetch URLs as one batch over pipelined persistent connections")
    f.add_argument("urls", nargs="+", metavar="URL")
    f.add_argument("--json", action="store_true", help="print one JSON object with timings per request")
    f.add_argument("--out", type=Path, help="write each body to DIR/<basename of the URL path>")
    f.add_argument("--no-pipeline", action="store_true", help="one request at a time per connection")
    f.add_argument("--connections", type=int, default=4, metavar="N", help="connections per origin (4)")
    f.add_argument("--depth", type=int, default=16, metavar="N", help="maximum pipeline depth (16)")
    f.add_argument("--inflight-budget", action="store_true",
                   help="bound an origin's unanswered requests to about two bandwidth-delay products")
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
    d = sub.add_parser("doctor", help="check the helper's registration with each browser and say how to fix it")
    d.add_argument("--browser", choices=["all", *(b.id for b in BROWSERS)], default="all")
    d.add_argument("--chromium-user-data-dir", type=Path, metavar="DIR",
                   help="check the registration for a Chromium --user-data-dir")
    d.add_argument("--home", type=Path, default=Path.home(), help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if os.environ.get("LANEFETCH_LOG"):
        logging.basicConfig(level=os.environ["LANEFETCH_LOG"], stream=sys.stderr, format="%(name)s %(message)s")
    if args.command == "fetch":
        if args.connections < 1 or args.depth < 1:
            print("lanefetch: --connections and --depth must be at least 1", file=sys.stderr)
            return 2
        try:
            return asyncio.run(_fetch(args))
        except KeyboardInterrupt:
            return 130
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
