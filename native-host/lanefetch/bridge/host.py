"""`lanefetch-host`: the native-messaging host. Reads framed JSON from the browser on stdin, runs
batches through the engine, streams head/body/end/error/timing/batch_done back on stdout.

A bad message gets an error back and changes nothing else; the host only exits when the browser
closes the port (stdin EOF) or ends it with SIGTERM/SIGHUP, and cleans up the same way after either."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .. import log_setup, protocol, stop_signals
from ..cache.http_cache import cache_url
from ..cache.location import default_cache_dir
from ..cache.store import StoreStats
from ..engine import DeliveredHead, EngineConfig, FetchError, FetchRequest, Page, TimingReport
from ..engine.pool_plan import Handshake
from ..engine.request import Origin, parse_target, site_name_problem
from ..lanes.interface_report import PolicyAnswer, PolicyChange, list_or_change
from ..prefetch.page_loads import LoadEnded, PageLoads
from ..service import FetchService, ServiceConfig
from .framing import BadFrame, FrameDecoder, MessageTooLarge, encode
from .stdio import FrameWriter, open_stdio
from .system_proxy import NONE as NO_SYSTEM_PROXY
from .system_proxy import Found as SystemProxyFound
from .system_proxy import detect_here as detect_system_proxy

if TYPE_CHECKING:
    # Proxy mode (Firefox) pulls in `cryptography` (~0.2 s of start-up): imported when a Firefox says hello.
    from ..proxy.response_tally import DeliveredResponse
    from ..proxy.service import ProxyService

log = logging.getLogger("lanefetch.host")

# Raw body bytes per message: base64 grows them by 4/3, and the JSON around them stays far below
# the rest of the 1 MiB limit (ids are at most 128 characters).
BODY_CHUNK = 640 * 1024
TEST_UPSTREAM_CA_ENV = "LANEFETCH_TEST_UPSTREAM_CA_FILE"
RTT_MEMORY = 512  # origins whose newest connect time is remembered
#: Seconds between `working` messages for a running batch (well under the extension's 15-20 s timers).
WORKING_INTERVAL_S = 5.0
WARM_UP_S = 5.0  # the longest hello waits for the start-up work (a loaded machine); then it answers anyway
TEST_WORKING_INTERVAL_ENV = "LANEFETCH_TEST_WORKING_INTERVAL"  # tests: a shorter interval
# The system's proxy settings are read again this often after hello (bridge/system_proxy.py): a running browser
# follows a change of them at once.
SYSTEM_PROXY_RECHECK_S = 10.0
# The longest hello waits for that read after the start-up work (gsettings is given 2 s a call, and at most two calls
# are made; the WPAD lookup, made only where a setting asks for WPAD alone, 2 s more): a store that does not answer
# (a registry, a home directory that hangs) is taken as no proxy found, as a gsettings that does not answer is, and
# the watch tells what the read finds when it ends (so too a WPAD server found after calls that took their whole
# time). WARM_UP_S and this stay within the extension's 10 s for a hello.
SYSTEM_PROXY_READ_S = 4.0
TEST_SYSTEM_PROXY_RECHECK_ENV = "LANEFETCH_TEST_SYSTEM_PROXY_RECHECK"  # tests: a shorter interval

Send = Callable[[dict[str, Any]], Awaitable[None]]


class PortClosed(ConnectionError):
    """The browser closed its end of the port (it quit, or the extension disconnected): nothing the host says is
    read any more. Serving ends as at stdin's end, not as a message that failed."""


