"""The documents a user or contributor acts on, checked against the code where that is cheap: every module
CONTRIBUTING's layout names is there. Reads files only; no process is started."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_every_module_contributing_lists_is_there() -> None:
    """Each layout bullet names a folder (`engine/`, `src/background/`) and the files in it."""
    text = (REPO / "docs" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    missing, named = [], 0
    for root, section in re.findall(r"^`([\w/-]+/)`:\n(.*?)(?=\n\n)", text, re.S | re.M):
        for bullet in re.split(r"\n- ", "\n" + section)[1:]:
            folder = re.match(r"`([\w/-]+/)`", bullet)
            base = REPO / root / (folder.group(1) if folder else "")
            for name in re.findall(r"`([\w-]+\.(?:py|ts))`", bullet):
                named += 1
                if not (base / name).exists():
                    missing.append(str((base / name).relative_to(REPO)))
    assert named > 80  # the layout was read at all
    assert missing == []
