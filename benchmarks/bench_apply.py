"""``privopt apply`` at 10^5 and 10^6 records (issue 14, part 2).

Records for specs/atr_table4.priv (an id, gender and income drawn from Table 4's prior, a score
written with two decimals: about 19 bytes a record) are generated into a temp folder. For each
size, best of ``--repeat``:

* ``apply_s``: ``read_records`` + ``write_release`` in this process (the spec solved once
  before; solving Table 4 takes milliseconds and is not counted), and its parts ``read_s``,
  ``write_s``;
* ``cli_s``: the whole command, ``privopt apply SPEC --data ... --out ... --seed 1``, in a child
  process (start-up, imports, solve included), and the child's peak RSS ``cli_peak_mb`` against
  ``solve_peak_mb``, the peak RSS of ``privopt solve SPEC`` (what imports and solving alone
  take), so ``cli_peak_mb - solve_peak_mb`` is what the records cost;
* ``traced_peak_mb``: tracemalloc's peak during ``read_records`` + ``write_release`` (numpy,
  pyarrow's buffers are not traced) and ``held_mb`` after reading (the file's bytes, where each
  record's fields end, its cell);
* baselines on the same file: ``copy_s`` (read the bytes, write them: the floor), ``pandas_s``
  (``pandas.read_csv(dtype=str, keep_default_na=False)`` + ``to_csv``, the text-preserving
  round trip apply replaces) and ``pandas_default_s`` (``read_csv()`` + ``to_csv`` with type
  inference); ratios ``apply_over_*``.

One JSON object per line.

    .venv/bin/python benchmarks/bench_apply.py [--records 100000 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from privopt import api
from privopt import apply as applying

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "atr_table4.priv"
PRIVOPT = str(Path(sys.executable).parent / "privopt")


def write_records(path: Path, n: int, seed: int = 0) -> None:
    """n records from Table 4's prior P(gender, income) (counts 12 5 3 / 9 7 4), with an id and a score."""
    rng = np.random.default_rng(seed)
    prior = np.array([12, 5, 3, 9, 7, 4], dtype=float) / 40
    cell = rng.choice(6, size=n, p=prior)
    gender = np.array(["F", "M"])[cell // 3]
    income = np.array(["low", "mid", "high"])[cell % 3]
    score = rng.integers(0, 10_000, n)
    with path.open("w", newline="") as fh:
        fh.write("id,gender,income,score\n")
        for a in range(0, n, 100_000):
            b = min(a + 100_000, n)
            fh.write(
                "".join(
                    f"{i},{g},{inc},{s // 100}.{s % 100:02d}\n"
                    for i, g, inc, s in zip(range(a, b), gender[a:b], income[a:b], score[a:b])
                )
            )


def best(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def child_peak_mb(args: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one child process running ``args`` (exit 0 expected)."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t0 = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "assert p.returncode == 0, p.returncode\n"
        "print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    problem = api.load(SPEC)
    result = problem.solve()
    solve_s, solve_peak = min(child_peak_mb([PRIVOPT, "solve", str(SPEC)]) for _ in range(args.repeat))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in args.records:
            data, out = folder / f"records_{n}.csv", folder / f"release_{n}.csv"
            write_records(data, n)
            size_mb = data.stat().st_size / 2**20

            timings = {"read": [], "write": []}
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                records = applying.read_records(problem, data)
                t1 = time.perf_counter()
                applying.write_release(problem, result, records, out, 1)
                timings["read"].append(t1 - t0)
                timings["write"].append(time.perf_counter() - t1)
                del records
            read_s, write_s = min(timings["read"]), min(timings["write"])
            apply_s = min(r + w for r, w in zip(timings["read"], timings["write"]))

            tracemalloc.start()
            records = applying.read_records(problem, data)
            held = tracemalloc.get_traced_memory()[0]
            applying.write_release(problem, result, records, out, 1)
            traced_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del records

            runs = [
                child_peak_mb([PRIVOPT, "apply", str(SPEC), "--data", str(data), "--out", str(out), "--seed", "1"])
                for _ in range(args.repeat)
            ]
            cli_s, cli_peak = min(r[0] for r in runs), min(r[1] for r in runs)

            copy_s = best(lambda data=data, out=out: out.write_bytes(data.read_bytes()), args.repeat)
            pandas_s = best(
                lambda data=data, out=out: pd.read_csv(data, dtype=str, keep_default_na=False).to_csv(out, index=False),
                args.repeat,
            )
            pandas_default_s = best(lambda data=data, out=out: pd.read_csv(data).to_csv(out, index=False), args.repeat)
            row = {
                "bench": "apply",
                "records": n,
                "file_mb": round(size_mb, 1),
                "apply_s": round(apply_s, 4),
                "read_s": round(read_s, 4),
                "write_s": round(write_s, 4),
                "cli_s": round(cli_s, 3),
                "solve_cli_s": round(solve_s, 3),
                "copy_s": round(copy_s, 4),
                "pandas_s": round(pandas_s, 3),
                "pandas_default_s": round(pandas_default_s, 3),
                "apply_over_copy": round(apply_s / copy_s, 2),
                "apply_over_pandas": round(apply_s / pandas_s, 4),
                "apply_over_pandas_default": round(apply_s / pandas_default_s, 4),
                "held_mb": round(held / 2**20, 1),
                "traced_peak_mb": round(traced_peak / 2**20, 1),
                "cli_peak_mb": round(cli_peak, 1),
                "solve_peak_mb": round(solve_peak, 1),
                "records_peak_mb": round(cli_peak - solve_peak, 1),
                "self_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "python": platform.python_version(),
                "numpy": np.__version__,
                "pandas": pd.__version__,
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
