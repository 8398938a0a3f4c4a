"""Building blocks at scale (issue 21, item 6; docs/blocks.md).

* ``lp``: 10 LP mechanism blocks (each a release of ``n`` in 1..10 under eps-DP between values
  at most ``r`` apart, r = 1..10, at the least total variation; block r weighted r) share one
  eps budget through ``dp(...)``; the composite is solved by the certified split (a verified
  block solve per evaluated point) to a relative gap of ``--rtol`` (target: 1e-4 in < 120 s).
* ``closed``: 1,000 blocks whose values have closed forms split without a solve each (target
  < 1 s each): k-ary randomized response under a uniform prior (``split.rr_split``, k in 2..30,
  weights in [0.5, 2]) and single-query Gaussian blocks under the classic calibration
  (``split.inverse_square_split``, values ``a_i / eps_i^2``).

* ``synthetic``: the generic certified split (``split.split``) on curves without a solve: five
  Gaussian-like blocks ``c / y^2`` and three randomized-response blocks, at relative gaps 1e-4,
  1e-5 and 1e-6: oracle calls (what block solves would be) and the split's own seconds.

Prints one JSON line per case and appends it to benchmarks/results/blocks.jsonl (``--no-save``
to skip).

    python benchmarks/bench_blocks.py                  # --case lp closed --rtol 1e-4 --max-calls 400
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import privopt
from privopt.composite import solve as composite_solve
from privopt.composite.split import Term, inverse_square_split, rr_split, split

HERE = Path(__file__).resolve().parent
BLOCK = """spec "ordered release, radius {r}"
var n : data range(1, 10)
var y : release over n
known P(n) = uniform
design G = P(y | n)
param eps = 1.0
subject to dp(n -> y, adjacent: |n - n'| <= {r}) <= eps
minimize tv(n, y)
"""


def write_lp(folder: Path, blocks: int, eps: float) -> Path:
    names = [f"b{r}" for r in range(1, blocks + 1)]
    for r in range(1, blocks + 1):
        (folder / f"b{r}.priv").write_text(BLOCK.format(r=r))
    lines = [f'spec "{blocks} LP mechanism blocks share one budget"']
    lines += [f'use "{n}.priv" as {n}' for n in names]
    lines += [f"param eps = {eps}", f"subject to dp({', '.join(names)}) <= eps"]
    lines.append("minimize " + " + ".join(f"{i + 1} * {n}.objective" for i, n in enumerate(names)))
    spec = folder / "composite.priv"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def bench_lp(blocks: int, eps: float, rtol: float, max_calls: int) -> dict:
    composite_solve.RTOL, composite_solve.MAX_CALLS = rtol, max_calls
    with tempfile.TemporaryDirectory() as tmp:
        spec = write_lp(Path(tmp), blocks, eps)
        t0, c0 = time.perf_counter(), time.process_time()
        result = privopt.load(spec).solve()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "case": "lp",
        "blocks": blocks,
        "domain": 10,
        "eps": eps,
        "rtol": rtol,
        "max_calls_per_block": max_calls,
        "objective": result.objective,
        "lower_bound": result.optimality.get("lower_bound"),
        "gap": result.optimality["gap"],
        "certified": result.optimality["gap"] is not None and result.optimality["gap"] <= rtol,
        "even_split": result.even_split,
        "block_solves": result.stats["block_solves"],
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),  # this process's CPU time: what a loaded machine does not inflate
        "load_average": round(os.getloadavg()[0], 1),
    }


def bench_closed(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    k, w = rng.integers(2, 31, n), rng.uniform(0.5, 2.0, n)
    for share in (0.3, 1.0, 2.0):  # the budget against sum ln(k - 1), where every block turns convex
        budget = share * float(np.log(k - 1).sum())
        t0 = time.perf_counter()
        s = rr_split(k, w, np.full(n, math.inf), budget)
        out.append(_closed_row("randomized_response", n, budget, s, time.perf_counter() - t0))
    a, caps = rng.uniform(0.1, 10.0, n), np.full(n, 1.0)
    budget = 0.5 * n
    t0 = time.perf_counter()
    s = inverse_square_split(a, caps, budget)
    out.append(_closed_row("gaussian_classic", n, budget, s, time.perf_counter() - t0))
    return out


def bench_synthetic() -> list[dict]:
    def gauss(c):
        return lambda y: c / y**2 if y > 0 else math.inf

    def rr(k):
        return lambda y: (k - 1) / (math.exp(y) + k - 1)

    cases = {"gaussian_5": ([gauss(c) for c in (1, 2, 3, 5, 8)], 2.0), "rr_3": ([rr(3), rr(7), rr(20)], 4.0)}
    out = []
    for name, (fs, budget) in cases.items():
        for rtol in (1e-4, 1e-5, 1e-6):
            t0 = time.perf_counter()
            s = split([Term(f) for f in fs], budget, rtol=rtol, max_calls=40000)
            out.append(
                {
                    "case": "synthetic",
                    "kind": name,
                    "blocks": len(fs),
                    "rtol": rtol,
                    "gap": s.gap,
                    "oracle_calls": s.calls,
                    "seconds": round(time.perf_counter() - t0, 3),
                }
            )
    return out


def _closed_row(kind: str, n: int, budget: float, s, seconds: float) -> dict:
    return {
        "case": "closed",
        "kind": kind,
        "blocks": n,
        "budget": round(budget, 6),
        "objective": s.objective,
        "lower_bound": s.lower_bound,
        "gap": s.gap,
        "block_solves": s.calls,
        "seconds": round(seconds, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", nargs="+", default=["lp", "closed"], choices=["lp", "closed", "synthetic"])
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--eps", type=float, default=10.0)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--max-calls", type=int, default=400, help="block solves per block in the row")
    ap.add_argument("--closed-blocks", type=int, default=1000)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    rows = []
    if "closed" in args.case:
        rows += bench_closed(args.closed_blocks)
    if "synthetic" in args.case:
        rows += bench_synthetic()
    if "lp" in args.case:
        rows.append(bench_lp(args.blocks, args.eps, args.rtol, args.max_calls))
    for row in rows:
        row["privopt"] = privopt.__version__
        print(json.dumps(row))
    if not args.no_save:
        with open(HERE / "results" / "blocks.jsonl", "a") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
