"""Rank-preserving obfuscation (Shariatnasab, Shirani & Iyengar 2023): the KRCC utility, the
leakage under fingerprinting, and the simulation of Sec. IV-A.

Setting (Sec. II-III): binary data X with ``P_X`` (``px1 = P_X(1)``), a single-letter test
channel ``W = P(Y | X)`` (2x2, rows x, columns y; ``p1 = W[0, 1] = P(Y=1|X=0)``,
``p2 = W[1, 0] = P(Y=0|X=1)``), the attacker's fingerprint F with known ``P(F | X)`` (2x2,
rows x, columns f) and the Markov chain Y - X - F.

* Utility, Theorem 1: ``Q(P_X, W) = P(N1 <= 0, N2 <= 0)`` for zero-mean Gaussians with eq. 2's
  covariance ``s11 = 2 P_X(0) P_X(1)``, ``s22 = 2 P_Y(0) P_Y(1)``,
  ``s12 = 2 P_X(1) (P_Y(1) - W(1|1)) = 2 P_X(0) P_X(1) (p1 + p2 - 1)``. By Sheppard's formula
  ``Q = 1/4 + arcsin(rho) / (2 pi)`` with ``rho = s12 / sqrt(s11 s22)``. With the joint table
  ``a, b, c, d = P(X,Y)(0,0), (0,1), (1,0), (1,1)`` one has ``rho = -(ad - bc) / sqrt((a+b)(c+d)
  (a+c)(b+d))`` (minus the phi coefficient) and ``1 - rho^2 = (abc + abd + acd + bcd) /
  ((a+b)(c+d)(a+c)(b+d))``, so ``Q = atan2(sqrt(abc + abd + acd + bcd), ad - bc) / (2 pi)``:
  no arcsin near +-1, no division, exact 0 at Y = X and 1/2 at Y = 1 - X. When X or Y is
  constant (s11 s22 = 0) rho is taken as 0 and Q = 1/4: the limit of rho along any sequence of
  channels approaching a constant Y (and of P_X approaching a constant X).
* Privacy, Theorem 1: the leakage ``I(P_Y; P_{Y|F}) = I(Y; F)`` in bits, with
  ``P(Y | F) = sum_x W(. | x) P(x | F)``. Writing ``u = 1 - p1 - p2`` and
  ``r_f = P(X=1 | F=f)``: ``P(Y=1 | F=f) = p1 + u r_f``, ``P_Y(1) = p1 + u P_X(1)``, so
  ``I = sum_f P(f) d(p1 + u r_f || p1 + u P_X(1))`` (binary KL divergence) and the difference of
  the two arguments is ``u (r_f - P_X(1))``, computed without cancellation.
* Definition 2 (eq. 1): ``d_KRCC = (1 / (n (n-1))) sum over ordered pairs (i, j) of
  1(R(i) > R(j) and R^(i) < R^(j))``, i.e. the number of discordant unordered pairs divided by
  ``n (n - 1)`` (not by ``n (n - 1) / 2``): a pair tied in either ranking is not discordant. Its
  expectation is ``P(D_X(1) > D_X(2), D_Y(1) < D_Y(2))`` for every n (proof of Theorem 1, eq. 5),
  which tends to Q as m grows; ``expected_distance`` computes it exactly for finite m.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import UsageError

__all__ = [
    "binary_entropy",
    "binary_entropy_inverse",
    "channel",
    "check_channel",
    "check_px",
    "entropy_gap_inverse",
    "expected_distance",
    "krcc_distance",
    "krcc_q",
    "krcc_q_p",
    "kl_excess",
    "leakage_bits",
    "leakage_grad_p",
    "leakage_p",
    "max_leakage",
    "one_minus_sum",
    "rho",
    "simulate",
]

LN2 = math.log(2.0)
ROW_TOL = 1e-9  # rows of a channel must sum to 1 within this


# ---------------------------------------------------------------- input checks


def check_px(px1) -> float:
    """P_X(1) as a float in [0, 1], or a UsageError."""
    try:
        v = float(px1)
    except (TypeError, ValueError):
        raise UsageError(f"P_X(1) must be a number in [0, 1], got {px1!r}") from None
    if not (0.0 <= v <= 1.0):
        raise UsageError(f"P_X(1) must lie in [0, 1], got {v!r}")
    return v


def check_channel(table, name: str = "W") -> np.ndarray:
    """A 2x2 row-stochastic array (rows: input symbol 0, 1), or a UsageError."""
    try:
        m = np.asarray(table, dtype=float)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a 2x2 table of probabilities") from None
    if m.shape != (2, 2):
        raise UsageError(
            f"{name} must be a 2x2 table (rows: X = 0, 1), got shape {m.shape}; only binary X, Y, F are supported"
        )
    if not np.all(np.isfinite(m)) or np.any(m < 0) or np.any(m > 1):
        raise UsageError(f"{name} has entries outside [0, 1]: {m.tolist()}")
    if np.any(np.abs(m.sum(axis=1) - 1.0) > ROW_TOL):
        raise UsageError(f"each row of {name} must sum to 1, got row sums {m.sum(axis=1).tolist()}")
    return m


def channel(p1: float, p2: float) -> np.ndarray:
    """The test channel ``W = [[1 - p1, p1], [p2, 1 - p2]]`` (p1 = P(Y=1|X=0), p2 = P(Y=0|X=1))."""
    return np.array([[1.0 - p1, p1], [p2, 1.0 - p2]])


# ---------------------------------------------------------------- binary entropy


def binary_entropy(x):
    """``h_b(x) = -x log2 x - (1 - x) log2 (1 - x)`` in bits, with 0 log 0 = 0 (array-valued)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = np.where(x > 0, -x * np.log2(np.where(x > 0, x, 1.0)), 0.0)
        t1 = np.where(x < 1, -(1 - x) * np.log2(np.where(x < 1, 1 - x, 1.0)), 0.0)
    out = t0 + t1
    return float(out) if out.ndim == 0 else out


