"""The (eps, delta) split of Gaussian blocks under the classic calibration (issue 21).

Under the classic calibration (Dwork & Roth, Thm. A.1; Ramon & Basu Sec. 3.2: ``sigma = sqrt(2
L(delta)) Delta / eps``, ``L(delta) = ln(1.25 / delta)``) a noise block's allowed sensitivity is
``eps / sqrt(2 L(delta))`` and its program is homogeneous, so its optimal error is exactly

    V_i(eps, delta) = c_i L(delta) / eps^2,      c_i = V_i(eps0, delta0) eps0^2 / L(delta0)

from one verified solve. A ``dp(a, b, ...) <= (E, D)`` row of such blocks (basic composition)
is the program

    minimize sum_i c_i L(d_i) / e_i^2   subject to  sum_i e_i <= E,  sum_i d_i <= D,  0 < e_i <= u_i.

**Convex**: the Hessian of ``L(d) / e^2`` has determinant ``e^-6 d^-2 (6 L(d) - 4)``, nonnegative
where ``L(d) >= 2/3``, i.e. ``d <= 1.25 e^(-2/3)`` (``CONVEX_DELTA``, about 0.642); every delta
of a row with ``D`` below it lies there.

**Closed form for eps given delta** (``split.inverse_square_split``): ``e_i`` proportional to
``(c_i L(d_i))^(1/3)``, value ``(sum_i (c_i L(d_i))^(1/3))^3 / E^2`` while no cap binds. The cube
is increasing, so the delta split minimizes the separable ``sum_i c_i^(1/3) L(d_i)^(1/3)`` over
``sum_i d_i = D``; each term is convex where ``L >= 2/3`` (its second derivative is ``c^(1/3)
d^-2 L^(-5/3) (L - 2/3) / 3``), and KKT gives ``g(d_i) = c_i^(1/3) / (3 nu)`` with ``g(d) = d
L(d)^(2/3)``, increasing there: one multiplier ``nu`` found by bisection.

**Proven lower bound** (weak duality, any ``lam, nu >= 0``; the caps dropped, a relaxation):

    sum_i min_{0 < d <= D} (K_i L(d)^(1/3) + nu d) - lam E - nu D,   K_i = 3/2 (2 c_i)^(1/3) lam^(2/3)

(``min_e c L / e^2 + lam e = 3/2 (2 c L)^(1/3) lam^(2/3)``). Each inner ``phi(d)`` is convex on
``(0, D]``, so with ``p <= d* <= q`` bracketing its stationary point, ``phi >= min(phi(p) +
phi'(p) (q - p), phi(q))`` (decreasing left of ``p``, increasing right of ``q``, above its
tangent at ``p`` between): a proven minimum. At the KKT point (``lam = 2 c_i L(d_i) / e_i^3``,
``nu = c_i / (d_i e_i^2)``) the bound meets the objective to rounding. Where a block's eps reaches
its cap the closed form does not hold and the caller keeps the even split of delta (said so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .split import Split, inverse_square_split

CONVEX_DELTA = 1.25 * math.exp(-2.0 / 3.0)  # L(delta) >= 2/3: where c L(delta) / eps^2 is jointly convex


@dataclass(frozen=True)
class DeltaSplit(Split):
    """An inverse-square split whose deltas were optimized too: ``deltas`` (per block, adding up to
    ``delta_budget``) and the delta row's multiplier ``delta_multiplier`` (``nu``)."""

    deltas: tuple[float, ...] = ()
    delta_budget: float = 0.0
    delta_multiplier: float = 0.0


def ln_term(d) -> np.ndarray:
    """``L(d) = ln(1.25 / d)``: the classic calibration's ``sigma^2 = 2 L(d) Delta^2 / eps^2``."""
    return np.log(1.25 / np.asarray(d, dtype=float))


def _bracket(target: np.ndarray, top: float) -> tuple[np.ndarray, np.ndarray]:
    """Per entry ``p <= q`` in ``(0, top]`` bracketing the root of ``g(d) = d L(d)^(2/3) = target``
    (``g`` increases on ``(0, CONVEX_DELTA]``): ``g(p) <= target <= g(q)``, or ``p = q = top``
    when ``g(top) <= target``. Bisection on ``log d`` to the last bit."""
    target = np.asarray(target, dtype=float)
    lo = np.full(target.shape, math.log(1e-300))
    hi = np.full(target.shape, math.log(top))
    at_top = top * ln_term(top) ** (2.0 / 3.0) <= target
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        d = np.exp(mid)
        below = d * ln_term(d) ** (2.0 / 3.0) <= target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    p, q = np.exp(lo), np.minimum(np.exp(hi), top)
    return np.where(at_top, top, p), np.where(at_top, top, q)


