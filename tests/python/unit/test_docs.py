"""The documents a user or contributor acts on, checked against the code where that is cheap: every `lanefetch`
option the docs name exists in the parser (of the command it is given to), what README's privacy section says is
stored is what the helper keeps, every popup text README quotes is one the extension shows, every npm script named
is in package.json, the doctor messages README's troubleshooting table quotes are doctor's, every relative link
and every module CONTRIBUTING's layout names is there, and README stays short (its own promise: at most 250
lines). Reads the repository's files and writes a few manifests under tmp_path; no process is started."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from lanefetch import doctor, protocol
from lanefetch.bridge.install import Target
from lanefetch.bridge.system_proxy import Found
from lanefetch.cache import origin_memory
from lanefetch.cli import build_parser
from lanefetch.lanes.interfaces import Interface, PolicyStore
from lanefetch.prefetch import learned

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "extension" / "PERMISSIONS.md"]

# README quotes that are not the extension's words: its own section titles, a name the docs use, the browsers'
# own texts (Chromium's debugging bar, Firefox's proxy settings).
NOT_EXTENSION_TEXT = {"Troubleshooting", "Snap and Flatpak browsers", "A proxy is in use", "Left to the browser",
                      "lanefetch", "… started debugging this browser", "manual", "automatic proxy configuration URL",
                      "No proxy"}


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



def _troubleshooting_messages() -> list[str]:
    """The first cell of each row of README's doctor table, each quoted message in it as a pattern (`…` any text,
    `<browser>` a browser's name)."""
    table = README.read_text(encoding="utf-8").split("**`lanefetch doctor`**", 1)[1].split("\n\n**The popup**", 1)[0]
    out = []
    for row in re.findall(r"^\| (.+?) \| .+ \|$", table, re.M):
        out += [m for m in re.findall(r"`([^`]+)`", row) if m not in ("info", "WARN")]
    return out


def test_the_doctor_messages_readme_quotes_are_doctors(tmp_path: Path) -> None:
    """The messages a user compares with doctor's output, produced by doctor's own checks where that needs no process
    (hello is started as a browser would, so its rows are not produced here)."""
    def registered(name: str, executable: Path) -> Target:
        target = Target("chromium", tmp_path / name)
        target.directory.mkdir()
        origin = f"chrome-extension://{protocol.identity()['chromium_extension_id']}/"
        target.manifest_path.write_text(json.dumps({"name": protocol.identity()["native_host_name"], "type": "stdio",
                                                    "path": str(executable), "allowed_origins": [origin]}))
        return target

    not_executable = tmp_path / "lanefetch-host"
    not_executable.write_text("")
    one = Interface("eth0", 2, True, False, ("192.0.2.1",))
    rendered = doctor.render([
        *doctor.check_target(Target("chromium", tmp_path / "nothing")),
        *doctor.check_target(Target("chromium", tmp_path / "nowhere", "Software\\Chromium", "HKCU"),
                             registry=_NoRegistry()),
        *doctor.check_target(registered("moved", tmp_path / "gone" / "lanefetch-host")),
        *doctor.check_target(registered("plain", not_executable)),
        doctor.check_python((3, 10, 0)),
        doctor.check_interfaces([], PolicyStore(path=tmp_path / "interfaces.json")),
        doctor.check_interfaces([one], PolicyStore(path=tmp_path / "interfaces.json")),
        doctor.check_system_proxy(Found("proxy.example:3128 (https_proxy in the environment)")),
        doctor.check_system_proxy(Found("proxy auto-detection, WPAD (Windows' proxy settings)", "wpad.corp.example")),
    ])
    quoted = _troubleshooting_messages()
    assert len(quoted) > 10
    produced = [q for q in quoted
                if q.startswith(("FAIL  Python", "WARN  Interfaces", "info  Interfaces", "WARN  System proxy"))
                or "not registered" in q or "does not exist" in q or q in ("no registry key …", "… is not executable")]
    assert len(produced) >= 7
    for q in produced:
        pattern = ".*".join(re.escape(part) for part in q.split("…")).replace(re.escape("<browser>"), r"\S+")
        assert re.search(pattern, rendered), f"README quotes {q!r}; doctor says:\n{rendered}"


class _NoRegistry:
    def get_default(self, hive: str, key: str) -> str | None:
        return None

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
