"""The routes of a transparency report that ``blocks.report.routes`` lists for ``privopt check``.

* ``closed-form``: Theorem 1 (corrected), binary outcomes only;
* ``lfp`` on every LP backend (highs, scipy, cvxpy with each inner solver, pyomo);
* ``dqcp``: cvxpy's quasiconvex programming, ``solve(qcp=True)``, an independent bisection
  over cvxpy's own reformulation (solver HIGHS, eps 1e-9; with its defaults it stops at
  ``user_limit`` far from the optimum);
* ``bisection``: the same generalized LFP as a Pyomo model with a mutable beta, bisected on
  cold HiGHS solves.

Each ``run`` is ``(inst, backend, time_limit) -> Answer`` over the lowered instance; every
table is measured by ``blocks.report.measure``. The closed form and the LFP minimize every
group (Lemma 3) and are compared group by group; the bisections minimize only the largest
confidence over groups.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .. import solverlog
from ..backends.base import Backend
from ..closedform.atr import solve_binary
from ..errors import PrivoptError
from ..lower.atr import ATRInstance
from ..measures.confidence import conditional_prior, group_max_confidence
from ..methods.lfp import feasible_start, solve_lfp
from .common import GAP_TOL, Accuracy, Answer, RouteSkipped, RouteStopped

DQCP_MAX_RATIOS = 5_000  # the DQCP route builds one scalar ratio atom per (record, outcome)
DQCP_S_PER_RATIO = 0.03  # measured: 0.8 s for 36 ratio atoms, 25 s for 990, 178 s for 4,800
BISECTION_MAX_CELLS = 200_000  # the Pyomo route builds one expression per row

# qcp=True takes no solver options, so HiGHS keeps its default 1e-7 feasibility tolerance on
# cvxpy's ratio rows q_i X_ia - beta S_a <= 0. That admits a ratio up to beta + 1e-7 / S_a
# (measured: 4.9e-6 above 0.6 where S_a = 0.02) and a lone cell of mass up to 1e-7 / (1 - beta)
# (measured: 2e-6 at beta = 0.947, which alone has confidence 1); slack and cells carry 10x margin
DQCP_ACCURACY = Accuracy(
    1e-9, 1e-6, 1e-5, "cvxpy's bisection eps 1e-9; HiGHS's default 1e-7 feasibility on its ratio rows", slack=1e-6
)


def backend(name: str, solver: str | None = None) -> Backend:
    """A backend instance for a fixed-backend route (available or not: the check says which)."""
    from ..backends import BACKENDS

    return BACKENDS[name](solver)


def closed_form(inst: ATRInstance, _backend, _time_limit) -> Answer:
    lo, hi = inst.binary_bounds()
    ref = inst.reference[..., 1] if inst.reference is not None else None
    t0 = time.perf_counter()
    sol = solve_binary(inst.p, lo, hi, ref)
    return Answer(sol.table, 0.0, time.perf_counter() - t0, "")


def lfp(inst: ATRInstance, backend: Backend, time_limit) -> Answer:
    """The LFP method, held to the same certificate as solve's (``GAP_TOL``)."""
    sol = solve_lfp(inst.p, inst.lower, inst.upper, backend, inst.reference, time_limit=time_limit)
    rel = float((sol.gap / np.maximum(sol.beta, 1e-300)).max(initial=0.0))
    if not rel <= GAP_TOL:
        raise PrivoptError(f"{int((sol.gap > GAP_TOL * sol.beta).sum())} group(s) left uncertified (gap {rel:.1e})")
    return Answer(sol.table, sol.lp_build_s, sol.lp_solve_s, f"{sol.lp_solves} LP solves")


def dqcp(inst: ATRInstance, _backend, time_limit) -> Answer:
    """No time limit reaches cvxpy's bisection (qcp=True takes no solver options): this route
    is skipped when its estimated time (DQCP_S_PER_RATIO per ratio atom) exceeds ``time_limit``,
    and beyond DQCP_MAX_RATIOS."""
    import cvxpy as cp

    G, m, A = inst.lower.shape
    q = conditional_prior(inst.p).reshape(-1)
    n_ratios = int((q > 0).sum()) * A
    if n_ratios > DQCP_MAX_RATIOS:
        raise RouteSkipped(f"{n_ratios} ratio atoms; the DQCP route is for small problems (<= {DQCP_MAX_RATIOS})")
    estimate = n_ratios * DQCP_S_PER_RATIO
    if time_limit is not None and estimate > time_limit:
        raise RouteSkipped(
            f"{n_ratios} ratio atoms would take about {estimate:.3g} s ({DQCP_S_PER_RATIO * 1e3:g} ms each, measured), "
            f"over the {time_limit:.3g} s it may take; cvxpy's bisection cannot be stopped by a time limit"
        )
    t0 = time.perf_counter()
    X = cp.Variable((G * m, A), nonneg=True)
    L, U = inst.lower.reshape(G * m, A), inst.upper.reshape(G * m, A)
    cons = [X >= L, X <= U, cp.sum(X, axis=1) == 1]
    ratios = []
    for g in range(G):
        rows = slice(g * m, (g + 1) * m)
        for a in range(A):
            S = q[rows] @ X[rows, a]
            ratios += [q[g * m + i] * X[g * m + i, a] / S for i in range(m) if q[g * m + i] > 0]
    problem = cp.Problem(cp.Minimize(cp.maximum(*ratios)), cons)
    t1 = time.perf_counter()
    with warnings.catch_warnings(), solverlog.captured():  # cvxpy's HiGHS prints on descriptor 1
        warnings.simplefilter("ignore")
        solverlog.interruptible(lambda: problem.solve(qcp=True, solver="HIGHS", eps=1e-9))
    if problem.status != "optimal":
        raise PrivoptError(f"cvxpy DQCP ended with status {problem.status}; not an answer")
    return Answer(
        np.asarray(X.value).reshape(G, m, A), t1 - t0, time.perf_counter() - t1, "cvxpy qcp=True, HIGHS, eps=1e-9"
    )


