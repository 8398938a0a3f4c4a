"""``krcc(X, Y)``: the Kendall rank distance Q(P_X, W) between data X and its release Y through the
channel W (Shariatnasab et al. Theorem 1), a polynomial in W that is neither convex nor
concave: its minimum under a leakage bound is found by the paper's global method.
"""

from __future__ import annotations

from .base import Atom


class KRCC(Atom):
    """Read as a rank-preserving obfuscation's objective (builder/obfuscation.py); in an expression the context refuses it and says how to write it."""

    name = "krcc"
    curvature = "nonconvex"
    sign = "nonnegative"


ATOM = KRCC()
