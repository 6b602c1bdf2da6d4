"""What a proxied request's own fields say about it: its resource type (Sec-Fetch-Dest, else Accept) and
priority (RFC 9218 Priority urgency), in the engine's terms, so render-blocking requests go first."""

from __future__ import annotations

import re

from .request_reader import RequestHead

_DEST = {
    "document": "document", "iframe": "document", "frame": "document", "embed": "other", "object": "other",
    "style": "stylesheet", "xslt": "stylesheet",
    "script": "script", "worker": "script", "sharedworker": "script", "serviceworker": "script",
    "audioworklet": "script", "paintworklet": "script",
    "font": "font", "image": "image", "audio": "media", "video": "media", "track": "texttrack",
    "manifest": "manifest", "report": "cspviolationreport", "empty": "fetch",
}
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
    return "other"


def priority(head: RequestHead) -> str | None:
    m = _URGENCY.search(head.get("priority") or "")
    return _PRIORITY[int(m.group(1))] if m else None