def _gap(x: float) -> float:
    """``1 - h_b(x) = d(x || 1/2)`` in bits, accurate near x = 1/2 (log1p of 2x - 1)."""
    if x <= 0.0 or x >= 1.0:
        return 1.0
    t = 2.0 * x - 1.0
    return (x * math.log1p(t) + (1.0 - x) * math.log1p(-t)) / LN2


def _bisect_increasing(f, target: float, lo: float, hi: float) -> float:
    """Bracketing root of ``f(x) = target`` for f nondecreasing on [lo, hi], to the last bit:
    bisects until the midpoint equals an endpoint, then returns the endpoint closer in value."""
    flo, fhi = f(lo), f(hi)
    if target <= flo:
        return lo
    if target >= fhi:
        return hi
    for _ in range(2200):  # > 1074 + 53: enough to resolve down to subnormals
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        fm = f(mid)
        if fm < target:
            lo, flo = mid, fm
        else:
            hi, fhi = mid, fm
    return lo if abs(flo - target) <= abs(fhi - target) else hi


def binary_entropy_inverse(y):
    """``h_b^-1(y)``: the x in [0, 1/2] with h_b(x) = y, for y in [0, 1] (array-valued).

    Bisection on the increasing branch of h_b to the last representable bit (a bracketing root
    finder: the answer is within one ulp of the root of the computed h_b). Near y = 1 the
    inverse is ill-conditioned (h_b'(1/2) = 0): for ``h_b^-1(1 - eps)`` with a small eps use
    ``entropy_gap_inverse(eps)``, which never forms 1 - eps."""
    y = np.asarray(y, dtype=float)
    if np.any(~np.isfinite(y)) or np.any(y < 0) or np.any(y > 1):
        raise UsageError(f"binary_entropy_inverse is defined on [0, 1], got {y.tolist()}")
    out = np.array([_bisect_increasing(lambda x: float(binary_entropy(x)), float(v), 0.0, 0.5) for v in y.ravel()])
    out = out.reshape(y.shape)
    return float(out) if out.ndim == 0 else out


