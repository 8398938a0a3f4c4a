"""``loglift(S -> Y) <= eps``: the log-lift of the release Y about S,

    |log P(y | s) / P(y)| <= eps        for all s, y,

the log of a ratio of forms affine in the design: linear rows once multiplied out.
"""

from __future__ import annotations

from .base import Atom


class LogLift(Atom):
    """Read as a budget, ``loglift(...) <= eps`` (builder/mechanism.py); in an expression the context refuses it and says how to write it."""

    name = "loglift"
    curvature = "ratio"
    sign = "nonnegative"


ATOM = LogLift()
