"""``log(e)``: the natural logarithm (of a number > 0), cell by cell, of a constant table.

Concave in its argument. Of a table that depends on the design it is refused by the
context (a function of the design is not linear); its values are checked to stay finite and
real (``values.apply_scalar``).
"""

from __future__ import annotations

from .base import Elementwise


class Log(Elementwise):
    name = "log"
    curvature = "concave"
    sign = None


ATOM = Log()
