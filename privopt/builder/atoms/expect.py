"""``E[f]`` and ``E[f | G]``: the expectation of a constant table ``f`` under the model,

    E[f | G](g) = sum_v P(V = v | G = g) f(v, g)        (V: the axes of f not in G)

affine in the design (``P(V | G)`` is: ``atoms/prob.py``). ``E[g(B)]`` of a known
one-variable distribution B reads B as a random variable (``E[1 / B] = sum_v B(v) / v``,
Ramon & Basu Sec. 3.3), which the context resolves (``expect_distribution``). Noise placement
reads ``E[sum((O - A @ x)^2)]`` as its objective only (builder/noise.py).
"""

from __future__ import annotations

from ...errors import SpecError, UnsupportedError
from .base import Atom


class Expect(Atom):
    name = "E"
    curvature = "affine"

    def apply(self, node, ev):
        ctx = ev.ctx
        special = ctx.expect_distribution(node)
        if special is not None:
            return special
        body = ev.plain(node.body)
        if not body.is_const:
            raise UnsupportedError(
                "E[...] of the design is not linear", node.body.span, "inside E[...] use variables and const tables"
            )
        given = tuple(ctx.var_arg(g).name for g in (node.given or ()))
        over = tuple(a for a in body.axes if a not in given)
        if not over:
            return body
        if not set(body.axes) <= set(ctx.vars):
            raise SpecError("E[...] ranges over variables; this body has a table axis that is not one", node.body.span)
        return ctx.induced(over, given, node.span).scale(body).sum_over(over)


ATOM = Expect()
