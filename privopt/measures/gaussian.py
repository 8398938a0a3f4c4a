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

import functools
import math
import sys

import numpy as np

CALIBRATIONS = ("analytic", "classic")
DELTA_MIN = sys.float_info.min  # 2.2250738585072014e-308: the smallest normal double
DELTA_RTOL = 1e-9  # relative: the delta a verified release achieves may exceed delta by this factor


def log_analytic_delta(sensitivity: float, eps: float) -> float:
    """``log delta(Delta)``: the log of the least delta for which a Gaussian mechanism of
    Mahalanobis sensitivity ``Delta`` is (eps, delta)-DP (Balle & Wang 2018, Thm. 8),

        delta(Delta) = Phi(a) - e^eps Phi(b),   a = Delta/2 - eps/Delta,  b = -Delta/2 - eps/Delta,

    computed in log space: ``log Phi(a) + log(1 - e^(eps + log Phi(b) - log Phi(a)))`` with
    ``log_ndtr`` and ``expm1``, so that no intermediate under- or overflows for any delta a
    double holds (1e-300 keeps its digits; ``delta`` itself would underflow to 0 near 1e-308).
    -inf for sensitivity 0 (delta = 0), 0 for an infinite sensitivity (delta = 1). It
    increases with the sensitivity."""
    d = float(sensitivity)
    if d == 0.0:
        return -math.inf
    if not math.isfinite(d):
        return 0.0
    from scipy import special

    a, b = d / 2 - eps / d, -d / 2 - eps / d
    la = float(special.log_ndtr(a))
    # x = log(e^eps Phi(b) / Phi(a)) <= 0. Written as eps + log Phi(b) - log Phi(a) it cancels
    # terms of size eps (b^2/2 = a^2/2 + eps exactly): at eps = 1e20 the rounding is 1e4. With
    # g(z) = log Phi(z) + z^2/2 = log(erfcx(-z/sqrt 2) / 2) (smooth, no cancellation for z < 0)
    # it is g(b) - g(a) for a < 0 and g(b) - a^2/2 - log Phi(a) for a >= 0.
    gb = _log_scaled_tail(b)
    x = gb - (_log_scaled_tail(a) if a < 0 else a * a / 2 + la)
    if x > -1e-3:
        # the two terms agree to three digits (a short step Delta, or a tiny eps): their
        # difference as delta = int_b^a phi - (e^eps - 1) Phi(b), the integral by Gauss-Legendre
        # on [b, a] (phi varies there by a factor e^(|a| Delta) <= e^0.01: exact to rounding)
        nodes, weights = _gauss_legendre()
        mid, half = -eps / d, d / 2  # (a + b) / 2 and (a - b) / 2, without their rounding
        z = mid + half * nodes
        integral = half * float(weights @ np.exp(-z * z / 2)) / math.sqrt(2 * math.pi)
        delta = integral - math.expm1(eps) * float(special.ndtr(b))
        if integral > 0 and math.isfinite(integral):
            return math.log(delta) if delta > 0 else -math.inf
    if not x < 0.0:
        return -math.inf
    return la + math.log(-math.expm1(x))


@functools.cache
def _gauss_legendre() -> tuple[np.ndarray, np.ndarray]:
    """The 12-point Gauss-Legendre nodes and weights on [-1, 1], made when first needed
    (``numpy.polynomial`` is not imported at start-up)."""
    return np.polynomial.legendre.leggauss(12)


def _log_scaled_tail(z: float) -> float:
    """``log Phi(z) + z^2/2`` for z <= 0, as ``log(erfcx(-z / sqrt 2) / 2)``; -inf at -inf."""
    from scipy import special

    if z == -math.inf:
        return -math.inf
    return math.log(float(special.erfcx(-z / math.sqrt(2.0))) / 2.0)


def analytic_delta(sensitivity: float, eps: float) -> float:
    """The least delta for which a Gaussian mechanism of Mahalanobis sensitivity ``sensitivity``
    is (eps, delta)-DP (Balle & Wang 2018, Thm. 8): ``exp(log_analytic_delta)``. It underflows
    to 0 below ~1e-308: compare in log space (``log_analytic_delta``) where that matters."""
    return math.exp(log_analytic_delta(sensitivity, eps))


def classic_bound(eps: float, delta: float) -> float:
    """The classic calibration's bound ``eps / sqrt(2 ln(1.25/delta))`` (Dwork & Roth Thm. A.1),
    as ``eps / sqrt(2 (ln 1.25 - ln delta))``: 1.25/delta overflows for delta < 7e-309."""
    return eps / math.sqrt(2.0 * (math.log(1.25) - math.log(delta)))


