"""The demo's pictures, composed from the browser's screenshots with Pillow (already here through matplotlib):

* ``side_by_side``: the page loaded OFF and ON next to each other under a caption bar with both measured load times
  and the speed-up, so one picture answers "what did lanefetch change?";
* ``captioned``: a screenshot under a caption bar; the timing page's screenshot gets one saying that its "without
  pipelining" figure is an estimate and what the OFF load measured, so the estimate is not read as the OFF time.

Pure: images and numbers in, an image out (the demo writes it).
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from demo import tables

BAR = (32, 41, 56)  # caption bar: dark slate, white text
TEXT = (255, 255, 255)
MUTED = (200, 208, 220)
GAP = 24  # between the two screenshots
PAD = 16
TITLE_SIZE = 30
LINE_SIZE = 20


# DejaVu Sans (Debian's fonts-dejavu-core, there with the browsers) has "×" and "→"; Pillow's bundled font does not.
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")


def _font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    face = DEJAVU / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")
    return ImageFont.truetype(str(face), size) if face.exists() else ImageFont.load_default(size=size)


def speedup_words(off_s: float, on_s: float) -> str:
    """"2.31× faster with lanefetch (7.49 s → 3.24 s)", or "slower" when ON took longer: never a flattering lie."""
    if on_s <= 0 or off_s <= 0:
        return f"OFF {off_s:.2f} s, ON {on_s:.2f} s"
    return f"{tables.speedup(off_s, on_s)} with lanefetch ({off_s:.2f} s → {on_s:.2f} s)"


def _bar(width: int, lines: list[tuple[str, int, tuple[int, int, int]]]) -> Image.Image:
    """A caption bar as wide as the picture: one (text, size, colour) per line, wrapped to the width if needed."""
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    laid: list[tuple[str, ImageFont.FreeTypeFont | ImageFont.ImageFont, tuple[int, int, int], int]] = []
    for k, (text, size, colour) in enumerate(lines):
        font = _font(size, bold=k == 0)
        for line in _wrap(probe, text, font, width - 2 * PAD):
            laid.append((line, font, colour, int(size * 1.35)))
    bar = Image.new("RGB", (width, 2 * PAD + sum(h for *_, h in laid)), BAR)
    draw = ImageDraw.Draw(bar)
    y = PAD
    for line, font, colour, height in laid:
        draw.text((PAD, y), line, font=font, fill=colour)
        y += height
    return bar


def _wrap(draw: ImageDraw.ImageDraw, text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
          width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}".strip()
        if current and draw.textlength(candidate, font=font) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return [*lines, current]


def _stack(top: Image.Image, bottom: Image.Image) -> Image.Image:
    out = Image.new("RGB", (max(top.width, bottom.width), top.height + bottom.height), (255, 255, 255))
    out.paste(top, (0, 0))
    out.paste(bottom, (0, top.height))
    return out


def side_by_side(off: Image.Image, on: Image.Image, off_s: float, on_s: float, setting: str) -> Image.Image:
    """OFF on the left, ON on the right, each under its own label with its measured load time, all under a bar
    with the speed-up. setting: the browser and link, e.g. "Chromium · emulated wcdma link (RTT 400 ms)"."""
    width = off.width + GAP + on.width
    head = _bar(width, [(speedup_words(off_s, on_s), TITLE_SIZE, TEXT),
                        (f"The demo page, loaded twice: {setting}. Times from navigation start to the load event.",
                         LINE_SIZE, MUTED)])
    left = _bar(off.width, [(f"lanefetch OFF (the browser alone): {off_s:.2f} s", LINE_SIZE + 4, TEXT)])
    right = _bar(on.width, [(f"lanefetch ON: {on_s:.2f} s", LINE_SIZE + 4, TEXT)])
    labels = Image.new("RGB", (width, max(left.height, right.height)), BAR)
    labels.paste(left, (0, 0))
    labels.paste(right, (off.width + GAP, 0))
    body = Image.new("RGB", (width, max(off.height, on.height)), BAR)
    body.paste(off.convert("RGB"), (0, 0))
    body.paste(on.convert("RGB"), (off.width + GAP, 0))
    return _stack(_stack(head, labels), body)


def captioned(shot: Image.Image, lines: list[str]) -> Image.Image:
    """The screenshot under a caption bar: the first line large, the others smaller."""
    first, *rest = lines
    bar = _bar(shot.width, [(first, LINE_SIZE + 4, TEXT), *((line, LINE_SIZE, MUTED) for line in rest)])
    return _stack(bar, shot.convert("RGB"))
