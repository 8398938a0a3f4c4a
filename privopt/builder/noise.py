"""Syntax tree -> model for noise placement (Ramon & Basu Sec. 3.2; model/noise.py).

The part of the builder for continuous inputs and Gaussian noise. It shares the ``Builder``'s
params, names, data files and variable registry, and is the context (builder/evaluate.py) in
which the one evaluator gives an expression one of three kinds of value:

* a number (numbers and params, through the same checked arithmetic as every spec);
* a constant matrix (``const A = matrix ...``, atoms/matmul.py's ``Matrix``);
* a vector affine in the symbols, ``sum_s C_s v_s + c`` over the continuous input and the noise
  vectors: a ``LinTable`` over one axis (``ENTRY``) whose decision vector is the registry's,
  the input's block followed by the noise vectors' blocks in declaration order;
  ``Registry.coefficients`` reads one symbol's coefficient matrix ``C_s``.

``@`` (atoms/matmul.py) multiplies a matrix into a vector; ``+``, ``-`` need equal lengths. Every dimension
mismatch is a located error naming both sizes.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np

from ..errors import SpecError, UnsupportedError
from ..language import ast
from ..language.source import Span
from ..language.tables import parse_number
from ..measures.gaussian import (
    CALIBRATIONS,
    DELTA_MIN,
    DELTA_RTOL,
    classic_is_private,
    max_sensitivity,
    rounding_effect,
)
from ..model.linear import LinTable
from ..model.noise import Continuous, DPRequirement, Noise, NoiseModel, NoiseObjective
from ..model.problem import Problem
from . import functions
from .atoms.dp import budget_terms
from .atoms.matmul import Matrix, same
from .evaluate import Context, Evaluator
from .values import second_objective, suggest, undefined_hint

ROLES = ("private", "data")
MAX_MATRIX_BYTES = 1 << 30  # a matrix file larger than this is refused, not truncated


ENTRY = "#"  # the axis of a vector's entries (not a name a spec can declare)


def _is_vec(v) -> bool:
    """Whether ``v`` is a vector affine in the symbols (not a number, not a matrix)."""
    return isinstance(v, LinTable) and v.axes == (ENTRY,)


def _number(v) -> float | None:
    """The number ``v`` holds, or None for a vector or a matrix."""
    return float(v.b[0]) if isinstance(v, LinTable) and not v.axes else None


class NoiseBuilder(Context):
    """Noise placement, and the context of its expressions: the registry holds the input vector
    (a ``vector`` block) and each noise vector (a ``variance`` block, ``covariance`` when
    correlated) as symbols; a value is a number, a ``Matrix`` or a vector affine in the symbols,
    and ``+ - * /`` join only what has a meaning here (the sizes named on a mismatch)."""

    here = functions.PLACEMENT
    atoms = frozenset({"@", "abs", "exp", "log", "sqrt"})
    tuple_hint = "(eps, delta) goes on the right of dp(x -> O) <="

    def __init__(self, b):
        self.b = b  # the Builder: params, names, data files, the source, the registry
        self.ev = Evaluator(self)
        self.inputs: dict[str, Continuous] = {}
        self.noises: dict[str, tuple[int, bool, Span]] = {}
        self.matrices: dict[str, np.ndarray] = {}
        self.lets: dict[str, LinTable] = {}
        self.let_exprs: dict[str, ast.Expr] = {}
        self.release_expr: ast.Expr | None = None  # what dp(x -> ...) releases

    # ------------------------------------------------------------------ entry point
    def build(self, title: str | None) -> Problem:
        st = self.b.spec.statements
        for s in st:
            if isinstance(s, (ast.KnownDecl, ast.DesignDecl, ast.ConstDecl)) or (
                isinstance(s, ast.VarDecl) and not isinstance(s.domain, ast.DomainReal)
            ):
                raise UnsupportedError(
                    "a noise-placement spec has continuous inputs and Gaussian noise only; finite tables "
                    "and designs belong to a spec of their own",
                    s.span,
                    "write this part as a separate spec",
                )
        self.b.read_params([s for s in st if isinstance(s, ast.ParamDecl)])
        self.b.in_use = frozenset()
        for s in st:
            if isinstance(s, ast.MatrixDecl):
                self._matrix(s)
            elif isinstance(s, ast.VarDecl):
                self._input(s)
            elif isinstance(s, ast.NoiseDecl):
                self._noise(s)
        registry = self.b.registry  # the input first, then the noise vectors in declaration order
        for name, x in self.inputs.items():
            registry.add(name, "vector", (x.size,), (ENTRY,))
        for name, (k, corr, _) in self.noises.items():
            registry.add(name, "covariance" if corr else "variance", (k,), (ENTRY,))
        for s in st:
            if isinstance(s, ast.LetDecl):
                self.b.declare(s.name, "name")
                self.b.in_use = frozenset(ast.names_in(s.expr))
                value = self._eval(s.expr)
                if not _is_vec(value):
                    raise SpecError(
                        f"'{s.name.name}' must be a vector of the inputs and noise",
                        s.expr.span,
                        "write the released answers, e.g. let O = A @ (x + eta) + xi",
                    )
                self.lets[s.name.name] = value
                self.let_exprs[s.name.name] = s.expr
        if not self.inputs:
            raise SpecError(
                "a noise-placement spec needs its continuous inputs",
                None,
                "declare them, e.g. var x : private real[3] in [0, 1]",
                file=self.b.source.name,
            )
        constraints = [s for s in st if isinstance(s, ast.ConstraintDecl)]
        objectives = [s for s in st if isinstance(s, ast.ObjectiveDecl)]
        if not objectives:
            raise SpecError(
                "the spec has no objective", None, "add e.g. minimize E[sum((O - A @ x)^2)]", file=self.b.source.name
            )
        if len(objectives) > 1:
            raise second_objective(objectives)
        if not constraints:
            raise SpecError(
                "the spec has no privacy requirement",
                None,
                "add e.g. subject to dp(x -> O) <= (eps, delta)",
                file=self.b.source.name,
            )
        if len(constraints) > 1:
            raise UnsupportedError(
                "a noise-placement spec has one privacy requirement; this is a second one",
                constraints[1].span,
                "keep one dp(x -> O) <= (eps, delta)",
            )
        requirement, release = self._requirement(constraints[0])
        objective = self._objective(objectives[0], release)
        x = self.inputs[requirement.source]
        noises = tuple(
            Noise(name, size, corr, self.b.registry.coefficients(release, name), span)
            for name, (size, corr, span) in self.noises.items()
        )
        model = NoiseModel(
            input=x,
            release=requirement.release,
            F=self.b.registry.coefficients(release, x.name),
            noises=noises,
            requirement=requirement,
            objective=objective,
        )
        return Problem(
            title=title,
            variables={},
            params=self.b.params,
            known={},
            design=None,
            constraints=(),
            objective=objective,
            kind="noise",
            source_name=self.b.source.name,
            data_sha256=dict(self.b.files.digests),
            noise=model,
        )

    # ------------------------------------------------------------------ declarations
    def _count(self, e: ast.Expr, what: str) -> int:
        self.b.in_use = frozenset(ast.names_in(e))
        v = self.b.scalar(e)
        if not (v == int(v) and 1 <= v <= 1_000_000):
            raise SpecError(f"{what} must be a whole number from 1 to 1000000, not {v:g}", e.span)
        return int(v)

    def _input(self, d: ast.VarDecl) -> None:
        self.b.declare(d.name, "variable")
        if d.role.name not in ROLES:
            raise SpecError(
                f"a continuous input is {' or '.join(ROLES)}, not '{d.role.name}'",
                d.role.span,
                "dp(x -> O) protects the private inputs: var x : private real[n] in [lo, hi]",
            )
        if self.inputs:
            raise UnsupportedError(
                "a noise-placement spec has one input vector; this is a second one",
                d.span,
                "join the inputs into one vector: var x : private real[n] in [lo, hi]",
            )
        dom = d.domain
        n = self._count(dom.size, "the length of a real vector")
        self.b.in_use = frozenset(ast.names_in(dom.lo, dom.hi))
        lo, hi = self.b.scalar(dom.lo), self.b.scalar(dom.hi)
        if not lo < hi:
            raise SpecError(
                f"the range [{lo:g}, {hi:g}] is empty or a single point", dom.span, "write [lo, hi] with lo < hi"
            )
        if not math.isfinite(hi - lo):
            raise SpecError("the range's width overflows", dom.span, "use a narrower range")
        self.inputs[d.name.name] = Continuous(
            d.name.name, d.role.name, np.full(n, lo), np.full(n, hi), d.span, dom.span
        )

    def _noise(self, d: ast.NoiseDecl) -> None:
        self.b.declare(d.name, "noise variable")
        if d.dist.name != "gaussian":
            raise UnsupportedError(
                f"unknown noise distribution '{d.dist.name}'",
                d.dist.span,
                suggest(d.dist.name, ["gaussian"]) or "noise NAME : gaussian[k]",
            )
        if d.option is not None and d.option.name != "correlated":
            raise SpecError(
                f"unknown noise option '{d.option.name}'",
                d.option.span,
                "the option is 'correlated' (a full covariance matrix); leave it out for a variance per entry",
            )
        k = self._count(d.size, "the length of a noise vector")
        self.noises[d.name.name] = (k, d.option is not None, d.span)

    def _matrix(self, d: ast.MatrixDecl) -> None:
        self.b.declare(d.name, "matrix")
        if d.body is not None:
            data = _read_matrix(d.body, d.body_span, "the matrix")
        else:
            text = self.b.files.text(d.path, d.path_span, MAX_MATRIX_BYTES)
            data = _read_matrix(text, d.path_span, f"'{d.path}'", file_rows=True)
        self.matrices[d.name.name] = data

    # ------------------------------------------------------------------ expressions
    @property
    def n(self) -> int:
        return self.b.registry.n

    def _eval(self, e: ast.Expr):
        return self.ev.value(e)

    def name(self, e: ast.Name):
        n = e.name
        if n in self.b.params:
            return LinTable.scalar(self.b.params[n], self.n)
        if n in self.matrices:
            return Matrix(n, self.matrices[n])
        if n in self.lets:
            return self.lets[n]
        if n in self.inputs or n in self.noises:
            return self.b.registry.variable(n)
        options = list(self.b.params) + list(self.matrices) + list(self.lets) + list(self.inputs) + list(self.noises)
        raise SpecError(f"'{n}' is not defined", e.span, undefined_hint(n, options, self.b.in_use))

    def combine(self, node: ast.BinOp, a, b):
        """The one arithmetic where it has a meaning here: numbers with numbers, vectors of one
        length added, a vector or a matrix scaled by a number; anything else is a located error."""
        op, span = node.op, node.span
        if _number(a) is not None and _number(b) is not None:
            return super().combine(node, a, b)
        if op in "+-":
            if _is_vec(a) and _is_vec(b):
                same(
                    a.cells,
                    b.cells,
                    span,
                    f"{node.left.span.text()} has {a.cells} entries",
                    f"{node.right.span.text()} has {b.cells} entries",
                )
                return super().combine(node, a, b)
            raise SpecError(
                f"'{op}' joins two vectors of the same length here",
                span,
                "add vectors to vectors (x + eta), numbers to numbers",
            )
        if op == "*":
            if _number(a) is not None:
                a, b = b, a
            if _number(b) is not None and (_is_vec(a) or isinstance(a, Matrix)):
                return self._entrywise(node, a, b)
            raise SpecError("'*' multiplies by a number here; use @ for a matrix product", span)
        if op == "/" and _number(b) is not None and (_is_vec(a) or isinstance(a, Matrix)):
            return self._entrywise(node, a, b)
        raise SpecError(f"'{op}' is not defined for these operands", span, _EXPR_HINT)

    def _entrywise(self, node: ast.BinOp, a, b):
        """A vector or a matrix times or over the number ``b``, by the one arithmetic (a matrix
        as a constant table over its rows and columns)."""
        if _is_vec(a):
            return super().combine(node, a, b)
        out = super().combine(node, LinTable.const(("row", "column"), a.data.shape, a.data, self.n), b)
        return Matrix(a.name, out.array())

    def elementwise(self, name: str, v, node) -> None:
        if _number(v) is None:
            arg = node.operand if isinstance(node, ast.Abs) else node.args[0]
            raise SpecError(f"{name}(...) takes a number here", arg.span)

    def absolute(self, v, node):
        self.elementwise("abs", v, node)
        return super().absolute(v, node)

    def refuse(self, name: str, node):
        if not functions.applies(name, functions.PLACEMENT):
            span = node.func.span if isinstance(node, ast.Call | ast.Expect) else node.span
            raise functions.unknown(name, functions.PLACEMENT, span, fallback=_EXPR_HINT)
        raise SpecError("this is not a vector, matrix or number expression", node.span, _EXPR_HINT)

    def unknown(self, e: ast.Call):
        raise functions.unknown(e.func.name, functions.PLACEMENT, e.func.span, fallback=_EXPR_HINT)

    def unexpected(self, e: ast.Expr):
        raise SpecError("this is not a vector, matrix or number expression", e.span, _EXPR_HINT)

    def _mentioned(self, e: ast.Expr) -> list[str]:
        """The inputs and noise vectors written in ``e`` (through its lets), in order of first
        appearance: the symbols the objective's checks look at."""
        out: list[str] = []
        seen: set[str] = set()  # lets already walked (their symbols are in ``out``)
        stack: list = [e]
        while stack:
            e = stack.pop()
            if isinstance(e, ast.Name):
                if e.name in self.let_exprs:
                    if e.name not in seen:
                        seen.add(e.name)
                        stack.append(self.let_exprs[e.name])
                elif (e.name in self.inputs or e.name in self.noises) and e.name not in out:
                    out.append(e.name)
            elif isinstance(e, ast.Neg):
                stack.append(e.operand)
            elif isinstance(e, ast.BinOp):
                stack += [e.right, e.left]
        return out

    # ------------------------------------------------------------------ requirement and objective
    def _requirement(self, c: ast.ConstraintDecl) -> tuple[DPRequirement, LinTable]:
        text = c.span.source.text[c.span.start : c.span.end]
        for x in c.exprs:
            if isinstance(x, ast.Call | ast.Expect) and not functions.applies(x.func.name, functions.PLACEMENT):
                raise functions.unknown(x.func.name, functions.PLACEMENT, x.func.span)
        if len(c.ops) != 1 or c.ops[0] != "<=" or not isinstance(c.exprs[0], ast.Call) or c.exprs[0].func.name != "dp":
            raise UnsupportedError(
                "a noise-placement spec's requirement is dp(x -> O) <= (eps, delta)",
                c.span,
                "write subject to dp(x -> O) <= (eps, delta)",
            )
        call = c.exprs[0]
        positional = [a for a in call.args if not isinstance(a, ast.KwArg)]
        if len(positional) != 1 or not isinstance(positional[0], ast.Name) or positional[0].name not in self.inputs:
            where = positional[0].span if positional else call.span
            written = positional[0].name if positional and isinstance(positional[0], ast.Name) else ""
            raise SpecError(
                "dp(x -> O) needs the continuous input before '->'",
                where,
                suggest(written, self.inputs) or f"inputs: {', '.join(self.inputs)}",
            )
        arrow = [a for a in call.arrow_args or () if not isinstance(a, ast.KwArg)]
        if len(arrow) != 1:
            raise SpecError("dp(x -> O) needs the released vector after '->'", call.span)
        source = positional[0].name
        self.b.in_use = frozenset(ast.names_in(arrow[0]))
        release = self._eval(arrow[0])
        self.release_expr = arrow[0]
        if not _is_vec(release):
            raise SpecError("after '->' comes the released vector", arrow[0].span)
        rel_name = arrow[0].name if isinstance(arrow[0], ast.Name) else _text(arrow[0])
        calibration = "analytic"
        cal_span = call.span
        for a in call.args + (call.arrow_args or ()):
            if not isinstance(a, ast.KwArg):
                continue
            if a.name.name != "calibration":
                raise SpecError(
                    f"unknown option '{a.name.name}'",
                    a.name.span,
                    suggest(a.name.name, ["calibration"]) or "the option is calibration: analytic | classic",
                )
            if not isinstance(a.value, ast.Name) or a.value.name not in CALIBRATIONS or a.op is not None:
                raise SpecError(
                    "calibration is analytic (the exact Gaussian condition, the default) or classic "
                    "(sqrt(2 ln(1.25/delta))/eps)",
                    a.value.span,
                )
            calibration, cal_span = a.value.name, a.span
        bound = c.exprs[1]
        items = budget_terms(bound)
        if len(items) != 2:
            raise SpecError(
                "Gaussian noise needs a delta > 0: the bound is (eps, delta)",
                bound.span,
                "write dp(x -> O) <= (eps, delta) with delta > 0",
            )
        self.b.in_use = frozenset(ast.names_in(bound))
        why = "Gaussian noise gives (eps, delta)-DP for eps > 0 and 0 < delta < 1"
        self.b.domains.require(items[0], 0, math.inf, "dp's eps", why, c.span, lo_open=True)
        self.b.domains.require(items[1], 0, 1, "dp's delta", why, c.span, lo_open=True, hi_open=True)
        eps, delta = (_number(self._eval(i)) for i in items)
        if not (isinstance(eps, float) and 0 < eps < math.inf):
            raise SpecError("eps must be a number > 0", self._value_site(items[0]))
        if not (isinstance(delta, float) and 0 < delta < 1):
            raise SpecError(
                "delta must be a number in (0, 1): Gaussian noise cannot give delta = 0",
                self._value_site(items[1]),
                "typical values are 1e-5 to 1e-9",
            )
        if delta < DELTA_MIN:
            raise SpecError(
                f"delta = {delta:.6g} is below {DELTA_MIN:.4g}, the smallest double held to full precision: "
                "a subnormal delta keeps fewer digits, and the calibration rests on log(delta)",
                self._value_site(items[1]),
                f"use a delta in [{DELTA_MIN:.4g}, 1), e.g. 1e-300",
            )
        if calibration == "classic":
            ok, exact = classic_is_private(eps, delta)
            if not ok:
                raise UnsupportedError(
                    f"the classic calibration does not give ({eps:g}, {delta:g})-DP here: its noise leaves "
                    f"delta = {exact:.3g} (the formula is proven for eps < 1)",
                    cal_span,
                    "drop 'calibration: classic' to use the exact analytic calibration",
                )
        bound_d = max_sensitivity(eps, delta, calibration)
        if bound_d <= 0:
            raise UnsupportedError("no finite noise meets this (eps, delta)", bound.span, "raise eps or delta")
        effect = rounding_effect(eps, bound_d)
        if not effect <= DELTA_RTOL:
            # large eps: Delta ~ sqrt(2 eps) and -a <= sqrt(-2 log delta), so the effect is
            # at most 2^-52 sqrt(2 eps) sqrt(-2 log delta): below DELTA_RTOL up to eps_max
            eps_max = 0.5 * (DELTA_RTOL / (sys.float_info.epsilon * max(1.0, math.sqrt(-2.0 * math.log(delta))))) ** 2
            raise SpecError(
                f"eps = {eps:.6g} is too large to verify in doubles: at the sensitivity it allows ({bound_d:.6g}) one "
                f"rounding moves delta by a relative {effect:.2g}, more than the {DELTA_RTOL:g} privopt verifies at",
                self._value_site(items[0]),
                f"use an eps up to about {eps_max:.2g} at this delta (its noise is already negligible there)",
            )
        return DPRequirement(source, rel_name, eps, delta, calibration, c.span, text), release

    def _value_site(self, e: ast.Expr) -> Span:
        """Where a value the requirement uses was written: a param's own declaration (its
        value) when ``e`` names a param declared in the spec and not set from outside (--set),
        else ``e`` itself."""
        if isinstance(e, ast.Name) and e.name not in self.b.overrides:
            for s in self.b.spec.statements:
                if isinstance(s, ast.ParamDecl) and s.name.name == e.name:
                    return s.expr.span
        return e.span

    def _objective(self, o: ast.ObjectiveDecl, release: LinTable) -> NoiseObjective:
        text = o.span.source.text[o.span.start : o.span.end]
        e = o.expr
        if o.sense != "minimize":
            raise UnsupportedError(
                "the expected squared error is minimized", o.span, "write minimize E[sum((O - A @ x)^2)]"
            )
        if isinstance(e, ast.Call | ast.Expect) and not functions.applies(e.func.name, functions.PLACEMENT):
            raise functions.unknown(e.func.name, functions.PLACEMENT, e.func.span)
        if not (isinstance(e, ast.Expect) and e.func.name == "E" and e.given is None):
            raise UnsupportedError("the objective is an expected squared error E[sum((...)^2)]", e.span, _OBJ_HINT)
        body = e.body
        if not (
            isinstance(body, ast.Call) and body.func.name == "sum" and len(body.args) == 1 and body.arrow_args is None
        ):
            raise UnsupportedError("inside E[...] comes sum((...)^2)", body.span, _OBJ_HINT)
        sq = body.args[0]
        if not (
            isinstance(sq, ast.BinOp) and sq.op == "^" and isinstance(sq.right, ast.Number) and sq.right.value == 2
        ):
            raise UnsupportedError("inside sum(...) comes a square (...)^2", sq.span, _OBJ_HINT)
        self.b.in_use = frozenset(ast.names_in(sq.left))
        err = self._eval(sq.left)
        if not _is_vec(err):
            raise SpecError("the squared error is of a vector", sq.left.span, _OBJ_HINT)
        # the symbols written in the error (and the release), checked in the order written
        mentioned, in_release = self._mentioned(sq.left), self._mentioned(self.release_expr)
        for s in mentioned:
            if s in self.inputs and np.any(self.b.registry.coefficients(err, s) != 0):
                raise UnsupportedError(
                    f"the error still depends on the private input {s}, so its expectation is not a number",
                    sq.left.span,
                    "subtract the exact answers: E[sum((O - A @ x)^2)]",
                )
        for s in mentioned:
            if s not in self.noises:
                continue
            c = self.b.registry.coefficients(err, s)
            if not np.array_equal(c, self.b.registry.coefficients(release, s) if s in in_release else np.zeros_like(c)):
                raise UnsupportedError(
                    "the objective's error must be the released vector's error (O - A @ x); this one weighs the "
                    f"noise {s} differently",
                    sq.left.span,
                    _OBJ_HINT,
                )
        return NoiseObjective("minimize", text, float(err.b @ err.b), span=o.span)


