"""Sans-I/O framing of the answer the proxy writes to the browser: the origin's status line and fields
as they came (content coding untouched), re-framed for this hop: Content-Length kept, otherwise
chunked to HTTP/1.1 clients and close-delimited to HTTP/1.0 ones."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.exchange import DeliveredHead
from ..engine.fields import Headers


@dataclass
class ResponseWriter:
    method: str
    client_version: str  # "1.0" or "1.1"
    keep_alive: bool = True
    chunked: bool = False

    def head(self, head: DeliveredHead) -> bytes:
        bodiless = self.method == "HEAD" or head.status in (204, 304) or head.status < 200
        has_length = any(k.lower() == "content-length" for k, _ in head.headers)
        self.chunked = not bodiless and not has_length and self.client_version == "1.1"
        if not bodiless and not has_length and not self.chunked:
            self.keep_alive = False  # the end of the body is the end of the connection
        lines = [f"HTTP/{self.client_version} {head.status} {head.reason}".rstrip()]
        lines += [f"{k}: {v}" for k, v in head.headers]
        if self.chunked:
            lines.append("Transfer-Encoding: chunked")
        if not self.keep_alive:
            lines.append("Connection: close")
        elif self.client_version == "1.0":
            lines.append("Connection: keep-alive")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="replace")

    def body(self, data: bytes) -> bytes:
        if not data:
            return b""
        return b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data

    def end(self, trailers: Headers) -> bytes:
        if not self.chunked:
            return b""
        tail = "".join(f"{k}: {v}\r\n" for k, v in trailers)
        return b"0\r\n" + tail.encode("latin-1", errors="replace") + b"\r\n"


def refusal(status: int, reason: str, message: str, extra: Headers | None = None, *, close: bool = True,
            method: str = "GET") -> bytes:
    """A complete answer of the proxy itself (407, 400, 501 …); to a HEAD its head only (its Content-Length says
    what a GET's body would be), or the browser reads the message as the start of its next answer."""
    body = (message + "\n").encode()
    lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: text/plain; charset=utf-8",
             f"Content-Length: {len(body)}"]
    if close:
        lines.append("Connection: close")
    lines += [f"{k}: {v}" for k, v in (extra or [])]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if method.upper() == "HEAD" else body)
