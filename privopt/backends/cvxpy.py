"""cvxpy as a modelling layer over CLARABEL, HIGHS, SCS or OSQP (``--solver``), and SCIP
where pyscipopt is installed (the one inner solver that takes integers with cones).

Each inner solver gets the options it needs to reach ~1e-9 (cvxpy's defaults stop near 1e-8
or looser). cvxpy's "inaccurate" statuses are failures, never answers. Duals are cvxpy's
multipliers mapped to privopt's convention, d objective / d row bound (none for a program
with integer columns).

``_solve`` writes any canonical program (``core.canonical``) as one cvxpy problem: a vector x
(integer where the program says so), its rows and bounds, ``cp.SOC(x[s], x[s+1 : s+k])`` for a
second-order cone and, for a psd cone of order n, a symmetric n x n variable X with ``X >> 0``
tied to the cone's columns by ``x[s + k] = scale_k X[i_k, j_k]`` (``core.canonical.psd_layout``).
"""

from __future__ import annotations

import time
import warnings
from typing import NamedTuple

import numpy as np

from .. import solverlog
from ..core.canonical import psd_layout
from .base import Backend, ConicSolution, LinearProgram, LPSolution, split_rows

# cvxpy status -> (termination, status of the returned point)
_STATUS = {
    "optimal": ("optimal", "optimal"),
    "optimal_inaccurate": ("inaccurate", "unknown"),
    "infeasible": ("infeasible", "infeasible"),
    "infeasible_inaccurate": ("inaccurate", "unknown"),
    "unbounded": ("unbounded", "unbounded"),
    "unbounded_inaccurate": ("inaccurate", "unknown"),
    "infeasible_or_unbounded": ("infeasible_or_unbounded", "unknown"),
    "user_limit": ("user_limit", "unknown"),
    "solver_error": ("error", "unknown"),
}

# options that make each inner solver accurate to ~tol, and its name for a time limit
_OPTIONS = {
    "CLARABEL": lambda tol: {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol, "max_iter": 500},
    "HIGHS": lambda tol: {"primal_feasibility_tolerance": tol, "dual_feasibility_tolerance": tol},
    "SCS": lambda tol: {"eps_abs": tol, "eps_rel": tol, "max_iters": 200_000},
    "OSQP": lambda tol: {"eps_abs": tol, "eps_rel": tol, "max_iter": 200_000, "polishing": True},
    "SCIP": lambda tol: {"scip_params": {"limits/gap": tol}},
}
_TIME_LIMIT = {"CLARABEL": "time_limit", "HIGHS": "time_limit", "SCS": "time_limit_secs", "OSQP": "time_limit"}
_MIP_OPTIONS = {"HIGHS": lambda tol: {"mip_rel_gap": tol}}  # branch and cut to an optimum, not HiGHS's default 1e-4 gap

_CONIC = frozenset({"quadratic", "soc", "psd"})


