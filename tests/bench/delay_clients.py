"""Many clients, each its own `lanefetch fetch` process with its own source address, started on a schedule.

Run inside the lab's client namespace by scenario_delay.py:
    python -m bench.delay_clients '{"uid_base": 61000, "schedule": [0.0, 0.12, ...], "args": [...], "out": DIR}'
Client i is a fork of this process (lanefetch already imported, so starting one costs milliseconds, not a Python
start-up) that switches to uid uid_base + i before running `lanefetch fetch ARGS`: the namespace's policy routing
(`ip rule uidrange`) gives each uid its own source address, so the link emulator sees one client per address.
A warm-up fetch of the last URL runs first, in this process, as root. Prints one JSON line: per client its
start and end (epoch s) and exit status; each client's `--json` output is DIR/i.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from lanefetch import cli

WAIT_LIMIT = 600.0  # seconds after the last start: a client still running then is killed and reported


def _child(i: int, uid: int, args: list[str], out: str) -> None:
    try:
        fd = os.open(os.path.join(out, f"{i}.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        code = cli.main(args)
    except BaseException as e:  # a forked child must never return into the parent's code
        print(f"client {i}: {e!r}", file=sys.stderr)
        code = 3
    sys.stdout.flush()
    os._exit(code)


def main(config: dict[str, Any]) -> int:
    schedule = [float(t) for t in config["schedule"]]
    args = [str(a) for a in config["args"]]
    uid_base, out = int(config["uid_base"]), str(config["out"])
    started: dict[int, tuple[int, float]] = {}  # pid -> (client, start)
    clients: list[dict[str, float | int | None]] = [{"start": None, "end": None, "rc": None} for _ in schedule]
    # Once as root before any fork: clients drop root and may not read the interpreter's files (e.g. under
    # /root), so every module a fetch imports lazily must be loaded now. The parent's own address has no delay.
    warm = [a for a in args if not a.startswith("http")] + [args[-1]]
    if cli.main(warm) != 0:
        raise SystemExit("warm-up fetch failed")
    sys.stdout.flush()
    t0 = time.monotonic()

    def reap(block: bool) -> None:
        while started:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            if pid == 0:
                return
            i, _ = started.pop(pid)
            clients[i]["end"] = time.time()
            clients[i]["rc"] = os.waitstatus_to_exitcode(status)
            if block:
                return

    for i, at in enumerate(schedule):
        while (left := t0 + at - time.monotonic()) > 0:
            time.sleep(min(left, 0.005))
            reap(block=False)
        clients[i]["start"] = time.time()
        pid = os.fork()
        if pid == 0:
            _child(i, uid_base + i, args, out)
        started[pid] = (i, time.time())
    deadline = time.monotonic() + WAIT_LIMIT
    while started and time.monotonic() < deadline:
        reap(block=False)
        time.sleep(0.01)
    for pid in list(started):
        os.kill(pid, 9)
        reap(block=True)
    print(json.dumps({"clients": clients}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
