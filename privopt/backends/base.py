"""The backend protocol: a canonical sparse LP in, a uniform solution out.

    minimize    c @ x
    subject to  row_lower <= A @ x <= row_upper
                col_lower <= x <= col_upper

A backend is one small class: capability flags as class attributes, its solver imported
inside ``solve``, solver statuses mapped through a table. The result keeps two separate
things (Pyomo's split): why the solver stopped (``termination``) and what the returned point
is (``status``). Only ``status == "optimal"`` is an answer; every other status is reported,
never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class LinearProgram:
    c: np.ndarray
    A: sp.csc_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape


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

    @property
    def ok(self) -> bool:
        return self.status == "optimal" and self.x is not None


class Backend:
    """Base class; subclasses set the flags and implement ``solve_lp``."""

    name: ClassVar[str] = "base"
    supports_lp: ClassVar[bool] = True
    supports_qp: ClassVar[bool] = False

    def available(self) -> tuple[bool, str]:
        """(True, "") if usable here, else (False, why)."""
        return True, ""

    def solve_lp(self, lp: LinearProgram, *, time_limit: float | None = None, tol: float = 1e-9) -> LPSolution:
        raise NotImplementedError
