"""What clean outputs and interrupts cost (issue 10).

Two figures, on two LPs (the 50,000-cell non-Markov LDP LP of bench_sanitization.py and a
shaped-noise LP at |X| = 60, |Y| = 240):

* ``overhead``: the HiGHS backend's solve time as privopt runs it (descriptor 1 routed to the
  solver log, the solve in a worker thread with HiGHS's user-interrupt callbacks on) against
  the same backend with ``HighsBackend.interruptible = False`` (the caller's thread, no
  callbacks), each still inside the log redirect. Runs alternate, best of ``--repeat``; the
  ratio is the figure (the machine is noisy).
* ``latency``: a solve interrupted by SIGINT after ``--after`` seconds: how long after the
  signal ``KeyboardInterrupt`` reaches the caller, and whether HiGHS had stopped by then.

One JSON object per line.

    .venv/bin/python benchmarks/bench_outputs.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import tempfile
import threading
import time
from pathlib import Path

from bench_sanitization import write_spec as sanitization_spec
from bench_shaped_noise import write_spec as shaped_spec

from privopt import api, solverlog
from privopt.backends.highs import HighsBackend
from privopt.lower.mechanism import lower_mechanism


def solve_s(lp, interruptible: bool) -> float:
    HighsBackend.interruptible = interruptible
    try:
        sol = HighsBackend().solve(lp)
    finally:
        HighsBackend.interruptible = True
    assert sol.ok, sol.message
    return sol.solve_s


def latency(lp, after: float) -> dict:
    threading.Timer(after, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.perf_counter()
    try:
        HighsBackend().solve(lp)
    except KeyboardInterrupt:
        seen = time.perf_counter() - t0
        return {
            "interrupt_seen_s_after_signal": round(seen - after, 3),
            "solver_still_running": solverlog.solver_running(),
        }
    return {"interrupt_seen_s_after_signal": None, "note": "the solve ended before the signal"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--after", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = {
            "ldp 20x50x50": sanitization_spec(folder, 20, 50, "ldp"),
            "shaped noise 60x240": shaped_spec(folder, "lp", 60, 240),
        }
        for name, path in cases.items():
            lp = lower_mechanism(api.load(path)).lp
            times = {True: [], False: []}
            for _ in range(args.repeat):
                for flag in (True, False):
                    times[flag].append(solve_s(lp, flag))
            on, off = min(times[True]), min(times[False])
            row = {
                "bench": "overhead",
                "case": name,
                "rows": lp.shape[0],
                "cols": lp.shape[1],
                "threaded_with_interrupt_s": round(on, 4),
                "plain_s": round(off, 4),
                "ratio": round(on / off, 3),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
            }
            print(json.dumps(row), flush=True)
            if off > 2 * args.after:
                print(
                    json.dumps(
                        {"bench": "latency", "case": name, "signal_after_s": args.after} | latency(lp, args.after)
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
