"""Logging as the environment asks (docs/cli.md): LANEFETCH_LOG names the level, LANEFETCH_LOG_FILE a file the
helper the browser starts appends its log to instead of its standard error.

A person sets these by hand, in the browser's environment, to find out why something went wrong. A setting the
logging module cannot use (a level written `debug`, a word that is no level, a file in a folder that is not there)
must never stop the helper: the browser would only see it gone ("Helper not installed"), and the traceback would
be in the very log nobody reads. So a level is read in any case, one that is no level leaves the default, a file
that cannot be opened leaves standard error, and each is said in a warning at the top of the log used."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import IO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def level_named(text: str | None, default: str = "WARNING") -> tuple[str, str | None]:
    """The level `text` names (any case, spaces around it ignored) and None; or `default` and why not."""
    if text is None or not text.strip():
        return default, None
    name = text.strip().upper()
    if name in LEVELS:
        return name, None
    return default, f"LANEFETCH_LOG={text!r} is not a level ({', '.join(LEVELS)}); logging at {default}"


def configure(env: Mapping[str, str], stream: IO[str], stream_format: str, *, file_format: str | None = None,
              default: str = "WARNING") -> None:
    """Set up the root logger from `env`; LANEFETCH_LOG_FILE is honoured only where `file_format` is given."""
    level, problem = level_named(env.get("LANEFETCH_LOG"), default)
    problems = [] if problem is None else [problem]
    handler: logging.Handler | None = None
    path = env.get("LANEFETCH_LOG_FILE") if file_format is not None else None
    if path:
        try:
            handler = logging.FileHandler(path)  # appended to: every helper the browser starts writes there
            handler.setFormatter(logging.Formatter(file_format))
        except OSError as e:
            problems.append(f"cannot write the log to LANEFETCH_LOG_FILE={path}: {e.strerror or e}; logging to "
                            "standard error")
    if handler is None:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter(stream_format))
    logging.basicConfig(level=level, handlers=[handler])
    for text in problems:
        logging.getLogger("lanefetch").warning(text)
