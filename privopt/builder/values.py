"""Numbers in expressions: the one arithmetic of the spec language, scalar functions checked to
stay finite and real, the ``|e|`` of an expression, and the "did you mean" hints of undefined
names. Shared by every part of the builder.

``combine`` is the only place that defines ``+ - * / ^`` between two values of an expression
(``LinTable`` cells ``A @ x + b`` affine in the registry's decision vector, model/linear.py).
Every problem class evaluates through it (builder/evaluate.py), so the same expression gives
the same bits in every class:

* ``a + b``, ``a - b``: cell by cell after aligning both on the union of their axes;
* ``a * c``: ``diag(c) @ A`` for a constant table ``c`` (a product of two design terms is
  refused: ``x_i x_j`` is neither linear nor, in general, convex);
* ``a / c``: a true division ``A / c`` of every coefficient and constant
  (``LinTable.divide``), never ``a * (1 / c)``, which differs in the last bit;
* ``c ^ d`` of constants only, computed on the operands as they are laid out (a scalar 0-d, a
  table with size-1 axes where it has none), never expanded first: numpy's power takes
  another code path for a broadcast operand than for a full one, and may round differently.

Every result is checked to stay finite and real, located at the operator."""

from __future__ import annotations

import numpy as np

from ..errors import SpecError, UnsupportedError
from ..language import ast
from ..language.source import Span
from ..model.linear import LinTable
from ..records import Record

SCALAR_FUNCS = {"exp": np.exp, "log": np.log, "abs": np.abs, "sqrt": np.sqrt}


def suggest(name: str, options, in_use=frozenset()) -> str | None:
    """A "did you mean" for a misspelled name. Names already written in the same statement are
    never suggested: replacing D by Dt in |Dt - D| would make the constraint trivially true."""
    import difflib  # an error's hint only: not at start-up (issue 23, goal 1)

    close = difflib.get_close_matches(name, [o for o in options if o not in in_use], n=1)
    return f"did you mean '{close[0]}'?" if close else None


def undefined_hint(name: str, options, in_use=frozenset()) -> str:
    """The hint for an undefined name: a close name not already in the statement, or the
    names that could stand there."""
    rest = sorted(o for o in options if o not in in_use and o.isidentifier())
    close = suggest(name, rest)
    if close:
        return close
    listed = f"; defined here: {', '.join(rest[:12])}{', ...' if len(rest) > 12 else ''}" if rest else ""
    return f"declare it first (param {name} = ..., or known {name} = P(...) = ...){listed}"


def second_objective(objectives) -> SpecError:
    """The error for a spec with more than one ``minimize``/``maximize``: at the second, naming the first."""
    first, second = objectives[0], objectives[1]
    return SpecError(
        f"a spec has exactly one objective; this is a second one (the first is on line {first.span.line})",
        second.span,
        "keep one objective; to limit the other quantity, bound it in a constraint (subject to ... <= ...)",
    )


def real_values(values, span: Span, what: str = "this value"):
    """``values`` (a number or an array) if every entry is a finite real number; otherwise a
    located error saying whether it overflowed or left the reals (``(-1)^0.5``, ``log(-1)``)."""
    arr = np.asarray(values)
    if np.iscomplexobj(arr) or not np.all(np.isfinite(arr)):
        overflow = not np.iscomplexobj(arr) and np.any(np.isinf(arr))
        if overflow:
            raise SpecError(
                f"{what} overflows (its magnitude exceeds 1.8e308)", span, "use smaller numbers, or rescale the model"
            )
        raise SpecError(
            f"{what} is not a real number", span, "check the signs: a fractional power or a log needs a number >= 0"
        )
    return values


def apply_scalar(func: str, x, span: Span):
    """A scalar function of numbers or a constant array, checked to stay finite and real."""
    with np.errstate(all="ignore"):
        out = SCALAR_FUNCS[func](np.asarray(x, dtype=float))
    return real_values(out, span, f"{func}(...)")


def real_power(a, b, span: Span):
    """``a ^ b`` for numbers or constant arrays (broadcast as they are), checked to stay finite
    and real."""
    with np.errstate(all="ignore"):
        out = np.power(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return real_values(out, span)


def checked(table: LinTable, span: Span) -> LinTable:
    """``table`` if its coefficients and constants are all finite real numbers, else the
    located error of ``real_values``."""
    if table.A is not None:
        real_values(table.A.data, span)
    real_values(table.b, span)
    return table


class AbsOf(Record):
    """``|inner|`` of an expression that depends on the design: allowed only as the smaller
    side of a bound, ``|e| <= c``, which the builders split into ``e <= c`` and ``-e <= c``."""

    inner: LinTable
    span: Span


def absolute(v: LinTable, span: Span) -> LinTable | AbsOf:
    """``|v|``: a constant table's absolute values, else ``AbsOf`` (a bound's smaller side only)."""
    if v.is_const:
        return LinTable.const(v.axes, v.shape, np.abs(v.array()), v.n)
    return AbsOf(v, span)


PRODUCT = "a product of two design terms is not linear, and not convex in general"
POWER = "a power of the design is not linear"
DIVIDE = "dividing by the design is not linear"


def combine(node: ast.BinOp, a: LinTable, b: LinTable, product_hint=None, power_hint=None) -> LinTable:
    """``a op b`` for one operator node (op one of + - * / ^; module doc): what is not linear in
    the design is refused (``product_hint``, ``power_hint``: what the spec's class allows
    instead), a zero divisor is a located error, and the result is checked finite and real."""
    op, span = node.op, node.span
    with np.errstate(all="ignore"):
        if op in "+-":
            return checked(a + b if op == "+" else a - b, span)
        if op == "*":
            if not a.is_const and not b.is_const:
                raise UnsupportedError(PRODUCT, span, product_hint)
            return checked(a.scale(b) if b.is_const else b.scale(a), span)
        if op == "/":
            if not b.is_const:
                raise UnsupportedError(DIVIDE, node.right.span, "multiply both sides instead")
            if np.any(b.b == 0):
                raise SpecError(
                    "division by zero" + (" (a divisor cell is 0)" if b.axes else ""),
                    node.right.span,
                    "divide by a number that is not 0, or multiply the other side instead",
                )
            return checked(a.divide(b), span)
        assert op == "^", op
        if not (a.is_const and b.is_const):
            raise UnsupportedError(POWER, span, power_hint)
        return power(a, b, span)


def power(a: LinTable, b: LinTable, span: Span) -> LinTable:
    """``a ^ b`` of two constant tables over the union of their axes, each operand laid out as
    it is (0-d for a scalar, size 1 along the axes it lacks): see the module doc."""
    axes = a.axes + tuple(x for x in b.axes if x not in a.axes)
    out = real_power(_compact(a, axes), _compact(b, axes), span)
    if not axes:
        return LinTable.scalar(float(out), a.n)
    return LinTable.const(axes, out.shape, out, a.n)


def _compact(t: LinTable, axes: tuple[str, ...]) -> np.ndarray:
    """A constant table's values over ``axes``, size 1 along the axes it lacks (0-d for a
    scalar)."""
    if not t.axes:
        return t.b.reshape(())
    present = tuple(x for x in axes if x in t.axes)
    arr = np.transpose(t.array(), [t.axes.index(x) for x in present])
    return arr.reshape([t.shape[t.axes.index(x)] if x in t.axes else 1 for x in axes])
