"""Proxied requests' ids stay unique across helper processes: the extension keeps its timing records by id, and a
helper started again after a crash counted from p1 anew, overwriting (or being taken for) an earlier one's records."""

from __future__ import annotations

import subprocess
import sys

from lanefetch.proxy.server import request_id


def test_ids_are_unique_within_a_run_and_across_runs() -> None:
    here = [request_id() for _ in range(3)]
    assert len(set(here)) == 3
    code = "from lanefetch.proxy.server import request_id; print(request_id())"
    others = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             timeout=60).stdout.strip() for _ in range(2)}
    assert len(others) == 2 and not others & set(here), (here, others)
