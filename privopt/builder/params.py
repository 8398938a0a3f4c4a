"""Params: where each value came from, and the domain the math gives it where it is used.

A param's value is written in the spec (``param delta = 0.9``), on the command line
(``--set delta=0.9``) or in Python (``privopt.load(path, params={"delta": 0.9})``). An error
about it names it as the user wrote it: at its definition in the spec (caret at the value), as
``--set delta=1.5`` on the command line, as ``params={'delta': 1.5}`` in Python.

A param has a domain where the math of its use gives one, checked before any solve
(``ParamDomains.require``):

* ``|Dt - D| <= B``: a difference of probabilities lies in [-1, 1], so B in [0, 1] (delta-fidelity,
  Chen et al. Def. 5: ``B = 1 - delta`` with delta in [0, 1]); a B below 0 leaves no table, above 1
  bounds nothing;
* ``Dt >= alpha * D`` and ``Dt <= D / alpha``: alpha in [0, 1] and (0, 1] (alpha-fidelity, Def. 6);
* a probability (the design, or ``P(...)``) compared with a number: the number in [0, 1];
* ``w1 * A + w2 * B`` with ``w1 + w2 = 1``: a mixture, each weight in [0, 1] (Ding et al. eq. 3's
  ``(1 - alpha) P(X | S) + alpha P(X)``; Ramon & Basu Sec. 3.3's "with probability alpha the true x");
* a privacy budget eps >= 0 (> 0 for Gaussian noise); a DP delta in [0, 1) ((0, 1) for Gaussian
  noise); a leakage bound >= 0 bits; a crossover probability in [0, 1].

When the value that leaves the domain is one param's (``1 - delta``), the error is at that
param: its domain is solved from the use when the use is affine in it (``1 - delta`` in [0, 1]
gives delta in [0, 1]), and the hint names the line of the use and why.
"""

from __future__ import annotations

import math

from ..errors import SpecError, UsageError
from ..language import ast
from .values import SCALAR_FUNCS


class CommandLineParams(dict):
    """Param values written on the command line (``--set NAME=VALUE``): errors about them name
    the option. ``swept`` is the param whose value comes from ``privopt sweep NAME=...``. A plain
    dict is the Python API's ``params={...}``."""

    swept: str | None = None

    def sweeping(self, name: str, value) -> CommandLineParams:
        """These values with ``name`` set to one value of a sweep."""
        out = CommandLineParams(self | {name: value})
        out.swept = name
        return out


class UseParams(dict):
    """Param values a composite sets in a block (``use "F.priv" as a with eps = 0.5``): an error
    about one is located at its value in the composite's spec (``spans``: param -> the span of
    the value after ``with P =``), its hint naming the block's line that gives the domain."""

    def __init__(self, values: dict, spans: dict):
        super().__init__(values)
        self.spans = spans


def given_as(params, name: str, raw=...) -> str:
    """How the user gave the value of param ``name``: ``--set delta=1.5``, the swept value
    ``delta=1.5`` or ``params={'delta': 1.5}`` (``...`` for the value when it does not matter)."""
    if isinstance(params, CommandLineParams):
        shown = "..." if raw is ... else f"{raw:g}" if isinstance(raw, float) else raw
        return f"the swept value {name}={shown}" if params.swept == name else f"--set {name}={shown}"
    return f"params={{{name!r}: {'...' if raw is ... else repr(raw)}}}"


