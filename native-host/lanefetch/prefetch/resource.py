"""A subresource the browser is expected to request: what the fidelity rule and a flight need to know of it.

`destination` is the request's Sec-Fetch-Dest value (style, script, font, image, track, empty for fetch), `mode`
its Sec-Fetch-Mode (no-cors, cors) and `credentials` the Fetch credentials mode (include, same-origin): together
they decide which headers the browser's request carries (Origin, Cookie, Accept), so a prefetch made with
other values would be discarded by fidelity.py. `conditional` marks what the browser fetches only if it is used
(an @font-face source is fetched only when text uses the face): a flight takes those only when learned loads saw
them requested. `guess` marks what the browser fetches if the page's elements and styles are as they seem (a
background image whose selector matches an element of the document: discover_backgrounds.py): a flight takes it
as a guess, within the speculative budget. `initiator` is the URL of the document or stylesheet that names it
(its referrer)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["no-cors", "cors"]
Credentials = Literal["include", "same-origin"]


@dataclass(frozen=True)
class Subresource:
    url: str
    destination: str
    mode: Mode
    credentials: Credentials
    initiator: str
    conditional: bool = False
    guess: bool = False
    screen: bool = True  # a stylesheet that applies to the screen (no media or @import condition, or all/screen)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Two discoveries of one request: same URL, destination, mode and credentials."""
        return (self.url, self.destination, self.mode, self.credentials)


def cors_settings(value: str | None, *, default_cors: bool = False) -> tuple[Mode, Credentials]:
    """HTML's CORS settings attribute (crossorigin) → request mode and credentials mode.

    Absent: no-cors with credentials (or, for module scripts and modulepreload, cors same-origin); "anonymous",
    "" and any invalid value: cors same-origin; "use-credentials": cors include."""
    if value is None:
        return ("cors", "same-origin") if default_cors else ("no-cors", "include")
    if value.strip().lower() == "use-credentials":
        return ("cors", "include")
    return ("cors", "same-origin")


def dedupe(items: list[Subresource]) -> list[Subresource]:
    """First occurrence of each request, document order kept (the browser's memory cache serves the repeats)."""
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Subresource] = []
    for item in items:
        if item.key not in seen:
            seen.add(item.key)
            out.append(item)
    return out
