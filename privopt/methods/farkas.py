"""A Farkas ray of an infeasible linear program, from any LP backend (issue 22; docs/verification.md).

An LP ``lo <= A x <= hi``, ``l <= x <= u`` is infeasible exactly when its phase-1 program

    minimize  sum_i (s+_i + s-_i)   subject to  lo <= A x + s+ - s- <= hi,  l <= x <= u,  s+, s- >= 0

has a positive optimum P. Its row multipliers ``y`` at the optimum (``|y_i| <= 1``, strong
duality) give ``sum_i y_i t_i + sum_j min(r_j l_j, r_j u_j) = P`` with ``r = -A'y``: the bound
``verification.exact.farkas`` re-proves without a solver, for which ``y`` need only be what it
is (weak duality, whatever the solver returned). ``ray`` returns ``y`` only once that bound,
computed exactly, is positive.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..backends.base import LinearProgram
from ..verification.exact import farkas


def phase_one(lp: LinearProgram) -> LinearProgram:
    """The phase-1 program of ``lp`` (module docstring): columns ``[x, s+, s-]``, the rows of
    ``lp`` with ``+ s+ - s-``, the objective the slacks' sum."""
    m, n = lp.A.shape
    eye = sp.identity(m, format="csc")
    A = sp.hstack([sp.csc_array(lp.A), eye, -eye], format="csc")
    return LinearProgram(
        np.concatenate([np.zeros(n), np.ones(2 * m)]),
        A,
        np.asarray(lp.row_lower, dtype=float),
        np.asarray(lp.row_upper, dtype=float),
        np.concatenate([lp.col_lower, np.zeros(2 * m)]),
        np.concatenate([lp.col_upper, np.full(2 * m, np.inf)]),
    )


def ray(lp: LinearProgram, backend) -> np.ndarray | None:
    """Row multipliers proving ``lp`` infeasible (``farkas`` positive, exactly), from the
    phase-1 program solved on ``backend``; None when its solve is not optimal or its multipliers
    prove nothing (``lp`` feasible, or infeasible by less than the solver's rounding)."""
    sol = backend.solve(phase_one(lp), tol=1e-9)
    if not sol.ok or sol.row_dual is None:
        return None
    y = np.asarray(sol.row_dual, dtype=float)
    proven = farkas(lp, y)
    return y if proven is not None and proven > 0 else None
