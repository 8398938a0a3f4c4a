"""The certified split of one budget between blocks (issue 21, item 3; Ramon & Basu Sec. 3.4).

The program, over abstract value oracles ``g_i`` (callables y -> value, nonincreasing in y):

    minimize  sum_i g_i(y_i)   subject to  sum_i y_i <= E,  0 <= y_i <= u_i.

Each block's optimal value does not increase with its budget, and that is all this module
uses. Every evaluated point ``x`` of block i is a dyadic fraction of the budget, ``x = E m /
2^L`` (``L = RESOLUTION``), so budget sums are exact integer sums of numerators ``m``.

* **Upper bound** (a feasible split): the evaluated points, one per block, whose numerators
  sum to at most ``2^L``; the best such combination is a min-plus merge of the blocks' point
  lists (a knapsack over Pareto frontiers: weight = numerator, value = ``g_i(x)``).
* **Proven lower bound**: a feasible ``y_i`` lies in a cell ``[x_j, x_{j+1})`` of the evaluated
  points of block i (or is its top point ``u_i``), so ``y_i >= x_j`` and, by monotonicity,
  ``g_i(y_i) >= g_i(x_{j+1})``. The same merge over the items ``(x_j, g_i(x_{j+1}))`` is a
  relaxation of the program: its optimum bounds every feasible split from below.
* **Refinement**: a cell is alive when the lower bound of the splits that put block i in it
  (its item plus the best of the other blocks on what is left of the budget) is below the
  incumbent; alive cells are halved (one oracle call each, memoized) until the relative gap
  ``(U - L) / max(|U|, tiny)`` is at most ``rtol`` or the call budget is spent. The bound and the
  gap are reported as they are, whether or not the target was met.

Maximization is the same program on ``-g_i`` (the caller mirrors it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

RESOLUTION = 52  # budget numerators are integers over 2^52 (exact sums in int64)
ONE = 1 << RESOLUTION
TINY = 1e-12  # the floor of |objective| in a relative gap
RTOL = 1e-6  # the relative gap of a certified optimum


@dataclass(frozen=True)
class Term:
    """One block's value curve ``g(y)`` for its share ``y`` in ``[0, width]`` (nonincreasing)."""

    oracle: Callable[[float], float]
    width: float = math.inf


@dataclass(frozen=True)
class Split:
    """The best split found and its certificate: ``objective = sum(values)`` is achieved by
    ``shares`` (``sum(shares) <= budget``), and no feasible split is below ``lower_bound``."""

    shares: tuple[float, ...]
    values: tuple[float, ...]
    objective: float
    lower_bound: float
    calls: int

    @property
    def gap(self) -> float:
        return relative_gap(self.objective, self.lower_bound)

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.objective)


def relative_gap(upper: float, lower: float) -> float:
    """``(U - L) / max(|U|, tiny)``; 0 when both are +inf (proven infeasible), inf when unknown."""
    if upper == lower:
        return 0.0
    if not (math.isfinite(upper) and math.isfinite(lower)):
        return math.inf
    return max(0.0, upper - lower) / max(abs(upper), TINY)


