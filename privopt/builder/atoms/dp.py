"""``dp(X -> Y[, adjacent: R]) <= eps`` or ``<= (eps, delta)``: (eps, delta)-differential privacy of
the release Y of X,

    P(Y in E | x) <= e^eps P(Y in E | x') + delta        for all adjacent x, x' and events E,

linear rows in a finite design (builder/mechanism.py), the Gaussian calibration of a noise
placement (Balle & Wang's analytic condition; builder/noise.py).
"""

from __future__ import annotations

from .base import Atom


class DP(Atom):
    """Read as a budget, ``dp(...) <= eps``; in an expression the context refuses it and says how to write it."""

    name = "dp"
    curvature = "ratio"
    sign = "nonnegative"


ATOM = DP()
