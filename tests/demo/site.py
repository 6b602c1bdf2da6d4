"""The demo site: the static page under site/ plus its pictures, drawn here (a mosaic of 48 tiles of one landscape
and 12 card icons), written into a docroot for nginx."""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

from bench import png

SITE = Path(__file__).with_name("site")
COLS, ROWS, TILE = 8, 6, 40
CARDS = [
    ("news", "Headlines that refresh every minute"), ("weather", "Today: sunny spells, 21 °C"),
    ("maps", "Directions to the station"), ("mail", "3 unread messages"), ("music", "Now playing: radio"),
    ("photos", "Your album from last weekend"), ("shop", "Basket: 2 items"), ("chat", "Alice is typing…"),
    ("sport", "Half-time: 1–0"), ("video", "Trailer, 2 min"), ("calendar", "Dentist, Tuesday 9:30"),
    ("search", "Suggestions as you type"),
]


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


def build(docroot: Path) -> int:
    """Writes the site into docroot; returns the number of subresources the page loads."""
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
    index.write_text(index.read_text().replace("TILES", "\n".join(tiles)).replace("CARDS", "\n".join(cards)))
    return len(subresource_paths())
