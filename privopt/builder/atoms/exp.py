"""``exp(e)``: the exponential e^x, cell by cell, of a constant table.

Convex in its argument and positive. Of a table that depends on the design it is refused by the
context (a function of the design is not linear); its values are checked to stay finite and
real (``values.apply_scalar``).
"""

from __future__ import annotations

from .base import Elementwise


class Exp(Elementwise):
    name = "exp"
    curvature = "convex"
    sign = "positive"


ATOM = Exp()
