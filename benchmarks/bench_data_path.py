"""The data path end to end at 2 million and 10 million records (issue 23, goal 2).

``privopt solve SPEC --json --no-tables`` (stdout to a file) of a spec that reads a record-level
CSV and counts it itself, against pyarrow reading the same file, in one run:

* ``credit``: specs/atr_credit_records.priv on ``--records`` SYNTHETIC applicants
  (specs/data/make_credit_records.py, six columns, four of them read; 30 groups);
* ``wide``: 8 public attributes x 5 values and 5 private values, one row per record
  (``a1..a8, s, decision``; 390,625 QID groups, most combinations of the 1,953,125 with a few
  records, some with none): the same spec shape as bench_closed_form.py, counted from records.

Per size and case, best of ``--repeat``:

* ``pyarrow_read_s``: ``pyarrow.csv.read_csv(path)`` in this process (multithreaded, every
  column, types guessed), and ``pyarrow_child_s``: the same read as a whole Python process
  (``python -c "import pyarrow.csv; ..."``: start-up and import included);
* ``privopt_s``: the CLI run's wall time, ``privopt_rss_mb`` its peak resident memory
  (``/usr/bin/time``), ``parse_s`` and ``solve_s`` from its own timings;
* ``small_s``: the same command on specs/atr_credit_records.priv, 1,000 records (the CLI's fixed cost: start-up,
  imports, parser);
* ratios ``over_read`` (privopt_s / pyarrow_read_s) and ``over_child`` (privopt_s /
  pyarrow_child_s); targets: over_read <= 3, peak RSS <= 1 GB at 2M and <= 2 GB at 10M;
* ``privopt_cpu_s`` and ``small_cpu_s``: the CPU seconds of those runs (every thread), steadier
  than the wall on a loaded machine.

The run checks that every solve is optimal and verified. Data files are written to
benchmarks/data/ (git-ignored) on the first run: about 60 MB and 300 MB for ``credit``.
One JSON object per line, also appended to benchmarks/results/data_path.jsonl.

    .venv/bin/python benchmarks/bench_data_path.py [--records 2000000 10000000] [--case credit wide] [--repeat 2]
        [--label TEXT] [--privopt PATH]

``--privopt``: the command to measure, by default this environment's; another checkout's
(a script putting it first on ``sys.path``) to compare two checkouts in turn on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_records import ROOT, SPEC, prepare  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "data_path.jsonl"
PRIVOPT = Path(sys.executable).with_name("privopt")


def wide(n: int, seed: int = 23) -> Path:
    """``n`` records over 8 public attributes x 5 values and 5 private values, decision
    approve/deny (probability of approval by the sum of the attributes), and the spec."""
    csv = DATA / f"wide_records_{n}.csv"
    if not csv.exists():
        import pandas as pd

        rng = np.random.default_rng(seed)
        cols = {f"a{k + 1}": rng.integers(0, 5, n, dtype=np.int8) for k in range(8)}
        cols["s"] = rng.integers(0, 5, n, dtype=np.int8)
        score = sum(c.astype(np.int16) for c in cols.values())
        cols["decision"] = np.where(rng.random(n) < score / 45.0, "approve", "deny")
        DATA.mkdir(parents=True, exist_ok=True)
        part = csv.with_suffix(".part")  # written whole, then renamed
        pd.DataFrame(cols).to_csv(part, index=False)
        part.replace(csv)
    names = ", ".join(f"a{k + 1}" for k in range(8))
    lines = ['spec "benchmark: record-level, 8 public attributes x 5 values, 5 private values"']
    lines += [f"var a{k + 1} : public {{0, 1, 2, 3, 4}}" for k in range(8)]
    lines += ["var s : private {0, 1, 2, 3, 4}", "var decision : outcome {deny, approve}"]
    lines += [
        f'known P({names}, s) = counts from "{csv.name}"',
        f'known D = P(decision = approve | {names}, s) from "{csv.name}"',
        f"design Dt = P(decision | {names}, s)",
        "param delta = 0.9",
        "subject to |Dt - D| <= 1 - delta",
        f"minimize max_confidence({names}, decision -> s)",
    ]
    spec = DATA / f"wide_records_{n}.priv"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def child(argv: list[str], out: Path | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak resident MB and CPU seconds (user and system, every thread) of one
    child process (stdout to ``out``). The peak and the CPU are ``/usr/bin/time``'s (its own
    child's rusage): the rusage of a child this process starts itself would carry this
    process's own peak across ``exec``, which holds pyarrow's tables here. On a loaded machine
    the CPU seconds move less than the wall."""
    with open(out or os.devnull, "wb") as sink:
        t = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *argv], stdout=sink, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t
    err = proc.stderr.decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {err[-2000:]}")
    kb, user, system = err.split()[-3:]
    return wall, int(kb) / 1024, float(user) + float(system)


def measure(case: str, n: int, repeat: int, privopt: Path = PRIVOPT) -> dict:
    import pyarrow.csv as pc

    spec = prepare(n) if case == "credit" else wide(n)
    csv = spec.with_suffix(".csv")
    out = DATA / f"{spec.stem}.json"
    reads, kids, runs = [], [], []
    for _ in range(repeat):  # in turn, so that all three see the same machine
        t = time.perf_counter()
        pc.read_csv(csv)
        reads.append(time.perf_counter() - t)
        kids.append(child([sys.executable, "-c", f"import pyarrow.csv as c; c.read_csv({str(csv)!r})"]))
        runs.append(child([str(privopt), "solve", str(spec), "--json", "--no-tables"], out))
    result = json.loads(out.read_text())
    assert result["status"] == "optimal" and result["verification"]["passed"], result["status"]
    small = SPEC  # the same fixed cost for both cases: 1,000 records, 30 groups
    smalls = [child([str(privopt), "solve", str(small), "--json", "--no-tables"]) for _ in range(repeat)]
    small_s, small_cpu = min(wall for wall, _, _ in smalls), min(cpu for _, _, cpu in smalls)
    read_s, (child_s, child_mb, _), run_s = min(reads), min(kids), min(wall for wall, _, _ in runs)
    run_cpu = min(cpu for _, _, cpu in runs)
    return {
        "case": case,
        "records": n,
        "bytes": csv.stat().st_size,
        "groups": len(result.get("groups", [])) or None,
        "objective": result["objective"],
        "pyarrow_read_s": round(read_s, 3),
        "pyarrow_child_s": round(child_s, 3),
        "pyarrow_child_rss_mb": round(child_mb),
        "privopt_s": round(run_s, 3),
        "privopt_rss_mb": round(max(mb for _, mb, _ in runs)),
        "privopt_cpu_s": round(run_cpu, 3),
        "parse_s": result["timings"]["parse_s"],
        "solve_s": result["timings"]["solve_s"],
        "small_s": round(small_s, 3),
        "small_cpu_s": round(small_cpu, 3),
        "over_read": round(run_s / read_s, 2),
        "over_child": round(run_s / child_s, 2),
        "repeat": repeat,
        "load_average": round(os.getloadavg()[0], 1),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, nargs="+", default=[2_000_000, 10_000_000])
    ap.add_argument("--case", nargs="+", choices=["credit", "wide"], default=["credit", "wide"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--label", default="", help="what was measured (a checkout, the load)")
    ap.add_argument("--privopt", type=Path, default=PRIVOPT, help="the privopt command to run (another checkout's)")
    args = ap.parse_args()
    for n in args.records:
        for case in args.case:
            row = {"label": args.label, **measure(case, n, args.repeat, args.privopt)}
            print(json.dumps(row), flush=True)
            with RESULTS.open("a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
