"""``dp(X -> Y[, adjacent: R]) <= eps`` or ``<= (eps, delta)``: (eps, delta)-differential privacy of
the release Y of X,

    P(Y in E | x) <= e^eps P(Y in E | x') + delta        for all adjacent x, x' and events E,

linear rows in a finite design (builder/mechanism.py), the Gaussian calibration of a noise
placement (Balle & Wang's analytic condition; builder/noise.py).
"""

from __future__ import annotations

from ...errors import SpecError
from ...language import ast
from .base import Atom


class DP(Atom):
    """Read as a budget, ``dp(...) <= eps``; in an expression the context refuses it and says how to write it."""

    name = "dp"
    curvature = "ratio"
    sign = "nonnegative"


ATOM = DP()


def budget_terms(bound: ast.Expr, kind: str = "dp") -> tuple[ast.Expr, ...]:
    """The terms of a budget's bound: ``(eps,)``, or ``(eps, delta)`` for ``dp`` only, eps first as
    in the definition above. A bound of three or more numbers, a pair on another budget, and a
    pair whose names say it is written the wrong way round (``(delta, eps)``) are located errors."""
    items = bound.items if isinstance(bound, ast.TupleExpr) else (bound,)
    if len(items) == 2 and kind != "dp":
        raise SpecError(f"(eps, delta) bounds dp only; {kind} takes one number", bound.span)
    if len(items) > 2:
        raise SpecError(
            f"a dp budget is eps or (eps, delta); this bound has {len(items)} numbers",
            bound.span,
            "write dp(...) <= eps or dp(...) <= (eps, delta)",
        )
    if len(items) == 2 and (_named(items[0], "delta") or _named(items[1], "eps")):
        eps, delta = items[1].span.text(), items[0].span.text()
        raise SpecError(
            "this bound reads as (delta, eps): dp's bound is (eps, delta), eps first",
            bound.span,
            f"write ({eps}, {delta})",
        )
    return items


def _named(e: ast.Expr, prefix: str) -> bool:
    """Whether ``e`` is a param whose name starts with ``prefix`` (``delta``, ``delta2``, ``eps_total``)."""
    return isinstance(e, ast.Name) and e.name.lower().startswith(prefix)
