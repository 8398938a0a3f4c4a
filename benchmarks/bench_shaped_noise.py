"""Shaped noise (Ramon & Basu Sec. 3.3) at |X| = 100, |Y| = 400: 40,000 design cells.

Two programs: the LP (exact moments, (eps, delta)-DP, squared error) and the QP (the arithmetic
moment as a weighted squared penalty). Reported per backend: privopt's lowering (spec file to
solver arrays: parse, build, envelopes, Q), the backend's own build, and its solve. Target:
lowering at most 20% of the solve on highs. One JSON object per line.

    .venv/bin/python benchmarks/bench_shaped_noise.py [--backends highs,scipy,...] [--program lp|qp|both]
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
from privopt.lower.mechanism import lower_mechanism
from privopt.methods.lp import solve_lp

ALL = ["highs", "scipy", "cvxpy:CLARABEL", "cvxpy:HIGHS", "cvxpy:SCS", "cvxpy:OSQP", "pyomo"]


def write_spec(folder: Path, program: str, nx: int = 100, ny: int = 400) -> Path:
    ys = np.round(np.linspace(0.25, 0.25 * ny, ny), 6)
    moment = "E[y | x] - alpha * x - (1 - alpha) * E[B]"
    lines = [
        f'spec "shaped noise {program} {nx}x{ny}"',
        f"var x : private range(1, {nx})",
        "var y : release {" + ", ".join(f"{v:g}" for v in ys) + "}",
        "param alpha = 0.02",
        "param eps = 1.0",
        "param delta = 0.01",
        "known B = P(y) = uniform",
        "design f = P(y | x)",
        "subject to E[1 / y | x] == alpha / x + (1 - alpha) * E[1 / B]",
        "subject to dp(x -> y) <= (eps, delta)",
    ]
    if program == "lp":
        lines += [f"subject to {moment} == 0", "minimize sum(x, y: f * (x - y)^2)"]
    else:
        lines += [f"minimize sum(x, y: f * (x - y)^2) + 100 * sum(x: ({moment})^2)"]
    path = folder / f"shaped_{program}.priv"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default=",".join(ALL))
    ap.add_argument("--program", choices=["lp", "qp", "both"], default="both")
    ap.add_argument("--time-limit", type=float, default=900.0)
    args = ap.parse_args()
    env = {"python": platform.python_version(), "machine": platform.machine()}
    with tempfile.TemporaryDirectory() as tmp:
        for program in ["lp", "qp"] if args.program == "both" else [args.program]:
            path = write_spec(Path(tmp), program)
            for label in [b for b in args.backends.split(",") if b]:
                t0 = time.perf_counter()
                problem = api.load(path)
                load_s = time.perf_counter() - t0
                t1 = time.perf_counter()
                mlp = lower_mechanism(problem)
                lower_s = time.perf_counter() - t1
                name, _, solver = label.partition(":")
                be = get_backend(name, solver or None)
                rec = {
                    "program": program,
                    "backend": label,
                    "design_cells": problem.design_size,
                    "rows": mlp.lp.shape[0],
                    "cols": mlp.lp.shape[1],
                    "nnz": int(mlp.lp.A.nnz),
                    "load_s": load_s,
                    "lower_s": lower_s,
                    "lowering_s": load_s + lower_s,
                } | env
                t2 = time.perf_counter()
                try:
                    sol = solve_lp(mlp, be, args.time_limit)
                    rec.update(
                        status="optimal",
                        objective=mlp.objective_value(sol.x),
                        backend_build_s=sol.build_s,
                        solve_s=sol.solve_s,
                    )
                except Exception as e:  # noqa: BLE001 - a benchmark records failures
                    rec.update(
                        status="failed", message=f"{type(e).__name__}: {e}"[:200], elapsed_s=time.perf_counter() - t2
                    )
                print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
