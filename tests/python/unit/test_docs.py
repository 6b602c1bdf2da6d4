"""The documents a user or contributor acts on, checked against the code where that is cheap: every `lanefetch`
option the docs name exists in the parser (of the command it is given to), and every module CONTRIBUTING's layout
names is there. Reads files only; no process is started."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from lanefetch.cli import build_parser

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "extension" / "PERMISSIONS.md"]


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of a parser and of the subcommands under it."""
    out: set[str] = set()
    for action in parser._actions:
        out.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _options(sub)
    return out


def _subcommand(name: str) -> argparse.ArgumentParser:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise AssertionError("no subcommands")


def _command_lines(text: str) -> list[str]:
    """`lanefetch …` commands: the lines of code blocks and the inline code spans that start with the name."""
    blocks = re.findall(r"```\n(.*?)```", text, re.S)
    lines = [line.split("#", 1)[0] for block in blocks for line in block.splitlines()]
    spans = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " "))
    return [c.strip() for c in [*lines, *spans] if c.strip().startswith("lanefetch ")]


def test_every_lanefetch_option_the_docs_name_exists_in_that_command() -> None:
    unknown, commands = [], 0
    for doc in DOCS:
        for line in _command_lines(doc.read_text(encoding="utf-8")):
            commands += 1
            words = line.split()
            if words[1].startswith("-"):
                continue  # `lanefetch --help`
            known = _options(_subcommand(words[1])) | {"--help"}
            unknown += [f"{doc.name}: {flag} in `{line}`" for flag in re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", line)
                        if flag not in known]
    assert commands > 30  # the docs' commands were found at all
    assert unknown == []


def test_every_option_docs_cli_mentions_exists() -> None:
    known = _options(build_parser())
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    mentioned = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", text))
    assert mentioned - known == set()


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