def entropy_gap_inverse(eps: float) -> float:
    """``h_b^-1(1 - eps)``: the x in [0, 1/2] with ``1 - h_b(x) = eps`` (eps in [0, 1] bits),
    solved on ``1 - h_b(x) = d(x || 1/2)`` (decreasing in x on [0, 1/2]) so that a tiny eps keeps
    its precision. eps = 0 gives 1/2, eps >= 1 gives 0."""
    eps = float(eps)
    if not eps >= 0:
        raise UsageError(f"eps must be >= 0, got {eps!r}")
    if eps == 0:
        return 0.5
    if eps >= 1:
        return 0.0
    # g(x) = -d(x || 1/2) is increasing on [0, 1/2]
    return _bisect_increasing(lambda x: -_gap(x), -eps, 0.0, 0.5)


# ---------------------------------------------------------------- utility Q and rho


def _joint(px1, p1, p2):
    px0 = 1.0 - px1
    return px0 * (1.0 - p1), px0 * p1, px1 * p2, px1 * (1.0 - p2)


def one_minus_sum(p1, p2):
    """``u = 1 - p1 - p2`` to a few ulps of u itself: the larger of p1, p2 is taken from 1 first
    (exact when it is >= 1/2, Sterbenz), then the smaller. ``(1 - p1) - p2`` would lose a tiny
    p1's digits when p2 is near 1 (p1 ~ 1e-12, p2 ~ 1 - 2e-11: a relative error ~ 1e-5 in u)."""
    p1 = np.asarray(p1, dtype=float)
    p2 = np.asarray(p2, dtype=float)
    return np.where(p1 >= p2, (1.0 - p1) - p2, (1.0 - p2) - p1)


# phi's series coefficients (-1)^k / (k (k - 1)), k = 17 down to 2, for Horner's scheme
_SERIES = tuple((-1.0) ** k / (k * (k - 1)) for k in range(17, 1, -1))


