#!/usr/bin/env python
"""Noise placement (Ramon & Basu Sec. 3.2) at scale: end-to-end time, the share of lowering, how
time grows with m and n, and privopt's modelling overhead against the same program written
directly in cvxpy (the PSD matrix_frac form the paper states); the barrier method
(methods/barrier.py) against the conic program where both run, and alone at n = m = 100, 200,
400 and 1,000 (issue 23, item 3), with its growth in n and in m.

    .venv/bin/python benchmarks/bench_noise_placement.py          # appends to results/noise_placement.jsonl
    .venv/bin/python benchmarks/bench_noise_placement.py --barrier  # the barrier rows alone
    .venv/bin/python benchmarks/bench_noise_placement.py --large  # n = m = 1,000 alone (minutes)
    .venv/bin/python benchmarks/bench_noise_placement.py --scale  # the barrier's growth alone: n = m = 100-400

Each row records the process's CPU seconds beside the wall time (on a loaded machine the CPU
time is about what a quiet one would take) and the BLAS threads: the barrier method takes the
idle cores (``methods.barrier.blas_threads``; on a shared, loaded machine BLAS threads wait on
each other, docs/noise-placement.md).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

import privopt

RESULTS = Path(__file__).parent / "results" / "noise_placement.jsonl"


def spec(A: np.ndarray) -> str:
    rows = "\n".join("  " + " ".join(f"{v:.6g}" for v in r) for r in A)
    m, n = A.shape
    return f"""spec "bench"
const A = matrix {{
{rows}
}}
var x : private real[{n}] in [0, 1]
noise eta : gaussian[{n}]
noise xi : gaussian[{m}]
let O = A @ (x + eta) + xi
param eps = 1.0
param delta = 1e-6
subject to dp(x -> O) <= (eps, delta)
minimize E[sum((O - A @ x)^2)]
"""


def direct_cvxpy(A: np.ndarray, D: float) -> tuple[float, float]:
    """The same program written directly in cvxpy, PSD form: (seconds, objective)."""
    import cvxpy as cp

    m, n = A.shape
    t0 = time.perf_counter()
    u = 1.0 / D**2
    se, sx = cp.Variable(n, nonneg=True), cp.Variable(m, nonneg=True)
    S = A @ cp.diag(se) @ A.T + cp.diag(sx)
    S = (S + S.T) / 2
    prob = cp.Problem(cp.Minimize(cp.trace(S)), [cp.matrix_frac(A[:, j], S) <= D**2 * u for j in range(n)])
    prob.solve(solver="CLARABEL")
    return time.perf_counter() - t0, prob.value * u


def run(n: int, m: int, seed: int = 0, direct: bool = False, method: str = "auto") -> dict:
    A = np.random.default_rng(seed).normal(size=(m, n))
    text = spec(A)
    c0, t0 = time.process_time(), time.perf_counter()
    problem = privopt.loads(text)
    t1 = time.perf_counter()
    r = problem.solve(method=method)
    t2 = time.perf_counter()
    cpu = time.process_time() - c0  # this process's CPU seconds: on a loaded machine, below the wall time
    row = {
        "n": n,
        "m": m,
        "method": r.method,
        "parse_build_s": round(t1 - t0, 4),
        "solve_total_s": round(t2 - t1, 4),
        "end_to_end_s": round(t2 - t0, 4),
        "end_to_end_cpu_s": round(cpu, 4),
        "lower_s": r.stats["lower_s"],
        "baselines_s": r.stats["baselines_s"],
        "objective": r.objective,
        "relative_gap": r.verification["evidence"]["relative_gap"],
        "input_only": r.details["baselines"]["input_only"],
        "output_only": r.details["baselines"]["output_only"],
        "blas_threads": blas_threads(r.method),
    }
    if r.method == "conic":
        row |= {k: r.stats[k] for k in ("conic_build_s", "conic_solve_s")}
        row["lowering_share_of_solve"] = round(
            (r.stats["lower_s"] + r.stats["conic_build_s"]) / max(r.stats["conic_solve_s"], 1e-9), 3
        )
    else:
        row |= {k: r.stats[k] for k in ("barrier_solve_s", "newton_steps", "centrings")}
    if direct:
        secs, obj = direct_cvxpy(A, r.verification["sensitivity_bound"])
        row["direct_cvxpy_psd_s"] = round(secs, 4)
        row["direct_cvxpy_psd_objective"] = obj
    return row


def blas_threads(method: str) -> int:
    """The BLAS threads the solve ran on: the barrier method's own choice (``blas_threads``, the
    idle cores, read again after the solve), else the most a BLAS library loaded here may use."""
    if method == "barrier":
        from privopt.methods.barrier import blas_threads as idle

        return idle()
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1)


def main(argv: list[str]) -> None:
    rows = []
    if "--large" in argv:
        rows.append(run(1000, 1000))  # the target: at most 10 minutes on 2 cores
    if not argv:
        rows.append(run(50, 200, method="conic"))  # the conic program's own target: under 10 s
        for n, m in [(50, 100), (50, 400), (25, 200), (100, 200)]:  # its growth in m and in n
            rows.append(run(n, m, method="conic"))
        for n, m in [(10, 10), (10, 40)]:  # against the PSD form written directly (185x slower at 20 x 80)
            rows.append(run(n, m, direct=True, method="conic"))
    if "--scale" in argv:
        for n, m in [(100, 100), (200, 200), (400, 400), (200, 400), (400, 200)]:  # the barrier's growth in n and m
            rows.append(run(n, m))
    if not argv or "--barrier" in argv:
        for n, m in [(10, 20), (20, 40), (30, 60), (100, 100)]:  # the barrier method against the conic program
            rows += [run(n, m, method="conic"), run(n, m, method="barrier")]
        for n, m in [(200, 200), (400, 400), (200, 400), (400, 200)]:  # the barrier's growth (auto)
            rows.append(run(n, m))
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "privopt": privopt.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("a") as fh:
        for row in rows:
            fh.write(json.dumps(meta | row) + "\n")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
