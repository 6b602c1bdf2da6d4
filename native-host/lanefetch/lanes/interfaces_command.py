"""`lanefetch interfaces`: list the interfaces lanes can use, and set the policy of one."""

from __future__ import annotations

import argparse
from typing import Any

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
        if args.weight is not None and not args.weight > 0:
            print("lanefetch: --weight must be positive")
            return 2
        p = store.policy(args.name)
        if args.weight is not None:
            p.weight = args.weight
        if args.enabled is not None:
            p.enabled = args.enabled
        if args.metered is not None:
            p.metered = args.metered
        if args.daily_cap is not None:
            p.daily_cap_bytes = args.daily_cap or None
        store.policies[args.name] = p
        store.save()
        if args.name not in {i.name for i in found}:
            print(f"note: no interface {args.name} here now; the policy applies when it appears")
    print(f"{'interface':<16} {'state':<5} {'lane?':<28} {'weight':>6} {'metered':<7} {'today':>12} {'cap':>12}  "
          "binding  addresses")
    for iface in found:
        p = store.policy(iface.name)
        why = store.why_not(iface, allow_metered=False)
        use = "yes" if why is None else f"no ({why})"
        binding = binding_for(iface)
        cap = "-" if p.daily_cap_bytes is None else str(p.daily_cap_bytes)
        print(f"{iface.name:<16} {'up' if iface.up else 'down':<5} {use:<28} {p.weight:>6g} "
              f"{'yes' if p.metered else 'no':<7} {store.used_today(iface.name):>12} {cap:>12}  "
              f"{binding.method:<8} {' '.join(iface.addresses) or '-'}")
        if args.check_route and why is None:
            warning = route_warning(binding, args.check_route)
            if warning:
                print(f"  warning: {warning}")
    print(f"policy: {store.path}")
    return 0