def delta_shares(c: Sequence[float], budget: float) -> tuple[np.ndarray, float]:
    """The deltas minimizing ``sum_i c_i^(1/3) L(d_i)^(1/3)`` over ``sum_i d_i <= budget``
    (module docstring): ``d_i(nu)`` the root of ``g(d) = c_i^(1/3) / (3 nu)``, and ``ln nu`` the
    root of ``sum_i d_i(nu) = budget`` (continuous, decreasing in nu) by Brent's method; the deltas
    returned add up to at most ``budget`` (scaled down by at most rounding)."""
    from scipy.optimize import brentq

    k = np.cbrt(np.asarray(c, dtype=float)) / 3.0

    def shares(log_nu: float) -> np.ndarray:
        return _bracket(k / math.exp(log_nu), budget)[0]

    lo, hi = math.log(1e-300), 0.0  # at nu = 1e-300 every share is the whole budget: too much
    while shares(hi).sum() > budget:
        hi += 10.0
    log_nu = brentq(lambda t: float(shares(t).sum()) / budget - 1.0, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    d = shares(log_nu)
    return d * min(1.0, budget / float(d.sum())), math.exp(log_nu)


def dual_bound(c: Sequence[float], lam: float, nu: float, eps_budget: float, delta_budget: float) -> float:
    """The Lagrangian dual of the (eps, delta) program at ``(lam, nu)`` (module docstring), each
    inner minimum over ``d`` proven from a bracket of its stationary point: a lower bound on
    every split of ``eps_budget`` and ``delta_budget`` (weak duality), for ``delta_budget <=
    CONVEX_DELTA``."""
    if not 0 < delta_budget <= CONVEX_DELTA or lam < 0 or nu < 0:
        raise ValueError(f"dual bound at lam={lam!r}, nu={nu!r}, delta={delta_budget!r}: outside its proof")
    big_k = 1.5 * np.cbrt(2.0 * np.asarray(c, dtype=float)) * lam ** (2.0 / 3.0)

    def phi(d: np.ndarray) -> np.ndarray:
        return big_k * np.cbrt(ln_term(d)) + nu * d

    if nu == 0:
        inner = phi(np.full(big_k.shape, delta_budget))
    else:
        p, q = _bracket(big_k / (3.0 * nu), delta_budget)
        slope_p = -big_k / (3.0 * p * ln_term(p) ** (2.0 / 3.0)) + nu  # <= 0
        inner = np.minimum(phi(p) + np.minimum(slope_p, 0.0) * (q - p), phi(q))
    return math.fsum(inner) - lam * eps_budget - nu * delta_budget


def classic_split(
    a: Sequence[float], ln0: Sequence[float], width: Sequence[float], budget: float, delta_budget: float
) -> DeltaSplit | None:
    """The (eps, delta) split of inverse-square blocks whose value at delta share ``d`` is ``a_i
    L(d) / (ln0_i y^2)`` (``a_i / y^2`` measured at ``L(d) = ln0_i``), shares ``y_i <= width_i``
    adding up to ``budget``, deltas to ``delta_budget``; None where the proof does not reach
    (``delta_budget`` above ``CONVEX_DELTA``, or a share at its cap: keep the even split)."""
    if not 0 < delta_budget <= CONVEX_DELTA or len(a) < 2:
        return None
    c = np.asarray(a, dtype=float) / np.asarray(ln0, dtype=float)
    if not (np.all(np.isfinite(c)) and np.all(c > 0)):
        return None
    d, nu = delta_shares(c, delta_budget)
    ad = c * ln_term(d)
    s = inverse_square_split(ad, width, budget)
    y = np.asarray(s.shares)
    if np.any(y >= np.minimum(np.asarray(width, dtype=float), budget)) or not np.all(y > 0):
        return None
    values = np.asarray(s.values)
    bound = max(dual_bound(c, lam, nu, budget, delta_budget) for lam in 2.0 * ad / y**3)
    bound = max(bound, recheck(values, y, d, budget, delta_budget))
    return DeltaSplit(
        s.shares,
        s.values,
        s.objective,
        min(bound, s.objective),
        0,
        deltas=tuple(map(float, d)),
        delta_budget=delta_budget,
        delta_multiplier=float(nu),
    )


def recheck(
    values: Sequence[float], shares: Sequence[float], deltas: Sequence[float], budget: float, delta_budget: float
) -> float:
    """A recorded (eps, delta) split's bound re-derived (``privopt verify``): ``c_i = v_i y_i^2 /
    L(d_i)`` from the recorded (weighted) values, the multipliers of its KKT point (``lam = 2 v_i
    / y_i``, ``nu = v_i / (d_i L(d_i))`` per block; the best of them), and ``dual_bound``."""
    v, y, d = (np.asarray(x, dtype=float) for x in (values, shares, deltas))
    if not (np.all(y > 0) and np.all(d > 0) and np.all(v > 0)):
        raise ValueError("an (eps, delta) split with a zero share, delta or value")
    c = v * y**2 / ln_term(d)
    return max(
        dual_bound(c, float(lam), float(nu), budget, delta_budget) for lam, nu in zip(2.0 * v / y, v / (d * ln_term(d)))
    )


def row_deltas(c, row, row_vars: list) -> tuple[list[float], float] | None:
    """Where a row's delta split is optimized: a ``dp(...) <= (E, D)`` row whose every mechanism is
    one Gaussian block (its delta a param, sharing the row's delta: none written in a block), each
    chosen variable its block's eps. Returns each variable's ``L(delta0)`` (the even share its
    curve was measured at) and ``D``; None otherwise (the even split of delta stays)."""
    if row.accountant != "basic" or not 0 < row.delta <= CONVEX_DELTA or not row.parts:
        return None
    if not all(p.mechanism == "gaussian" and p.shared and len(p.blocks) == 1 for p in row.parts):
        return None
    ln0 = []
    for v in row_vars:
        budget = c.blocks[v.block].budget
        if v.param != budget.eps or not isinstance(budget.delta, str):
            return None
        ln0.append(float(ln_term(c.blocks[v.block].fixed[budget.delta])))
    return ln0, row.delta


def delta_values(c, keys: list[str], s: Split) -> dict[str, float]:
    """The deltas an (eps, delta) split gives its blocks, as ``{"block.param": delta}`` beside the
    chosen eps (none for any other split)."""
    if not isinstance(s, DeltaSplit):
        return {}
    out = {}
    for key, d in zip(keys, s.deltas):
        block = c.blocks[c.vars[key].block]
        out[f"{block.name}.{block.budget.delta}"] = d
    return out
