"""``min_uncertainty(PUBLIC..., OUTCOME -> PRIVATE...)``: ``-log max_confidence(...)`` (Chen et al.
App. C), a decreasing function of a ratio of affine forms: maximizing it is minimizing the
ratio.
"""

from __future__ import annotations

from .base import Atom


class MinUncertainty(Atom):
    """Read as a transparency report's objective (builder/build.py); in an expression the context refuses it and says how to write it."""

    name = "min_uncertainty"
    curvature = "ratio"
    sign = None


ATOM = MinUncertainty()
