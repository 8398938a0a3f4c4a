"""``privopt audit`` at the size of bench_closed_form.py (issue 14).

8 public attributes x 5 values and one private attribute with 5 values: 1,953,125 records,
390,625 QID groups, 5 protected labels (10 pairs) and, by default, every other input as CSP's
score variables (about 387,000 populated cells per pair). Runs the CLI as a user does, in a
subprocess, and reports for the text report and for ``--json`` (to a file): wall time, peak
memory of the process (ru_maxrss of the child) and the JSON's size; and, as the yardstick,
``privopt solve --json --no-tables`` of the same spec (load and solve, no audit).

    python benchmarks/bench_audit.py [--attrs 8] [--values 5] [--private 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_closed_form import HERE, make_data

PRIVOPT = [sys.executable, "-m", "privopt.cli"]


def run(args: list[str], out_path: Path) -> dict:
    """Wall time and peak RSS of one CLI run with stdout to ``out_path``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    with out_path.open("wb") as fh:
        proc = subprocess.run(PRIVOPT + args + ["--quiet"], stdout=fh, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.decode()[-2000:]}")
    return {
        "wall_s": round(wall, 2),
        "peak_mb_at_least": round(max(peak, before) / 1024),
        "output_mb": round(out_path.stat().st_size / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attrs", type=int, default=8)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--private", type=int, default=5)
    args = ap.parse_args()
    spec = str(make_data(HERE / "data", args.attrs, args.values, args.private))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run the smallest first
        solve = run(["solve", spec, "--json", "--no-tables"], out)
        text = run(["audit", spec], out)
        full = run(["audit", spec, "--json"], out)
    records = args.values**args.attrs * args.private
    print(
        json.dumps(
            {
                "records": records,
                "groups": args.values**args.attrs,
                "solve --json --no-tables": solve,
                "audit (text)": text,
                "audit --json": full,
                "audit text / solve": round(text["wall_s"] / solve["wall_s"], 2),
                "audit json / solve": round(full["wall_s"] / solve["wall_s"], 2),
                "cpus": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
