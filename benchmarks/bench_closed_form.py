"""The closed form at the size Chen et al. Sec. 6.2 call intractable for LP.

8 public attributes x 5 values and one private attribute with 5 values: 5^9 = 1,953,125
records (390,625 QID groups), binary decision, delta-fidelity, read from a CSV in long format.

Reports, in one process: the time numpy takes to argsort one float64 array of as many records
(the yardstick), load time (file reading and checking), solve time (the whole
``Problem.solve``: lowering, closed form, verification, result tables) and the method's own
time, and peak memory (ru_maxrss, including loading). Target: solve <= 10x argsort;
peak < 2 GB.

    python benchmarks/bench_closed_form.py [--attrs 8] [--values 5] [--private 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def make_data(folder: Path, n_attrs: int, n_values: int, n_private: int, seed: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / f"atr_{n_attrs}x{n_values}x{n_private}.priv"
    csv = folder / f"records_{n_attrs}x{n_values}x{n_private}.csv"
    if not csv.exists():
        rng = np.random.default_rng(seed)
        n = n_values**n_attrs * n_private
        idx = np.indices((n_values,) * n_attrs + (n_private,)).reshape(n_attrs + 1, -1)
        cols = {f"a{k + 1}": idx[k].astype(np.int8) for k in range(n_attrs)}
        cols["s"] = idx[-1].astype(np.int8)
        cols["population"] = rng.integers(0, 200, size=n)
        cols["approve_rate"] = rng.choice([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0], size=n)
        pd.DataFrame(cols).to_csv(csv, index=False)
    names = [f"a{k + 1}" for k in range(n_attrs)]
    values = ", ".join(str(v) for v in range(n_values))
    privs = ", ".join(str(v) for v in range(n_private))
    lines = [f'spec "benchmark: {n_attrs} public attributes x {n_values} values, {n_private} private values"']
    lines += [f"var {a} : public {{{values}}}" for a in names]
    lines += [f"var s : private {{{privs}}}", "var decision : outcome {deny, approve}"]
    joined = ", ".join(names)
    lines += [
        f'known P({joined}, s) = counts from "{csv.name}" column population',
        f'known D = P(decision = approve | {joined}, s) from "{csv.name}" column approve_rate',
        f"design Dt = P(decision | {joined}, s)",
        "param delta = 0.9",
        "subject to |Dt - D| <= 1 - delta",
        f"minimize max_confidence({joined}, decision -> s)",
    ]
    spec.write_text("\n".join(lines) + "\n")
    return spec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attrs", type=int, default=8)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--private", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spec = make_data(HERE / "data", args.attrs, args.values, args.private)

    import privopt

    t0 = time.perf_counter()
    problem = privopt.load(spec)
    load_s = time.perf_counter() - t0
    n = args.values**args.attrs * args.private

    sorts, solves, methods = [], [], []
    rng = np.random.default_rng(1)
    for _ in range(args.repeat):
        x = rng.random(n)
        t0 = time.perf_counter()
        np.argsort(x)
        sorts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = problem.solve()
        solves.append(time.perf_counter() - t0)
        methods.append(result.timings["solve_s"])
    assert result.status == "optimal" and result.verification["passed"]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {
        "records": n,
        "groups": args.values**args.attrs,
        "argsort_s": min(sorts),
        "load_s": load_s,
        "solve_s": min(solves),
        "closed_form_s": min(methods),
        "solve_over_argsort": min(solves) / min(sorts),
        "closed_form_over_argsort": min(methods) / min(sorts),
        "peak_mb": peak_mb,
        "beta": result.beta,
        "max_confidence_error": result.verification["max_confidence_error"],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
