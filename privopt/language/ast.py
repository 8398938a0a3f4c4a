"""Syntax tree of a spec file: frozen dataclasses (``privopt.records.Record``: their methods
shared, not generated per class, for start-up), each carrying the ``Span`` it was read from.

The tree says only what was written. Meaning (which variable a name is, whether a table
is valid, what a constraint bounds) is decided in ``build.py``.
"""

from __future__ import annotations

from dataclasses import field

from ..records import Record
from .source import Source, Span

# ---------------------------------------------------------------- leaves


class Ident(Record):
    name: str
    span: Span


class Label(Record):
    """A domain label as written: identifier, string or number. ``value`` is numeric or None."""

    text: str
    value: float | None
    span: Span


# ---------------------------------------------------------------- expressions


class Number(Record):
    value: float
    span: Span


class Name(Record):
    name: str
    span: Span


class Target(Record):
    var: Ident
    label: Label | None


class Prob(Record):
    """``P(t1, t2 = v | c1, c2 = w)``: ``given_labels`` holds each condition's label (None
    where the condition is a whole variable; empty when none has one)."""

    targets: tuple[Target, ...]
    given: tuple[Ident, ...]
    span: Span
    given_labels: tuple[Label | None, ...] = ()

    @property
    def is_cell(self) -> bool:
        """Every target and every condition names a value: one number, ``P(Y = 1 | X = 0)``."""
        return (
            all(t.label is not None for t in self.targets)
            and len(self.given_labels) == len(self.given)
            and all(g is not None for g in self.given_labels)
        )

    def labelled_condition(self) -> Label | None:
        """The first condition written with a value (``X = 0`` in ``P(Y | X = 0)``), or None."""
        return next((g for g in self.given_labels if g is not None), None)


class Call(Record):
    """``f(a, b)``; for channel measures ``f(a, b -> c)``; for information measures between
    two groups ``f(a; b)`` (``semi_args`` holds the group after the semicolon)."""

    func: Ident
    args: tuple[Expr, ...]
    arrow_args: tuple[Expr, ...] | None
    span: Span
    semi_args: tuple[Expr, ...] | None = None


class KwArg(Record):
    """``name: value`` or ``name: value OP bound`` inside a call (``adjacent: |x - x'| <= 1``,
    the body of ``sum(x, y: ...)``)."""

    name: Ident
    value: Expr
    op: str | None
    bound: Expr | None
    span: Span


class Expect(Record):
    """``E[body]`` or ``E[body | given...]``."""

    func: Ident
    body: Expr
    given: tuple[Expr, ...] | None
    span: Span


class BinOp(Record):
    op: str  # one of + - * / ^ @
    left: Expr
    right: Expr
    span: Span


class Neg(Record):
    operand: Expr
    span: Span


class Abs(Record):
    operand: Expr
    span: Span


class TupleExpr(Record):
    items: tuple[Expr, ...]
    span: Span


class Attr(Record):
    """``block.name`` in a composite spec: a block's param (``age.eps``) or its optimal value
    (``age.objective``)."""

    block: Ident
    attr: Ident
    span: Span


Expr = Number | Name | Prob | Call | KwArg | Expect | BinOp | Neg | Abs | TupleExpr | Attr


# ---------------------------------------------------------------- statements


class DomainSet(Record):
    labels: tuple[Label, ...]
    span: Span


class DomainOver(Record):
    other: Ident
    span: Span


class DomainRange(Record):
    lo: int
    hi: int
    span: Span


class DomainFile(Record):
    path: str
    path_span: Span
    column: Ident | None
    span: Span


class DomainReal(Record):
    """``real[n] in [lo, hi]``: a vector of n continuous values, each in [lo, hi]."""

    size: Expr
    lo: Expr
    hi: Expr
    span: Span


Domain = DomainSet | DomainOver | DomainRange | DomainFile | DomainReal


class SpecTitle(Record):
    title: str
    span: Span


class VarDecl(Record):
    name: Ident
    role: Ident
    domain: Domain
    span: Span


class ParamDecl(Record):
    name: Ident
    expr: Expr
    span: Span


class InlineTable(Record):
    counts: bool
    body: str
    body_span: Span
    span: Span


class FileTable(Record):
    counts: bool
    path: str
    path_span: Span
    column: Ident | None  # None: one row per record, counted per combination of labels
    span: Span


class BuiltinTable(Record):
    func: Ident
    args: tuple[Expr, ...]
    span: Span


TableSource = InlineTable | FileTable | BuiltinTable


class KnownDecl(Record):
    name: Ident | None
    prob: Prob
    source: TableSource
    span: Span


