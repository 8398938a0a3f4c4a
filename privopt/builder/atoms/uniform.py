"""``known P(T | G) = uniform``: the table 1 / |T| in every cell, a constant (so affine)."""

from __future__ import annotations

from .base import Atom


class Uniform(Atom):
    """Read as a known table's source (builder/build.py); in an expression the context refuses it and says how to write it."""

    name = "uniform"
    curvature = "affine"
    sign = "nonnegative"


ATOM = Uniform()
