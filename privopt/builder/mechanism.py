"""Meaning of a mechanism spec: constraints, budgets and objective as tables linear in the design.

This is the second half of ``build.py`` for problems that are linear programs over the
design's cells (Ding, Liu & Farokhi; optimal randomized response; count queries under DP).
``MechanismBuilder`` is the context (builder/evaluate.py) in which the one evaluator gives every
expression a ``LinTable`` (model/linear.py) over the registry's design block. The model is the joint
distribution of the known variables times the design:

    P(k, t) = P(k) M(t | c(k))            (k: known variables, t: the design's targets)

so any distribution of it whose condition avoids the design's targets is linear in M, e.g.
``P(Y | S) = sum_x M(y | s, x) P(x | s)`` (Ding et al., left side of eq. 3, and eq. 9).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..errors import SpecError, UnsupportedError
from ..language import ast
from ..language.source import Span
from ..model.linear import LinTable, marginal
from ..model.problem import (
    Budget,
    InducedEquality,
    LinearConstraint,
    MechanismObjective,
    Problem,
    Role,
    Table,
)
from . import functions
from .atoms.dp import budget_terms
from .evaluate import Context, Evaluator
from .quadratic import QuadraticTerms, _Quad
from .values import AbsOf, suggest, undefined_hint

BUDGETS = ("ldp", "dp", "loglift")
NONLINEAR = {
    "mutual_info": "mutual information is not linear in the design",
    "krcc": "krcc is not linear in the design",
    "max_confidence": "max_confidence is the objective of a transparency-report spec",
    "min_uncertainty": "min_uncertainty is the objective of a transparency-report spec",
}


def _row_absmax(M: sp.csr_array) -> np.ndarray:
    """The largest |entry| of each row of a sparse matrix (0 for an empty row)."""
    M = sp.csr_array(M)
    M.sum_duplicates()
    out = np.zeros(M.shape[0])
    nz = np.diff(M.indptr) > 0
    if M.nnz:
        out[nz] = np.maximum.reduceat(np.abs(M.data), M.indptr[:-1][nz])
    return out


MULTIPLE_RTOL = 1e-9  # |A_expr - c A_ref| per row, relative to the row's scale
# A mechanism's input may be spelled ``data`` or ``private``: E[d(X, Y)] is a distortion either way
_INPUTS = (Role.DATA, Role.PRIVATE)
_INPUT_RELEASE = ({Role.DATA, Role.RELEASE}, {Role.PRIVATE, Role.RELEASE})


def induced_multiple(expr: LinTable, ref: LinTable, sense: str = "=="):
    """``(c, q, live)`` when, on every cell, ``expr = c * (ref - q)`` with ``c != 0`` where
    ``ref`` is defined (``live``), else None. ``expr`` must be over ``ref``'s axes, in order.

    The design-dependent parts are compared row by row (sparse: ``c = <a, r> / <r, r>``, then
    the residual ``a - c r`` must vanish), so the constraint ``expr (== | <=) 0`` says
    ``ref == q`` (or ``ref <= q`` where ``c > 0``, ``>= q`` where ``c < 0``) whatever its
    spelling. Cells of ``expr`` where ``ref`` is undefined must be trivially true (no design
    part and a constant part that is 0, or <= 0 for a bound); a cell where ``ref`` is defined
    but ``expr`` is not is left unconstrained by ``expr``, so that is another problem.
    """
    if expr.axes != ref.axes or expr.shape != ref.shape or expr.n != ref.n:
        return None
    a, r = sp.csr_array(expr.matrix()), sp.csr_array(ref.matrix())
    num = np.asarray(a.multiply(r).sum(axis=1)).ravel()
    den = np.asarray(r.multiply(r).sum(axis=1)).ravel()
    c = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    a_max, r_max = _row_absmax(a), _row_absmax(r)
    resid = _row_absmax((a - sp.diags_array(c) @ r).tocsr())
    live = ref.defined_mask()
    here = expr.defined_mask()
    if np.any(live & ~here):
        return None
    scale = np.maximum(a_max, np.abs(c) * r_max)
    if np.any(resid[here] > MULTIPLE_RTOL * scale[here]):
        return None
    if np.any(((c == 0) | (a_max == 0))[live]):
        return None
    dead = here & ~live
    b = expr.b
    if np.any(a_max[dead] > 0) or np.any((np.abs(b) if sense == "==" else b)[dead] > 1e-12):
        return None
    q = np.divide(-b, c, out=np.zeros_like(b), where=live)
    return c, q, live


class MechanismBuilder(QuadraticTerms, Context):
    """Mechanism and shaped-noise specs, and the context of their expressions: the registry
    holds the design's cells M; names are params, the design, known and const tables and
    numeric variables; ``P(T | G)`` is a known table or a distribution the design induces."""

    here = functions.MECHANISM
    atoms = frozenset({"P", "E", "tv", "sum", "abs", "exp", "log", "sqrt"})
    product_hint = "square one affine expression instead: (e)^2"
    power_hint = "a square may appear in the objective, e.g. minimize ... + w * sum(x: (E[y | x] - m)^2)"
    tuple_hint = "(eps, delta) goes on the right of dp(...) <="

    def __init__(self, b):
        self.b = b  # the Builder: variables, params, known, consts, design, registry
        self.vars = b.variables
        self.design = b.design
        self.n = b.registry.n
        self.tables = b.consts
        self.ev = Evaluator(self)
        self._known_joint: tuple[tuple[str, ...], np.ndarray] | None = None
        self._model: LinTable | None = None
        self.primed: dict[str, str] = {}  # x' -> x while an adjacency relation is read
        self.as_variable: dict[str, str] = {}  # B -> y inside E[... B ...]
        self._induced_cache: dict[tuple, LinTable | None] = {}  # (targets, given) -> P(targets | given)

    # ------------------------------------------------------------------ entry point
    def build(self, decls: list[ast.ConstraintDecl], objective: ast.ObjectiveDecl, title) -> Problem:
        self._check_design()
        constraints, budgets = [], []
        for c in decls:
            cons, buds = self._constraint(c)
            constraints += cons
            budgets += buds
        constraints = self._recognize_induced(constraints)
        obj = self._objective(objective)
        return Problem(
            title=title,
            variables=self.vars,
            params=self.b.params,
            known=self.b.known,
            design=self.design,
            constraints=tuple(constraints),
            objective=obj,
            kind="mechanism",
            source_name=self.b.source.name,
            data_sha256=dict(self.b.files.digests),
            budgets=tuple(budgets),
            model=self._model_or_none(),
            joint=self._joint_table(),
        )

    def _check_design(self) -> None:
        d = self.design
        for t in d.targets:
            if self.vars[t].role is not Role.RELEASE:
                raise SpecError(
                    f"the design {d.name} chooses P({t} | ...), but {t} is {self.vars[t].role.value}",
                    d.span,
                    f"declare the published variable with role release: var {t} : release over ...",
                )

    # ------------------------------------------------------------------ the model
    def known_joint(self, span: Span | None) -> tuple[tuple[str, ...], np.ndarray]:
        """The joint distribution of the known (non-release) variables, chained from the known
        tables: one joint table, then conditionals whose condition it already covers."""
        if self._known_joint is not None:
            return self._known_joint
        release = {v.name for v in self.vars.values() if v.role is Role.RELEASE}
        tables = [t for t in self.b.known.values() if not (set(t.axes) & release)]
        joints = [t for t in tables if not t.given]
        if not joints:
            need = ", ".join(self.design.given)
            raise SpecError(
                f"this needs the distribution of {need}, but no known table gives a joint distribution",
                span,
                f"add e.g. known P({need}) = {{ ... }}, or known P(S) and known P(X | S)",
            )
        first = max(joints, key=lambda t: len(t.axes))
        axes, data = list(first.axes), first.data
        used = {first.name}
        progress = True
        while progress:
            progress = False
            for t in tables:
                if t.name in used or not t.given or not set(t.given) <= set(axes) or set(t.targets) & set(axes):
                    continue
                new = [a for a in t.axes if a not in axes]
                out_axes = axes + new
                lhs = data.reshape(data.shape + (1,) * len(new))
                rhs = np.transpose(t.data, [t.axes.index(a) for a in out_axes if a in t.axes])
                rhs = rhs.reshape([self.vars[a].size if a in t.axes else 1 for a in out_axes])
                axes, data = out_axes, lhs * rhs
                used.add(t.name)
                progress = True
        missing = [a for a in self.design.given if a not in axes]
        if missing:
            raise SpecError(
                f"the model does not know the distribution of {', '.join(missing)} (it knows {', '.join(axes)})",
                span,
                f"add a known table for {missing[0]}, e.g. known P({missing[0]} | {axes[0]}) = {{ ... }}",
            )
        self._known_joint = (tuple(axes), data)
        return self._known_joint

    def model(self, span: Span | None) -> LinTable:
        """The joint P(k, t) = P(k) M(t | c): linear in the design, over known axes + targets."""
        if self._model is None:
            axes, data = self.known_joint(span)
            M = self._design_table()
            full_axes = axes + self.design.targets
            shape = tuple(self.vars[a].size for a in full_axes)
            self._model = M.align(full_axes, shape).scale(LinTable.const(axes, data.shape, data, self.n))
        return self._model

    def _model_or_none(self) -> LinTable | None:
        try:
            return self.model(None)
        except SpecError:
            return None

    def _joint_table(self) -> Table | None:
        if self._known_joint is None:
            return None
        axes, data = self._known_joint
        return Table("joint", axes, (), axes, data)

    def _design_table(self) -> LinTable:
        return self.b.registry.variable(self.design.name)

    def induced(self, targets: tuple[str, ...], given: tuple[str, ...], span: Span) -> LinTable:
        """``P(targets | given)`` of the model, over ``given + targets``."""
        d = self.design
        if set(given) & set(d.targets):
            t = next(iter(set(given) & set(d.targets)))
            raise UnsupportedError(
                f"P(... | {t}) divides by P({t}), which depends on the design: not linear",
                span,
                f"bound it alone (subject to P(... | {t}) <= c, which privopt multiplies out), "
                f"or write the joint P({', '.join(targets + given)})",
            )
        if not (set(targets) | set(given)) & set(d.targets):
            return self._known_conditional(targets, given, span)
        if set(given) == set(d.given) and set(targets) == set(d.targets):
            M = self._design_table()
            axes = given + targets
            return M.align(axes, tuple(self.vars[a].size for a in axes))
        joint = self.model(span)
        keep = given + targets
        missing = [a for a in keep if a not in joint.axes]
        if missing:
            known = [a for a in joint.axes if a not in d.targets]
            raise SpecError(
                f"the model has no distribution for {missing[0]}",
                span,
                f"add a known table for {missing[0]}, e.g. known P({missing[0]} | {known[0]}) = {{ ... }}, "
                f"or use the variables the model knows: {', '.join(known)}",
            )
        marg = joint.sum_over([a for a in joint.axes if a not in keep])
        marg = marg.align(keep, tuple(self.vars[a].size for a in keep))
        if not given:
            return marg
        pg = marginal(*self.known_joint(span), given)
        inv = np.divide(1.0, pg, out=np.zeros_like(pg), where=pg > 0)
        out = marg.scale(LinTable.const(given, pg.shape, inv, self.n))
        defined = np.broadcast_to((pg > 0).reshape(pg.shape + (1,) * len(targets)), out.shape)
        return out.with_defined(defined.ravel())

    def _known_conditional(self, targets, given, span) -> LinTable:
        """``P(targets | given)`` of the known variables alone: a constant table."""
        kaxes, kdata = self.known_joint(span)
        keep = given + targets
        missing = [a for a in keep if a not in kaxes]
        if missing:
            raise SpecError(f"the model has no distribution for {missing[0]}", span)
        marg = marginal(kaxes, kdata, keep)
        if given:
            pg = marg.sum(axis=tuple(range(len(given), len(keep))), keepdims=True)
            marg = np.divide(marg, pg, out=np.zeros_like(marg), where=pg > 0)
        return LinTable.const(keep, marg.shape, marg, self.n)

    # ------------------------------------------------------------------ expressions
    def value(self, e: ast.Expr):
        return self.ev.value(e)

    def _plain(self, e: ast.Expr) -> LinTable:
        return self.ev.plain(e)

    def name(self, e: ast.Name) -> LinTable:
        b, n = self.b, self.n
        if e.name in b.params:
            return LinTable.scalar(b.params[e.name], n)
        if e.name == self.design.name:
            return self._design_table()
        if e.name in self.as_variable:
            v = self.vars[self.as_variable[e.name]]
            return LinTable.const((v.name,), (v.size,), v.values, n)
        if e.name in b.known:
            return self._const_table(b.known[e.name])
        if e.name in b.consts:
            return self._const_table(b.consts[e.name])
        base = self.primed.get(e.name, e.name)
        if base in self.vars:
            v = self.vars[base]
            if v.values is None:
                raise UnsupportedError(
                    f"the labels of {base} are not numbers, so '{e.name}' has no numeric value",
                    e.span,
                    f"give {base} numeric labels, or use a const table: const d({base}, ...) = {{ ... }}",
                )
            return LinTable.const((e.name,), (v.size,), v.values, n)
        if e.name.endswith("'"):
            hint = (
                f"the neighbour here is {next(iter(self.primed))}"
                if self.primed
                else "a primed name is the neighbour inside dp(..., adjacent: RELATION)"
            )
            raise SpecError(f"{e.name} is not the neighbour of the protected variable", e.span, hint)
        options = list(b.params) + list(b.known) + list(b.consts) + list(self.vars) + [self.design.name]
        raise SpecError(f"'{e.name}' is not defined", e.span, undefined_hint(e.name, options, self.b.in_use))

    def _const_table(self, t: Table) -> LinTable:
        return LinTable.const(t.axes, t.data.shape, t.data, self.n)

    def prob(self, p: ast.Prob) -> LinTable:
        for t in p.targets:
            if t.label is not None:
                raise UnsupportedError(
                    "P(v = label | ...) is a shorthand for known tables only",
                    t.label.span,
                    "write the whole distribution",
                )
        targets = tuple(self.b.vars_of([t.var for t in p.targets]))
        given = tuple(self.b.vars_of(p.given))
        tn, gn = tuple(v.name for v in targets), tuple(v.name for v in given)
        known = self.b.known_table(tn, gn)
        if known is not None:
            return self._const_table(known)
        if set(tn) & set(gn):
            raise SpecError(f"'{next(iter(set(tn) & set(gn)))}' is both a target and a condition", p.span)
        return self.induced(tn, gn, p.span)

    def _pair(self, a: LinTable, b: LinTable) -> tuple[LinTable, LinTable]:
        """Align ``over`` aliases: where a table of the design meets a known one, an axis X on
        one side stands for its sanitized copy Y on the other (``P(Y | S) == P(X | S)``).
        Between two constant tables nothing is renamed, so ``|X - Y|`` keeps both axes."""
        if a.is_const == b.is_const:
            return a, b
        for ax in a.axes:
            if ax in b.axes:
                continue
            for bx in b.axes:
                if bx in a.axes:
                    continue
                if self._aliases(ax, bx):
                    renamed = tuple(ax if x == bx else x for x in b.axes)
                    b = LinTable(renamed, b.shape, b.A, b.b, b.n, b.defined)
                    break
        return a, b

    def _aliases(self, a: str, b: str) -> bool:
        va, vb = self.vars.get(a), self.vars.get(b)
        if va is None or vb is None:
            return False
        base_a, base_b = va.over or a, vb.over or b
        return base_a == base_b and va.labels == vb.labels

    def combine(self, node: ast.BinOp, a: LinTable, b: LinTable) -> LinTable:
        """The one arithmetic on two tables, after aligning ``over`` aliases (``_pair``)."""
        return super().combine(node, *self._pair(a, b))

    def _combine(self, node: ast.BinOp, a: LinTable, b: LinTable) -> LinTable:
        return self.ev.binop(node, a, b)

    def expect_distribution(self, e: ast.Expect) -> LinTable | None:
        """``E[g(B)]`` of a known one-variable distribution B (``_expect_distribution``), or
        None when the body names none."""
        dists = [
            t for t in sorted(ast.names_in(e.body)) if t in self.b.known and self._distribution_var(self.b.known[t])
        ]
        return self._expect_distribution(e, dists) if dists else None

    def _distribution_var(self, t: Table) -> str | None:
        """The variable of a known one-variable distribution (``known B = P(y) = uniform``)."""
        if t.given or len(t.axes) != 1 or self.vars[t.axes[0]].values is None:
            return None
        return t.axes[0]

    def _expect_distribution(self, e: ast.Expect, names: list[str]) -> LinTable:
        """``E[g(B)]`` for a known distribution B: B stands for a random variable with that
        distribution, so E[B] = sum_v B(v) v and E[1 / B] = sum_v B(v) / v (Ramon & Basu)."""
        if len(set(names)) > 1 or e.given:
            raise UnsupportedError("E[...] takes one distribution, e.g. E[B] or E[1 / B]", e.span)
        t = self.b.known[names[0]]
        v = self._distribution_var(t)
        self.as_variable = {t.name: v}
        try:
            body = self._plain(e.body)
        finally:
            self.as_variable = {}
        if not body.is_const or set(body.axes) - {v}:
            raise SpecError(f"inside E[{t.name} ...] only {t.name}, numbers and params may appear", e.body.span)
        weights = LinTable.const(t.axes, t.data.shape, t.data, self.n)
        return (
            body.scale(weights).sum_over((v,))
            if body.axes
            else body.scale(LinTable.scalar(float(t.data.sum()), self.n))
        )

    def var_arg(self, a: ast.Expr):
        if isinstance(a, ast.Name) and a.name not in self.vars:
            if a.name in self.b.names:
                raise SpecError(f"'{a.name}' is not a variable here", a.span, f"variables: {', '.join(self.vars)}")
            raise SpecError(
                f"unknown variable '{a.name}'",
                a.span,
                suggest(a.name, self.vars, self.b.in_use) or f"variables: {', '.join(self.vars)}",
            )
        if not isinstance(a, ast.Name):
            raise SpecError("expected a variable name", a.span)
        return self.vars[a.name]

    def refuse(self, name: str, node):
        if name in BUDGETS:
            raise UnsupportedError(
                f"{name}(...) is a privacy budget: bound it in a constraint",
                node.span,
                f"write: subject to {name}(...) <= eps",
            )
        if name in NONLINEAR:
            raise UnsupportedError(NONLINEAR[name], node.span, functions.where_applies(name))
        return super().refuse(name, node)

    def call(self, e: ast.Call) -> LinTable | None:
        """``d(X, Y)``: the const table ``d`` with its axes bound to these variables, in order."""
        f = e.func.name
        if f not in self.b.consts or e.arrow_args is not None:
            return None
        t = self.b.consts[f]
        vs = [self.var_arg(a) for a in e.args]
        if len(vs) != len(t.axes) or any(v.size != self.vars[a].size for v, a in zip(vs, t.axes)):
            raise SpecError(
                f"{f} is a table over ({', '.join(t.axes)}); give as many variables of the same sizes", e.span
            )
        return LinTable.const(tuple(v.name for v in vs), t.data.shape, t.data, self.n)

    # ------------------------------------------------------------------ constraints
    def _constraint(self, c: ast.ConstraintDecl):
        self.b.domains.constraint(c, self.b.is_probability)
        self.b.in_use = frozenset(ast.names_in(c.exprs))
        text = c.exprs[0].span.to(c.exprs[-1].span).text()
        if any(isinstance(x, ast.Call) and x.func.name in BUDGETS for x in c.exprs):
            return [], [self._budget(c, text)]
        ratio = self._posterior_constraint(c, text)
        if ratio is not None:
            return ratio, []
        vals = [self.value(x) for x in c.exprs]
        out = []
        for (le, re), lv, rv, op in zip(zip(c.exprs, c.exprs[1:]), vals, vals[1:], c.ops):
            if op == ">=":
                le, re, lv, rv, op = re, le, rv, lv, "<="
            if isinstance(rv, AbsOf) or (op == "==" and isinstance(lv, AbsOf)):
                a = rv if isinstance(rv, AbsOf) else lv
                raise UnsupportedError(
                    "|...| may only stand on the smaller side of a bound (|e| <= c)",
                    a.span,
                    "a lower bound on |e| makes the feasible set nonconvex",
                )
            if isinstance(lv, AbsOf):
                inner, rv = self._pair(lv.inner, rv)
                for diff in (inner - rv, -inner - rv):
                    out.append(self._linear(diff, "<=", c, text))
                continue
            lv, rv = self._pair(lv, rv)
            diff = lv - rv
            if diff.is_const:
                raise SpecError("this constraint does not involve the design", c.span, "state facts as known tables")
            out.append(self._linear(diff, op, c, text))
        return out, []

    # ------------------------------------------------------------------ recognizing eq. 3
    def _recognize_induced(self, constraints: list[LinearConstraint]) -> list[LinearConstraint]:
        """Mark the constraints that fix an induced distribution, read from their math.

        A constraint ``expr (== | <=) 0`` whose table is, cell by cell, ``c * P(T | G) + b`` with
        every ``c != 0`` (``T`` the design's targets, ``G`` the table's other axes) says
        ``P(T | G) == -b / c`` (or bounds it, by the sign of ``c``): so ``P(Y | S) == Q``,
        ``Q == P(Y | S)``, ``P(Y | S) - Q == 0``, ``2 * P(Y | S) == 2 * Q`` and
        ``P(Y, S) == Q * P(S)`` all read as one equation. Equalities are marked alone; bounds
        are marked when, together with the equalities of the same ``P(T | G)``, they bound
        every defined cell from both sides at one value (``Q <= P(Y | S) <= Q``)."""
        found = [self._as_induced(c.expr, c.sense) for c in constraints]
        groups: dict[tuple, list[int]] = {}
        for i, f in enumerate(found):
            if f is not None:
                groups.setdefault(f[0], []).append(i)
        marked: dict[int, InducedEquality] = {}
        for key, idx in groups.items():
            shape = tuple(self.vars[a].size for a in key[1] + key[0])
            for i in idx:
                if constraints[i].sense == "==":
                    marked[i] = InducedEquality(key[0], key[1], found[i][2].reshape(shape))
            halves = [i for i in idx if constraints[i].sense != "=="]
            if not halves:
                continue
            live = found[idx[0]][3]
            q0 = found[idx[0]][2]
            if not all(np.allclose(found[i][2][live], q0[live], rtol=1e-12, atol=1e-12) for i in idx):
                continue
            upper = np.zeros(live.shape, dtype=bool)
            lower = np.zeros(live.shape, dtype=bool)
            for i in idx:
                c = found[i][1]
                eq = constraints[i].sense == "=="
                upper |= eq | (c > 0)
                lower |= eq | (c < 0)
            if np.all((upper & lower)[live]):
                for i in halves:
                    marked[i] = InducedEquality(key[0], key[1], found[i][2].reshape(shape))
        return [
            LinearConstraint(c.expr, c.sense, c.span, c.text, marked[i]) if i in marked else c
            for i, c in enumerate(constraints)
        ]

    def _as_induced(self, expr: LinTable, sense: str):
        """``((targets, given), c, q, live)`` when ``expr`` is ``c * (P(targets | given) - q)``
        cell by cell, else None. An axis X of ``expr`` that stands for a target Y declared
        ``over X`` (``Q == P(Y | S)`` is renamed onto Q's axes) is read as Y."""
        if expr.is_const:
            return None
        targets = self.design.targets
        axes = list(expr.axes)
        for t in targets:
            if t in axes:
                continue
            alias = [a for a in axes if a not in targets and self._aliases(a, t)]
            if len(alias) != 1:
                return None
            axes[axes.index(alias[0])] = t
        given = tuple(a for a in axes if a not in targets)
        if len(set(axes)) != len(axes) or not all(a in self.vars for a in axes):
            return None
        key = (targets, given)
        cache = self._induced_cache
        if key not in cache:
            try:
                cache[key] = self.induced(targets, given, None)
            except (SpecError, UnsupportedError):
                cache[key] = None
        ref = cache[key]
        if ref is None:
            return None
        expr = LinTable(tuple(axes), expr.shape, expr.A, expr.b, expr.n, expr.defined).align(ref.axes, ref.shape)
        found = induced_multiple(expr, ref, sense)
        if found is None:
            return None
        c, q, live = found
        return key, c, q, live

    def _posterior_constraint(self, c: ast.ConstraintDecl, text: str):
        """``P(S | Y) OP bound`` with a constant bound: the posterior is P(S, Y) / P(Y), a ratio of
        forms linear in the design; with P(Y) >= 0 the constraint is the linear
        ``P(S, Y) - bound * P(Y) OP 0`` (trivially 0 OP 0 where P(y) = 0)."""
        design = set(self.design.targets)
        sides = [isinstance(x, ast.Prob) and bool({g.name for g in x.given} & design) for x in c.exprs]
        if not any(sides):
            return None
        if sides == [False, True]:  # a bound reads the same from either side: c >= P(S | Y)
            mirrored = ({"<=": ">=", ">=": "<="}.get(c.ops[0], c.ops[0]),)
            return self._posterior_constraint(ast.ConstraintDecl(c.exprs[::-1], mirrored, c.span), text)
        if len(c.exprs) != 2 or sides[1]:
            k = sides.index(True)
            raise UnsupportedError(
                "a posterior given a released variable must stand alone on one side of a constant bound",
                c.exprs[k].span,
                "write one bound per line: subject to P(S | Y) <= bound",
            )
        p, op = c.exprs[0], c.ops[0]
        bound = self._plain(c.exprs[1])
        if not bound.is_const:
            raise UnsupportedError("the bound on a posterior must not depend on the design", c.exprs[1].span)
        targets = tuple(v.name for v in self.b.vars_of([t.var for t in p.targets]))
        given = tuple(v.name for v in self.b.vars_of(p.given))
        joint = self.induced(given + targets, (), p.span)
        den = self.induced(given, (), p.span)
        joint, bound = self._pair(joint, bound)
        diff = joint - den.scale(bound) if op != ">=" else den.scale(bound) - joint
        return [self._linear(diff, "==" if op == "==" else "<=", c, text)]

    def _linear(self, diff: LinTable, op: str, c, text, induced=None) -> LinearConstraint:
        return LinearConstraint(diff, op, c.span, text, induced)

    def _budget(self, c: ast.ConstraintDecl, text: str) -> Budget:
        if len(c.exprs) != 2 or not isinstance(c.exprs[0], ast.Call) or c.ops[0] != "<=":
            if len(c.exprs) == 2 and c.ops[0] == ">=" and isinstance(c.exprs[1], ast.Call):
                return self._budget(ast.ConstraintDecl((c.exprs[1], c.exprs[0]), ("<=",), c.span), text)
            raise UnsupportedError("a privacy budget is an upper bound: subject to ldp(S -> Y) <= eps", c.span)
        call, bound = c.exprs
        kind = call.func.name
        usage = f"write {kind}(SOURCE -> RELEASED)" + (", adjacent: |x - x'| <= 1)" if kind == "dp" else "")
        if call.arrow_args is None or not call.args:
            raise SpecError(f"{kind} needs '->' between the protected and the released variable", call.span, usage)
        source = [self.var_arg(a) for a in call.args]
        plain = [a for a in call.arrow_args if not isinstance(a, ast.KwArg)]
        kwargs = [a for a in call.arrow_args if isinstance(a, ast.KwArg)]
        if len(plain) != 1:
            raise SpecError(f"{kind} takes one released variable after '->'", call.span, usage)
        target = self.var_arg(plain[0])
        if target.name not in self.design.targets:
            chosen = [v.name for v in source if v.name in self.design.targets]
            hint = (
                f"the arrow points from the protected variable to the released one: "
                f"write {kind}({target.name} -> {chosen[0]})"
                if chosen and len(source) == 1
                else f"after '->' name the released variable: {', '.join(self.design.targets)}"
            )
            raise SpecError(f"{target.name} is not chosen by the design {self.design.name}", plain[0].span, hint)
        eps, delta = self._budget_bound(bound, kind, c.span)
        src = tuple(v.name for v in source)
        cond = self.induced((target.name,), src, call.span)
        pairs = weights = None
        for kw in kwargs:
            if kw.name.name != "adjacent" or kind != "dp":
                raise SpecError(f"'{kw.name.name}:' is not an option of {kind}", kw.span, "dp takes adjacent: RELATION")
            if len(source) != 1:
                raise UnsupportedError("an adjacency relation needs one protected variable", kw.span)
            pairs = self._adjacency(kw, source[0])
        if kind == "loglift":
            kaxes, kdata = self.known_joint(call.span)
            if not set(src) <= set(kaxes):
                raise SpecError("loglift needs the prior of the protected variable", call.span)
            weights = marginal(kaxes, kdata, src).ravel()
        return Budget(kind, src, target.name, eps, delta, cond, pairs, weights, c.span, text)

    def _budget_bound(self, bound: ast.Expr, kind: str, use: Span) -> tuple[float, float]:
        """``eps`` or ``(eps, delta)``: a privacy budget eps >= 0 and a DP delta in [0, 1) (delta = 1
        bounds nothing), each checked at the param that sets it (builder/params.py)."""
        domains = self.b.domains
        if len(budget_terms(bound, kind)) == 2:
            eps_e, delta_e = bound.items
            domains.require(
                delta_e,
                0,
                1,
                "dp's delta",
                "delta is the probability the e^eps bound may fail; 1 bounds nothing",
                use,
                hi_open=True,
            )
            eps, delta = (self.b.scalar(x) for x in bound.items)
        else:
            eps_e, eps, delta = bound, self.b.scalar(bound), 0.0
        domains.require(
            eps_e, 0, math.inf, f"{kind}'s budget", "a privacy budget eps bounds a log-ratio of probabilities", use
        )
        if not (math.isfinite(eps) and eps >= 0):
            raise SpecError(f"the budget must be a number >= 0 (it is {eps:g})", bound.span)
        if not (0 <= delta < 1):
            raise SpecError(f"delta must lie in [0, 1) (it is {delta:g})", bound.span)
        return eps, delta

    def _adjacency(self, kw: ast.KwArg, v) -> np.ndarray:
        """The ordered pairs (a, a') of ``v``'s labels that satisfy ``kw`` (e.g. |x - x'| <= 1)."""
        if kw.op is None:
            raise SpecError("adjacent: needs a relation, e.g. adjacent: |x - x'| <= 1", kw.span)
        prime = v.name + "'"
        self.primed = {prime: v.name}
        try:
            lhs, rhs = self._plain(kw.value), self._plain(kw.bound)
        finally:
            self.primed = {}
        if not (lhs.is_const and rhs.is_const):
            raise SpecError("an adjacency relation may not involve the design", kw.span)
        lhs, rhs = lhs._union(rhs)
        if set(lhs.axes) != {v.name, prime}:
            raise SpecError(f"the relation must use both {v.name} and {prime}", kw.value.span)
        diff = lhs.array() - rhs.array()
        ok = {"<=": diff <= 1e-12, ">=": diff >= -1e-12, "==": np.abs(diff) <= 1e-12}[kw.op]
        if lhs.axes[0] != v.name:
            ok = ok.T
        np.fill_diagonal(ok, False)
        pairs = np.argwhere(ok)
        if pairs.size == 0:
            raise SpecError("no two values are adjacent under this relation", kw.span)
        return pairs

    # ------------------------------------------------------------------ objective
    def _objective(self, o: ast.ObjectiveDecl) -> MechanismObjective:
        e = o.expr
        self.b.in_use = frozenset(ast.names_in(e))
        if isinstance(e, ast.Call) and e.func.name in BUDGETS:
            raise UnsupportedError(
                f"{o.sense} {e.func.name}(...) is not a linear program",
                e.span,
                f"bound it instead (subject to {e.func.name}(...) <= eps) and optimize utility; sweep eps with --set",
            )
        v = self._term(e)
        if v.free if isinstance(v, _Quad) else v.axes:
            axes = v.free if isinstance(v, _Quad) else v.axes
            raise SpecError(
                f"the objective is a table over ({', '.join(axes)}), not a number",
                e.span,
                "take an expectation E[...] or a sum(...) over its variables",
            )
        text = e.span.text()
        if isinstance(v, _Quad):
            if o.sense != "minimize":
                raise UnsupportedError(
                    "maximizing a sum of squares is not a convex program", e.span, "minimize it, or drop the squares"
                )
            return self._quadratic_objective(o, v, text)
        if v.is_const:
            raise SpecError("the objective does not depend on the design", e.span)
        kind, pair, dist = "linear", None, None
        if isinstance(e, ast.Call) and e.func.name == "tv":
            kind, pair = "tv", tuple(a.name for a in e.args)
        elif isinstance(e, ast.Expect) and not e.given:
            body = self._plain(e.body)
            if len(body.axes) == 2:
                a, b = (self.vars.get(x) for x in body.axes)
                if a is not None and b is not None and {a.role, b.role} in _INPUT_RELEASE:
                    x, y = (a, b) if a.role is not Role.RELEASE else (b, a)
                    if x.labels == y.labels:
                        kind, pair = "expected_distortion", (x.name, y.name)
                        dist = body.align((x.name, y.name), (x.size, y.size)).array()
        if kind == "linear":
            found = self._distortion_of(v)
            if found is not None:
                pair, dist = found
                k = dist.shape[0]
                hamming = 1.0 - np.eye(k)
                kind = "tv" if np.allclose(dist, hamming, rtol=0, atol=1e-12) else "expected_distortion"
                dist = None if kind == "tv" else dist
        return MechanismObjective(o.sense, v, kind, text, pair, dist, o.span)

    def _distortion_of(self, v: LinTable):
        """``((x, y), D)`` when the linear objective ``v`` equals ``E[D(x, y)]`` on every design
        (rows of the channel summing to 1), read from its math: ``tv(X, Y) + 0``,
        ``0.5 * E[d(X, Y)] + 0.5 * E[d(X, Y)]``, ``sum(x, y: d(x, y) * P(X = x, Y = y))``...

        ``y`` is the design's one target (released), ``x`` a data variable with the same labels
        among its conditions, so every design cell feeds exactly one cell of the joint
        ``P(x, y)``: its coefficient there is ``w_j``, and ``D(x, y) = a_j / w_j`` must be the
        same for every cell j feeding (x, y). The constant part is added to D (``sum P(x, y)``
        is 1). None if ``v`` is not such an expectation, or if some (x, y) is fed by no cell."""
        d = self.design
        if len(d.targets) != 1 or v.axes:
            return None
        y = self.vars[d.targets[0]]
        if y.role is not Role.RELEASE:
            return None
        cands = [self.vars[a] for a in d.given if self.vars[a].role in _INPUTS and self.vars[a].labels == y.labels]
        cands.sort(key=lambda x: x.name != y.over)
        a = np.asarray(v.matrix().toarray()).ravel() if cands else None
        for x in cands:
            try:
                J = self.induced((x.name, y.name), (), None)
            except (SpecError, UnsupportedError):
                continue
            if J.A is None or np.any(J.b):
                continue
            Jc = sp.csc_array(J.matrix())
            Jc.sum_duplicates()
            Jc.eliminate_zeros()
            counts = np.diff(Jc.indptr)
            if np.any(counts > 1):
                continue
            one = counts == 1
            scale = max(float(np.abs(a).max(initial=0.0)), 1e-300)
            if np.any(np.abs(a[~one]) > 1e-12 * scale):
                continue
            rows = Jc.indices[Jc.indptr[:-1][one]]
            vals = a[one] / Jc.data[Jc.indptr[:-1][one]]
            K = J.cells
            cnt = np.bincount(rows, minlength=K)
            if np.any(cnt == 0):
                continue
            mean = np.bincount(rows, weights=vals, minlength=K) / cnt
            if np.abs(vals - mean[rows]).max(initial=0.0) > 1e-9 * max(1.0, float(np.abs(mean).max())):
                continue
            D = mean.reshape(J.shape) + float(v.b[0])
            return (x.name, y.name), D
        return None
