"""scipy.optimize.linprog with HiGHS: a second path to the same solver, through scipy's API.

linprog takes A_ub x <= b_ub and A_eq x == b_eq, so ranged rows are split (``split_rows``)
and the duals (scipy's ``marginals``, d objective / d b) are mapped back onto the rows.
A program with integer columns goes to ``scipy.optimize.milp`` (HiGHS's branch and cut),
which takes the ranged rows as they are and returns no duals.
"""

from __future__ import annotations

import time

import numpy as np

from .. import solverlog
from .base import Backend, LinearProgram, LPSolution, split_rows

# linprog status -> (termination, status of the returned point)
_STATUS = {
    0: ("optimal", "optimal"),
    1: ("iteration_limit", "unknown"),  # also time limit
    2: ("infeasible", "infeasible"),
    3: ("unbounded", "unbounded"),
    4: ("numerical_trouble", "unknown"),
}


# milp status -> (termination, status of the returned point)
_MILP_STATUS = {
    0: ("optimal", "optimal"),
    1: ("iteration_limit", "unknown"),  # also time limit
    2: ("infeasible", "infeasible"),
    3: ("unbounded", "unbounded"),
    4: ("error", "unknown"),
}


class ScipyBackend(Backend):
    name = "scipy"
    package = "scipy.optimize"
    capabilities = frozenset({"integer"})

    def _solve(self, lp: LinearProgram, *, time_limit: float | None, tol: float) -> LPSolution:
        if lp.n_integers:
            return self._solve_milp(lp, time_limit=time_limit, tol=tol)
        import scipy
        from scipy.optimize import linprog

        t0 = time.perf_counter()
        A_ub, b_ub, A_eq, b_eq, ub_rows, ub_sign, eq_rows = split_rows(lp)
        bounds = np.column_stack([lp.col_lower, lp.col_upper])  # linprog takes +-inf for "no bound"
        options = {"primal_feasibility_tolerance": tol, "dual_feasibility_tolerance": tol}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        t1 = time.perf_counter()

        def run(opts):
            return linprog(
                lp.c,
                A_ub=A_ub if A_ub.shape[0] else None,
                b_ub=b_ub if A_ub.shape[0] else None,
                A_eq=A_eq if A_eq.shape[0] else None,
                b_eq=b_eq if A_eq.shape[0] else None,
                bounds=bounds,
                method="highs",
                options=opts,
            )

        options["disp"] = solverlog.verbose()
        res = solverlog.interruptible(lambda: run(options))
        if res.status == 2:  # confirm without presolve (see highs.py: presolve can misjudge tiny data)
            res = solverlog.interruptible(lambda: run(options | {"presolve": False}))
        t2 = time.perf_counter()
        termination, status = _STATUS.get(res.status, ("unknown", "unknown"))
        if res.status == 1 and "time" in str(res.message).lower():
            termination = "time_limit"
        x = objective = row_dual = col_dual = None
        if status == "optimal":
            x = np.asarray(res.x, dtype=float)
            objective = float(res.fun)
            row_dual = np.zeros(lp.A.shape[0])
            if A_ub.shape[0]:
                np.add.at(row_dual, ub_rows, res.ineqlin.marginals * ub_sign)
            if A_eq.shape[0]:
                row_dual[eq_rows] = res.eqlin.marginals
            col_dual = np.asarray(res.lower.marginals) + np.asarray(res.upper.marginals)
        return LPSolution(
            termination,
            status,
            x,
            objective,
            solve_s=t2 - t1,
            build_s=t1 - t0,
            iterations=int(getattr(res, "nit", 0) or 0),
            solver="scipy.linprog(highs)",
            version=scipy.__version__,
            message=str(res.message),
            row_dual=row_dual,
            col_dual=col_dual,
        )

    def _solve_milp(self, lp: LinearProgram, *, time_limit: float | None, tol: float) -> LPSolution:
        """``scipy.optimize.milp``: rows as one ``LinearConstraint``, integrality per column,
        solved to a relative gap of ``tol``; infeasibility confirmed without presolve."""
        import scipy
        from scipy.optimize import Bounds, LinearConstraint, milp

        t0 = time.perf_counter()
        rows = [LinearConstraint(lp.A.tocsr(), lp.row_lower, lp.row_upper)] if lp.A.shape[0] else []
        options = {"disp": solverlog.verbose(), "mip_rel_gap": tol}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        t1 = time.perf_counter()

        def run(opts):
            return milp(
                lp.c,
                integrality=np.asarray(lp.integrality, dtype=int),
                bounds=Bounds(lp.col_lower, lp.col_upper),
                constraints=rows,
                options=opts,
            )

        res = solverlog.interruptible(lambda: run(options))
        if res.status == 2:  # see _solve
            res = solverlog.interruptible(lambda: run(options | {"presolve": False}))
        t2 = time.perf_counter()
        termination, status = _MILP_STATUS.get(res.status, ("unknown", "unknown"))
        if res.status == 1 and "time" in str(res.message).lower():
            termination = "time_limit"
        ok = status == "optimal" and res.x is not None
        return LPSolution(
            termination,
            status if ok or status != "optimal" else "unknown",
            np.asarray(res.x, dtype=float) if ok else None,
            float(res.fun) if ok else None,
            solve_s=t2 - t1,
            build_s=t1 - t0,
            iterations=None,
            solver="scipy.milp(highs)",
            version=scipy.__version__,
            message=str(res.message),
        )
