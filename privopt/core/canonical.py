"""The canonical program every LP, QP, MILP and conic route lowers to.

    minimize    c @ x + 1/2 x @ Q @ x          (Q symmetric positive semidefinite, or None)
    subject to  row_lower <= A @ x <= row_upper (a row with row_lower == row_upper is a "zero"
                                                  set row, any other a "nonnegative" one)
                col_lower <= x <= col_upper
                x[cone.start : cone.start + cone.size] in cone.kind  for every cone
                x[j] integer                     where integrality[j]

A second-order cone ``soc`` of size k is ``{(t, u) : |u|_2 <= t}`` over k consecutive columns;
a ``psd`` cone of size k = n (n + 1) / 2 is an n x n symmetric matrix by its lower triangle,
column by column (scaled so the inner product is the trace's, as in SCS and Clarabel).
Columns in cones are the affine images a lowering introduces (MathOptInterface's
``VectorAffineFunction``-in-set written with slack columns), so every set is over variables.

The LP is the special case with no Q, no cones and no integers. Backends declare which parts
they take (``backends.base.Backend.capabilities``) and the plan picks among them.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np

from ..records import Record

CONE_KINDS = ("soc", "psd")


class Cone(Record):
    """``x[start : start + size]`` lies in the cone ``kind`` (``soc`` or ``psd``)."""

    kind: str
    start: int
    size: int

    def __post_init__(self):
        if self.kind not in CONE_KINDS:
            raise ValueError(f"unknown cone '{self.kind}'; cones: {', '.join(CONE_KINDS)}")

    @property
    def order(self) -> int:
        """The matrix order n of a psd cone (size n (n + 1) / 2); the size of a soc."""
        if self.kind == "psd":
            return int((np.sqrt(8 * self.size + 1) - 1) // 2)
        return self.size


def psd_layout(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, scale) of a psd cone's k = n (n + 1) / 2 columns: column k holds
    ``scale[k] * X[i[k], j[k]]`` of the n x n symmetric matrix X, over its lower triangle
    (i >= j) column by column, with ``scale = 1`` on the diagonal and ``sqrt(2)`` off it, so
    that ``x' y = tr(X Y)`` for the packed x, y of X, Y (SCS's and Clarabel's ``svec``).
    X is recovered as ``X[i, j] = X[j, i] = x[k] / scale[k]``."""
    j, i = np.triu_indices(n)  # (j, i) with j <= i, ordered by j then i: the lower triangle by column
    scale = np.where(i == j, 1.0, np.sqrt(2.0))
    return i, j, scale


class CanonicalProgram(Record):
    """The program of this module's docstring. The first seven fields are those of the LP
    (``backends.base.LinearProgram``, an alias of this class), in its order, so an LP is built
    as before; ``cones``, ``integrality`` and ``offset`` default to none."""

    c: np.ndarray
    A: Any  # scipy.sparse matrix (m x n), csc for the backends
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    Q: Any = None  # scipy.sparse (n x n) or None: the quadratic term 1/2 x'Qx
    cones: tuple[Cone, ...] = ()
    integrality: np.ndarray | None = field(default=None, repr=False)  # bool per column, or None: none integer
    offset: float = 0.0  # a constant added to the objective (reported, not solved)

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape

    @property
    def is_qp(self) -> bool:
        return self.Q is not None and self.Q.nnz > 0

    @property
    def n_integers(self) -> int:
        return 0 if self.integrality is None else int(np.count_nonzero(self.integrality))

    @property
    def needs(self) -> frozenset[str]:
        """The capabilities a backend must have to solve this program: "quadratic",
        "integer", and each cone kind present."""
        out = set(c.kind for c in self.cones)
        if self.is_qp:
            out.add("quadratic")
        if self.n_integers:
            out.add("integer")
        return frozenset(out)

    def census(self) -> dict[str, Any]:
        """What the program is made of, as ``privopt explain --json`` prints it:
        {"variables": n, "integers": k, "objective": "linear" | "quadratic",
        "constraints": {"zero": rows held equal, "nonnegative": one-sided or ranged rows (a
        ranged row counts twice) and finite column bounds, "soc": cones, "psd": cones}}."""
        lo, hi = np.asarray(self.row_lower, float), np.asarray(self.row_upper, float)
        eq = np.isfinite(lo) & (lo == hi)
        rows_nonneg = int(np.count_nonzero(np.isfinite(lo) & ~eq) + np.count_nonzero(np.isfinite(hi) & ~eq))
        cols = int(np.count_nonzero(np.isfinite(self.col_lower)) + np.count_nonzero(np.isfinite(self.col_upper)))
        return {
            "variables": int(self.shape[1]),
            "integers": self.n_integers,
            "objective": "quadratic" if self.is_qp else "linear",
            "constraints": {
                "zero": int(np.count_nonzero(eq)),
                "nonnegative": rows_nonneg + cols,
                "soc": sum(1 for k in self.cones if k.kind == "soc"),
                "psd": sum(1 for k in self.cones if k.kind == "psd"),
            },
        }


