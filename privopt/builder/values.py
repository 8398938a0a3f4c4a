"""Numbers in expressions: arithmetic and scalar functions checked to stay finite and real, the
``|e|`` of an expression, and the "did you mean" hints of undefined names. Shared by every part
of the builder."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..language.source import Span
from ..model.linear import LinTable

SCALAR_FUNCS = {"exp": np.exp, "log": np.log, "abs": np.abs, "sqrt": np.sqrt}


def suggest(name: str, options, in_use=frozenset()) -> str | None:
    """A "did you mean" for a misspelled name. Names already written in the same statement are
    never suggested: replacing D by Dt in |Dt - D| would make the constraint trivially true."""
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


def arith(op: str, a, b, span: Span):
    """``a op b`` for numbers or constant arrays (op one of + - * / ^), checked to stay finite
    and real; a zero divisor is a located error."""
    if op == "/" and np.any(np.asarray(b) == 0):
        raise SpecError(
            "division by zero" + (" (a divisor cell is 0)" if np.ndim(b) else ""),
            span,
            "divide by a number that is not 0, or multiply the other side instead",
        )
    with np.errstate(all="ignore"):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        out = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "^": np.power}[op](a, b)
    return real_values(out, span)


def checked(table: LinTable, span: Span) -> LinTable:
    """``table`` if its coefficients and constants are all finite real numbers, else the
    located error of ``real_values``."""
    if table.A is not None:
        real_values(table.A.data, span)
    real_values(table.b, span)
    return table


@dataclass(frozen=True)
class AbsOf:
    """``|inner|`` of an expression that depends on the design: allowed only as the smaller
    side of a bound, ``|e| <= c``, which the builders split into ``e <= c`` and ``-e <= c``."""

    inner: LinTable
    span: Span


def absolute(v: LinTable, span: Span) -> LinTable | AbsOf:
    """``|v|``: a constant table's absolute values, else ``AbsOf`` (a bound's smaller side only)."""
    if v.is_const:
        return LinTable.const(v.axes, v.shape, np.abs(v.array()), v.n)
    return AbsOf(v, span)
