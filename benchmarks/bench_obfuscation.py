#!/usr/bin/env python
"""Rank-preserving obfuscation (Shariatnasab, Shirani & Iyengar 2023): the global method's time
for symmetric and unrestricted test channels, end-to-end solves of the three specs, the speed of
the Sec. IV-A simulation, and the paper's Fig. 3 (analytic Q against the finite-m expectation and
the simulation) and Fig. 5 (optimal Q against the leakage budget eps) as tables.

    .venv/bin/python benchmarks/bench_obfuscation.py     # appends to results/obfuscation.jsonl

Every row is printed as JSON and appended with python / machine / privopt version metadata;
the "kind" field says which part it belongs to: "method", "spec", "simulate", "fig3", "fig5".
Takes well under a minute on a laptop.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import privopt
from privopt.lower.obfuscation import optimal_channel
from privopt.measures.obfuscation import channel, expected_distance, krcc_q, max_leakage, simulate

RESULTS = Path(__file__).parent / "results" / "obfuscation.jsonl"
SPECS = Path(__file__).parent.parent / "specs"
REPEATS = 5
SEED = 1

BSC01 = [[0.9, 0.1], [0.1, 0.9]]
SKEWED_F = [[1.0, 0.0], [0.4, 0.6]]
INSTANCES = [  # (name, P_X(1), P(F | X))
    ("uniform, BSC(0.1)", 0.5, BSC01),
    ("P_X(1)=0.9, BSC(0.1)", 0.9, BSC01),
    ("P_X(1)=0.7, F=[[1,0],[.4,.6]]", 0.7, SKEWED_F),
]


def median_time(fn, repeats: int = REPEATS):
    """(median seconds over ``repeats`` calls, the last call's return value)."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


# (symmetric, search): the symmetric bisection, the unrestricted boundary search (the default) and
# the unrestricted outer approximation (the method before it, now privopt check's cross-check)
METHODS = [(True, "boundary"), (False, "boundary"), (False, "outer")]
OUTER_REPEATS = 1  # the outer approximation takes seconds at eps = 1e-6 I(X; F)


def method_rows() -> list[dict]:
    rows = []
    for name, px1, F in INSTANCES:
        imax = max_leakage(px1, F)
        for frac in (1e-6, 0.05, 0.3, 0.7, 0.99):
            eps = frac * imax
            for symmetric, search in METHODS:
                repeats = OUTER_REPEATS if search == "outer" else REPEATS
                secs, sol = median_time(
                    lambda px1=px1, F=F, eps=eps, symmetric=symmetric, search=search: optimal_channel(
                        px1, F, eps, symmetric=symmetric, search=search
                    ),
                    repeats,
                )
                rows.append(
                    {
                        "kind": "method",
                        "instance": name,
                        "px1": px1,
                        "F": F,
                        "eps_fraction": frac,
                        "eps": eps,
                        "symmetric": symmetric,
                        "search": search,
                        "median_s": secs,
                        "repeats": repeats,
                        "route": sol.method,
                        "status": sol.status,
                        "iterations": sol.iterations,
                        "evaluations": sol.evaluations,
                        "gap": sol.gap,
                        "q": sol.q_value,
                        "p1": sol.p1,
                        "p2": sol.p2,
                    }
                )
    return rows


def spec_rows() -> list[dict]:
    rows = []
    for fname in ("obfuscation_bsc.priv", "obfuscation_symmetric.priv", "obfuscation_general.priv"):
        text = (SPECS / fname).read_text()
        secs, r = median_time(lambda text=text: privopt.loads(text).solve())
        rows.append(
            {
                "kind": "spec",
                "spec": f"specs/{fname}",
                "median_s": secs,
                "repeats": REPEATS,
                "objective": r.objective,
                "status": r.status,
                "stats": r.stats,
            }
        )
    return rows


def simulate_rows() -> list[dict]:
    rows = []
    W = channel(0.1, 0.1)
    for n, m, T, mode in [(200, 400, 40, "entries"), (200, 400, 40, "degrees"), (10_000, 1_000, 10, "degrees")]:

        def run(n=n, m=m, T=T, mode=mode):
            return simulate(0.5, W, n, m, T, np.random.default_rng(SEED), mode=mode)

        secs, d = median_time(run)
        rows.append(
            {
                "kind": "simulate",
                "px1": 0.5,
                "W": "BSC(0.1)",
                "rows": n,
                "cols": m,
                "trials": T,
                "mode": mode,
                "median_s": secs,
                "repeats": REPEATS,
                "per_trial_s": secs / T,
                "mean_distance": float(d.mean()),
                "q": krcc_q(0.5, W),
            }
        )
    return rows


def fig3_rows(n: int = 200, T: int = 40) -> list[dict]:
    rows = []
    rng = np.random.default_rng(SEED)
    for m in (10, 40, 100):
        for p in (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5):
            W = channel(p, p)
            d = simulate(0.5, W, n, m, T, rng, mode="entries")
            rows.append(
                {
                    "kind": "fig3",
                    "px1": 0.5,
                    "p": p,
                    "rows": n,
                    "cols": m,
                    "trials": T,
                    "mode": "entries",
                    "seed": SEED,
                    "q": krcc_q(0.5, W),
                    "expected": expected_distance(0.5, W, m),
                    "empirical_mean": float(d.mean()),
                    "empirical_se": float(d.std(ddof=1) / np.sqrt(T)),
                }
            )
    return rows


def fig5_rows(points: int = 11) -> list[dict]:
    rows = []
    for name, px1, F in (INSTANCES[0], INSTANCES[2]):
        imax = max_leakage(px1, F)
        for eps in np.linspace(0.0, imax, points):
            sym = optimal_channel(px1, F, float(eps), symmetric=True)
            gen = optimal_channel(px1, F, float(eps), symmetric=False)
            rows.append(
                {
                    "kind": "fig5",
                    "instance": name,
                    "px1": px1,
                    "F": F,
                    "eps": float(eps),
                    "I_XF": imax,
                    "Q_symmetric": sym.q_value,
                    "Q_unrestricted": gen.q_value,
                    "gain": sym.q_value - gen.q_value,
                    "gap_symmetric": sym.gap,
                    "gap_unrestricted": gen.gap,
                    "p_symmetric": sym.p1,
                    "p1_unrestricted": gen.p1,
                    "p2_unrestricted": gen.p2,
                }
            )
    return rows


def main() -> None:
    meta = {"python": platform.python_version(), "machine": platform.machine(), "privopt": privopt.__version__}
    t0 = time.perf_counter()
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("a") as fh:
        for part in (method_rows, spec_rows, simulate_rows, fig3_rows, fig5_rows):
            for row in part():
                fh.write(json.dumps(meta | row) + "\n")
                print(json.dumps(row))
    print(f"# total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