class ProgramBuilder:
    """A canonical program assembled block by block, for a lowering that writes its columns,
    cones and rows in numpy arrays (vectorized: one call per block, not per entry).

    ``columns`` and ``cones`` append columns (a cone's are consecutive) and return their
    indices; ``rows`` appends rows ``lower <= . <= upper`` and returns theirs; ``terms(rows,
    cols, values)`` adds coefficients ``A[rows, cols] += values`` (broadcast together, zeros
    dropped); ``build()`` is the program (scipy.sparse imported there)."""

    def __init__(self):
        self.n = 0  # columns so far
        self.m = 0  # rows so far
        self._cost: list[np.ndarray] = []
        self._col_lo: list[np.ndarray] = []
        self._col_hi: list[np.ndarray] = []
        self._row_lo: list[np.ndarray] = []
        self._row_hi: list[np.ndarray] = []
        self._entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._cones: list[Cone] = []

    def columns(self, count: int, lower=-np.inf, upper=np.inf, cost=0.0) -> np.ndarray:
        """``count`` new columns with these bounds and objective coefficients (scalars or arrays)."""
        idx = self.n + np.arange(count)
        for out, value in ((self._col_lo, lower), (self._col_hi, upper), (self._cost, cost)):
            out.append(np.broadcast_to(np.asarray(value, dtype=float), (count,)))
        self.n += count
        return idx

    def cones(self, kind: str, count: int, size: int, cost=0.0) -> np.ndarray:
        """``count`` cones ``kind`` of ``size`` free columns each; their columns as (count, size)."""
        idx = self.columns(count * size, cost=np.broadcast_to(np.asarray(cost, dtype=float), (count, size)).ravel())
        self._cones += [Cone(kind, int(self.n - count * size + k * size), size) for k in range(count)]
        return idx.reshape(count, size)

    def rows(self, count: int, lower, upper) -> np.ndarray:
        """``count`` new rows ``lower <= A x <= upper`` (a row with lower == upper is a zero set row)."""
        idx = self.m + np.arange(count)
        self._row_lo.append(np.broadcast_to(np.asarray(lower, dtype=float), (count,)))
        self._row_hi.append(np.broadcast_to(np.asarray(upper, dtype=float), (count,)))
        self.m += count
        return idx

    def terms(self, rows, cols, values) -> None:
        r, c, v = np.broadcast_arrays(np.asarray(rows), np.asarray(cols), np.asarray(values, dtype=float))
        keep = v != 0
        self._entries.append((r[keep].ravel(), c[keep].ravel(), v[keep].ravel()))

    def build(self, offset: float = 0.0) -> CanonicalProgram:
        import scipy.sparse as sp

        def cat(parts):
            return np.concatenate(parts) if parts else np.zeros(0)

        r, c, v = (cat([e[k] for e in self._entries]) for k in range(3))
        A = sp.csc_matrix((v, (r.astype(np.int64), c.astype(np.int64))), shape=(self.m, self.n))  # duplicates summed
        return CanonicalProgram(
            cat(self._cost),
            A,
            cat(self._row_lo),
            cat(self._row_hi),
            cat(self._col_lo),
            cat(self._col_hi),
            cones=tuple(self._cones),
            offset=offset,
        )
