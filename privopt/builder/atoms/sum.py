"""``sum(i, j: body)``: the body summed over the named variables,

    sum(i, j: f)(rest) = sum_{i, j} f(i, j, rest),

affine (a sum of affine cells). Noise placement reads ``sum((...)^2)`` inside its objective
only (builder/noise.py); a mechanism objective keeps squares inside it (builder/quadratic.py).
"""

from __future__ import annotations

from ...errors import SpecError
from ...language import ast
from .base import Atom


def indices(node, ctx) -> list[str]:
    """The bound variables of sum(i, j: body): the plain arguments and the name before ':'."""
    last = node.args[-1]
    return [ctx.var_arg(a).name for a in node.args[:-1]] + [ctx.var_arg(ast.Name(last.name.name, last.name.span)).name]


def is_sum(node) -> bool:
    """Whether ``node`` is written ``sum(i, ...: body)``."""
    return node.arrow_args is None and bool(node.args) and isinstance(node.args[-1], ast.KwArg) and not node.args[-1].op


class Sum(Atom):
    name = "sum"
    curvature = "affine"

    def apply(self, node, ev):
        if not is_sum(node):
            raise SpecError("write sum(x, y: body)", node.span)
        last = node.args[-1]
        idx = indices(node, ev.ctx)
        body = ev.plain(last.value)
        missing = [i for i in idx if i not in body.axes]
        if missing:
            raise SpecError(f"the body of sum(...) does not depend on {missing[0]}", last.value.span)
        return body.sum_over(idx)


ATOM = Sum()
