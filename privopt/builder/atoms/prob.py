"""``P(T | G)``: a distribution, the table ``t, g -> P(T = t | G = g)`` over ``G + T``.

Affine in the design and nonnegative. What it denotes is the context's: a known table (every
class over finite variables), a cell of the design (Chen et al. eq. 16's ``Dt``), or a
distribution the design induces, linear in it, ``P(Y | S) = sum_x M(y | s, x) P(x | s)``
(Ding et al. eq. 9 and the left side of eq. 3).
"""

from __future__ import annotations

from .base import Atom


class Prob(Atom):
    name = "P"
    curvature = "affine"
    sign = "nonnegative"

    def apply(self, node, ev):
        return ev.ctx.prob(node)


ATOM = Prob()
