"""A second-order bound on an LP block's value inside a cell of budgets, from LP weak duality
(issue 21, item 3; docs/blocks.md, "How far the split's bound closes").

The block's LP at budget ``eps`` (``lower.mechanism.lower_mechanism``, rows scaled by
``s = e^-eps``) has rows whose coefficients and bounds are affine in ``s``, and ``c`` and the
box ``l <= x <= u`` do not depend on eps (``ParametricLP.make`` checks all of it at three
budgets and refuses otherwise). A row that depends on ``s``, times ``t = e^eps = 1/s``, is
affine in ``t``: the LP is ``min c'x`` s.t. ``lo(t) <= (A0 + t A1) x <= hi(t)``, ``l <= x <= u``
(the t-form). For ANY row multipliers ``y``, weak duality with the box kept explicit gives

    L(y, t) = sum_i y_i side_i(t) + sum_j min(r_j l_j, r_j u_j),  r = c - (A0 + t A1)' y

(``side_i``: the row's lower bound where ``y_i > 0``, its upper where ``y_i < 0``).

**Why one fixed y is not enough.** ``L(y_b, .)`` is concave in ``t`` and exact at ``b`` with the
optimal duals, but the basic columns (``r_j = 0`` at ``b``) leave their optimal values for a
bound of the box as soon as ``t`` moves, so its slope is the worst over the box, not the
envelope slope ``-y' A1 x*``: first-order error, no better than monotonicity.

**The bound used** (``Cell``): multipliers that move with ``t``, ``y(t) = y_b + d dy`` with
``d = t - t_b`` and ``dy`` the least-squares solution of ``(A1' y_b + A(t_b)' dy)_J = 0`` over the
columns ``J`` strictly inside their box at the optimum ``x*`` (so their reduced costs move only
at second order), ``dy`` nonzero only on the rows whose duals are nonzero (and on none whose
dual would change sign in the cell). Then exactly

    L(y(t), t) = q0 + q1 d + q2 d^2 + sum_j E_j(d),   E_j(d) = min_{l_j <= x <= u_j} r_j(d) (x - x*_j) <= 0,

with ``r(d) = r0 + r1 d + r2 d^2`` (``r0 = c - A(t_b)' y_b``, ``r1 = -(A1' y_b + A(t_b)' dy)``,
``r2 = -A1' dy``) and ``q`` the rows' and ``r' x*``'s terms. On a cell ``[a, b]`` each ``E_j`` is
at least its least value over the range of ``r_j(d)`` (exact for a quadratic, ``E``: the sum),
and ``q2 d^2 >= min(q2, 0) d^2``, so ``V(e) >= L(y(t), t) >= q~(t) + E`` with ``q~ = q0 + q1 d +
min(q2, 0) d^2`` concave in ``t``; ``lam * eps = lam ln t`` is concave too, hence

    min_{a <= e <= b} V(e) + lam e  >=  min(q~(e^a) + E + lam a,  q0 + E + lam b),

an error second order in the cell's width.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

AFFINE_RTOL = 1e-12  # entries must be affine in s = e^-eps to rounding (relative to the largest)
PROBES = (0.0, 0.5, 1.0)  # the budgets the affine structure is established at
INSIDE = 1e-9  # a column within this of a box end is at that end (not in J)
DROPS = 8  # least-squares rounds dropping the rows whose multiplier would change sign
KINK_STEPS = 30  # bisection steps for a cell's cut (``TermDual.kink``): 2^-30 of the cell's width in t
DENSE_LSQ = 4_000_000  # entries of A[R, J] up to which dy is solved densely (exact min-norm), else by LSQR


def mechanism_lp(problem):
    """The block's program as a ``MechanismLP`` (``lower.mechanism.lower_mechanism``) when it is
    a mechanism LP (a design table, linear constraints and an affine objective), else None."""
    from ..lower.mechanism import lower_mechanism
    from ..model.problem import LinearConstraint

    linear = getattr(problem, "design", None) is not None and problem.objective.curvature == "affine"
    if linear and all(isinstance(c, LinearConstraint) for c in problem.constraints):
        return lower_mechanism(problem)
    return None


def _affine(vals: list, s: list[float]):
    """``(slope, intercept)`` in ``s`` of a quantity at the three probes, or None when the
    middle probe is off the line (beyond ``AFFINE_RTOL``)."""
    slope = (vals[2] - vals[0]) / (s[2] - s[0])
    icpt = vals[0] - slope * s[0]
    off = icpt + slope * s[1] - vals[1]
    scale = max(1.0, *(float(abs(v).max()) if np.size(v) else 0.0 for v in vals))
    size = off.nnz if sp.issparse(off) else off.size
    if size and float(abs(off).max()) > AFFINE_RTOL * scale:
        return None
    return slope, icpt


@dataclass(frozen=True)
class ParametricLP:
    """A block's LP as a function of its budget in the t-form (module docstring): ``A0 + t A1``,
    row bounds ``lo0 + t lo1``, ``hi0 + t hi1``; ``rows`` marks the rows that depend on eps;
    ``at(eps)`` lowers the block (the s-form, solved for the duals); ``units`` maps the LP's
    ``c x`` to the block's objective (``sign * scale * v + const``)."""

    at: Callable[[float], object]  # eps -> MechanismLP
    c: np.ndarray
    A0: object
    A1: object
    lo: tuple[np.ndarray, np.ndarray]
    hi: tuple[np.ndarray, np.ndarray]
    col_lower: np.ndarray
    col_upper: np.ndarray
    rows: np.ndarray
    units: tuple[float, float]  # (sign * scale, const)

    @staticmethod
    def make(lower: Callable[[float], object | None]) -> ParametricLP | None:
        """The block's LP family when every row is affine in ``s = e^-eps`` and the objective,
        box and shape do not depend on eps, checked at ``PROBES``; None otherwise, or when
        ``lower`` (eps -> MechanismLP, None where the block is not a mechanism LP) gives None
        (the split then bounds the block by monotonicity alone)."""
        m = [lower(e) for e in PROBES]
        if any(x is None for x in m):
            return None
        lps = [x.lp for x in m]
        first = lps[0]
        if any(lp.Q is not None or lp.cones or lp.integrality is not None for lp in lps):
            return None
        if any(lp.shape != first.shape for lp in lps):
            return None
        for f in ("c", "col_lower", "col_upper"):
            if any(not np.array_equal(getattr(lp, f), getattr(first, f)) for lp in lps[1:]):
                return None
        if any((x.sign, x.scale, x.const) != (m[0].sign, m[0].scale, m[0].const) for x in m[1:]):
            return None
        s = [math.exp(-e) for e in PROBES]
        mat = _affine([sp.csr_array(lp.A, dtype=float) for lp in lps], s)
        if mat is None:
            return None
        P, Q = mat
        rows = np.asarray(abs(P).sum(axis=1)).ravel() > 0
        sides = []
        for f in ("row_lower", "row_upper"):
            fin = np.isfinite(getattr(first, f))
            if any(not np.array_equal(np.isfinite(getattr(lp, f)), fin) for lp in lps[1:]):
                return None
            line = _affine([np.where(fin, getattr(lp, f), 0.0) for lp in lps], s)
            if line is None:
                return None
            rows |= line[0] != 0
            sides.append((line, fin))
        D = sp.diags_array(rows.astype(float))
        I_D = sp.diags_array((~rows).astype(float))
        A0, A1 = sp.csr_array(D @ P + I_D @ Q), sp.csr_array(D @ Q)  # t-row = t * s-row on the eps rows
        bounds = []
        for (slope, icpt), fin in sides:
            b0 = np.where(rows, slope, icpt)
            b1 = np.where(rows, icpt, 0.0)
            inf = np.where(fin, 0.0, getattr(first, "row_lower" if not bounds else "row_upper"))
            bounds.append((np.where(fin, b0, inf), np.where(fin, b1, 0.0)))
        return ParametricLP(
            lower, first.c, A0, A1, bounds[0], bounds[1], first.col_lower, first.col_upper, rows,
            (m[0].sign * m[0].scale, m[0].const),
        )  # fmt: skip

    def solve(self, eps: float, backend) -> tuple[np.ndarray, np.ndarray] | None:
        """``(x*, y)`` at ``eps`` (``t_form``) from a solve of the lowered LP; None when it is not optimal."""
        sol = backend.solve(self.at(eps).lp, tol=1e-9)
        if not sol.ok or sol.row_dual is None or sol.x is None:
            return None
        return self.t_form(eps, sol.x, sol.row_dual)

    def t_form(self, eps: float, x, row_dual) -> tuple[np.ndarray, np.ndarray] | None:
        """``(x*, y)``: a point of the lowered LP at ``eps`` and its row multipliers in the t-form
        (the s-form's times ``e^-eps`` on the eps rows; a multiplier of a sign whose side is
        infinite set to 0, as weak duality allows); None when their shapes are not the LP's."""
        x, y = np.asarray(x, dtype=float), np.asarray(row_dual, dtype=float)
        if x.shape != self.c.shape or y.shape != self.rows.shape:
            return None
        y = np.where(self.rows, y * math.exp(-eps), y)
        y[~np.isfinite(y) | ((y > 0) & ~np.isfinite(self.lo[0])) | ((y < 0) & ~np.isfinite(self.hi[0]))] = 0.0
        return x, y

    def matrix(self, t: float):
        return sp.csr_array(self.A0 + t * self.A1)

    def side(self, y: np.ndarray, t: float) -> np.ndarray:
        """Each row's bound on the side of its multiplier's sign (0 where ``y_i = 0``)."""
        lo = self.lo[0] + t * self.lo[1]
        hi = self.hi[0] + t * self.hi[1]
        return np.where(y > 0, lo, np.where(y < 0, hi, 0.0))


