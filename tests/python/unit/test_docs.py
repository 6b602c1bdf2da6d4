"""The documents a user or contributor acts on, checked against the code where that is cheap: every `lanefetch`
option the docs name exists in the parser (of the command it is given to), what README's privacy section says is
stored is what the helper keeps, every popup text README quotes is one the extension shows, every npm script named
is in package.json, every relative link and every module CONTRIBUTING's layout names is there, and README stays
short (its own promise: at most 250 lines). Reads files only; no process is started."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from lanefetch.cache import origin_memory
from lanefetch.cli import build_parser
from lanefetch.prefetch import learned

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "extension" / "PERMISSIONS.md"]

# README quotes that are not the extension's words: its own section titles, a name the docs use, the browsers'
# own texts (Chromium's debugging bar, Firefox's proxy settings).
NOT_EXTENSION_TEXT = {"Troubleshooting", "Snap and Flatpak browsers", "Left to the browser", "lanefetch",
                      "… started debugging this browser", "manual", "automatic proxy configuration URL", "No proxy"}


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


def _readme_flat() -> str:
    return re.sub(r"\s*\n\s*", " ", README.read_text(encoding="utf-8"))


def test_what_readme_says_is_stored_of_page_loads_is_what_the_helper_keeps() -> None:
    """The privacy section names every request field a learned load keeps, how many loads and for how long, and
    how long an origin's record counts; and says it for both browsers (the proxy learns pages too)."""
    stored = _readme_flat().split("**What is stored**", 1)[1].split("- **", 1)[0]
    named = re.search(r"the request fields (.*?), and whether Cookie or Authorization were sent", stored)
    assert named is not None
    fields = {f.strip().lower() for f in re.split(r",| and ", named.group(1)) if f.strip()}
    replayed = {f for f in learned.REPLAYED if not f.startswith("sec-fetch-")} | {"sec-fetch-*"}
    assert fields == replayed
    assert f"last {learned.MAX_LOADS} loads" in stored
    assert f"ignored after {learned.RECORD_TTL / 86400:.0f} days" in stored
    assert f"ignored after {origin_memory.RECORD_TTL / 86400:.0f} days" in stored
    assert "In Chromium the same database" not in stored and "in both browsers" in stored


def _extension_texts() -> tuple[list[str], list[re.Pattern[str]]]:
    """The extension's strings: plain ones, and template literals as patterns (each `${…}` any text)."""
    plain: list[str] = []
    templates: list[re.Pattern[str]] = []
    for path in sorted((REPO / "extension" / "src").rglob("*")):
        if path.suffix == ".html":
            plain.append(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8"))))
        elif path.suffix == ".ts":
            source = path.read_text(encoding="utf-8")
            plain += re.findall(r'"((?:\\.|[^"\\\n])*)"', source) + re.findall(r"'((?:\\.|[^'\\\n])*)'", source)
            for body in re.findall(r"`((?:\\.|[^`\\])*)`", source):
                parts = re.split(r"\$\{[^}]*\}", body.replace("\\`", "`"))
                if len("".join(parts)) < 8:
                    continue  # `${n} ms`: would match any text
                templates.append(re.compile(".+".join(re.escape(p) for p in parts), re.S))
    return plain, templates


def test_every_popup_text_readme_quotes_is_one_the_extension_shows() -> None:
    quotes = {q for q in re.findall(r'"([^"]+)"', _readme_flat()) if q not in NOT_EXTENSION_TEXT}
    plain, templates = _extension_texts()
    assert len(quotes) > 10  # the quotes were found at all
    missing = [q for q in sorted(quotes)
               if not any(q in p for p in plain) and not any(t.fullmatch(q) for t in templates)]
    assert missing == []


def test_every_npm_script_named_exists() -> None:
    scripts = set(json.loads((REPO / "package.json").read_text(encoding="utf-8"))["scripts"])
    named = set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        named |= {(doc.name, s) for s in re.findall(r"\bnpm run (?:--silent )?([\w:-]+)", text)}
        named |= {(doc.name, s) for s in re.findall(r"\bnpm (start|test)\b", text)}
    assert sorted(f"{d}: {s}" for d, s in named if s not in scripts) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(doc: Path) -> None:
    links = re.findall(r"\]\(([^)#\s]+)", doc.read_text(encoding="utf-8"))
    assert [link for link in links if "://" not in link and not (doc.parent / link).exists()] == []


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


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines"
