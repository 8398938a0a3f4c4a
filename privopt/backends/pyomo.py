"""Pyomo with its HiGHS interface (``pyomo.contrib.solver``; no external solver binary).

Pyomo builds one expression per row, so its build time is part of what `privopt check` and the
benchmarks report. Its results keep termination condition and solution status apart, which
map through tables like every other backend. Integer columns are variables over
``pyomo.environ.Integers`` (a MILP, solved by HiGHS's branch and cut; no duals).
"""

from __future__ import annotations

import time

import numpy as np

from .. import solverlog
from .base import Backend, LinearProgram, LPSolution

_TERMINATION = {
    "convergenceCriteriaSatisfied": "optimal",
    "maxTimeLimit": "time_limit",
    "iterationLimit": "iteration_limit",
    "objectiveLimit": "objective_limit",
    "minStepLength": "numerical_trouble",
    "unbounded": "unbounded",
    "provenInfeasible": "infeasible",
    "locallyInfeasible": "infeasible",
    "infeasibleOrUnbounded": "infeasible_or_unbounded",
    "error": "error",
    "interrupted": "interrupted",
    "licensingProblems": "error",
    "emptyModel": "optimal",
    "unknown": "unknown",
}
_SOLUTION = {
    "optimal": "optimal",
    "feasible": "unknown",
    "infeasible": "infeasible",
    "noSolution": "unknown",
    "unknown": "unknown",
}


class PyomoBackend(Backend):
    name = "pyomo"
    package = "pyomo.environ"
    # the contrib.solver HiGHS interface takes convex quadratic objectives, and integers (not both)
    capabilities = frozenset({"quadratic", "integer"})
    forms = {None: (frozenset({"quadratic"}), frozenset({"integer"}))}

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if not ok:
            return ok, why
        from pyomo.contrib.solver.solvers.highs import Highs

        status = Highs().available()
        return (bool(status), "" if status else f"Pyomo's HiGHS interface is unavailable: {status}")

    def _solve(self, lp: LinearProgram, *, time_limit: float | None, tol: float) -> LPSolution:
        import pyomo
        import pyomo.environ as pe
        from pyomo.contrib.solver.solvers.highs import Highs
        from pyomo.core.expr.numeric_expr import LinearExpression

        t0 = time.perf_counter()
        n_row, n_col = lp.A.shape
        m = pe.ConcreteModel()
        m.I = pe.RangeSet(0, n_col - 1)
        lo = [None if not np.isfinite(v) else float(v) for v in lp.col_lower]
        hi = [None if not np.isfinite(v) else float(v) for v in lp.col_upper]
        integer = lp.n_integers > 0
        kinds = lp.integrality if integer else np.zeros(n_col, dtype=bool)
        m.x = pe.Var(m.I, bounds=lambda _, i: (lo[i], hi[i]), domain=lambda _, i: pe.Integers if kinds[i] else pe.Reals)
        xs = [m.x[i] for i in range(n_col)]
        A = lp.A.tocsr()
        m.rows = pe.ConstraintList()
        rows = []
        for r in range(n_row):
            a, b = A.indptr[r], A.indptr[r + 1]
            expr = LinearExpression(
                constant=0.0, linear_coefs=A.data[a:b].tolist(), linear_vars=[xs[j] for j in A.indices[a:b]]
            )
            rl, ru = lp.row_lower[r], lp.row_upper[r]
            rows.append(
                m.rows.add(
                    (None if not np.isfinite(rl) else float(rl), expr, None if not np.isfinite(ru) else float(ru))
                )
            )
        nz = np.flatnonzero(lp.c)
        linear = LinearExpression(constant=0.0, linear_coefs=lp.c[nz].tolist(), linear_vars=[xs[j] for j in nz])
        if lp.is_qp:
            Q = lp.Q.tocoo()
            linear = linear + 0.5 * sum(float(v) * xs[i] * xs[j] for i, j, v in zip(Q.row, Q.col, Q.data))
        m.obj = pe.Objective(expr=linear)
        t1 = time.perf_counter()
        options = {"primal_feasibility_tolerance": tol, "dual_feasibility_tolerance": tol}
        if integer:
            options["mip_rel_gap"] = tol
        kw = dict(
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
            time_limit=time_limit,
            tee=solverlog.verbose(),
        )
        res = solverlog.interruptible(lambda: Highs().solve(m, solver_options=options, **kw))
        if res.termination_condition.name in ("provenInfeasible", "infeasibleOrUnbounded"):
            res = solverlog.interruptible(  # see highs.py
                lambda: Highs().solve(m, solver_options=options | {"presolve": "off"}, **kw)
            )
        t2 = time.perf_counter()
        termination = _TERMINATION.get(res.termination_condition.name, "unknown")
        status = _SOLUTION.get(res.solution_status.name, "unknown")
        if termination != "optimal":
            status = (
                "infeasible"
                if termination == "infeasible"
                else ("unbounded" if termination == "unbounded" else "unknown")
            )
        x = objective = row_dual = col_dual = None
        if status == "optimal":
            # a column in no row and not in the objective never reaches the solver (Pyomo sends only
            # the variables it uses): any value in its bounds is optimal, and its reduced cost is 0
            primals = res.solution_loader.get_vars()
            free = np.clip(0.0, lp.col_lower, lp.col_upper)
            x = np.array([primals.get(v, free[j]) for j, v in enumerate(xs)], dtype=float)
            objective = float(res.incumbent_objective)
            if not integer:  # a MILP has no duals
                duals = res.solution_loader.get_duals()
                row_dual = np.array([duals.get(c, 0.0) for c in rows], dtype=float)
                rc = res.solution_loader.get_reduced_costs()
                col_dual = np.array([rc.get(v, lp.c[j]) for j, v in enumerate(xs)], dtype=float)
        return LPSolution(
            termination,
            status,
            x,
            objective,
            solve_s=t2 - t1,
            build_s=t1 - t0,
            iterations=None,
            solver="pyomo/HiGHS",
            version=pyomo.version.version,
            message=res.termination_condition.name,
            row_dual=row_dual,
            col_dual=col_dual,
        )
