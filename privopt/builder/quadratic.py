"""Convex quadratic objectives of mechanism specs: squares of tables affine in the design.

``minimize sum(x, y: f * (x - y)^2) + w * sum(x: (E[y | x] - m)^2)`` (Ramon & Basu Sec. 3.3, soft
moment matching) is a convex QP when every square has a nonnegative weight. ``_term`` evaluates
an objective keeping each ``(e)^2`` of an affine e as a ``_Quad``; weights, sums and added linear
terms keep it convex, and anything else (a negative weight, a product of design terms, a power
other than 2, maximizing) is an error that names the term. The result is ``SquaredTerms``
(``sum_k w_k (a_k x + b_k)^2``), lowered by compile/mechanism.py.

``QuadraticTerms`` is a mixin of ``MechanismBuilder`` (builder/mechanism.py), whose ``value``,
``_plain`` and ``_combine`` (the one evaluator's) and ``var_arg`` it uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import SpecError, UnsupportedError
from ..language import ast
from ..language.source import Span
from ..model.linear import LinTable
from ..model.problem import MechanismObjective, SquaredTerms
from .atoms.sum import indices


@dataclass(frozen=True)
class _Quad:
    """Nonnegatively weighted squares of tables affine in the design, plus a linear part:
    ``sum over cells of weight * inner^2 (+ linear)``. ``free`` are the axes not yet summed;
    an objective needs them all summed. Built only by ``MechanismBuilder._term``."""

    terms: tuple[tuple[LinTable, np.ndarray], ...]  # (inner, weight per inner cell)
    free: tuple[str, ...]
    linear: LinTable | None
    span: Span


class QuadraticTerms:
    """The objective-side evaluator of ``MechanismBuilder`` for squares (see the module doc)."""

    def _term(self, e: ast.Expr):
        """Like ``value``, but a square of an affine table, ``(e)^2``, is kept as a ``_Quad``
        (objectives only); nonnegative weights, sums and adding linear terms keep it convex."""
        if isinstance(e, ast.BinOp) and e.op == "^":
            base = self.value(e.left)
            if isinstance(base, LinTable) and not base.is_const:
                power = self._plain(e.right)
                if not (power.is_const and not power.axes and power.b[0] == 2):
                    raise UnsupportedError("a power of the design other than ^2 is not supported", e.span)
                return _Quad(((base, np.ones(base.cells)),), base.axes, None, e.span)
            return self.value(e)
        if isinstance(e, ast.BinOp) and e.op in "+-*/":
            first, nodes = ast.chain(e, "+-" if e.op in "+-" else "*/")  # folded: no recursion on length
            acc = self._term(first)
            for node in nodes:
                acc = self._term_combine(node, acc, self._term(node.right))
            return acc
        if isinstance(e, ast.Neg):
            v = self._term(e.operand)
            if isinstance(v, _Quad):
                raise UnsupportedError("a negative square is not convex", e.span)
            return -self._plain_value(v)
        if isinstance(e, ast.Call) and e.func.name == "sum" and e.args and isinstance(e.args[-1], ast.KwArg):
            body = self._term(e.args[-1].value)
            if isinstance(body, _Quad):
                idx = indices(e, self)
                missing = [i for i in idx if i not in body.free]
                if missing:
                    raise SpecError(f"the body of sum(...) does not depend on {missing[0]}", e.args[-1].value.span)
                return _Quad(body.terms, tuple(a for a in body.free if a not in idx), body.linear, body.span)
            return self.value(e)
        return self.value(e)

    @staticmethod
    def _plain_value(v):
        """``v`` as a linear table; |...| of the design outside a bound is refused (as ``_plain``)."""
        if not isinstance(v, (LinTable, _Quad)):
            raise UnsupportedError("|...| of the design may only appear as |e| <= bound", v.span)
        return v

    def _term_combine(self, e: ast.BinOp, a, b):
        """One operator node of an objective: linear terms combine as in ``value``; a square
        may be weighted by a nonnegative constant or added to other terms."""
        a, b = self._plain_value(a), self._plain_value(b)
        if not isinstance(a, _Quad) and not isinstance(b, _Quad):
            return self._combine(e, a, b)
        if e.op == "*":
            q, c = (a, b) if isinstance(a, _Quad) else (b, a)
            if isinstance(c, _Quad) or not c.is_const:
                raise UnsupportedError("a product of a square with the design is not quadratic", e.span)
            return self._scale_quad(q, c, e.span)
        if e.op == "/":
            if not isinstance(a, _Quad) or isinstance(b, _Quad) or not b.is_const:
                raise UnsupportedError("dividing by a square or by the design is not convex", e.span)
            if np.any(b.b <= 0):
                raise UnsupportedError(
                    "dividing a square by a number <= 0 gives it a weight < 0: not convex", e.right.span
                )
            return self._scale_quad(a, b, e.span, divide=True)
        if e.op == "-" and isinstance(b, _Quad):
            raise UnsupportedError(
                "subtracting a square gives it a negative weight: the objective is not convex", e.right.span
            )
        return self._add_quad(a, b, e.op, e.span)

    def _scale_quad(self, q: _Quad, c: LinTable, span: Span, divide: bool = False) -> _Quad:
        """The square's weights and linear part times the constant table ``c`` (``divide``:
        divided by it, a true division as values.combine's)."""
        if set(c.axes) - set(q.free):
            raise SpecError(f"a weight over ({', '.join(c.axes)}) does not match the square's free axes", span)
        if np.any(c.b < 0):
            raise UnsupportedError("a negative weight on a square makes the objective nonconvex", span)
        if divide:
            terms = tuple((inner, w / c.align(inner.axes, inner.shape).b) for inner, w in q.terms)
            linear = q.linear.divide(c) if q.linear is not None else None
        else:
            terms = tuple((inner, w * c.align(inner.axes, inner.shape).b) for inner, w in q.terms)
            linear = q.linear.scale(c) if q.linear is not None else None
        return _Quad(terms, q.free, linear, q.span)

    def _add_quad(self, a, b, op: str, span: Span) -> _Quad:
        for v in (a, b):
            if v.free if isinstance(v, _Quad) else v.axes:
                raise SpecError("sum(...) a square over its variables before adding it to other terms", span)
        terms, linear = [], None
        for v, sign in ((a, 1.0), (b, 1.0 if op == "+" else -1.0)):
            if isinstance(v, _Quad):
                terms += v.terms
                part = v.linear
            else:
                part = v if sign > 0 else -v
            if part is not None:
                linear = part if linear is None else linear + part
        return _Quad(tuple(terms), (), linear, span)

    def _quadratic_objective(self, o: ast.ObjectiveDecl, q: _Quad, text: str) -> MechanismObjective:
        rows, consts, weights = [], [], []
        for inner, w in q.terms:
            keep = inner.defined_mask() & (w > 0)
            A, b = inner.take(keep)
            rows.append(A)
            consts.append(b)
            weights.append(w[keep])
        squares = SquaredTerms(sp.vstack(rows, format="csr"), np.concatenate(consts), np.concatenate(weights))
        linear = q.linear if q.linear is not None else LinTable.scalar(0.0, self.n)
        return MechanismObjective(o.sense, linear, "quadratic", text, None, None, o.span, squares)