def max_sensitivity(eps: float, delta: float, calibration: str = "analytic") -> float:
    """The largest Mahalanobis sensitivity the calibration allows at (eps, delta), from
    ``log(delta)`` (never from delta's reciprocal, which overflows near 1e-308).

    * classic: ``eps / sqrt(2 (log 1.25 - log delta))``;
    * analytic: the root of ``log_analytic_delta(D, eps) = log delta`` (Brent's method in
      ``log D``), then moved to the safe side by ulps, so that ``log_analytic_delta(D) <= log
      delta`` holds as computed. 0 when no positive sensitivity is private enough."""
    if calibration == "classic":
        return classic_bound(eps, delta)
    log_delta = math.log(delta)
    if delta >= 1.0:
        return math.inf
    # log_analytic_delta increases with the sensitivity from -inf to 0: bracket, then solve
    # (the root is below sqrt(2 eps) + 2 sqrt(-2 log delta): there a <= -sqrt(-2 log delta))
    hi = max(1.0, 2.0 * math.sqrt(eps))
    while log_analytic_delta(hi, eps) < log_delta:
        hi *= 2.0
        if not math.isfinite(hi):
            return math.inf
    lo = hi
    while log_analytic_delta(lo, eps) > log_delta:
        lo /= 2.0
        if lo < 1e-300:
            return 0.0

    def gap(log_d: float) -> float:
        return max(log_analytic_delta(math.exp(log_d), eps), -1e300) - log_delta

    from scipy import optimize

    root = optimize.brentq(gap, math.log(lo), math.log(hi), xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    d = math.exp(root)
    while log_analytic_delta(d, eps) > log_delta:  # the root to the safe side, by ulps
        d = math.nextafter(d, 0.0)
    return d


def sensitivity_ceiling(eps: float, delta: float, calibration: str, bound: float) -> float:
    """A proven upper bound on the largest sensitivity the calibration allows, given a
    candidate ``bound`` (from ``max_sensitivity``): the least ``D >= bound`` found, by steps of
    relative size 2^-40, 2^-39, ... (then bisected to 2^-40), at which the calibration's condition fails as computed
    (``log_analytic_delta(D) > log delta``; classic: ``D > eps / sqrt(2 ln(1.25/delta))``).
    Since delta(D) increases with D, no private noise has a sensitivity beyond it. The
    verifier scales its lower bound by ``(bound / ceiling)^2``: a too small ``bound`` (too much
    noise for the budget) cannot be certified optimal. inf when none is found."""
    if calibration == "classic":
        return max(bound, classic_bound(eps, delta)) * (1 + 4 * np.finfo(float).eps)
    log_delta = math.log(delta)
    if not (bound > 0 and math.isfinite(bound)):
        return math.inf
    step, ok = 2.0**-40, bound
    while True:
        d = bound * (1.0 + step)
        if not math.isfinite(d):
            return math.inf
        if log_analytic_delta(d, eps) > log_delta:
            break
        ok, step = d, step * 2.0
    while d / ok - 1.0 > 2.0**-40:  # a far too small bound: bisect down to the same precision
        mid = math.sqrt(ok) * math.sqrt(d)
        if not ok < mid < d:
            break
        if log_analytic_delta(mid, eps) > log_delta:
            d = mid
        else:
            ok = mid
    return d


def rounding_effect(eps: float, sensitivity: float) -> float:
    """How far one rounding of the sensitivity's last bit moves ``log delta``: the condition of
    the Gaussian condition at ``Delta``. ``a = Delta/2 - eps/Delta`` carries an absolute error
    of ~2^-52 (Delta/2 + eps/Delta) and ``d log Phi(a) / da`` is about ``max(1, -a)``, so
    ``2^-52 (Delta/2 + eps/Delta) max(1, -a)``. Past ``DELTA_RTOL``-sized effects (eps ~ 1e12
    at delta = 1e-5, where Delta ~ sqrt(2 eps)) no double computation can say whether the
    noise meets delta: the builder refuses such an eps."""
    d = float(sensitivity)
    if not (d > 0 and math.isfinite(d)):
        return 0.0
    a = d / 2 - eps / d
    return sys.float_info.epsilon * (d / 2 + eps / d) * max(1.0, -a)


def classic_is_private(eps: float, delta: float) -> tuple[bool, float]:
    """(whether the classic calibration's sensitivity bound gives (eps, delta)-DP, the exact
    delta it gives). Always true for eps < 1; can fail beyond (eps = 10, delta = 1e-5: 2.3e-5).
    Compared in log space."""
    log_exact = log_analytic_delta(max_sensitivity(eps, delta, "classic"), eps)
    return log_exact <= math.log(delta), math.exp(log_exact)


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
