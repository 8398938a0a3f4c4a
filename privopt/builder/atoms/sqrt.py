"""``sqrt(e)``: the square root (of a number >= 0), cell by cell, of a constant table.

Concave in its argument and nonnegative. Of a table that depends on the design it is refused by the
context (a function of the design is not linear); its values are checked to stay finite and
real (``values.apply_scalar``).
"""

from __future__ import annotations

from .base import Elementwise


class Sqrt(Elementwise):
    name = "sqrt"
    curvature = "concave"
    sign = "nonnegative"


ATOM = Sqrt()
