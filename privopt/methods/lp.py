"""One LP solve of a lowered mechanism, a diagnosis when the program is infeasible, and a
proven lower bound on its optimum (weak duality) as evidence of optimality.

``RUNNER`` (``core.plan.Method``, methods "lp" and "qp") runs it for the driver: the route's
chain (``lower.reductions.BudgetRows``: each budget as rows, Ding et al. eq. 4 in its envelope
or pairwise form) applied to the problem, the LP/QP solved on the route's backend, the design
mapped back (``route.chain.invert``), with the best proven bound (``lower_bound``) as evidence.
``use_pairwise`` says which form of the budget rows a backend gets.
"""

from __future__ import annotations

import time

import numpy as np

from ..backends.base import Backend, LinearProgram, LPSolution
from ..core.plan import Outcome
from ..errors import InfeasibleError, SolverError
from ..lower.mechanism import MechanismLP

LP_TOL = 1e-9
PAIRWISE_MAX_ROWS = 2_000_000  # the pairwise form has |A|^2 |Y| rows per budget


def solve_lp(mlp: MechanismLP, backend: Backend, time_limit: float | None = None) -> LPSolution:
    """Solve ``mlp`` on ``backend``. Raises ``InfeasibleError`` naming the blocking constraint
    families, or ``SolverError`` for any status other than optimal."""
    sol = backend.unsupported(mlp.lp) or backend.solve(mlp.lp, time_limit=time_limit, tol=LP_TOL)
    if sol.ok:
        return sol
    if sol.status == "infeasible":
        raise InfeasibleError("no table satisfies the constraints", diagnose(mlp, backend, time_limit))
    raise SolverError(
        f"{sol.solver}: the {'QP' if mlp.lp.is_qp else 'LP'} ended with termination '{sol.termination}', status '{sol.status}'"
        + (f" ({sol.message})" if sol.message else "")
        + "; no optimum is reported"
    )


def diagnose(mlp: MechanismLP, backend: Backend, time_limit: float | None = None) -> list[str]:
    """Which constraint families block feasibility. A family that is infeasible together with
    the design's own rows alone is named first; otherwise each family whose removal restores
    feasibility. Each test is one LP without an objective."""

    def feasible(families) -> bool | None:
        sol = backend.solve(mlp.restricted(families), time_limit=time_limit, tol=LP_TOL)
        return True if sol.ok else (False if sol.status == "infeasible" else None)

    fams = range(1, len(mlp.families))
    design = mlp.families[0]
    alone = [k for k in fams if feasible([0, k]) is False]
    if alone:
        return [f"{mlp.families[k]} cannot hold for any table with {design.split(': ', 1)[-1]}" for k in alone]
    blocking = [k for k in fams if feasible([j for j in range(len(mlp.families)) if j != k]) is True]
    if blocking:
        names = "; ".join(mlp.families[k] for k in blocking)
        return [f"the constraints cannot hold together; dropping any one of these makes them feasible: {names}"]
    return ["the constraints cannot hold together (no single constraint is to blame; several conflict)"]


def lagrangian_bound(lp: LinearProgram, row_dual: np.ndarray) -> float:
    """A lower bound on ``min c x + 1/2 x'Qx`` over ``lp`` from any row multipliers ``y``
    (weak duality; nothing the solver claims is trusted).

    For every feasible x, ``c x + 1/2 x'Qx >= sum_i y_i t_i + min over the column box of
    (c - A'y) x + 1/2 x'Qx``, where ``t_i`` is the row's lower bound when ``y_i > 0`` and its
    upper bound when ``y_i < 0`` (``y = d objective / d bound``, backends/base.py). A multiplier
    of the wrong sign for a one-sided row is set to 0, so the bound holds whatever ``y`` is.
    The box minimum is separable because every column is bounded and Q is diagonal (the QP
    lowering's residual columns); returns -inf for a non-diagonal Q or an unbounded column
    with a nonzero reduced cost.
    """
    import scipy.sparse as sp

    y = np.asarray(row_dual, dtype=float).copy()
    y[~np.isfinite(y) | ((y > 0) & ~np.isfinite(lp.row_lower)) | ((y < 0) & ~np.isfinite(lp.row_upper))] = 0.0
    t = np.where(y > 0, lp.row_lower, np.where(y < 0, lp.row_upper, 0.0))
    r = lp.c - lp.A.T @ y
    lo, hi = lp.col_lower, lp.col_upper
    q = np.zeros_like(r)
    if lp.Q is not None and lp.Q.nnz:
        Q = sp.coo_array(lp.Q)
        if np.any(Q.row != Q.col) or np.any(Q.data < 0):  # not diagonal, or not convex: no bound here
            return -np.inf
        np.add.at(q, Q.row, Q.data)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(q > 0, np.clip(-r / np.where(q > 0, q, 1.0), lo, hi), np.where(r > 0, lo, hi))
        x = np.where(r == 0, np.clip(0.0, lo, hi), x)
        terms = r * x + 0.5 * q * x * x
    if not np.all(np.isfinite(terms)):
        return -np.inf
    return float(y @ t + terms.sum())


