"""`npm run bench -- NAME`: run one benchmark scenario (root needed for the network lab)."""

from __future__ import annotations

import argparse
import importlib
import sys

SCENARIOS = {
    "engine": "bench.scenario_engine",
    "engine-h2": "bench.scenario_engine:run_h2",
    "seed000-grid": "bench.scenario_grid",
    "chromium-page": "bench.scenario_chromium_page",
    "firefox-page": "bench.scenario_chromium_page:run_firefox",
    "seed004-split": "bench.scenario_split",
    "seed001-hol": "bench.scenario_hol",
    "seed000-pages": "bench.scenario_pages",
    "seed003-delay": "bench.scenario_delay",
    "chromium-repeat": "bench.scenario_repeat",
    "chromium-debugger-cost": "bench.scenario_debugger_cost",
    "real-pages": "bench.scenario_real_pages",
}


def main() -> int:
    p = argparse.ArgumentParser(prog="npm run bench --", description="lanefetch benchmarks")
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds per variant (median reported)")
    p.add_argument("--cases", help="only these cases (seed004-split: e.g. 2x5mbit:1000000,10+5mbit:10000000); "
                   "printed, the results file is left as it is")
    args = p.parse_args()
    module_name, _, function = SCENARIOS[args.scenario].partition(":")
    module = importlib.import_module(module_name)
    run = getattr(module, function or "run")
    if args.cases is not None:
        return int(run(args.rounds, cases=args.cases))
    return int(run(args.rounds))


if __name__ == "__main__":
    sys.exit(main())
