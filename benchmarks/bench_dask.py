"""The Dask engine vs the local engine at ~2M records (issue 13, item 4; issue 23, goal 6).

bench_closed_form.py's generator (8 public attributes x 5 values, 5 private values: 1,953,125
records, 390,625 groups, binary decision) written as Parquet parts; both engines read the same
parts, in turn, in this process. Reports wall times (load + solve for local; the whole dask
solve: reading the parts, routing the rows to their blocks, each block's build, solve and
verification, combining), the dask engine's own parse/solve split, and the ratio dask / local
(the goal: at most 2). ``--cluster`` also runs the engine on a ``distributed.LocalCluster`` of
``--workers`` processes, started inside the timing as the engine did before issue 23.

    python benchmarks/bench_dask.py [--attrs 8] [--values 5] [--private 5] [--parts 8] [--workers N]
        [--repeat 1] [--cluster]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pandas as pd
from bench_closed_form import HERE, make_data

RESULTS = HERE / "results" / "dask.jsonl"


def parts_spec(attrs: int, values: int, private: int, parts: int):
    """The benchmark's spec reading its records as ``parts`` Parquet parts (written once)."""
    spec = make_data(HERE / "data", attrs, values, private)
    tag = f"{attrs}x{values}x{private}"
    folder = HERE / "data" / f"parts_{tag}"
    if not folder.exists():
        folder.mkdir()
        df = pd.read_csv(HERE / "data" / f"records_{tag}.csv").sample(frac=1.0, random_state=0)
        for k in range(parts):  # rows dealt at random: every group's rows in several parts
            df.iloc[k::parts].to_parquet(folder / f"part-{k:03d}.parquet", index=False)
    pspec = HERE / "data" / f"atr_{tag}_parts.priv"
    pspec.write_text(spec.read_text().replace(f'"records_{tag}.csv"', f'"{folder.name}/"'))
    return pspec


def timed(run):
    t0 = time.perf_counter()
    res = run()
    return time.perf_counter() - t0, res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attrs", type=int, default=8)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--private", type=int, default=5)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--workers", type=int, default=None, help="dask's threads (default: the machine's cores)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cluster", action="store_true", help="also on a LocalCluster of --workers processes")
    args = ap.parse_args()
    pspec = parts_spec(args.attrs, args.values, args.private, args.parts)

    import privopt

    workers = args.workers or os.cpu_count() or 1
    locals_, dasks = [], []
    for _ in range(args.repeat):  # in turn, so that both see the same machine
        locals_.append(timed(lambda: privopt.load(pspec).solve()))
        dasks.append(timed(lambda: privopt.solve(pspec, engine="dask", workers=workers)))
    (local_s, local), (dask_s, dask) = min(locals_, key=lambda t: t[0]), min(dasks, key=lambda t: t[0])
    diff = float(np.abs(local.groups["beta"].to_numpy() - dask.groups["beta"].to_numpy()).max())
    assert diff <= 1e-12 and dask.verification["passed"]
    report = {
        "records": args.values**args.attrs * args.private,
        "groups": args.values**args.attrs,
        "parts": args.parts,
        "workers": workers,
        "scheduler": "threads",
        "local_s": round(local_s, 3),
        "local_parse_s": round(local.timings["parse_s"], 3),
        "local_solve_s": round(local.timings["solve_s"], 3),
        "dask_s": round(dask_s, 3),
        "dask_over_local": round(dask_s / local_s, 3),
        "dask_parse_s": round(dask.timings["parse_s"], 3),
        "dask_solve_s": round(dask.timings["solve_s"], 3),
        "blocks": dask.stats["dask"]["blocks"],
        "max_beta_difference": diff,
        "beta": dask.beta,
        "repeat": args.repeat,
        "load_average": round(os.getloadavg()[0], 1),
        "date": time.strftime("%Y-%m-%d"),
    }
    if args.cluster:
        from distributed import Client, LocalCluster

        def on_cluster():
            with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster:
                with Client(cluster) as client:
                    return privopt.solve(pspec, engine="dask", scheduler=client)

        cluster_s, res = timed(on_cluster)
        assert float(np.abs(local.groups["beta"].to_numpy() - res.groups["beta"].to_numpy()).max()) <= 1e-12
        report |= {"cluster_s": round(cluster_s, 3), "cluster_over_local": round(cluster_s / local_s, 3)}
    print(json.dumps(report))
    with RESULTS.open("a") as fh:
        fh.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
