"""The demo site: the static page under site/ plus its pictures, drawn here (a mosaic of 48 tiles of one landscape
and 12 card icons), written into a docroot for nginx. The page's words describe the link it is served over and the
browser it is shown in (Chromium hands lanefetch the page's requests through its debugger, under a bar the user
sees; Firefox sends them to the helper as its proxy, with no bar), so neither browser's page talks about the other's."""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

from bench import png
from bench.netlab import LinkProfile

SITE = Path(__file__).with_name("site")
COLS, ROWS, TILE = 8, 6, 40
CARDS = [
    ("news", "Headlines that refresh every minute"), ("weather", "Today: sunny spells, 21 °C"),
    ("maps", "Directions to the station"), ("mail", "3 unread messages"), ("music", "Now playing: radio"),
    ("photos", "Your album from last weekend"), ("shop", "Basket: 2 items"), ("chat", "Alice is typing…"),
    ("sport", "Half-time: 1–0"), ("video", "Trailer, 2 min"), ("calendar", "Dentist, Tuesday 9:30"),
    ("search", "Suggestions as you type"),
]

# Per browser: how lanefetch gets the requests, what the user sees meanwhile, and where the timing page is.
BROWSER_NOTES = {
    "chromium": """\
    <p>With lanefetch on, Chromium hands the list of files to the lanefetch helper, which sends many requests
    back to back on each connection (HTTP/1.1 pipelining) and passes the answers to the page under their
    original addresses. Nothing on the page changes; only the waiting does.</p>
    <p>Try it: click the lanefetch button in the toolbar (the puzzle piece if it is not pinned) to turn this site
    off or on, reload, and compare the time in the box above. While lanefetch works on a tab, Chromium shows a
    bar saying that an extension "started debugging this browser": that is how lanefetch hands the page its
    files.</p>
    <p>To see the waiting: the tab "lanefetch — timing" next to this one (also "Timing of this page" in the
    toolbar button's menu, and in DevTools, F12, as the "lanefetch" panel) draws each file as one bar, grouped
    by the connection it came on: grey while it waits its turn, green while it waits for the server's first
    byte, blue while it arrives. With lanefetch the requests on a connection all leave together (click a bar:
    "Pipeline" says how many were in flight when it was sent), so their waits overlap instead of adding up.</p>""",
    "firefox": """\
    <p>With lanefetch on, Firefox sends this site's requests to the lanefetch helper on this computer as its
    proxy; the helper sends many of them back to back on each connection (HTTP/1.1 pipelining) and hands each
    answer back to Firefox. Nothing on the page changes; only the waiting does.</p>
    <p>Try it: click the lanefetch button in the toolbar (the puzzle piece if it is not pinned) to turn this site
    off or on, reload, and compare the time in the box above.</p>
    <p>To see the waiting: lanefetch's own tab (also "Timing of this page" in the toolbar button's menu, and in
    the developer tools, F12, as the "lanefetch" panel) draws each file as one bar, grouped by the connection it
    came on: grey while it waits its turn, green while it waits for the server's first byte, blue while it
    arrives. With lanefetch the requests on a connection all leave together (click a bar: "Pipeline" says how
    many were in flight when it was sent), so their waits overlap instead of adding up.</p>""",
}


def link_lede(name: str, link: LinkProfile) -> str:
    """The sentence under the page's title: what the link does to every request, in the link's own numbers."""
    kind = "3G mobile link" if name == "wcdma" else f"`{name}` link"
    rate = ("data flows at full speed" if link.down_kbit is None else
            f"data flows at {link.down_kbit:g} kbit/s towards you and {link.up_kbit or 0:g} kbit/s back")
    wait = (f"each question to the server takes {link.rtt_ms / 1000:g} s to be answered at best"
            if link.rtt_ms else "no delay is added")
    coda = " That is what a phone with weak coverage gets." if name == "wcdma" else ""
    return (f'  <p class="lede">This page comes from a web server (nginx) on this computer, but every byte travels '
            f"through an <em>emulated {kind}</em>: {wait}, and {rate}.{coda}</p>")