class _Curve:
    """The evaluated points of one block: budget numerators (floor and ceiling of the exact
    position: equal for dyadic points, apart only for the top point ``u``) and memoized values."""

    def __init__(self, term: Term, budget: float, grid: int):
        self.term, self.budget = term, budget
        top = min(term.width, budget)
        self.top_num = (math.floor(top / budget * ONE), math.ceil(top / budget * ONE))
        self.top = top
        self.values: dict[int, float] = {}  # lower numerator -> g
        self.xs: dict[int, float] = {}
        self.calls = 0
        for j in range(grid + 1):
            m = j * (ONE // grid)
            if m < self.top_num[0]:
                self._add(m, budget * j / grid)
        self._add(self.top_num[0], top)

    def _add(self, m: int, x: float) -> None:
        if m in self.values:
            return
        v = float(self.term.oracle(x))
        self.calls += 1
        if math.isnan(v):
            raise ValueError(f"the value oracle returned NaN at {x!r}")
        self.values[m], self.xs[m] = v, x

    def nums(self) -> list[int]:
        return sorted(self.values)

    def ceil_num(self, m: int) -> int:
        return self.top_num[1] if m == self.top_num[0] else m

    def ub_items(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Weights (ceiling numerators), values, and the points' lower numerators (their names)."""
        ms = self.nums()
        w = np.array([self.ceil_num(m) for m in ms], dtype=np.int64)
        return w, np.array([self.values[m] for m in ms]), np.array(ms, dtype=np.int64)[:, None]

    def lb_items(self) -> tuple[np.ndarray, np.ndarray]:
        """One item per cell ``[x_j, x_{j+1})``: weight ``x_j`` (floor), value ``g(x_{j+1})``; and the top point."""
        ms = self.nums()
        vals = [self.values[m] for m in ms]
        return np.array(ms, dtype=np.int64), np.array(vals[1:] + vals[-1:])

    def refine(self, j: int) -> bool:
        """Halve cell j (between the j-th and (j+1)-th points); False at the resolution's end."""
        ms = self.nums()
        lo, hi = ms[j], ms[j + 1]
        mid = (lo + hi) // 2
        if mid <= lo:
            return False
        self._add(mid, self.budget * mid / ONE)
        return True


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


def split(terms: Sequence[Term], budget: float, rtol: float = RTOL, max_calls: int = 400, grid: int = 8) -> Split:
    """Minimize ``sum_i g_i(y_i)`` over ``sum_i y_i <= budget``, ``0 <= y_i <= width_i`` (module
    docstring): the best split found, with a proven lower bound. ``grid`` (a power of two) is
    the first uniform grid; ``max_calls`` bounds the oracle calls of the refinement."""
    if not terms:
        return Split((), (), 0.0, 0.0, 0)
    if not (budget > 0 and math.isfinite(budget)):
        raise ValueError(f"the budget must be positive and finite, not {budget!r}")
    if grid < 1 or grid & (grid - 1):
        raise ValueError("grid must be a power of two")
    curves = [_Curve(t, budget, grid) for t in terms]
    ub = _merge_all([c.ub_items() for c in curves])
    while True:
        upper = _least(ub, math.inf)
        lb_items = [c.lb_items() for c in curves]
        lower = min(_least(_merge_all(lb_items, upper), upper), upper)
        calls = sum(c.calls for c in curves)
        if relative_gap(upper, lower) <= rtol or calls >= max_calls:
            break
        if not _refine(curves, lb_items, upper, rtol):
            break
        better = _merge_all([c.ub_items() for c in curves], upper)
        if better.v.size:
            ub = better
    if not ub.v.size:  # no evaluated combination is feasible: every block at the bottom of its range
        return Split(tuple(0.0 for _ in curves), tuple(c.values[0] for c in curves), math.inf, lower, calls)
    best = ub.pick[int(np.argmin(ub.v))]
    shares = tuple(c.xs[int(m)] for c, m in zip(curves, best))
    values = tuple(c.values[int(m)] for c, m in zip(curves, best))
    return Split(shares, values, math.fsum(values), lower, calls)


def _refine(curves: list[_Curve], lb_items, upper: float, rtol: float) -> bool:
    """Halve every alive cell (module docstring); False when none could be halved."""
    cutoff = upper - rtol * max(abs(upper), TINY) / 2 if math.isfinite(upper) else math.inf
    least = [float(v.min()) for _, v in lb_items]
    total = math.fsum(least)
    prefix = [_Frontier.empty()]
    for k, (w, v) in enumerate(lb_items):
        prefix.append(prefix[-1].merge(w, v, limit=cutoff, rest=total - math.fsum(least[: k + 1])))
    suffix = [_Frontier.empty()]
    for k, (w, v) in enumerate(reversed(lb_items)):
        suffix.append(suffix[-1].merge(w, v, limit=cutoff, rest=total - math.fsum(least[len(least) - k - 1 :])))
    suffix.reverse()
    halved = False
    for i, c in enumerate(curves):
        s = suffix[i + 1]
        others = prefix[i].merge(s.w, s.v, s.pick, limit=cutoff, rest=least[i])
        w, v = lb_items[i]
        bound = v + others.best_within(ONE - w)
        alive = np.flatnonzero(bound[:-1] < cutoff)  # the last item is the top point, not a cell
        for j in sorted(alive, reverse=True):  # from the top: earlier indices stay valid
            halved |= c.refine(int(j))
    return halved


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
    nodes: int = 32,
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
