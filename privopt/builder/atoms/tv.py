"""``tv(X, Y)``: the total variation between data X and its release Y (Ding et al. App. B),

    tv(X, Y) = 1 - sum_x P(X = x, Y = x),

affine in the design (the joint ``P(X, Y)`` is) and nonnegative.
"""

from __future__ import annotations

import numpy as np

from ...errors import SpecError
from ...model.linear import LinTable
from .base import Atom


class TV(Atom):
    name = "tv"
    curvature = "affine"
    sign = "nonnegative"

    def apply(self, node, ev):
        ctx = ev.ctx
        if node.arrow_args is not None or len(node.args) != 2:
            raise SpecError("write tv(X, Y): the data variable and its released copy", node.span)
        x, y = (ctx.var_arg(a) for a in node.args)
        if x.labels != y.labels:
            raise SpecError(f"tv({x.name}, {y.name}) compares a variable with its copy; their labels differ", node.span)
        joint = ctx.induced((x.name, y.name), (), node.span)
        eq = LinTable.const((x.name, y.name), (x.size, y.size), np.eye(x.size), ctx.n)
        return LinTable.scalar(1.0, ctx.n) - joint.scale(eq).sum_over((x.name, y.name))


ATOM = TV()
