"""The backend protocol: a canonical sparse LP in, a uniform solution out.

    minimize    c @ x  (+ 1/2 x @ Q @ x, Q symmetric positive semidefinite, for a QP)
    subject to  row_lower <= A @ x <= row_upper
                col_lower <= x <= col_upper

A backend is one small class: capability flags as class attributes, its solver imported
inside ``_solve``, solver statuses mapped through a table. ``Backend.solve`` runs ``_solve``
with the solver's console output routed to the solver log (``privopt.solverlog``: discarded
unless ``--verbose`` or ``--log FILE``), so nothing a solver prints reaches privopt's stdout; a
backend wraps its blocking solver call in ``solverlog.interruptible`` so Ctrl-C takes effect.

The result keeps two separate things (Pyomo's split): why the solver stopped (``termination``) and what the returned point
is (``status``). Only ``status == "optimal"`` is an answer; every other status is reported,
never used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .. import solverlog


@dataclass(frozen=True)
class LinearProgram:
    c: np.ndarray
    A: sp.csc_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    Q: sp.csc_matrix | None = None  # quadratic objective term (1/2 x'Qx); None for an LP

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape

    @property
    def is_qp(self) -> bool:
        return self.Q is not None and self.Q.nnz > 0


@dataclass(frozen=True)
class LPSolution:
    termination: str  # why the solver stopped: optimal, infeasible, unbounded, time_limit, error, ...
    status: str  # what x is: optimal | infeasible | unbounded | unknown
    x: np.ndarray | None = field(repr=False)
    objective: float | None
    solve_s: float
    build_s: float
    iterations: int | None
    solver: str
    version: str
    message: str = ""
    row_dual: np.ndarray | None = field(default=None, repr=False)  # d objective / d row bound
    col_dual: np.ndarray | None = field(default=None, repr=False)  # reduced costs

    @property
    def ok(self) -> bool:
        return self.status == "optimal" and self.x is not None


@dataclass(frozen=True)
class ConicSolution:
    """A conic program's answer: ``values`` by the program's variable names (in the program's
    units), with the same termination / status split as ``LPSolution``."""

    termination: str
    status: str
    values: dict[str, np.ndarray] | None = field(repr=False)
    objective: float | None
    solve_s: float
    build_s: float
    iterations: int | None
    solver: str
    version: str
    message: str = ""
    duals: dict = field(default_factory=dict, repr=False)  # multipliers by constraint name (a cone's: a list of parts)

    @property
    def ok(self) -> bool:
        return self.status == "optimal" and self.values is not None


class Backend:
    """Base class; subclasses set the flags and implement ``solve`` (an LP, or a QP when
    ``supports_qp``; ``unsupported`` returns the status for a program a backend cannot take).

    ``package`` is imported by ``available``; a missing or broken package makes the backend
    report itself unavailable (with the reason) instead of failing the caller.
    """

    name: ClassVar[str] = "base"
    package: ClassVar[str] = ""
    supports_lp: ClassVar[bool] = True
    supports_qp: ClassVar[bool] = False
    supports_conic: ClassVar[bool] = False  # second-order and PSD cones (lower/noise.py)
    solvers: ClassVar[tuple[str, ...]] = ()  # inner solvers, for modelling layers (cvxpy)

    @property
    def stalls_on_envelopes(self) -> bool:
        """True for a solver that does not converge to 1e-9 on the envelope form of pairwise
        privacy budgets (compile/mechanism.py); the LP route then writes every pair as a row."""
        return False

    def __init__(self, solver: str | None = None):
        if solver is not None and solver not in self.solvers:
            from ..errors import UsageError

            choices = ", ".join(self.solvers) if self.solvers else "none (it has no --solver choice)"
            raise UsageError(f"backend '{self.name}' has no solver '{solver}'; choose: {choices}")
        self.solver = solver or (self.solvers[0] if self.solvers else None)

    @property
    def label(self) -> str:
        return f"{self.name}:{self.solver}" if self.solver else self.name

    def available(self) -> tuple[bool, str]:
        """(True, "") if usable here, else (False, why)."""
        import importlib

        try:
            importlib.import_module(self.package)
        except Exception as e:  # a broken install raises more than ImportError
            return False, f"{self.package} cannot be imported: {type(e).__name__}: {e}"
        return True, ""

    def solve(self, lp: LinearProgram, *, time_limit: float | None = None, tol: float = 1e-9) -> LPSolution:
        """Solve ``lp``; the solver's console output goes to the solver log, never to stdout."""
        if (refused := self.unsupported(lp)) is not None:
            return refused
        if time_limit is not None:
            if math.isnan(time_limit):
                from ..errors import UsageError

                raise UsageError("the time limit must be a number of seconds, not nan")
            if time_limit <= 0:  # a method's remaining time ran out before this solve
                return LPSolution("time_limit", "unknown", None, None, 0.0, 0.0, None, self.label, "", "no time left")
        if (bad := _not_a_number(lp)) is not None:  # HiGHS spins forever on NaN data
            return LPSolution("error", "unknown", None, None, 0.0, 0.0, None, self.label, "", f"the program has {bad} (a privopt bug)")
        with solverlog.captured():
            return self._solve(lp, time_limit=time_limit, tol=tol)

    def _solve(self, lp: LinearProgram, *, time_limit: float | None, tol: float) -> LPSolution:
        raise NotImplementedError

    def solve_conic(self, program, *, form: str = "soc", time_limit: float | None = None, tol: float = 1e-9) -> ConicSolution:
        """Solve a conic program (``lower.noise.ConicProgram``) on a backend that
        ``supports_conic``; the solver's output goes to the solver log."""
        if not self.supports_conic:
            return ConicSolution(
                "unsupported", "unknown", None, None, 0.0, 0.0, None, self.label, "",
                f"backend '{self.label}' does not solve conic programs; use cvxpy",
            )
        if time_limit is not None and time_limit <= 0:
            return ConicSolution("time_limit", "unknown", None, None, 0.0, 0.0, None, self.label, "", "no time left")
        with solverlog.captured():
            return self._solve_conic(program, form=form, time_limit=time_limit, tol=tol)

    def _solve_conic(self, program, *, form: str, time_limit: float | None, tol: float) -> ConicSolution:
        raise NotImplementedError

    def unsupported(self, lp: LinearProgram) -> LPSolution | None:
        """A failed solution if this backend cannot take ``lp`` (a QP on an LP-only backend)."""
        if lp.is_qp and not self.supports_qp:
            return LPSolution(
                "unsupported", "unknown", None, None, 0.0, 0.0, None, self.label, "",
                f"backend '{self.label}' solves LPs only; this program has a quadratic objective",
            )
        return None