@dataclass(frozen=True)
class Cell:
    """A point's certificate for the cells on either side of it (module docstring): its budget
    ``eps_b``, optimum ``x`` and t-form duals ``y``. ``bounds(eps_a)`` gives ``(q~(e^a) + E, q0 +
    E)`` in the block's objective units (a minimizing block's lower bounds), the concave bound's
    values at the cell's other end ``eps_a`` (below or above ``eps_b``) and at the point; ``line``
    the same bound as a function of ``t``. ``dy`` is recomputed from ``x`` and ``y`` (``recheck``
    needs only these)."""

    lp: ParametricLP
    eps_b: float
    x: np.ndarray
    y: np.ndarray
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)  # "base", rows kept -> dy, ...

    def bounds(self, eps_a: float) -> tuple[float, float]:
        line = self.line(eps_a)
        return line.at(math.exp(eps_a)), line.at(line.tb)

    def motion(self, eps_a: float) -> np.ndarray:
        """The duals' motion ``dy`` ``line(eps_a)`` uses (memoized: what a result records)."""
        return self._dy(self._base(), math.exp(eps_a) - math.exp(self.eps_b))

    def line(self, eps_a: float) -> Line:
        """The concave lower bound ``q~(t) + E`` on the interval between ``e^eps_a`` and ``t_b``."""
        f, tb, base = self.lp, math.exp(self.eps_b), self._base()
        da = math.exp(eps_a) - tb
        dy = self._dy(base, da)
        motion = self._moving(base, dy, da)
        E = _loss(base.r0, motion, da, base.reach)
        return Line(tb, motion.q0 + E, motion.q1, min(motion.q2, 0.0), *f.units)

    def _moving(self, base: _Base, dy: np.ndarray, da: float) -> _Moving:
        """The reduced costs' and the rows' terms of ``L(y(t), t)`` for the motion ``dy`` toward
        the side of ``da`` (module docstring): the same for every ``d`` of that side with that
        motion, so computed once per (side, motion) (``TermDual.kink`` asks dozens of times)."""
        key = ("moving", math.copysign(1.0, da) if da else 0.0, dy.tobytes())
        if key not in self.memo:
            f, tb, yb = self.lp, math.exp(self.eps_b), self.y
            r1 = -(base.a1y + base.AbT @ dy)
            r2 = -(base.A1T @ dy)
            # rows: sum_i y_i(d) side_i(t), the side of y_i(d)'s sign, fixed in the cell (``_dy``)
            sign = np.where(yb != 0, np.sign(yb), np.sign(da) * np.sign(dy))
            side0 = f.side(sign, tb)
            side1 = np.where(sign > 0, f.lo[1], np.where(sign < 0, f.hi[1], 0.0))
            q0 = float(yb @ side0 + base.r0 @ self.x)
            q1 = float(dy @ side0 + yb @ side1 + r1 @ self.x)
            q2 = float(dy @ side1 + r2 @ self.x)
            r0 = base.r0
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.where(r2 != 0, -r1 / (2 * r2), np.nan)
            self.memo[key] = _Moving(r1, r2, q0, q1, q2, r0 + r1 * 0.0 + r2 * 0.0 * 0.0, v, r0 + r1 * v + r2 * v * v)
        return self.memo[key]

    def _base(self) -> _Base:
        """What every ``line`` of this point shares (computed once): ``A(t_b)``, its transpose,
        ``A1'``, ``r0``, ``A1' y_b``, the columns ``J`` and rows ``R`` of the dual motion (``_dy``)
        and the box's reach from ``x*`` (``_loss``)."""
        if "base" not in self.memo:
            f, y, x = self.lp, self.y, self.x
            tb = math.exp(self.eps_b)
            Ab = f.matrix(tb)
            AbT = sp.csr_array(Ab.T)
            r0 = f.c - AbT @ y
            tol = INSIDE * max(1.0, float(np.abs(f.c).max(initial=0.0)))
            J = np.flatnonzero(((x > f.col_lower + INSIDE) & (x < f.col_upper - INSIDE)) | (np.abs(r0) <= tol))
            ax = Ab @ x
            lo, hi = f.lo[0] + tb * f.lo[1], f.hi[0] + tb * f.hi[1]
            active = (np.abs(ax - np.where(np.isfinite(lo), lo, np.inf)) <= INSIDE) | (
                np.abs(ax - np.where(np.isfinite(hi), hi, np.inf)) <= INSIDE
            )
            A1T = f.A1.T
            reach = np.stack([f.col_lower - x, f.col_upper - x])
            self.memo["base"] = _Base(Ab, AbT, A1T, r0, A1T @ y, J, np.flatnonzero((y != 0) | active), reach)
        return self.memo["base"]

    def _dy(self, base: _Base, da: float) -> np.ndarray:
        """The duals' motion (module docstring) over ``d`` between 0 and ``da`` (either sign):
        least squares keeping the reduced costs of the columns inside their box, or at a bound
        with a zero reduced cost, unmoved to first order, over the rows active at ``x*``; a row
        whose multiplier would change sign in the cell, or take a sign whose side is infinite,
        is dropped (zero: always valid)."""
        R, side = base.R, float(np.sign(da))
        for _ in range(DROPS):
            drop = self._rows(base, R, side)
            bad, R = drop.after((drop.y_turn + da * drop.dy_turn) * drop.y_turn < 0)
            if bad is None:
                return drop.dy
        return np.where(bad, 0.0, drop.dy)  # the rows still bad keep their multiplier fixed

    def _rows(self, base: _Base, R: np.ndarray, side: float) -> _Drop:
        """The round of ``_dy`` over the rows ``R`` toward the side ``side`` (the sign of ``da``),
        memoized per rows and side (``dy`` per rows)."""
        key = (R.tobytes(), side)
        if key not in self.memo:
            y, f = self.y, self.lp
            if key[0] not in self.memo:
                self.memo[key[0]] = _least_squares(base.Ab, R, base.J, -base.a1y[base.J], y.size)
            dy = self.memo[key[0]]
            sign = np.where(y != 0, np.sign(y), side * np.sign(dy))  # y_i(d) for d between 0 and da
            off = ((sign > 0) & ~np.isfinite(f.lo[0])) | ((sign < 0) & ~np.isfinite(f.hi[0]))
            turn = np.flatnonzero((y != 0) & (dy != 0) & ~(side * np.sign(dy) == np.sign(y)))
            self.memo[key] = _Drop(R, dy, off, turn, y[turn], dy[turn])
        return self.memo[key]


