"""Resolving a reference from a document or stylesheet to the URL the browser will request.

A prefetched response may only answer a request for the identical URL (fidelity.py), so the URL must be the one
the browser's own WHATWG URL parser produces, byte for byte: percent-encoding of spaces and non-ASCII, dot
segments, default ports, lower-cased and IDNA-encoded hosts, tabs and newlines removed. urllib's urljoin does
none of that, so this uses ada (the WHATWG parser Node.js ships) through ada-url.

What is refused (None): anything that does not parse, any scheme but http and https (data:, blob:, javascript:,
about: are never fetched over the network by the helper), and, in a document whose encoding is not UTF-8, a
reference with non-ASCII characters: there the browser encodes the query in the document's encoding, which ada
does not, and a guessed URL would only waste budget. The fragment is dropped: it is never part of a request."""

from __future__ import annotations

import ada_url

_UTF8_LABELS = frozenset({"utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"})


def is_utf8(encoding: str | None) -> bool:
    return encoding is None or encoding.strip().lower() in _UTF8_LABELS


def resolve(reference: str, base: str, *, encoding: str | None = None) -> str | None:
    """The absolute http(s) URL reference names against base, as the browser requests it; None if none."""
    if not is_utf8(encoding) and not reference.isascii():
        return None
    try:
        url = ada_url.URL(reference, base)
    except ValueError:
        return None
    if url.protocol not in ("http:", "https:") or not url.host:
        return None
    url.hash = ""
    return str(url.href)


def base_url(href: str | None, document_url: str, *, encoding: str | None = None) -> str | None:
    """The document's base URL: its first <base href> resolved against its own URL, unless that fails or names
    a data: or javascript: URL (HTML's "frozen base URL" falls back to the document's URL then). None when it
    cannot be known: a non-ASCII href in a document not decoded as UTF-8 (the browser's decoding or its
    query encoding may differ from ours, and every URL resolved against it with it)."""
    if href is None:
        return document_url
    if not is_utf8(encoding) and not href.isascii():
        return None
    try:
        url = ada_url.URL(href, document_url)
    except ValueError:
        return document_url
    if url.protocol in ("data:", "javascript:"):
        return document_url
    return str(url.href)