def kl_excess(x):
    """``phi(x) = (1 + x) log(1 + x) - x`` (nats) for x >= -1, to a few ulps of phi itself
    (array-valued). It is the generalized KL term: for laws p, q on the same points,
    ``D(p || q) = sum q phi(p / q - 1)`` since sum (p - q) = 0, with every term >= 0 (no
    cancellation between terms). Near 0 the series ``sum_{k >= 2} (-1)^k x^k / (k (k - 1))``
    (phi ~ x^2 / 2); phi(-1) = 1."""
    x = np.maximum(np.asarray(x, dtype=float), -1.0)
    small = np.abs(x) < 0.05
    xs = np.where(small, x, 0.0)
    series = np.full_like(xs, _SERIES[0])
    for c in _SERIES[1:]:  # Horner: sum_k c_k x^(k-2) from k = 17 down; 0.05^15 / 240 < 1e-21
        series *= xs
        series += c
    series *= xs * xs
    xl = np.where(small, 1.0, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = np.where(xl > -1.0, (1.0 + xl) * np.log1p(np.maximum(xl, -1.0 + 1e-300)) - xl, 1.0)
    out = np.where(small, series, direct)
    return float(out) if out.ndim == 0 else out


def krcc_q_p(px1: float, p1, p2, u=None):
    """Q(P_X, W) for W = channel(p1, p2), vectorized over arrays p1, p2 (no input checks).

    ``Q = atan2(sqrt(abc + abd + acd + bcd), ad - bc) / (2 pi)`` with ``ad - bc =
    P_X(0) P_X(1) (1 - p1 - p2)`` computed as that product (exactly 1/4 on p1 + p2 = 1);
    Q = 1/4 where X or Y is constant (see the module docstring). ``u = 1 - p1 - p2`` is
    ``one_minus_sum(p1, p2)`` unless given (``krcc_q`` passes the table's own ``W[1, 1] - W[0, 1]``)."""
    p1 = np.asarray(p1, dtype=float)
    p2 = np.asarray(p2, dtype=float)
    a, b, c, d = _joint(px1, p1, p2)
    num = a * b * c + a * b * d + a * c * d + b * c * d
    u = one_minus_sum(p1, p2) if u is None else np.asarray(u, dtype=float)
    cov = (1.0 - px1) * px1 * u  # = ad - bc = -s12 / 2
    q = np.arctan2(np.sqrt(num), cov) / (2.0 * math.pi)
    degenerate = ((a + b) * (c + d) * (a + c) * (b + d)) == 0
    q = np.where(degenerate & (num == 0) & (cov == 0), 0.25, q)
    return float(q) if q.ndim == 0 else q


def _split(W):
    """(p1, p2, u) of a table: u = W[1, 1] - W[0, 1] = 1 - p1 - p2, the difference of the table's
    own cells (exact when they are close: a table with equal rows has u = 0 exactly)."""
    m = check_channel(W)
    return float(m[0, 1]), float(m[1, 0]), float(m[1, 1] - m[0, 1])


def krcc_q(px1, W) -> float:
    """Theorem 1's ``Q(P_X, P_{Y|X}) = F_{N1,N2}(0, 0)`` with eq. 2's covariance, by Sheppard's
    formula ``1/4 + arcsin(rho) / (2 pi)`` (evaluated in the stable atan2 form, see ``krcc_q_p``).
    0 at Y = X, 1/4 when Y is independent of X or constant, 1/2 at Y = 1 - X."""
    p1, p2, u = _split(W)
    return float(krcc_q_p(check_px(px1), p1, p2, u))


def rho(px1, W) -> float:
    """Correlation of eq. 2's (N1, N2): ``s12 / sqrt(s11 s22) = -(ad - bc) / sqrt((a+b)(c+d)
    (a+c)(b+d))``, clipped to [-1, 1]; 0 when X or Y is constant (a zero variance)."""
    px1 = check_px(px1)
    p1, p2, u = _split(W)
    a, b, c, d = _joint(px1, p1, p2)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    if den <= 0:
        return 0.0
    cov = (1.0 - px1) * px1 * u
    return float(np.clip(-cov / math.sqrt(den), -1.0, 1.0))


# ---------------------------------------------------------------- leakage I(Y; F)


def _fingerprint(px1: float, F_given_X):
    """(P_F(f), r_f = P(X=1 | F=f)) for f = 0, 1; r_f = P_X(1) where P_F(f) = 0 (no mass)."""
    F = check_channel(F_given_X, "P(F | X)")
    joint = np.array([1.0 - px1, px1])[:, None] * F  # (x, f)
    pf = joint.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(pf > 0, joint[1] / np.where(pf > 0, pf, 1.0), px1)
    return pf, r


def _kl_terms(px1, pf, r, p1, p2):
    """Per-f pieces of the leakage, arrays broadcast as (..., 2): ``t_f = P(Y=1|F=f) = p1 + u r_f``
    and ``1 - t_f = p2 + u (1 - r_f)``, ``tbar = P_Y(1) = p1 + u P_X(1)`` and
    ``1 - tbar = p2 + u P_X(0)``, each formed directly (no 1 - x cancellation), and the log ratios
    ``log(t_f / tbar)`` and ``log((1 - t_f) / (1 - tbar))``, taken as ``log1p(+-delta / ...)`` with
    ``delta_f = t_f - tbar = u (r_f - P_X(1))`` when the ratio is near 1."""
    p1 = np.asarray(p1, dtype=float)[..., None]
    p2 = np.asarray(p2, dtype=float)[..., None]
    u = one_minus_sum(p1, p2)
    t, tc = p1 + u * r, p2 + u * (1.0 - r)
    tbar, tbarc = p1 + u * px1, p2 + u * (1.0 - px1)
    delta = u * (r - px1)
    with np.errstate(divide="ignore", invalid="ignore"):
        x1 = delta / tbar
        x0 = -delta / tbarc
        l1 = np.where(np.abs(x1) < 0.5, np.log1p(x1), np.log(t) - np.log(tbar))
        l0 = np.where(np.abs(x0) < 0.5, np.log1p(x0), np.log(tc) - np.log(tbarc))
    # t_f / tbar <= 1 / P(f) (tbar = sum_f P(f) t_f): a bound that only bites when tbar underflows
    with np.errstate(divide="ignore"):
        cap = -np.log(pf)
    l1 = np.where(delta == 0, 0.0, np.minimum(l1, cap))
    l0 = np.where(delta == 0, 0.0, np.minimum(l0, cap))
    return t, tc, l1, l0


def leakage_p(px1: float, pf, r, p1, p2):
    """I(Y; F) in bits for W = channel(p1, p2), vectorized (no input checks): ``sum_f P(f)
    d(t_f || tbar)`` written as ``sum_f P(f) [tbar phi(delta_f / tbar) + (1 - tbar) phi(-delta_f /
    (1 - tbar))]`` with ``delta_f = t_f - tbar = u (r_f - P_X(1))`` and ``phi = kl_excess`` (the
    linear terms +-delta_f cancel exactly, so they are never formed): every term is >= 0 and the
    sum keeps a few ulps of relative accuracy down to I ~ 1e-300 (the plain ``t log(t / tbar)``
    form cancels to ~1e-17 absolute)."""
    p1 = np.asarray(p1, dtype=float)[..., None]
    p2 = np.asarray(p2, dtype=float)[..., None]
    u = one_minus_sum(p1, p2)
    tbar, tbarc = p1 + u * px1, p2 + u * (1.0 - px1)
    delta = u * (r - px1)
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(tbar > 0, tbar * kl_excess(delta / np.where(tbar > 0, tbar, 1.0)), 0.0)
        dn = np.where(tbarc > 0, tbarc * kl_excess(-delta / np.where(tbarc > 0, tbarc, 1.0)), 0.0)
    terms = np.where((pf > 0) & (delta != 0), pf * (up + dn), 0.0)
    out = terms.sum(axis=-1) / LN2
    return float(out) if out.ndim == 0 else out


def leakage_grad_p(px1: float, pf, r, p1: float, p2: float) -> np.ndarray:
    """Gradient of ``leakage_p`` in (p1, p2), bits: ``sum_f P(f) (logit t_f - logit tbar)
    (dt_f/dp)`` (the tbar-derivative terms cancel since sum_f P(f) t_f = tbar), with
    ``dt_f/dp1 = 1 - r_f`` and ``dt_f/dp2 = -r_f``. Infinite where some t_f is 0 or 1 and moves."""
    _, _, l1, l0 = _kl_terms(px1, pf, r, p1, p2)
    with np.errstate(invalid="ignore"):
        w = np.where(pf > 0, pf * (l1 - l0), 0.0)
        g = np.array([np.sum(w * (1.0 - r)), np.sum(w * (-r))]) / LN2
    return g


def leakage_bits(px1, W, F_given_X) -> float:
    """The leakage ``I(P_Y; P_{Y|F}) = I(Y; F)`` of Theorem 1 in bits, under Y - X - F:
    ``P(Y | F) = sum_x W(. | x) P(x | F)`` and ``I = sum_f P(f) D(P(Y|F=f) || P_Y)``."""
    px1 = check_px(px1)
    p1, p2, _ = _split(W)
    pf, r = _fingerprint(px1, F_given_X)
    return float(leakage_p(px1, pf, r, p1, p2))


def max_leakage(px1, F_given_X) -> float:
    """I(X; F) in bits: the largest leakage of any W (data processing), reached at W = identity."""
    return leakage_bits(px1, np.eye(2), F_given_X)


# ---------------------------------------------------------------- Definition 2 and simulation


def _dense_ranks(v: np.ndarray) -> np.ndarray:
    """Row-wise dense ranks 0, 1, ... of a (B, n) array (ties share a rank)."""
    idx = np.argsort(v, axis=1, kind="stable")
    s = np.take_along_axis(v, idx, axis=1)
    step = np.concatenate(
        [np.zeros((v.shape[0], 1), dtype=np.int64), (np.diff(s, axis=1) != 0).astype(np.int64)], axis=1
    )
    ranks_sorted = np.cumsum(step, axis=1)
    out = np.empty_like(ranks_sorted)
    np.put_along_axis(out, idx, ranks_sorted, axis=1)
    return out


def _strict_inversions(r: np.ndarray) -> np.ndarray:
    """Per row of a (B, n) int array: #{i < j : r_i > r_j}. Bottom-up merge sort, every level
    vectorized over rows and blocks: the left blocks, keyed ``(row, block pair) * n + value``, form
    one sorted array, and each right element counts the larger left ones with searchsorted.
    O(n log^2 n) per row (a sort per level), no Python loop over elements or pairs."""
    B, n = r.shape
    total = np.zeros(B, dtype=np.int64)
    cur = r.astype(np.int64)
    pos = np.arange(n)
    rows = np.arange(B, dtype=np.int64)[:, None]
    width = 1
    while width < n:
        pair = pos // (2 * width)
        npairs = int(pair[-1]) + 1
        right = ((pos // width) % 2) == 1
        base = (rows * npairs + pair[None, :]) * n  # (B, n)
        keys = base + cur
        left_keys = keys[:, ~right].ravel()
        rk = keys[:, right]
        rb = base[:, right]
        end = np.searchsorted(left_keys, (rb + n).ravel(), side="left")
        le = np.searchsorted(left_keys, rk.ravel(), side="right")
        total += (end - le).reshape(B, -1).sum(axis=1)
        merged = np.sort(pair[None, :] * n + cur, axis=1)
        cur = merged - pair[None, :] * n
        width *= 2
    return total


def discordant_pairs(deg_x, deg_y) -> np.ndarray:
    """Number of unordered pairs {i, j} with (x_i - x_j)(y_i - y_j) < 0 (ties in either are not
    discordant), along the last axis; leading axes are batched."""
    x = np.asarray(deg_x)
    y = np.asarray(deg_y)
    if x.shape != y.shape or x.ndim < 1:
        raise UsageError(f"the two rankings must have the same shape, got {x.shape} and {y.shape}")
    lead, n = x.shape[:-1], x.shape[-1]
    x2 = x.reshape(-1, n)
    y2 = y.reshape(-1, n)
    rx, ry = _dense_ranks(x2), _dense_ranks(y2)
    # sort by (x, y) ascending: a strict inversion in y is then exactly a discordant pair
    order = np.argsort(rx * n + ry, axis=1, kind="stable")
    return _strict_inversions(np.take_along_axis(ry, order, axis=1)).reshape(lead)


def krcc_distance(deg_x, deg_y):
    """Definition 2 (eq. 1): ``(1 / (n (n - 1))) sum_{(i, j)} 1(R(i) > R(j) & R^(i) < R^(j))``
    for the degree rankings of two datasets (rows ranked by their degrees; ties are not
    discordant). Equals #discordant unordered pairs / (n (n - 1)): 1/2 when the two rankings are
    strictly reversed, 0 when they agree. Vectorized over leading axes; O(n log^2 n) per ranking."""
    x = np.asarray(deg_x)
    n = x.shape[-1] if x.ndim else 0
    if n < 2:
        raise UsageError(f"the KRCC distance needs at least 2 rows, got {n}")
    d = discordant_pairs(deg_x, deg_y) / (n * (n - 1))
    return float(d) if np.ndim(d) == 0 else d


def simulate(
    px1, W, rows: int, cols: int, trials: int, rng: np.random.Generator, mode: str = "entries", progress=None
) -> np.ndarray:
    """Sec. IV-A: ``trials`` times, draw an ``rows x cols`` binary dataset X with IID entries from
    P_X, obfuscate every entry independently through W, rank the rows of X and of Y by degree
    (row sum) and measure Definition 2's KRCC distance. Returns the per-trial distances.

    ``mode="entries"`` draws every entry (uniforms compared with P_X(1), then with W(1 | x));
    ``mode="degrees"`` draws only the degrees, ``D_X ~ Bin(m, P_X(1))`` and ``D_Y = Bin(D_X,
    W(1|1)) + Bin(m - D_X, W(1|0))``: the same joint law of (D_X, D_Y), O(rows) per trial.
    Reproducible: the same Generator state gives the same trials. ``progress(k)``, when given, is
    called after each trial's draw with the number of trials drawn (the degrees mode draws all at
    once)."""
    px1 = check_px(px1)
    m = check_channel(W)
    for name, v, lo in (("rows", rows, 2), ("cols", cols, 1), ("trials", trials, 1)):
        if int(v) != v or v < lo:
            raise UsageError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not isinstance(rng, np.random.Generator):
        raise UsageError("rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed))")
    rows, cols, trials = int(rows), int(cols), int(trials)
    w01, w11 = float(m[0, 1]), float(m[1, 1])
    if mode == "degrees":
        dx = rng.binomial(cols, px1, size=(trials, rows))
        dy = rng.binomial(dx, w11) + rng.binomial(cols - dx, w01)
        if progress is not None:
            progress(trials)
    elif mode == "entries":
        dx = np.empty((trials, rows), dtype=np.int64)
        dy = np.empty((trials, rows), dtype=np.int64)
        for t in range(trials):
            x = rng.random((rows, cols)) < px1
            u = rng.random((rows, cols))
            y = np.where(x, u < w11, u < w01)
            dx[t] = x.sum(axis=1)
            dy[t] = y.sum(axis=1)
            if progress is not None:
                progress(t + 1)
    else:
        raise UsageError(f"mode must be 'entries' or 'degrees', got {mode!r}")
    return np.asarray(krcc_distance(dx, dy), dtype=float).reshape(trials)


def expected_distance(px1, W, cols: int) -> float:
    """The exact expected KRCC distance for finite m = cols (any n >= 2): by the proof of
    Theorem 1 (eq. 5) it is ``P(S1 < 0, S2 < 0)`` with ``S1 = sum_j X_2j - X_1j`` and
    ``S2 = sum_j Y_1j - Y_2j`` over m IID columns. The per-column law of (X_2 - X_1, Y_1 - Y_2)
    lives on {-1, 0, 1}^2; its m-fold convolution is taken with a 2-D FFT of size 2m + 1 (no
    wrap-around). Q is its m -> infinity limit; the difference is O(1 / sqrt(m)) (ties)."""
    px1 = check_px(px1)
    w = check_channel(W)
    if int(cols) != cols or cols < 1:
        raise UsageError(f"cols must be an integer >= 1, got {cols!r}")
    m = int(cols)
    pxy = np.array([1.0 - px1, px1])[:, None] * w  # P(X = x, Y = y)
    step = np.zeros((3, 3))  # index (s1 + 1, s2 + 1)
    for x1 in (0, 1):
        for y1 in (0, 1):
            for x2 in (0, 1):
                for y2 in (0, 1):
                    step[x2 - x1 + 1, y1 - y2 + 1] += pxy[x1, y1] * pxy[x2, y2]
    size = 2 * m + 1
    spec = np.fft.rfft2(step, s=(size, size))
    pmf = np.fft.irfft2(spec**m, s=(size, size))  # each step is offset by +1: index k <-> sum k - m
    return float(np.clip(pmf[:m, :m].sum(), 0.0, 1.0))
