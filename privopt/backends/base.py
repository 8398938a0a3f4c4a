"""The backend protocol: a canonical program in, a uniform solution out.

The program is ``core.canonical.CanonicalProgram`` (``LinearProgram`` is the same class, the
name the LP routes use):

    minimize    c @ x  (+ 1/2 x @ Q @ x, Q symmetric positive semidefinite, for a QP)
    subject to  row_lower <= A @ x <= row_upper
                col_lower <= x <= col_upper
                x[cone] in a second-order or PSD cone, x[j] integer where integrality[j]

A backend is one small class: the parts of that program it takes (``capabilities``, from
``CAPABILITIES``; every backend takes LPs) as a class attribute, its solver imported inside
``_solve``, solver statuses mapped through a table. ``Backend.solve`` refuses a program that
needs more than the backend takes (``unsupported``: what the program has and which backends
take it), then runs ``_solve`` with the solver's console output routed to the solver log
(``privopt.solverlog``: discarded unless ``--verbose`` or ``--log FILE``), so nothing a solver
prints reaches privopt's stdout; a backend wraps its blocking solver call in
``solverlog.interruptible`` so Ctrl-C takes effect.

The result keeps two separate things (Pyomo's split): why the solver stopped (``termination``) and what the returned point
is (``status``). Only ``status == "optimal"`` is an answer; every other status is reported,
never used. A program with integer columns (a MILP) has no duals: ``row_dual`` and
``col_dual`` are None.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import ClassVar

import numpy as np

from .. import solverlog
from ..core.canonical import CanonicalProgram
from ..records import Record

LinearProgram = CanonicalProgram  # the LP routes' name for it (an LP is a canonical program without Q, cones, integers)

# the backends by name, in privopt's order of preference; backends/__init__.py registers them
# (kept here, so that a refusal can name the backends that take a program without importing up)
BACKENDS: dict[str, type[Backend]] = {}

# what a backend may take beyond an LP, and how a refusal names it
CAPABILITIES = {
    "quadratic": "a quadratic objective",
    "integer": "integer columns",
    "soc": "second-order cones",
    "psd": "PSD cones",
}


class _Answerless:
    """``without_point``: a solution that carries no point, only why (a refusal, no time left,
    bad data), in the fields every solution has."""

    @classmethod
    def without_point(cls, termination: str, solver: str, message: str):
        return cls(termination, "unknown", None, None, 0.0, 0.0, None, solver, "", message)


class LPSolution(_Answerless, Record):
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


class ConicSolution(_Answerless, Record):
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
    """Base class; subclasses declare what they take and implement ``_solve`` for it.

    ``capabilities`` is what the backend takes beyond LPs, with at least one of its inner
    solvers (a subset of ``CAPABILITIES``); ``forms`` narrows it per inner solver to the
    combinations a solver takes (cvxpy's OSQP takes no cones; HiGHS takes a quadratic
    objective or integers, not both), as cvxpy's solvers list the constraint kinds they
    support and whether they are MIP-capable. ``supports_qp`` and ``supports_conic`` are read
    off ``capabilities``. ``unsupported`` refuses, the same way for every backend, a program
    whose ``needs`` no form of this backend covers.

    ``package`` is imported by ``available``; a missing or broken package makes the backend
    report itself unavailable (with the reason) instead of failing the caller.
    """

    name: ClassVar[str] = "base"
    package: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    forms: ClassVar[dict[str | None, tuple[frozenset[str], ...]]] = {}  # inner solver -> what it takes together
    supports_lp: ClassVar[bool] = True
    supports_qp: ClassVar[bool] = False  # "quadratic" in capabilities (set by __init_subclass__)
    supports_conic: ClassVar[bool] = False  # a cone in capabilities: second-order and PSD cones (lower/noise.py)
    solvers: ClassVar[tuple[str, ...]] = ()  # inner solvers, for modelling layers (cvxpy)
    optional_solvers: ClassVar[
        tuple[str, ...]
    ] = ()  # inner solvers taken by name, from optional packages (not cross-checked)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unknown = cls.capabilities - set(CAPABILITIES)
        if unknown:
            raise TypeError(f"{cls.__name__}: unknown capabilities {sorted(unknown)}; known: {', '.join(CAPABILITIES)}")
        cls.supports_qp = "quadratic" in cls.capabilities
        cls.supports_conic = bool(cls.capabilities & {"soc", "psd"})

    @property
    def takes(self) -> tuple[frozenset[str], ...]:
        """The combinations of capabilities this instance (with its inner solver) takes."""
        return self.forms.get(self.solver, (self.capabilities,))

    def accepts(self, needs: frozenset[str]) -> bool:
        """True if some combination this instance takes covers ``needs`` (an LP needs nothing)."""
        return any(needs <= form for form in self.takes)

    @property
    def stalls_on_envelopes(self) -> bool:
        """True for a solver that does not converge to 1e-9 on the envelope form of pairwise
        privacy budgets (compile/mechanism.py); the LP route then writes every pair as a row."""
        return False

    def __init__(self, solver: str | None = None):
        if solver is not None and solver not in self.solvers + self.optional_solvers:
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
        """Solve ``lp``, any canonical program this backend ``accepts`` (others are refused:
        ``unsupported``); the solver's console output goes to the solver log, never to stdout."""
        if (refused := self.unsupported(lp)) is not None:
            return refused
        if time_limit is not None:
            if math.isnan(time_limit):
                from ..errors import UsageError

                raise UsageError("the time limit must be a number of seconds, not nan")
            if time_limit <= 0:  # a method's remaining time ran out before this solve
                return LPSolution.without_point("time_limit", self.label, "no time left")
        if (bad := _not_a_number(lp)) is not None:  # HiGHS spins forever on NaN data
            return LPSolution.without_point("error", self.label, f"the program has {bad} (a privopt bug)")
        with solverlog.captured():
            return self._solve(lp, time_limit=time_limit, tol=tol)

    def _solve(self, lp: LinearProgram, *, time_limit: float | None, tol: float) -> LPSolution:
        raise NotImplementedError

    def solve_conic(
        self, program, *, form: str = "soc", time_limit: float | None = None, tol: float = 1e-9
    ) -> ConicSolution:
        """Solve a conic program (``lower.noise.ConicProgram``) on a backend that
        ``supports_conic``; the solver's output goes to the solver log."""
        if not self.supports_conic:
            return ConicSolution.without_point(
                "unsupported", self.label, f"backend '{self.label}' does not solve conic programs; use cvxpy"
            )
        if time_limit is not None and time_limit <= 0:
            return ConicSolution.without_point("time_limit", self.label, "no time left")
        with solverlog.captured():
            return self._solve_conic(program, form=form, time_limit=time_limit, tol=tol)

    def _solve_conic(self, program, *, form: str, time_limit: float | None, tol: float) -> ConicSolution:
        raise NotImplementedError

    def unsupported(self, program: CanonicalProgram) -> LPSolution | None:
        """A refused solution (termination "unsupported") if no combination this backend takes
        covers ``program.needs``; its message names what the program has that the backend
        does not take, and the backends that take the whole program."""
        if self.accepts(program.needs):
            return None
        return LPSolution.without_point("unsupported", self.label, refusal(self, program.needs))