class CvxpyBackend(Backend):
    name = "cvxpy"
    package = "cvxpy"
    capabilities = frozenset({"quadratic", "integer", "soc", "psd"})
    forms = {  # what each inner solver takes together (cvxpy's supported constraints and MIP_CAPABLE)
        "CLARABEL": (_CONIC,),
        "HIGHS": (frozenset({"quadratic"}), frozenset({"integer"})),
        "SCS": (_CONIC,),
        "OSQP": (frozenset({"quadratic"}),),
        "SCIP": (frozenset({"quadratic", "integer", "soc"}),),
    }
    solvers = ("CLARABEL", "HIGHS", "SCS", "OSQP")
    optional_solvers = ("SCIP",)  # pyscipopt is not a dependency: taken by name where it is installed
    conic_solvers = ("CLARABEL", "SCS")

    @property
    def stalls_on_envelopes(self) -> bool:
        # OSQP (ADMM) hits 2,000,000 iterations on the envelope rows u_y - e^eps l_y <= delta of
        # specs/sanitize_ldp_budget.priv and converges in 25,000 on the pairwise rows
        return self.solver == "OSQP"

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if not ok:
            return ok, why
        import cvxpy as cp

        if self.solver not in cp.installed_solvers():
            return False, f"cvxpy has no {self.solver} installed (it has {', '.join(cp.installed_solvers())})"
        return True, ""

    def _solve(self, lp: LinearProgram, *, time_limit: float | None, tol: float) -> LPSolution:
        """Any canonical program as one cvxpy problem (the module's docstring); an LP or QP is
        built exactly as before cones and integers were added."""
        import cvxpy as cp

        t0 = time.perf_counter()
        A_ub, b_ub, A_eq, b_eq, ub_rows, ub_sign, eq_rows = split_rows(lp)
        n = lp.A.shape[1]
        integer = np.flatnonzero(lp.integrality) if lp.n_integers else ()
        x = (
            cp.Variable(n, integer=(integer,)) if len(integer) else cp.Variable(n)
        )  # indices as np.unravel_index gives them
        cons = []
        ub = eq = None
        if A_ub.shape[0]:
            ub = A_ub @ x <= b_ub
            cons.append(ub)
        if A_eq.shape[0]:
            eq = A_eq @ x == b_eq
            cons.append(eq)
        lo_idx = np.flatnonzero(np.isfinite(lp.col_lower))
        hi_idx = np.flatnonzero(np.isfinite(lp.col_upper))
        if lo_idx.size:
            cons.append(x[lo_idx] >= lp.col_lower[lo_idx])
        if hi_idx.size:
            cons.append(x[hi_idx] <= lp.col_upper[hi_idx])
        cons += _cones(x, lp.cones)
        objective = lp.c @ x
        if lp.is_qp:
            objective = objective + 0.5 * cp.quad_form(x, cp.psd_wrap(lp.Q))
        problem = cp.Problem(cp.Minimize(objective), cons)
        t1 = time.perf_counter()
        extra = _MIP_OPTIONS.get(self.solver, lambda _: {})(tol) if len(integer) else {}
        run = self._run(problem, tol, time_limit, extra)
        termination, status = run.termination, run.status
        values = objective = row_dual = None
        if status == "optimal":
            values = np.asarray(x.value, dtype=float)
            objective = float(problem.value)
            if not len(integer):  # a MILP has no duals
                row_dual = np.zeros(lp.A.shape[0])
                if ub is not None and ub.dual_value is not None:
                    np.add.at(row_dual, ub_rows, -np.asarray(ub.dual_value) * ub_sign)
                if eq is not None and eq.dual_value is not None:
                    row_dual[eq_rows] = -np.asarray(eq.dual_value)
        return LPSolution(
            termination,
            status,
            values,
            objective,
            solve_s=run.solve_s,
            build_s=(t1 - t0) + run.compile_s,
            iterations=run.iterations,
            solver=f"cvxpy/{self.solver}",
            version=cp.__version__,
            message=run.message,
            row_dual=row_dual,
        )

    def _solve_conic(self, program, *, form: str, time_limit: float | None, tol: float) -> ConicSolution:
        """Build ``program.to_cvxpy(form)`` and solve it; values (and the multipliers of the
        constraints the program names) come back in the program's units. "optimal_inaccurate"
        is not an answer (termination "inaccurate")."""
        import cvxpy as cp

        if self.solver not in self.conic_solvers:
            return ConicSolution.without_point(
                "unsupported",
                self.label,
                f"{self.solver} takes no second-order or PSD cones; use --solver {' or '.join(self.conic_solvers)}",
            )
        t0 = time.perf_counter()
        problem, variables, named = program.to_cvxpy(form)
        t1 = time.perf_counter()
        run = self._run(problem, tol, time_limit)
        values = objective = None
        duals = {}
        if run.status == "optimal":
            values = {name: np.asarray(v.value, dtype=float) for name, v in variables.items()}
            objective = float(problem.value)
            duals = {name: _arrays(c.dual_value) for name, c in named.items() if c.dual_value is not None}
        return ConicSolution(
            run.termination,
            run.status,
            values,
            objective,
            solve_s=run.solve_s,
            build_s=(t1 - t0) + run.compile_s,
            iterations=run.iterations,
            solver=f"cvxpy/{self.solver}",
            version=cp.__version__,
            message=run.message,
            duals=duals,
        )

    def _run(self, problem, tol: float, time_limit: float | None, extra: dict | None = None) -> _Run:
        """``problem.solve`` on the inner solver with its accuracy options (and ``extra``),
        interruptible, with cvxpy's status mapped and its time split into compiling and the
        inner solver's own."""
        import cvxpy as cp

        options = _OPTIONS[self.solver](tol) | (extra or {})
        if time_limit is not None and self.solver == "SCIP":  # SCIP's limits are its parameters
            options["scip_params"] = options["scip_params"] | {"limits/time": float(time_limit)}
        elif time_limit is not None:
            options[_TIME_LIMIT[self.solver]] = float(time_limit)
        t1 = time.perf_counter()
        message = ""
        try:
            with warnings.catch_warnings():  # "may be inaccurate": the status says so, and is mapped
                warnings.simplefilter("ignore", UserWarning)
                verbose = solverlog.verbose()
                solverlog.interruptible(lambda: problem.solve(solver=self.solver, verbose=verbose, **options))
                if self.solver == "HIGHS" and problem.status in ("infeasible", "infeasible_or_unbounded"):
                    solverlog.interruptible(  # see highs.py
                        lambda: problem.solve(solver=self.solver, verbose=verbose, **options, presolve="off")
                    )
            termination, status = _STATUS.get(problem.status, ("unknown", "unknown"))
        except cp.error.SolverError as e:
            termination, status, message = "error", "unknown", str(e)
        spent = time.perf_counter() - t1
        stats = problem.solver_stats
        # cvxpy compiles inside solve(): count only the inner solver's own time as solving
        inner = getattr(stats, "solve_time", None) if stats is not None else None
        solve_s = float(inner) if inner is not None and 0 <= inner <= spent else spent
        iterations = getattr(stats, "num_iters", None) if stats is not None else None
        return _Run(termination, status, message or str(problem.status), solve_s, spent - solve_s, iterations)


