"""Sanitization LPs (Ding et al.): build and solve time per backend.

Two programs (issue 4):

* ``ldp``: non-Markov P(Y | S, X) with |S| = 20, |X| = 50 under an LDP budget and tv
  (50,000 design cells, envelope rows);
* ``reduction``: non-Markov with |S| = 50, |X| = 200 under the linear reduction (eq. 3) with
  expected distortion E[|X - Y|] (2,000,000 design cells). ``auto`` solves it by Prop. 2's
  reduced transport LP (separable per s, App. C); the full LP is timed on HiGHS too.

Reported per route: spec load (parse + build, LinTables included), lowering to solver arrays,
the backend's own build (its model or matrix API) and its solve. privopt's build = load +
lowering. Prints one JSON object per line.

    .venv/bin/python benchmarks/bench_sanitization.py                 # both, every backend
    .venv/bin/python benchmarks/bench_sanitization.py --case ldp --backends highs,scipy
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from privopt import api
from privopt.backends import get_backend
from privopt.closedform import sanitization as cf
from privopt.lower.mechanism import lower_mechanism
from privopt.methods.lp import solve_lp

ALL = ["highs", "scipy", "cvxpy:CLARABEL", "cvxpy:HIGHS", "cvxpy:SCS", "pyomo"]


def write_spec(folder: Path, ns: int, nx: int, case: str, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    ps = rng.integers(1, 100, ns)
    pxs = rng.integers(0, 100, (ns, nx))
    pxs[:, 0] += 1  # every row has mass
    lines = [
        f'spec "bench {case} {ns}x{nx}"',
        "var S : private {" + ", ".join(f"s{i}" for i in range(ns)) + "}",
        f"var X : data range(1, {nx})",
        "var Y : release over X",
        "known P(S) = counts { " + ", ".join(f"s{i}: {v}" for i, v in enumerate(ps)) + " }",
        "known P(X | S) = counts {",
        "    " + " ".join(str(i) for i in range(1, nx + 1)),
        *[f"    s{i}: " + " ".join(map(str, row)) for i, row in enumerate(pxs)],
        "}",
        "design M = P(Y | S, X)",
    ]
    if case == "ldp":
        lines += ["param eps = 1.0", "subject to ldp(S -> Y) <= eps", "minimize tv(X, Y)"]
    else:
        lines += [
            "param alpha = 0.5",
            "subject to P(Y | S) == (1 - alpha) * P(X | S) + alpha * P(X)",
            "minimize E[|X - Y|]",
        ]
    path = folder / f"{case}.priv"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_lp(problem, load_s: float, label: str, time_limit: float | None) -> dict:
    name, _, solver = label.partition(":")
    be = get_backend(name, solver or None)
    t0 = time.perf_counter()
    mlp = lower_mechanism(problem)
    lower_s = time.perf_counter() - t0
    rec = {"route": "lp", "backend": label, "rows": mlp.lp.shape[0], "cols": mlp.lp.shape[1], "nnz": int(mlp.lp.A.nnz)}
    t1 = time.perf_counter()
    try:
        sol = solve_lp(mlp, be, time_limit)
        rec.update(
            status="optimal", objective=mlp.objective_value(sol.x), backend_build_s=sol.build_s, solve_s=sol.solve_s
        )
    except Exception as e:  # noqa: BLE001 - a benchmark records failures
        rec.update(status="failed", message=f"{type(e).__name__}: {e}"[:200], elapsed_s=time.perf_counter() - t1)
    rec.update(load_s=load_s, lower_s=lower_s, privopt_build_s=load_s + lower_s)
    return rec


def run_reduced(problem, load_s: float, label: str, time_limit: float | None) -> dict:
    name, _, solver = label.partition(":")
    be = get_backend(name, solver or None)
    t0 = time.perf_counter()
    san, _ = cf.match(problem)
    ok, _ = cf.is_quasi_metric(problem.objective.distance)
    match_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        M, sol = cf.prop2(san.p, san.q, san.ps, problem.objective.distance, be, time_limit)
    except Exception as e:  # noqa: BLE001 - a benchmark records failures
        return {
            "route": "reduced-lp",
            "backend": label,
            "status": "failed",
            "message": f"{type(e).__name__}: {e}"[:200],
            "load_s": load_s,
            "privopt_build_s": load_s + match_s,
            "lower_s": match_s,
            "solve_s": time.perf_counter() - t1,
        }
    total = time.perf_counter() - t1
    x = cf.to_design(problem, san, M).ravel()
    value = float(problem.objective.expr.value(x).reshape(()))
    # prop2's own array work (pairs, matrix, channel) = total - backend build - backend solve
    own = total - sol.build_s - sol.solve_s
    return {
        "route": "reduced-lp",
        "backend": label,
        "status": "optimal",
        "objective": value,
        "metric": ok,
        "cols": int(sol.x.size),
        "load_s": load_s,
        "lower_s": match_s + own,
        "privopt_build_s": load_s + match_s + own,
        "backend_build_s": sol.build_s,
        "solve_s": sol.solve_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", choices=["ldp", "reduction", "both"], default="both")
    ap.add_argument("--backends", default=",".join(ALL))
    ap.add_argument("--full-lp", default="highs", help="backends for the 2M-cell full LP of 'reduction' ('' = skip)")
    ap.add_argument("--time-limit", type=float, default=1800.0)
    args = ap.parse_args()
    labels = [b for b in args.backends.split(",") if b]
    env = {"python": platform.python_version(), "machine": platform.machine()}
    with tempfile.TemporaryDirectory() as tmp:
        cases = ["ldp", "reduction"] if args.case == "both" else [args.case]
        for case in cases:
            ns, nx = (20, 50) if case == "ldp" else (50, 200)
            path = write_spec(Path(tmp), ns, nx, case)
            t0 = time.perf_counter()
            problem = api.load(path)
            load_s = time.perf_counter() - t0
            base = {
                "case": case,
                "S": ns,
                "X": nx,
                "design_cells": problem.design_size,
                "auto": problem.explain().chosen,
            } | env
            if case == "ldp":
                for label in labels:
                    print(json.dumps(base | run_lp(problem, load_s, label, args.time_limit)), flush=True)
            else:
                for label in labels:
                    print(json.dumps(base | run_reduced(problem, load_s, label, args.time_limit)), flush=True)
                for label in [b for b in args.full_lp.split(",") if b]:
                    print(json.dumps(base | run_lp(problem, load_s, label, args.time_limit)), flush=True)


if __name__ == "__main__":
    main()
