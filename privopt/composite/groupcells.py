"""A joint Gaussian group's term of a split, bounded at second order inside its cells (issue 21,
item 3; issue 22; docs/blocks.md, "How far the split's bound closes").

The group's term at its eps share y is ``V(y) = p(s(y))``: ``p(s)`` the optimal value of its
joint program (its targets as rows, if any) when the allowed squared Mahalanobis sensitivity is
``s``, and ``s(y) = mu(y)^2``, ``mu(y)`` the largest sensitivity the calibration allows at
``(y, delta)`` (the noise's own units: the program's sensitivity rows are ``w_j^2 f_j' Sigma^+
f_j <= s``, ``lower/noise.py``; s enters only their right-hand sides ``t_j``).

**A point's bound for every s** (``gaussian.dual_curve``). The joint program at weights ``w'``
without targets is homogeneous (Sigma scaled by ``c`` divides every squared sensitivity by
``c``), so its noise part is exactly ``N*(D) = N*(D_b) D_b^2 / D^2``; a dual point proving
``N*(D_b) >= L - o'`` at the lowering's sensitivity ``D_b`` (``ConicProgram.dual_bound``: ``a^2 /
(r t'mu)``, itself ``1 / s`` in the right-hand side) proves ``p(s) >= A + P / s`` for every
``s > 0``, with ``P = max(L - o', 0) D_b^2`` and ``A = o' - sum_a k_a T_a`` (weak duality with the
targets' multipliers ``k_a`` moved into the weights, ``gaussian.proven_bound``). ``A + P / s`` is
convex in ``s``, so at ``s1 = mu_hi^2 >= s(y1)`` (``mu_hi`` the calibration's proven ceiling at the
point y1) its tangent is a lower bound for every s:

    V(y) >= B1 - lam1 (s(y) - s1),   B1 = A + P / s1,   lam1 = P / s1^2

(``lam1``: the dual point's price of the squared sensitivity at ``s1``).

**The calibration's slope.** Analytic (Balle & Wang 2018, Thm. 8): ``mu(eps)`` solves ``delta =
Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``. Its partial derivatives are ``-e^eps Phi(-a)``
in eps and ``phi(mu/2 - eps/mu)`` in mu (``a = mu/2 + eps/mu``; the identity ``e^eps phi(-a) =
phi(mu/2 - eps/mu)`` cancels the rest), so by implicit differentiation

    mu'(eps) = e^eps Phi(-a) / phi(mu/2 - eps/mu) = Phi(-a) / phi(a) = R(a),

``R`` the Mills ratio ``sqrt(pi/2) erfcx(a / sqrt 2)``, decreasing. On a cell ``[e1, e2]`` with
``mu_lo(e1) <= mu <= mu_hi(e2)`` (``mu`` increases with eps), ``a >= mu_lo(e1)/2 + e1/mu_hi(e2)``
and ``a <= mu_hi(e2)/2 + e2/mu_lo(e1)``, so ``s' = 2 mu R(a)`` lies in ``[m, M]``:

    M = 2 mu_hi(e2) R(mu_lo(e1)/2 + e1/mu_hi(e2)),   m = 2 mu_lo(e1) R(mu_hi(e2)/2 + e2/mu_lo(e1)).

Classic (Dwork & Roth, Thm. A.1): ``mu = k eps``, ``k = 1 / sqrt(2 ln(1.25/delta))``, ``s' = 2 mu
k``: ``M = 2 mu_hi(e2) k``, ``m = 2 mu_lo(e1) k``. ``M`` is widened and ``m`` narrowed by ``MARGIN``
(relative) for rounding. ``mu_lo``, ``mu_hi`` are ``measures.gaussian.max_sensitivity`` and
``sensitivity_ceiling`` (each checked by one evaluation of the calibration's condition).

**A cell's bounds** (no convexity of ``V`` or of ``1 / D(y)^2`` is needed). From the cell's lower
end ``y1`` toward ``y > y1``: ``s(y) <= s1 + M (y - y1)``, so ``V(y) >= B1 - lam1 M (y - y1)``;
from its upper end ``y2`` toward ``y < y2``: ``s(y) <= s2 - m (y2 - y)``, so ``V(y) >= B2 + lam2 m
(y2 - y)``. Both are linear in y (the concave pieces ``split.CellEnds`` merges), and tight to
second order: ``M - s'(y1) = O(y2 - y1)``. The cell is cut where the two lines meet (``kink``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

MARGIN = 1e-12  # M widened, m narrowed (relative): erfcx to a few ulps, a's rounding moves R by ~a^2 ulps
KIND = "joint"  # a term's certificates in a result: a joint Gaussian group's (``GroupDual.records``)


def mills(x: float) -> float:
    """``R(x) = Phi(-x) / phi(x) = sqrt(pi/2) erfcx(x / sqrt 2)``, the Mills ratio (decreasing)."""
    from scipy.special import erfcx

    return math.sqrt(math.pi / 2) * float(erfcx(x / math.sqrt(2.0)))


@functools.lru_cache(maxsize=1 << 16)
def mu_bounds(eps: float, delta: float, calibration: str) -> tuple[float, float]:
    """``(mu_lo, mu_hi)``: the largest sensitivity allowed at ``(eps, delta)`` as computed (on the
    private side) and its proven ceiling (``measures.gaussian``)."""
    from ..measures.gaussian import max_sensitivity, sensitivity_ceiling

    lo = max_sensitivity(eps, delta, calibration) if eps >= 0 else 0.0
    return lo, sensitivity_ceiling(eps, delta, calibration, lo) if lo > 0 else math.inf


def mu_holds(eps: float, delta: float, calibration: str, lo: float, hi: float) -> tuple[bool, bool]:
    """Whether ``lo <= mu(eps) <= hi``, each by one evaluation of the calibration's condition:
    ``lo`` is private (``delta(lo) <= delta``), ``hi`` is not (``delta(hi) > delta``; classic:
    ``lo <= k eps <= hi``)."""
    from ..measures.gaussian import classic_bound, log_analytic_delta

    if calibration == "classic":
        k = classic_bound(eps, delta)
        return 0 < lo <= k, hi >= k
    log_delta = math.log(delta)
    return (0 < lo and log_analytic_delta(lo, eps) <= log_delta), log_analytic_delta(hi, eps) > log_delta


def slopes(e1: float, e2: float, lo1: float, hi2: float, delta: float, calibration: str) -> tuple[float, float]:
    """``(m, M)``: bounds on ``s'(eps) = d mu(eps)^2 / d eps`` over ``[e1, e2]`` from ``mu_lo(e1) =
    lo1`` and ``mu_hi(e2) = hi2`` (module docstring), ``m`` narrowed and ``M`` widened by ``MARGIN``."""
    if not (hi2 < math.inf and lo1 > 0):
        return 0.0, math.inf
    if calibration == "classic":
        from ..measures.gaussian import classic_bound

        k = classic_bound(1.0, delta)
        return 2 * lo1 * k * (1 - MARGIN), 2 * hi2 * k * (1 + MARGIN)
    big = 2 * hi2 * mills(lo1 / 2 + e1 / hi2) * (1 + MARGIN)
    small = 2 * lo1 * mills(hi2 / 2 + e2 / lo1) * (1 - MARGIN)
    return small, big


@dataclass(frozen=True)
class GroupDual:
    """A joint group's point certificate in its term's split (the share is the group's eps):
    ``V(y) >= bound - lam (s(y) - mu[1]^2)`` for every y (module docstring), ``mu`` the
    calibration's bounds ``(mu_lo, mu_hi)`` at ``eps``, ``record`` the joint program's dual point
    it comes from (``gaussian.dual_record``), ``least`` the term's proven least share and its dual
    record when its targets give one (``gaussian._least_proven``: no point below it, recorded with
    the term). ``cell(x)``: the linear bound toward share ``x`` at ``x`` and at the point
    (``split.CellEnds``); ``kink(right)``: where this point's line toward the point above meets
    that point's line toward it."""

    share_concave = True  # its pieces are linear in the share (``split._share_concave``)

    eps: float
    delta: float
    calibration: str
    bound: float
    lam: float
    mu: tuple[float, float]
    record: dict = field(compare=False, repr=False)
    least: tuple[float, dict] | None = field(default=None, compare=False, repr=False)

    def cell(self, x: float) -> tuple[float, float]:
        d = x - self.eps
        if d == 0 or self.lam == 0:
            return self.bound, self.bound
        if d > 0:
            _m, big = slopes(self.eps, x, self.mu[0], mu_bounds(x, self.delta, self.calibration)[1], *self._cal)
            return self.bound - self.lam * big * d, self.bound
        small, _M = slopes(x, self.eps, mu_bounds(x, self.delta, self.calibration)[0], self.mu[1], *self._cal)
        return self.bound - self.lam * small * d, self.bound

    @property
    def _cal(self) -> tuple[float, str]:
        return self.delta, self.calibration

    def kink(self, right: GroupDual) -> float:
        """The share where ``self.bound - lam M (y - a)`` and ``right.bound + lam' m (b - y)`` meet
        (``M``, ``m`` over the whole cell ``[a, b]``: any cut gives valid pieces, this one makes
        them meet); -inf (+inf) when the upper (lower) end's line alone is the larger one."""
        a, b = self.eps, right.eps
        small, big = slopes(a, b, self.mu[0], right.mu[1], *self._cal)
        down, up = self.lam * big, right.lam * small  # the lines' slopes, -down and -up
        if not math.isfinite(down) or self.bound <= right.bound + up * (b - a):
            return -math.inf
        if self.bound - down * (b - a) >= right.bound:
            return math.inf
        return (self.bound - right.bound + down * a - up * b) / (down - up)

    @staticmethod
    def records(var: str, certs) -> dict:
        """One group term's points' certificates (``GroupDual``) as a result records them: the points
        that have one (``points``), the distinct dual points (``duals``: ``gaussian.dual_record``s)
        and per point the index of its own (``dual``), its ``bound``, ``lam`` and ``mu`` (lo, hi); and
        the proven least share (``least``: its ``eps`` and dual ``record``; null without targets)."""
        have = [j for j, d in enumerate(certs) if d is not None]
        least = next((certs[j].least for j in have if certs[j].least is not None), None)
        duals, index = [], {}
        for j in have:
            key = id(certs[j].record)
            if key not in index:
                index[key] = len(duals)
                duals.append(certs[j].record)
        return {
            "var": var,
            "kind": KIND,
            "points": have,
            "duals": duals,
            "dual": [index[id(certs[j].record)] for j in have],
            "bound": [certs[j].bound for j in have],
            "lam": [certs[j].lam for j in have],
            "mu": [list(certs[j].mu) for j in have],
            "least": None if least is None else {"eps": least[0], "record": least[1]},
        }