def _landscape(x: int, y: int, rng: random.Random) -> tuple[int, int, int]:
    """One pixel of a 320 × 240 picture: sky, sun, two hills, a lake; a little grain like a photo."""
    w, h = COLS * TILE, ROWS * TILE
    hill1 = h * 0.55 + 25 * math.sin(x / 45)
    hill2 = h * 0.68 + 18 * math.sin(x / 30 + 1.7)
    if (x - w * 0.72) ** 2 + (y - h * 0.25) ** 2 < 26**2:
        c = (255, 214, 92)
    elif y < hill1:
        t = y / hill1
        c = (int(90 + 110 * t), int(150 + 70 * t), int(235 - 10 * t))
    elif y < hill2:
        c = (70, int(140 - 40 * (y - hill1) / h), 70)
    elif y > h * 0.86:
        c = (60, 110, int(170 + 40 * math.sin(x / 9)))
    else:
        c = (int(110 - 30 * (y / h)), int(165 - 50 * (y / h)), 60)
    g = rng.randint(-6, 6)
    return tuple(max(0, min(255, v + g)) for v in c)  # type: ignore[return-value]


def _tile(col: int, row: int) -> bytes:
    rng = random.Random(col * 100 + row)
    rows = []
    for y in range(TILE):
        rows.append(bytes(v for x in range(TILE) for v in _landscape(col * TILE + x, row * TILE + y, rng)))
    return png.encode(TILE, TILE, rows)


def _icon(k: int) -> bytes:
    """A 32 × 32 icon: a coloured disc with a ring, different per card."""
    hue = [(31, 111, 235), (45, 164, 78), (207, 34, 46), (191, 135, 0), (130, 80, 223), (27, 124, 131)][k % 6]
    rows = []
    for y in range(32):
        row = bytearray()
        for x in range(32):
            d = math.hypot(x - 15.5, y - 15.5)
            inner = 6 + 2 * (k % 3)
            c = hue if d < 14 and not inner < d < inner + 2 else (255, 255, 255)
            row += bytes(c)
        rows.append(bytes(row))
    return png.encode(32, 32, rows)


def _tile_path(row: int, col: int) -> str:
    return f"tiles/t{row}{col}.png"


def _icon_path(name: str) -> str:
    return f"icons/{name}.png"


def subresource_paths() -> list[str]:
    """The URL paths of every file the page loads besides itself (style sheets, scripts, tiles, icons)."""
    static = sorted(f.relative_to(SITE).as_posix() for f in SITE.rglob("*") if f.is_file() and f.name != "index.html")
    tiles = [_tile_path(row, col) for row in range(ROWS) for col in range(COLS)]
    return ["/" + p for p in static + tiles + [_icon_path(name) for name, _ in CARDS]]


def build(docroot: Path, browser: str, link_name: str, link: LinkProfile) -> int:
    """Writes the site, worded for this browser and link, into docroot; returns the number of subresources the page
    loads."""
    shutil.copytree(SITE, docroot, dirs_exist_ok=True)
    (docroot / "tiles").mkdir(exist_ok=True)
    (docroot / "icons").mkdir(exist_ok=True)
    tiles = []
    for row in range(ROWS):
        for col in range(COLS):
            name = _tile_path(row, col)
            (docroot / name).write_bytes(_tile(col, row))
            tiles.append(f'      <img src="{name}" width="{TILE}" height="{TILE}" alt="">')
    cards = []
    for k, (name, text) in enumerate(CARDS):
        (docroot / _icon_path(name)).write_bytes(_icon(k))
        cards.append(f'      <div class="card"><img src="{_icon_path(name)}" alt="{name}"><p>{text}</p></div>')
    index = docroot / "index.html"
    text = index.read_text().replace("TILES", "\n".join(tiles)).replace("CARDS", "\n".join(cards))
    text = text.replace("BROWSER_NOTES", BROWSER_NOTES[browser]).replace("LINK_LEDE", link_lede(link_name, link))
    index.write_text(text)
    return len(subresource_paths())
