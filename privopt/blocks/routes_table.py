"""The route runners that ``blocks.table.routes`` lists for ``privopt check``, each a way to
solve a mechanism problem:

* ``closed_form``: Lemma 1 or Prop. 1, where they apply;
* ``reduced``: Prop. 2's transport LP, where it applies;
* ``lp``: the whole program (envelope form) on any backend (a QP on the QP-capable ones);
* ``pairwise``: the LP with every pair of a pairwise budget its own row (no envelopes).

Each runner is ``(problem, backend, time_limit) -> Answer`` with the design as a flat vector.
"""

from __future__ import annotations

import time

import numpy as np

from ..backends.base import Backend
from ..closedform.registry import recognize
from ..lower.mechanism import lower_mechanism
from ..methods.lp import PAIRWISE_MAX_ROWS, solve_lp, use_pairwise
from ..model.problem import Problem
from .common import Answer, RouteSkipped

PAIRWISE_CHECK_ROWS = 200_000  # beyond this the check's pairwise route is skipped before it is built
OSQP_NOTE = "OSQP (ADMM) does not reach 1e-9 on these LPs; run it with --backends cvxpy:OSQP"


# ------------------------------------------------------------------ solvers


def solve_closed_form(problem: Problem) -> tuple[np.ndarray, str]:
    """(the design, why): Lemma 1 (Markov) or Prop. 1 (non-Markov, tv); the method must apply."""
    rec, match = recognize(problem, "closed-form")
    x, _ = rec.solve(problem, match)
    return x, rec.claim


def solve_reduced(problem: Problem, backend, time_limit) -> tuple[np.ndarray, object]:
    """(the design, the transport LP's solution or None): Prop. 2's reduced LP on ``backend``."""
    rec, match = recognize(problem, "reduced-lp")
    return rec.solve(problem, match, backend, time_limit)


# ------------------------------------------------------------------ route runners


def backend(name: str, solver: str | None = None) -> Backend:
    """A backend instance for a fixed-backend route (available or not: the check says which)."""
    from ..backends import BACKENDS

    return BACKENDS[name](solver)


def closed_form(problem: Problem, _backend, _time_limit) -> Answer:
    t0 = time.perf_counter()
    x, _ = solve_closed_form(problem)
    return Answer(x, 0.0, time.perf_counter() - t0, "")


def reduced(problem: Problem, backend: Backend, time_limit) -> Answer:
    t0 = time.perf_counter()
    x, sol = solve_reduced(problem, backend, time_limit)
    build = sol.build_s if sol is not None else 0.0
    return Answer(x, build, time.perf_counter() - t0 - build, "Prop. 2 transport LP")


def lp(problem: Problem, backend: Backend, time_limit, pairwise: bool = False) -> Answer:
    """The whole program: in its envelope form, or pairwise (every pair its own row) when asked
    or when the backend stalls on envelopes."""
    pairwise = pairwise or use_pairwise(problem, backend)
    t0 = time.perf_counter()
    mlp = lower_mechanism(problem, pairwise=pairwise)
    if pairwise and mlp.lp.shape[0] > PAIRWISE_MAX_ROWS:
        raise RouteSkipped(f"{mlp.lp.shape[0]:,} rows; the pairwise form is for problems up to {PAIRWISE_MAX_ROWS:,}")
    build = time.perf_counter() - t0
    sol = solve_lp(mlp, backend, time_limit)
    note = f"{mlp.lp.shape[0]:,} rows x {mlp.lp.shape[1]:,} columns" + (", every pair its own row" if pairwise else "")
    return Answer(sol.x[: mlp.n_design], build + sol.build_s, sol.solve_s, note)


def pairwise_rows(problem: Problem) -> int:
    """Rows of the pairwise form: |A|^2 |Y| per pairwise budget written without its pairs."""
    return sum(
        b.source_cells**2 * b.cond.shape[-1] for b in problem.budgets if b.kind in ("ldp", "dp") and b.pairs is None
    )


def pairwise(problem: Problem, backend: Backend, time_limit) -> Answer:
    """The pairwise LP, skipped before it is built when it is large: its rows grow as |A|^2 |Y|
    where the envelope LP's grow as |A| |Y| (at |A| = |Y| = 100, 1,000,000 rows and about 250x
    the main solve's time)."""
    rows = pairwise_rows(problem)
    if rows > PAIRWISE_CHECK_ROWS:
        raise RouteSkipped(
            f"the pairwise form would have {rows:,} rows (|A|^2 |Y|; over {PAIRWISE_CHECK_ROWS:,}), and take far "
            "longer than the envelope LP"
        )
    return lp(problem, backend, time_limit, pairwise=True)
