"""The Dask engine vs the local engine at ~2M records (issue 13, item 4).

bench_closed_form.py's generator (8 public attributes x 5 values, 5 private values: 1,953,125
records, 390,625 groups, binary decision) written as Parquet parts; both engines read the same
parts. Reports wall times (load + solve for local; the whole distributed solve, including
starting a LocalCluster, for dask) and their ratio, the overhead of the engine on one machine.

    python benchmarks/bench_dask.py [--attrs 8] [--values 5] [--private 5] [--parts 8] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from bench_closed_form import HERE, make_data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attrs", type=int, default=8)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--private", type=int, default=5)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    spec = make_data(HERE / "data", args.attrs, args.values, args.private)
    tag = f"{args.attrs}x{args.values}x{args.private}"
    folder = HERE / "data" / f"parts_{tag}"
    if not folder.exists():
        folder.mkdir()
        df = pd.read_csv(HERE / "data" / f"records_{tag}.csv").sample(frac=1.0, random_state=0)
        for k in range(args.parts):  # rows dealt at random: every group's rows in several parts
            df.iloc[k :: args.parts].to_parquet(folder / f"part-{k:03d}.parquet", index=False)
    pspec = HERE / "data" / f"atr_{tag}_parts.priv"
    pspec.write_text(spec.read_text().replace(f'"records_{tag}.csv"', f'"{folder.name}/"'))

    import privopt

    t0 = time.perf_counter()
    local = privopt.load(pspec).solve()
    local_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    dask = privopt.solve(pspec, engine="dask", workers=args.workers)
    dask_s = time.perf_counter() - t0
    diff = float(np.abs(local.groups["beta"].to_numpy() - dask.groups["beta"].to_numpy()).max())
    assert diff <= 1e-12 and dask.verification["passed"]
    report = {
        "records": args.values**args.attrs * args.private,
        "groups": args.values**args.attrs,
        "parts": args.parts,
        "workers": args.workers,
        "local_s": round(local_s, 3),
        "dask_s": round(dask_s, 3),
        "dask_over_local": round(dask_s / local_s, 3),
        "dask_solve_s": round(dask.timings["solve_s"], 3),
        "blocks": dask.stats["dask"]["blocks"],
        "max_beta_difference": diff,
        "beta": dask.beta,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