def unconstrained_multipliers(mlp: MechanismLP) -> np.ndarray:
    """Row multipliers that give the optimum over the design's rows alone (each row of
    P(targets | given) on its simplex, every other row dropped): ``y = min_j c_j`` over the
    cells of each design row. Their ``lagrangian_bound`` is the unconstrained optimum, which
    the optimum approaches as the budgets grow."""
    y = np.zeros(mlp.lp.A.shape[0])
    rows = np.flatnonzero(mlp.row_family == 0)
    c = mlp.lp.c[: mlp.n_design]
    width = mlp.n_design // max(rows.size, 1)
    if rows.size and rows.size * width == mlp.n_design:
        y[rows] = c.reshape(rows.size, width).min(axis=1)
    return y


def lower_bound(mlp: MechanismLP, sol: LPSolution) -> tuple[str, float, np.ndarray]:
    """The best proven lower bound on the lowered program's ``c x``, its kind and the row
    multipliers that prove it (``lagrangian_bound``): the solver's multipliers, or those of the
    unconstrained optimum, whichever bound is larger."""
    y0 = unconstrained_multipliers(mlp)
    bounds = [("unconstrained optimum", lagrangian_bound(mlp.lp, y0), y0)]
    if sol.row_dual is not None and sol.row_dual.shape == (mlp.lp.A.shape[0],):
        y = np.asarray(sol.row_dual, dtype=float)
        bounds.append(("dual bound", lagrangian_bound(mlp.lp, y), y))
    return max(bounds, key=lambda kby: kby[1])


def multipliers(y: np.ndarray) -> dict:
    """Row multipliers as a result records them: the rows with a nonzero multiplier
    (``rows``, indices into the lowered program's rows) and their values (``values``), exactly
    (floats round-trip through JSON)."""
    rows = np.flatnonzero(y)
    return {"rows": rows.tolist(), "values": y[rows].tolist()}


# ------------------------------------------------------------------ the method, for the driver


class LPMethod:
    """The whole program as an LP (a QP for a quadratic objective, Ramon & Basu Sec. 3.3) on
    the route's backend. The outcome's evidence is the best proven bound on the optimum
    (``lower_bound``: weak duality; an upper bound when maximizing), in the objective's units;
    the block kind turns it into the certificate once the table is verified."""

    name = "lp"

    def run(self, problem, prepared, route, time_limit, workers, progress) -> Outcome:
        """The point is the design, flat in the design's axis order (``BudgetRows.invert``)."""
        be = route.backend
        t0 = time.perf_counter()
        mlp, inverse = route.chain.apply(problem)
        lower_s = time.perf_counter() - t0
        sol = solve_lp(mlp, be, time_limit)
        x = route.chain.invert(sol.x, inverse)
        stats = dict(
            lower_s=round(lower_s, 6),
            lp_build_s=round(sol.build_s, 6),
            lp_solve_s=round(sol.solve_s, 6),
            lp_rows=mlp.lp.shape[0],
            lp_cols=mlp.lp.shape[1],
            lp_nonzeros=int(mlp.lp.A.nnz),
            solver=f"{sol.solver} {sol.version}",
        )
        kind = "QP" if mlp.lp.is_qp else "LP"
        bound_kind, bound, y = lower_bound(mlp, sol)
        evidence = {
            "kind": bound_kind,
            "bound": mlp.in_objective_units(bound),
            "side": "lower" if mlp.sign > 0 else "upper",
            "scale": mlp.scale,
            "program": {"pairwise": bool(route.chain.reductions[0].pairwise), "rows": mlp.lp.A.shape[0]},
            "multipliers": multipliers(y),
        }
        return Outcome(
            x,
            f"{kind} optimum reported by {sol.solver} (termination '{sol.termination}')",
            be.label,
            claimed=float(mlp.objective_value(sol.x)),
            evidence=evidence,
            stats=stats,
        )


RUNNER = LPMethod()


def use_pairwise(problem, backend) -> bool:
    """The pairwise form (every pair of source values its own row, |A|^2 |Y| rows per budget)
    for a backend that stalls on envelopes, when it has at most ``PAIRWISE_MAX_ROWS`` rows."""
    if not backend.stalls_on_envelopes:
        return False
    rows = sum(b.source_cells**2 * b.cond.shape[-1] for b in problem.budgets if b.pairs is None)
    return rows <= PAIRWISE_MAX_ROWS
