"""The optimal rank-preserving obfuscation channel (Theorem 2 / Corollary 1 of Shariatnasab,
Shirani & Iyengar 2023), solved globally with a certificate.

The obfuscation program has no canonical program (Q is quasiconcave, the leakage a convex but
not conic constraint): it lowers to its two crossover probabilities (p1, p2), and this module
solves that program. It sits below both of its users: the global method
(``methods/obfuscation.py``) and Corollary 2's check against the certified symmetric bisection
(``closedform/obfuscation.py``).

Problem: minimize ``Q(P_X, W)`` over 2x2 channels ``W = channel(p1, p2)`` subject to
``I(Y; F) <= eps`` (bits), optionally with ``p1 == p2``. Notation as in
``privopt.measures.obfuscation``; T is the triangle ``p1, p2 >= 0, p1 + p2 <= 1``.

Facts used (each elementary; docs/obfuscation.md has the details):

1. **Outside T is never better.** On ``p1 + p2 >= 1``, rho >= 0 so Q >= 1/4, while
   ``p1 = p2 = 1/2`` (Y independent of X) is feasible for every eps >= 0 with Q = 1/4.
2. **I is convex in W** (mutual information is convex in the channel P(Y | F) for the fixed
   input law P_F, and P(Y | F) is linear in W), so the feasible set R = {I <= eps} is convex, and
   every first-order cut ``I(z) + grad I(z) . (p - z) <= eps`` holds on R, whatever the point z.
3. **Q is quasiconcave on T.** On T, ``rho = -sqrt(P_X(0) P_X(1) g)`` with ``g = 4 (a-1)^2 /
   (1 - b^2)``, a = p1 + p2, b = 2 P_Y(1) - 1 (the paper's eq. 4 objective), and g is convex
   (x^2 / y is convex and decreasing in y > 0, 1 - b^2 is concave). So ``{Q >= t} ∩ T = {g <= c}
   ∩ T`` is convex: Q is quasiconcave on T, and its minimum over a convex polygon P ⊆ T is
   attained at a vertex of P. (Q itself is NOT concave everywhere, nor convex: the problem is
   a convex maximization of g, i.e. nonconvex.)
4. **Monotonicity** (proof of Theorem 2, checked): on T, rho and Q are nondecreasing in p1 and
   in p2; I(., p2) is convex on [0, 1 - p2] with I(1 - p2, p2) = 0, hence nonincreasing there (the
   same in p2, and along the diagonal p1 = p2 on [0, 1/2]).

Methods:

* **Symmetric** (p1 = p2 = p): by 4, the optimum is the smallest feasible p in [0, 1/2]. Bisection
  keeps ``lo`` infeasible and ``hi`` feasible; every p <= lo is infeasible, so
  ``Q(lo) <= Q*  <= Q(hi)``: the certificate, closed to the last bit.
* **Unrestricted** (the default, ``search="boundary"``): a certified 1-D search along the boundary
  of the feasible set. Coordinates: ``u = 1 - p1 - p2`` and ``s = P_Y(1) = p1 + u P_X(1)`` (so
  ``1 - s = p2 + u P_X(0)``), a linear bijection under which T is ``0 <= u <= cap(s) =
  min(s / P_X(1), (1 - s) / P_X(0))`` and eq. 2 gives ``rho^2 = P_X(0) P_X(1) phi^2`` with
  ``phi = u / sqrt(s (1 - s))``; on T, Q = 1/4 - arcsin|rho| / (2 pi) falls as phi grows
  (Theorem 2: minimize the correlation). Then:

  a. *The optimum is on the boundary.* At fixed s, phi grows with u, and I(., s) is convex
     (fact 2) with I(0, s) = 0 (Y independent of X), hence nondecreasing on [0, cap(s)]: the best
     point over s is the height ``u*(s) = max{u <= cap(s) : I(u, s) <= eps}`` (Theorem 2's
     "I = eps", or an edge of T), and ``Q* = Q(max_s phi*(s))`` with ``phi* = u* / sqrt(s (1 - s))``.
  b. *Only the curve between the two corners matters.* Along the edge p1 = 0 (u = s / P_X(1))
     phi = sqrt(s / (1 - s)) / P_X(1) increases with s, and its feasible part runs from its I = 0
     end (p2 = 1) to the corner where it meets I = eps (fact 4); likewise on p2 = 0, where phi
     decreases with s. So each edge's best point is its corner (found by bisection along the
     edge), and the maximum of phi* lies in [s_c1, s_c2] between the corners (s_c1 < P_X(1) <
     s_c2: the identity, u = 1, s = P_X(1), is infeasible), where u* < cap(s) and I(u*, s) = eps.
  c. *Heights.* At each s, Newton's method on the convex I(., s) lands at or above the root from
     any start, and ``x eps / I(x)`` is feasible for any x with I(x) > eps (the chord from
     (0, 0)): a bracket ``lo <= u*(s) <= hi`` with lo feasible, closed to NEWTON_RTOL.
  d. *Bounds.* u* is concave (the height of a convex set). Between the corners it is smooth with
     slope ``-I_s / I_u`` (``I_u >= eps / u* > 0`` by convexity); at a corner the curve's one-sided
     slope is a supergradient. So ``u*(s) <= hi_i + g_i (s - s_i)`` for every s, and on each
     interval [s_i, s_i+1] phi* is at most the larger of ``line / sqrt(s (1 - s))`` over the two
     pieces either side of where the endpoint tangents cross; that ratio has a single critical
     point, so its maximum is exact (``_piece_max``). The least Q over the intervals' bounds is
     a proven lower bound; intervals whose bound is within tol of the best feasible point are
     closed, the others are cut (a grid uniform in logit(s), refined where open).

  The search needs no cuts around the whole feasible set: where every boundary point has nearly
  the same Q (eps ~ 1e-6 I(X; F): I ~ C rho^2 to leading order) it evaluates the boundary at about
  a thousand points, all at once, instead of adding cuts one at a time. Where it stops without
  closing the gap (rounding), the outer approximation below answers.
* **Outer approximation** (``search="outer"``, and ``privopt check``'s cross-check; Hoffman/Tuy's
  cutting planes for concave minimization). Start from P = T. Each iteration takes the vertex v
  of P with the least Q: ``Q(v)`` is a lower bound on Q* (facts 1-3: R ∩ T ⊆ P and the minimum
  over P sits at a vertex). If v is feasible, it is optimal. Otherwise the point z where the
  segment from v to the feasible centre (1/2, 1/2) leaves R (bisection, I is monotone along it
  by convexity) is feasible (an upper bound) and the tangent cut at z removes v; P is clipped by
  it. Stops when ``UB - LB <= tol``.

The certificate is exact arithmetic-wise up to floating-point rounding in evaluating I, its
gradient and Q (relative ~1e-15).

``grid_channel`` is the reference for ``privopt check``: a dense grid in p2 (or p), each with the
smallest feasible p1 found by bisection (fact 4). It gives a feasible point, no bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import UsageError
from ..measures.obfuscation import (
    LN2,
    _fingerprint,
    _kl_terms,
    channel,
    check_px,
    krcc_q_p,
    leakage_grad_p,
    leakage_p,
)

__all__ = ["DEFAULT_TOL", "ChannelSolution", "grid_channel", "independence_bound", "optimal_channel", "relative_gap"]

DEFAULT_TOL = 1e-9  # absolute, in Q
MAX_ITER = 5000
LEAK_ROUNDING = 16 * float(np.finfo(float).eps)  # relative: eps within this of I(X; F) is I(X; F)
_SECTIONS = 64  # points per round of the vectorized k-section along a segment


@dataclass(frozen=True, eq=False)
class ChannelSolution:
    """The optimal test channel and what certifies it.

    ``W``: 2x2, rows X, columns Y. ``q_value``: Q(P_X, W). ``lower_bound``: a certified lower
    bound on the global minimum (None for the grid reference); ``gap = q_value - lower_bound``.
    ``leakage``: I(Y; F) of W in bits, recomputed from the table (<= eps). ``status``:
    "optimal" (gap <= tol), "gap_not_closed" (iteration limit; the bound still holds) or
    "feasible" (grid: no bound). ``iterations``: bisection steps or cutting-plane iterations;
    ``evaluations``: leakage evaluations. ``method`` says which route answered."""

    W: np.ndarray
    q_value: float
    lower_bound: float | None
    gap: float | None
    leakage: float
    status: str
    iterations: int
    evaluations: int
    method: str
    symmetric: bool
    eps: float
    tol: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def p1(self) -> float:
        return float(self.W[0, 1])

    @property
    def p2(self) -> float:
        return float(self.W[1, 0])


def _check(px1, F_given_X, eps, tol):
    px1 = check_px(px1)
    pf, r = _fingerprint(px1, F_given_X)
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise UsageError(f"the leakage budget eps must be a number of bits, got {eps!r}") from None
    if not eps >= 0:  # also rejects nan
        raise UsageError(f"the leakage budget eps must be >= 0 bits, got {eps!r}")
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise UsageError(f"tol must be a positive number, got {tol!r}") from None
    if not (tol > 0 and math.isfinite(tol)):
        raise UsageError(f"tol must be a positive number, got {tol!r}")
    return px1, pf, r, eps, tol


class _Oracle:
    """Leakage and Q of (p1, p2) for one instance, counting leakage evaluations."""

    def __init__(self, px1, pf, r):
        self.px1, self.pf, self.r = px1, pf, r
        self.count = 0

    def leak(self, p1, p2):
        self.count += int(np.size(p1))
        return leakage_p(self.px1, self.pf, self.r, p1, p2)

    def q(self, p1, p2):
        return krcc_q_p(self.px1, p1, p2)

    def grad(self, p1, p2):
        return leakage_grad_p(self.px1, self.pf, self.r, p1, p2)


def _first_feasible(feasible_at, lo: float, hi: float):
    """Smallest s in [lo, hi] with feasible_at(s), for a monotone predicate (False ... True) with
    feasible_at(hi) True and feasible_at(lo) False: returns (s_lo, s_hi), s_lo infeasible, s_hi
    feasible, adjacent floats (or the sections stop shrinking). Vectorized k-section: each round
    evaluates _SECTIONS points at once."""
    rounds = 0
    while True:
        rounds += 1
        s = np.linspace(lo, hi, _SECTIONS + 1)[1:-1]
        s = s[(s > lo) & (s < hi)]
        if s.size == 0:
            return lo, hi, rounds
        ok = feasible_at(s)
        k = int(np.argmax(ok)) if ok.any() else s.size
        new_lo = lo if k == 0 else float(s[k - 1])
        new_hi = hi if k == s.size else float(s[k])
        if new_lo == lo and new_hi == hi:
            return lo, hi, rounds
        lo, hi = new_lo, new_hi


def _solution(o, p1, p2, lb, status, iterations, method, symmetric, eps, tol, notes):
    W = channel(p1, p2)
    q = float(o.q(p1, p2))
    leak = float(leakage_p(o.px1, o.pf, o.r, p1, p2))
    gap = None if lb is None else max(q - lb, 0.0)
    return ChannelSolution(W, q, lb, gap, leak, status, iterations, o.count, method, symmetric, eps, tol, tuple(notes))


SEARCHES = ("boundary", "outer")


def optimal_channel(
    px1,
    F_given_X,
    eps,
    symmetric: bool = False,
    tol: float = DEFAULT_TOL,
    max_iter: int = MAX_ITER,
    search: str = "boundary",
) -> ChannelSolution:
    """The test channel W minimizing Q(P_X, W) subject to I(Y; F) <= eps bits (and p1 == p2 when
    ``symmetric``), with a certified lower bound: ``lower_bound <= Q* <= q_value`` and
    ``gap <= tol`` when status is "optimal". See the module docstring for the method.
    ``search`` picks the unrestricted method: "boundary" (the 1-D boundary search, with the outer
    approximation as fallback where it cannot close the gap) or "outer" (the outer approximation
    alone, ``max_iter`` cuts at most: ``privopt check``'s cross-check).

    Edges: P_X(1) in {0, 1} (X constant: I = 0 and Q = 1/4 for every W, the identity is
    returned); eps >= I(X; F) (the identity is feasible, Q = 0); eps = 0 with F dependent on X
    (only channels with Y independent of X are feasible, Q = 1/4, W = BSC(1/2)); eps so small that
    ``independence_bound`` is within tol of 1/4 (e.g. 1e-300: the feasible channels are
    independent up to rounding, |u| ~ sqrt(eps)): BSC(1/2), certified by that bound."""
    px1, pf, r, eps, tol = _check(px1, F_given_X, eps, tol)
    if search not in SEARCHES:
        raise UsageError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    o = _Oracle(px1, pf, r)
    symmetric = bool(symmetric)

    def done(p1, p2, lb, status, iterations, method, notes):
        return _solution(o, p1, p2, lb, status, iterations, method, symmetric, eps, tol, notes)

    if px1 in (0.0, 1.0):
        return done(
            0.0,
            0.0,
            0.25,
            "optimal",
            0,
            "degenerate",
            ["X is constant: every channel has I(Y; F) = 0 and Q = 1/4 (rho = 0); the identity is returned"],
        )
    imax = float(o.leak(0.0, 0.0))
    if imax <= eps:
        return done(
            0.0,
            0.0,
            0.0,
            "optimal",
            0,
            "identity",
            [f"eps = {eps:g} >= I(X; F) = {imax:.6g} bits, the largest leakage of any channel: no noise is needed"],
        )
    if imax <= eps * (1.0 + LEAK_ROUNDING):
        return done(
            0.0,
            0.0,
            0.0,
            "optimal",
            0,
            "identity",
            [
                (
                    f"eps = {eps!r} is I(X; F) = {imax!r} bits up to rounding (two formulas for I differ by a "
                    "few ulps): the identity is returned; below it the optimum would be p ~ 1e-17, where "
                    "Q ~ sqrt(p) is ill-conditioned"
                )
            ],
        )
    if eps == 0.0:
        return done(
            0.5,
            0.5,
            0.25,
            "optimal",
            0,
            "independent",
            [
                (
                    "eps = 0 and F depends on X: I(Y; F) = 0 forces P(Y | X = 0) = P(Y | X = 1) "
                    "(p1 + p2 = 1), where Q = 1/4 exactly; BSC(1/2) is returned"
                )
            ],
        )
    deficit = independence_bound(px1, pf, r, eps)
    floor = 0.25 - deficit
    if deficit <= tol:
        return done(
            0.5,
            0.5,
            floor,
            "optimal",
            0,
            "independent",
            [
                (
                    f"eps = {eps!r} bits is so small that no channel beats Y independent of X by more than "
                    f"{deficit:.3g} in Q (the bound |rho| <= sqrt(2 ln2 P_X(0) P_X(1) eps / "
                    "sum_f P(f)^3 (r_f - P_X(1))^2)): BSC(1/2) is returned, Q = 1/4, certified within that"
                )
            ],
        )
    if symmetric:
        return _symmetric(o, eps, done)
    if search == "outer":
        return _outer_approximation(o, eps, tol, max_iter, done, floor)
    sol = _boundary_search(o, eps, tol, done, floor)
    if sol.status == "optimal":
        return sol
    alt = _outer_approximation(o, eps, tol, max_iter, done, floor)
    best = alt if alt.gap < sol.gap else sol
    why = f"the boundary search stopped with a gap of {sol.gap:.1e}, the outer approximation with {alt.gap:.1e}"
    return replace(best, notes=(*best.notes, why))


def independence_bound(px1: float, pf, r, eps: float) -> float:
    """How far below 1/4 the optimum can be, from the leakage budget alone (tight as eps -> 0):
    ``Q* >= 1/4 - arcsin(min(1, sqrt(2 ln2 P_X(0) P_X(1) eps / S))) / (2 pi)``; returns the
    arcsin term (the deficit; 1/4 minus it is a proven lower bound), with
    ``S = sum_f P(f)^3 (r_f - P_X(1))^2`` (S > 0 iff F depends on X).

    Proof. Off T (p1 + p2 >= 1) Q >= 1/4 (fact 1). On T, with ``s = P_Y(1)``, ``t_f = P(Y=1|F=f)
    = s + delta_f`` and ``delta_f = u (r_f - P_X(1))``: the binary divergence is
    ``d(t || s) = int_s^t (t - x) / (x (1 - x)) dx >= delta^2 / (2 max x (1 - x))`` (nats), the max
    over x between s and t_f; since ``s = sum_f P(f) t_f >= P(f) t_f``, every such x has
    ``x <= s / P(f)`` and ``1 - x <= (1 - s) / P(f)``, so ``x (1 - x) <= s (1 - s) / P(f)^2`` and
    ``I ln2 >= u^2 S / (2 s (1 - s))``. The correlation of eq. 2 is ``rho^2 = u^2 P_X(0) P_X(1) /
    (s (1 - s))`` (module ``measures.obfuscation``), hence ``rho^2 <= 2 ln2 P_X(0) P_X(1) I / S``
    and Sheppard's ``Q = 1/4 - arcsin|rho| / (2 pi)`` gives the bound. Rounding: the bound is
    computed to a few ulps; it is used only when it is within tol of 1/4."""
    px0 = 1.0 - px1
    live = pf > 0
    S = float(np.sum(np.where(live, pf**3 * (r - px1) ** 2, 0.0)))
    if S <= 0.0:  # F independent of X: every channel leaks 0 and Q* = 0
        return 0.25
    with np.errstate(over="ignore"):
        x = math.sqrt(min(1.0, 2.0 * LN2 * px0 * px1 * eps / S)) if math.isfinite(eps) else 1.0
    return math.asin(min(1.0, x)) / (2.0 * math.pi)


def _symmetric(o: _Oracle, eps: float, done) -> ChannelSolution:
    lo, hi, rounds = _first_feasible(lambda s: o.leak(s, s) <= eps, 0.0, 0.5)
    lb = float(o.q(lo, lo))
    return done(
        hi,
        hi,
        lb,
        "optimal",
        rounds,
        "bisection",
        [
            (
                f"symmetric: p in [{lo!r}, {hi!r}]; I(p, p) is nonincreasing and Q(p, p) increasing on "
                "[0, 1/2], so every p <= lo is infeasible and Q(lo) bounds Q* from below"
            )
        ],
    )


def _clip(poly: np.ndarray, g: np.ndarray, h: float) -> np.ndarray:
    """Convex polygon (k, 2) ∩ {p : g . p <= h} (Sutherland-Hodgman for one half-plane,
    vectorized: kept vertices and edge crossings, ordered along the boundary)."""
    f = poly @ g - h
    nxt = np.roll(np.arange(len(poly)), -1)
    fa, fb = f, f[nxt]
    keep = fa <= 0
    cross = ((fa < 0) & (fb > 0)) | ((fb < 0) & (fa > 0))
    t = np.where(cross, fa / np.where(cross, fa - fb, 1.0), 0.0)
    inter = poly + t[:, None] * (poly[nxt] - poly)
    pts = np.concatenate([poly[keep], inter[cross]])
    order = np.argsort(np.concatenate([2 * np.flatnonzero(keep), 2 * np.flatnonzero(cross) + 1]), kind="stable")
    pts = pts[order]
    if len(pts) > 1:
        dup = np.all(pts == np.roll(pts, 1, axis=0), axis=1)
        dup[0] = dup[0] and len(pts) > 1
        pts = pts[~dup] if not dup.all() else pts[:1]
    return np.clip(pts, 0.0, 1.0)


def _outer_approximation(
    o: _Oracle, eps: float, tol: float, max_iter: int, done, floor: float = 0.0
) -> ChannelSolution:
    centre = np.array([0.5, 0.5])  # Y independent of X: I = 0, Q = 1/4
    best, ub = centre, 0.25
    poly = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    lb = 0.0
    it = 0
    status = "gap_not_closed"
    note = ""
    while it < max_iter:
        qv = o.q(poly[:, 0], poly[:, 1])
        j = int(np.argmin(qv))
        lb = max(float(qv[j]), floor)  # both are proven lower bounds
        if ub - lb <= tol:
            status = "optimal"
            break
        v = poly[j]
        it += 1
        if o.leak(v[0], v[1]) <= eps:
            best, ub = v.copy(), lb
            status = "optimal"
            break
        d = 0.5 * (1.0 - v[0] - v[1]) * np.ones(2)  # to the hypotenuse, where I = 0

        def feasible(s, v=v, d=d):
            return o.leak(v[0] + s * d[0], v[1] + s * d[1]) <= eps

        _s_lo, s_hi, _ = _first_feasible(feasible, 0.0, 1.0)
        z = v + s_hi * d
        z = np.clip(z, 0.0, 1.0)
        if o.leak(z[0], z[1]) > eps:  # rounding in v + s d: fall back to the centre side
            z = v + min(1.0, s_hi * (1 + 1e-12)) * d
        qz = float(o.q(z[0], z[1]))
        if qz < ub and o.leak(z[0], z[1]) <= eps:
            best, ub = z.copy(), qz
        g = o.grad(z[0], z[1])
        step = s_hi
        while not np.all(np.isfinite(g)) and step < 1.0:  # any point gives a valid cut
            step = min(1.0, 2.0 * step + 1e-300)
            z = v + step * d
            g = o.grad(z[0], z[1])
        if not np.all(np.isfinite(g)) or not np.any(g):
            note = "stopped: no finite cut at the boundary point"
            break
        h = eps - float(o.leak(z[0], z[1])) + float(g @ z)
        new = _clip(poly, g, h)
        if len(new) < 3 or (len(new) == len(poly) and np.array_equal(new, poly)):
            note = "stopped: the cut no longer changes the outer polygon (rounding floor)"
            break
        poly = new
    status = "optimal" if ub - min(lb, ub) <= tol else "gap_not_closed"
    notes = [
        (
            f"outer approximation: {it} cuts, {len(poly)} vertices; Q is quasiconcave on p1 + p2 <= 1 and "
            "I(Y; F) convex, so the least Q over the polygon's vertices bounds Q* from below"
        )
    ]
    if note:
        notes.append(note)
    best, ub, edge = _edge_polish(o, eps, best, ub)
    if edge:
        notes.append(edge)
    status = "optimal" if ub - min(lb, ub) <= tol else status
    lb = min(lb, ub)
    return done(float(best[0]), float(best[1]), lb, status, it, "outer-approximation", notes)


EDGE = 1e-6  # a coordinate this close to 0 is tried at 0 exactly


def _edge_polish(o: _Oracle, eps: float, best: np.ndarray, ub: float):
    """The optimum often lies on an edge of T (p1 = 0 or p2 = 0: the channel never flips one of
    the two labels); the cuts approach it to within the tolerance, not exactly. Where a
    coordinate of the best point is below ``EDGE``, the best point of that edge (the other
    coordinate's least feasible value, by bisection: I is nonincreasing in it there) is taken
    when it is feasible and no worse. The lower bound is unchanged: this only improves the
    feasible point."""
    note = ""
    for k in (0, 1):
        if not 0.0 < best[k] < EDGE:
            continue
        other = 1 - k

        def feasible(s, k=k, other=other):
            pt = [np.zeros_like(s), np.zeros_like(s)]
            pt[other] = s
            return o.leak(pt[0], pt[1]) <= eps

        _, hi, _ = _first_feasible(feasible, 0.0, 1.0) if not feasible(np.array([0.0]))[0] else (0.0, 0.0, 0)
        cand = np.zeros(2)
        cand[other] = hi
        q = float(o.q(cand[0], cand[1]))
        if q <= ub and o.leak(cand[0], cand[1]) <= eps:
            best, ub = cand, q
            note = f"on the edge p{k + 1} = 0: the least feasible p{other + 1} by bisection (Q {q!r})"
    return best, ub, note


# ------------------------------------------------------------------ the 1-D boundary search

BOUNDARY_GRID = 65  # initial points, uniform in x = logit(s) between the two corners
BOUNDARY_SPLIT = 4  # an interval whose bound is open is cut into this many
BOUNDARY_ROUNDS = 80
NEWTON_RTOL = 1e-13  # relative width of the bracket [lo, hi] around each height u*(s)
NEWTON_STEPS = 100  # safeguarded Newton steps per height (bisection where a step leaves the bracket)


class _Heights:
    """The upper boundary of the feasible set over the line ``s = P_Y(1)``, in the coordinates
    ``u = 1 - p1 - p2``, ``s = p1 + u P_X(1)`` (so ``1 - s = p2 + u P_X(0)``; a linear bijection of
    (p1, p2), T becomes ``0 <= u <= cap(s) = min(s / P_X(1), (1 - s) / P_X(0))``).

    ``solve(s, sc, guess)`` returns, per point, ``lo <= u*(s) <= hi`` (lo feasible), and a
    supergradient ``slope`` of the concave u* at s (NaN where none is available), where
    ``u*(s) = max{u <= cap(s) : I(u, s) <= eps}``. Along the segment u in [0, cap(s)] at fixed s,
    I is convex with I(0, s) = 0 (Y independent of X), so (a) it is nondecreasing, (b) a Newton
    step from any point lands at or above the root, (c) the chord bound ``I(x eps / I(x)) <= eps``
    makes ``x eps / I(x)`` feasible for every x with I(x) > eps, and (d) ``I_u >= eps / u* > 0`` at
    the root, so the implicit slope ``du*/ds = -I_s / I_u`` exists where u* < cap(s). On the edge
    (u* = cap(s)) the active edge line's slope is a supergradient (u* <= cap)."""

    def __init__(self, o: _Oracle, eps: float):
        self.o, self.eps = o, eps
        self.px1, self.px0 = o.px1, 1.0 - o.px1
        live = o.pf > 0
        self.S2 = float(np.sum(np.where(live, o.pf * (o.r - o.px1) ** 2, 0.0)))  # > 0: F depends on X

    def point(self, u, s, sc):
        """(p1, p2) of height u over s, with the edge coordinate exactly 0 at u = cap(s)."""
        p1 = np.where(u * self.px1 >= s, 0.0, s - u * self.px1)
        p2 = np.where(u * self.px0 >= sc, 0.0, sc - u * self.px0)
        return p1, p2

    def derivatives(self, u, s, sc):
        """(I_u, I_s) in bits at height u over s: ``I = sum_f P(f) d(s + u delta_f || s)`` with
        ``delta_f = r_f - P_X(1)``, ``d/dt d(t || s) = logit t - logit s`` and ``d/ds d(t || s) =
        (s - t) / (s (1 - s))``, whose P(f)-weighted sum vanishes (sum_f P(f) delta_f = 0)."""
        o = self.o
        _, _, l1, l0 = _kl_terms(self.px1, o.pf, o.r, *self.point(u, s, sc))
        with np.errstate(invalid="ignore"):
            w = np.where(o.pf > 0, o.pf * (l1 - l0), 0.0)
            return np.sum(w * (o.r - self.px1), axis=-1) / LN2, np.sum(w, axis=-1) / LN2

    def solve(self, s, sc, guess=None):
        """Brackets and slopes at the points (s, 1 - s), from ``guess`` (heights; the quadratic
        term of I, ``I ln2 ~ u^2 S2 / (2 s (1 - s))``, where None or not positive)."""
        o, eps = self.o, self.eps
        cap = np.minimum(s / self.px1, sc / self.px0)
        i_cap = o.leak(*self.point(cap, s, sc))
        edge = i_cap <= eps
        lo = np.where(edge, cap, cap * np.minimum(1.0, eps / np.where(edge, 1.0, i_cap)))
        hi = cap.copy()
        quadratic = np.sqrt(2.0 * LN2 * eps * s * sc / self.S2)
        x = np.clip(quadratic if guess is None else np.where(guess > 0, guess, quadratic), lo, hi)
        todo = np.flatnonzero(~edge & (hi - lo > NEWTON_RTOL * hi))
        for _ in range(NEWTON_STEPS):
            if todo.size == 0:
                break
            xs, ss, scs, low, high = x[todo], s[todo], sc[todo], lo[todo], hi[todo]
            ix = o.leak(*self.point(xs, ss, scs))
            feas = ix <= eps
            chord = xs * np.minimum(1.0, eps / np.where(feas, 1.0, ix))
            low = np.maximum(low, np.where(feas, xs, chord))
            high = np.where(feas, high, np.minimum(high, xs))
            du, _ = self.derivatives(xs, ss, scs)
            with np.errstate(divide="ignore", invalid="ignore"):
                nxt = xs - (ix - eps) / du
            # from a feasible x, step at least past the bracket's tolerance (rounding can leave
            # Newton creeping up to the root from below, an ulp at a time)
            nxt = np.where(feas, np.maximum(nxt, xs * (1.0 + 0.5 * NEWTON_RTOL)), nxt)
            nxt = np.where(np.isfinite(nxt) & (nxt > low) & (nxt < high), nxt, 0.5 * (low + high))
            lo[todo], hi[todo], x[todo] = low, high, nxt
            todo = todo[high - low > NEWTON_RTOL * high]
        edge_slope = np.where(s * self.px0 <= sc * self.px1, 1.0 / self.px1, -1.0 / self.px0)
        return lo, hi, np.where(edge, edge_slope, self.slope(hi, s, sc))

    def slope(self, u, s, sc):
        """The implicit slope ``du/ds = -I_s / I_u`` of the level curve through height u over s
        (NaN where I_u is not a positive finite number)."""
        du, ds = self.derivatives(u, s, sc)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(du > 0, -ds / du, np.nan)
        return np.where(np.isfinite(g), g, np.nan)


def _piece_max(alpha, beta, s0, sc0, delta, ta, tb):
    """Max over tau in [ta, tb] of ``(alpha + beta tau) / sqrt(s (1 - s))`` with ``s = s0 + tau
    delta`` and ``1 - s = sc0 - tau delta`` (each side formed directly, so both keep their digits
    near 0 and 1). The derivative vanishes only where ``beta s (1 - s) = (alpha + beta tau) delta
    (1 - 2 s) / 2``; the tau^2 terms cancel, leaving one root ``tau* = (alpha delta D / 2 - beta s0
    sc0) / (beta delta D / 2 + alpha delta^2)``, D = sc0 - s0: the max is at ta, tb or tau*."""
    D = sc0 - s0
    with np.errstate(divide="ignore", invalid="ignore"):
        ts = (alpha * delta * D / 2 - beta * s0 * sc0) / (beta * delta * D / 2 + alpha * delta**2)
    ts = np.where(np.isfinite(ts) & (ts > ta) & (ts < tb), ts, ta)
    best = np.full(np.shape(alpha), -np.inf)
    for t in (ta, tb, ts):
        s, sc = s0 + t * delta, sc0 - t * delta
        with np.errstate(divide="ignore", invalid="ignore"):
            v = (alpha + beta * t) / np.sqrt(s * sc)
        best = np.maximum(best, np.where(np.isnan(v), np.inf, v))
    return best


def _interval_bounds(s, sc, hi, slope, px1):
    """Upper bounds on ``phi(s) = u*(s) / sqrt(s (1 - s))`` over each interval [s_i, s_i+1].

    u* is concave (the height of a convex set), so with a supergradient g_i at s_i,
    ``u*(s) <= hi_i + g_i (s - s_i)`` for every s; on the interval u* is below the lesser of the
    two endpoint tangents (NaN slope: that tangent is not used), and phi below the larger of
    ``_piece_max`` on the two pieces either side of where they cross (any split point is valid).
    Also ``u* <= cap(s)``: phi <= sqrt(s / (1 - s)) / P_X(1), increasing, and
    sqrt((1 - s) / s) / P_X(0), decreasing, their lesser peaking at s = P_X(1)."""
    px0 = 1.0 - px1
    s0, sc0, s1, sc1 = s[:-1], sc[:-1], s[1:], sc[1:]
    delta = np.where(s0 < 0.5, s1 - s0, sc0 - sc1)
    h0, h1, g0, g1 = hi[:-1], hi[1:], slope[:-1], slope[1:]
    a0, b0 = h0, g0 * delta  # tangent at s_i: a0 + b0 tau
    a1, b1 = h1 - g1 * delta, g1 * delta  # tangent at s_i+1
    use0, use1 = np.isfinite(g0), np.isfinite(g1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (a1 - a0) / (b0 - b1)
    cross = np.where(np.isfinite(cross), np.clip(cross, 0.0, 1.0), 0.5)
    cross = np.where(use0 & ~use1, 1.0, np.where(use1 & ~use0, 0.0, cross))
    zero, one = np.zeros_like(s0), np.ones_like(s0)
    left = np.where(
        use0, _piece_max(np.where(use0, a0, 0.0), np.where(use0, b0, 0.0), s0, sc0, delta, zero, cross), -np.inf
    )
    right = np.where(
        use1, _piece_max(np.where(use1, a1, 0.0), np.where(use1, b1, 0.0), s0, sc0, delta, cross, one), -np.inf
    )
    tangent = np.where(use0 | use1, np.maximum(left, right), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        edge = np.where(
            s1 <= px1, np.sqrt(s1 / sc1) / px1, np.where(s0 >= px1, np.sqrt(sc0 / s0) / px0, 1.0 / math.sqrt(px0 * px1))
        )
    return np.minimum(tangent, edge)


def _refine(x, active):
    """New grid points in the active intervals of the sorted logit grid x: each cut into
    BOUNDARY_SPLIT equal parts (points already on the grid, at float64's resolution, dropped)."""
    a, b = x[:-1][active], x[1:][active]
    steps = np.arange(1, BOUNDARY_SPLIT) / BOUNDARY_SPLIT
    new = (a[:, None] + (b - a)[:, None] * steps[None, :]).ravel()
    return np.unique(new[(new > x[0]) & (new < x[-1]) & ~np.isin(new, x)])


def _corners(o: _Oracle, eps: float, heights: _Heights):
    """The two points where the curve I = eps meets the edges of T: on p1 = 0 the least feasible
    p2, on p2 = 0 the least feasible p1 (I is nonincreasing in the other coordinate along each
    edge, fact 4; I(0, 0) = I(X; F) > eps and I = 0 at the far end). Returns (s, 1 - s, u, (p1,
    p2)) of each, the point itself feasible as evaluated, in the order p1 = 0 (s = P_X(1) u), then
    p2 = 0 (1 - s = P_X(0) u)."""
    out = []
    for k in (0, 1):

        def feasible(t, k=k):
            pt = [np.zeros_like(t), np.zeros_like(t)]
            pt[1 - k] = t
            return o.leak(pt[0], pt[1]) <= eps

        _, t, _ = _first_feasible(feasible, 0.0, 1.0)
        u = 1.0 - t  # p_k = 0, p_other = t
        s, sc = (heights.px1 * u, t + heights.px0 * u) if k == 0 else (t + heights.px1 * u, heights.px0 * u)
        out.append((s, sc, u, (0.0, t) if k == 0 else (t, 0.0)))
    return out


def _boundary_search(o: _Oracle, eps: float, tol: float, done, floor: float) -> ChannelSolution:
    """The unrestricted optimum by a certified 1-D search along the boundary (module docstring,
    docs/obfuscation.md "The 1-D boundary search")."""
    px1 = o.px1
    k = math.sqrt(px1 * (1.0 - px1))
    heights = _Heights(o, eps)
    corners = _corners(o, eps, heights)
    (sa, sca, ua, _), (sb, scb, ub_, _) = corners
    xa, xb = math.log(sa / sca), math.log(sb / scb)
    inner = np.linspace(xa, xb, BOUNDARY_GRID)[1:-1]
    x = np.concatenate([[xa], inner, [xb]])
    s = np.concatenate([[sa], _expit(inner), [sb]])
    sc = np.concatenate([[sca], _expit(-inner), [scb]])
    lo, hi, slope = heights.solve(s, sc)
    # the corners: exact heights, and the curve's one-sided slope (the edge's would bound the far side)
    lo[0], hi[0], lo[-1], hi[-1] = ua, ua, ub_, ub_
    slope[[0, -1]] = heights.slope(np.array([ua, ub_]), s[[0, -1]], sc[[0, -1]])
    rounds, note = 0, ""
    while True:
        rounds += 1
        phi = lo / np.sqrt(s * sc)
        j = int(np.argmax(phi))
        qb = float(o.q(*heights.point(lo[j], s[j], sc[j])))
        ub = _interval_bounds(s, sc, hi, slope, px1)
        qub = 0.25 - np.arcsin(np.minimum(1.0, k * ub)) / (2.0 * math.pi)
        active = qub < qb - tol
        if not active.any():
            break
        if rounds >= BOUNDARY_ROUNDS:
            note = f"stopped after {rounds} rounds"
            break
        new = _refine(x, active)
        if new.size == 0:
            note = "stopped: the open intervals cannot be cut further (rounding floor)"
            break
        pos = np.searchsorted(x, new)  # warm start: phi interpolated in x between the neighbours
        w = (new - x[pos - 1]) / (x[pos] - x[pos - 1])
        ns, nsc = _expit(new), _expit(-new)
        nlo, nhi, nslope = heights.solve(ns, nsc, ((1 - w) * phi[pos - 1] + w * phi[pos]) * np.sqrt(ns * nsc))
        order = np.argsort(np.concatenate([x, new]), kind="stable")
        x, s, sc, lo, hi, slope = (
            np.concatenate([a, b])[order]
            for a, b in ((x, new), (s, ns), (sc, nsc), (lo, nlo), (hi, nhi), (slope, nslope))
        )
    lb = max(float(qub.min()), floor)
    if j in (0, len(x) - 1):  # a corner: the point found on its edge
        best = np.array(corners[0 if j == 0 else 1][3])
    else:  # nudged into the feasible set should rounding have left it a hair outside
        u = lo[j]
        for step in range(60):
            p1, p2 = heights.point(u, s[j], sc[j])
            if o.leak(p1, p2) <= eps:
                break
            u *= 1.0 - 2.0 ** (step - 52)
        best = np.array([float(p1), float(p2)])
    ub_q = float(o.q(best[0], best[1]))
    notes = [
        (
            f"boundary search: {len(x)} points on the curve I(Y; F) = eps between its two corners on the "
            f"edges, {rounds} rounds; the height u*(s) of the convex feasible set is concave, so its tangents "
            "bound it and the least Q over the intervals' bounds is a proven lower bound"
        )
    ]
    if note:
        notes.append(note)
    best, ub_q, edge = _edge_polish(o, eps, best, ub_q)
    if edge:
        notes.append(edge)
    lb = min(lb, ub_q)
    status = "optimal" if ub_q - lb <= tol else "gap_not_closed"
    return done(float(best[0]), float(best[1]), lb, status, rounds, "boundary-search", notes)


def _expit(x):
    """``1 / (1 + exp(-x))``, to a few ulps on both tails."""
    return 1.0 / (1.0 + np.exp(-x))


def grid_channel(px1, F_given_X, eps, symmetric: bool = False, points: int = 20001) -> ChannelSolution:
    """Reference for ``privopt check``: ``points`` values of p2 in [0, 1] (p in [0, 1/2] when
    symmetric), each with the smallest feasible p1 in [0, 1 - p2] found by bisection (I is
    nonincreasing in p1 there, and Q nondecreasing); the best of these feasible points. No
    certificate (lower_bound None): its error is O(spacing) at a kink, O(spacing^2) at a smooth
    minimum."""
    px1, pf, r, eps, _ = _check(px1, F_given_X, eps, 1.0)
    if int(points) != points or points < 2:
        raise UsageError(f"points must be an integer >= 2, got {points!r}")
    o = _Oracle(px1, pf, r)
    if symmetric:
        p = np.linspace(0.0, 0.5, int(points))
        ok = o.leak(p, p) <= eps
        k = int(np.argmax(ok))  # p = 1/2 is always feasible
        return _solution(
            o,
            float(p[k]),
            float(p[k]),
            None,
            "feasible",
            int(points),
            "grid",
            True,
            eps,
            0.0,
            [f"grid of {points} symmetric channels, spacing {0.5 / (points - 1):.3g}"],
        )
    p2 = np.linspace(0.0, 1.0, int(points))
    lo = np.zeros_like(p2)
    hi = 1.0 - p2
    at0 = o.leak(lo, p2) <= eps
    hi = np.where(at0, 0.0, hi)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        ok = o.leak(mid, p2) <= eps
        lo = np.where(ok, lo, mid)
        hi = np.where(ok, mid, hi)
    q = o.q(hi, p2)
    k = int(np.argmin(q))
    return _solution(
        o,
        float(hi[k]),
        float(p2[k]),
        None,
        "feasible",
        64,
        "grid",
        False,
        eps,
        0.0,
        [f"grid of {points} values of p2, spacing {1.0 / (points - 1):.3g}, p1 by 64 bisection steps"],
    )


def relative_gap(gap: float | None, q: float) -> float | None:
    """A certificate's gap relative to Q (None when the route has none)."""
    if gap is None:
        return None
    return gap / abs(q) if q else gap
