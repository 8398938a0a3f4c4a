"""The certified split of one budget between blocks (issue 21, items 3 and 6; Ramon & Basu Sec. 3.4).

The program, over value oracles ``g_i`` (y -> the block's optimum at budget y, nonincreasing in y):

    minimize  sum_i g_i(y_i)   subject to  sum_i y_i <= E,  0 <= y_i <= u_i.

An oracle answers a point with a pair ``(value, bound)``: ``value`` is verified (achieved by a
checked solution: ``value >= g_i(y)``) and ``bound`` is proven (the block's certificate bound, or
a closed form's exact value: ``bound <= g_i(y)``); a plain number is an exact value (its own
bound). The upper bound uses values only, every lower bound uses bounds only. Each evaluated
point ``x`` is a dyadic fraction of the budget, ``x = E m / 2^L`` (``L = RESOLUTION``), so budget
sums are exact integer sums of numerators ``m``; ``Split.points`` records every point
``(share, value, bound)`` so that ``recheck`` can recompute the lower bound from them alone.

* **Upper bound** (a feasible split): evaluated points, one per block, whose numerators sum to
  at most ``2^L``; the best is a min-plus merge of the blocks' point lists (a knapsack over
  Pareto frontiers: weight = numerator, value = the verified value; among ties, the least weight).
* **Cells**: a feasible ``y_i`` lies in a cell ``[x_j, x_{j+1})`` of block i's points or is its
  top point ``u_i``; by monotonicity ``g_i(y_i) >= g_i(x_k) >= b_k`` for every point ``x_k >= y``,
  so the cell's item is ``(weight x_j, value B_{j+1})`` with ``B`` the suffix maximum of the
  proven bounds ``b``.
* **Lagrangian bound** (weak duality, any ``lam >= 0``): ``OPT >= D(lam) = sum_i h_i(lam) - lam E``
  with ``h_i(lam) = min_j (B_{j+1} + lam x_j) <= min_{0<=y<=u_i} g_i(y) + lam y``. ``D`` is concave
  and piecewise linear; ``lam`` maximizes it by bisection on its subgradient ``sum_i x_{j_i(lam)}
  - E``. It decouples the blocks: a cell whose reduced cost ``B_{j+1} + lam x_j - h_i(lam)`` is at
  least ``cutoff - D(lam)`` holds no split below ``cutoff`` (the split's value is at least
  ``D(lam)`` plus that reduced cost), so only the cells near each block's own minimizer of
  ``g_i + lam y`` stay alive. Each cell's item is off by about ``2 lam h`` (width h: first order),
  while ``g_i + lam y`` rises only quadratically away from its minimizer, so the cells within
  ``sqrt(gap)`` of it must all be about ``gap / lam`` wide: O(1 / sqrt(gap)) points per block, as
  for the min-plus bound (monotonicity bounds no better). Where the curves are nonconvex
  (randomized response below ln(k - 1)) ``D`` keeps a duality gap.
* **Min-plus bound**: the merge of the alive cells' items is a relaxation of the program over
  the splits in alive cells (exact in the budget row, no duality gap): it certifies the corners
  the Lagrangian bound cannot. A cell whose items cannot reach ``cutoff`` with the best of the
  other blocks on the budget left is dead too.
* **Lower bound**: ``max(min-plus, Lagrangian over the cells alive under both)``, capped by
  ``cutoff`` when a cell is dead (its splits are at least ``cutoff``), where ``cutoff = U - rtol
  |U| / 2``. **Refinement** halves the cells alive under both tests whose slack at ``lam``
  (``_loose``: what halving can add to the bound) exceeds ``rtol |U| / (2 n)``, or every alive
  cell when none does (one oracle call each, memoized), and one point per round may serve the
  incumbent instead (``_complete``: a block moved up by the budget the incumbent leaves, or frees
  by moving another block down), until the relative gap ``(U - L) / max(|U|, tiny)`` is at most
  ``rtol`` or the call budget is spent (a cheap term's calls, a
  closed form's, have their own, ``CHEAP_CALLS``); the bound and the gap are reported as they are.

Maximization is the same program on ``-g_i`` (the caller mirrors it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

RESOLUTION = 52  # budget numerators are integers over 2^52 (exact sums in int64)
ONE = 1 << RESOLUTION
TINY = 1e-12  # the floor of |objective| in a relative gap
RTOL = 1e-6  # the relative gap of a certified optimum
SLACK = 1e-9  # a proven bound may exceed its verified value by rounding only (relative)
CHEAP_CALLS = 1 << 14  # calls of the cheap terms (closed forms) in one split
BRANCH_NODES = 64  # boxes of the branch and bound over the terms' shares in one bound (``_branch``)
# BLAS_THREADS: the split and its recheck run BLAS on one thread. Their only BLAS work is the
# cells' dense least squares (``parametric._least_squares``, at most ``DENSE_LSQ`` entries), where
# OpenBLAS's threads cost more than they give: a 100 x 150 ``lstsq`` took 0.9 s on the default
# threads against 4 ms on one at a load average of 10 on 2 cores (it was 46 of the 78 s of the
# 3-block benchmark). A block solve that wants threads sets its own (``methods.barrier.blas_threads``).


@dataclass(frozen=True)
class Term:
    """One block's value curve ``g(y)`` for its share ``y`` in ``[0, width]`` (nonincreasing):
    ``oracle(y)`` is ``(verified value, proven bound)`` or an exact value."""

    oracle: Callable[[float], float | tuple[float, float]]
    width: float = math.inf
    cheap: bool = False  # a closed form, no solve per call: its calls count against ``CHEAP_CALLS``, not ``max_calls``


Point = tuple[float, float, float]  # (share, verified value, proven bound)
Piece = tuple[float, float, float, float]  # (start share, proven bound there, end share, proven bound there)


@dataclass(frozen=True)
class CellEnds:
    """The certificates of a cell's two end points (either may be None; ``d.cell(x)``: the
    concave lower bound of the point's term toward share ``x``, at ``x`` and at the point).
    ``pieces(a, b, k)`` cuts the cell ``[a, b]`` at ``k``: ``[a, k]`` bounded from its lower end's
    certificate, ``[k, b]`` from its upper end's, each a concave bound in ``t = e^eps`` given by
    its two end values (one piece when ``k`` is not inside, or one end has no certificate)."""

    left: object | None
    right: object | None

    def towards(self, a: float, b: float, k: float) -> tuple[float | None, float | None]:
        """The share each end's certificate bounds the cell ``[a, b]`` toward when cut at ``k``
        (``pieces``; None: that end is not used)."""
        if self.left is not None and self.right is not None and a < k < b:
            return k, k
        if self.right is not None and (self.left is None or k <= a):
            return None, a
        return b, None

    def pieces(self, a: float, b: float, k: float) -> tuple[Piece, ...]:
        left, right = self.towards(a, b, k)
        if left is not None and right is not None:
            la_k, la_a = self.left.cell(k)
            lb_k, lb_b = self.right.cell(k)
            return ((a, la_a, k, la_k), (k, lb_k, b, lb_b))
        if right is not None:
            lb_a, lb_b = self.right.cell(a)
            return ((a, lb_a, b, lb_b),)
        la_b, la_a = self.left.cell(b)
        return ((a, la_a, b, la_b),)


CellDual = tuple[object, float, tuple[Piece, ...]]  # (the ends' certificates, the cut k, the pieces)


@dataclass(frozen=True)
class Split:
    """The best split found and its certificate: ``objective = sum(values)`` is achieved by
    ``shares`` (``sum(shares) <= budget``), and no feasible split is below ``lower_bound``.
    ``points[i]`` are block i's evaluated points (the top point last), ``multiplier`` the
    Lagrangian ``lam`` of the bound (None where no Lagrangian was used), ``duals[i]`` per point
    the pieces of the cell below it, ``certs[i]`` per point its certificate (the oracle's third
    element, ``parametric.TermDual``; None where it gave none): what ``privopt verify`` re-derives
    the points' bounds and the cells' pieces from."""

    shares: tuple[float, ...]
    values: tuple[float, ...]
    objective: float
    lower_bound: float
    calls: int
    points: tuple[tuple[Point, ...], ...] = ()
    multiplier: float | None = None
    duals: tuple[tuple[CellDual | None, ...], ...] = ()  # per block, per point (None: none)
    certs: tuple[tuple[object | None, ...], ...] = ()  # per block, per point (None: none)

    @property
    def gap(self) -> float:
        return relative_gap(self.objective, self.lower_bound)

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.objective)


def _loose(curves, items, owners, bound, tol: float) -> list[np.ndarray]:
    """Per block, per item: its cell is worth halving (the top point never is). A cell's slack at
    the bound's multiplier ``lam`` is ``min(V(x_j) + lam x_j, V(x_{j+1}) + lam x_{j+1})`` (verified:
    the least of ``V + lam y`` over the cell is at most this) less its items' Lagrangian value
    (proven: at least this): halving can raise the bound by at most the slack, so a cell whose
    slack is below ``tol`` (a share of the gap allowed) is left as it is, unless every alive cell
    is (then all alive cells are halved, as without the test, so the refinement never stalls).
    A cell bounded by monotonicity alone (no certificate at either end: its item is its right
    end's bound ``B`` at its left end's budget) has at least its height ``V(x_j) - B`` as slack:
    what halving can add to the min-plus bound, which the Lagrangian's ``lam`` does not see where
    a corner decides the split (a target's least budget beside a closed form: ``lam`` near 0).
    A cell from a point without a verified value (+inf: infeasible, or a target missed) to one
    with a value is always halved: its items spend the lower end's budget, where the block has no
    value, on a bound carried from the upper end, and only halving moves that edge.
    A term whose pieces are concave in the share (``_share_concave``) has its cells' slack at
    least their curvature's part, ``_curvature_slack``: the Lagrangian at one ``lam`` does not
    see a piece's interior, the branch and bound's boxes do (``_branch``)."""
    lam = bound.multiplier
    out = []
    for c, item, owner in zip(curves, items, owners):
        cell = owner >= 0
        if not math.isfinite(lam):
            out.append(cell)
            continue
        ms = c.nums()
        ends = np.array([c.values[m] + lam * c.ceil_num(m) for m in ms])
        upper = np.minimum(ends[:-1], ends[1:])
        lower = np.full(len(ms) - 1, math.inf)
        np.minimum.at(lower, owner[cell], _cell_values([item], lam)[0][0][cell])
        with np.errstate(invalid="ignore"):
            slack = upper - lower  # inf - inf (a cell at an infeasible end): NaN, halved
            mono = cell & np.isinf(item[4])  # a cell bounded by monotonicity alone: its height
            height = np.zeros(len(ms) - 1)
            left = np.array([c.values[m] for m in ms[:-1]])
            np.maximum.at(height, owner[mono], left[owner[mono]] - item[1][mono])
            slack = np.maximum(slack, height)
            slack[np.isinf(left) & np.isfinite(ends[1:])] = math.inf  # the edge of the block's feasible budgets
            if _share_concave(c.cell_duals.values()):
                xs, vs = np.array([c.xs[m] for m in ms]), np.array([c.values[m] for m in ms])
                slack = np.maximum(slack, _curvature_slack(xs, vs))
        out.append(cell & ~(slack[np.where(cell, owner, 0)] <= tol))
    if not any((w & a).any() for w, a in zip(out, bound.alive)):
        return [owner >= 0 for owner in owners]
    return out


def _complete(curves, ub: _Frontier, tol: float) -> bool:
    """A point that can lower the incumbent, which halving the cells does not aim at: the cells'
    slack (``_loose``) measures what halving can add to the lower bound, so once the bound is
    tight at a corner (a block at its target's least budget) the cell of the other block that
    holds the rest of the budget is never halved, and the incumbent stays where it was
    (docs/blocks.md, "Refinement by slack"). Every value is nonincreasing, so from the incumbent
    (its points ``m_i``, their ceiling numerators summing to ``ONE - left``) the split with block
    i moved down to its point ``p_i`` below ``m_i`` and block j moved up by the budget freed,
    ``left + m_i - p_i``, is feasible (exact integer sums), and costs ``V_i(p_i) - V_i(m_i)`` on
    block i (no move of i: cost 0, freed ``left``). Block j's gain is at most its value less the
    largest proven bound at or beyond its new point (``_Curve.gain``). The one move whose gain
    less its cost is largest is evaluated (one oracle call per round), when that exceeds
    ``tol``; False when none does."""
    if not ub.v.size:
        return False
    best = [int(m) for m in ub.pick[int(np.argmin(ub.v))]]
    left = ONE - sum(c.ceil_num(m) for c, m in zip(curves, best))
    moves = [(-1, 0.0, left)]  # (block moved down, its cost, the budget freed)
    for i, (c, m) in enumerate(zip(curves, best)):
        ms = c.nums()
        k = ms.index(m)
        if k > 0 and math.isfinite(c.values[ms[k - 1]]):
            moves.append((i, c.values[ms[k - 1]] - c.values[m], left + c.ceil_num(m) - ms[k - 1]))
    found, where = tol, None
    for i, cost, freed in moves:
        for j, (c, m) in enumerate(zip(curves, best)):
            if j != i and freed > 0 and (net := c.gain(m, m + freed) - cost) > found:
                found, where = net, (j, m + freed)
    if where is None:
        return False
    curves[where[0]].add(where[1])
    return True


def _curvature_slack(xs: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Per cell, an estimate of its second-order pieces' error inside it, ``k h^2 / 8``: ``h`` its
    width, ``k`` the larger of the curvatures the verified values show at its two ends (divided
    second differences over the neighbouring points; NaN where a value is infinite: halved)."""
    h = np.diff(xs)
    with np.errstate(invalid="ignore", divide="ignore"):
        slopes = np.diff(vs) / h
        k = np.abs(np.diff(slopes)) * 2 / (h[1:] + h[:-1])
    k = np.concatenate([[0.0], k, [0.0]])
    return np.fmax(k[:-1], k[1:]) * h * h / 8 + np.where(np.isfinite(vs[:-1] + vs[1:]), 0.0, np.nan)


def relative_gap(upper: float, lower: float) -> float:
    """``(U - L) / max(|U|, tiny)``; 0 when both are +inf (proven infeasible), inf when unknown."""
    if upper == lower:
        return 0.0
    if not (math.isfinite(upper) and math.isfinite(lower)):
        return math.inf
    return max(0.0, upper - lower) / max(abs(upper), TINY)


def oracle_pair(out, x: float) -> tuple[float, float]:
    """An oracle's answer as ``(value, bound)`` (a third element, the point's dual, is left to
    ``_Curve``); a bound above its value (beyond rounding) is a mix-up of primal and bound and
    is refused."""
    v, b = (float(out[0]), float(out[1])) if isinstance(out, tuple) else (float(out), float(out))
    if math.isnan(v) or math.isnan(b):
        raise ValueError(f"the value oracle returned NaN at {x!r}")
    if b > v + SLACK * max(1.0, abs(v)):
        raise ValueError(f"the oracle's proven bound {b!r} is above its verified value {v!r} at {x!r}")
    return v, min(b, v)


class _Curve:
    """The evaluated points of one block: budget numerators (floor and ceiling of the exact
    position: equal for dyadic points, apart only for the top point ``u``), memoized verified
    values and proven bounds."""

    def __init__(self, term: Term, budget: float, grid: int):
        self.term, self.budget = term, budget
        top = min(term.width, budget)
        self.top_num = (math.floor(top / budget * ONE), math.ceil(top / budget * ONE))
        self.values: dict[int, float] = {}  # lower numerator -> verified value
        self.bounds: dict[int, float] = {}  # lower numerator -> proven bound
        self.xs: dict[int, float] = {}
        self.duals: dict[int, object] = {}  # lower numerator -> the point's dual (``Term``)
        self.cell_duals: dict[tuple[int, int], CellDual] = {}  # (lower, upper numerator) -> its pieces
        self.calls = 0
        for j in range(grid + 1):
            m = j * (ONE // grid)
            if m < self.top_num[0]:
                self._add(m, budget * j / grid)
        self._add(self.top_num[0], top)

    def _add(self, m: int, x: float) -> None:
        if m in self.values:
            return
        out = self.term.oracle(x)
        self.values[m], self.bounds[m] = oracle_pair(out, x)
        if isinstance(out, tuple) and len(out) > 2 and out[2] is not None:
            self.duals[m] = out[2]
        self.xs[m] = x
        self.calls += 1

    def nums(self) -> list[int]:
        return sorted(self.values)

    def ceil_num(self, m: int) -> int:
        return self.top_num[1] if m == self.top_num[0] else m

    def ub_items(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Weights (ceiling numerators), verified values, and the points' lower numerators (their names)."""
        ms = self.nums()
        w = np.array([self.ceil_num(m) for m in ms], dtype=np.int64)
        return w, np.array([self.values[m] for m in ms]), np.array(ms, dtype=np.int64)[:, None]

    def lb_items(self) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
        """The cells' items (``_cells``, cut at their kinks by their ends' certificates:
        ``_dual_items``) and, per item, the cell it belongs to (-1: the top point)."""
        ms = self.nums()
        _, v = _cells(np.array(ms, dtype=np.int64), np.array([self.bounds[m] for m in ms]))
        for lo, hi in zip(ms, ms[1:]):
            if (lo, hi) not in self.cell_duals and (lo in self.duals or hi in self.duals):
                self.cell_duals[lo, hi] = self._cell_dual(lo, hi)
        cells = [self.cell_duals.get(pair) for pair in zip(ms, ms[1:])]
        *items, owner = _dual_items(ms, v, cells, self.num)
        return tuple(items), owner

    def _cell_dual(self, lo: int, hi: int) -> CellDual:
        """The cell's pieces (``CellEnds``), cut at the kink of its ends' bounds (``kink``) rounded
        to a numerator strictly inside the cell."""
        ends = CellEnds(self.duals.get(lo), self.duals.get(hi))
        a, b = self.xs[lo], self.xs[hi]
        k = b
        if ends.left is not None and ends.right is not None:
            x = ends.left.kink(ends.right)
            k = a if x <= a else b if x >= b else self.budget * min(max(self.num(x), lo + 1), hi - 1) / ONE
        return ends, k, ends.pieces(a, b, k)

    def num(self, x: float) -> int:
        return math.floor(x / self.budget * ONE)

    def points(self) -> tuple[Point, ...]:
        return tuple((self.xs[m], self.values[m], self.bounds[m]) for m in self.nums())

    def point_certs(self) -> tuple[object | None, ...]:
        """Per point, its certificate (``TermDual``; None where the oracle gave none)."""
        return tuple(self.duals.get(m) for m in self.nums())

    def point_duals(self) -> tuple[CellDual | None, ...]:
        """Per point, the pieces of the cell it closes (None for the first point and where none)."""
        ms = self.nums()
        return (None, *(self.cell_duals.get(pair) for pair in zip(ms, ms[1:])))

    def refine(self, j: int) -> bool:
        """Halve cell j (between the j-th and (j+1)-th points); False at the resolution's end."""
        ms = self.nums()
        lo, hi = ms[j], ms[j + 1]
        mid = (lo + hi) // 2
        if mid <= lo:
            return False
        self._add(mid, self.budget * mid / ONE)
        return True

    def gain(self, m: int, to: int) -> float:
        """The most that moving this block from its point ``m`` to the numerator ``to`` (above it)
        can lower its value: its verified value at ``m`` less the largest proven bound at ``to`` or
        beyond (monotonicity); 0 where ``to`` is not strictly between ``m`` and the top point
        (the top is always evaluated) or is a point already."""
        if not m < to < self.top_num[0] or to in self.values:
            return 0.0
        return self.values[m] - max(b for k, b in self.bounds.items() if k >= to)

    def add(self, m: int) -> None:
        self._add(m, self.budget * m / ONE)


def _cells(ms: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One item per cell ``[x_j, x_{j+1})``: weight ``x_j`` (floor numerator), value ``B_{j+1}``
    (``B``: the suffix maximum of the proven bounds); and the top point, last."""
    best = np.maximum.accumulate(bounds[::-1])[::-1]
    return ms, np.append(best[1:], best[-1:])


def _share_concave(cells) -> bool:
    """A term's pieces are concave in the share itself (its certificates say so: a joint group's,
    ``groupcells.GroupDual``, or a closed form's, ``closedcells.RRDual``), not only in ``t = e^eps``
    (an LP block's, ``parametric``)."""
    return any(cd is not None and getattr(cd[0].left or cd[0].right, "share_concave", False) for cd in cells)


def _dual_items(ms, v: np.ndarray, cells, num) -> tuple[np.ndarray, ...]:
    """The items of the cells, each cut into its pieces (``CellEnds``; ``num``: a share's floor
    numerator) where its ends have certificates: ``(w, mono, raised, w2, v2, owner)``, one row
    per piece (per cell without a certificate, and the top point last, ``owner`` -1).

    A piece ``[p, q]`` with bound ``L`` concave in ``t = e^eps`` (``parametric.py``): ``g >= L``
    on it, and ``g`` does not increase, so ``g >= mono`` on ``[p, q)`` with ``mono`` the largest
    proven bound at ``q`` or beyond (``B``, the cell's monotone value, and the pieces' end values
    from ``q`` on): the min-plus item ``(p, mono)``. ``lam y`` is concave in ``t`` too, so
    ``min_{[p, q]} g + lam y >= max(min(L(p) + lam p, L(q) + lam q), mono + lam p) >= min(max(mono,
    L(p)) + lam p, L(q) + lam q)``: the Lagrangian items ``(p, raised)`` and ``(w2, v2) = (q,
    L(q))``. Without a certificate (and for the top point) the second item is ``(p, +inf)``."""
    rows = []
    for j, m in enumerate(ms):
        cd = cells[j] if j < len(cells) else None
        if cd is None:
            rows.append((m, v[j], v[j], m, math.inf, j if j < len(cells) else -1))
            continue
        pieces = cd[2]
        acc, out = v[j], []
        for i in reversed(range(len(pieces))):
            p, lp, q, lq = pieces[i]
            acc = max(acc, lq)
            start = m if i == 0 else num(p)
            end = ms[j + 1] if i == len(pieces) - 1 else num(q)
            out.append((start, acc, max(acc, lp), end, lq, j))
            acc = max(acc, lp)
        rows += out[::-1]
    w, mono, raised, w2, v2, owner = zip(*rows)
    ints = np.array(w, dtype=np.int64), np.array(w2, dtype=np.int64), np.array(owner, dtype=np.int64)
    return ints[0], np.array(mono), np.array(raised), ints[1], np.array(v2), ints[2]


@dataclass
class _Frontier:
    """Pareto frontier of (budget numerator, value) for a set of blocks, with the choices."""

    w: np.ndarray  # increasing
    v: np.ndarray  # strictly decreasing
    pick: np.ndarray  # (len, blocks) indices of the items chosen

    @staticmethod
    def empty() -> _Frontier:
        return _Frontier(np.zeros(1, dtype=np.int64), np.zeros(1), np.zeros((1, 0), dtype=np.int64))

    def merge(
        self, w: np.ndarray, v: np.ndarray, pick: np.ndarray | None = None, limit: float = math.inf, rest: float = 0.0
    ) -> _Frontier:
        """Min-plus merge with another frontier or item list, weights within the budget. Entries
        that cannot end below ``limit`` (their value plus ``rest``, the least the blocks not yet
        merged can add) are dropped: they cannot be the optimum nor make a cell alive."""
        if pick is None:
            pick = np.arange(len(w), dtype=np.int64)[:, None]
        ww = (self.w[:, None] + w[None, :]).ravel()
        vv = (self.v[:, None] + v[None, :]).ravel()
        a, b = np.divmod(np.arange(ww.size), len(w))
        keep = (ww <= ONE) & (vv + rest < limit)
        ww, vv, a, b = ww[keep], vv[keep], a[keep], b[keep]
        order = np.lexsort((vv, ww))
        ww, vv, a, b = ww[order], vv[order], a[order], b[order]
        best = np.minimum.accumulate(vv)
        front = np.ones(vv.size, dtype=bool)
        front[1:] = vv[1:] < best[:-1]
        a, b = a[front], b[front]
        return _Frontier(ww[front], vv[front], np.hstack([self.pick[a], pick[b]]))

    def best_within(self, room: np.ndarray) -> np.ndarray:
        """The least value with weight at most each ``room`` (inf where nothing fits)."""
        idx = np.searchsorted(self.w, room, side="right") - 1
        out = np.full(room.shape, math.inf)
        ok = idx >= 0
        out[ok] = self.v[idx[ok]]
        return out


def _merge_all(items: Sequence[tuple], limit: float = math.inf) -> _Frontier:
    """All blocks merged; entries that cannot end below ``limit`` dropped (possibly all)."""
    rest = _rests(items)
    f = _Frontier.empty()
    for k, (w, v, *pick) in enumerate(items):
        f = f.merge(w, v, pick[0] if pick else None, limit=limit, rest=rest[k + 1])
    return f


def _rests(items) -> list[float]:
    """``rest[k]``: the least value blocks k, k+1, ... can add (each block's least value)."""
    out = [0.0]
    for _, v, *_pick in reversed(items):
        out.append(out[-1] + float(v.min()))
    return out[::-1]


def _least(f: _Frontier, limit: float) -> float:
    return float(f.v.min()) if f.v.size else limit


def _lagrange_items(item: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A block's items for the Lagrangian: ``(w, v)`` (monotone cells) or ``(w, v, raised, w2,
    v2)`` (with the cells' dual items, ``_dual_items``) as ``(w, raised, w2, v2)``: the cell's
    value at ``lam`` is ``min(raised + lam w, v2 + lam w2)``."""
    if len(item) == 2:
        w, v = item
        return w, v, w, np.full(len(w), math.inf)
    w, _, raised, w2, v2 = item
    return w, raised, w2, v2


def _cell_values(items: Sequence[tuple], lam: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per block, each cell's Lagrangian value at ``lam`` and the budget (numerator) it spends."""
    out = []
    for item in items:
        w, v, w2, v2 = _lagrange_items(item)
        a, b = v + lam * w.astype(float), v2 + lam * w2.astype(float)
        out.append((np.minimum(a, b), np.where(a <= b, w, w2)))
    return out


def _dual(items: Sequence[tuple]) -> tuple[float, float]:
    """``(lam, D(lam))``: the Lagrangian bound of the cells' items maximized over ``lam >= 0``
    (module docstring), in numerator units (``E = 2^L``). ``D`` is concave: ``lam`` is bracketed
    by bisection on its subgradient ``sum_i x_{j_i(lam)} - E`` (the least budget among ties) and
    the better end's value is the bound (each end's is a proof). +inf when a block has no item or
    the least budgets alone overrun ``E`` (no feasible split)."""
    if not items or any(len(it[0]) == 0 for it in items):
        return 0.0, math.inf
    sizes = [len(it[0]) for it in items]
    starts = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)
    seg = np.repeat(np.arange(len(items)), sizes)

    def at(lam: float) -> tuple[float, float]:
        cells = _cell_values(items, lam)
        r = np.concatenate([r for r, _ in cells])
        w = np.concatenate([w for _, w in cells]).astype(float)
        h = np.minimum.reduceat(r, starts)
        spend = float(np.minimum.reduceat(np.where(r <= h[seg], w, np.inf), starts).sum())
        total = math.fsum(h)
        return (total - lam * ONE if math.isfinite(total) else total), spend

    d0, spend = at(0.0)
    if spend <= ONE:
        return 0.0, d0
    lo, hi = 0.0, 1.0
    while at(hi)[1] > ONE:
        if hi > 1e300:
            return hi, math.inf  # the blocks' least budgets overrun E: no split is feasible
        lo, hi = hi, hi * 2.0
    for _ in range(400):
        mid = 0.5 * hi if lo == 0.0 else math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        if at(mid)[1] > ONE:
            lo = mid
        else:
            hi = mid
    d_lo, d_hi = at(lo)[0], at(hi)[0]
    return (lo, d_lo) if d_lo > d_hi else (hi, d_hi)


def _minplus(items: Sequence[tuple[np.ndarray, np.ndarray]], cutoff: float) -> tuple[float, list[np.ndarray]]:
    """The min-plus relaxation over the items (its optimum, or +inf when no split gets below
    ``cutoff``) and, per block, each item's bound: its value plus the best of the other blocks on
    the budget left (+inf where that cannot get below ``cutoff``)."""
    if not items or any(len(w) == 0 for w, _ in items):
        return math.inf, [np.full(len(w), math.inf) for w, _ in items]
    least = [float(v.min()) for _, v in items]
    after = [math.fsum(least[k + 1 :]) for k in range(len(items))]  # what blocks k+1, ... add at least
    before = [math.fsum(least[:k]) for k in range(len(items))]
    prefix = [_Frontier.empty()]
    for k, (w, v) in enumerate(items):
        prefix.append(prefix[-1].merge(w, v, limit=cutoff, rest=after[k]))
    suffix = [_Frontier.empty()]
    for k in reversed(range(len(items))):
        w, v = items[k]
        suffix.append(suffix[-1].merge(w, v, limit=cutoff, rest=before[k]))
    suffix.reverse()
    bounds = []
    for i, (w, v) in enumerate(items):
        s = suffix[i + 1]
        others = prefix[i].merge(s.w, s.v, s.pick, limit=cutoff, rest=least[i])
        bounds.append(v + others.best_within(ONE - w))
    best = min((float(b.min()) for b in bounds), default=math.inf)
    return (best if best < cutoff else math.inf), bounds


@dataclass(frozen=True)
class _Bound:
    lower: float
    multiplier: float
    alive: list[np.ndarray]  # per block, per item: the cell may hold a split below the cutoff


def _bound(items: Sequence[tuple], upper: float, rtol: float, concave: Sequence[bool] = ()) -> _Bound:
    """The proven lower bound of the cells' items (``(w, v)`` or with dual items, ``_dual_items``)
    given the incumbent ``upper`` (module docstring): cells dead by reduced cost, then by
    min-plus (over the monotone items); the Lagrangian over the rest; then, while the gap is
    open and a term's pieces are concave in the share itself (``concave``, per term:
    ``_share_concave``; a joint group or a closed form beside the blocks), the branch and bound
    over the terms' shares (``_branch``)."""
    cutoff = upper - rtol * max(abs(upper), TINY) / 2 if math.isfinite(upper) else math.inf
    lam, dual = _dual(items)
    alive = [np.ones(len(it[0]), dtype=bool) for it in items]
    if math.isfinite(cutoff):
        with np.errstate(invalid="ignore"):
            for k, (reduced, _) in enumerate(_cell_values(items, lam)):
                alive[k] = reduced - reduced.min() < cutoff - dual
    minplus, est = _minplus([(it[0][a], it[1][a]) for it, a in zip(items, alive)], cutoff)
    for a, e in zip(alive, est):
        a[a] = e < cutoff
    lam2, dual2 = _dual([tuple(x[a] for x in it) for it, a in zip(items, alive)])
    lower = max(minplus, dual2)
    if not all(a.all() for a in alive):
        lower = min(lower, cutoff)  # a dead cell's splits are at least the cutoff
    if any(concave) and math.isfinite(cutoff) and lower < cutoff and relative_gap(upper, lower) > rtol:
        branched, alive = _branch(items, alive, cutoff, concave)
        lower = max(lower, branched)
    return _Bound(min(lower, upper), lam2 if math.isfinite(dual2) else lam, alive)


def _spans(item: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Each item's cell (or piece) as numerators ``[start, end]``: a piece's own end, a monotone
    cell's the next item's start (the top point: itself)."""
    w, _, w2, v2 = _lagrange_items(item)
    nxt = np.append(w[1:], w[-1:])
    return w, np.where(np.isinf(v2), nxt, w2)


def _branch(
    items: Sequence[tuple], alive: list[np.ndarray], cutoff: float, concave: Sequence[bool]
) -> tuple[float, list[np.ndarray]]:
    """Branch and bound over the terms' shares (numerators): the Lagrangian bound keeps a duality
    gap where a value curve is nonconvex on the alive cells (randomized response below ln(k - 1):
    about ``K w^2 / 8`` for curvature K over an alive range of width w), so the alive range is cut
    into boxes ``lo_i <= y_i <= hi_i``, each bounded by the Lagrangian over the alive items that
    meet it (weak duality, valid for the splits in the box). Every term's value is nonincreasing,
    so a split in a box may raise its shares to spend the whole budget or reach the box's tops:
    ``y_i >= ONE - n - sum_{j != i} hi_j`` (n: the floors' rounding) and ``y_i <= ONE - sum_{j != i}
    lo_j`` restrict the box (``_propagate``), which is what makes halving one term's range shrink
    the others'. In a box, a monotone cell's item spends at least the box's lower end, and a
    term whose pieces are concave in the share (``concave``) has each piece cut to the box
    (``_clipped``), so that the pieces' own kinks (a duality gap of their own) shrink with it.
    Best first, the widest range halved, up to ``BRANCH_NODES`` boxes; a box whose bound reaches
    ``cutoff`` is dropped. The bound: the least over the boxes left, at most ``cutoff``; the items
    that meet no box left are dead."""
    import heapq

    spans = [_spans(it) for it in items]

    concave = list(concave) + [False] * (len(items) - len(concave))

    def restricted(box) -> list[tuple]:
        return [
            _clipped(_lagrange_items(tuple(x[a & (s <= hi) & (e >= lo)] for x in it)), lo, hi, cc)
            for it, a, (s, e), (lo, hi), cc in zip(items, alive, spans, box, concave)
        ]

    def value(box) -> float:
        sub = restricted(box)
        return math.inf if any(len(it[0]) == 0 for it in sub) else _dual(sub)[1]

    if not all(a.any() for a in alive):
        return cutoff, alive  # a term with no alive cell: no split below the cutoff
    root = _propagate([(int(s[a].min()), int(e[a].max())) for (s, e), a in zip(spans, alive)])
    if root is None:
        return cutoff, alive
    heap, done, nodes, count = [(value(root), 0, root)], [], 1, 1
    while heap and nodes < BRANCH_NODES:
        b, _, box = heap[0]
        if b >= cutoff:
            break
        heapq.heappop(heap)
        i = max(range(len(box)), key=lambda k: box[k][1] - box[k][0])
        lo, hi = box[i]
        if hi - lo <= 1:
            done.append((b, 0, box))
            continue
        mid = (lo + hi) // 2
        for part in ((lo, mid), (mid, hi)):
            child = _propagate([part if k == i else r for k, r in enumerate(box)])
            if child is None:
                continue
            v = value(child)
            nodes += 1
            if v < cutoff:
                heapq.heappush(heap, (v, count, child))
                count += 1
    left = heap + done
    lower = min([b for b, _, _ in left] + [cutoff])
    kept = []
    for k, ((s, e), a) in enumerate(zip(spans, alive)):
        meets = np.zeros(len(a), dtype=bool)
        for _, _, box in left:
            lo, hi = box[k]
            meets |= (s <= hi) & (e >= lo)
        kept.append(a & meets)
    return lower, kept


def _clipped(item: tuple, lo: int, hi: int, concave: bool) -> tuple:
    """A term's Lagrangian items ``(w, raised, w2, v2)`` (``_lagrange_items``) in the box ``[lo,
    hi]`` of its share: a monotone cell's (``v2`` inf) spends at least ``lo`` (its value holds on
    the whole cell); with ``concave``, a piece is cut to ``[max(w, lo), min(w2, hi)]`` with the
    values of its chord through ``(w, raised)`` and ``(w2, v2)``: a lower bound there, since the
    value is at least ``max(mono, L)`` with ``L`` concave in the share and ``mono`` at least both
    ends (``_dual_items``), and linear, so the item's least is at an end again. As a 5-tuple."""
    w, raised, w2, v2 = item
    mono = np.isinf(v2)
    start = np.maximum(w, lo)
    if not concave:
        w = np.where(mono, start, w)
        return w, raised, raised, w2, v2
    end = np.where(mono, w2, np.minimum(w2, hi))
    span = np.where(mono | (w2 == w), 1, w2 - w).astype(float)
    with np.errstate(invalid="ignore"):
        slope = np.where(mono, 0.0, (v2 - raised) / span)
    at_start = np.where(mono, raised, raised + slope * (start - w).astype(float))
    at_end = np.where(mono, v2, raised + slope * (end - w).astype(float))
    return start, at_start, at_start, end, at_end


def _propagate(box: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The box restricted by the budget (``_branch``); None when its least shares overrun it."""
    los, his = [lo for lo, _ in box], [hi for _, hi in box]
    low, high = sum(los), sum(his)
    if low > ONE:
        return None
    if high <= ONE:
        return box
    out = [(max(lo, ONE - len(box) - (high - hi)), min(hi, ONE - (low - lo))) for lo, hi in box]
    return None if any(lo > hi for lo, hi in out) else out


def split(terms: Sequence[Term], budget: float, rtol: float = RTOL, max_calls: int = 400, grid: int = 8) -> Split:
    """Minimize ``sum_i g_i(y_i)`` over ``sum_i y_i <= budget``, ``0 <= y_i <= width_i`` (module
    docstring): the best split found, with a proven lower bound. ``grid`` (a power of two) is
    the first uniform grid; ``max_calls`` bounds the oracle calls of the refinement to the terms
    that solve (a cheap term's calls are bounded by ``CHEAP_CALLS``: its cells are refined like
    any other, at no solve each)."""
    if not terms:
        return Split((), (), 0.0, 0.0, 0)
    if not (budget > 0 and math.isfinite(budget)):
        raise ValueError(f"the budget must be positive and finite, not {budget!r}")
    if grid < 1 or grid & (grid - 1):
        raise ValueError("grid must be a power of two")
    with threadpool_limits(limits=1, user_api="blas"):  # BLAS_THREADS
        return _refined(terms, budget, rtol, max_calls, grid)


def _refined(terms: Sequence[Term], budget: float, rtol: float, max_calls: int, grid: int) -> Split:
    """``split``'s refinement loop (its docstring), on one BLAS thread."""
    curves = [_Curve(t, budget, grid) for t in terms]
    ub = _merge_all([c.ub_items() for c in curves])
    while True:
        upper = _least(ub, math.inf)
        items, owners = zip(*(c.lb_items() for c in curves))
        bound = _bound(items, upper, rtol, [_share_concave(c.cell_duals.values()) for c in curves])
        calls = sum(c.calls for c in curves)
        cheap = sum(c.calls for c in curves if c.term.cheap)
        if relative_gap(upper, bound.lower) <= rtol or calls - cheap >= max_calls or cheap >= CHEAP_CALLS:
            break
        tol = rtol * max(abs(upper), TINY) / (2 * len(curves))
        loose = _loose(curves, items, owners, bound, tol)
        halved = False
        for c, alive, owner, wide in zip(curves, bound.alive, owners, loose):
            for j in np.unique(owner[alive & wide])[::-1]:
                halved |= c.refine(int(j))  # from the top: earlier indices stay valid
        halved |= _complete(curves, ub, tol)
        if not halved:
            break
        better = _merge_all([c.ub_items() for c in curves], np.nextafter(upper, math.inf))  # ties: the least budget
        if better.v.size:
            ub = better
    points = tuple(c.points() for c in curves)
    duals = tuple(c.point_duals() for c in curves) if any(c.duals for c in curves) else ()
    certs = tuple(c.point_certs() for c in curves) if duals else ()
    if not ub.v.size:  # no evaluated combination is feasible: every block at the bottom of its range
        values = tuple(c.values[0] for c in curves)
        return Split(
            tuple(0.0 for _ in curves), values, math.inf, bound.lower, calls, points, bound.multiplier, duals, certs
        )
    best = ub.pick[int(np.argmin(ub.v))]
    shares = tuple(c.xs[int(m)] for c, m in zip(curves, best))
    values = tuple(c.values[int(m)] for c, m in zip(curves, best))
    return Split(shares, values, math.fsum(values), bound.lower, calls, points, bound.multiplier, duals, certs)


def recheck(s: Split, widths: Sequence[float], budget: float, rtol: float = RTOL, names: Sequence[str] = ()) -> float:
    """The lower bound recomputed from ``s.points`` and ``s.duals`` alone (what ``privopt
    verify`` re-checks): each block's points increasing in share, the last at its top ``min(width,
    budget)``, every bound at most its value; each recorded cell dual's pieces recomputed from its
    ends' certificates at the recorded cut (``CellEnds.pieces``) and equal to the recorded ones
    to rounding; the cells' numerators are the shares' floors (so the bound equals
    ``s.lower_bound`` to rounding). A violated condition is a ``ValueError`` naming the block
    (``names[i]``, else its position) and the cell."""
    if len(s.points) != len(widths) or (s.duals and len(s.duals) != len(widths)):
        raise ValueError("one list of points (and of duals) per block")
    with threadpool_limits(limits=1, user_api="blas"):  # BLAS_THREADS
        return _rechecked(s, widths, budget, rtol, names)


def _rechecked(s: Split, widths: Sequence[float], budget: float, rtol: float, names: Sequence[str]) -> float:
    items, concave = [], []
    for k, (pts, width) in enumerate(zip(s.points, widths)):
        name = names[k] if k < len(names) else f"term {k + 1}"
        xs = [x for x, _, _ in pts]
        if not pts or xs != sorted(set(xs)) or xs[0] != 0.0 or xs[-1] != min(width, budget):
            raise ValueError(f"{name}: a block's points must increase from 0 to its top")
        try:
            bounds = np.array([oracle_pair((v, b), x)[1] for x, v, b in pts])
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        ms = [math.floor(x / budget * ONE) for x in xs]
        _, v = _cells(np.array(ms, dtype=np.int64), bounds)
        cells = list(s.duals[k][1:]) if s.duals else [None] * (len(pts) - 1)
        if len(cells) != len(pts) - 1 or (s.duals and s.duals[k][0] is not None):
            raise ValueError(f"{name}: one dual per cell, at the point that closes it")
        for j, cd in enumerate(cells):
            if cd is not None:
                try:
                    _same_pieces(cd, xs[j], xs[j + 1])
                except ValueError as e:
                    raise ValueError(f"{name}, cell [{xs[j]!r}, {xs[j + 1]!r}]: {e}") from None
        items.append(_dual_items(ms, v, cells, lambda x: math.floor(x / budget * ONE))[:5])
        concave.append(_share_concave(cells))
    return _bound(items, s.objective, rtol, concave).lower


def _same_pieces(cd: CellDual, a: float, b: float) -> None:
    """The recorded pieces of the cell ``[a, b]`` are what its ends' certificates give at the
    recorded cut, to rounding, and they cover the cell in order."""
    ends, k, pieces = cd
    if not pieces or any(len(p) != 4 for p in pieces):
        raise ValueError(f"a cell's pieces must be (start, bound, end, bound), not {pieces!r}")
    again = ends.pieces(a, b, k)
    flat = [x for p in pieces for x in p]
    redo = [float(x) for p in again for x in p]
    if len(flat) != len(redo) or not all(x == y or abs(x - y) <= SLACK * max(1.0, abs(y)) for x, y in zip(flat, redo)):
        raise ValueError(f"the recorded dual bounds {flat} of a cell are not what its duals give {redo}")
    if pieces[0][0] != a or pieces[-1][2] != b or any(p[2] != q[0] for p, q in zip(pieces, pieces[1:])):
        raise ValueError(f"the pieces {flat} do not cover the cell [{a!r}, {b!r}] in order")


def inverse_square_split(a: Sequence[float], width: Sequence[float], budget: float) -> Split:
    """The closed form for values ``a_i / y_i^2`` (Gaussian blocks under the classic calibration):
    minimize ``sum_i a_i / y_i^2`` over ``sum_i y_i <= E``, ``0 < y_i <= u_i``, a convex program.
    KKT: ``y_i(lam) = min(u_i, (2 a_i / lam)^(1/3))`` with ``sum_i y_i(lam) = E`` (so, without
    caps, ``y_i`` is proportional to ``a_i^(1/3)``); ``lam`` is found by bisection. The lower
    bound is the Lagrangian dual ``sum_i min_y (a_i / y^2 + lam y) - lam E`` at the bracket's
    ends (weak duality: a proof for any ``lam >= 0``)."""
    a = np.asarray(a, dtype=float)
    u = np.minimum(np.asarray(width, dtype=float), budget)

    def shares(lam: float) -> np.ndarray:
        return np.minimum(u, np.cbrt(2.0 * a / lam)) if lam > 0 else u.copy()

    def value(y: np.ndarray) -> float:
        return math.fsum(np.where(a > 0, a / np.maximum(y, 1e-300) ** 2, 0.0))

    def dual(lam: float) -> float:
        y = shares(lam)
        return value(y) + lam * (float(y.sum()) - budget)

    if u.sum() <= budget:
        y = u
        return Split(tuple(map(float, y)), tuple(map(float, a / y**2)), value(y), value(y), 0)
    lo, hi = 1e-300, 1.0
    while shares(hi).sum() > budget:
        hi *= 2.0
    for _ in range(200):  # geometric bisection to the last bit
        mid = math.sqrt(lo * hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if shares(mid).sum() > budget else (lo, mid)
    y = shares(hi)  # sum(y) <= E: feasible
    y = y * min(1.0, budget / float(y.sum()))
    return Split(tuple(map(float, y)), tuple(map(float, a / y**2)), value(y), max(dual(lo), dual(hi)), 0)


def rr_split(
    k: Sequence[float],
    weight: Sequence[float],
    width: Sequence[float],
    budget: float,
    rtol: float = RTOL,
    nodes: int = 256,
) -> Split:
    """The closed form for k-ary randomized response blocks under a uniform prior, whose value is
    ``g_i(y) = w_i (k_i - 1) / (e^y + k_i - 1)`` (the least total variation at eps = y): minimize
    ``sum_i g_i(y_i)`` over ``sum_i y_i <= E``, ``0 <= y_i <= u_i``. Each ``g_i`` is concave below
    ``ln(k_i - 1)`` and convex above, so the program is nonconvex and corners matter.

    * **Bound of a box** ``l <= y <= u`` (proven for any ``lam >= 0``, weak duality): ``D(lam) =
      sum_i min_{l_i<=y<=u_i} (g_i(y) + lam y) - lam E``. A concave-then-convex function plus a
      line is least at an end of the interval or at its stationary point on the convex side
      (``-g_i'(y) = lam`` is a quadratic in ``e^y``); ``lam`` maximizes ``D`` by bisection on the
      budget the inner minima spend.
    * **Split**: the inner minima at both ends of the final bracket, and the KKT point of the
      blocks they fund (all on one multiplier), each given the budget left where it helps most.
    * **Branch and bound**: the dual gap comes from the blocks whose inner minimum jumps at
      ``lam`` (Udell & Boyd: at most one per budget row off its convex envelope); the box is
      split at that block's jump until the relative gap is at most ``rtol`` or ``nodes`` boxes
      are spent. The bound is the least over the open boxes; no solve is needed (``calls = 0``).
    """
    import heapq

    k = np.asarray(k, dtype=float)
    w = np.asarray(weight, dtype=float)
    top = np.minimum(np.asarray(width, dtype=float), budget)
    if np.any(k < 2) or np.any(w < 0) or np.any(top < 0):
        raise ValueError("k-ary randomized response needs k >= 2, weights >= 0 and widths >= 0")
    c = w * (k - 1.0)
    infl = np.log(k - 1.0)  # concave below, convex above

    def g(y: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return c / (np.exp(y) + k - 1.0)

    def stationary(lam: float) -> np.ndarray:
        """The point on the convex side where ``-g' = lam`` (the inflection when lam is above every slope)."""
        if lam <= 0:
            return np.full_like(k, np.inf)
        b = 2.0 * lam * (k - 1.0) - c
        disc = b * b - 4.0 * lam * lam * (k - 1.0) ** 2
        with np.errstate(over="ignore"):
            t = (-b + np.sqrt(np.maximum(disc, 0.0))) / (2.0 * lam)
        return np.where(disc >= 0, np.maximum(np.log(np.maximum(t, 1e-300)), infl), infl)

    def inner(lam: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        ys = np.stack([lo, hi, np.clip(stationary(lam), lo, hi)])
        vals = g(ys) + lam * ys
        best = vals.min(axis=0)
        tied = vals <= best + 1e-15 * np.maximum(1.0, np.abs(best))
        return np.where(tied, ys, np.inf).min(axis=0)  # the least budget among ties

    def bracket(spend) -> tuple[float, float]:
        """``lam`` by bisection: ``spend(lo) > E >= spend(hi)``."""
        lo, hi = 0.0, float(np.max(c, initial=0.0)) + 1.0
        while hi - lo > 1e-14 * hi:  # either end's dual is a proof: the last bits only tighten it
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if spend(mid) > budget else (lo, mid)
        return lo, hi

    def value(y: np.ndarray) -> float:
        return math.fsum(g(y))

    def bound(lo_y: np.ndarray, hi_y: np.ndarray):
        if math.fsum(lo_y) > budget:
            return math.inf, None
        if math.fsum(hi_y) <= budget:
            return value(hi_y), (hi_y, hi_y)
        a, b = bracket(lambda lam: float(inner(lam, lo_y, hi_y).sum()))
        ya, yb = inner(a, lo_y, hi_y), inner(b, lo_y, hi_y)
        d = max(value(y) + lam * (math.fsum(y) - budget) for lam, y in ((a, ya), (b, yb)))
        return d, (ya, yb)

    def rounded(ya: np.ndarray, yb: np.ndarray) -> np.ndarray:
        """The high end's minima, then the blocks that jump funded at the low end's one by one
        (most value per budget first) while the budget lasts (Shapley-Folkman: one is left over)."""
        y = yb.copy()
        jump = np.flatnonzero(ya > yb)
        gain = ((g(yb) - g(ya)) / np.where(ya > yb, ya - yb, 1.0))[jump]
        left = budget - math.fsum(y)
        for j in jump[np.argsort(-gain, kind="stable")]:
            if ya[j] - y[j] <= left:
                left -= ya[j] - y[j]
                y[j] = ya[j]
        return y

    def primal(ys) -> tuple[float, np.ndarray]:
        best_v, best_y = math.inf, np.zeros_like(top)
        for y in (*ys, rounded(*ys)):
            funded = y > 0
            a, b = bracket(lambda lam, f=funded: float(np.where(f, np.minimum(stationary(lam), top), 0.0).sum()))
            kkt = np.where(funded, np.minimum(stationary(b), top), 0.0)
            for cand in (y, kkt):
                if math.fsum(cand) > budget:
                    cand = cand * (budget / math.fsum(cand)) * (1.0 - 1e-15)
                cand = _fill(cand, top, budget, g)
                v = value(cand)
                if v < best_v:
                    best_v, best_y = v, cand
        return best_v, best_y

    if math.fsum(top) <= budget:  # every block at its top
        return Split(tuple(map(float, top)), tuple(map(float, g(top))), value(top), value(top), 0)
    root = (np.zeros_like(top), top)
    d, ys = bound(*root)
    upper, best = primal(ys)
    heap, count, spent = [(d, 0, root, ys)], 1, 1
    lower, floor = min(d, upper), math.inf  # floor: the least bound of the boxes that cannot be split
    while heap:
        lower = min(heap[0][0], floor, upper)
        if relative_gap(upper, lower) <= rtol or spent >= nodes:
            break
        d, _, (lo_y, hi_y), (ya, yb) = heapq.heappop(heap)
        if d >= upper:
            continue
        jump = ya - yb  # the blocks whose inner minimum jumps at lam
        j = int(np.argmax(jump)) if float(jump.max()) > 0 else int(np.argmax(hi_y - lo_y))
        cut = 0.5 * (ya[j] + yb[j]) if float(jump.max()) > 0 else 0.5 * (lo_y[j] + hi_y[j])
        if not (lo_y[j] < cut < hi_y[j]):
            floor = min(floor, d)  # nothing left to split: the box keeps its own bound
            continue
        for box in (
            (lo_y, np.where(np.arange(len(top)) == j, cut, hi_y)),
            (np.where(np.arange(len(top)) == j, cut, lo_y), hi_y),
        ):
            bd, bys = bound(*box)
            spent += 1
            if bys is not None:
                v, y = primal(bys)
                if v < upper:
                    upper, best = v, y
            if bd < upper:
                heapq.heappush(heap, (bd, count, box, bys))
                count += 1
    else:
        lower = min(floor, upper)
    vals = g(best)
    return Split(tuple(map(float, best)), tuple(map(float, vals)), value(best), min(lower, upper), 0)


def _fill(y: np.ndarray, u: np.ndarray, budget: float, g) -> np.ndarray:
    """The budget left given, block by block, where it lowers the value most (never raises it)."""
    y = y.copy()
    for _ in range(min(len(y), 64)):
        left = budget - float(y.sum())
        if left <= budget * 1e-15:
            break
        room = np.minimum(u - y, left)
        gain = g(y) - g(y + room)
        i = int(np.argmax(gain))
        if gain[i] <= 0:
            break
        y[i] += room[i]
    return y