class _BatchSink:
    """Turns engine callbacks for one batch into protocol messages; remembers which requests were answered (end or
    error), so a batch that fails anyway answers exactly the others."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.answered: set[str] = set()
        self.given_up: set[str] = set()  # answered by the failed batch: whatever the engine still says is dropped

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        if request.id in self.given_up:
            return
        msg = protocol.head(request.id, head)
        try:
            encode(msg)
        except MessageTooLarge as e:
            raise FetchError("too_large", f"response head too large to forward: {e}") from None
        await self._send(msg)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        for i in range(0, len(data), BODY_CHUNK):
            # Checked before each message: a cancel may answer the request while an earlier piece waits for the port,
            # and nothing of its body may follow its error (once its batch is done the id is the browser's again).
            if request.id in self.answered or request.id in self.given_up:
                return
            await self._send(protocol.body(request.id, data[i : i + BODY_CHUNK]))

    async def end(self, request: FetchRequest, body_bytes: int, trailers: list[tuple[str, str]]) -> None:
        if request.id in self.given_up:
            return
        self.answered.add(request.id)
        await self._send(protocol.end(request.id, body_bytes, trailers))

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        if request.id in self.given_up:
            return
        self.answered.add(request.id)
        await self._send(protocol.request_error(request.id, error))

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        if request.id in self.given_up:
            return
        await self._send(protocol.timing(request.id, report))

    async def give_up(self, requests: list[FetchRequest], why: str) -> None:
        """The batch failed: every request not answered yet gets `internal` with its id, and nothing more."""
        for r in requests:
            if r.id not in self.answered:
                self.answered.add(r.id)
                self.given_up.add(r.id)
                await self._send(protocol.error("internal", why, r.id))


def _to_request(raw: dict[str, Any]) -> FetchRequest:
    body = None
    if "body" in raw:
        try:
            body = base64.b64decode(raw["body"], validate=True)
        except (binascii.Error, ValueError):
            raise FetchError("bad_message", "request body is not valid base64") from None
    return FetchRequest(
        id=raw["id"], method=raw["method"], url=raw["url"], headers=[(k, v) for k, v in raw["headers"]],
        body=body, resource_type=raw.get("resource_type", "other"), priority=raw.get("priority"),
        decode=bool(raw.get("decode", False)), split=bool(raw.get("split", False)),
        browser_warm=bool(raw.get("browser_warm", False)),
    )


class _ProxyReports:
    """What the proxy tells the extension about the requests it fetched (the timing panel's records)."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def proxied(self, context_id: str, request: FetchRequest) -> None:
        await self._send(protocol.proxied(context_id, request))

    async def failed(self, request: FetchRequest, error: FetchError) -> None:
        await self._send(protocol.request_error(request.id, error))

    async def timing(self, request: FetchRequest, report: TimingReport,
                     response: DeliveredResponse | None = None) -> None:
        await self._send(protocol.timing(request.id, report, response))


def _origin_of(url: str) -> str | None:
    try:
        return str(parse_target(url).origin)
    except FetchError:
        return None


def _to_page(raw: dict[str, Any]) -> Page:
    return Page(
        address_space=raw["address_space"], top_site=raw.get("top_site", ""),
        url=raw.get("url"), private_browsing=bool(raw.get("private_browsing", False)),
        frame_site=raw.get("frame_site", ""), cookie_store=raw.get("cookie_store", ""),
    )


class Host:
    def __init__(self, fetcher: FetchService, send: Send,
                 system_proxy: Callable[[bool], SystemProxyFound] = detect_system_proxy) -> None:
        self.fetcher = fetcher
        self._send = send
        # Where a system proxy is set, and the WPAD server (told in hello), read in a thread; given whether the
        # browser's own setting is auto-detection (the extension's auto_detect: WPAD is then looked up too).
        self.system_proxy = system_proxy
        self.system_proxy_recheck = float(os.environ.get(TEST_SYSTEM_PROXY_RECHECK_ENV) or SYSTEM_PROXY_RECHECK_S)
        self.system_proxy_limit = SYSTEM_PROXY_READ_S
        self.browser_auto_detect = False
        self._system_proxy_said = NO_SYSTEM_PROXY
        self._system_proxy_watch: asyncio.Task[None] | None = None
        self._system_proxy_wake = asyncio.Event()  # auto_detect changed: read again now
        # The read under way (or ended, not taken yet), and the browser_auto_detect it was started with
        self._system_proxy_read: tuple[asyncio.Future[SystemProxyFound], bool] | None = None
        self.proxy: ProxyService | None = None  # proxy mode, started by a Firefox hello
        self._batches: dict[str, asyncio.Task[None]] = {}
        self._batch_ids: dict[str, list[str]] = {}
        self.working_interval = float(os.environ.get(TEST_WORKING_INTERVAL_ENV) or WORKING_INTERVAL_S)
        self._live_ids: set[str] = set()
        self._reports: set[asyncio.Future[None]] = set()
        self._rtts: dict[str, float] = {}  # each origin's newest connect time (s), newest last
        fetcher.engine.on_connected = self._connected
        # Chromium's batches go through the page loads: learned (recorded per load), answered from a page's flight
        # where fidelity allows, the rest through the service (prefetch/page_loads.py).
        self.loads = PageLoads(fetcher, fetcher.cache_for, self._page_ended, link_room=fetcher.link_room,
                               documents_whole=True)
        cache = fetcher.cache_for(Page(private_browsing=False))
        if cache is not None:
            cache.on_cleared(self._cleared_elsewhere)

    def _cleared_elsewhere(self) -> None:
        """Another process cleared the cache database (the other browser's helper, `lanefetch cache clear`): what
        the loads learned before it is forgotten, as at a clear of the host's own (_cache_command). (The service
        heard it too: FetchService._cache.)"""
        self.loads.forget()
        if self.proxy is not None:
            self.proxy.loads.forget()
            self.proxy.fetcher.forget_learned()

    async def handle(self, item: dict[str, Any] | BadFrame) -> None:
        """One message from the browser. Whatever goes wrong with it is answered and ends nothing else: a bug
        in handling one message is logged and reported as `internal`, and the host reads the next."""
        try:
            await self._handle(item)
        except PortClosed:
            raise  # no one to answer: serve() ends
        except Exception as e:
            kind = item.get("type") if isinstance(item, dict) else None
            log.exception("handling a %.40r message failed", kind)
            said = f"the helper failed to handle a {kind!r:.40} message: {e!r}"
            await self._send(protocol.error("internal", said))
            nonce = item.get("nonce") if isinstance(item, dict) else None
            if isinstance(nonce, str) and len(nonce) <= 128:  # the pages that wait for an answer get theirs
                if kind == "cache":
                    await self._send(protocol.cache_error(nonce, said))
                elif kind == "interfaces":
                    await self._send(protocol.interfaces_state(nonce, PolicyAnswer(None, "", said)))

    async def _handle(self, item: dict[str, Any] | BadFrame) -> None:
        if isinstance(item, BadFrame):
            if item.report:
                await self._send(protocol.error(item.code, item.reason))
            # Name every request the frame named (not those of other batches under way): the extension lets the
            # browser fetch them at once instead of waiting for its timeout.
            for rid in item.ids:
                if rid not in self._live_ids:
                    await self._send(protocol.error(item.code, f"not fetched: {item.reason}", rid))
            return
        reason = protocol.check(item, "ToHost")
        if reason is not None:
            await self._reject(item, reason)
            return
        kind = item["type"]
        if kind == "hello":
            if item["browser"] == "firefox" and item["protocol"] == protocol.PROTOCOL_VERSION and self.proxy is None:
                from ..proxy.service import ProxyService

                self.proxy = ProxyService(self.fetcher.config.engine, _ProxyReports(self._send),
                                          records=self.fetcher.cache_for, page_ended=self._page_ended,
                                          evicted=self._listener_evicted, cap=self.fetcher.cap)
                # Its upstream connections show each origin's round trip too: the extension sends fast ones direct.
                self.proxy.fetcher.engine.on_connected = self._connected
            # The start-up work a first page would otherwise share the machine with, done before the answer: until
            # it comes the extension holds the helper as starting and leaves pages to the browser untouched. Done
            # after it, a page loaded at once paid for it (~0.4 s of CPU on a 2-core machine: Firefox's first LAN
            # page 0.90-0.92x, docs/performance.md). Compile the message validator, open the cache's database
            # (only an existing one: a helper that serves only private browsing creates nothing on disk).
            protocol.warm_up()
            self._read_system_proxy_start()  # meanwhile, as the start-up work goes on
            where = self.fetcher.config.cache_dir
            cache = self.fetcher.cache_for(Page(private_browsing=False)) if where and where.exists() else None
            if cache is not None:
                cache.submit(lambda _store: None)
            # The pages are read for what they name: the discovery worker (its start blocks the event loop ~40 ms
            # and its imports take ~0.3 s of CPU); Firefox's by the proxy's own loads.
            loads = self.proxy.loads if self.proxy is not None else \
                self.loads if item["browser"] == "chromium" else None
            if loads is not None:
                try:
                    async with asyncio.timeout(WARM_UP_S):
                        await loads.warmed()
                except Exception as e:  # never in the hello's way: a first page then starts what failed here
                    log.warning("start-up work before the hello failed or took too long: %r", e)
            # Read at each hello, bounded (SYSTEM_PROXY_READ_S): the extension keeps lanefetch off while the browser
            # follows a system proxy this helper would fetch around.
            try:
                system_proxy = await self._read_system_proxy()
            except TimeoutError:
                log.warning("the system's proxy settings did not answer within %.0f s: taken as none until they do",
                            self.system_proxy_limit)
                system_proxy = NO_SYSTEM_PROXY
            self._system_proxy_said = system_proxy
            await self._send(protocol.hello(item["protocol"], self.proxy.secret if self.proxy else None,
                                            system_proxy.where, system_proxy.wpad))
            if item["protocol"] == protocol.PROTOCOL_VERSION and self._system_proxy_watch is None:
                self._system_proxy_watch = asyncio.create_task(self._watch_system_proxy())
        elif kind == "proxy_open":
            if self.proxy is None:
                reason = "proxy_open needs a Firefox hello first"
                await self._send(protocol.error("bad_message", reason, item["context_id"]))
                return
            page = _to_page(item["page"])
            try:
                listener = await self.proxy.open(item["context_id"], page)
            except Exception as e:  # e.g. no file descriptor left to listen with: the context's own error
                log.exception("proxy_open %.128r", item["context_id"])
                await self._send(protocol.error("internal", f"no proxy for this page: {e!r}", item["context_id"]))
                return
            await self._send(protocol.proxy_ready(item["context_id"], listener.port, listener.split_port))
        elif kind == "https_sites":
            if self.proxy is None:
                await self._send(protocol.error("bad_message", "https_sites needs a Firefox hello first"))
                return
            from ..proxy.ca_certs import Site
            from ..proxy.ca_sites import SiteState

            wanted, refused = [], []
            for s in item["sites"]:
                site = Site(s["scope"], s["name"].lower())
                problem = site_name_problem(site.name)
                if problem is None:
                    wanted.append(site)
                else:  # never reaches certutil or X.509 (a non-ASCII name or a NUL there raised)
                    refused.append(SiteState(site, "failed", detail=f"not a host name: {problem}"))
            result = await self.proxy.sync_https(wanted)
            result = dataclasses.replace(result, sites=[*result.sites, *refused])
            await self._send(protocol.https_state(item.get("nonce"), result))
        elif kind == "browser_fetched":
            # Requests the browser fetched itself over its own h2/h3 connection (the page has no flight): learned, as a
            # browser_warm request declined here would be. A request that is not valid is left out, not answered.
            page = _to_page(item["page"])
            requests = []
            for raw in item["requests"]:
                try:
                    requests.append(_to_request(raw))
                except FetchError:
                    continue
            self.loads.browser_fetched(requests, page)
        elif kind == "invalidate":
            # Chromium: the page sent a request of an unsafe method (POST, PUT, DELETE…) that the browser sends
            # itself. The browser's cache would forget what it held for the URL (RFC 9111 §4.4), and the pages it
            # serves here would see it: this one forgets too, before the page's next batch is read (messages are
            # handled in order; a plan reads the cache after every write submitted before it). The extension sends
            # the request's URL before the request goes on, and again with the Location and Content-Location of a
            # non-error response on its origin once it came.
            page = _to_page(item["page"])
            cache = self.fetcher.cache_for(page)
            writes = cache.writes(page.partition) if cache is not None else None
            for url in item["urls"]:
                if _origin_of(url) is None:
                    continue
                if writes is not None:
                    writes.delete_url(cache_url(url))
                self.loads.invalidate(page, url)
        elif kind == "browser_document":
            # The bytes of a document the browser loads itself (a page on a private address), as they arrive: read
            # for what it names as if the helper had fetched it. Its request came first (browser_fetched).
            try:
                data = base64.b64decode(item["data"], validate=True)
            except binascii.Error:
                await self._send(protocol.error("bad_message", "browser_document: data is not base64"))
                return
            self.loads.browser_document(_to_page(item["page"]), item["id"], item.get("status"),
                                        item.get("content_type"), data, item.get("end"),
                                        policy=item.get("content_security_policy", False))
        elif kind == "browser_fields":
            # The browser's Accept per kind, seen on the extension's own requests that never left the browser: a
            # new user's first page can have its images and stylesheets (Firefox: fonts, Chromium: scripts)
            # prefetched before the browser's first request of each kind taught them. Firefox's go to the proxy's
            # loads, Chromium's to the batches'.
            accept = {(a["destination"], a["mode"]): a["value"] for a in item["accept"]}
            loads = self.proxy.loads if self.proxy is not None else self.loads
            await loads.browser_accept(item["user_agent"], accept)
        elif kind == "proxy_close":
            if self.proxy is not None:
                await self.proxy.close(item["context_id"])
        elif kind == "preconnect":
            # Firefox: the proxy's engine fetches that page's requests, so its pool is the one to connect.
            fetcher = self.proxy.fetcher if self.proxy is not None else self.fetcher
            page = _to_page(item["page"])
            context_id = item.get("context_id")
            # Firefox names the page context whose tab navigates: its later requests are the page's load (recorded
            # for the next ones, its flight started if earlier loads taught one), unless they will not come here
            # (Firefox's own h2 carries them, or the context closed), and then nothing is connected for it either.
            if self.proxy is not None and isinstance(context_id, str):
                if item.get("direct") is True:  # the document went direct (step-aside): no page of ours
                    self.proxy.navigation_elsewhere(context_id)
                    return
                if not await self.proxy.navigation(context_id, item["url"]):
                    return
            handshake: Handshake = "tcp" if item.get("handshake") == "tcp" else "full"
            origin = _origin_of(item["url"])
            # What earlier sessions learned of the document's origin (pipelining, protocol, the link), before the
            # preconnect makes its pool: a pool keeps the policy it was made with. (Firefox too: the proxy's service
            # keeps its records in the host's cache database.)
            await fetcher.recall(item["url"], page)
            remembered = fetcher.remembered_round_trip(item["url"], page)
            if origin is not None and origin not in self._rtts and remembered is not None:
                # The extension's speed probe waits for a round trip of this host: give it the one an earlier
                # session measured now, not a handshake later (a measured one follows and replaces it). Sent in
                # order: it reaches the extension before the pong of the probe's ping.
                await self._send(protocol.origin_rtt(origin, remembered, remembered=True))
            # (Connects always; where a connection is open already, its connect time answers: Firefox waits for one
            # before routing.)
            if not fetcher.preconnect(item["url"], page, handshake) and origin is not None and origin in self._rtts:
                self._report_rtt(origin, self._rtts[origin])
            # The rest of the page's site, as its earlier loads taught.
            self._in_background(fetcher.preconnect_site(page, handshake), "preconnecting a site's origins")
            if fetcher is self.fetcher:
                # The page's load: recorded for the next ones, its flight started if earlier loads taught one.
                self.loads.navigation(page)
                if item.get("ask_flight") is True:
                    # The navigation raced the attach: its document is the browser's. Without a learned flight the
                    # extension navigates again, so that the document comes through here and what it names is read.
                    self._in_background(self._tell_flight(item["url"], page), "telling a page's flight plan")
        elif kind == "auto_detect":
            # Not read here (a read may take seconds, and messages are handled in turn): the watch reads at once.
            if item["on"] != self.browser_auto_detect:
                self.browser_auto_detect = item["on"]
                self._system_proxy_wake.set()
        elif kind == "ping":
            pong: dict[str, Any] = {"type": "pong"}
            if "nonce" in item:
                pong["nonce"] = item["nonce"]
            await self._send(pong)
        elif kind == "cancel":
            ids = list(item.get("ids", []))
            ids += self._batch_ids.get(item.get("batch_id", ""), [])
            await self.loads.cancel(ids)
        elif kind == "batch":
            await self._start_batch(item)
        elif kind == "cache":
            await self._send(await self._cache_command(item["action"], item.get("nonce")))
        elif kind == "interfaces":
            await self._send(await self._interfaces_command(item))

    async def _listener_evicted(self, context_id: str) -> None:
        """A page context's listener was closed to make room for another's: the extension forgets the context (its
        tab's next request opens one again) instead of routing it to a port that is closed, or another context's."""
        await self._send(protocol.error("cancelled", "the helper closed this page context's proxy listener: "
                                        "the oldest of too many open at once", context_id))

    async def _tell_flight(self, url: str, page: Page) -> None:
        await self._send(protocol.flight_plan(url, await self.loads.flies(page)))

    def _connected(self, origin: Origin, connect_s: float) -> None:
        """Tell the extension each origin's round trip as soon as a connection shows it (it steps aside where
        pipelining cannot pay)."""
        key = str(origin)
        self._rtts.pop(key, None)
        self._rtts[key] = connect_s
        if len(self._rtts) > RTT_MEMORY:
            del self._rtts[next(iter(self._rtts))]
        self._report_rtt(key, connect_s)

    async def _page_ended(self, ended: LoadEnded) -> None:
        """A page load ended: the extension's timing panel shows what its flight did (loads that neither flew nor
        taught anything say nothing)."""
        if ended.flight is not None or ended.recorded:
            try:
                await self._send(protocol.page_report(ended.url, ended.page.top_site, ended.recorded, ended.flight,
                                                      ended.first_request))
            except ConnectionError:  # the browser closed the port (it quit): the loads still open end with no reader
                log.debug("the report of %s has no reader: the browser closed the port", ended.url)

    def _in_background(self, work: Awaitable[object], what: str) -> None:
        async def run() -> None:
            try:
                await work
            except PortClosed:  # the browser quit: nobody to tell
                pass
            except Exception:  # nothing waits for it: a failure is logged, never the host's end
                log.exception("%s failed", what)

        task = asyncio.ensure_future(run())
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    def _report_rtt(self, origin: str, connect_s: float) -> None:
        self._in_background(self._send(protocol.origin_rtt(origin, connect_s)), "reporting a round trip")

    async def _reject(self, item: dict[str, Any], reason: str) -> None:
        kind = item.get("type")
        if kind == "batch" and await self._start_valid_part(item):
            return
        await self._send(protocol.error("bad_message", f"invalid {kind!r} message: {reason}"))
        nonce = item.get("nonce")
        if kind == "interfaces" and isinstance(nonce, str) and len(nonce) <= 128:
            # The options page waits for its answer: give it the reason (nothing was changed).
            await self._send(protocol.interfaces_state(nonce, PolicyAnswer(None, "", f"not changed: {reason}")))
        if kind == "batch" and isinstance(item.get("requests"), list):
            # Name every request we can, so the extension lets the browser fetch them at once; not one another batch
            # is fetching (answers go by id: the error would answer that request).
            for raw in item["requests"]:
                rid = raw.get("id") if isinstance(raw, dict) else None
                if isinstance(rid, str) and 0 < len(rid) <= 128 and rid not in self._live_ids:
                    await self._send(protocol.error("bad_message", f"not fetched: {reason}", rid))

    async def _start_valid_part(self, item: dict[str, Any]) -> bool:
        """A batch whose only faults are in some of its requests: those get their error, the others are fetched.
        False (nothing done) when the batch itself is at fault or none of its requests is valid."""
        raws = item.get("requests")
        if not isinstance(raws, list):
            return False
        ok = [protocol.valid(raw, "Request") for raw in raws]
        good = [raw for raw, fine in zip(raws, ok, strict=True) if fine]
        if not good or not protocol.valid({**item, "requests": good}, "ToHost"):
            return False
        answered = {raw["id"] for raw in good} | self._live_ids  # an invalid copy of their id says nothing
        worded = 0  # the reason costs a few ms per request (jsonschema): the first ones are worded
        for raw, fine in zip(raws, ok, strict=True):
            rid = raw.get("id") if isinstance(raw, dict) else None
            if not fine and isinstance(rid, str) and 0 < len(rid) <= 128 and rid not in answered:
                worded += 1
                why = protocol.check(raw, "Request") if worded <= 20 else "see the batch's first invalid requests"
                await self._send(protocol.error("bad_message", f"invalid request: {why}", rid))
        await self._start_batch({**item, "requests": good})
        return True

    async def _cache_command(self, action: str, nonce: str | None) -> dict[str, Any]:
        """Stats of (or, for "clear", empty first) the persistent cache and the private-browsing one."""
        persistent = self.fetcher.cache_for(Page(private_browsing=False))
        private = self.fetcher.cache_for(Page(private_browsing=True))
        if persistent is None or private is None:
            return protocol.cache_stats(nonce, None, StoreStats(0, 0, "memory"), 0 if action == "clear" else None)
        try:
            cleared = None
            if action == "clear":
                self.loads.forget()  # learned pages are cleared with the cache, the loads under way's too
                self.fetcher.forget_learned()  # and the origin records, the session's learning with them
                if self.proxy is not None:
                    self.proxy.loads.forget()  # Firefox's (kept in the same database)
                    self.proxy.fetcher.forget_learned()
                cleared = await persistent.clear() + await private.clear()
            return protocol.cache_stats(nonce, await persistent.stats(), await private.stats(), cleared)
        except Exception as e:  # an unreadable store is reported, never fatal
            log.warning("cache %s failed: %r", action, e)
            verb = "cleared" if action == "clear" else "read"
            return protocol.cache_error(nonce, f"the helper's cache could not be {verb}: {e}")

    async def _interfaces_command(self, item: dict[str, Any]) -> dict[str, Any]:
        """The options page lists the interfaces for lanes or sets one's policy: the CLI's code and file (read
        afresh each time); after a change, later split requests use lanes chosen under the new policy."""
        change = None
        if item["action"] == "set":
            p = item["policy"]
            cap = p.get("daily_cap_bytes", -1)  # absent: unchanged; null or 0: no cap
            change = PolicyChange(enabled=p.get("enabled"), weight=p.get("weight"), metered=p.get("metered"),
                                  daily_cap_bytes=None if cap == -1 else (cap or 0))
        answer = await asyncio.to_thread(list_or_change, item.get("name"), change)
        if answer.changed:
            await self.fetcher.lanes_changed()
            if self.proxy is not None:  # Firefox: split requests arrive through the proxy's engine
                await self.proxy.fetcher.lanes_changed()
        return protocol.interfaces_state(item.get("nonce"), answer)

    async def _start_batch(self, item: dict[str, Any]) -> None:
        batch_id: str = item["batch_id"]
        if batch_id in self._batches:
            # Its requests would be filed under the running batch's id (a cancel by batch id would miss one of
            # them): refused whole, each request answered, the running batch untouched.
            for raw in item["requests"]:
                if raw["id"] not in self._live_ids:
                    await self._send(protocol.error("bad_message", "batch id already in use", raw["id"]))
            return
        requests: list[FetchRequest] = []
        # An id this batch names twice gets one error and none of its copies is fetched: answers are routed by id
        # alone, so one copy's error and the other's response would answer the id twice.
        counts = Counter(raw["id"] for raw in item["requests"])
        repeated: set[str] = set()
        for raw in item["requests"]:
            if counts[raw["id"]] > 1:
                if raw["id"] not in repeated:
                    repeated.add(raw["id"])
                    await self._send(protocol.error("bad_message", "request id repeated in the batch", raw["id"]))
                continue
            if raw["id"] in self._live_ids:
                await self._send(protocol.error("bad_message", "request id already in use", raw["id"]))
                continue
            try:
                requests.append(_to_request(raw))
            except FetchError as e:
                await self._send(protocol.request_error(raw["id"], e))
            except Exception as e:  # a bug with this request: its error, the others go on
                log.exception("request %.128r of batch %.128r", raw["id"], batch_id)
                await self._send(protocol.error("internal", f"request not taken: {e!r}", raw["id"]))
        page = _to_page(item["page"])
        ids = [r.id for r in requests]
        self._live_ids.update(ids)
        self._batch_ids[batch_id] = ids
        task = asyncio.create_task(self._run_batch(batch_id, requests, page), name=f"batch-{batch_id}")
        self._batches[batch_id] = task

    async def _run_batch(self, batch_id: str, requests: list[FetchRequest], page: Page) -> None:
        try:
            await self._fetch_batch(batch_id, requests, page)
        except PortClosed:  # the browser quit while the batch ran: nobody to answer, no failure to log
            log.debug("batch %.128r ended with the port", batch_id)

    async def _fetch_batch(self, batch_id: str, requests: list[FetchRequest], page: Page) -> None:
        sink = _BatchSink(self._send)
        connections = max_concurrent = 0
        working = asyncio.create_task(self._say_working(batch_id), name=f"working-{batch_id}")
        try:
            result = await self.loads.fetch(requests, sink, page)
            connections, max_concurrent = result.connections, result.max_concurrent_connections
        except Exception as e:  # a bug must not take the host down: each request not answered yet gets its error
            log.exception("batch %s failed", batch_id)
            await sink.give_up(requests, f"batch {batch_id} failed: {e!r}")
        finally:
            working.cancel()
            self._live_ids.difference_update(r.id for r in requests)
            self._batch_ids.pop(batch_id, None)
            self._batches.pop(batch_id, None)
        await self._send(protocol.batch_done(batch_id, connections, max_concurrent))

    async def _say_working(self, batch_id: str) -> None:
        """While the batch runs: the extension's timers wait for a stopped helper, not for a slow link. A pipelined
        answer is held until its connection drains (engine/pipeline.py), which on a 384 kbit/s link can take longer
        than the extension's 20 s wait for a head: it then let the browser fetch the request as well (measured:
        the Rust book on `wcdma` fetched 543 kB twice)."""
        while True:
            await asyncio.sleep(self.working_interval)
            try:
                await self._send(protocol.working(batch_id))
            except PortClosed:  # nobody to tell
                return

    async def _watch_system_proxy(self) -> None:
        """A system proxy set or removed while the helper runs (the environment cannot change, GNOME's, macOS's and
        Windows' settings can), or a WPAD server found or gone: told to the extension when what it was last told no
        longer holds. Read every `system_proxy_recheck` seconds, and at once when auto_detect changed."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.system_proxy_recheck):
                    await self._system_proxy_wake.wait()
            self._system_proxy_wake.clear()
            try:
                now = await self._read_system_proxy()
            except TimeoutError:  # still reading: its answer is taken next time, and no other read started meanwhile
                continue
            except Exception:  # read again next time; the extension keeps what it was told
                log.exception("reading the system's proxy settings failed")
                continue
            if now == self._system_proxy_said:
                continue
            self._system_proxy_said = now
            try:
                await self._send(protocol.system_proxy(now.where, now.wpad))
            except Exception as e:  # the browser is gone: nobody to tell
                log.debug("system proxy change not told: %r", e)
                return

    def _read_system_proxy_start(self) -> asyncio.Future[SystemProxyFound]:
        """The read of the system's proxy settings under way, or a new one. In a daemon thread of its own, not the
        loop's executor: a read that never ends then holds neither the executor's threads (DNS lookups run there)
        nor the helper's exit (asyncio.run and the interpreter wait for the executor's threads, never for daemons);
        and only one runs at a time. A read that ended is kept until a call takes it (a store slower than
        `system_proxy_limit` each time is still heard); the call after that reads again. A read that ended is
        dropped, not taken, when browser_auto_detect changed since it started (it may not have looked WPAD up)."""
        auto_detect = self.browser_auto_detect
        if self._system_proxy_read is not None:
            under_way, started_with = self._system_proxy_read
            if not under_way.done():
                return under_way
            self._system_proxy_read = None
            if started_with == auto_detect:
                return under_way
        loop = asyncio.get_running_loop()
        future: asyncio.Future[SystemProxyFound] = loop.create_future()
        self._system_proxy_read = (future, auto_detect)

        def settle(result: SystemProxyFound | BaseException) -> None:
            if future.cancelled():
                return
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
            future.exception()  # retrieved: a read nobody waits for any more (hello timed out) is not logged

        def read() -> None:
            result: SystemProxyFound | BaseException
            try:
                result = self.system_proxy(auto_detect)
            except Exception as e:
                result = e
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody to tell
                loop.call_soon_threadsafe(settle, result)

        threading.Thread(target=read, name="lanefetch-system-proxy", daemon=True).start()
        return future

    async def _read_system_proxy(self) -> SystemProxyFound:
        """Where a system proxy is set, from the read under way or a new one; TimeoutError if it did not end within
        `system_proxy_limit` (it goes on: the next call takes its answer)."""
        async with asyncio.timeout(self.system_proxy_limit):
            return await asyncio.shield(self._read_system_proxy_start())

    async def close(self) -> None:
        if self._system_proxy_watch is not None:
            self._system_proxy_watch.cancel()
            await asyncio.gather(self._system_proxy_watch, return_exceptions=True)
        for task in list(self._batches.values()):
            task.cancel()
        await asyncio.gather(*self._batches.values(), return_exceptions=True)
        if self.proxy is not None:
            await self.proxy.aclose()
        await self.loads.aclose()  # every load recorded (and reported) before the service and its cache close


def _too_large(message: dict[str, Any], e: MessageTooLarge) -> dict[str, Any]:
    """What goes out instead of a message the port cannot carry. An answer a page waits for by its nonce (the
    options page's interfaces list: 256 interfaces with 64 addresses each pass 1 MiB; the HTTPS sites' state, 256
    sites with long details) is that answer's error with that nonce, as a failed command's is: a bare error names no
    nonce, and the page waited for its timeout, then took the helper for unavailable (the HTTPS sites stayed
    "pending" with no word of why). Anything else is an error naming its request id, if it has one."""
    said = f"the helper's answer is too large for the browser's port ({e})"
    nonce = message.get("nonce")
    if isinstance(nonce, str) and len(nonce) <= 128:
        if message.get("type") == "interfaces_state":
            return protocol.interfaces_state(nonce, PolicyAnswer(None, "", said))
        if message.get("type") == "cache_stats":
            return protocol.cache_error(nonce, said)
        if message.get("type") == "https_state":
            return protocol.https_state_error(nonce, said)
    return protocol.error("too_large", str(e), message.get("id"))


async def serve(reader: asyncio.StreamReader, writer: FrameWriter, config: ServiceConfig) -> None:
    lock = asyncio.Lock()

    async def send(message: dict[str, Any]) -> None:
        try:
            frame = encode(message)
        except MessageTooLarge as e:  # never reached by body chunks; guards any other oversized message
            frame = encode(_too_large(message, e))
        async with lock:
            try:
                writer.write(frame)
                await writer.drain()
            except ConnectionError as e:  # the reading end is closed (BrokenPipeError, "Connection lost")
                raise PortClosed(str(e)) from e

    host = Host(FetchService(config), send)
    decoder = FrameDecoder()
    try:
        while True:
            data = await reader.read(256 * 1024)
            if not data:
                break  # the browser closed the port
            for item in decoder.feed(data):
                await host.handle(item)
    except PortClosed as e:  # closed before an answer went out: its stdin's end is not read first
        log.debug("the browser closed the port: %s", e)
    finally:
        await host.close()


async def _stdio_main(config: ServiceConfig, read_fd: int, write_fd: int) -> None:
    """Serves the port on stdio. Run under stop_signals: SIGTERM (Firefox ends a helper still running after its port
    closed that way before SIGKILL; so does a logout) and SIGHUP stop the host as its stdin's end does, serving
    cancelled and its clean-up run, so what the page loads under way taught is recorded."""
    reader, writer = await open_stdio(read_fd, write_fd, limit=FrameDecoder().max_size)
    await serve(reader, writer, config)


def _private_port_fds() -> tuple[int, int]:
    """The browser's port on descriptors no child process inherits; fds 0 and 1 then point elsewhere.

    Why: every process the helper starts (prefetch discovery's worker process and its forkserver, the
    resource tracker) inherits fds 0-2. A child holding the port's stdout kept the pipe open after the helper
    died, so the browser (and a test's harness) never saw the port close, and a child printing to it would
    corrupt the framing. os.dup makes non-inheritable copies (PEP 446) for the port; children get /dev/null as
    stdin and the log (stderr) as stdout. POSIX only: Windows children do not inherit these handles this way."""
    if sys.platform == "win32":
        return 0, 1
    read_fd, write_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return read_fd, write_fd


def main(argv: list[str] | None = None) -> int:
    """Entry point for browsers: they start the host with [manifest path or origin, extension id]."""
    # stdout belongs to the protocol: log only to stderr (browsers keep it in their own logs, or drop it), or to
    # LANEFETCH_LOG_FILE where one is named (appended to: every helper the browser starts writes there).
    log_setup.configure(os.environ, sys.stderr, "lanefetch-host %(levelname)s %(message)s",
                        file_format="%(asctime)s lanefetch-host[%(process)d] %(levelname)s %(message)s")
    # Tests only: trust exactly this CA for the origins (instead of the system store). Never set in normal use.
    test_ca = os.environ.get(TEST_UPSTREAM_CA_ENV) or None
    if test_ca:
        log.warning("%s is set: origins are verified against %s only (a test setting)", TEST_UPSTREAM_CA_ENV, test_ca)
    read_fd, write_fd = _private_port_fds()
    return stop_signals.run(_stdio_main(ServiceConfig(EngineConfig(ca_file=test_ca), cache_dir=default_cache_dir()),
                                        read_fd, write_fd))


if __name__ == "__main__":
    sys.exit(main())
