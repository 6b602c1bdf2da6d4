"""LANEFETCH_LOG and LANEFETCH_LOG_FILE as a person writes them (log_setup.py): a level in any case is taken, and
what cannot be used is said in the log, never raised (the helper the browser starts would be gone)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from lanefetch import log_setup


@pytest.mark.parametrize(("text", "level"), [("debug", "DEBUG"), (" Info ", "INFO"), ("WARNING", "WARNING"),
                                             (None, "WARNING"), ("", "WARNING")])
def test_a_level_is_read_in_any_case(text: str | None, level: str) -> None:
    assert log_setup.level_named(text) == (level, None)


def test_a_word_that_is_no_level_leaves_the_default_and_says_why() -> None:
    level, problem = log_setup.level_named("loud")
    assert level == "WARNING"
    assert problem is not None and "LANEFETCH_LOG='loud' is not a level" in problem and "DEBUG" in problem


@pytest.fixture
def bare_root() -> Iterator[logging.Logger]:
    """The root logger, restored after; a test empties it of pytest's handlers (added for the test's call: where
    there are some, basicConfig does nothing)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        yield root
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = saved[0], saved[1]


def test_what_cannot_be_used_is_said_at_the_top_of_the_log(bare_root: logging.Logger, tmp_path: Path) -> None:
    stream = io.StringIO()
    env = {"LANEFETCH_LOG": "loud", "LANEFETCH_LOG_FILE": str(tmp_path / "absent" / "helper.log")}
    bare_root.handlers = []
    log_setup.configure(env, stream, "%(levelname)s %(message)s", file_format="%(message)s")
    text = stream.getvalue()
    assert "WARNING LANEFETCH_LOG='loud' is not a level" in text
    assert f"cannot write the log to LANEFETCH_LOG_FILE={tmp_path / 'absent' / 'helper.log'}" in text
    assert bare_root.level == logging.WARNING


def test_a_lower_case_level_logs_at_that_level(bare_root: logging.Logger) -> None:
    stream = io.StringIO()
    bare_root.handlers = []
    log_setup.configure({"LANEFETCH_LOG": "debug"}, stream, "%(levelname)s %(message)s")
    logging.getLogger("lanefetch.test").debug("said")
    assert bare_root.level == logging.DEBUG and stream.getvalue() == "DEBUG said\n"
