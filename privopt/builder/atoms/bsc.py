"""``known P(Y | X) = bsc(p)``: the binary symmetric channel [[1 - p, p], [p, 1 - p]], a constant
(so affine).
"""

from __future__ import annotations

from .base import Atom


class BSC(Atom):
    """Read as a known table's source (builder/build.py); in an expression the context refuses it and says how to write it."""

    name = "bsc"
    curvature = "affine"
    sign = "nonnegative"


ATOM = BSC()
