"""The linear-fractional method's cost as the number of QID groups grows.

Random groups of 5 records with three outcomes (beyond the closed form) under delta-fidelity,
and, for comparison, binary groups (where the proven lower bound is exact). Reports steps,
LP solves, LP size, build and solve seconds. The number of LP solves should not grow with
the number of groups.

    python benchmarks/bench_lfp.py [--groups 1000 10000 100000] [--outcomes 3]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from privopt.backends.highs import HighsBackend
from privopt.methods.lfp import solve_lfp


def instance(G: int, m: int, A: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 100, size=(G, m)).astype(float)
    D = rng.dirichlet(np.ones(A) * 0.7, size=(G, m))
    delta = 0.9
    return p, np.clip(D - (1 - delta), 0, 1), np.clip(D + (1 - delta), 0, 1), D


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--outcomes", type=int, nargs="+", default=[3, 2])
    ap.add_argument("--records", type=int, default=5)
    ap.add_argument("--bisection", action="store_true", help="also run plain bisection (check_eps=0.5)")
    args = ap.parse_args()
    rows = []
    variants = [("dinkelbach", 1e-6)] + ([("bisection", 0.5)] if args.bisection else [])
    for A in args.outcomes:
        for G in args.groups:
          for name, eps in variants:
            p, L, U, D = instance(G, args.records, A)
            t0 = time.perf_counter()
            sol = solve_lfp(p, L, U, HighsBackend(), D, check_eps=eps)
            total = time.perf_counter() - t0
            rel_gap = float((sol.gap / np.maximum(sol.beta, 1e-300)).max())
            rows.append(
                {
                    "variant": name,
                    "outcomes": A,
                    "groups": G,
                    "steps": sol.steps,
                    "lp_solves": sol.lp_solves,
                    "lp_rows": sol.lp_shape[0],
                    "lp_cols": sol.lp_shape[1],
                    "build_s": round(sol.lp_build_s, 3),
                    "solve_s": round(sol.lp_solve_s, 3),
                    "total_s": round(total, 3),
                    "max_rel_gap": rel_gap,
                }
            )
            print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
