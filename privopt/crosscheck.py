"""Cross-checking: solve one problem by every applicable route and compare.

Routes for a max-confidence objective:

* ``closed-form``: Theorem 1 (corrected), binary outcomes only;
* ``lfp`` on every LP backend (highs, scipy, cvxpy with each inner solver, pyomo);
* ``dqcp``: cvxpy's quasiconvex programming, ``solve(qcp=True)``, an independent bisection
  over cvxpy's own reformulation (solver HIGHS, eps 1e-9; with its defaults it stops at
  ``user_limit`` far from the optimum);
* ``bisection``: the same generalized LFP as a Pyomo model with a mutable beta, bisected on
  cold HiGHS solves.

Every route returns a table. privopt itself measures each table: the largest violation of
the spec's constraints, rows and ranges (of the table as returned), and the maximum
confidence it achieves once moved onto the bounds and rows (the compared objective). Nothing
is taken from a solver's own report. A route that fails is reported with
the reason, and the other routes still run.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from .backends import all_backends
from .backends.base import Backend
from .closedform.atr import solve_binary
from .compile.analysis import analyse
from .compile.atr import ATRInstance, lower_atr
from .errors import PrivoptError, UsageError
from .ir.model import Problem
from .measures.confidence import conditional_prior, group_max_confidence
from .methods.lfp import feasible_start, repair_rows, solve_lfp

DQCP_MAX_RATIOS = 5_000  # the DQCP route builds one scalar ratio atom per (record, outcome)
BISECTION_MAX_CELLS = 200_000  # the Pyomo route builds one expression per row


@dataclass
class PathResult:
    method: str
    backend: str | None
    status: str  # optimal | failed | skipped
    objective: float | None = None  # privopt's measure of the returned table
    abs_diff: float | None = None
    max_violation: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    message: str = ""
    group_beta: np.ndarray | None = field(default=None, repr=False)


@dataclass
class CheckReport:
    agree: bool
    reference: dict | None
    paths: list[PathResult]
    problems: list[str]
    tol: float

    def to_dict(self) -> dict:
        keys = ("method", "backend", "status", "objective", "abs_diff", "max_violation", "build_s", "solve_s", "message")
        return {
            "agree": self.agree,
            "tolerance": self.tol,
            "reference": self.reference,
            "paths": [{k: asdict(p)[k] for k in keys} for p in self.paths],
            "problems": self.problems,
        }


# ------------------------------------------------------------------ routes


def _closed_form(inst: ATRInstance, _backend, _time_limit):
    lo, hi = inst.binary_bounds()
    ref = inst.reference[..., 1] if inst.reference is not None else None
    t0 = time.perf_counter()
    sol = solve_binary(inst.p, lo, hi, ref)
    return np.stack([1.0 - sol.d1, sol.d1], axis=2), 0.0, time.perf_counter() - t0, ""


def _lfp(inst: ATRInstance, backend: Backend, time_limit):
    sol = solve_lfp(inst.p, inst.lower, inst.upper, backend, inst.reference, time_limit=time_limit)
    rel = float((sol.gap / np.maximum(sol.beta, 1e-300)).max(initial=0.0))
    if rel > 1e-8:
        raise PrivoptError(f"{int((sol.gap > 1e-8 * sol.beta).sum())} group(s) left uncertified (gap {rel:.1e})")
    return sol.table, sol.lp_build_s, sol.lp_solve_s, f"{sol.lp_solves} LP solves"


def _dqcp(inst: ATRInstance, _backend, time_limit):
    import cvxpy as cp

    G, m, A = inst.lower.shape
    q = conditional_prior(inst.p).reshape(-1)
    n_ratios = int((q > 0).sum()) * A
    if n_ratios > DQCP_MAX_RATIOS:
        raise _Skip(f"{n_ratios} ratio atoms; the DQCP route is for small problems (<= {DQCP_MAX_RATIOS})")
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem.solve(qcp=True, solver="HIGHS", eps=1e-9)
    if problem.status != "optimal":
        raise PrivoptError(f"cvxpy DQCP ended with status {problem.status}; not an answer")
    return np.asarray(X.value).reshape(G, m, A), t1 - t0, time.perf_counter() - t1, "cvxpy qcp=True, HIGHS, eps=1e-9"


def _pyomo_bisection(inst: ATRInstance, _backend, time_limit, rtol: float = 1e-10):
    import pyomo.environ as pe
    from pyomo.contrib.solver.solvers.highs import Highs

    G, m, A = inst.lower.shape
    if G * m * A > BISECTION_MAX_CELLS:
        raise _Skip(f"{G * m * A} design cells; the Pyomo route is for problems up to {BISECTION_MAX_CELLS}")
    q = conditional_prior(inst.p)
    t0 = time.perf_counter()
    mdl = pe.ConcreteModel()
    mdl.beta = pe.Param(mutable=True, initialize=1.0)
    idx = [(g, i, a) for g in range(G) for i in range(m) for a in range(A)]
    mdl.X = pe.Var(idx, bounds=lambda _, g, i, a: (float(inst.lower[g, i, a]), float(inst.upper[g, i, a])))
    mdl.S = pe.Var([(g, a) for g in range(G) for a in range(A)], bounds=(0, None))  # one column per group sum
    mdl.rows = pe.Constraint([(g, i) for g in range(G) for i in range(m)], rule=lambda M, g, i: sum(M.X[g, i, a] for a in range(A)) == 1)
    mdl.sums = pe.Constraint(
        [(g, a) for g in range(G) for a in range(A)],
        rule=lambda M, g, a: M.S[g, a] == sum(float(q[g, i]) * M.X[g, i, a] for i in range(m) if q[g, i] > 0),
    )
    mdl.ratio = pe.Constraint(
        [t for t in idx if q[t[0], t[1]] > 0], rule=lambda M, g, i, a: float(q[g, i]) * M.X[g, i, a] - M.beta * M.S[g, a] <= 0
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
        res = Highs().solve(  # a fresh solver each step: cold solves, no accumulated time limit
            mdl, load_solutions=False, raise_exception_on_nonoptimal_result=False, time_limit=time_limit,
            solver_options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
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
        else:
            raise PrivoptError(f"Pyomo/HiGHS stopped with {name} at beta = {mid:.12g}")
    return best, build, time.perf_counter() - t1, f"{solves} Pyomo solves"


class _Skip(Exception):
    """A route that does not apply at this size (reported as skipped, not failed)."""


# ------------------------------------------------------------------ the check


def _selected(backends: list[str] | None) -> list[Backend]:
    out = all_backends()
    if backends is None:
        return out
    known = {b.name for b in out} | {b.label for b in out}
    unknown = [b for b in backends if b not in known]
    if unknown:
        raise UsageError(f"unknown backend '{unknown[0]}'; choose from: {', '.join(sorted(known))}")
    return [b for b in out if b.name in backends or b.label in backends]


def run_check(problem: Problem, backends: list[str] | None = None, tol: float = 1e-7, time_limit: float | None = None) -> CheckReport:
    """Solve ``problem`` by every applicable method x backend and compare (see module doc)."""
    from .pipeline import verify

    if problem.family == "mechanism":
        return _check_mechanism(problem, backends, tol, time_limit)
    analysis = analyse(problem)
    inst = lower_atr(problem)  # InfeasibleError propagates: the caller reports it
    chosen = _selected(backends)
    routes: list[tuple[str, Backend | None, object]] = []
    if "closed-form" in analysis.applicable:
        routes.append(("closed-form", None, _closed_form))
    routes += [("lfp", b, _lfp) for b in chosen]
    if backends is None or "cvxpy" in backends or "cvxpy:HIGHS" in backends:
        routes.append(("dqcp", _named("cvxpy", "HIGHS"), _dqcp))
    if backends is None or "pyomo" in backends:
        routes.append(("bisection", _named("pyomo"), _pyomo_bisection))

    objective = problem.objective

    def measure(table):
        # violation: of the table as the route returned it; objective: of that table moved onto
        # the bounds and rows (an infeasible table's confidence means nothing; DQCP's tables
        # keep HiGHS's default 1e-7 slack, since cvxpy's qcp=True rejects solver options)
        raw = verify(problem, inst, table, group_max_confidence(inst.p, table), "")
        violation = max(raw["max_constraint_violation"], raw["max_row_sum_error"], raw["max_range_violation"])
        achieved = group_max_confidence(inst.p, repair_rows(table, inst.lower, inst.upper))
        return objective.value(float(achieved.max(initial=0.0))), violation, achieved

    def worst_group(p, ref):
        g = int(np.argmax(np.abs(p.group_beta - ref.group_beta)))
        return f"worst group {inst.group_key(g)}: {p.group_beta[g]:.12g} vs {ref.group_beta[g]:.12g}"

    paths = _run_routes(routes, inst, time_limit, measure)
    ref, problems = _compare(paths, tol, worst_group)
    reference = {"method": ref.method, "backend": ref.backend} if ref else None
    return CheckReport(ref is not None and not problems, reference, paths, problems, tol)


def _run_routes(routes, instance, time_limit, measure) -> list[PathResult]:
    """Run every (method, backend, route); ``measure(table)`` gives (objective, violation,
    per-group values or None). A route that fails is recorded, and the others still run."""
    paths: list[PathResult] = []
    for method, backend, route in routes:
        label = backend.label if backend is not None else None
        if backend is not None:
            ok, why = backend.available()
            if not ok:
                paths.append(PathResult(method, label, "failed", message=f"unavailable: {why}"))
                continue
        try:
            table, build_s, solve_s, note = route(instance, backend, time_limit)
        except _Skip as e:
            paths.append(PathResult(method, label, "skipped", message=str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - one path failing never loses the others
            paths.append(PathResult(method, label, "failed", message=f"{type(e).__name__}: {e}"))
            continue
        value, violation, groups = measure(table)
        paths.append(PathResult(method, label, "optimal", value, None, violation, build_s, solve_s, note, groups))
    return paths


def _compare(paths: list[PathResult], tol: float, detail) -> tuple[PathResult | None, list[str]]:
    """The reference (the first optimal path) and one sentence per path that fails, differs
    from it by more than ``tol`` (times |objective| when that exceeds 1), or violates the spec
    by more than ``tol``."""
    ref = next((p for p in paths if p.status == "optimal"), None)
    problems: list[str] = []
    for p in paths:
        name = f"{p.method} on {p.backend}" if p.backend else p.method
        if p.status == "failed":
            problems.append(f"{name} failed: {p.message}")
            continue
        if p.status != "optimal" or ref is None:
            continue
        p.abs_diff = abs(p.objective - ref.objective)
        if p.abs_diff > tol * max(1.0, abs(ref.objective)):  # relative for objectives beyond 1
            problems.append(f"{name} differs from the reference by {p.abs_diff:.3g} ({detail(p, ref)})")
        if p.max_violation > tol:
            problems.append(f"{name} returns a table violating the spec by {p.max_violation:.3g}")
    return ref, problems


# ------------------------------------------------------------------ mechanism problems

OSQP_NOTE = "OSQP (ADMM) does not reach 1e-9 on these LPs; run it with --backends cvxpy:OSQP"


def _mech_closed_form(problem: Problem, _backend, _time_limit):
    from .mechanism_pipeline import _route

    t0 = time.perf_counter()
    x, *_ = _route(problem, None, "closed-form", "highs", None, None, {})
    return x, 0.0, time.perf_counter() - t0, ""


def _mech_reduced(problem: Problem, backend: Backend, time_limit):
    from .closedform import sanitization as cf

    san, _ = cf.match(problem)
    t0 = time.perf_counter()
    M, sol = cf.prop2(san.p, san.q, san.ps, problem.objective.distance, backend, time_limit)
    build = sol.build_s if sol is not None else 0.0
    return cf.to_design(problem, san, M).ravel(), build, time.perf_counter() - t0 - build, "Prop. 2 transport LP"


def _mech_lp(problem: Problem, backend: Backend, time_limit, pairwise: bool = False):
    from .compile.mechanism import lower_mechanism
    from .mechanism_pipeline import PAIRWISE_MAX_ROWS, use_pairwise
    from .methods.lp import solve_lp

    pairwise = pairwise or use_pairwise(problem, backend)
    t0 = time.perf_counter()
    mlp = lower_mechanism(problem, pairwise=pairwise)
    if pairwise and mlp.lp.shape[0] > PAIRWISE_MAX_ROWS:
        raise _Skip(f"{mlp.lp.shape[0]:,} rows; the pairwise form is for problems up to {PAIRWISE_MAX_ROWS:,}")
    build = time.perf_counter() - t0
    sol = solve_lp(mlp, backend, time_limit)
    note = f"{mlp.lp.shape[0]:,} rows x {mlp.lp.shape[1]:,} columns" + (", every pair its own row" if pairwise else "")
    return sol.x[: mlp.n_design], build + sol.build_s, sol.solve_s, note


def _check_mechanism(problem: Problem, backends, tol, time_limit) -> CheckReport:
    """Routes: the closed form or Prop. 2 (where they apply), the envelope LP on every backend,
    and the pairwise LP (no envelopes) on HiGHS. Each table is measured by privopt: the
    objective of the table clipped to [0, 1], and the largest violation of the table as returned."""
    from .mechanism_pipeline import verify

    analysis = analyse(problem)
    chosen = _selected(backends)
    paths: list[PathResult] = []
    if backends is None and not problem.objective.is_quadratic:
        # measured: on the count-query and LDP specs OSQP stops at 200,000 iterations short of
        # 1e-9 (docs/backends.md); it runs when named with --backends cvxpy:OSQP, and on QPs
        paths.append(PathResult("lp", "cvxpy:OSQP", "skipped", message=OSQP_NOTE))
        chosen = [b for b in chosen if b.label != "cvxpy:OSQP"]
    routes: list[tuple[str, Backend | None, object]] = []
    if "closed-form" in analysis.applicable:
        routes.append(("closed-form", None, _mech_closed_form))
    if "reduced-lp" in analysis.applicable:
        routes += [("reduced-lp", b, _mech_reduced) for b in chosen]
    kind = "qp" if problem.objective.is_quadratic else "lp"
    routes += [(kind, b, _mech_lp) for b in chosen if b.supports_qp or kind == "lp"]
    paths += [PathResult(kind, b.label, "skipped", message="solves LPs only") for b in chosen if kind == "qp" and not b.supports_qp]
    if problem.budgets and any(b.kind in ("ldp", "dp") and b.pairs is None for b in problem.budgets):
        routes.append(("pairwise", _named("highs"), lambda p, b, t: _mech_lp(p, b, t, pairwise=True)))
    def measure(x):
        raw = verify(problem, x, None, "")
        violation = max(raw["max_constraint_violation"], raw["max_budget_violation"], raw["max_row_sum_error"], raw["max_range_violation"])
        return problem.objective.evaluate(np.clip(x, 0.0, 1.0)), violation, None

    paths += _run_routes(routes, problem, time_limit, measure)
    ref, problems = _compare(paths, tol, lambda p, ref: f"{p.objective:.12g} vs {ref.objective:.12g}")
    reference = {"method": ref.method, "backend": ref.backend} if ref else None
    return CheckReport(ref is not None and not problems, reference, paths, problems, tol)


def _named(name: str, solver: str | None = None) -> Backend:
    from .backends import BACKENDS

    return BACKENDS[name](solver)
