"""The page loads under way, each with its flight: the asyncio shell that wires learning and flights to the
browser's navigations and batches (the decisions are in load_log.py, plan.py, budget.py, fidelity.py).

`PageLoads` is a Fetcher around the service (the host puts it on top of the chain: above the cache, the split
and the engine, so a prefetched response answers before any of them is asked):

- `navigation(page)`: a navigation of an enabled site starts (the extension's `preconnect`). The page's load
  begins (load_log.load_key: never for private browsing or without a top-level site); a load of the same page
  that already saw requests ends first. In the background the page's learned history is recalled
  (page_memory.py, exact page and, for a page never loaded, its shape: what every kept load of pages of the same
  origin and path shape requested; the template key needs the document's stylesheets), planned (plan.py) and,
  if the plan is not empty, flown (flight.py) through the
  inner fetcher, within the page's budget. Left out: what the helper's HTTP cache holds fresh (it answers the
  browser as fast) and what the browser already asked for while the history was read (it went its own way); what
  it holds stale is revalidated by the flight (a 304 costs the link a head: the page's revalidations all go at
  the navigation instead of wave by wave).
- Discovery (discover_worker.py runs discover_html/discover_css in a worker process): the load's document (its
  request for the load's own URL, wave 0) and every stylesheet that reaches the helper (the browser's, or one the
  flight prefetched) are read as they stream: the document as soon as 1 KiB of it arrived (its <meta charset>
  prescan window), again each time it doubled (up to PROGRESSIVE_MAX) and once whole (an unfinished tag at the
  cut is dropped by the HTML tokenizer, so a prefix yields only complete elements); a stylesheet once whole, in the
  encoding of what named it where it says none of its own (`_environment`). What
  they name and the browser has not asked for yet is planned (plan.py, with the page's learned history and the
  browser's field profile, field_profile.py) and joins the page's flight (the same holding area and budget,
  answered by the same fidelity rule). Bodies that are not 2xx are not read; one that arrives content-coded (proxy
  mode delivers bodies as the server coded them) is decoded for reading (stream/decode.py decoded_prefix, bounded),
  and one in a coding the helper cannot undo is not read (in debugger mode one whose coding Chromium does not undo
  comes as it came, marked decoded, and is read as the page gets it: stream/decoding_sink.py).
  A document the browser loads itself (Chromium, a page on a private address) is read from the bytes the browser
  streams here (`browser_document`, its request told first with `browser_fetched`); the stylesheets and scripts it
  names are left to the browser (`_Load.browser_named`), its images fly.
  A page under a Content-Security-Policy (a field of its document's response, or a <meta http-equiv> a read of the
  document finds) flies nothing discovered (`_Load.under_policy`); what a stylesheet names waits until a read of
  the document reached past its head (`_Load.head_read`), where such a <meta> would be.
  Background images (discover_backgrounds.py): each stylesheet read where the load's document is read (it came
  through the helper, or the browser streams it here) also yields its background rules, matched against the
  document once it was read whole (kept up to MAX_KEPT_DOCUMENT); an image they are expected to show flies as a
  guess (the speculative budget). A stylesheet read before the read that names it (the document's may end later
  in the worker) keeps its rules until that read says whether the sheet applies to the screen (_place_rules).
  Once the document was read whole its stylesheets are the page's template key (learned.page_keys): the
  template's history is recalled and its stable assets join the flight too, and the load is recorded under both
  keys when it ends.
- The browser's field profile (field_profile.py) is learned from each ended load's requests (keyed by
  User-Agent, kept in the cache database's page store under field_profile.PARTITION), recalled by the User-Agent
  of the request whose body is read, and forgotten with the cache. It also learns *during* a load, in memory, from
  each batch as it comes (kept at the load's end as before): a helper that never saw this browser (its first page,
  or the first after a browser update changed the User-Agent) knows the fields of a stylesheet once the page asked
  for one, so the `@import`s its stylesheets name fly a round trip before the browser finds them. What discovery
  found but could not plan for want of fields is planned again whenever a batch taught the profile something.
  A flight's items carry the privacy signals (DNT, Sec-GPC) the profile last saw the browser send, not those a
  learned load replays (`_signals_now`: a page learned before the user turned an opt-out on flew without it).
  Where the browser gets a document only whole (Chromium, `documents_whole`), the request of the load's own
  document teaches what it shares with every request of the browser and the profile does not know yet
  (field_profile.learn_navigation); with the browser's Accept per kind told ahead (`browser_accept`, the
  extension's probe) that is enough to plan what the document names as it is read, before the browser's first
  subresource batch, which comes only after the whole document.
- `fetch(batch)`: a batch naming a page with a load under way is logged (load_log.LoadLog: URL, fields, wave,
  size as delivered) and goes through `FlightAnswers`, which answers from the flight where fidelity allows and
  passes the rest to the inner fetcher. A batch of a page without a load goes to the inner fetcher as before.
- A load ends at the next navigation of its page, when it is idle (load_log.IDLE_S on the injected clock, checked
  whenever a navigation or batch arrives, and by a timer every IDLE_S of the event loop while loads are under
  way), or when the helper stops (`aclose`). Ending:
  the flight is closed (what runs is cancelled, the unclaimed is waste), the load's requests are recorded into
  the page's memory (the cache's worker thread), and `on_end` gets the page's report.
- Clearing the cache (`forget`) also forgets the loads under way: they record nothing when they end. A clear by
  another process sharing the database calls `forget` too, once a write of learned records finds it (the host
  wires it: cache/http_cache.py); what was queued before is refused by the store.
- At most MAX_LOADS loads are kept; beyond that the oldest ends (its flight's memory is bounded by its budget).

Recording and recalling are the page memory's (never for private browsing; partitioned by top-level site;
cleared with the cache)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field

from ..cache.http_cache import HttpCache, cache_url
from ..cache.policy import Hit, Revalidate
from ..engine.errors import FetchError
from ..engine.exchange import DeliveredHead, Sink, TimingReport
from ..engine.fetcher import BatchResult, ClosingFetcher, Fetcher, Page
from ..engine.fields import Headers
from ..engine.pool_plan import Handshake
from ..engine.render_quiet import HOLD_MAX_S, RENDER_QUIET_S, blocks_render, held_until, is_render_blocking
from ..engine.request import FetchRequest, sent_headers, url_scheme
from ..stream.decode import decoded_prefix, decoder_for
from .budget import Ledger, Limits, limits_for
from .discover_backgrounds import BackgroundRule
from .discover_worker import Discoverer
from .field_profile import (
    PARTITION,
    SIGNALS,
    FieldProfile,
    learn,
    learn_navigation,
    record_key,
    relation,
    taught_accept,
    with_accept,
)
from .field_profile import decode as decode_profile
from .field_profile import encode as encode_profile
from .flight import Flight, FlightAnswers, FlightReport
from .flight_pieces import LinkRoom, probed
from .learned import History, Observed, replayed
from .load_log import IDLE_S, LoadKey, LoadLog, load_key, observe_request
from .page_memory import PageMemory
from .plan import RESOURCE_TYPE, Planned, plan
from .resource import Subresource

log = logging.getLogger(__name__)

MAX_LOADS = 32
MAX_TAUGHT_AGENTS = 4  # browsers whose Accept fields were told ahead (browser_accept): one or two, and updates
PROGRESSIVE_MIN = 1024  # the <meta charset> prescan's window: a shorter prefix may be decoded wrongly
# Past this a document is read once more, whole. Reading on past it (each time it grew by a quarter, to 4 MiB) was
# measured and reverted (session 37): rust-book-print's large images and its script, from 0.98 MB to the end of
# its 1.68 MB, were then found just before the document's end, so its small images took the document's warm
# connection and its 313 kB script went to a cold one (0.89x on `sat`, 1.27x before). Found with the whole
# document, they come all at once, and the script, first in the queue, takes the warmest connection.
PROGRESSIVE_MAX = 512 * 1024
MAX_TAPPED = 4 * 1024 * 1024  # discover_html.MAX_BYTES: what is not read is not kept
MAX_KEPT_DOCUMENT = 1024 * 1024  # a larger document is not kept for matching background rules (memory per load)
MAX_BACKGROUND_RULES = 2000  # background rules per load (each stylesheet read matches them all again); past it none


def _charset(headers: Headers) -> str | None:
    content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"') or None
    return None


def _carries_policy(headers: Headers) -> bool:
    """Does the response carry a Content-Security-Policy (not -Report-Only, which blocks nothing)?"""
    return any(k.lower() == "content-security-policy" for k, _ in headers)


def _coding(head: DeliveredHead) -> str:
    return "" if head.decoded else (head.get("content-encoding") or "").strip()  # every line of it: one list


def _readable(head: DeliveredHead) -> bool:
    """A 2xx body the parsers can read: decoded by the helper, never content-coded, or coded in a way the reader
    undoes itself (proxy mode delivers bodies as the server coded them: Firefox decodes them)."""
    if not 200 <= head.status < 300:
        return False
    try:
        decoder_for(_coding(head), strict=True)  # as decoded_prefix reads it
    except FetchError:
        return False
    return True


@dataclass
class _Tap:
    """A document or stylesheet body being read for discovery."""

    kind: str  # "html" or "css"
    url: str
    wave: int  # the wave of the document (0) or stylesheet; what it names is one wave later
    user_agent: str | None
    charset: str | None = None
    readable: bool = False
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    read_at: int = 0  # the size of the prefix last read
    whole: bool = False  # the body ended: this read is the last
    coding: str = ""  # the body's content coding as it arrives (proxy mode), undone when it is read (_discovered)
    # The browser's own document, streamed here as its parser gets it (browser_document): what it names is the
    # browser's to ask for (_Load.browser_named)
    streamed: bool = False


@dataclass(frozen=True)
class LoadEnded:
    """One page load's report: what its flight did (None: no flight, nothing learned to fly), how many of its
    requests were recorded for the next loads, and the id of its first request (None: no batch came)."""

    page: Page
    url: str
    flight: FlightReport | None
    recorded: int
    first_request: str | None = None


@dataclass
class _Load:
    key: LoadKey
    page: Page
    log: LoadLog
    flight: Flight | None = None
    starting: asyncio.Task[None] | None = None
    # once the history is read: does the page's own history plan work (flies); made in the loop navigation() runs in
    planned_any: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    ended: bool = False
    forgotten: bool = False  # the cache was cleared while it ran: nothing of it is recorded
    exact: History | None = None  # the page's learned history, once recalled
    template: History | None = None  # its template's, once the document's stylesheets are known
    shape: History | None = None  # its shape's, for a page never loaded (what a new page of a known site shares)
    stylesheets: list[str] | None = None  # the document's, once read whole (the template key)
    limits: Limits | None = None  # the page's budget, from its history
    taps: dict[str, _Tap] = field(default_factory=dict)  # by request id
    read: set[str] = field(default_factory=set)  # stylesheet URLs read already
    planned: set[str] = field(default_factory=set)  # URLs the flight was given
    adopted: set[str] = field(default_factory=set)  # the browser's own requests asked through the flight (_adopt)
    cookies_on_site: bool = False  # the browser sends or was sent cookies for the page's site
    user_agent: str | None = None
    # The Accept-Encoding the browser's requests of the load carried, by URL scheme (proxy mode: a discovered
    # prefetch is sent with the browser's own, which fidelity compares; debugger mode: none, the helper adds its own)
    accept_encoding: dict[str, str] = field(default_factory=dict)
    # What discovery found in the load (by URL, with its wave), planned or not: planned again when the field
    # profile learns from a batch (_learned_live), since an item the profile had no fields for was left out
    found: dict[str, tuple[Subresource, int]] = field(default_factory=dict)
    # For background images (discover_backgrounds.py): the document as read whole (body, charset; not kept past
    # MAX_KEPT_DOCUMENT), the background rules of the stylesheets read, and each stylesheet's wave
    document: tuple[bytes, str | None] | None = None
    # The background images the rules read so far expect (replaced at each match: a later rule may override one)
    expected_backgrounds: dict[str, tuple[Subresource, int]] = field(default_factory=dict)
    # The load's document is read: it comes through the helper, or the browser streams it here (browser_document)
    reads_document: bool = False
    # The document is under a Content-Security-Policy (a response field, or a <meta http-equiv> of its own): the
    # browser may refuse to fetch what it or its stylesheets name, so nothing discovered is fetched on a guess
    under_policy: bool = False
    # The stylesheets and scripts a document the browser streams here names (browser_document): never flown. The
    # browser's parser has those bytes as soon as the helper (sooner), so it asks for them as early as a flight
    # would; a flight only takes a share of the link, and a large script found in a long document's end took the
    # browser's warm connection's place on a cold one of the helper's (rust-book-print on `sat`: 0.77× with them
    # flown, session 36). Its images do fly, as a fetched document's do: Chromium holds images back while
    # render-blocking requests are under way, and flying them gained apache-rewrite 0.98× → 1.14× and
    # flask-tutorial 1.14× → 1.34× on `sat`. Its stylesheets' reads, their background rules matched against it and
    # the page's learned history fly too.
    browser_named: set[str] = field(default_factory=set)
    # A read of the load's document reached past its <head> (or it was read whole): no <meta> Content-Security-Policy
    # can come that the browser would apply to what the stylesheets name. Until then (where the document is read)
    # what they name waits, found but not flown (_fly_found), and flies once this is set (_pending)
    head_read: bool = False
    # The images a streamed document names wait for the load's first batch (`batch_seen`): flown as soon as found they
    # took every connection 14 ms before the browser's render-blocking stylesheets and scripts came, which then
    # waited behind them (django-tutorial07 on `sat`: 2 round trips, in 3 of 6 loads; session 36)
    after_first_batch: set[str] = field(default_factory=set)
    batch_seen: bool = False
    # The browser's render-blocking requests come in bursts a few milliseconds apart, and the first batch may hold
    # only the first of them: what _fly_pending flies that is not render-blocking waits until they are quiet, where
    # PageLoads' holds_for says (render_quiet.py). cmake-interaction in Firefox over h2 on `sat`: a first batch of
    # one stylesheet, the flight's images 9 ms later, the head's scripts 17 ms after them, all four on the reserve
    # behind the images' connection: 5.8 s instead of 4.9 s, in a third to two thirds of the loads (session 55).
    last_render_blocking: float | None = None  # the event loop's time of the latest such request of the browser
    holding: bool = False  # _fly_pending waits for them now (for the tests)
    # Past MAX_BACKGROUND_RULES: no more background guesses in this load (a truncated set would drop the later
    # rules, which win ties)
    backgrounds_given_up: bool = False
    backgrounds: list[BackgroundRule] = field(default_factory=list)
    sheet_waves: dict[str, int] = field(default_factory=dict)
    # A stylesheet read before the read that names it (its media unknown: the document's read, in the worker, may
    # end after its stylesheet's): its rules and wave, placed (or dropped) once a read found it (_place_rules)
    unplaced_rules: dict[str, tuple[list[BackgroundRule], int]] = field(default_factory=dict)
    # The encoding each document (where declared: DocumentRead.encoding) or stylesheet read was decoded in, by URL:
    # what a stylesheet it names falls back to
    encodings: dict[str, str] = field(default_factory=dict)
    document_encoding: str | None = None  # the load's document's, once a read of it ended (where declared)
    tasks: set[asyncio.Task[object]] = field(default_factory=set)

    def spawn(self, work: Coroutine[object, object, object], name: str) -> None:
        """Run `work` as one of the load's tasks: cancelled and awaited when the load ends (_end)."""
        task: asyncio.Task[object] = asyncio.create_task(work, name=name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


def _guesses_backgrounds(load: _Load) -> bool:
    """Are the stylesheets' background rules used for guesses: the load's document is read (it came through the
    helper, or the browser streams it here: there is one to match them against; a document the browser loads
    without streaming it is not read) and the load has not given up on them? A
    cross-origin stylesheet's too: the image request's Sec-Fetch-Site is the page's in Chromium and the sheet's in
    Firefox (field_profile.site_for, PageLoads' `sheet_sets_site`). Asked as a stylesheet's read begins (the worker
    walks its rules only then: a page whose document the browser loads costs it nothing more) and again once they
    are in (the load may have given up meanwhile). The document's request is tapped as it comes (a streamed one
    when the browser's request of it is told), before any of its stylesheets can have arrived."""
    return load.reads_document and not load.backgrounds_given_up


def _environment(load: _Load, sheet: str) -> str | None:
    """The encoding a stylesheet without a BOM, charset or @charset is decoded in (CSS Syntax's environment
    encoding): that of what named it (the document, or the sheet importing it) where a read found it, else the
    load's document's (a sheet the browser or the page's history asked for); None where neither was read (UTF-8)."""
    named = load.found.get(sheet)
    if named is not None and named[0].initiator in load.encodings:
        return load.encodings[named[0].initiator]
    return load.document_encoding


def _place_rules(load: _Load) -> bool:
    """The background rules of the stylesheets read so far whose naming read has come too: those that apply to the
    screen (as the read that named them says) join the load's rules, the others are dropped; the rest wait. Whether
    any joined."""
    placed = False
    for url, (rules, wave) in list(load.unplaced_rules.items()):
        named = load.found.get(url)
        if named is None:
            continue  # not named by any read yet (the document's may still be in the worker)
        del load.unplaced_rules[url]
        if named[0].screen:
            load.backgrounds += rules
            load.sheet_waves[url] = wave
            placed = True
    return placed


def _unplanned(load: _Load, found: Iterable[tuple[Subresource, int]]) -> list[tuple[Subresource, int]]:
    """What discovery found (with its wave) that the flight was not given, the browser did not ask for yet and is not
    left to it (_Load.browser_named)."""
    return [(sub, wave) for sub, wave in found
            if sub.url not in load.planned and not load.log.requested(sub.url) and sub.url not in load.browser_named]


def _blocks_render(sub: Subresource) -> bool:
    """Would the browser's request for it be render-blocking work (render_quiet.py)?"""
    return blocks_render(RESOURCE_TYPE.get(sub.destination, "other"))


def _own_document(load: _Load, r: FetchRequest) -> bool:
    """Is this the browser's request of the load's own page (its document, the URL without fragment)?"""
    return r.resource_type == "document" and r.url.split("#", 1)[0] == load.key.page


def _pending(load: _Load) -> list[tuple[Subresource, int]]:
    """What the load's discovery found or its background rules expect that is still unplanned (_unplanned): planned
    again once the browser's field profile knows more."""
    return _unplanned(load, [*load.found.values(), *load.expected_backgrounds.values()])


class _LoggingSink:
    """Passes everything on; tells the load's log what was delivered (size, for the wave of later batches)."""

    def __init__(self, inner: Sink, load: _Load, clock: Callable[[], float], pages: PageLoads) -> None:
        self._inner = inner
        self._load = load
        self._clock = clock
        self._pages = pages

    async def head(self, request: FetchRequest, head: DeliveredHead) -> None:
        tap = self._load.taps.get(request.id)
        if tap is not None:
            tap.readable, tap.charset = _readable(head), _charset(head.headers)
            tap.coding = _coding(head)
            if tap.kind == "html":
                self._load.cookies_on_site |= any(k.lower() == "set-cookie" for k, _ in head.headers)
                self._load.under_policy |= _carries_policy(head.headers)
        await self._inner.head(request, head)

    async def body(self, request: FetchRequest, data: bytes) -> None:
        tap = self._load.taps.get(request.id)
        if tap is not None:
            self._pages._tapped(self._load, tap, data)
        await self._inner.body(request, data)

    async def end(self, request: FetchRequest, body_bytes: int, trailers: Headers) -> None:
        self._load.log.ended(request.id, body_bytes, self._clock())
        self._pages._tap_ended(self._load, request.id)
        await self._inner.end(request, body_bytes, trailers)

    async def error(self, request: FetchRequest, error: FetchError) -> None:
        self._load.log.failed(request.id, self._clock(), left_to_browser=error.code == "browser_warm")
        self._load.taps.pop(request.id, None)
        await self._inner.error(request, error)

    async def timing(self, request: FetchRequest, report: TimingReport) -> None:
        if report.cache in ("none", "prefetch"):  # from the network (a revalidation's bytes are a 304's)
            self._load.log.transferred(request.id, report.wire_bytes)
        await self._inner.timing(request, report)


class PageLoads:
    def __init__(self, inner: Fetcher, cache_for: Callable[[Page], HttpCache | None],
                 on_end: Callable[[LoadEnded], Awaitable[None]], *, clock: Callable[[], float] = time.monotonic,
                 idle_s: float = IDLE_S, discoverer: Discoverer | None = None,
                 link_room: LinkRoom | None = None, records_for: Callable[[Page], HttpCache | None] | None = None,
                 decode: bool = True, namespace: str = "",
                 reaches_here: Callable[[str], bool] | None = None, sheet_sets_site: bool = False,
                 documents_whole: bool = False, holds_for: Callable[[str, Page], Awaitable[bool]] | None = None,
                 render_quiet_s: float = RENDER_QUIET_S, hold_max_s: float = HOLD_MAX_S) -> None:
        """`cache_for`: the HTTP cache the page's responses are kept in (what it holds fresh is not flown, a
        claimed prefetch is stored there); `records_for` (default: the same): where learned pages and the
        browser's field profile are kept. Firefox's proxy keeps no responses (Firefox caches them) but its records
        in the host's cache database. `decode`: whether the browser's requests are delivered decoded (debugger
        mode) or as the server coded them with the browser's own Accept-Encoding (proxy mode): a flight's requests
        are sent the same way, as fidelity compares them (_as_sent), and a tapped body is decoded for reading.
        `namespace`: the learned pages' own, apart from another browser's in the same database (PageMemory).
        `reaches_here` (default: every URL): whether the browser's request for a URL comes to this helper at all;
        nothing else is flown (Firefox's proxy: an https origin of a site not opted in is Firefox's own, tunnelled,
        so its prefetch could answer nothing and would fetch for a site the user did not turn on).
        `sheet_sets_site`: the browser computes the Sec-Fetch-Site of a stylesheet's no-cors request against the
        stylesheet (Firefox), not the page (Chromium): field_profile.site_for.
        `documents_whole`: the browser gets a page's document only whole (Chromium's debugger mode), so its first
        batch comes after the whole document, and the request of the document teaches the browser-wide fields
        (field_profile.learn_navigation) for what the document names to fly as it is read. Not where the browser
        streams its document (Firefox): its first batch comes soon enough, and flying the document's images while
        it streams made a first page slower (apache-rewrite on `sat`: 1.20× against 1.34× without, session 35).
        `holds_for`: does work for this URL that is not render-blocking, flown after a batch, wait for the browser's
        render-blocking requests (render_quiet.py)? Firefox's proxy: where the origin speaks h2 (proxy/gather.py
        says why only there); None (Chromium, not measured with it): never. `render_quiet_s`, `hold_max_s`: how
        long it waits (the tests lengthen them)."""
        self.inner = inner
        # Where a flight's large answers may come in pieces (flight_pieces.py): the service's link_room
        self._link_room = link_room
        records = records_for if records_for is not None else cache_for
        self._memory = PageMemory(records, namespace=namespace)
        self._cache_for = cache_for
        self._records_for = records
        self._decode = decode
        self._reaches_here = reaches_here
        self._sheet_sets_site = sheet_sets_site
        self._documents_whole = documents_whole
        self._holds_for = holds_for
        self._render_quiet_s, self._hold_max_s = render_quiet_s, hold_max_s
        self._answers = FlightAnswers(inner, self._flight_for, cache_for)
        self._on_end = on_end
        self._clock = clock
        self._idle_s = idle_s
        self._loads: dict[LoadKey, _Load] = {}
        self._ending: set[asyncio.Task[None]] = set()
        self._sweep: asyncio.TimerHandle | None = None
        self._discoverer = discoverer if discoverer is not None else Discoverer()
        self._profiles: dict[str, FieldProfile | None] = {}  # by User-Agent; None: none kept
        self._taught: dict[str, dict[tuple[str, str], str | None]] = {}  # by User-Agent: browser_accept's
        self._generation = 0  # forget() counts: a profile read before a clear is not kept after it

    def _flight_for(self, page: Page) -> Flight | None:
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        return load.flight if load is not None else None

    def navigation(self, page: Page) -> bool:
        """A navigation of `page` starts: its load begins (or a fresh one continues). False: nothing may be learned
        for this page (private browsing, no top-level site, not an http(s) URL)."""
        self._end_idle()
        key = load_key(page)
        if key is None:
            return False
        current = self._loads.get(key)
        if current is not None and current.log.fresh:
            log.debug("the load of %s goes on (no request yet)", key.page)
            return True
        log.debug("a load of %s begins%s", key.page, " (its previous load ends)" if current is not None else "")
        previous = self._end_in_background(current) if current is not None else None
        load = _Load(key, page, LoadLog(self._clock()))
        self._loads[key] = load
        while len(self._loads) > MAX_LOADS:
            self._end_in_background(next(iter(self._loads.values())))
        load.starting = asyncio.create_task(self._start_flight(load, previous), name="lanefetch-prefetch-start")
        self.warm()
        return True

    def warm(self) -> None:
        """Start what a first page load would start (the discovery worker) now, ahead of it: starting it blocks the
        event loop ~40 ms, which held a fresh helper's first navigation (its preconnect, its flight question)."""
        self._discoverer.warm()

    async def warmed(self) -> None:
        """warm(), awaited: the discovery worker is up."""
        await self._discoverer.started()

    async def flies(self, page: Page) -> bool:
        """Whether the load `navigation(page)` began has a prefetch flight of its own: known as soon as the page's
        history is read and planned (~10 ms; before the flight's cache checks), True where the page's own history
        planned work. False where no load of the page runs (nothing may be learned), its history could not be read,
        or only its shape's shared assets fly: those are not the page's own images and scripts, which only its
        document names, so the extension should let the document come through the helper to be read (flight_plan)."""
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        if load is None:
            return False
        return await asyncio.shield(load.planned_any)

    async def _start_flight(self, load: _Load, previous: asyncio.Task[None] | None) -> None:
        def planned(any_work: bool) -> None:
            if not load.planned_any.done():
                load.planned_any.set_result(any_work)

        try:
            if previous is not None:  # the page's previous load is recorded first: this one's plan learns from it
                await asyncio.gather(previous, return_exceptions=True)
            try:
                recalled = await self._memory.recall(load.page, load.key.page)
            except Exception:  # an unreadable store: the page loads as without a flight
                log.exception("recalling a page failed")
                return
            # A page never loaded flies what every load of its shape shared, before its document names anything
            shape = recalled.shape if recalled.exact is None else None
            chosen = plan(recalled.exact, None, [], shape=shape)
            load.exact, load.shape = recalled.exact, shape
            load.limits = chosen.limits if recalled.exact is not None else limits_for(None, first_visit=True)
            planned(recalled.exact is not None and bool(chosen.items))
            await self._fly(load, chosen.items)
        finally:
            planned(False)

    async def _fly(self, load: _Load, planned: list[Planned], guesses: set[str] | frozenset[str] = frozenset()) -> None:
        """Add the planned items the flight does not have yet, the cache does not hold fresh (what it holds stale
        is revalidated) and the browser did not ask for yet (what it asked for went its own way: fetching it again
        is waste). `guesses`: the URLs that discovery found, dropped if the page turned out to be under a
        Content-Security-Policy while the cache was asked."""
        planned = await self._signals_now(load.page, planned)
        fresh = [self._as_sent(load, i) for i in planned if i.url not in load.planned
                 and (self._reaches_here is None or self._reaches_here(i.url))]
        items = await self._not_fresh(load.page, [i for i in fresh if i is not None])
        items = [i for i in items if not load.log.requested(i.url) and i.url not in load.planned
                 and not (load.under_policy and i.url in guesses)]
        if not items or load.ended:
            return
        load.planned.update(i.url for i in items)
        self._flight_of(load).start(items)

    def _flight_of(self, load: _Load) -> Flight:
        """The load's flight, begun now if it has none yet."""
        if load.flight is None:
            load.flight = Flight(self.inner, load.page, Ledger(load.limits or limits_for(None, first_visit=True)),
                                 clock=self._clock, split_where=self._link_room)
            flight = load.flight
            flight.on_arrived = lambda request, head, body: self._arrived(load, flight, request, head, body)
            flight.still_wanted = lambda url: not load.log.requested(url)
        return load.flight

    async def _adopt(self, load: _Load, requests: list[FetchRequest]) -> None:
        """The browser's own requests for images and web fonts of unknown size, where their origin's link has room
        for pieces, are asked through the load's flight, exactly as the browser sent them: so they come as the
        flight's do, a first piece telling the size and the rest in pieces over the warm connections
        (flight_pieces.py), not whole on whichever connection is free. Why: a large document is read whole (for what
        it names) only once it ended, and in Chromium the browser parses it from that moment too; the two race.
        rust-book-print's four large PNGs (82-241 kB) are named from 0.98 MB on in its 1.6 MB document: where the
        browser asked for them first (the whole read took 0.17-0.95 s at the document's end on a busy 2-core machine,
        the browser's batch came 0.25 s after it), they went whole to cold connections and the page took 8-11.6 s
        instead of 6.8 s (session 49). The fidelity rule answers each with its own prefetch (the same fields), and a
        claimed prefetch is stored in the helper's cache as the browser's answer would be (FlightAnswers._keep).
        Only where the browser gets its answers whole anyway (`documents_whole`, Chromium's debugger mode): a
        flight's answer reaches the page once whole, where Firefox's proxy would otherwise stream it as it comes."""
        if not self._documents_whole or self._link_room is None or load.ended or load.forgotten:
            return
        flight = load.flight
        items: list[Planned] = []
        for r in requests:
            # probed: a GET of an image or web font of unknown size, without fields a range would change (a validation)
            if not probed(r) or r.url in load.adopted:
                continue
            if flight is not None and (flight.holds(r.url) or flight.distrusted):
                continue
            if not await self._link_room(r.url, load.page):
                continue
            items.append(Planned(r.url, list(r.headers), r.resource_type, confident=True, decode=r.decode))
        if not items or load.ended:
            return
        load.adopted.update(i.url for i in items)
        load.planned.update(i.url for i in items)
        log.debug("the browser's own %s asked through the flight of %s", ", ".join(i.url for i in items),
                  load.key.page)
        self._flight_of(load).start(items)

    async def _signals_now(self, page: Page, planned: list[Planned]) -> list[Planned]:
        """The items with the privacy signals (DNT, Sec-GPC) their browser sends now, as its field profile last
        learned them from any of its requests, in place of those a learned load replays: a page learned before the
        user turned an opt-out on would otherwise send its flight to the servers without it (and have it refused).
        An item whose browser has no profile, or one that knows no signals yet, is left as planned."""
        out: list[Planned] = []
        for item in planned:
            ua = next((v for k, v in item.headers if k.lower() == "user-agent"), None)
            profile = await self._profile(page, ua) if ua is not None else None
            if profile is None or profile.signals is None:
                out.append(item)
                continue
            headers = [(k, v) for k, v in item.headers if k.lower() not in SIGNALS]
            out.append(dataclasses.replace(item, headers=[*headers, *profile.signals]))
        return out

    def _as_sent(self, load: _Load, item: Planned) -> Planned | None:
        """The item as its prefetch goes: decoded or not as the browser's requests are delivered; where they are not
        (proxy mode), with the browser's own Accept-Encoding for the URL's scheme, which a discovered item lacks
        (the field profile holds none) and a learned one carries; None where the load showed none for that scheme
        (fidelity would refuse the answer)."""
        if self._decode:
            return item if item.decode else dataclasses.replace(item, decode=True)
        if any(k.lower() == "accept-encoding" for k, _ in item.headers):
            return item if not item.decode else dataclasses.replace(item, decode=False)
        coding = load.accept_encoding.get(url_scheme(item.url))
        if coding is None:
            return None
        return dataclasses.replace(item, decode=False, headers=[*item.headers, ("Accept-Encoding", coding)])

    def _arrived(self, load: _Load, flight: Flight, request: FetchRequest, head: DeliveredHead, body: bytes) -> None:
        """A prefetch arrived whole: a stylesheet is read like one the browser fetched."""
        if request.resource_type == "stylesheet" and _readable(head) and not flight.closed:
            tap = _Tap("css", request.url, 1, load.user_agent, _charset(head.headers), True, [body], len(body),
                       coding=_coding(head))
            self._read(load, tap)

    def _tapped(self, load: _Load, tap: _Tap, data: bytes) -> None:
        """More of a tapped body arrived: kept (up to MAX_TAPPED); a document is read at 1 KiB and each time it
        doubled (up to PROGRESSIVE_MAX)."""
        if not tap.readable or tap.size >= MAX_TAPPED or not data:
            return
        tap.chunks.append(data)
        tap.size += len(data)
        if tap.kind == "html" and PROGRESSIVE_MIN <= tap.size <= PROGRESSIVE_MAX and tap.size >= 2 * tap.read_at:
            self._read(load, tap)

    def _tap_ended(self, load: _Load, request_id: str, *, whole: bool = True) -> None:
        """A tapped body ended: read once more, whole (a document always: its stylesheets make the template key).
        `whole=False`: it stopped short of its end (a browser's document whose stream was cut): what was read
        stands, the rest is never read, and a prefix is never taken for the whole."""
        tap = load.taps.pop(request_id, None)
        if whole and tap is not None and tap.readable and (tap.size > tap.read_at or tap.kind == "html"):
            tap.whole = True
            self._read(load, tap)

    def _read(self, load: _Load, tap: _Tap) -> None:
        """Read what arrived of a tapped body (in the worker) and fly what it names."""
        if load.ended or (tap.kind == "css" and tap.url in load.read):
            return
        if tap.kind == "css":
            load.read.add(tap.url)
        tap.read_at = tap.size
        body = b"".join(tap.chunks)
        # Whether this read is of the whole body, as of now: the tap is shared, and a prefix read still in the
        # worker when the body ends would otherwise take itself for the whole (a partial document as the template
        # key and as the document background rules are matched against)
        load.spawn(self._discovered(load, tap, body, tap.whole), "lanefetch-discover")

    async def _discovered(self, load: _Load, tap: _Tap, body: bytes, whole: bool) -> None:
        try:
            if tap.coding:  # decoded off the event loop, never beyond what a tap reads however much it expands
                try:
                    body = await asyncio.to_thread(decoded_prefix, tap.coding, body, MAX_TAPPED)
                except FetchError:
                    return  # not what it says it is: nothing to read
            rules: list[BackgroundRule] = []
            opened = False
            if tap.kind == "html":
                read = await self._discoverer.html(body, tap.url, tap.charset)
                found = read.found
                if read.encoding is not None:  # each read of the document finds the same
                    load.encodings[tap.url] = load.document_encoding = read.encoding
                load.under_policy = load.under_policy or read.policy
                opened = not load.head_read and (read.head_ended or whole)
                load.head_read = load.head_read or opened
            else:  # one parse for what it names and its background rules
                found, rules, encoding = await self._discoverer.stylesheet(
                    body, tap.url, tap.charset, _guesses_backgrounds(load), _environment(load, tap.url))
                load.encodings[tap.url] = encoding
            if load.starting is not None:
                await asyncio.wait([load.starting])  # the history recalled: the plan merges both
            await self._discovered_found(load, tap, found, whole)
            await self._discovered_backgrounds(load, tap, body, whole, rules)
            if opened:  # what the stylesheets named while the document's head was not read yet
                await self._fly_pending(load, tap.user_agent or load.user_agent)
        except Exception:  # discovery is an optimisation: a failure loses a flight, never the page
            log.exception("discovering a page's subresources failed")

    async def _discovered_backgrounds(self, load: _Load, tap: _Tap, body: bytes, whole: bool,
                                      rules: list[BackgroundRule]) -> None:
        """Background images (discover_backgrounds.py): a stylesheet's rules (read with it where
        _guesses_backgrounds) are kept, and matched against the document once it was read whole; what they are
        expected to show flies as guesses."""
        if load.ended:
            return
        changed = False
        if tap.kind == "css" and rules and _guesses_backgrounds(load):
            kept = len(load.backgrounds) + sum(len(r) for r, _ in load.unplaced_rules.values())
            if kept + len(rules) > MAX_BACKGROUND_RULES:
                load.backgrounds_given_up = True
                load.expected_backgrounds.clear()
                load.unplaced_rules.clear()
                return
            load.unplaced_rules[tap.url] = (rules, tap.wave)
        elif tap.kind == "html" and whole and load.document is None and len(body) <= MAX_KEPT_DOCUMENT:
            load.document = (body, tap.charset)
            changed = True
        changed = _place_rules(load) or changed
        if not changed or load.document is None or not load.backgrounds or load.ended:
            return
        expected = await self._discoverer.backgrounds(*load.document, list(load.backgrounds))
        if load.backgrounds_given_up:
            return
        load.expected_backgrounds = {sub.url: (sub, load.sheet_waves.get(sub.initiator, 1) + 1) for sub in expected}
        new = _unplanned(load, load.expected_backgrounds.values())
        if not new or load.ended:
            return
        flown = await self._fly_found(load, new, tap.user_agent or load.user_agent)
        if flown:
            log.debug("background images expected on %s: %s", load.key.page, flown)

    async def _discovered_found(self, load: _Load, tap: _Tap, found: list[Subresource], whole: bool) -> None:
        """What a document or stylesheet names: planned with the page's history and flown."""
        recalled = False
        if tap.kind == "html" and whole and load.stylesheets is None:
            # The template key is known now: a new page of a known template gets the template's stable assets
            load.stylesheets = [sub.url for sub in found if sub.destination == "style"]
            if load.stylesheets:
                load.template = (await self._memory.recall(load.page, load.key.page, load.stylesheets)).template
                recalled = load.template is not None
        for sub in found:
            load.found.setdefault(sub.url, (sub, tap.wave + 1))
            if tap.streamed and sub.destination != "image":
                load.browser_named.add(sub.url)
            elif tap.streamed:
                load.after_first_batch.add(sub.url)
        new = _unplanned(load, [(sub, tap.wave + 1) for sub in found])
        if not (new or recalled) or load.ended:
            return
        await self._fly_found(load, new, tap.user_agent or load.user_agent, from_document=tap.kind == "html")

    async def _fly_found(self, load: _Load, found: list[tuple[Subresource, int]], user_agent: str | None, *,
                         from_document: bool = False) -> list[str]:
        """Plan what discovery found (each with its wave) with the page's histories and the browser's field profile,
        and fly it, less what was planned, is cached or was asked for already (_fly); the URLs planned."""
        if load.under_policy:
            found = []  # a request the page's policy blocks must never reach a server; its history's were made
        elif load.reads_document and not load.head_read and not from_document:
            # A <meta> policy may still come in the document's head: what its stylesheets name waits (_pending
            # flies it once a read of the document reached past its head). What the document names before such a
            # <meta> the browser fetches too: its policy applies from where it stands.
            found = []
        if not load.batch_seen:  # a streamed document's images wait for the browser's first batch (fetch)
            found = [(sub, wave) for sub, wave in found if sub.url not in load.after_first_batch]
        profile = await self._profile(load.page, user_agent) if user_agent is not None else None
        chosen = plan(load.exact, load.template, found, profile=profile, page_url=load.key.page,
                      cookies_on_site=load.cookies_on_site, shape=load.shape, sheet_sets_site=self._sheet_sets_site)
        await self._fly(load, chosen.items, guesses={sub.url for sub, _ in found})
        return [i.url for i in chosen.items]

    async def _profile(self, page: Page, user_agent: str) -> FieldProfile | None:
        """This browser's field profile, from memory or the cache database; None when none is kept."""
        if user_agent in self._profiles:
            return self._profiles[user_agent]
        cache = self._records_for(page)
        if cache is None:
            return None
        key = record_key(user_agent)
        generation = self._generation
        records = await cache.pages(PARTITION, [key])
        if generation != self._generation:
            return None  # the cache was cleared while it was read: what it read is forgotten
        profile = decode_profile(records[key], time.time()) if key in records else None
        if profile is not None and profile.user_agent != user_agent:
            profile = None
        if user_agent in self._taught:  # the browser's Accept told ahead (browser_accept)
            profile = with_accept(profile, user_agent, self._taught[user_agent], time.time())
        self._profiles.setdefault(user_agent, profile)
        return self._profiles[user_agent]

    def _learn_live(self, load: _Load, requests: list[FetchRequest], wave: int) -> None:
        """The field profile learns from a batch as it comes (in memory; kept when the load ends, _learn_profile)."""
        if load.forgotten or load.ended:
            return
        observed = [item for r in requests
                    if (item := observe_request(r.method, r.url, r.headers, r.resource_type, wave, None)) is not None]
        # The load's own document (field_profile.learn_navigation): what the browser sends every server
        navigations = [(r.url, replayed(r.headers)) for r in requests
                       if self._documents_whole and r.method.upper() == "GET" and _own_document(load, r)]
        if not observed and not navigations:
            return
        load.spawn(self._learned_live(load, observed, navigations), "lanefetch-profile-live")

    async def _learned_live(self, load: _Load, observed: list[Observed],
                            navigations: list[tuple[str, tuple[tuple[str, str], ...]]]) -> None:
        try:
            if self._records_for(load.page) is None:
                return  # nowhere to keep a profile: none is learned (as at a load's end)
            agents = {v for item in observed for k, v in item.headers if k == "user-agent"}
            agents |= {v for _url, fields in navigations for k, v in fields if k == "user-agent"}
            for ua in agents:
                await self._profile(load.page, ua)  # the kept profile first: learning extends it, never replaces it
            if load.forgotten or load.ended:
                return
            known = {ua: p for ua, p in self._profiles.items() if p is not None}
            now = time.time()
            taught_by = dict(learn(known, load.key.page, observed, now))
            for url, fields in navigations:
                taught_by.update(learn_navigation({**known, **taught_by}, url, fields, now))
            taught = False
            for ua, profile in taught_by.items():
                before = self._profiles.get(ua)
                taught = taught or before is None or dataclasses.replace(before, updated_at=0) != dataclasses.replace(
                    profile, updated_at=0)
                self._profiles[ua] = profile
            if not taught:
                return
            flown = await self._fly_pending(load, load.user_agent)
            if flown:
                log.debug("the field profile learned from %s's batch: %d found earlier planned now", load.key.page,
                          len(flown))
        except Exception:  # an optimisation: a failure loses a flight, never the page
            log.exception("learning the browser's fields during a load failed")

    async def _learn_profile(self, load: _Load, observed: list[Observed], generation: int) -> None:
        """The browser's field profile learns from the ended load (never a forgotten or private one, nor one the
        cache was cleared under: `generation` is the cache's when the load began to end)."""
        cache = self._records_for(load.page)
        if cache is None or not observed:
            return
        agents = {v for item in observed for k, v in item.headers if k == "user-agent"}
        for ua in agents:
            await self._profile(load.page, ua)
        if generation != self._generation:
            return
        known = {ua: p for ua, p in self._profiles.items() if p is not None}
        now = time.time()
        for ua, profile in learn(known, load.key.page, observed, now).items():
            self._profiles[ua] = profile
            cache.keep_pages(PARTITION, {record_key(ua): encode_profile(profile)}, now)

    async def _not_fresh(self, page: Page, items: list[Planned]) -> list[Planned]:
        """The items the helper's HTTP cache holds no fresh copy of: a fresh one answers the browser's request as
        fast as a flight could. One it holds stale with a validator is `stored`: its prefetch revalidates it (a 304
        refreshes the stored response, whose body then answers; FetchRequest.cache_refresh), so the page's
        revalidations go at the navigation, all in one flight, not wave by wave as the browser finds them."""
        cache = self._cache_for(page)
        if cache is None or not items:
            return items
        queries = []
        for item in items:
            sent = sent_headers(FetchRequest("plan", "GET", item.url, list(item.headers), decode=item.decode))
            queries.append(("GET", cache_url(item.url), sent))
        decisions = await cache.plan(queries, page.partition, look_only=True)
        if decisions is None:
            return items
        kept = []
        for item, (decision, body) in zip(items, decisions, strict=True):
            if isinstance(decision, Hit) and body is not None:
                continue
            stored = isinstance(decision, Revalidate) and body is not None
            kept.append(dataclasses.replace(item, stored=True) if stored else item)
        return kept

    def _end_idle(self) -> None:
        now = self._clock()
        for load in [x for x in self._loads.values() if x.log.is_idle(now, self._idle_s)]:
            self._end_in_background(load)
        # Also while no message comes: an idle load's flight holds memory (and its held responses are too old to
        # answer after fidelity.MAX_AGE anyway).
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep = asyncio.get_running_loop().call_later(self._idle_s, self._end_idle) if self._loads else None

    def _end_in_background(self, load: _Load) -> asyncio.Task[None]:
        if self._loads.get(load.key) is load:
            del self._loads[load.key]
        task = asyncio.create_task(self._end(load), name="lanefetch-page-end")
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)
        return task

    async def _end(self, load: _Load) -> None:
        load.ended = True
        generation = self._generation  # a cache cleared while this load ends forgets it too (forget() cannot see it)
        try:
            for task in list(load.tasks):
                task.cancel()
            if load.tasks:
                await asyncio.gather(*load.tasks, return_exceptions=True)
            if load.starting is not None:
                await load.starting  # a flight being set up is closed like one under way
            report = await load.flight.close() if load.flight is not None else None
            if report is not None:
                log.debug("the load of %s ended: its flight sent %d (%d the browser's own, _adopt), answered %d, "
                          "cut by the budget %d, refused %s", load.key.page, report.sent, len(load.adopted),
                          report.answered, report.cancelled_by_budget, report.refused_by_fidelity or "none")
            load.forgotten = load.forgotten or generation != self._generation
            observed = [] if load.forgotten else load.log.observed()
            if not load.forgotten:
                await self._learn_profile(load, observed, generation)
            if generation != self._generation:
                load.forgotten, observed = True, []  # cleared while its profile was read
            self._memory.record(load.page, load.key.page, load.stylesheets, observed,
                                keep_empty=load.flight is not None and not load.forgotten)
            await self._on_end(LoadEnded(load.page, load.key.page, report, len(observed), load.log.first_request))
        except Exception:  # nothing waits for it: a failure is logged, never the host's end
            log.exception("ending a page load failed")

    def forget(self) -> None:
        """The cache is being cleared: the loads under way will record nothing (what they saw so far is learned
        history too, and clearing forgets it all)."""
        for load in self._loads.values():
            load.forgotten = True
        self._profiles.clear()
        self._generation += 1

    async def fetch(self, requests: list[FetchRequest], sink: Sink, page: Page) -> BatchResult:
        self._end_idle()
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        if load is None:
            return await self._answers.fetch(requests, sink, page)
        wave = load.log.batch([(r.id, r.method, r.url, list(r.headers), r.resource_type) for r in requests],
                              self._clock())
        if any(is_render_blocking(r) for r in requests):
            load.last_render_blocking = asyncio.get_running_loop().time()
        self._tap(load, requests, wave)
        self._learn_live(load, requests, wave)
        if not load.batch_seen:
            load.batch_seen = True
            if load.after_first_batch:  # planned after this batch's requests were queued (the plan awaits)
                load.spawn(self._fly_pending(load, load.user_agent), "lanefetch-after-first-batch")
        try:
            await self._adopt(load, requests)
        except Exception:  # an optimisation: the requests go their usual way
            log.exception("asking the browser's requests through the flight failed")
        return await self._answers.fetch(requests, _LoggingSink(sink, load, self._clock, self), page)

    async def _fly_pending(self, load: _Load, user_agent: str | None) -> list[str]:
        """Fly what the load found and could not fly then (_pending: no fields for it yet, the document's head not
        read yet, a streamed document's images before the first batch); the URLs planned. At once, but what is
        held (_holds) flies once the browser's render-blocking requests are quiet (_render_quiet)."""
        pending = _pending(load)
        if not pending or load.ended or load.forgotten:
            return []
        try:
            held = {sub.url for sub, _ in pending if not _blocks_render(sub) and await self._holds(load, sub.url)}
            first = [(sub, wave) for sub, wave in pending if sub.url not in held]
            flown = await self._fly_found(load, first, user_agent) if first else []
            if held:
                await self._render_quiet(load)
                rest = _pending(load)  # again: the browser may have asked for some meanwhile
                if rest and not (load.ended or load.forgotten):
                    flown += await self._fly_found(load, rest, user_agent)
            return flown
        except Exception:  # an optimisation: a failure loses a flight, never the page
            log.exception("planning what a load found earlier failed")
            return []

    async def _holds(self, load: _Load, url: str) -> bool:
        """Does work for url that is not render-blocking wait for the browser's render-blocking requests (holds_for)?"""
        return self._holds_for is not None and await self._holds_for(url, load.page)

    async def _render_quiet(self, load: _Load) -> None:
        """Wait until the browser's render-blocking requests have been quiet for render_quiet_s, at most hold_max_s
        (render_quiet.held_until: bounded, so this loop ends)."""
        loop = asyncio.get_running_loop()
        ready = loop.time()
        load.holding = True
        try:
            while True:  # each turn sleeps until the bound as it stands; a later render-blocking batch moves it
                until = held_until(load.last_render_blocking, ready, self._render_quiet_s, self._hold_max_s)
                if until <= loop.time() or load.ended or load.forgotten:
                    return
                await asyncio.sleep(until - loop.time())
        finally:
            load.holding = False

    async def browser_accept(self, user_agent: str, accept: dict[tuple[str, str], str | None]) -> None:
        """The Accept fields this browser sends per kind, seen on requests of the extension's own (browser_fields):
        kept in memory apart from the profile (`_taught`, never on disk: no database is opened for them) and given
        to this browser's profile whenever it is read (_profile) or, if it is in memory already, now
        (field_profile.with_accept); a load's end keeps them with what it taught. Clearing the cache keeps them:
        they say nothing of the user's browsing (values the browser sends every server), and the extension sends
        them only once per helper connection. Loads under way plan again what they found and could not plan for want
        of these fields."""
        taught = taught_accept(accept)
        if not taught:
            return
        self._taught[user_agent] = {**self._taught.get(user_agent, {}), **taught}
        while len(self._taught) > MAX_TAUGHT_AGENTS:
            del self._taught[next(iter(self._taught))]
        before = self._profiles.get(user_agent)
        if user_agent in self._profiles:
            profile = with_accept(before, user_agent, taught, time.time())
            if profile is None or profile is before:
                return
            self._profiles[user_agent] = profile
        log.debug("the field profile of %.80s takes the browser's Accept for %s", user_agent,
                  ", ".join(f"{d} {m}" for d, m in sorted(taught)))
        for load in list(self._loads.values()):
            if load.user_agent == user_agent:
                await self._fly_pending(load, user_agent)

    def invalidate(self, page: Page, url: str) -> None:
        """The page sent a request of an unsafe method to url (the browser sends it itself): its flight's answers for
        url answer nothing more (Flight.invalidate). The cache's entries are the caller's (bridge/host.py)."""
        flight = self._flight_for(page)
        if flight is not None:
            flight.invalidate(url)

    def browser_fetched(self, requests: list[FetchRequest], page: Page) -> None:
        """Requests of the page that the browser fetched itself: over its own h2/h3 connection, never offered here
        (the page had no flight), or the page's own document on a private address (local_document): logged in the
        page's load as left to the browser, as a browser_warm request declined here is, so the page is learned all
        the same. No body of them comes here, but the document's, which the browser streams (browser_document)."""
        self._end_idle()
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        if load is None or not requests:
            return
        now = self._clock()
        wave = load.log.batch([(r.id, r.method, r.url, list(r.headers), r.resource_type) for r in requests], now)
        self._learn_live(load, requests, wave)
        for r in requests:
            if r.method.upper() == "GET":
                ua = self._observe_browser(load, r)
                if _own_document(load, r) and not load.reads_document:
                    # Its bytes follow as the browser receives them (browser_document): read as they come. The
                    # load has its document from now on, so the stylesheets read meanwhile keep their background
                    # rules (the document's first bytes can come after a fast stylesheet's)
                    load.taps[r.id] = _Tap("html", r.url, 0, ua, streamed=True)
                    load.reads_document = True
                    log.debug("the browser's document %s will stream here", r.url)
            load.log.failed(r.id, now, left_to_browser=True)

    def browser_document(self, page: Page, request_id: str, status: int | None, content_type: str | None,
                         data: bytes, end: str | None, *, policy: bool = False) -> None:
        """The next bytes of a document the browser loads itself, told first by browser_fetched (`request_id`):
        read as the helper reads a document it fetched (at 1 KiB, each time it doubled, once whole). The first piece
        has the response's status and Content-Type (a body that is not 2xx is not read, nor is it the load's
        document for background rules) and `policy`, whether it carries a Content-Security-Policy. `end` "whole":
        the body ended; "cut": it stopped short (never read as whole). A piece for a request that is not the
        load's tapped document is dropped."""
        key = load_key(page)
        load = self._loads.get(key) if key is not None else None
        if load is None or load.ended:
            return
        tap = load.taps.get(request_id)
        if tap is None or tap.kind != "html":
            return
        if status is not None:
            tap.readable = 200 <= status < 300
            tap.charset = _charset([("Content-Type", content_type)] if content_type is not None else [])
            load.under_policy = load.under_policy or policy
        self._tapped(load, tap, data)
        if end is not None:
            log.debug("the browser's document %s streamed here: %d B, %s", tap.url, tap.size, end)
            if end == "cut" and tap.read_at == 0 and tap.size < PROGRESSIVE_MIN:
                # Nothing of it was or will be read: the load has no document (what its stylesheets name need not
                # wait for its head, and there is none to match their background rules against)
                load.reads_document = False
            self._tap_ended(load, request_id, whole=end == "whole")

    @staticmethod
    def _observe_browser(load: _Load, r: FetchRequest) -> str | None:
        """What a GET of the page says of the browser: its User-Agent (returned), whether it holds cookies for the
        page's site."""
        ua = next((v for k, v in r.headers if k.lower() == "user-agent"), None)
        load.user_agent = load.user_agent or ua
        coding = next((v for k, v in r.headers if k.lower() == "accept-encoding"), None)
        if coding is not None:
            load.accept_encoding[url_scheme(r.url)] = coding
        if any(k.lower() in ("cookie", "authorization") for k, _ in r.headers) and (
                relation(r.url, load.key.page) in ("same-origin", "same-site")):
            load.cookies_on_site = True
        return ua

    def _tap(self, load: _Load, requests: list[FetchRequest], wave: int) -> None:
        """Which bodies of the batch are read (the load's document, stylesheets), and what its requests say of
        the browser (_observe_browser)."""
        for r in requests:
            if r.method.upper() != "GET":
                continue
            ua = self._observe_browser(load, r)
            if _own_document(load, r):
                load.taps[r.id] = _Tap("html", r.url, 0, ua)
                load.reads_document = True
            elif r.resource_type == "stylesheet" and r.url not in load.read:
                load.taps[r.id] = _Tap("css", r.url, wave, ua)

    def preconnect(self, url: str, page: Page, handshake: Handshake = "full") -> bool:
        return self.inner.preconnect(url, page, handshake)

    async def cancel(self, request_ids: list[str]) -> None:
        await self._answers.cancel(request_ids)

    async def cancel_and_close(self, request_id: str) -> None:
        """The consumer gave the request up for good (proxy mode: Firefox reset its stream): one waiting on a
        prefetch ends, one the inner fetcher carries is cancelled and its connection not kept for its rest."""
        if isinstance(self.inner, ClosingFetcher):
            await self.inner.cancel_and_close(request_id)
        await self._answers.cancel([request_id])

    async def end_all(self) -> None:
        """Every load ends now (recorded, reported): the helper is stopping."""
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for load in list(self._loads.values()):
            self._end_in_background(load)
        while self._ending:
            await asyncio.gather(*list(self._ending), return_exceptions=True)

    async def aclose(self) -> None:
        await self.end_all()
        self._discoverer.close()
        await self.inner.aclose()
