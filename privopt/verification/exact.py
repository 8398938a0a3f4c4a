"""Exact rational arithmetic on the floats of a linear program (issue 22): ``privopt verify``'s
weak-duality bounds and Farkas rays, numpy and Python integers only.

Every double is a dyadic rational ``M 2^E`` (an integer ``|M| < 2^53``), so a sum of products of
floats is an integer over a power of two: ``dyadic`` turns a vector of floats into integers over
one power of two (a shift each), products of two such vectors are integers over the product of
their powers, and one ``Fraction`` is made at the end. This is the value a ``Fraction`` per entry
gives, at a fraction of the cost (no gcd per operation).

* ``exact_lagrangian(lp, y)``: ``methods.lp.lagrangian_bound`` exactly: for every feasible x,
  ``c x >= sum_i y_i t_i + sum_j min(r_j l_j, r_j u_j)``, ``r = c - A'y``, ``t_i`` the row's
  lower bound where ``y_i > 0``, its upper where ``y_i < 0`` (weak duality, any ``y``);
* ``farkas(lp, y)``: the same with ``c = 0``. Every feasible x has ``0 >= farkas(lp, y)``, so a
  positive value proves the program infeasible (Farkas' lemma in its bounded form: ``y`` is a
  ray of the dual); the value is homogeneous in ``y``, any positive multiple proves the same.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def dyadic(values) -> tuple[list[int], int]:
    """Finite floats as integers over one power of two, exactly: ``values[k] == N[k] * 2**e``.
    Every double is ``M 2^E`` with an integer ``|M| < 2^53`` (``numpy.frexp``: mantissa in [0.5,
    1) times 2^53), so ``N[k] = M_k << (E_k - e)`` with ``e`` the least ``E``: Python integers, one
    shift each, in place of a ``Fraction`` (a gcd per operation) per entry."""
    m, ex = np.frexp(np.asarray(values, dtype=float))
    M = (m * 9007199254740992.0).astype(np.int64)  # m 2^53: an integer, exactly
    E = ex.astype(np.int64) - 53
    nz = M != 0
    e = int(E[nz].min()) if nz.any() else 0
    return [a << s for a, s in zip(M.tolist(), np.where(nz, E - e, 0).tolist())], e


def _scaled(n: int, e: int, base: int) -> int:
    """``n 2^e`` as an integer over ``2^base`` (``base <= e``)."""
    return n << (e - base)


def as_fraction(n: int, e: int) -> Fraction:
    """``n 2^e`` as a ``Fraction``."""
    return Fraction(n << e) if e >= 0 else Fraction(n, 1 << -e)


def exact_lagrangian(lp, y: np.ndarray, c: np.ndarray | None = None) -> Fraction | None:
    """``methods.lp.lagrangian_bound`` of a linear program in exact rational arithmetic: every
    float (c, A, the row and column bounds, y) taken exactly. ``c`` replaces the program's
    objective (zeros: the Farkas form, ``farkas``). None when a needed bound is infinite (no
    finite bound follows) or a number is not finite.

    Every float is a dyadic rational, so the sum is computed in integers (``dyadic``): the
    reduced costs ``r = c - A'y`` over the rows with a nonzero multiplier (their columns only),
    then ``sum_i y_i t_i + sum_j r_j end_j``, each product of two integers over ``2^(e1 + e2)``;
    one ``Fraction`` at the end. The same value as a ``Fraction`` per entry, without a gcd per
    operation."""
    c = lp.c if c is None else c
    y = np.asarray(y, dtype=float).copy()
    y[~np.isfinite(y) | ((y > 0) & ~np.isfinite(lp.row_lower)) | ((y < 0) & ~np.isfinite(lp.row_upper))] = 0.0
    live = np.flatnonzero(y)
    A = lp.A if getattr(lp.A, "format", None) == "csr" else lp.A.tocsr()
    per_row = np.diff(A.indptr)
    entries = np.repeat(y != 0, per_row)  # the entries of the live rows
    data, cols_of = A.data[entries], A.indices[entries]
    rows_of = (np.cumsum(y != 0) - 1)[np.repeat(np.arange(A.shape[0]), per_row)[entries]]  # positions in ``live``
    if not (np.isfinite(c).all() and np.isfinite(data).all()):
        return None
    t = np.where(y[live] > 0, lp.row_lower[live], lp.row_upper[live])
    Ny, ey = dyadic(y[live])
    Nt, et = dyadic(t)
    rows_sum = sum((a * b for a, b in zip(Ny, Nt)), 0)  # over 2^(ey + et)
    NA, eA = dyadic(data)
    Nc, ec = dyadic(c)
    base = min(ec, eA + ey)
    r = [_scaled(v, ec, base) for v in Nc]  # c - A'y over 2^base
    shift = eA + ey - base
    for a, i, j in zip(NA, rows_of.tolist(), cols_of.tolist()):
        r[j] -= (a * Ny[i]) << shift
    cols = [j for j, v in enumerate(r) if v]
    ends = np.array([lp.col_lower[j] if r[j] > 0 else lp.col_upper[j] for j in cols], dtype=float)
    if not np.isfinite(ends).all():
        return None
    Ne, ee = dyadic(ends)
    box = sum((r[j] * n for j, n in zip(cols, Ne)), 0)  # over 2^(base + ee)
    low = min(ey + et, base + ee)
    return as_fraction(_scaled(rows_sum, ey + et, low) + _scaled(box, base + ee, low), low)


def farkas(lp, y: np.ndarray) -> Fraction | None:
    """The bound ``y`` proves on ``0`` over ``lp``'s rows and box, exactly (module docstring): a
    positive value proves ``lp`` infeasible; None when a needed bound is infinite."""
    return exact_lagrangian(lp, y, np.zeros(lp.A.shape[1]))
