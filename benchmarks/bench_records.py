"""Record-level data in a spec at 10^6 records (issue 19, item 7).

specs/atr_credit_records.priv reads a file of one row per applicant and counts it itself: the
prior P(sex, housing, saving) is the records' shares, the rates P(risk = good | ...) the shares
of good records per combination. Here the same spec reads ``--records`` SYNTHETIC applicants
written by specs/data/make_credit_records.py (seeded; six columns, about 35 bytes a record) into
benchmarks/data/ (git-ignored; written on the first run). Best of ``--repeat``:

* ``load_s``: ``privopt.load(spec)``, i.e. parse, read the CSV (every column: pyarrow, streamed,
  labels as dictionary codes) and count the records of each combination, and ``solve_s``:
  ``problem.solve()`` (closed form, verification included);
* baselines on the same file: ``pandas_read_s`` (``pandas.read_csv(path)``, type inference and
  default NA parsing), ``pandas_text_s`` (``read_csv(dtype=str, keep_default_na=False)``, which
  reads the file as written, as privopt does) and ``pandas_aggregate_s`` (that read plus the
  ``groupby`` counts and rates the user would otherwise write); ratio ``load_over_pandas_read``.

It checks the spec's prior against the pandas counts (exactly) and prints one JSON object.

    .venv/bin/python benchmarks/bench_records.py [--records 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

import privopt

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "atr_credit_records.priv"
DATA = ROOT / "benchmarks" / "data"
KEYS = ["sex", "housing", "saving"]


def _maker():
    spec = importlib.util.spec_from_file_location(
        "make_credit_records", ROOT / "specs" / "data" / "make_credit_records.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(n: int) -> Path:
    """The records file and a copy of the spec reading it, in benchmarks/data/."""
    DATA.mkdir(parents=True, exist_ok=True)
    csv = DATA / f"credit_records_{n}.csv"
    if not csv.exists():  # written whole, then renamed: a run stopped while writing leaves no short file
        part = csv.with_suffix(".part")
        _maker().make(n).to_csv(part, index=False)
        part.replace(csv)
    spec = DATA / f"credit_records_{n}.priv"
    spec.write_text(SPEC.read_text().replace("data/credit_records.csv", csv.name))
    return spec


def best(f, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def pandas_aggregate(csv: Path) -> tuple[pd.Series, pd.Series]:
    df = pd.read_csv(csv, dtype=str, keep_default_na=False)
    groups = df.groupby(KEYS)
    return groups.size(), groups["risk"].agg(lambda s: (s == "good").mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spec = prepare(args.records)
    csv = spec.with_suffix(".csv")

    load_s, problem = best(lambda: privopt.load(spec), args.repeat)
    solve_s, result = best(problem.solve, args.repeat)
    read_s, _ = best(lambda: pd.read_csv(csv), args.repeat)
    text_s, _ = best(lambda: pd.read_csv(csv, dtype=str, keep_default_na=False), args.repeat)
    agg_s, (counts, _) = best(lambda: pandas_aggregate(csv), args.repeat)

    prior = problem.known["P(sex, housing, saving)"]
    mine = {
        tuple(problem.variables[a].labels[i] for a, i in zip(prior.axes, idx)): prior.data[idx] * args.records
        for idx in np.ndindex(prior.data.shape)
    }
    assert all(abs(mine[k] - v) <= 1e-6 * v for k, v in counts.items()), "the spec's counts differ from pandas'"
    assert sum(v > 0 for v in mine.values()) == len(counts)
    print(
        json.dumps(
            {
                "records": args.records,
                "bytes": csv.stat().st_size,
                "status": result.status,
                "objective": result.objective,
                "no_records": [c for nr in result.details.get("no_records", []) for c in nr["cells"]],
                "load_s": round(load_s, 4),
                "solve_s": round(solve_s, 4),
                "pandas_read_s": round(read_s, 4),
                "pandas_text_s": round(text_s, 4),
                "pandas_aggregate_s": round(agg_s, 4),
                "load_over_pandas_read": round(load_s / read_s, 2),
                "machine": platform.machine(),
                "python": platform.python_version(),
            }
        )
    )


if __name__ == "__main__":
    main()
