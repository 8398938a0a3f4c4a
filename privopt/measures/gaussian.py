"""The Gaussian mechanism: its privacy as a function of the Mahalanobis sensitivity.

A release ``O = F x + noise`` with noise ~ N(0, Sigma) and neighbouring inputs that differ in
one coordinate j by at most ``w_j`` is, for the worst pair, a one-dimensional Gaussian test
between means ``0`` and ``Delta_j = w_j sqrt(f_j' Sigma^+ f_j)`` at unit variance (``f_j`` the
j-th column of F; a shift outside the range of Sigma is told apart exactly: Delta = inf). So
the mechanism's privacy depends on ``Delta = max_j Delta_j`` alone:

* exact (Balle & Wang 2018, Thm. 8): (eps, delta)-DP iff
  ``Phi(Delta/2 - eps/Delta) - e^eps Phi(-Delta/2 - eps/Delta) <= delta``;
* classic (Dwork & Roth 2014, Thm. A.1; the calibration Ramon & Basu Sec. 3.2 use):
  ``Delta <= eps / sqrt(2 ln(1.25/delta))``. It is a sufficient condition only for eps < 1;
  beyond, ``classic_is_private`` says whether it still is.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

CALIBRATIONS = ("analytic", "classic")


def analytic_delta(sensitivity: float, eps: float) -> float:
    """The least delta for which a Gaussian mechanism of Mahalanobis sensitivity ``sensitivity``
    is (eps, delta)-DP (Balle & Wang 2018, Thm. 8), computed in log space so that deltas down to
    1e-300 keep their digits. 0 for sensitivity 0, 1 for an infinite sensitivity."""
    d = float(sensitivity)
    if d == 0.0:
        return 0.0
    if not math.isfinite(d):
        return 1.0
    a, b = d / 2 - eps / d, -d / 2 - eps / d
    la, lb = special.log_ndtr(a), special.log_ndtr(b)
    # Phi(a) - e^eps Phi(b) = Phi(a) (1 - e^(eps + lb - la)); the bracket is in [0, 1]
    return float(math.exp(la) * -math.expm1(min(0.0, eps + lb - la)))


def max_sensitivity(eps: float, delta: float, calibration: str = "analytic") -> float:
    """The largest Mahalanobis sensitivity the calibration allows at (eps, delta)."""
    if calibration == "classic":
        return eps / math.sqrt(2.0 * math.log(1.25 / delta))
    if delta >= 1.0:
        return math.inf
    # analytic_delta increases with the sensitivity from 0 to 1: bracket, then solve in log space
    hi = max(1.0, 2.0 * eps)
    while analytic_delta(hi, eps) < delta:
        hi *= 2.0
    lo = hi
    while analytic_delta(lo, eps) > delta:
        lo /= 2.0
        if lo < 1e-300:
            return 0.0

    def gap(log_d: float) -> float:
        return math.log(max(analytic_delta(math.exp(log_d), eps), 1e-320)) - math.log(delta)

    root = optimize.brentq(gap, math.log(lo), math.log(hi), xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    d = math.exp(root)
    while analytic_delta(d, eps) > delta:  # the root to the safe side, by ulps
        d = math.nextafter(d, 0.0)
    return d


def classic_is_private(eps: float, delta: float) -> tuple[bool, float]:
    """(whether the classic calibration's sensitivity bound gives (eps, delta)-DP, the exact
    delta it gives). Always true for eps < 1; can fail beyond (eps = 10, delta = 1e-5: 2.3e-5)."""
    exact = analytic_delta(max_sensitivity(eps, delta, "classic"), eps)
    return exact <= delta, exact


def sensitivities_of_factor(H: np.ndarray, F: np.ndarray, widths: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """``Delta_j = w_j sqrt(f_j' Sigma^+ f_j)`` for every input coordinate j, for ``Sigma = H H'``
    given the factor H (m x N): ``f' Sigma^+ f =
    |H^+ f|^2`` by an SVD least-squares solve on H, whose condition number is the square root
    of Sigma's, so a nearly singular Sigma (a variance of 1e-9 beside one of 1e3) keeps its
    digits. A column whose residual ``|H y - f|`` exceeds ``rtol |f|`` leaves the range: inf."""
    H = np.asarray(H, dtype=float)
    F = np.asarray(F, dtype=float)
    if H.size == 0:
        out = np.where(np.any(F != 0, axis=0), math.inf, 0.0)
        return out * 1.0
    y, *_ = np.linalg.lstsq(H, F, rcond=None)
    residual = np.linalg.norm(H @ y - F, axis=0)
    norms = np.linalg.norm(F, axis=0)
    out = widths * np.linalg.norm(y, axis=0)
    out[residual > rtol * np.maximum(norms, 1e-300)] = math.inf
    out[norms == 0] = 0.0
    return out
