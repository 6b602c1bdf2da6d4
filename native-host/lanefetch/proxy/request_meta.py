"""What a proxied request's own fields say about it: its resource type (Sec-Fetch-Dest, else Accept, else the
path's suffix) and priority (RFC 9218 Priority urgency), in the engine's terms, so render-blocking requests go
first.

Firefox sends Sec-Fetch-* to potentially trustworthy origins only; over plain http:// a script's Accept is
`*/*`, like a fetch()'s, and a font's names its formats. Without the suffix a script was "other" work, which the
pool pipelines behind images: real-pages rust-book-print in Firefox on `sat` had highlight.js (313 kB) wait 2.6 s
behind a 241 kB image (0.87x). The type only orders and places requests (pool_plan); it never changes one."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .request_reader import RequestHead

_DEST = {
    "document": "document", "iframe": "document", "frame": "document", "embed": "other", "object": "other",
    "style": "stylesheet", "xslt": "stylesheet",
    "script": "script", "worker": "script", "sharedworker": "script", "serviceworker": "script",
    "audioworklet": "script", "paintworklet": "script",
    "font": "font", "image": "image", "audio": "media", "video": "media", "track": "texttrack",
    "manifest": "manifest", "report": "cspviolationreport", "empty": "fetch",
}
# What a path says where the fields do not (plain http://, Accept */*)
_BY_SUFFIX = ((".js", "script"), (".mjs", "script"), (".css", "stylesheet"), (".woff2", "font"), (".woff", "font"))
_URGENCY = re.compile(r"(?:^|,)\s*u\s*=\s*([0-7])\b")
_PRIORITY = ["VeryHigh", "High", "Medium", "Low", "VeryLow", "VeryLow", "VeryLow", "VeryLow"]


def resource_type(head: RequestHead) -> str:
    dest = (head.get("sec-fetch-dest") or "").strip().lower()
    if dest in _DEST:
        return _DEST[dest]
    # Sec-Fetch-* go to potentially trustworthy origins only: for other http:// origins, the Accept field.
    accept = (head.get("accept") or "").lower()
    if accept.startswith("text/html"):
        return "document"
    if accept.startswith("text/css"):
        return "stylesheet"
    if accept.startswith("image/"):
        return "image"
    if accept.startswith(("application/font", "font/")):
        return "font"
    path = urlsplit(head.target).path.lower() if "://" in head.target else ""
    return next((kind for suffix, kind in _BY_SUFFIX if path.endswith(suffix)), "other")


def priority(head: RequestHead) -> str | None:
    """The engine's priority from Firefox's RFC 9218 urgency, sharpened by the resource type where Firefox's is
    coarse: it marks the head's stylesheets, its parser-blocking scripts and its preloaded fonts all u=2. Offered
    HTTP/2 (h2_server.py), Firefox sends a page's requests at once, and rust-std's six preloaded fonts (600 kB), first
    in its head, went ahead of its stylesheets on one upstream connection: normalize.css (784 B) arrived 2.5 s after
    it was asked for, the page 0.91x the browser alone over `sat`. As Chromium does, the head's stylesheets come
    first (VeryHigh), its blocking scripts next (High), then fonts."""
    m = _URGENCY.search(head.get("priority") or "")
    if m is None:
        return None
    urgency = int(m.group(1))
    if urgency <= 2:
        kind = resource_type(head)
        if kind == "stylesheet":
            return "VeryHigh"
        if kind == "script":
            return "High"
    return _PRIORITY[urgency]
