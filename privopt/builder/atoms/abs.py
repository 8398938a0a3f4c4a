"""``|e|`` and ``abs(e)``: the absolute value, cell by cell.

Convex and nonnegative. Of a constant table it is its cells' absolute values; of a table that
depends on the design it is kept as ``AbsOf``, allowed only on the smaller side of a bound
``|e| <= c``, which the builders split into ``e <= c`` and ``-e <= c`` (Chen et al. Def. 5's
delta-fidelity ``|Dt - D| <= 1 - delta``). A class without bounds on expressions (noise
placement) takes numbers only (``Context.absolute``).
"""

from __future__ import annotations

from ...language import ast
from .base import Elementwise


class Abs(Elementwise):
    name = "abs"
    curvature = "convex"
    sign = "nonnegative"

    def apply(self, node, ev):
        if not isinstance(node, ast.Abs) and (node.arrow_args is not None or len(node.args) != 1):
            return ev.ctx.refuse(self.name, node)
        operand = node.operand if isinstance(node, ast.Abs) else node.args[0]
        return ev.ctx.absolute(ev.plain(operand), node)


ATOM = Abs()
