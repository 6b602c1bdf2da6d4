"""`lanefetch interfaces`: list the interfaces lanes can use, and set the policy of one."""

from __future__ import annotations

import argparse
from typing import Any

from .interface_report import PolicyChange, change_policy, report
from .interfaces import PolicyStore, binding_for, discover, route_warning


def interfaces_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "interfaces", help="list network interfaces for lanes (split downloads) and set their policy")
    p.add_argument("--policy-file", type=str, help=argparse.SUPPRESS)
    p.add_argument("--check-route", metavar="ADDRESS",
                   help="also say whether routing follows each lane's binding towards this address")
    act = p.add_subparsers(dest="action")
    s = act.add_parser("set", help="set the policy of one interface")
    s.add_argument("name")
    s.add_argument("--weight", type=float, help="share before throughput is measured (default 1)")
    s.add_argument("--enable", dest="enabled", action="store_const", const=True)
    s.add_argument("--disable", dest="enabled", action="store_const", const=False)
    s.add_argument("--metered", dest="metered", action="store_const", const=True,
                   help="use only when named with --interface")
    s.add_argument("--unmetered", dest="metered", action="store_const", const=False)
    s.add_argument("--daily-cap", type=int, metavar="BYTES", help="stop using it for the day after this (0: no cap)")


def interfaces_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    try:
        store = PolicyStore.load(Path(args.policy_file) if args.policy_file else None)
    except ValueError as e:
        print(f"lanefetch: {e}")
        return 1
    found = discover()
    if args.action == "set":
        change = PolicyChange(enabled=args.enabled, weight=args.weight, metered=args.metered,
                              daily_cap_bytes=args.daily_cap)
        try:
            change_policy(store, args.name, change, found, only_known=False)
        except (ValueError, OSError) as e:
            print(f"lanefetch: {e}")
            return 2 if isinstance(e, ValueError) else 1
        if args.name not in {i.name for i in found}:
            print(f"note: no interface {args.name} here now; the policy applies when it appears")
    print(f"{'interface':<16} {'state':<5} {'lane?':<28} {'weight':>6} {'metered':<7} {'today':>12} {'cap':>12}  "
          "binding  addresses")
    by_name = {i.name: i for i in found}
    for row in report(store, found):
        p = row.policy
        use = "yes" if row.why_not is None else f"no ({row.why_not})"
        cap = "-" if p.daily_cap_bytes is None else str(p.daily_cap_bytes)
        state = ("up" if row.up else "down") if row.present else "-"
        print(f"{row.name:<16} {state:<5} {use:<28} {p.weight:>6g} {'yes' if p.metered else 'no':<7} "
              f"{row.bytes_today:>12} {cap:>12}  {row.binding or '-':<8} {' '.join(row.addresses) or '-'}")
        iface = by_name.get(row.name)
        if args.check_route and row.why_not is None and iface is not None:
            warning = route_warning(binding_for(iface), args.check_route)
            if warning:
                print(f"  warning: {warning}")
    print(f"policy: {store.path}")
    return 0