def bisection(inst: ATRInstance, _backend, time_limit, rtol: float = 1e-10) -> Answer:
    import pyomo.environ as pe
    from pyomo.contrib.solver.solvers.highs import Highs

    G, m, A = inst.lower.shape
    if G * m * A > BISECTION_MAX_CELLS:
        raise RouteSkipped(f"{G * m * A} design cells; the Pyomo route is for problems up to {BISECTION_MAX_CELLS}")
    q = conditional_prior(inst.p)
    t0 = time.perf_counter()
    mdl = pe.ConcreteModel()
    mdl.beta = pe.Param(mutable=True, initialize=1.0)
    idx = [(g, i, a) for g in range(G) for i in range(m) for a in range(A)]
    mdl.X = pe.Var(idx, bounds=lambda _, g, i, a: (float(inst.lower[g, i, a]), float(inst.upper[g, i, a])))
    mdl.S = pe.Var([(g, a) for g in range(G) for a in range(A)], bounds=(0, None))  # one column per group sum
    mdl.rows = pe.Constraint(
        [(g, i) for g in range(G) for i in range(m)], rule=lambda M, g, i: sum(M.X[g, i, a] for a in range(A)) == 1
    )
    mdl.sums = pe.Constraint(
        [(g, a) for g in range(G) for a in range(A)],
        rule=lambda M, g, a: M.S[g, a] == sum(float(q[g, i]) * M.X[g, i, a] for i in range(m) if q[g, i] > 0),
    )
    mdl.ratio = pe.Constraint(
        [t for t in idx if q[t[0], t[1]] > 0],
        rule=lambda M, g, i, a: float(q[g, i]) * M.X[g, i, a] - M.beta * M.S[g, a] <= 0,
    )
    mdl.obj = pe.Objective(expr=0.0)
    build = time.perf_counter() - t0
    lo = 0.0  # not privopt's lower bound: this route must not lean on the closed form it checks
    start = feasible_start(inst.lower, inst.upper, inst.reference)
    best = start
    best_value = float(group_max_confidence(q, start).max(initial=0.0))
    top = best_value  # the bracket [lo, top]; best_value is what the best table achieves
    solves = 0
    t1 = time.perf_counter()
    while top - lo > rtol * top:
        mid = 0.5 * (lo + top)
        mdl.beta.set_value(mid)
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)  # building counts
        if remaining is not None and remaining <= 0:
            raise RouteStopped("time", f"time limit reached after {solves} Pyomo solves")
        with solverlog.captured():  # a fresh solver each step: cold solves, no accumulated time limit
            res = solverlog.interruptible(
                lambda remaining=remaining: Highs().solve(
                    mdl,
                    load_solutions=False,
                    raise_exception_on_nonoptimal_result=False,
                    time_limit=remaining,
                    solver_options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
                )
            )
        solves += 1
        name = res.termination_condition.name
        if name == "convergenceCriteriaSatisfied":
            values = res.solution_loader.get_vars()
            table = np.array([values[mdl.X[t]] for t in idx]).reshape(G, m, A)
            achieved = float(group_max_confidence(q, table).max(initial=0.0))
            if achieved < best_value:
                best, best_value = table, achieved
            top = mid
        elif name in ("provenInfeasible", "infeasibleOrUnbounded"):
            lo = mid
        elif name in ("maxTimeLimit", "iterationLimit"):
            raise RouteStopped(
                "time" if name == "maxTimeLimit" else "iterations", f"Pyomo/HiGHS: {name} at beta = {mid:.12g}"
            )
        else:
            raise PrivoptError(f"Pyomo/HiGHS stopped with {name} at beta = {mid:.12g}")
    return Answer(best, build, time.perf_counter() - t1, f"{solves} Pyomo solves")
