"""One proxy listener on 127.0.0.1 (ephemeral port) for one page context (top-level site, address
space, private browsing): the browser's requests arrive in absolute form, are checked for the
session secret, handed to the engine and answered as the origin's bytes arrive. A second port of the
same context takes the requests the extension wants split over the lanes (a proxied request cannot
carry a flag, so the port says it): each is fetched with `split` (the engine splits GETs without Range).

Failures before any response byte close the connection without an answer: Firefox then retries and
fails over to the next proxy in `proxy.onRequest`'s list (direct), so the page never sees a proxy
error. The URL is remembered briefly so those retries fail at once instead of fetching again.

Any local program can connect to these ports, so nothing is spent on a connection before it shows the secret:
the credentials are checked on each request's head, before its body is read (a refused request with a body
closes the connection unread); a connection has HEAD_TIMEOUT_S to deliver a whole head; and admission.py caps
how many connections are open, unauthenticated ones apart and closed oldest first."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import hmac
import itertools
import logging
import secrets
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from ..engine import DeliveredHead, FetchError, FetchRequest, Page, TimingReport
from ..engine.address_policy import may_connect
from ..engine.fetcher import ClosingFetcher
from ..engine.fields import Headers
from ..engine.host_names import SockAddr, resolve
from ..engine.render_quiet import is_render_blocking
from ..engine.request import Origin, parse_target
from ..engine.timing import RequestTiming, now
from .admission import Admission
from .gather import Gatherer
from .h2_server import H2BrowserConnection, H2StreamOut
from .request_meta import priority, resource_type
from .request_reader import BadRequest, Request, RequestHead, RequestReader
from .response_tally import DeliveredResponse, ResponseTally
from .response_writer import ResponseWriter, refusal
from .tls_terminator import TlsTerminator

log = logging.getLogger("lanefetch.proxy")

PROXY_USER = "lanefetch"
REALM = "lanefetch"
FAILED_MEMORY_S = 10.0
# A browser writes a request's head in one go as soon as its connection to the proxy is up (the request exists
# before the connection is opened), so on loopback a whole head takes milliseconds. 10 s leaves a loaded or
# swapping machine plenty of room while bounding how long a silent or trickling socket holds a descriptor. It runs
# from accept (or the end of the previous request) until the head is whole for a connection that has not yet
# shown the secret, and from the first byte of a head for one that has: Firefox keeps its idle connections to a
# proxy open between requests (115 s), which is not a stall. A closed idle connection costs Firefox only a new one.
HEAD_TIMEOUT_S = 10.0
# A CONNECT tunnel passed through: once one side ended (Firefox closes a tunnel's connection whole), the other has this
# long to end too, then both are closed. Passing the end on is all a tunnel can do; waiting for the origin to close
# after it left a silent origin holding the task, both sockets and an authenticated connection's place for ever.
TUNNEL_LINGER_S = 10.0
READ_SIZE = 64 * 1024
_ids = itertools.count(1)
# The extension keeps its records of proxied requests by id across helper processes (a helper that crashed and was
# started again counts from 1 anew): each process's ids carry a token of their own, so a new process's p1 never
# overwrites, or is taken for, the record of an earlier one's.
_RUN = secrets.token_hex(3)


def request_id() -> str:
    """A proxied request's id, unique to this process's run."""
    return f"p{_RUN}.{next(_ids)}"


class ProxyObserver(Protocol):
    """Who hears about proxied requests (the native port: the extension's timing records)."""

    async def proxied(self, context_id: str, request: FetchRequest) -> None: ...
    async def failed(self, request: FetchRequest, error: FetchError) -> None: ...
    async def timing(self, request: FetchRequest, report: TimingReport,
                     response: DeliveredResponse | None = None) -> None: ...


def basic_credentials(secret: str) -> str:
    return "Basic " + base64.b64encode(f"{PROXY_USER}:{secret}".encode()).decode("ascii")


class BrowserOut(Protocol):
    """Where one request's response goes: the browser's HTTP/1.1 connection (_H1Out) or an HTTP/2 stream
    (h2_server.H2StreamOut). Each raises OSError once the browser went away."""

    async def head(self, head: DeliveredHead) -> None: ...
    async def body(self, data: bytes) -> None: ...
    async def end(self, trailers: Headers) -> None: ...
    def watch(self, gone: Callable[[], None]) -> None: ...


class _H1Out:
    def __init__(self, writer: asyncio.StreamWriter, framing: ResponseWriter) -> None:
        self.writer = writer
        self.framing = framing

    async def _write(self, data: bytes) -> None:
        if data:
            self.writer.write(data)
            await self.writer.drain()  # backpressure: the engine reads no more until the browser took this

    async def head(self, head: DeliveredHead) -> None:
        await self._write(self.framing.head(head))

    async def body(self, data: bytes) -> None:
        await self._write(self.framing.body(data))

    async def end(self, trailers: Headers) -> None:
        await self._write(self.framing.end(trailers))

    def watch(self, gone: Callable[[], None]) -> None:
        """An HTTP/1.1 browser connection that went away is noticed at the next write."""


class _Responder:
    """Writes one request's response to the browser (the engine's sink for it)."""

    def __init__(self, out: BrowserOut, request: FetchRequest, engine: ClosingFetcher,
                 observer: ProxyObserver) -> None:
        self.out = out
        self.request = request
        self.engine = engine
        self.observer = observer
        self.started = False
        self.ok = False
        self.error_kind: str | None = None
        self.broken = False  # the browser went away
        self.tally = ResponseTally()  # what the browser got, for the extension's record (it sees no head itself)
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._giving_up: asyncio.Future[None] | None = None
        out.watch(self.abandon)

    def abandon(self) -> None:
        """The browser gave up on this response: its fetch is cancelled."""
        if self.broken:
            return
        self.broken = True
        self._giving_up = asyncio.ensure_future(self._give_up())  # held: a task nobody refers to may be collected
        self._giving_up.add_done_callback(lambda t: t.exception())

    async def _give_up(self) -> None:
        # The rest of its body is not read (over HTTP/1.1 its connection closes, over h2 its stream is reset), as a
        # browser does with a response it gave up on: reading it to the end would cost the link its bytes.
        await self.engine.cancel_and_close(self.request.id)
        await self.engine.cancel([self.request.id])  # a split fetch's pieces too

    async def _send(self, step: Callable[[], Awaitable[None]]) -> None:
        if self.broken:
            return
        try:
            await step()
        except OSError:
            self.abandon()

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        self.started = True
        self.tally.head(head)
        await self._send(lambda: self.out.head(head))

    async def body(self, request: FetchRequest, data: bytes) -> None:
        self.tally.body(data)
        if data:
            await self._send(lambda: self.out.body(data))

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        await self._send(lambda: self.out.end(trailers))
        self.ok = not self.broken

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self.error_kind = error.code
        await self.observer.failed(request, error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        try:
            await self.observer.timing(request, report, self.tally.result())
        finally:
            if not self.done.done():
                self.done.set_result(None)


class _MuxSink:
    """The engine takes one sink per batch; each request of a gathered batch has its own responder."""

    def __init__(self, sinks: dict[str, _Responder]) -> None:
        self._sinks = sinks

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        await self._sinks[request.id].head(request, head)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        await self._sinks[request.id].body(request, data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        await self._sinks[request.id].end(request, body_bytes, trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        await self._sinks[request.id].error(request, error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        await self._sinks[request.id].timing(request, report)


class ProxyListener:
    def __init__(self, engine: ClosingFetcher, page: Page, secret: str, observer: ProxyObserver, context_id: str,
                 *, connect_timeout: float = 15.0, tls: TlsTerminator | None = None,
                 head_timeout: float = HEAD_TIMEOUT_S, tunnel_linger: float = TUNNEL_LINGER_S,
                 admission: Admission[asyncio.StreamWriter] | None = None,
                 speaks_h2: Callable[[str, Page], Awaitable[bool]] | None = None) -> None:
        self.engine = engine
        self.page = page
        # The page the context's tab shows now (its document's URL, told by the extension: ProxyService.navigation):
        # the context's requests are that page's load (prefetch/page_loads.py). None until told.
        self.page_url: str | None = None
        self.context_id = context_id
        self.observer = observer
        self.connect_timeout = connect_timeout
        self.head_timeout = head_timeout
        self.tunnel_linger = tunnel_linger
        # Shared by all listeners of a session (ProxyService) so the total caps hold; a lone listener has its own.
        self.admission: Admission[asyncio.StreamWriter] = admission if admission is not None else Admission()
        self.tls = tls  # HTTPS sites the user opted into: their CONNECTs are terminated here
        # Is an origin known to speak HTTP/2? Its CONNECTs are tunnelled, opted in or not (_client), unless a tunnel
        # to it that this listener ended is still open (`_ending`, by origin, as ends_here asks too).
        self.speaks_h2 = speaks_h2
        self._ending: dict[Origin, int] = {}
        self._credentials = basic_credentials(secret).encode()
        self._gatherer = Gatherer(self._fetch_group)
        self._servers: list[asyncio.Server] = []
        self._clients: set[asyncio.Task[None]] = set()
        self._closing = False  # close() began: a browser connection's task it cancels ends quietly (_client)
        self._failed: dict[str, float] = {}
        self.port = 0
        self.split_port = 0  # requests arriving here are fetched split over the lanes

    async def start(self) -> int:
        for split in (False, True):
            server = await asyncio.start_server(functools.partial(self._client, split=split), "127.0.0.1", 0)
            self._servers.append(server)
        self.port, self.split_port = (int(s.sockets[0].getsockname()[1]) for s in self._servers)
        return self.port

    async def close(self) -> None:
        self._closing = True
        for server in self._servers:
            server.close()
        for t in list(self._clients):
            t.cancel()
        await asyncio.gather(*self._clients, return_exceptions=True)
        await self._gatherer.aclose()

    # -- one browser connection ----------------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, split: bool) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        for evicted in self.admission.opened(writer, self):
            evicted.transport.abort()  # its task sees the end of its stream and finishes
        try:
            try:
                await self._serve(reader, writer, split)
            except (OSError, asyncio.IncompleteReadError):
                pass  # the browser went away
            finally:
                self.admission.closed(writer)
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
        except asyncio.CancelledError:
            if not self._closing:
                raise
            # close() ended it (serving or closing): the task ends as a task that finished. Python 3.11's start_server
            # asks a handler's task for its exception when it is done, and a cancelled one raises there: every browser
            # connection open at the helper's end was logged as an error ("Exception in callback … CancelledError").
        finally:
            self._clients.discard(task)  # only now: close() cancels and waits for every task not done yet

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, split: bool) -> None:
        rr = RequestReader()
        refused = False  # a request of this connection was refused for its credentials
        authenticated = False  # one was accepted: counted as the browser's (admission.py)
        while True:
            try:
                head = await self._next_head(rr, reader, authenticated=authenticated)
            except BadRequest as e:
                writer.write(refusal(e.status, "Bad Request" if e.status == 400 else "Refused", str(e)))
                await writer.drain()
                return
            if head is None:
                return
            if not self._authorized(head):
                # Firefox sends a plain http:// request without credentials first and repeats it with those the
                # extension gives it: the first refusal keeps the connection when that costs nothing. A body is
                # never read for a refusal: the connection closes with it unread.
                keep = not refused and rr.body_length <= 0 and head.keep_alive
                writer.write(refusal(407, "Proxy Authentication Required", "lanefetch: proxy credentials required",
                                     [("Proxy-Authenticate", f'Basic realm="{REALM}"')], close=not keep,
                                     method=head.method))
                await writer.drain()
                if not keep:
                    return
                refused = True
                rr.next_request()  # the bodiless request just refused
                continue
            if not self.admission.authenticated(writer):
                return  # over the caps: closed unanswered, the browser fails over to a direct connection
            authenticated = True
            req = await _read_request(rr, reader)
            if req is None:
                return
            if req.head.method == "CONNECT":
                origin = _connect_origin(req.head.target)
                context = self.tls.context_for(origin.host) if self.tls is not None and origin is not None else None
                if context is not None and origin is not None and await self.hands_to_firefox(origin):
                    log.debug("CONNECT %s tunnelled: the origin speaks HTTP/2", req.head.target)
                    context = None
                if context is None or origin is None:
                    await self._tunnel(req, rr.take_rest(), reader, writer)
                else:
                    self._ending[origin] = self._ending.get(origin, 0) + 1
                    try:
                        await self._terminate(req, rr.take_rest(), context, reader, writer, split)
                    finally:
                        self._ending[origin] -= 1
                        if not self._ending[origin]:
                            del self._ending[origin]  # (a listener meets many hosts over its life)
                return
            if not req.head.target.lower().startswith("http://"):
                writer.write(refusal(400, "Bad Request", "lanefetch proxies absolute http:// requests only"))
                await writer.drain()
                return
            if not await self._forward(req, writer, req.head.target, split):
                return

    async def ends_here(self, origin: Origin) -> bool:
        """Would a CONNECT to this https origin be ended here (its requests coming to this listener)? Its site opted
        in (a certificate authority covers the host), its certificate not rejected a moment ago, and not handed to
        Firefox's own h2 (hands_to_firefox)."""
        if self.tls is None or not self.tls.covers(origin):
            return False
        return not await self.hands_to_firefox(origin)

    async def hands_to_firefox(self, origin: Origin) -> bool:
        """Is a CONNECT to this https origin of an opted-in site tunnelled untouched, Firefox's own HTTP/2
        to the origin? Where a handshake of this session found the origin speaking h2: in the helper, over h2 to
        Firefox and to the origin, a page gained 1.00-1.26x over `sat` (its first after Firefox starts,
        docs/performance.md), but a later page finds Firefox's own h2 connection warm. Not while a tunnel to it
        ended here is open: that page goes on as it began (switched mid-page, Firefox's new tunnels each paid a TCP
        and a TLS handshake of their own, and the page was no faster: 0.82-1.01x, with 2-8 % more bytes)."""
        return self.speaks_h2 is not None and not self._ending.get(origin) and await self.speaks_h2(
            f"{origin}/", self.page)

    async def _next_head(self, rr: RequestReader, reader: asyncio.StreamReader, *,
                         authenticated: bool) -> RequestHead | None:
        """The next request's head, or None when the connection ended or the head did not come in time."""
        head = rr.head()
        if head is not None:
            return head
        if authenticated and not rr.buffered:
            # Idle between requests: the browser's to keep (the caps bound how many such connections there are).
            data = await reader.read(READ_SIZE)
            if not data:
                return None
            rr.feed(data)
        try:
            async with asyncio.timeout(self.head_timeout):
                while (head := rr.head()) is None:
                    data = await reader.read(READ_SIZE)
                    if not data:
                        return None
                    rr.feed(data)
        except TimeoutError:
            log.debug("proxy connection closed: no whole request head within %g s", self.head_timeout)
            return None
        return head

    def _authorized(self, head: RequestHead) -> bool:
        given = (head.get("proxy-authorization") or "").encode("latin-1", errors="replace")
        return hmac.compare_digest(given, self._credentials)

    async def _forward(self, req: Request, writer: asyncio.StreamWriter, url: str, split: bool) -> bool:
        """Answer one request of an HTTP/1.1 connection for `url`; False when the connection must close
        afterwards."""
        framing = ResponseWriter(req.head.method.upper(), req.head.http_version, keep_alive=req.head.keep_alive)
        responder = await self._answer(req, url, split, _H1Out(writer, framing))
        return responder is not None and responder.ok and framing.keep_alive

    async def _answer(self, req: Request, url: str, split: bool, out: BrowserOut) -> _Responder | None:
        """Fetch one request for `url` and write its response to `out`. None, or a responder that never started:
        nothing was answered (the browser is to fail over, the module's doc)."""
        head = req.head
        now = time.monotonic()
        self._failed = {u: t for u, t in self._failed.items() if t > now}
        if url in self._failed:
            return None  # failed a moment ago: let the browser fail over to direct at once
        request = FetchRequest(
            id=request_id(), method=head.method.upper(), url=url,
            headers=[(k, v) for k, v in head.headers if k.lower() not in ("proxy-authorization", "proxy-connection")],
            body=req.body if req.body is not None and head.method.upper() not in ("GET", "HEAD") else None,
            resource_type=resource_type(head), priority=priority(head), decode=False, split=split,
        )
        responder = _Responder(out, request, self.engine, self.observer)
        await self.observer.proxied(self.context_id, request)
        # Work that is not render-blocking, to an origin that speaks h2, waits for the render-blocking requests
        # Firefox asks around it (gather.py says why only there)
        held = not is_render_blocking(request) and self.speaks_h2 is not None and await self.speaks_h2(url, self.page)
        self._gatherer.add(request, responder, held=held)
        await responder.done
        if not responder.started and not responder.broken:  # (broken: the browser gave it up, nothing failed)
            self._failed[url] = time.monotonic() + FAILED_MEMORY_S
            if responder.error_kind == "tls_failed" and self.tls is not None:
                self.tls.upstream_rejected(str(parse_target(url).origin))
        return responder

    async def _fetch_group(self, items: list[tuple[FetchRequest, _Responder]]) -> None:
        sinks = {r.id: s for r, s in items}
        # Given up while it waited for its group (an h2 stream reset): the engine had nothing to cancel then, and
        # must not fetch it now (its answer would be read whole for nobody). Reported as the engine reports a
        # cancelled request, so the extension's record of it is settled.
        wanted = [r for r, s in items if not s.broken]
        try:
            for r, s in items:
                if s.broken:
                    await s.error(r, FetchError("cancelled", "given up by the browser before it was fetched"))
                    await s.timing(r, TimingReport(RequestTiming(queued=now()), None, 0, 0))
            page = self.page if self.page_url is None else dataclasses.replace(self.page, url=self.page_url)
            if wanted:
                await self.engine.fetch(wanted, _MuxSink(sinks), page)
        except Exception:  # a bug must not leave browser connections hanging
            log.exception("proxied batch failed")
        finally:
            for s in sinks.values():
                if not s.done.done():
                    s.done.set_result(None)

    # -- CONNECT of an opted-in HTTPS site: TLS ends here, the requests inside go the same way ----------------

    async def _terminate(self, req: Request, early: bytes, context: ssl.SSLContext, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter, split: bool) -> None:
        origin = parse_target(f"https://{req.head.target}/").origin
        authority = origin.authority()
        if early or self.tls is None or self.tls.is_rejected(str(origin)):
            # The origin's certificate was rejected a moment ago: closed unanswered, Firefox fails over to a direct
            # connection and shows the certificate problem itself, as without lanefetch.
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        try:
            await writer.start_tls(context, ssl_handshake_timeout=self.connect_timeout)
        except (ssl.SSLError, OSError, TimeoutError):
            return
        tls = writer.get_extra_info("ssl_object")
        if tls is not None and tls.selected_alpn_protocol() == "h2":
            # The whole page's requests at once on this one connection (h2_server.py's doc says why).
            async def answer(head: RequestHead, body: bytes | None, out: H2StreamOut) -> bool:
                responder = await self._answer(Request(head, body), head.target, split, out)
                return responder is not None and responder.started

            await H2BrowserConnection(reader, writer, authority, answer).serve()
            return
        rr = RequestReader()
        while True:
            try:
                # The tunnel was authenticated by its CONNECT; a head that starts must still finish in time.
                if await self._next_head(rr, reader, authenticated=True) is None:
                    return
                inner = await _read_request(rr, reader)
                if inner is None:
                    return
            except BadRequest as e:
                writer.write(refusal(e.status, "Bad Request" if e.status == 400 else "Refused", str(e)))
                await writer.drain()
                return
            target = inner.head.target
            url = f"https://{authority}{target}" if target.startswith("/") else target
            host = (inner.head.get("host") or "").lower()
            if not url.lower().startswith(f"https://{authority}/") or host not in (authority, f"{authority}:443"):
                # Only the host this tunnel was opened (and certified) for.
                writer.write(refusal(421, "Misdirected Request", f"this connection serves {authority} only"))
                await writer.drain()
                return
            if not await self._forward(inner, writer, url, split):
                return

    # -- CONNECT of anything else: tunnelled untouched --------------------------------------------------------

    async def _tunnel(self, req: Request, early: bytes, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        try:
            target = parse_target(f"https://{req.head.target}/")
            loop = asyncio.get_running_loop()
            # localhost names are this machine, whatever the resolver says (host_names.py)
            infos = await asyncio.wait_for(
                resolve(target.origin.host, target.origin.port, loop.getaddrinfo), self.connect_timeout)
            allowed = [i[4] for i in infos if may_connect(self.page.address_space, str(i[4][0]))]
            if not allowed:
                return  # closed without an answer: the browser fails over to direct
            upstream = await _connect_first(allowed, self.connect_timeout)
            if upstream is None:
                return
            up_reader, up_writer = upstream
        except (OSError, TimeoutError, FetchError):
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        if early:
            up_writer.write(early)
        pumps = [asyncio.ensure_future(_pump(reader, up_writer)), asyncio.ensure_future(_pump(up_reader, writer))]
        try:
            _, pending = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            if pending:
                await asyncio.wait(pending, timeout=self.tunnel_linger)  # (TUNNEL_LINGER_S says why)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            up_writer.close()


async def _connect_first(addresses: list[SockAddr], each_within: float,
                         ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A connection to the first of `addresses` that answers within `each_within` seconds (localhost is 127.0.0.1,
    then ::1), or None."""
    for address in addresses:
        host, port = address[0], address[1]
        if not isinstance(host, str) or not isinstance(port, int):
            continue
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), each_within)
        except (OSError, TimeoutError):
            continue
    return None


async def _read_request(rr: RequestReader, reader: asyncio.StreamReader) -> Request | None:
    """The request whose head was read, with its body (only ever read for an authenticated request)."""
    while (req := rr.next_request()) is None:
        data = await reader.read(READ_SIZE)
        if not data:
            return None
        rr.feed(data)
    return req


def _connect_origin(target: str) -> Origin | None:
    """The https origin a CONNECT's target (host:port) names; None for one that is not a host and port."""
    try:
        return parse_target(f"https://{target}/").origin
    except FetchError:
        return None


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(64 * 1024):
            dst.write(data)
            await dst.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            if dst.can_write_eof():
                dst.write_eof()

