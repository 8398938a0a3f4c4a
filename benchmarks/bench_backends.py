"""Backends on the fixed-beta ATR feasibility LP (one step of the LFP method).

Cases: one group of m = 10^2 .. 10^5 records, and 10^4 groups of 5 records; binary outcome,
delta-fidelity 0.9, beta halfway between the group's lower bound and C*. Every ratio row has
three nonzeros (the group sum is its own column). For each backend: build and solve seconds
apart. Baseline: highspy called directly on prebuilt arrays. Target: privopt's highs path
<= 1.5x the baseline.

Then the whole LFP: privopt's method against cvxpy's DQCP (qcp=True) on one group.

    python benchmarks/bench_backends.py [--sizes 100 1000 10000 100000] [--skip-pyomo-above 100000]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from privopt.backends import get_backend
from privopt.closedform.atr import lower_bound
from privopt.measures.confidence import group_max_confidence
from privopt.methods.lfp import _block_lp, solve_lfp


def instance(G: int, m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = rng.integers(1, 100, size=(G, m)).astype(float)
    q = p / p.sum(1, keepdims=True)
    D1 = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0], size=(G, m))
    D = np.stack([1 - D1, D1], axis=2)
    L, U = np.clip(D - 0.1, 0, 1), np.clip(D + 0.1, 0, 1)
    beta = 0.5 * (lower_bound(q, L, U) + group_max_confidence(q, D))
    return q, L, U, D, beta


def highspy_direct(lp) -> float:
    """Seconds for passModel + run on arrays prepared beforehand (the baseline)."""
    import highspy

    A = lp.A.tocsc()
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = A.shape[1], A.shape[0]
    model.col_cost_, model.col_lower_, model.col_upper_ = lp.c, lp.col_lower, lp.col_upper
    model.row_lower_, model.row_upper_ = lp.row_lower, lp.row_upper
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_, model.a_matrix_.num_row_ = A.shape[1], A.shape[0]
    model.a_matrix_.start_, model.a_matrix_.index_, model.a_matrix_.value_ = A.indptr, A.indices, A.data
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("dual_feasibility_tolerance", 1e-9)
    t0 = time.perf_counter()
    h.passModel(model)
    h.run()
    elapsed = time.perf_counter() - t0
    assert h.getModelStatus().name == "kOptimal"
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    ap.add_argument("--groups", type=int, default=10000)
    ap.add_argument("--skip-pyomo-above", type=int, default=100000)
    ap.add_argument("--dqcp-sizes", type=int, nargs="+", default=[10, 100])
    args = ap.parse_args()
    cases = [(1, m) for m in args.sizes] + [(args.groups, 5)]
    for G, m in cases:
        q, L, U, D, beta = instance(G, m)
        t0 = time.perf_counter()
        lp = _block_lp(q, beta, np.ones((G, 2)), L, U)
        lower_s = time.perf_counter() - t0
        base = min(highspy_direct(lp) for _ in range(3))
        row = {
            "groups": G,
            "records": m,
            "rows": lp.A.shape[0],
            "cols": lp.A.shape[1],
            "privopt_lowering_s": round(lower_s, 4),
            "highspy_direct_s": round(base, 4),
        }
        for name, solver in [
            ("highs", None),
            ("scipy", None),
            ("cvxpy", "CLARABEL"),
            ("cvxpy", "HIGHS"),
            ("pyomo", None),
        ]:
            if name == "pyomo" and G * m > args.skip_pyomo_above:
                continue
            backend = get_backend(name, solver)
            runs = [backend.solve(lp) for _ in range(1 if name in ("pyomo", "cvxpy") else 3)]
            best = min(runs, key=lambda s: s.build_s + s.solve_s)
            assert best.ok, (backend.label, best.termination)
            total = best.build_s + best.solve_s
            row[backend.label] = {
                "build_s": round(best.build_s, 4),
                "solve_s": round(best.solve_s, 4),
                "vs_direct": round(total / base, 2),
            }
        print(json.dumps(row), flush=True)

    import cvxpy as cp

    from privopt.blocks.routes_report import dqcp as _dqcp
    from privopt.lower.atr import ATRInstance

    for m in args.dqcp_sizes:
        q, L, U, D, _ = instance(1, m)
        inst = ATRInstance((), ("s",), "d", (), (tuple(map(str, range(m))),), ("0", "1"), q, L, U, D)
        t0 = time.perf_counter()
        ours = solve_lfp(q, L, U, get_backend("highs"), D)
        lfp_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table, build_s, solve_s, _ = _dqcp(inst, None, None)
        dqcp_s = time.perf_counter() - t0
        dq = float(group_max_confidence(q, table).max())
        print(
            json.dumps(
                {
                    "dqcp_vs_lfp": {
                        "records": m,
                        "lfp_s": round(lfp_s, 3),
                        "lfp_beta": float(ours.beta[0]),
                        "dqcp_s": round(dqcp_s, 3),
                        "dqcp_build_s": round(build_s, 3),
                        "dqcp_beta": dq,
                        "abs_diff": abs(dq - float(ours.beta[0])),
                        "ratio": round(dqcp_s / lfp_s, 1),
                        "cvxpy": cp.__version__,
                    }
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