class ConstDecl(Record):
    """``const d(X, Y) = TABLE``: a table of numbers (not a distribution) over the variables."""

    name: Ident
    axes: tuple[Ident, ...]
    source: TableSource
    span: Span


class MatrixDecl(Record):
    """``const A = matrix { rows }`` or ``const A = matrix from "file.csv"``: a matrix of numbers,
    one row per line (``body``) or per CSV record (``path``), no header."""

    name: Ident
    body: str | None
    body_span: Span | None
    path: str | None
    path_span: Span | None
    span: Span


class NoiseDecl(Record):
    """``noise eta : gaussian[k] [correlated]``: k zero-mean Gaussian noise terms whose
    variances (or, correlated, whose covariance matrix) the program chooses."""

    name: Ident
    dist: Ident
    size: Expr
    option: Ident | None
    span: Span


class LetDecl(Record):
    """``let NAME = expr``: a name for an expression (the released answers, for instance)."""

    name: Ident
    expr: Expr
    span: Span


class DesignDecl(Record):
    name: Ident
    prob: Prob
    span: Span


class ConstraintDecl(Record):
    """``subject to e0 op1 e1 [op2 e2 ...]`` (a chain: every adjacent pair must hold)."""

    exprs: tuple[Expr, ...]
    ops: tuple[str, ...]
    span: Span


class ObjectiveDecl(Record):
    sense: str  # "minimize" | "maximize"
    expr: Expr
    span: Span


class WithItem(Record):
    """``P = expr`` after ``with`` in a ``use`` statement: the block's param P set to expr."""

    name: Ident
    expr: Expr
    span: Span


class UseDecl(Record):
    """``use "FILE.priv" as NAME [with P = EXPR, ...]``: a block, a whole spec solved as part of
    a composite (docs/blocks.md)."""

    path: str
    path_span: Span
    name: Ident
    withs: tuple[WithItem, ...]
    span: Span


class ChooseItem(Record):
    """``NAME.P [in [lo, hi]]`` (a block's param as a decision variable) or ``t [in [lo, hi]]``
    (a variable of the composite itself: ``block`` is None)."""

    block: Ident | None
    name: Ident
    lo: Expr | None
    hi: Expr | None
    span: Span

    @property
    def key(self) -> str:
        return f"{self.block.name}.{self.name.name}" if self.block is not None else self.name.name


class ChooseDecl(Record):
    items: tuple[ChooseItem, ...]
    span: Span


class ChooseOneDecl(Record):
    """``choose one of a, b``: the design choice (Ramon & Basu Sec. 3.4's pi): one block is released."""

    blocks: tuple[Ident, ...]
    span: Span


Statement = (
    SpecTitle
    | VarDecl
    | ParamDecl
    | KnownDecl
    | ConstDecl
    | MatrixDecl
    | DesignDecl
    | ConstraintDecl
    | ObjectiveDecl
    | NoiseDecl
    | LetDecl
    | UseDecl
    | ChooseDecl
    | ChooseOneDecl
)


class SpecFile(Record):
    source: Source
    statements: tuple[Statement, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------- walking without recursion


def chain(e: Expr, ops: str) -> tuple[Expr, list[BinOp]]:
    """A left-associative chain ``((x0 op1 x1) op2 x2) ...`` with every op in ``ops``: the first
    operand x0 and the BinOp nodes from the innermost out (node k's right operand is x_k).
    Folding over it evaluates a flat sum or product of any length without recursion."""
    nodes: list[BinOp] = []
    while isinstance(e, BinOp) and e.op in ops:
        nodes.append(e)
        e = e.left
    nodes.reverse()
    return e, nodes


def names_in(*exprs) -> set[str]:
    """Every name written in the expressions (variables, params, tables), found iteratively."""
    out: set[str] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if isinstance(e, tuple):
            stack.extend(e)
        elif isinstance(e, Name):
            out.add(e.name)
        elif isinstance(e, Ident):
            out.add(e.name)
        elif hasattr(e, "__dataclass_fields__") and not isinstance(e, (Span, Source)):
            stack.extend(getattr(e, f) for f in e.__dataclass_fields__)
    return out


def nodes_in(*exprs, kind: type | tuple[type, ...]) -> list:
    """Every node of type ``kind`` in the expressions or statements, in source order, found
    iteratively."""
    out = []
    stack = list(reversed(exprs))
    while stack:
        e = stack.pop()
        if isinstance(e, tuple):
            stack.extend(reversed(e))
        elif isinstance(e, kind):
            out.append(e)
            stack.extend(reversed([getattr(e, f) for f in e.__dataclass_fields__]))
        elif hasattr(e, "__dataclass_fields__") and not isinstance(e, (Span, Source)):
            stack.extend(reversed([getattr(e, f) for f in e.__dataclass_fields__]))
    return out
