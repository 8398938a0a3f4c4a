"""k-ary randomized response: the registered closed form against the LP (issue 21; docs/sanitization.md).

For each k (default 10, 100, 1000), the spec of ``specs/randomized_response.priv`` over k labels
at eps = 1, solved twice through ``Problem.solve``: by the ``randomized-response`` recognizer
(method ``closed-form``: the table ``e^eps / (e^eps + k - 1)`` on the diagonal, no solver) and
by the envelope LP on HiGHS (``method="lp"``: k^2 cells, about 2 k^2 rows). Both times are the
whole solve (lowering or the closed form, verification, measures, result tables); both answers
are verified, and their objectives must agree to 1e-8 (``(k - 1) / (e^eps + k - 1)``). The LP is
run up to ``--lp-max-k`` (default 100: at k = 1000 it has a million cells). One small solve
first warms the process up (imports), and is not reported.

Prints one JSON line per k and appends it to benchmarks/results/rr.jsonl (``--no-save`` to skip).

    python benchmarks/bench_rr.py [--k 10 100 1000] [--repeats 1] [--lp-max-k 100]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import privopt

HERE = Path(__file__).resolve().parent
SPEC = """spec "k-ary randomized response, k = {k}"
var X : data {{{labels}}}
var Y : release over X
known P(X) = uniform
design R = P(Y | X)
param eps = 1.0
subject to ldp(X -> Y) <= eps
minimize tv(X, Y)
"""


def timed(problem, method: str, repeats: int):
    """(the fastest whole solve in seconds, its result) over ``repeats`` solves."""
    best, result = math.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = problem.solve(method=method)
        best = min(best, time.perf_counter() - t0)
    if result.status != "optimal" or not result.verification["passed"]:
        raise SystemExit(f"{method}: {result.status}, verification passed: {result.verification['passed']}")
    return best, result


def run(k: int, repeats: int, lp_max_k: int) -> dict:
    problem = privopt.loads(SPEC.format(k=k, labels=", ".join(f"v{i}" for i in range(k))))
    closed_s, closed = timed(problem, "auto", repeats)
    if closed.method != "closed-form":
        raise SystemExit(f"k = {k}: the recognizer did not answer (method {closed.method})")
    row = {"k": k, "closed_form_s": round(closed_s, 4), "objective": closed.objective, "lp_s": None, "ratio": None}
    if k <= lp_max_k:
        lp_s, lp = timed(problem, "lp", repeats)
        if abs(lp.objective - closed.objective) > 1e-8 * max(1.0, abs(closed.objective)):
            raise SystemExit(f"k = {k}: the LP's {lp.objective!r} is not the closed form's {closed.objective!r}")
        row.update(lp_s=round(lp_s, 4), lp_objective=lp.objective, ratio=round(lp_s / closed_s, 1))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--lp-max-k", type=int, default=100)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    run(3, 1, 3)  # warm-up: the first solve of a process pays for imports, not for the method
    for k in args.k:
        row = run(k, args.repeats, args.lp_max_k)
        print(json.dumps(row), flush=True)
        if not args.no_save:
            with open(HERE / "results" / "rr.jsonl", "a") as f:
                f.write(json.dumps({**row, "when": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")


if __name__ == "__main__":
    main()
