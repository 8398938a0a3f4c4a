"""The linear-fractional method's cost as the number of QID groups grows (issue 13).

Random groups of 5 records with three outcomes (beyond the closed form) under delta-fidelity
(delta = 0.9), rules of two kinds: ``random`` (each row a uniform random distribution) and
``dirichlet`` (Dirichlet(0.7) rows), counts uniform in 0..99. Each size is solved serially
(``workers=1``, chunks in this process) and in parallel (``workers=2``, a process pool). Reports
chunks, LP solves, build and solve seconds (summed over workers), wall seconds, the largest
relative gap and the number of uncertified groups (gap > GAP_TOL), and checks that both runs
give the same bits. Rows are appended to benchmarks/results/lfp.jsonl.

    python benchmarks/bench_lfp.py [--groups 1000 10000 100000] [--rules random dirichlet] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from privopt.backends.highs import HighsBackend
from privopt.blocks.common import GAP_TOL
from privopt.methods.lfp import CHUNK, solve_lfp

OUT = Path(__file__).parent / "results" / "lfp.jsonl"


def instance(G: int, m: int, A: int, rules: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 100, size=(G, m)).astype(float)
    if rules == "random":
        D = rng.random((G, m, A))
        D /= D.sum(-1, keepdims=True)
    else:
        D = rng.dirichlet(np.ones(A) * 0.7, size=(G, m))
    delta = 0.9
    return p, np.clip(D - (1 - delta), 0, 1), np.clip(D + (1 - delta), 0, 1), D


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--rules", nargs="+", default=["random", "dirichlet"])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--outcomes", type=int, default=3)
    ap.add_argument("--records", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    for rules in args.rules:
        for G in args.groups:
            p, L, U, D = instance(G, args.records, args.outcomes, rules)
            first = None
            for w in args.workers:
                t0 = time.perf_counter()
                sol = solve_lfp(p, L, U, HighsBackend(), D, workers=w)
                total = time.perf_counter() - t0
                rel = sol.gap / np.maximum(sol.beta, 1e-300)
                same = None
                if first is None:
                    first = sol
                else:
                    same = bool(np.array_equal(first.beta, sol.beta) and np.array_equal(first.table, sol.table))
                row = {
                    "rules": rules,
                    "outcomes": args.outcomes,
                    "records": args.records,
                    "groups": G,
                    "workers": w,
                    "workers_used": sol.workers,
                    "chunk": CHUNK,
                    "chunks": sol.chunks,
                    "steps_max": sol.steps,
                    "lp_solves": sol.lp_solves,
                    "build_s": round(sol.lp_build_s, 3),
                    "solve_s": round(sol.lp_solve_s, 3),
                    "total_s": round(total, 3),
                    "max_rel_gap": float(rel.max(initial=0.0)),
                    "uncertified": int((~(rel <= GAP_TOL)).sum()),
                    "same_bits_as_first": same,
                    "cpus": os.cpu_count(),
                    "machine": platform.machine(),
                }
                print(json.dumps(row), flush=True)
                if not args.no_write:
                    with OUT.open("a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
