"""``ldp(S -> Y) <= eps``: local differential privacy of the release Y of S (Ding et al. eq. 1),

    P(y | s) <= e^eps P(y | s')        for all s, s', y,

the log of a ratio of forms affine in the design bounded by eps: each bound is a linear row
once multiplied out.
"""

from __future__ import annotations

from .base import Atom


class LDP(Atom):
    """Read as a budget, ``ldp(...) <= eps`` (builder/mechanism.py); in an expression the context refuses it and says how to write it."""

    name = "ldp"
    curvature = "ratio"
    sign = "nonnegative"


ATOM = LDP()