def refusal(backend: Backend, needs: frozenset[str]) -> str:
    """Why ``backend`` refuses a program that ``needs`` these capabilities, and who takes it:
    "backend 'scipy' solves LPs and MILPs only; this program has a quadratic objective;
    backends that take it: highs, cvxpy:CLARABEL, ..."."""
    solves = ["LPs"] + [_KIND[k] for k in CAPABILITIES if any(k in form for form in backend.takes)]
    ordered = [k for k in CAPABILITIES if k in needs]
    lacking = [k for k in ordered if not any(k in form for form in backend.takes)]
    has = _and([CAPABILITIES[k] for k in lacking or ordered]) + ("" if lacking else " together")
    takers = [  # an optional inner solver (cvxpy's SCIP) only where its package is installed
        b.label
        for cls in BACKENDS.values()
        for s in cls.solvers + cls.optional_solvers or (None,)
        if (b := cls(s)).accepts(needs) and (s not in cls.optional_solvers or b.available()[0])
    ]
    return f"backend '{backend.label}' solves {_and(solves)} only; this program has {has}; " + (
        f"backends that take it: {', '.join(takers)}" if takers else "no backend here takes it"
    )


_KIND = {"quadratic": "QPs", "integer": "MILPs", "soc": "second-order cone programs", "psd": "semidefinite programs"}


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _not_a_number(lp: LinearProgram) -> str | None:
    """What in ``lp`` is NaN or an infinite coefficient, or None when its data is sound."""
    arrays = {
        "costs": lp.c,
        "coefficients": lp.A.data,
        "row bounds": np.concatenate([lp.row_lower, lp.row_upper]),
        "column bounds": np.concatenate([lp.col_lower, lp.col_upper]),
    }
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
    import scipy.sparse as sp

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
