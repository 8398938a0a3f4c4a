"""Lower ends of the LFP's brackets, proven by Farkas rays (issue 22; docs/verification.md).

One QID group: prior p over its m records, cell bounds ``L <= X <= U`` with every record's row
summing to 1, and confidence ``beta(X) = max_{i,a} p_i X_ia / S_a``, ``S_a = sum_k p_k X_ka``
(Chen et al. Def. 3, (OPT) eq. 16). The LFP's step at a level b solves the LP with the ratio
rows ``p_i X_ia - b S_a <= w_a t`` (``methods.lfp``); ``t > 0`` at its optimum says no table
reaches b, and the rows' multipliers ``lam >= 0`` are the Farkas ray that proves it. With
``Lam_a = sum_i lam_ia`` and ``c_ia = p_i (lam_ia - b Lam_a)``, for every feasible table

    Phi(X) = sum_ia lam_ia (p_i X_ia - b S_a) = sum_ia c_ia X_ia
           <= (beta(X) - b) sum_a Lam_a S_a  <=  (beta(X) - b) P max_a Lam_a,   P = sum_i p_i,

because ``p_i X_ia <= beta(X) S_a`` for every cell (lam >= 0) and the ``S_a`` are nonnegative and
sum to P. So if ``D = min over feasible X of Phi`` is positive, every feasible table has

    beta(X) >= b + D / (P max_a Lam_a)                                            (the lower end).

``D`` is bounded below record by record: each row is a box cut by ``sum_a x_a = 1``, and for any
multiplier ``mu_i`` of that sum (weak duality)

    min {c_i x : L_i <= x <= U_i, sum x = 1}  >=  mu_i + sum_a min((c_ia - mu_i) L_ia, (c_ia - mu_i) U_ia),

with equality at the greedy's price (``row_price``: fill the row from its cheapest cell up; the
price is the cost of the cell where the fill stops). Nothing here trusts the solver: any ray and
any price give a valid bound, a bad one only a weaker one.

``proven_lower`` computes the lower ends for every group at once in floats, less a rounding
allowance on ``D`` (``ROUNDING_ULPS`` ulps per term of the magnitudes summed), so that each is at
most the exact value of the same formula over the same floats; ``proven_lower_exact`` computes one
group's in rational arithmetic (``fractions.Fraction`` of every float), for ``privopt verify``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

ROUNDING_ULPS = 4.0  # float allowance per term summed, in ulps of the sum of the terms' magnitudes


def row_price(c: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per record (the last axis: its cells), the multiplier of its row's sum at which the
    Lagrangian bound of ``min c x over {L <= x <= U, sum x = 1}`` is the minimum: the cost of the
    cell where a fill from the cheapest cell up (from L, by U - L each) reaches sum 1."""
    order = np.argsort(c, axis=-1, kind="stable")
    cost = np.take_along_axis(c, order, axis=-1)
    room = np.cumsum(np.take_along_axis(upper - lower, order, axis=-1), axis=-1)
    need = 1.0 - lower.sum(axis=-1, keepdims=True)
    stop = np.minimum((room < need).sum(axis=-1, keepdims=True), c.shape[-1] - 1)
    return np.take_along_axis(cost, stop, axis=-1)[..., 0]


def _costs(p: np.ndarray, level: np.ndarray, ray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(c over (G, m, A), Lam over (G, A)) of the module docstring."""
    lam_sum = ray.sum(axis=1)
    return p[:, :, None] * (ray - level[:, None, None] * lam_sum[:, None, :]), lam_sum


def proven_lower(p: np.ndarray, lower: np.ndarray, upper: np.ndarray, level: np.ndarray, ray: np.ndarray) -> np.ndarray:
    """Per group, the lower end ``b + D / (P max_a Lam_a)`` the ray proves, in floats with the
    rounding allowance taken off D (module docstring); -inf where it proves nothing (no level,
    ``D <= 0``, a ray of zeros, or a negative or non-finite entry).

    p: (G, m); lower, upper: (G, m, A); level: (G,) (NaN: no ray); ray: (G, m, A)."""
    G = len(p)
    if G == 0:
        return np.zeros(0)
    level = np.asarray(level, dtype=float)
    valid = np.isfinite(level) & np.isfinite(ray).all(axis=(1, 2)) & (ray >= 0).all(axis=(1, 2))
    lvl = np.where(valid, level, 0.0)
    lam = np.where(valid[:, None, None], ray, 0.0)
    c, lam_sum = _costs(p, lvl, lam)
    mu = row_price(c, lower, upper)
    r = c - mu[:, :, None]
    terms = np.minimum(r * lower, r * upper)
    D = mu.sum(axis=1) + terms.sum(axis=(1, 2))
    size = (
        np.abs(mu).sum(axis=1)
        + np.abs(terms).sum(axis=(1, 2))
        + (p[:, :, None] * (lam + np.abs(lvl)[:, None, None] * lam_sum[:, None, :])).sum(axis=(1, 2))
    )
    n = lam.shape[1] * (lam.shape[2] + 1) + 16  # terms summed per group, and the products beside them
    D = D - ROUNDING_ULPS * n * np.finfo(float).eps * size
    scale = p.sum(axis=1) * lam_sum.max(axis=1, initial=0.0)
    ok = valid & (D > 0) & (scale > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, lvl + D / np.where(ok, scale, 1.0), -np.inf)


def proven_lower_exact(
    p: np.ndarray, lower: np.ndarray, upper: np.ndarray, level: float, ray: np.ndarray
) -> Fraction | None:
    """One group's lower end (p: (m,), lower, upper, ray: (m, A)) in rational arithmetic, at
    the greedy's prices (``row_price``, computed in floats: any price gives a valid bound); None
    where the ray proves nothing (``D <= 0``, a ray of zeros, a negative or non-finite entry)."""
    if not (np.isfinite(level) and np.isfinite(ray).all() and (ray >= 0).all()):
        return None
    c, _ = _costs(p[None], np.array([level]), ray[None])
    mu = row_price(c[0], lower, upper).tolist()
    b = Fraction(float(level))
    m, A = ray.shape
    lam = [[Fraction(v) for v in row] for row in ray.tolist()]
    lam_sum = [sum((lam[i][a] for i in range(m)), Fraction(0)) for a in range(A)]
    D = Fraction(0)
    lo, hi = lower.tolist(), upper.tolist()
    for i, pi in enumerate(p.tolist()):
        price = Fraction(mu[i])
        D += price
        for a in range(A):
            r = Fraction(pi) * (lam[i][a] - b * lam_sum[a]) - price
            D += min(r * Fraction(lo[i][a]), r * Fraction(hi[i][a]))
    scale = sum((Fraction(v) for v in p.tolist()), Fraction(0)) * max(lam_sum, default=Fraction(0))
    if D <= 0 or scale <= 0:
        return None
    return b + D / scale