def _not_a_number(lp: LinearProgram) -> str | None:
    """What in ``lp`` is NaN or an infinite coefficient, or None when its data is sound."""
    arrays = {"costs": lp.c, "coefficients": lp.A.data, "row bounds": np.concatenate([lp.row_lower, lp.row_upper]),
              "column bounds": np.concatenate([lp.col_lower, lp.col_upper])}
    if lp.Q is not None:
        arrays["quadratic coefficients"] = lp.Q.data
    for name, values in arrays.items():
        finite_needed = name in ("costs", "coefficients", "quadratic coefficients")
        if np.isnan(values).any() or (finite_needed and not np.isfinite(values).all()):
            return f"non-finite {name}"
    return None


def split_rows(lp: LinearProgram):
    """The rows as ``A_ub x <= b_ub`` and ``A_eq x == b_eq`` (for APIs without ranged rows).

    Returns (A_ub, b_ub, A_eq, b_eq, ub_rows, ub_sign, eq_rows): ``ub_rows[k]`` is the original
    row of inequality k and ``ub_sign[k]`` is +1 for an upper bound, -1 for a lower bound, so
    duals can be mapped back.
    """
    A = lp.A.tocsr()
    lo, hi = lp.row_lower, lp.row_upper
    eq = np.isfinite(lo) & np.isfinite(hi) & (lo == hi)
    upper = np.isfinite(hi) & ~eq
    lower = np.isfinite(lo) & ~eq
    up_rows, low_rows, eq_rows = np.flatnonzero(upper), np.flatnonzero(lower), np.flatnonzero(eq)
    A_ub = sp.vstack([A[up_rows], -A[low_rows]]).tocsr()
    b_ub = np.concatenate([hi[up_rows], -lo[low_rows]])
    ub_rows = np.concatenate([up_rows, low_rows])
    ub_sign = np.concatenate([np.ones(up_rows.size), -np.ones(low_rows.size)])
    return A_ub, b_ub, A[eq_rows], lo[eq_rows], ub_rows, ub_sign, eq_rows
