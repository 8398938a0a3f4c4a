"""``mutual_info(Y; F) <= eps``: the leakage I(Y; F) in bits of the release Y about the fingerprint F
under the Markov chain Y - X - F (Shariatnasab et al. Sec. III),

    I(Y; F) = sum_{y, f} P(y, f) log2 P(y, f) / (P(y) P(f)),

convex in the channel W = P(Y | X) for a fixed P(X, F).
"""

from __future__ import annotations

from .base import Atom


class MutualInfo(Atom):
    """Read as a rank-preserving obfuscation's leakage bound (builder/obfuscation.py); in an expression the context refuses it and says how to write it."""

    name = "mutual_info"
    curvature = "convex"
    sign = "nonnegative"


ATOM = MutualInfo()
