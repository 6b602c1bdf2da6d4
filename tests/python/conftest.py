"""Session-wide test isolation: the helper's cache and config live in a directory of this test run.

Many tests start the real host, proxy or CLI as a subprocess, which inherits this environment; without this, any
of them that does not set its own XDG_CACHE_HOME / XDG_CONFIG_HOME reads and writes the machine user's
~/.cache/lanefetch (cache.sqlite3: learned origins and pages) and ~/.config/lanefetch (interfaces.json), which
both leaks state between runs and touches the developer's own helper. Tests that need their own directories
still set them (monkeypatch or a subprocess env), which overrides these.

The helper's WPAD lookup (bridge/system_proxy.py: the host `wpad`, where a system proxy setting asks for
auto-detection) is answered "does not resolve" (LANEFETCH_TEST_WPAD), in this process and the helpers it starts:
no test depends on this machine's DNS. A test that wants a WPAD server found sets a host there."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings

# Hypothesis' default deadline (200 ms per example) is a wall-clock assertion: on a loaded 2-core CI machine a pure
# property test failed with DeadlineExceeded although its property held. No test here asserts on time, so no
# example has a deadline; a property that truly hangs is still stopped by the run's own bounds.
settings.register_profile("lanefetch", deadline=None)
settings.load_profile("lanefetch")

_OWN_DIR: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _OWN_DIR
    _OWN_DIR = tempfile.mkdtemp(prefix="lf-pytest-home-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(_OWN_DIR, "cache")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(_OWN_DIR, "config")
    os.environ["LANEFETCH_TEST_WPAD"] = ""


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_DIR is not None:
        shutil.rmtree(_OWN_DIR, ignore_errors=True)