def interval(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> str:
    """``[0, 1]``, ``[0, 1)``, ``>= 0``, ``> 0``: a domain as a reader writes it."""
    if math.isinf(hi) and math.isinf(lo):
        return "any number"
    if math.isinf(hi):
        return f"{'>' if lo_open else '>='} {lo:g}"
    if math.isinf(lo):
        return f"{'<' if hi_open else '<='} {hi:g}"
    return f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def must(dom: str) -> str:
    """``must lie in [0, 1]`` or ``must be >= 0``."""
    return f"must be {dom}" if dom[0] in "<>a" else f"must lie in {dom}"


def _inside(v: float, lo: float, hi: float, lo_open: bool, hi_open: bool) -> bool:
    return (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)


class ParamDomains:
    """The domain checks of one spec's params (see the module doc). ``b`` is the ``Builder``:
    its params, their definitions (``param_decls``) and the overrides as given."""

    def __init__(self, b):
        self.b = b

    def scalar(self, e: ast.Expr) -> float | None:
        """``e``'s value when it is a number expression of numbers and params, else None."""
        calls = ast.nodes_in(e, kind=ast.Call)
        if any(c.func.name not in SCALAR_FUNCS for c in calls):
            return None
        names = ast.names_in(e) - {c.func.name for c in calls}
        if not names <= set(self.b.params) or ast.nodes_in(e, kind=(ast.Prob, ast.Expect, ast.TupleExpr)):
            return None
        try:
            return self.b.scalar(e)
        except SpecError:
            return None  # the evaluator reports it where it reads the expression

    def require(
        self,
        e: ast.Expr,
        lo: float,
        hi: float,
        what: str,
        why: str,
        use,
        lo_open: bool = False,
        hi_open: bool = False,
    ) -> None:
        """``e`` (a number expression with params) must lie in the interval; ``what`` names it in
        a sentence (``the bound 1 - delta``), ``why`` says what math gives the interval, ``use`` is
        the span of the statement that uses it. Nothing happens when ``e`` is not a number
        expression or has no param: a number written in place is what the user meant (a vacuous
        ``Dt <= 1.5`` is not refused; a literal that breaks the math is refused where the
        builder reads it, e.g. ``bsc(1.5)``, ``ldp(S -> Y) <= -1``)."""
        value = self.scalar(e)
        if value is None or _inside(value, lo, hi, lo_open, hi_open):
            return
        params = sorted(n for n in ast.names_in(e) if n in self.b.params)
        if not params:
            return
        dom = interval(lo, hi, lo_open, hi_open)
        at = f"line {use.line}, {' '.join(use.text().split()).removeprefix('= ')}"
        if len(params) != 1:  # several params: the expression itself is wrong
            raise SpecError(f"{what} is {value:g}; it {must(dom)}", e.span, why)
        p = params[0]
        p_dom = self._solve(e, p, lo, hi, lo_open, hi_open)
        p_value = self.b.params[p]
        if p_dom is not None:
            message = f"{p} = {p_value:g} is outside its domain: {p} {must(p_dom)}"
        else:
            message = f"{p} = {p_value:g} puts {what} at {value:g}, outside {dom}"
        reason = f"{at}: {what} {must(dom)}; {why}"
        given = self.b.given_params
        if isinstance(given, UseParams) and p in given.spans:
            wanted = p_dom or dom
            wanted = wanted if wanted[0] in "<>" else f"in {wanted}"
            hint = f"{self.b.source.name} {reason}; write a value {wanted} after 'with {p} ='"
            raise SpecError(message, given.spans[p], hint)
        if p in self.b.overrides:
            raise UsageError(f"{given_as(self.b.given_params, p, self.b.overrides[p])}: {message}; {reason}")
        decl = self.b.param_decls[p]
        raise SpecError(message, decl.expr.span, reason)

    def _solve(self, e: ast.Expr, p: str, lo, hi, lo_open, hi_open) -> str | None:
        """The interval of ``p`` that puts ``e`` in [lo, hi], when ``e`` is affine in ``p``
        (probed at 0, 1, 2 and the value: ``e = a p + c``); None otherwise."""
        params = self.b.params
        saved = params[p]
        probes = {}
        try:
            for t in (0.0, 1.0, 2.0, saved):
                params[p] = t
                probes[t] = self.scalar(e)
        finally:
            params[p] = saved
        if any(v is None for v in probes.values()):
            return None
        c = probes[0.0]
        a = probes[1.0] - c
        for t, v in probes.items():
            if not math.isclose(v, a * t + c, rel_tol=1e-9, abs_tol=1e-12 * max(1.0, abs(a * t), abs(c))):
                return None
        if a == 0:
            return None
        ends = sorted([((lo - c) / a, lo_open), ((hi - c) / a, hi_open)], key=lambda x: x[0])
        (p_lo, p_lo_open), (p_hi, p_hi_open) = ends
        return interval(0.0 if p_lo == 0 else p_lo, 0.0 if p_hi == 0 else p_hi, p_lo_open, p_hi_open)


DELTA_FIDELITY = (
    "a difference of probabilities lies in [-1, 1], so a bound below 0 leaves no table and one above 1 bounds "
    "nothing (delta-fidelity, Chen et al. Def. 5)"
)
ALPHA_FIDELITY = "alpha-fidelity (Dt >= alpha * D, Dt <= D / alpha) takes alpha in (0, 1] (Chen et al. Def. 6)"
MIXTURE = "weights that sum to 1 make a mixture, and each is a probability (Ding et al. eq. 3; Ramon & Basu Sec. 3.3)"


class ConstraintDomains(ParamDomains):
    """The domains a constraint's math gives the number expressions in it (the module doc)."""

    def constraint(self, c: ast.ConstraintDecl, probability) -> None:
        """Check ``c``; ``probability(e)`` says whether ``e`` denotes a table of probabilities
        (the design, a known table, ``P(...)``)."""
        for left, right, op in zip(c.exprs, c.exprs[1:], c.ops):
            for a, b, smaller in ((left, right, op == "<="), (right, left, op == ">=")):
                if isinstance(a, ast.Abs) and smaller and _difference_of(a.operand, probability):
                    self.require(b, 0, 1, f"the bound {_text(b)}", DELTA_FIDELITY, c.span)
                elif probability(a):
                    self.require(b, 0, 1, f"the bound {_text(b)}", f"{_text(a)} is a probability", c.span)
                    if op != "==":
                        self._fidelity(b, not smaller, probability, c.span)
        for e in c.exprs:
            self._mixture(e, c.span)

    def _fidelity(self, b: ast.Expr, lower: bool, probability, use) -> None:
        """Def. 6's two halves: ``alpha * D`` (or ``D * alpha``) as a lower bound and ``D / alpha``
        as an upper bound of a probability. (An upper bound ``k * D`` or a lower bound ``D / k``
        with k > 1 is a plain relative bound, not alpha-fidelity: no domain.)"""
        if not isinstance(b, ast.BinOp) or b.op not in "*/":
            return
        if b.op == "/":
            if not lower and probability(b.left):
                self.require(b.right, 0, 1, f"the divisor {_text(b.right)}", ALPHA_FIDELITY, use, lo_open=True)
            return
        for k, t in ((b.left, b.right), (b.right, b.left)):
            if lower and probability(t):
                self.require(k, 0, 1, f"the factor {_text(k)}", ALPHA_FIDELITY, use)

    def _mixture(self, e: ast.Expr, use) -> None:
        """``w1 * A + w2 * B + ...`` with number weights summing to 1 and a param among them:
        each weight in [0, 1]."""
        if not (isinstance(e, ast.BinOp) and e.op == "+"):
            return
        first, nodes = ast.chain(e, "+-")
        if any(n.op != "+" for n in nodes):
            return
        weights = []
        for term in [first] + [n.right for n in nodes]:
            head, rest = ast.chain(term, "*/") if isinstance(term, ast.BinOp) and term.op in "*/" else (term, [])
            if any(n.op != "*" for n in rest):
                return
            factors = [head] + [n.right for n in rest]
            scalars = [f for f in factors if self.scalar(f) is not None]
            if len(scalars) != 1 or len(factors) < 2:
                return
            weights.append(scalars[0])
        values = [self.scalar(w) for w in weights]
        if not math.isclose(sum(values), 1.0, rel_tol=1e-9, abs_tol=1e-12):
            return
        if not any(ast.names_in(w) for w in weights):
            return
        for w in weights:
            self.require(w, 0, 1, f"the weight {_text(w)}", MIXTURE, use)


def _difference_of(e: ast.Expr, probability) -> bool:
    """``A - B`` of two probability tables (``Dt - D``, ``P(Y | S) - P(Y)``)."""
    return isinstance(e, ast.BinOp) and e.op == "-" and probability(e.left) and probability(e.right)


def _text(e: ast.Expr) -> str:
    return " ".join(e.span.text().split())
