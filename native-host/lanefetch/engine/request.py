"""A request as the engine takes it: validated, given its origin, priority and wire form."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from ada_url import idna as ada_idna

from .errors import FetchError
from .fields import Headers
from .host_names import is_this_machine
from .pool_plan import link_size

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
# What a host name never holds: the URL standard's forbidden host code points (browsers refuse them too), C0
# controls and DEL, and % (a browser decodes percent-escapes in a host before it sends the URL anywhere).
_FORBIDDEN_HOST = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")

# Hop-by-hop (RFC 9110 §7.6.1) and fields the engine itself owns for the connection it uses.
_DROP_REQUEST = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
     "proxy-authorization", "host", "content-length", "trailer"}
)

# Render-blocking first (the page cannot paint without them), then what scripts wait on, then the rest.
_TYPE_CLASS = {
    "document": 0, "stylesheet": 0, "script": 0, "font": 0,
    "xhr": 1, "fetch": 1, "manifest": 1, "eventsource": 1,
    "image": 2, "media": 2, "texttrack": 2,
}
_PRIORITY_RANK = {"VeryHigh": 0, "High": 1, "Medium": 2, "Low": 3, "VeryLow": 4}


@dataclass(frozen=True)
class Origin:
    scheme: str  # "http" or "https"
    host: str  # lower case; IPv6 without brackets
    port: int

    @property
    def default_port(self) -> bool:
        return self.port == (443 if self.scheme == "https" else 80)

    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.default_port else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority()}"


@dataclass
class FetchRequest:
    id: str
    method: str
    url: str
    headers: Headers = field(default_factory=list)
    body: bytes | None = None
    resource_type: str = "other"
    priority: str | None = None
    decode: bool = False
    split: bool = False  # a large body: fetch it as byte ranges over the lanes (lanes/split_fetch.py)
    # False: the HTTP cache neither stores the response nor revalidates for it (a prefetch nobody asked for yet,
    # prefetch/flight.py: were it stored, a request the fidelity rule refused it to could get it from the cache)
    cache_store: bool = True
    # With cache_store False: a stale stored response may still be revalidated for this request (a 304 refreshes it
    # and the request gets the stored body; a full answer drops it, and nothing new is stored): a flight's prefetch
    # of what the helper's cache holds stale (prefetch/flight.py), which then costs the link a 304, not a body
    cache_refresh: bool = False
    # The browser's own connection to the origin is warm and idle (the extension's browser-warm-connection.ts):
    # the engine declines the request (error "browser_warm") rather than send it as it is, so the browser fetches
    # it there; the flight, the cache and a revalidation above the engine still answer it.
    browser_warm: bool = False
    # The response's body size as learned from earlier loads, decoded where the page's copy was (a prefetch flight's
    # request; None: not known): the flight's byte budget and the ranges of a flight's pieces count in it.
    expected_size: int | None = None
    # The bytes its answer put on the link in those loads, head included, as the server coded it (a compressed text:
    # a fraction of expected_size; None: not known). The pool's slow-start rules count in these (link_bytes).
    expected_wire: int | None = None

    @property
    def link_bytes(self) -> int | None:
        """What the answer is expected to put on the link, head included (pool_plan.link_size; None: not known): what
        a connection's slow start carries it in (pool_plan.fits_first_flight, balances, expected_long)."""
        return link_size(self.expected_wire, self.expected_size)

    @property
    def idempotent(self) -> bool:
        return self.method in ("GET", "HEAD")

    @property
    def conditional(self) -> bool:
        """Does it ask to validate a stored response (If-None-Match / If-Modified-Since)?"""
        return any(k.lower() in ("if-none-match", "if-modified-since") for k, _ in self.headers)


@dataclass(frozen=True)
class Target:
    origin: Origin
    path: str  # origin-form request target