_EXPR_HINT = "noise placement uses numbers, params, const matrices, the input and noise vectors, + - * / and @"
_OBJ_HINT = "write minimize E[sum((O - A @ x)^2)]"


def _text(e: ast.Expr) -> str:
    return e.span.source.text[e.span.start : e.span.end]


def _matrix_entries(content: str) -> list[tuple[str, int]]:
    """The entries of one matrix line with their offsets: split at commas when the line has
    one (each entry stripped; an empty one kept as ""), else at runs of white space."""
    if "," not in content:
        return [(m.group(), m.start()) for m in re.finditer(r"\S+", content)]
    out, pos = [], 0
    for piece in content.split(","):
        lead = len(piece) - len(piece.lstrip())
        out.append((piece.strip(), pos + lead))
        pos += len(piece) + 1
    return out


def _read_matrix(text: str, span: Span, what: str, file_rows: bool = False) -> np.ndarray:
    """Rows of numbers, one per line, separated by commas (a CSV file) or by spaces. A bad cell
    is located: in the spec at its own place, in a file by row and column. A line holding a comma
    is split at its commas, so an empty entry (``1,,1``, ``1,2,``) is a missing value and an
    error, never dropped to give a shorter row."""
    body = text
    if not file_rows:
        inner_start = text.index("{") + 1
        body = text[inner_start : text.rindex("}")]
    rows: list[list[float]] = []
    offset = 0 if file_rows else inner_start
    for line_no, line in enumerate(body.split("\n"), start=1):
        cells = []
        content = line.split("#", 1)[0]  # a comment runs to the end of its line
        for raw, pos in _matrix_entries(content):
            if file_rows:
                row = len(rows) + 1
                at = (
                    f"row {row}"
                    + (f" (line {line_no})" if line_no != row else "")
                    + f", column {len(cells) + 1} of {what}"
                )
                cell_span = span
            else:
                at = "this entry"
                cell_span = span.source.span(span.start + offset + pos, span.start + offset + pos + max(len(raw), 1))
            if raw == "":
                raise SpecError(
                    f"{at} is empty (a missing value)",
                    cell_span,
                    "write a number in every entry; a missing value is not filled in",
                )
            v = parse_number(raw)
            if v is None or not math.isfinite(v):
                where = f"{at}: " if file_rows else ""
                raise SpecError(f"{where}'{raw}' is not a finite number", cell_span, "a matrix holds numbers only")
            cells.append(v)
        offset += len(line) + 1
        if not cells:
            continue
        if rows and len(cells) != len(rows[0]):
            where = (
                span if file_rows else span.source.span(span.start + offset - len(line) - 1, span.start + offset - 1)
            )
            raise SpecError(
                f"row {len(rows) + 1} of {what} has {len(cells)} entries, the first row {len(rows[0])}",
                where,
                "give every row the same number of entries",
            )
        rows.append(cells)
    if not rows:
        raise SpecError(f"{what} is empty", span, "write one row of numbers per line")
    return np.array(rows, dtype=float)