@dataclass
class _Drop:
    """One round of ``Cell._dy`` toward one side of the point: the motion ``dy`` over the rows
    ``R``, the rows ``off`` whose multiplier would take a sign whose side is infinite, and the rows
    ``turn`` whose multiplier can change sign in the cell (``y_i != 0`` and ``da dy_i`` not of its
    sign; every other row keeps its sign for every ``da`` of that side), with their ``y`` and
    ``dy``. ``after(turned)`` is, for which of ``turn`` do change sign at ``da``, the rows dropped
    (None: none) and the rows kept (memoized: the bisection of ``TermDual.kink`` meets the same
    few patterns again and again)."""

    R: np.ndarray
    dy: np.ndarray
    off: np.ndarray
    turn: np.ndarray
    y_turn: np.ndarray
    dy_turn: np.ndarray
    seen: dict = field(default_factory=dict, repr=False)

    def after(self, turned: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        key = turned.tobytes()
        if key not in self.seen:
            bad = self.off.copy()
            bad[self.turn] |= turned
            self.seen[key] = (bad, self.R[~bad[self.R]]) if bad.any() else (None, self.R)
        return self.seen[key]


@dataclass(frozen=True)
class _Base:
    """A point's shared algebra (``Cell._base``): ``A(t_b)`` and its transpose, ``A1'``, ``r0 =
    c - A(t_b)' y_b``, ``A1' y_b``, the columns ``J`` and rows ``R`` of its dual motion, and
    the rows ``l - x*`` and ``u - x*`` (``reach``, ``_loss``)."""

    Ab: object
    AbT: object
    A1T: object
    r0: np.ndarray
    a1y: np.ndarray
    J: np.ndarray
    R: np.ndarray
    reach: np.ndarray


@dataclass(frozen=True)
class _Moving:
    """A motion's share of ``L(y(t), t)`` (``Cell._moving``): the reduced costs' slope and
    curvature ``r1 = -(A1' y_b + A(t_b)' dy)``, ``r2 = -A1' dy``, and the coefficients ``q0, q1,
    q2`` of the rows' and ``r' x*``'s terms (the losses ``E`` not included); for ``_loss``,
    ``r(0)``, the vertex ``v = -r1 / (2 r2)`` of each ``r_j(d)`` (nan where ``r2_j = 0``) and ``r(v)``."""

    r1: np.ndarray
    r2: np.ndarray
    q0: float
    q1: float
    q2: float
    at0: np.ndarray
    vertex: np.ndarray
    top: np.ndarray


@dataclass(frozen=True)
class Line:
    """A cell's concave lower bound in the block's objective units: ``k (q0 + q1 d + q2 d^2) +
    const`` at ``t = t_b + d`` (``q2 <= 0``; ``q0`` includes the losses ``E``), valid between the
    point and the cell's other end it was made for."""

    tb: float
    q0: float
    q1: float
    q2: float
    k: float
    const: float

    def at(self, t: float) -> float:
        d = t - self.tb
        return self.k * (self.q0 + self.q1 * d + self.q2 * d * d) + self.const


def _least_squares(Ab, R: np.ndarray, J: np.ndarray, rhs: np.ndarray, m: int) -> np.ndarray:
    """``dy`` (zero off ``R``) near the least-squares solution of ``A[R, J]' dy_R = rhs``: the
    minimum-norm one by a dense SVD (``numpy.linalg.lstsq``) up to ``DENSE_LSQ`` entries, else by
    LSQR (any ``dy`` gives a proven bound; a good one a tight bound)."""
    dy = np.zeros(m)
    if not (R.size and J.size):
        return dy
    sub = sp.csr_array(Ab[R][:, J]).T
    if R.size * J.size <= DENSE_LSQ:
        dy[R] = np.linalg.lstsq(sub.toarray(), rhs, rcond=None)[0]
    else:
        from scipy.sparse.linalg import lsqr

        dy[R] = lsqr(sub, rhs, atol=1e-15, btol=1e-15, iter_lim=20 * (R.size + J.size))[0]
    return dy


def _loss(r0, m: _Moving, da: float, reach: np.ndarray) -> float:
    """``sum_j min over d between 0 and da`` (either sign) of ``E_j(d) = min_{lo_j <= z <= hi_j} r_j(d) (z - x_j)``
    (``r(d) = r0 + m.r1 d + m.r2 d^2``; ``reach``: the rows ``lo - x`` and ``hi - x``): each ``E_j`` is concave
    in ``r_j``, so its least value is at an end of the range of the quadratic ``r_j(d)`` over the
    interval (its ends and its vertex ``m.vertex`` where inside)."""
    inside = (m.vertex > min(da, 0.0)) & (m.vertex < max(da, 0.0))
    r = np.stack([r0 + m.r1 * da + m.r2 * da * da, m.at0, np.where(inside, m.top, r0)])
    ends = np.stack([r.min(axis=0), r.max(axis=0)])  # the range of each r_j(d)
    with np.errstate(invalid="ignore"):
        terms = (ends[:, None, :] * reach[None, :, :]).reshape(4, -1)  # (r, z - x) for both ends of each
    terms[np.isnan(terms)] = 0.0  # 0 * inf: the column cannot move
    return float(terms.min(axis=0).sum())


@dataclass(frozen=True)
class TermDual:
    """A point's certificate in the split's units: ``cell(x_a)`` is ``w`` times ``Cell.bounds``
    toward the cell's other end (share ``x_a``, below or above the point; ``eps = lo + x /
    scale``), ``w`` the block's weight of its sense's sign (so ``w`` times a bound on the block is
    a lower bound on the term)."""

    cell_cert: Cell
    weight: float
    lo: float
    scale: float

    def cell(self, x_a: float) -> tuple[float, float]:
        a, b = self.cell_cert.bounds(self.lo + x_a / self.scale)
        return self.weight * a, self.weight * b

    def kink(self, right: TermDual) -> float:
        """Where the cell between this point and the point above it (``right``) is best cut in
        two (``split`` bounds each part by its own end's certificate): the share ``k`` at which
        this point's bound on ``[x_a, k]`` and ``right``'s on ``[k, x_b]`` meet at ``k``, found by
        bisection on ``t`` (``KINK_STEPS``). Each bound is the one its piece uses, its losses ``E``
        over its own piece (``Cell.line`` toward ``k``), so at the cell's ends each is exact at its
        own point and at least the other's: the gap changes sign inside. Across a kink of the value
        curve (the optimal basis changes inside the cell) each end's bound is second order up to
        the kink and first order beyond it, so the meeting point is near the kink. -inf (+inf)
        when the bound from above (below) already meets the other end's value (it alone is used)."""
        ea, eb = self.cell_cert.eps_b, right.cell_cert.eps_b
        lo, hi = math.exp(ea), math.exp(eb)

        def gap(t: float) -> float:
            e = math.log(t)
            return self.weight * (self.cell_cert.line(e).at(t) - right.cell_cert.line(e).at(t))

        if gap(lo) <= 0:
            return -math.inf
        if gap(hi) >= 0:
            return math.inf
        for _ in range(KINK_STEPS):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
        return (math.log(0.5 * (lo + hi)) - self.lo) * self.scale
