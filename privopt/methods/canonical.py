"""The canonical program (``core.canonical.CanonicalProgram``) of a problem, for the plan's
census (``privopt explain --json``).

This is the plan's minimal version (issue 20, tranche 1; the canonical-lowering branch replaces
it): an LP or QP is ``lower.mechanism.lower_mechanism(problem).lp`` with its fields as they are
(``c``, ``A``, row and column bounds, ``Q``); a noise placement is the conic program
``lower.noise.ConicProgram.to_cvxpy`` builds (soc form), counted set by set: its structure (columns,
zero and nonnegative rows, cones with their slack columns), not its coefficients, which stay
with cvxpy. Other classes have no canonical program yet (None).
"""

from __future__ import annotations

import numpy as np

from ..core.canonical import CanonicalProgram, Cone


def canonical_program(problem, method: str, pairwise: bool = False) -> CanonicalProgram | None:
    """The canonical program ``method`` solves for ``problem``: "lp"/"qp" (the budgets as
    envelope rows, or ``pairwise``), "conic" (noise placement); None for any other method."""
    if method in ("lp", "qp"):
        from ..lower.mechanism import lower_mechanism

        lp = lower_mechanism(problem, pairwise=pairwise).lp
        return CanonicalProgram(c=lp.c, A=lp.A, row_lower=lp.row_lower, row_upper=lp.row_upper,
                                col_lower=lp.col_lower, col_upper=lp.col_upper, Q=lp.Q)
    if method == "conic":
        from ..lower.noise import lower_noise

        return _conic_shape(lower_noise(problem.noise))
    return None


class _Shape:
    """Columns (with their bounds), rows (zero or nonnegative) and cones, appended in order."""

    def __init__(self):
        self.col_lower: list[np.ndarray] = []
        self.zero = 0
        self.nonneg = 0
        self.cones: list[Cone] = []
        self.n = 0

    def columns(self, k: int, lower: float = -np.inf) -> int:
        self.col_lower.append(np.full(k, lower))
        self.n += k
        return self.n - k

    def cone(self, kind: str, size: int) -> None:
        """A cone over ``size`` new slack columns, each held equal to its affine image (a zero row)."""
        self.cones.append(Cone(kind, self.columns(size), size))
        self.zero += size

    def program(self) -> CanonicalProgram:
        import scipy.sparse as sp

        lo = np.concatenate(self.col_lower) if self.col_lower else np.zeros(0)
        rows = self.zero + self.nonneg
        row_lower = np.concatenate([np.zeros(self.zero), np.full(self.nonneg, -np.inf)])
        return CanonicalProgram(c=np.zeros(self.n), A=sp.csc_array((rows, self.n)), row_lower=row_lower,
                                row_upper=np.zeros(rows), col_lower=lo, col_upper=np.full(self.n, np.inf),
                                cones=tuple(self.cones))


def _conic_shape(program) -> CanonicalProgram:
    """The soc form of ``ConicProgram.to_cvxpy``: per diagonal block its variances (>= 0); for
    every input j and diagonal coordinate i a share u_ji and a reach z_ji in the rotated cone
    ``z^2 <= u s`` (a 3-dimensional soc), the z's free or solved (``reach_free``); ``sum_i u_ji
    <= t_j`` (a nonnegative row per input); ``G z_j = f_j`` (zero rows) unless solved; per
    correlated block its covariance (a psd cone) and, per input, ``matrix_frac(y_j, C) <=
    tau_j`` (a psd cone of order size + 1)."""
    n = program.F.shape[1]
    m = program.F.shape[0]
    diag = [b for b in program.blocks if not b.correlated]
    corr = [b for b in program.blocks if b.correlated]
    N = sum(b.size for b in diag)
    shape = _Shape()
    shape.columns(N, 0.0)
    for b in corr:
        shape.cone("psd", b.size * (b.size + 1) // 2)
    if n == 0:
        return shape.program()
    free = program.reach_free if not corr else None
    if diag:
        shape.columns(n * N)  # U
        if free is None:
            shape.columns(n * N)  # Z
        elif free[1].shape[1]:
            shape.columns(n * free[1].shape[1])
        for _ in range(n * N):
            shape.cone("soc", 3)
    for b in corr:
        shape.columns(n * b.size + n)  # Y, tau
        for _ in range(n):
            shape.cone("psd", (b.size + 1) * (b.size + 2) // 2)
    shape.nonneg += n  # the budgets
    if not diag or free is None:
        shape.zero += n * m  # the reach
    return shape.program()
