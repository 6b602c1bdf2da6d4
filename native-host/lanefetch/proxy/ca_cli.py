"""`lanefetch firefox-https status | remove-all | add`: what Firefox HTTPS acceleration installed (each site's local
CA, the profiles it is trusted in, where its key is), undoing all of it, and installing one site's CA into a profile
Firefox is not running with (what opting in does, ahead of that Firefox's start: a harness or a new profile).

`add` goes through the same HttpsSites.sync the helper runs for the extension, with the profile's Firefox taken as
not started yet (nothing loaded): the CA is the one the helper uses once that Firefox starts it, because the state is
kept per profile path. The extension must say the site is opted in (and enabled) too: the helper makes the
extension's set true at its start, so a site the extension does not name loses its CA then."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import Any


def firefox_https_parser(sub: Any) -> None:
    f = sub.add_parser("firefox-https", help="Firefox HTTPS acceleration: the local CAs installed, remove them all, "
                                             "or add one site's CA to a profile before Firefox starts")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", type=Path, default=Path.home(), help=argparse.SUPPRESS)
    common.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    # One parser per action: a site named after the options (`add --profile DIR NAME`) is then still the site.
    actions = f.add_subparsers(dest="action", required=True)
    actions.add_parser("status", parents=[common], help="every lanefetch CA, its profiles and key file")
    actions.add_parser("remove-all", parents=[common], help="every lanefetch CA out of every profile, keys deleted")
    add = actions.add_parser("add", parents=[common],
                             help="install a site's CA into a profile Firefox is not running with (what opting in "
                                  "does; the extension must opt the site in too)")
    add.add_argument("site", help="the site's name: a DNS name, an IPv4 address, or an IPv6 address in brackets")
    add.add_argument("--scope", choices=["domain", "host"], default="domain",
                     help="the name and its subdomains (domain, the default) or that one host, as the extension's "
                          "site rule says")
    add.add_argument("--profile", type=Path, required=True, help="the Firefox profile directory (with a cert9.db)")


def _when(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def firefox_https_command(args: argparse.Namespace) -> int:
    from . import ca_firefox  # here, not at the top: the CLI's other commands need no cryptography
    from .ca_sites import https_root, remove_all, status

    root = https_root(args.data_dir)
    if args.action == "add":
        return _add(root, args)
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


def _add(root: Path, args: argparse.Namespace) -> int:
    from ..engine.request import site_name_problem
    from . import ca_firefox
    from .ca_certs import Site
    from .ca_sites import HttpsSites

    # A final dot names the same site, and the extension names sites without it: a CA kept for "example.com."
    # covered no host (they are compared without theirs) and was replaced by the extension's example.com.
    name = args.site.lower().removesuffix(".")
    if (problem := site_name_problem(name)) is not None:
        print(f"lanefetch: {args.site!r} is not a host name: {problem}")
        return 2
    # started 0: this profile's Firefox has loaded none of lanefetch's CAs yet, so none of them is replaced here,
    # and the new one waits for that Firefox's start. The path resolved: the helper names the profile by the path
    # Firefox holds its store open at, and keeps its state per that name.
    sites = HttpsSites(root, ca_firefox.RunningFirefox(args.profile.resolve(), started=0.0), home=args.home)
    site = Site(args.scope, name)
    # The profile's other sites stay: a sync removes whatever it is not given.
    result = sites.sync(list(dict.fromkeys([*(ca.site for ca in sites.state.load()), site])))
    mine = next(s for s in result.sites if s.site == site)
    if mine.state == "failed":
        print(f"lanefetch: {site.key}: {mine.detail}")
        return 1
    print(f"{site.key}: certificate authority installed into {args.profile.resolve()}; Firefox trusts it from its "
          "next start (the extension must have the site enabled and opted into HTTPS too)")
    return 0