def parse_target(url: str) -> Target:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise FetchError("bad_url", f"cannot parse URL {url[:200]!r}: {e}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError("bad_url", f"only http and https URLs are fetched, not {scheme or 'scheme-less'} ones")
    if not parts.hostname:
        raise FetchError("bad_url", f"URL has no host: {url[:200]!r}")
    if parts.username is not None or parts.password is not None:
        raise FetchError("bad_url", "URLs with credentials are not fetched by the helper")
    try:
        host = wire_host(parts.hostname.lower())
    except ValueError as e:
        raise FetchError("bad_url", f"URL host {parts.hostname[:200]!r} {e}") from None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if any(c in path for c in " \r\n\x00"):
        raise FetchError("bad_url", "URL path contains characters that cannot be sent")
    return Target(Origin(scheme, host, port or (443 if scheme == "https" else 80)), path)


def wire_host(host: str) -> str:
    """The host (lower case, IPv6 without brackets) as it goes to the resolver and into Host:; ValueError saying
    what is wrong with it otherwise. A name becomes ASCII (A-labels, as the browser makes them); each label must be
    1–63 characters and the name at most 253 (DNS's limits): the resolver's own IDNA step raises UnicodeError beyond
    them, which is not an OSError and used to escape the connect task."""
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError("is not an IPv6 address") from None
        return host
    if not host.isascii():
        # The A-label the browser's URL parser makes (WHATWG's domain to ASCII: UTS #46, non-transitional), not
        # Python's "idna" codec (IDNA 2003, which maps ß to ss: faß.de went to fass.de, another registrant's host).
        # ada reads a C string: a NUL would end the name there, so the forbidden code points are refused first.
        if _FORBIDDEN_HOST.search(host):
            raise ValueError("holds characters a host name cannot hold")
        try:
            host = ada_idna.encode(host).decode("ascii")
        except UnicodeError:  # a lone surrogate, not UTF-8
            host = ""
        if not host:
            raise ValueError("is not a valid international domain name")
    if _FORBIDDEN_HOST.search(host):  # (UTS #46 maps some non-ASCII to them: a fullwidth solidus to /)
        raise ValueError("holds characters a host name cannot hold")
    name = host.removesuffix(".")  # a fully qualified name's final dot
    if len(name) > 253 or not all(1 <= len(label) <= 63 for label in name.split(".")):
        raise ValueError("is not a DNS name (labels of 1–63 characters, 253 in all)")
    return host


def site_name_problem(name: str) -> str | None:
    """None if `name` (an https site as the extension names it: a DNS name in ASCII, an IPv4 address, or an
    IPv6 address in brackets) can be given a certificate authority; else what is wrong with it."""
    if name.startswith("[") and name.endswith("]"):
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return "not an IPv6 address in brackets"
        return None
    if not name.isascii():
        return "not ASCII (a name in IDNA A-labels is)"
    try:
        host = wire_host(name)
    except ValueError as e:
        return str(e)
    return None if host == name else "not a host name in its ASCII form"


def validate(request: FetchRequest) -> Target:
    if not _TOKEN.fullmatch(request.method):
        raise FetchError("bad_url", f"invalid method {request.method!r}")
    for name, value in request.headers:
        if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
            raise FetchError("bad_url", f"invalid header field {name[:60]!r}")
    if request.body is not None and request.idempotent:
        raise FetchError("bad_url", f"{request.method} requests carry no body here")
    return parse_target(request.url)


# What Chromium's network stack adds to a request that has no Accept-Encoding of its own: brotli and zstd only
# over TLS (middleboxes mangle unknown codings in the clear) or to this machine (net::IsLocalhost: Chromium 156 asks
# http://127.0.0.1/ and http://localhost/ for all four). Every one of them is decoded here (decode.py), and a
# response in a coding not asked for is failed as Chromium fails it (decode.chromium_refuses).
_ACCEPT_ENCODING = {"https": "gzip, deflate, br, zstd", "http": "gzip, deflate"}
_ALL_CODINGS = _ACCEPT_ENCODING["https"]


def url_scheme(url: str) -> str:
    """The URL's scheme, lower case (what Accept-Encoding depends on: br and zstd over https only)."""
    return url.split(":", 1)[0].lower()


def with_accept_encoding(request: FetchRequest, scheme: str) -> None:
    """Ask for compressed bodies as the browser's own request would (bytes parity): only where the helper
    decodes for the consumer (decode=True: the renderer's paused request never carried the browser's
    Accept-Encoding, which its network stack adds later), never over a request with its own Accept-Encoding or
    a Range (a byte range of a coded body is no range of the body the page asked for)."""
    names = {k.lower() for k, _ in request.headers}
    if request.decode and request.idempotent and not request.split and not names & {"accept-encoding", "range"}:
        coding = _ALL_CODINGS if _is_localhost(request.url) else _ACCEPT_ENCODING.get(scheme, "gzip, deflate")
        request.headers = [*request.headers, ("Accept-Encoding", coding)]


def _is_localhost(url: str) -> bool:
    """This machine, as Chromium's net::IsLocalhost reads a URL's host: a localhost name, or a loopback address."""
    try:
        return is_this_machine(urlsplit(url).hostname or "")
    except ValueError:
        return False


def sent_headers(request: FetchRequest) -> Headers:
    """The request's fields as the service will send them (with_accept_encoding, on a copy; the scheme from the
    URL): what the cache is asked with and what a prefetch is compared on before the service has seen the request.
    Accept-Encoding depends on `decode`: a compressed response is stored under the value it was asked with (Vary)."""
    wire = replace(request, headers=list(request.headers))
    with_accept_encoding(wire, url_scheme(request.url))
    return wire.headers


def serialize(request: FetchRequest, target: Target) -> bytes:
    """The request on the wire: origin-form, Host first, hop-by-hop fields removed."""
    connection_named = {
        t.strip().lower() for k, v in request.headers if k.lower() == "connection" for t in v.split(",")
    }
    lines = [f"{request.method} {target.path} HTTP/1.1", f"Host: {target.origin.authority()}"]
    for name, value in request.headers:
        lname = name.lower()
        if lname in _DROP_REQUEST or lname in connection_named:
            continue
        lines.append(f"{name}: {value}")
    if request.body is not None:
        lines.append(f"Content-Length: {len(request.body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="replace")
    return head + (request.body or b"")


def type_class(resource_type: str) -> int:
    """A resource type's priority class, lower first: 0 document, stylesheet, script, font (render-blocking)."""
    return _TYPE_CLASS.get(resource_type, 3)


def priority_key(request: FetchRequest) -> tuple[int, int]:
    """Lower sorts first: the resource type's class, then the browser's own priority."""
    return type_class(request.resource_type), _PRIORITY_RANK.get(request.priority or "Medium", 2)


def urgency(request: FetchRequest) -> tuple[int, bool]:
    """RFC 9218 priority for HTTP/2: urgency 0..7 from the same class and rank as priority_key (render-blocking
    VeryHigh is 0, an unprioritised "other" VeryLow 7), incremental for images and media (partial bodies are
    useful as they arrive, so they may share the link)."""
    cls, rank = priority_key(request)
    return min(7, cls + rank), request.resource_type in ("image", "media")
