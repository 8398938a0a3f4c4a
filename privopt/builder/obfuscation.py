"""Rank-preserving obfuscation (Shariatnasab, Shirani & Iyengar 2023): spec -> ObfuscationModel.

Reads what the shared ``Builder`` has already resolved (variables, params, known tables, the
design) and the three constructs of this family:

* ``minimize krcc(X, Y)``: Q(P_X, W) of Theorem 1, X the design's condition, Y its target;
* ``subject to mutual_info(Y; F) <= eps``: the leakage in bits under Y - X - F (F a variable
  with a known ``P(F | X)``, or X itself);
* ``subject to P(Y = 1 | X = 0) == P(Y = 0 | X = 1)``: W restricted to symmetric channels.

Every other use of them is a located error that says why: a lower bound on the leakage (I is
convex in W, so {I >= eps} is not a convex set and the optimum need not be where the method
looks), leakage as the objective, krcc on a variable with more than two values.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SpecError, UnsupportedError
from ..language import ast
from ..model.obfuscation import LeakageBound, ObfuscationModel, RankObjective
from ..model.problem import Problem, Role
from . import functions
from .values import suggest

FUNCS = ("krcc", "mutual_info")


def is_obfuscation(objective: ast.ObjectiveDecl, constraints: list[ast.ConstraintDecl]) -> bool:
    """The spec asks for this family: its objective or a constraint calls krcc, or the leakage
    ``mutual_info(Y; F)`` (``mutual_info(S, Y)`` with a comma is the mechanism family's, which
    explains that it is not linear in the design)."""
    calls = [objective.expr] + [e for c in constraints for e in c.exprs]
    return any(
        isinstance(e, ast.Call)
        and (e.func.name == "krcc" or (e.func.name == "mutual_info" and e.semi_args is not None))
        for e in calls
    )


def refuse_family_syntax(statements) -> None:
    """What only this family reads, refused with a located error in a spec of another family:
    a condition with a value (``P(Y | X = 0)``: one cell, read only in the symmetric restriction)
    and a call with a ';' (``mutual_info(Y; F)``)."""
    for p in ast.nodes_in(*statements, kind=ast.Prob):
        lab = p.labelled_condition()
        if lab is not None:
            raise UnsupportedError(
                "a condition with a value (P(... | X = x)) is supported only in the symmetric restriction of a "
                "rank-preserving obfuscation",
                lab.span,
                "write the whole conditional table, P(Y | X)",
            )
    for c in ast.nodes_in(*statements, kind=ast.Call):
        if c.semi_args is not None:
            raise UnsupportedError(
                f"{c.func.name}(...; ...) is not supported here",
                c.span,
                "';' separates the two sides of mutual_info(Y; F), a rank-preserving obfuscation's leakage bound",
            )


class ObfuscationBuilder:
    def __init__(self, b):
        self.b = b
        self.design = b.design

    def build(self, decls: list[ast.ConstraintDecl], objective: ast.ObjectiveDecl, title: str | None) -> Problem:
        x_name, y_name = self._design_pair()
        rank = self._objective(objective, x_name, y_name)
        leakage, symmetric_span = None, None
        for c in decls:
            kind = self._constraint_kind(c)
            if kind == "leakage":
                if leakage is not None:
                    raise UnsupportedError(
                        "a spec has one leakage bound here",
                        c.span,
                        f"keep the tighter one: mutual_info({y_name}; ...) <= eps",
                    )
                leakage = self._leakage(c, x_name, y_name)
            else:
                self._symmetric(c, x_name, y_name)
                symmetric_span = c.span
        px1 = self._px1(x_name, objective.span)
        F = self._fingerprint(leakage, x_name)
        model = ObfuscationModel(
            data=x_name,
            release=y_name,
            design=self.design.name,
            px1=px1,
            F_given_X=F,
            leakage=leakage,
            symmetric=symmetric_span is not None,
            objective=rank,
            labels=tuple(self.b.variables[x_name].labels),
            symmetric_span=symmetric_span,
        )
        return Problem(
            title=title,
            variables=self.b.variables,
            params=self.b.params,
            known=self.b.known,
            design=self.design,
            constraints=(),
            objective=rank,
            kind="obfuscation",
            source_name=self.b.source.name,
            data_sha256=dict(self.b.files.digests),
            obfuscation=model,
        )

    # ------------------------------------------------------------------ the design
    def _design_pair(self) -> tuple[str, str]:
        d = self.design
        if len(d.targets) != 1 or len(d.given) != 1:
            raise UnsupportedError(
                f"krcc and mutual_info design one channel P(Y | X); {d.name} is "
                f"P({', '.join(d.targets)} | {', '.join(d.given)})",
                d.span,
                "write design W = P(Y | X) with one release Y and one data variable X",
            )
        x, y = d.given[0], d.targets[0]
        vx, vy = self.b.variables[x], self.b.variables[y]
        for v in (vx, vy):
            if v.size != 2:
                raise UnsupportedError(
                    f"rank-preserving obfuscation is for binary data: {v.name} has {v.size} values",
                    v.span or d.span,
                    "Theorem 1's Q(P_X, W) is stated for X, Y in {0, 1}; declare {0, 1}",
                )
        if tuple(vy.labels) != tuple(vx.labels):
            raise UnsupportedError(
                f"{y} must take {x}'s values ({', '.join(vx.labels)}), in the same order",
                vy.span or d.span,
                f"declare var {y} : release over {x}",
            )
        return x, y

    # ------------------------------------------------------------------ the objective
    def _objective(self, o: ast.ObjectiveDecl, x: str, y: str) -> RankObjective:
        e = o.expr
        if isinstance(e, ast.Call) and e.func.name == "mutual_info":
            raise UnsupportedError(
                f"{o.sense} mutual_info(...) as the objective is not supported",
                e.span,
                "bound the leakage and minimize the rank distance: subject to mutual_info(Y; F) <= eps, minimize krcc(X, Y)",
            )
        if not (isinstance(e, ast.Call) and e.func.name == "krcc"):
            raise UnsupportedError(
                "with krcc or mutual_info in the spec, the objective is the rank distance",
                e.span,
                f"write minimize krcc({x}, {y})",
            )
        self._check_call(e, "krcc", ",")
        names = self._names(e.args, e, 2)
        if set(names) != {x, y}:
            raise SpecError(
                f"krcc compares the data and its release: krcc({x}, {y})",
                e.span,
                f"the design {self.design.name} is P({y} | {x}): write krcc({x}, {y})",
            )
        if o.sense != "minimize":
            raise UnsupportedError(
                "maximize krcc(...) asks for the worst ranking",
                o.span,
                f"the rank distance is a cost: minimize krcc({x}, {y})",
            )
        return RankObjective(x, y, o.span, e.span.text())

    # ------------------------------------------------------------------ constraints
    def _constraint_kind(self, c: ast.ConstraintDecl) -> str:
        for e in c.exprs:
            if isinstance(e, ast.Call | ast.Expect) and not functions.applies(e.func.name, functions.OBFUSCATION):
                raise functions.unknown(e.func.name, functions.OBFUSCATION, e.func.span)
        if any(isinstance(e, ast.Call) and e.func.name == "mutual_info" for e in c.exprs):
            return "leakage"
        if len(c.exprs) == 2 and all(isinstance(e, ast.Prob) for e in c.exprs):
            return "symmetric"
        raise UnsupportedError(
            "this constraint is not supported for a rank-preserving obfuscation",
            c.span,
            "write subject to mutual_info(Y; F) <= eps, or subject to P(Y = 1 | X = 0) == P(Y = 0 | X = 1)",
        )

    def _leakage(self, c: ast.ConstraintDecl, x: str, y: str) -> LeakageBound:
        if len(c.exprs) != 2:
            raise UnsupportedError("write the leakage bound as mutual_info(Y; F) <= eps", c.span)
        left, right = c.exprs
        op = c.ops[0]
        if isinstance(right, ast.Call) and right.func.name == "mutual_info":
            left, right = right, left
            op = {"<=": ">=", ">=": "<=", "==": "=="}[op]
        if isinstance(right, ast.Call) and right.func.name == "mutual_info":
            raise UnsupportedError(
                "compare mutual_info with a number of bits", c.span, "write mutual_info(Y; F) <= eps"
            )
        call = left
        self._check_call(call, "mutual_info", ";")
        a, b = self._names(call.args, call, 1), self._names(call.semi_args, call, 1)
        pair = {a[0], b[0]}
        if y not in pair:
            raise UnsupportedError(
                f"mutual_info({a[0]}; {b[0]}) does not involve the release {y}: no channel changes it",
                call.span,
                f"bound what the release leaks: mutual_info({y}; F) <= eps",
            )
        other = (pair - {y}).pop() if len(pair) == 2 else y
        if other == y:
            raise SpecError(f"mutual_info({y}; {y}) is the entropy of {y}, not a leakage", call.span)
        if op == ">=":
            raise UnsupportedError(
                "a lower bound on the leakage is not a convex constraint",
                c.span,
                f"I({y}; {other}) is convex in the channel, so {{I >= eps}} is not a convex set; bound it from above: <= eps",
            )
        if op == "==":
            raise UnsupportedError(
                "the leakage is bounded, not fixed",
                c.span,
                "write <= eps: the optimum lies on I = eps whenever the bound binds (proof of Theorem 2), and "
                "I = eps has no solution when eps exceeds the largest leakage",
            )
        self.b.domains.require(right, 0, math.inf, "the leakage bound", "mutual information is >= 0 bits", c.span)
        eps = self._bits(right)
        if eps < 0:
            raise SpecError(f"the leakage bound is {eps:g} bits; it must be >= 0", right.span)
        v = self.b.variables[other]
        if other != x and v.role not in (Role.OBSERVED, Role.PUBLIC, Role.PRIVATE, Role.DATA):
            raise UnsupportedError(
                f"mutual_info({y}; {other}) needs {other} to be what the attacker observes",
                call.span,
                f"declare var {other} : observed over {x}, with known P({other} | {x})",
            )
        return LeakageBound(y, other, eps, c.span, c.exprs[0].span.to(c.exprs[-1].span).text())

    def _bits(self, e: ast.Expr) -> float:
        if isinstance(e, ast.Call | ast.Prob):
            raise UnsupportedError("the leakage bound must be a number of bits (a number or a param)", e.span)
        return self.b.scalar(e)

    def _symmetric(self, c: ast.ConstraintDecl, x: str, y: str) -> None:
        hint = f"the symmetric restriction is P({y} = 1 | {x} = 0) == P({y} = 0 | {x} = 1), with {x}'s labels"
        if c.ops[0] != "==":
            raise UnsupportedError(
                "only the symmetric restriction (an equality of two cells) is supported", c.span, hint
            )
        vx = self.b.variables[x]
        cells = []
        for p in c.exprs:
            if (
                not p.is_cell
                or len(p.targets) != 1
                or len(p.given) != 1
                or p.targets[0].var.name != y
                or p.given[0].name != x
            ):
                raise UnsupportedError(f"write one cell of the channel: P({y} = a | {x} = b)", p.span, hint)
            t, g = p.targets[0].label, p.given_labels[0]
            idx = []
            for lab in (t, g):
                i = vx.index_of(lab.text, lab.value)
                if i is None:
                    raise SpecError(
                        f"label '{lab.text}' is not a value of {x}",
                        lab.span,
                        suggest(lab.text, vx.labels) or f"{x} takes {{{', '.join(vx.labels)}}}",
                    )
                idx.append(i)
            cells.append(tuple(idx))
        if sorted(cells) != [(0, 1), (1, 0)]:
            a, b = vx.labels
            raise UnsupportedError(
                "only the symmetric restriction is supported",
                c.span,
                f"P({y} = {b} | {x} = {a}) == P({y} = {a} | {x} = {b}) (Corollary 2's binary symmetric channels)",
            )

    # ------------------------------------------------------------------ known tables
    def _px1(self, x: str, span) -> float:
        t = self.b.known_table((x,), ())
        if t is not None:
            return float(t.aligned((x,))[1])
        for other in self.b.known.values():  # a joint that holds X
            if not other.given and x in other.targets:
                data = other.aligned(tuple(other.axes))
                keep = other.axes.index(x)
                return float(data.sum(axis=tuple(k for k in range(data.ndim) if k != keep))[1])
        raise SpecError(f"the spec does not say how {x} is distributed", span, f"add: known P({x}) = {{ ... }}")

    def _fingerprint(self, leakage: LeakageBound | None, x: str) -> np.ndarray:
        if leakage is None or leakage.other == x:
            return np.eye(2)
        f = leakage.other
        vf = self.b.variables[f]
        if vf.size != 2:
            raise UnsupportedError(
                f"the fingerprint {f} must be binary here; it has {vf.size} values",
                leakage.span,
                "Theorem 1 is stated for binary F",
            )
        t = self.b.known_table((f,), (x,))
        if t is None:
            raise SpecError(
                f"the spec does not say how {f} depends on {x}",
                leakage.span,
                f"add: known P({f} | {x}) = bsc(0.1), or a 2 x 2 table",
            )
        return np.asarray(t.aligned((x, f)), dtype=float)

    # ------------------------------------------------------------------ helpers
    def _check_call(self, e: ast.Call, name: str, sep: str) -> None:
        if name == "mutual_info" and (e.semi_args is None or e.arrow_args is not None):
            raise SpecError("write mutual_info(Y; F): the two variables separated by ';'", e.span)
        if name == "krcc" and (e.semi_args is not None or e.arrow_args is not None):
            raise SpecError("write krcc(X, Y): the data and its release, separated by ','", e.span)

    def _names(self, args, call: ast.Call, count: int) -> list[str]:
        if args is None or len(args) != count or not all(isinstance(a, ast.Name) for a in args):
            raise SpecError(f"{call.func.name} takes variable names here", call.span)
        out = []
        for a in args:
            if a.name not in self.b.variables:
                raise SpecError(f"unknown variable '{a.name}'", a.span, suggest(a.name, self.b.variables))
            out.append(a.name)
        return out
