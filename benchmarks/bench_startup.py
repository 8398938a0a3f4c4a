"""Start-up (issue 23, goal 1): ``privopt --help``, ``privopt --version`` and ``privopt solve
specs/atr_table4.priv`` as the commands a user runs (fresh processes), against
``python -c "import numpy, highspy"``, the floor any solve pays. Targets: ``--help`` and
``--version`` at most 1x that floor, the solve of Table 4 at most 1.5x. Beside them, ``privopt
solve specs/atr_credit_records.priv --json --no-tables``: the record-level credit spec on its
1,000 records, the fixed cost of the data path's run at 2 million (issue 23, goal 2).

The commands run in turn, round after round, so that each sees the same machine; each figure
is the best of ``--repeat`` rounds, and each ratio is over the floor's best. Beside the wall
seconds, the CPU seconds each command used (user + system, ``getrusage`` of the child), which a
loaded machine inflates far less than the wall time (it does not count the time spent waiting
for a core).

    python benchmarks/bench_startup.py [--repeat 7] [--label TEXT]

Prints one JSON object: {"label", "repeat", "best_s": {command: seconds}, "ratio": {command:
best over the floor's best}, "best_cpu_s", "cpu_ratio" (the same for CPU seconds), "load"
(the one-minute load average before and after), "python", "machine", "date"}
(benchmarks/results/startup.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = "python -c 'import numpy, highspy'"
CREDIT = "privopt solve specs/atr_credit_records.priv --json --no-tables"  # the data path's fixed cost (1,000 records)


def commands() -> dict[str, list[str]]:
    """The timed commands by name: the installed ``privopt`` script next to this Python (else
    ``python -m privopt``)."""
    script = Path(sys.executable).with_name("privopt")
    privopt = [str(script)] if script.exists() else [sys.executable, "-m", "privopt"]
    return {
        FLOOR: [sys.executable, "-c", "import numpy, highspy"],
        "python -c pass": [sys.executable, "-c", "pass"],
        "privopt --help": [*privopt, "--help"],
        "privopt --version": [*privopt, "--version"],
        "privopt solve specs/atr_table4.priv": [*privopt, "solve", "specs/atr_table4.priv"],
        CREDIT: [*privopt, "solve", "specs/atr_credit_records.priv", "--json", "--no-tables"],
    }


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of ``cmd`` run from the repository root (it
    must exit 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    spent = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return spent, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--label", default="", help="what was measured (a checkout, the load)")
    args = ap.parse_args()
    cmds = commands()
    for cmd in cmds.values():  # warm the file cache (and the grammar's cache) once, untimed
        timed(cmd)
    load = [os.getloadavg()[0]]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            runs[name].append(timed(cmd))
    load.append(os.getloadavg()[0])
    best = {name: min(w for w, _ in r) for name, r in runs.items()}
    cpu = {name: min(c for _, c in r) for name, r in runs.items()}
    report = {
        "label": args.label,
        "repeat": args.repeat,
        "best_s": {name: round(t, 4) for name, t in best.items()},
        "ratio": {name: round(t / best[FLOOR], 2) for name, t in best.items()},
        "best_cpu_s": {name: round(t, 4) for name, t in cpu.items()},
        "cpu_ratio": {name: round(t / cpu[FLOOR], 2) for name, t in cpu.items()},
        "load": [round(x, 1) for x in load],
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "date": date.today().isoformat(),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
