"""``privopt verify`` on the 2-million-record closed-form result (issue 22, item 4).

The spec of benchmarks/bench_closed_form.py (8 public attributes x 5 values, 5 private values:
1,953,125 records, 390,625 QID groups, a released table of 3,906,250 cells), solved with
``privopt solve SPEC --out DIR`` and verified with ``privopt verify DIR/result.json``, each as
the command a user runs (a fresh process: start-up, reading, writing included). Best of
``--repeat``:

* ``solve_s``: the solve command (load the records, the closed form, its verification, the
  result.json and the released table's CSV);
* ``verify_s``: the verify command (the result and the table's CSV read back, the spec and the
  records' file hashed and rebuilt, every check and Theorem 1 re-checked);
* ``verify_over_solve``: the target is at most 2.

``--form json`` writes the result with ``privopt solve SPEC --json > FILE`` instead (the released
table in the JSON, a row object per cell) and verifies that file.

    python benchmarks/bench_verify.py [--attrs 8] [--values 5] [--private 5] [--repeat 2] [--form out|json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_closed_form import make_data  # noqa: E402


def timed(args: list[str], cwd: Path, stdout: Path | None = None) -> float:
    """Wall seconds of ``python -m privopt ARGS`` (it must exit 0), its output into ``stdout``
    if given."""
    t0 = time.perf_counter()
    with open(stdout if stdout is not None else os.devnull, "w") as sink:
        proc = subprocess.run(
            [sys.executable, "-m", "privopt", *args], cwd=cwd, stdout=sink, stderr=subprocess.PIPE, text=True
        )
    spent = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"privopt {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attrs", type=int, default=8)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--private", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--form", choices=["out", "json"], default="out")
    args = ap.parse_args()
    spec = make_data(HERE / "data", args.attrs, args.values, args.private)
    out = HERE / "data" / f"verify_out_{args.attrs}x{args.values}x{args.private}"
    result = out / "result.json"
    solves, verifies = [], []
    for _ in range(args.repeat):
        shutil.rmtree(out, ignore_errors=True)
        if args.form == "out":
            solves.append(timed(["solve", spec.name, "--out", str(out)], spec.parent))
        else:
            out.mkdir(parents=True)
            solves.append(timed(["solve", spec.name, "--json"], spec.parent, stdout=result))
        verifies.append(timed(["verify", str(result), "--json"], spec.parent))
    report = {
        "form": args.form,
        "records": args.values**args.attrs * args.private,
        "groups": args.values**args.attrs,
        "cells": args.values**args.attrs * args.private * 2,
        "solve_s": min(solves),
        "verify_s": min(verifies),
        "verify_over_solve": min(verifies) / min(solves),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": date.today().isoformat(),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