def _cones(x, cones) -> list:
    """The cvxpy constraints putting slices of ``x`` in their cones (``core.canonical``): the
    second-order cones of one size k together as ``cp.SOC(t, U, axis=1)`` (t their first
    columns, U their other k - 1 by row: one constraint, as a lowering written in cvxpy by
    hand would vectorize it, not one Python object per cone); a psd cone of order n as a
    symmetric n x n variable X, ``X >> 0``, with the slice equal to X's lower triangle by
    column, off-diagonal entries times sqrt(2)."""
    import cvxpy as cp
    import scipy.sparse as sp

    out = []
    soc: dict[int, list[int]] = {}
    for cone in cones:
        if cone.kind == "soc":
            soc.setdefault(cone.size, []).append(cone.start)
            continue
        part = x[cone.start : cone.start + cone.size]
        n = cone.order
        i, j, scale = psd_layout(n)
        X = cp.Variable((n, n), symmetric=True)
        pick = sp.csr_array((scale, (np.arange(i.size), j * n + i)), shape=(i.size, n * n))  # vec(X) by column
        out += [X >> 0, part == pick @ cp.vec(X, order="F")]
    for size, starts in soc.items():
        starts = np.asarray(starts)
        rest = (starts[:, None] + np.arange(1, size)[None, :]).ravel()
        out.append(cp.SOC(x[starts], cp.reshape(x[rest], (starts.size, size - 1), order="C"), axis=1))
    return out


def _arrays(value):
    """A constraint's multiplier as float arrays: a cone's is a list of parts, kept as a list."""
    if isinstance(value, list | tuple):
        return [np.asarray(v, dtype=float) for v in value]
    return np.asarray(value, dtype=float)


class _Run(NamedTuple):
    termination: str
    status: str
    message: str
    solve_s: float
    compile_s: float
    iterations: int | None
