"""The one evaluator: a spec's expression -> a value over the variable registry.

Every problem class evaluates its expressions here. ``Evaluator.value`` walks the syntax tree
(``Number``, ``Name``, ``Neg``, ``BinOp``, ``Abs``, ``Call``, ``Prob``, ``Expect``) and

* applies the one arithmetic (``values.combine``: ``+ - * / ^`` with the same bits for every
  class), flat sums and products folded left to right without recursion;
* dispatches ``P(...)``, ``E[...]``, ``|e|``, ``@`` and every call to its atom by name
  (builder/atoms/, one module each), or to a table of the spec called like a function.

What differs by problem class is the ``Context`` it is given, not the walk: what a name denotes
(a param, the design's cells, a known table, a continuous input's entries), what ``P(Y | X)``
means (a design cell, a distribution the design induces, not a thing in a noise placement),
which atoms the class reads in an expression and how it refuses the others. A value is a
``LinTable`` (model/linear.py) whose columns are the context's registry's (model/registry.py),
``AbsOf`` (a bound's ``|e|``), or a constant ``Matrix`` (noise placement).
"""

from __future__ import annotations

from ..errors import SpecError, UnsupportedError
from ..language import ast
from ..model.linear import LinTable
from . import functions
from .atoms import ATOMS
from .values import AbsOf, absolute, combine


class Context:
    """What an expression means in one problem class (see the module doc). Subclasses set
    ``here`` (the class, as builder/functions.py names it), ``n`` (the registry's columns) and
    ``atoms`` (the atoms read in an expression), and resolve names (``name``). A class that
    reads ``E``, ``tv`` or ``sum`` has a model of its finite variables: it also gives
    ``vars``, ``var_arg`` (a variable named in a call) and ``induced`` (``P(T | G)`` of the
    model, atoms/prob.py)."""

    here: str = functions.REPORT
    atoms: frozenset[str] = frozenset()
    product_hint: str | None = None  # what the class allows instead of a product of design terms
    power_hint: str | None = None  # ... instead of a power of the design
    tuple_hint: str | None = None  # where a tuple goes in this class
    tables = ()  # the names of the spec's tables that may be called like a function, d(X, Y)
    n: int = 0  # the registry's columns: every LinTable of the class is over them

    def name(self, e: ast.Name):
        raise NotImplementedError

    def prob(self, p: ast.Prob) -> LinTable:
        return self.refuse("P", p)

    def expect_distribution(self, e: ast.Expect):
        """``E[g(B)]`` of a known distribution B read as a random variable (None: not one)."""
        return None

    def call(self, e: ast.Call):
        """A call of one of the spec's own ``tables`` (None: not one)."""
        return None

    def combine(self, node: ast.BinOp, a, b):
        """``a op b``: the one arithmetic, with this class's hints."""
        return combine(node, a, b, self.product_hint, self.power_hint)

    def elementwise(self, name: str, v: LinTable, node) -> None:
        """Refuse ``name(v)`` when it is not a constant table (the function is not linear)."""
        if not v.is_const:
            raise UnsupportedError(f"{name} of the design is not linear", node.span)

    def absolute(self, v: LinTable, node):
        """``|v|``: a constant table's absolute values, else ``AbsOf`` (a bound's smaller side)."""
        return absolute(v, node.span)

    def refuse(self, name: str, node):
        """The error for the atom ``name`` where this class does not read it in an expression
        (or reads it written otherwise): where it applies, or how to write it."""
        span = node.func.span if isinstance(node, ast.Call | ast.Expect) else node.span
        if name == "@":
            raise UnsupportedError(
                "'@' (a matrix product) applies to noise-placement specs",
                node.span,
                f"{functions.CLASS_NOUN[self.here]} {functions.CLASS_OBJECTIVE[self.here]}",
            )
        raise functions.unknown(name, self.here, span, extra=self.tables)

    def unknown(self, e: ast.Call):
        """The error for a call of a name that is neither an atom nor one of the spec's tables."""
        raise functions.unknown(e.func.name, self.here, e.func.span, extra=self.tables)

    def unexpected(self, e: ast.Expr):
        """The error for a node that is no value (a tuple, ``name:``)."""
        if isinstance(e, ast.TupleExpr):
            raise UnsupportedError("a tuple is not a value here", e.span, self.tuple_hint)
        if isinstance(e, ast.KwArg):
            raise SpecError(f"'{e.name.name}:' is not expected here", e.span)
        raise SpecError("unexpected expression", e.span)


class Evaluator:
    """Walks an expression's tree once, through a ``Context`` (see the module doc)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def value(self, e: ast.Expr):
        """The value of ``e``: a ``LinTable``, an ``AbsOf`` (``|e|`` of the design) or a
        ``Matrix``."""
        ctx = self.ctx
        if isinstance(e, ast.Number):
            return LinTable.scalar(e.value, ctx.n)
        if isinstance(e, ast.Name):
            return ctx.name(e)
        if isinstance(e, ast.Prob):
            return ATOMS["P"].evaluate(e, self)
        if isinstance(e, ast.Neg):
            return -self.plain(e.operand)
        if isinstance(e, ast.Abs):
            return ATOMS["abs"].evaluate(e, self)
        if isinstance(e, ast.BinOp):
            first, nodes = (
                ast.chain(e, "+-") if e.op in "+-" else ast.chain(e, "*/@") if e.op in "*/@" else (e.left, [e])
            )
            acc = self.plain(first)
            for node in nodes:
                acc = self.binop(node, acc, self.plain(node.right))
            return acc
        if isinstance(e, ast.Expect):
            if e.func.name == "E":
                return ATOMS["E"].evaluate(e, self)
            if "E" in ctx.atoms:
                raise SpecError(f"'{e.func.name}[...]': only E[...] (an expectation) takes brackets", e.func.span)
            return ctx.refuse(e.func.name, e)
        if isinstance(e, ast.Call):
            return self.call(e)
        return ctx.unexpected(e)

    def plain(self, e: ast.Expr):
        """``value(e)``, refusing ``|e|`` of the design outside a bound."""
        v = self.value(e)
        if isinstance(v, AbsOf):
            raise UnsupportedError("|...| of the design may only appear as |e| <= bound", v.span)
        return v

    def binop(self, node: ast.BinOp, a, b):
        """One operator node on its operands' values: ``@`` is an atom, the rest the one
        arithmetic."""
        if node.op == "@":
            if "@" not in self.ctx.atoms:
                return self.ctx.refuse("@", node)
            return ATOMS["@"].apply(node, self, a, b)
        return self.ctx.combine(node, a, b)

    def expect_distribution(self, e: ast.Expect):
        """``E[g(B)]`` of a known distribution B read as a random variable (None: not one)."""
        return None

    def call(self, e: ast.Call):
        """A call: an atom, or a table of the spec called like a function (a spec's table
        named like an elementwise function, ``const log(X) = ...``, is the table)."""
        name = e.func.name
        atom = ATOMS.get(name)
        f = functions.FUNCTIONS.get(name)
        if atom is None or (f is not None and f.use == "scalar"):
            v = self.ctx.call(e)
            if v is not None:
                return v
        if atom is None:
            return self.ctx.unknown(e)
        return atom.evaluate(e, self)
