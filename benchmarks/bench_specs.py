"""Every example spec through the whole pipeline (load + solve, in process): the best of
``--repeat`` runs each. A refactoring's yardstick: run it on two checkouts, alternating, and
compare spec by spec (issue 20: benchmarks within 10% after the core's restructuring).

    .venv/bin/python benchmarks/bench_specs.py                  # every spec in specs/, 5 runs each
    .venv/bin/python benchmarks/bench_specs.py --repeat 9 --only atr_table4 noise_placement

Prints one JSON object per spec: {"spec", "best_s", "median_s", "objective", "method"}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import privopt

SPECS = Path(__file__).resolve().parent.parent / "specs"


def time_spec(path: Path, repeat: int) -> dict:
    runs, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = privopt.load(path).solve()
        runs.append(time.perf_counter() - t0)
    return {
        "spec": path.stem,
        "best_s": round(min(runs), 6),
        "median_s": round(statistics.median(runs), 6),
        "objective": result.objective,
        "method": result.method,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="spec names (without .priv); default: all")
    args = ap.parse_args()
    paths = sorted(SPECS.glob("*.priv"))
    if args.only:
        paths = [p for p in paths if p.stem in args.only]
    for path in paths:
        print(json.dumps(time_spec(path, args.repeat)), flush=True)


if __name__ == "__main__":
    main()
