"""`lanefetch firefox-https status | remove-all`: what Firefox HTTPS acceleration installed (each site's local CA,
the profiles it is trusted in, where its key is) and undoing all of it."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import Any


def firefox_https_parser(sub: Any) -> None:
    f = sub.add_parser("firefox-https", help="Firefox HTTPS acceleration: the local CAs installed, or remove them all")
    f.add_argument("action", choices=["status", "remove-all"])
    f.add_argument("--home", type=Path, default=Path.home(), help=argparse.SUPPRESS)
    f.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)


def _when(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def firefox_https_command(args: argparse.Namespace) -> int:
    from . import ca_firefox  # here, not at the top: the CLI's other commands need no cryptography
    from .ca_sites import https_root, remove_all, status

    root = https_root(args.data_dir)
    if args.action == "remove-all":
        try:
            done = remove_all(root, args.home)
        except ca_firefox.NssError as e:
            print(f"lanefetch: {e}")
            return 1
        print("\n".join(done) if done else "nothing to remove: no lanefetch certificate authority is installed")
        print("Restart Firefox so it forgets the removed authorities; turn HTTPS off in the popup too, or the "
              "extension installs them again.")
        return 1 if any(line.startswith("problem") or "problems:" in line for line in done) else 0
    found = status(root)
    if not found:
        print("Firefox HTTPS acceleration: not enabled (no lanefetch certificate authority is installed)")
        return 0
    print(f"Firefox HTTPS acceleration: {len(found)} local certificate authorit{'y' if len(found) == 1 else 'ies'} "
          f"(each trusted only for its site's names; keys under {root})")
    for ca in found:
        where = ", ".join(f"{p} ({'trusted' if ok else 'MISSING from the store'})" for p, ok in ca["profiles"].items())
        print(f"  {ca['site']}: installed {_when(ca['installed_at'])}, expires {_when(ca['not_after'])}")
        print(f"    certificate {ca['nickname']!r} in {where or 'no profile'}")
        print(f"    key {ca['key_file']}")
    print("Undo everything: lanefetch firefox-https remove-all")
    return 0
