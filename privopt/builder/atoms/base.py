"""What every atom is: a name of the language with its curvature and sign, evaluated through the
context of the spec's class (builder/evaluate.py).

``curvature`` is the atom's shape as a function of the decision columns it reads (the design's
cells, a continuous input, a noise vector), the vocabulary of disciplined convex programming:

* ``affine``: linear plus a constant (``P(Y | S) = sum_x M(y | s, x) P(x | s)``, Ding et al. eq. 9);
* ``convex`` / ``concave``: e.g. the leakage ``I(Y; F)`` is convex in the channel;
* ``ratio``: a ratio of affine forms, quasi-linear (Chen et al.'s posterior confidence,
  eq. 16; the log-ratios bounded by ``dp``, ``ldp`` and ``loglift``), whose sublevel sets are
  polyhedra once multiplied out;
* ``nonconvex``: none of these (Shariatnasab et al.'s rank distance ``Q(P_X, W)``).

``sign`` is ``"nonnegative"`` or ``"positive"`` where the atom's value has one, else None.
An atom the class does not read in an expression is refused by the context
(``Context.refuse``), which says where it applies or how to write it instead.
"""

from __future__ import annotations

from ...language import ast
from ...model.linear import LinTable
from ..values import apply_scalar

CURVATURES = ("affine", "convex", "concave", "ratio", "nonconvex")
SIGNS = ("nonnegative", "positive", None)


class Atom:
    """One name of the language (see the module doc); ``evaluate`` reads a call of it."""

    name: str = ""
    curvature: str = "affine"
    sign: str | None = None

    def evaluate(self, node, ev):
        """The value of ``node`` (a call of this atom) through ``ev``'s context: the context
        reads it when the atom is one of its ``atoms``, else refuses it."""
        if self.name not in ev.ctx.atoms:
            return ev.ctx.refuse(self.name, node)
        return self.apply(node, ev)

    def apply(self, node, ev):
        """The atom's math; an atom read only outside expressions (a budget, an objective, a
        table or a noise declaration) has none here and is always refused."""
        return ev.ctx.refuse(self.name, node)


class Elementwise(Atom):
    """``f(e)`` applied cell by cell to a constant table (a function of the design is not
    linear: the context refuses it), checked to stay finite and real."""

    def apply(self, node, ev):
        if not isinstance(node, ast.Abs) and (node.arrow_args is not None or len(node.args) != 1):
            return ev.ctx.refuse(self.name, node)
        v = ev.plain(node.operand if isinstance(node, ast.Abs) else node.args[0])
        ev.ctx.elementwise(self.name, v, node)
        return self.table(v, node)

    def table(self, v: LinTable, node) -> LinTable:
        return LinTable(v.axes, v.shape, None, apply_scalar(self.name, v.b, node.span), v.n)
