"""Syntax tree -> validated ``Problem`` (the IR).

This is where a spec's meaning is checked: names resolve, labels lie in their domains, tables
have the right shape and are probabilities, constraints are linear in the design, and the
objective's roles fit the design. Every error carries the span of what the user wrote.

The ``Builder`` reads the declarations every class shares (variables, params, known and const
tables, the design, whose cells it allocates in the variable registry) and hands the rest to
the class's builder through a small public interface (``declare``, ``read_params``,
``scalar``, ``vars_of``, ``value``, ``lift``, ``find_known``, ``known_table``). Expressions
are evaluated by the one evaluator (builder/evaluate.py) in a context: ``ParamContext``
(numbers and params) and ``ReportContext`` (a transparency report's tables) here.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import SpecError, UnsupportedError, UsageError
from ..language import ast
from ..language.datafiles import DataFiles, count_records, distinct_labels, read_long_table
from ..language.source import Span
from ..language.tables import parse_number, read_inline
from ..model.linear import LinTable
from ..model.problem import (
    CellConstraint,
    Design,
    MaxConfidence,
    NoRecords,
    Objective,
    Problem,
    Role,
    Table,
    Variable,
)
from ..model.registry import Registry
from . import functions
from .evaluate import Context, Evaluator
from .obfuscation import ObfuscationBuilder, is_obfuscation, refuse_family_syntax
from .params import ConstraintDomains, given_as
from .values import AbsOf, second_objective, suggest, undefined_hint

PROB_TOL = 1e-9
MEASURES = ("max_confidence", "min_uncertainty")


def parse_param(name: str, raw, params=None) -> float:
    """A param value from ``--set`` or the API: a finite real number, and as text the spec
    language's own number syntax only (no ``0_9``, ``nan``, ``inf``, hex or overflow). Errors
    name the value as ``params`` (all the overrides) were given (``given_as``)."""
    given = given_as(params, name, raw)
    if isinstance(raw, str):
        value = parse_number(raw.strip())
        if value is None:
            raise UsageError(f"{given}: the value must be a number written as in a spec, like 0.9, -2, 1e-3 or .5")
    elif isinstance(raw, (int, float, np.integer, np.floating)) and not isinstance(raw, (bool, np.bool_)):
        try:
            value = float(raw)
        except OverflowError:  # an int beyond the largest double
            value = math.inf
    else:
        raise UsageError(f"{given}: the value must be a number, not {type(raw).__name__}")
    if not math.isfinite(value):
        raise UsageError(f"{given}: the value must be a finite number (at most 1.8e308 in magnitude)")
    return value


def _expect_columns(files: DataFiles, statements) -> None:
    """Tell ``files`` which columns the spec may read from each data file, so that a CSV is read
    once and only those columns: a column named after any of the spec's variables (labels),
    the value column of a table (``column C``: numbers) and a domain's column (labels)."""
    variables = [s.name.name for s in statements if isinstance(s, ast.VarDecl)]
    for s in statements:
        if isinstance(s, ast.VarDecl) and isinstance(s.domain, ast.DomainFile):
            files.expect(s.domain.path, labels=[s.domain.column.name if s.domain.column else s.name.name])
        source = getattr(s, "source", None)
        if isinstance(source, ast.FileTable):
            files.expect(source.path, labels=variables, values=[source.column.name] if source.column else ())


class Builder:
    def __init__(self, spec: ast.SpecFile, params: dict[str, str | float] | None = None, allow_paths: bool = False):
        self.spec = spec
        self.source = spec.source
        self.overrides = dict(params or {})
        self.given_params = params  # as given: --set on the command line, params={...} in Python
        self.param_decls: dict[str, ast.ParamDecl] = {}
        self.domains = ConstraintDomains(self)
        self.files = DataFiles(spec.source.folder, allow_paths)
        self.variables: dict[str, Variable] = {}
        self.params: dict[str, float] = {}
        self.known: dict[str, Table] = {}
        self.consts: dict[str, Table] = {}  # const NAME(VARS) = ...: numbers, not distributions
        self.names: dict[str, Span] = {}  # every declared name, for duplicate checks
        self.in_use: frozenset[str] = frozenset()  # names written in the statement being read
        self.no_records: dict[str, NoRecords] = {}  # tables estimated from records, by name: conditions without any
        self.reads_no_records: set[str] = set()  # of those, the ones the constraint being read uses
        self.registry = Registry()  # the decision columns: the design's cells

    # ------------------------------------------------------------------ entry point
    def build(self) -> Problem:
        st = self.spec.statements
        titles = [s for s in st if isinstance(s, ast.SpecTitle)]
        if len(titles) > 1:
            raise SpecError("a spec has at most one title", titles[1].span, "keep one 'spec \"...\"' line")
        # a condition with a value is read only in an obfuscation's constraints: refused in a
        # known table or a design before they are read
        refuse_family_syntax([s for s in st if not isinstance(s, ast.ConstraintDecl | ast.ObjectiveDecl)])
        _expect_columns(self.files, st)
        continuous = [s for s in st if _is_continuous(s)]
        design = next((s for s in st if isinstance(s, ast.DesignDecl)), None)
        if continuous and design is not None:  # a finite design: the continuous part is the stray
            raise UnsupportedError(
                f"{_CONTINUOUS_WHAT[type(continuous[0])]} belongs to noise-placement specs (continuous inputs "
                f"and Gaussian noise), but this spec designs a table (line {design.span.line})",
                continuous[0].span,
                "remove it, or write the noise placement as a spec of its own",
            )
        if continuous:
            from .noise import NoiseBuilder

            return NoiseBuilder(self).build(titles[0].title if titles else None)
        self._variables([s for s in st if isinstance(s, ast.VarDecl)])
        self.read_params([s for s in st if isinstance(s, ast.ParamDecl)])
        self.in_use = frozenset()
        for s in st:
            if isinstance(s, ast.KnownDecl):
                self._known(s)
            elif isinstance(s, ast.ConstDecl):
                self._const(s)
        designs = [s for s in st if isinstance(s, ast.DesignDecl)]
        if not designs:
            raise SpecError("the spec has no design", None, self._design_hint(), file=self.source.name)
        if len(designs) > 1:
            raise UnsupportedError(
                "a spec has one design table",
                designs[1].span,
                "merge the mechanisms into one design, or write two specs",
            )
        self.design = self._design(designs[0])
        objectives = [s for s in st if isinstance(s, ast.ObjectiveDecl)]
        if not objectives:
            raise SpecError("the spec has no objective", None, self._objective_hint(), file=self.source.name)
        if len(objectives) > 1:
            raise second_objective(objectives)
        constraint_decls = [s for s in st if isinstance(s, ast.ConstraintDecl)]
        self._check_objective_class(objectives[0], is_obfuscation(objectives[0], constraint_decls))
        if is_obfuscation(objectives[0], constraint_decls):
            self._check_no_records(None)
            return ObfuscationBuilder(self).build(constraint_decls, objectives[0], titles[0].title if titles else None)
        refuse_family_syntax([*constraint_decls, *objectives])
        if not _is_atr_objective(objectives[0]):
            from .mechanism import MechanismBuilder

            self._check_no_records(None)

            return MechanismBuilder(self).build(constraint_decls, objectives[0], titles[0].title if titles else None)
        constraints = tuple(c for s in constraint_decls for c in self._constraint(s))
        objective = self._objective(objectives[0])
        self._check_no_records(objective)
        return Problem(
            title=titles[0].title if titles else None,
            variables=self.variables,
            params=self.params,
            known=self.known,
            design=self.design,
            constraints=constraints,
            objective=objective,
            kind="atr",
            source_name=self.source.name,
            data_sha256=dict(self.files.digests),
            no_records=tuple(self.no_records.values()),
        )

    def _check_objective_class(self, o: ast.ObjectiveDecl, obfuscation: bool) -> None:
        """The objective decides the problem class, and the design's role decides it too: a
        design of an outcome is a transparency report (max_confidence, min_uncertainty), a design
        of a release is every other class. An objective the language does not know is an unknown
        function with a did-you-mean; one of the other side is where it applies, unless changing
        the design's role is what makes the spec build (then the builder's role hint stands:
        a hint never suggests a change that makes the spec worse)."""
        e = o.expr
        name = e.func.name if isinstance(e, ast.Call) or (isinstance(e, ast.Expect) and e.func.name == "E") else None
        span = e.func.span if name is not None else e.span
        d = self.design
        outcome = [t for t in d.targets if self.variables[t].role is Role.OUTCOME]
        here = functions.REPORT if outcome else functions.OBFUSCATION if obfuscation else functions.MECHANISM
        if name is not None and name not in functions.FUNCTIONS and name not in self.consts:
            raise functions.unknown(name, here, span)
        if outcome and name not in MEASURES:
            if self._builds_with_role(outcome[0], Role.RELEASE):
                return  # the mechanism builder says: declare it with role release
            advice = f"{functions.CLASS_NOUN[here]} {functions.CLASS_OBJECTIVE[here]}; {self._objective_example(here)}"
            if name in functions.FUNCTIONS:
                raise functions.misplaced(name, here, span, advice)
            raise UnsupportedError(
                f"a transparency report's objective is max_confidence(...) or min_uncertainty(...) alone "
                f"(the design {d.name} chooses P({outcome[0]} | ...), an outcome)",
                e.span,
                advice,
            )
        if not outcome and name in MEASURES:
            released = d.targets[0]
            if self._builds_with_role(released, Role.OUTCOME):
                raise SpecError(
                    f"{name} is the objective of a transparency report, whose design chooses an outcome; "
                    f"{d.name} chooses P({released} | ...), and {released} is {self.variables[released].role.value}",
                    d.span,
                    f"declare the decision with role outcome: var {released} : outcome {{...}}",
                )
            raise functions.misplaced(
                name,
                here,
                span,
                f"the design {d.name} chooses P({released} | ...), a {self.variables[released].role.value}: "
                f"{functions.CLASS_NOUN[here]} {functions.CLASS_OBJECTIVE[here]}; {self._objective_example(here)}",
            )

    def _builds_with_role(self, name: str, role: Role) -> bool:
        """Whether this spec builds once ``var NAME`` has ``role``: the test a role hint must
        pass before it is given."""
        return self._builds_with(
            lambda s: (
                dataclasses.replace(s, role=ast.Ident(role.value, s.role.span))
                if isinstance(s, ast.VarDecl) and s.name.name == name
                else s
            )
        )

    def _builds_with(self, change) -> bool:
        """Whether this spec builds with every statement ``s`` replaced by ``change(s)``: the
        test a hint that rewrites the spec must pass before it is given."""
        statements = tuple(change(s) for s in self.spec.statements)
        try:
            Builder(
                dataclasses.replace(self.spec, statements=statements), self.given_params, self.files.allow_paths
            ).build()
        except SpecError:
            return False
        return True

    def _by_role(self, *roles: Role) -> list[str]:
        return [v.name for v in self.variables.values() if v.role in roles]

    def _design_hint(self) -> str:
        """What to add for a missing design, written with the spec's own variables."""
        release, outcome = self._by_role(Role.RELEASE), self._by_role(Role.OUTCOME)
        if release:
            inputs = self._by_role(Role.PRIVATE, Role.DATA) or self._by_role(Role.PUBLIC)
            return f"add a line such as: design M = P({release[0]} | {', '.join(inputs) or '...'})"
        if outcome:
            inputs = self._by_role(Role.PUBLIC, Role.PRIVATE)
            return f"add a line such as: design Dt = P({outcome[0]} | {', '.join(inputs) or '...'})"
        return (
            "declare what the design chooses (var Y : release over X, or var D : outcome {...}), "
            "then add: design M = P(Y | X)"
        )

    def _objective_example(self, here: str) -> str:
        """The objective this spec's design takes, written with its own variables."""
        d = self.design
        if self.variables[d.targets[0]].role is not Role.OUTCOME and len(d.targets) == len(d.given) == 1:
            if functions.applies("krcc", here):
                return f"here: minimize krcc({d.given[0]}, {d.targets[0]})"
        return "here: " + self._objective_hint().removeprefix("add a line such as: ")

    def _objective_hint(self) -> str:
        """What to add for a missing objective, written with the design's own variables."""
        d = self.design
        target = self.variables[d.targets[0]]
        if target.role is Role.OUTCOME:
            public = [a for a in d.given if self.variables[a].role is Role.PUBLIC]
            private = [a for a in d.given if self.variables[a].role is Role.PRIVATE]
            return f"add a line such as: minimize max_confidence({', '.join(public + [target.name])} -> {', '.join(private) or '...'})"
        base = self.variables.get(target.over or "")
        if base is None:
            base = next((self.variables[a] for a in d.given if self.variables[a].labels == target.labels), None)
        if base is not None:
            return f"add a line such as: minimize tv({base.name}, {target.name})"
        x = self.variables[d.given[-1]]
        if x.values is not None and target.values is not None:
            return f"add a line such as: minimize E[|{x.name} - {target.name}|]"
        return f"add a line such as: minimize E[d({x.name}, {target.name})], with const d({x.name}, {target.name}) = {{ ... }}"

    # ------------------------------------------------------------------ declarations
    def declare(self, ident: ast.Ident, what: str) -> None:
        if ident.name in self.names:
            first = self.names[ident.name]
            raise SpecError(
                f"'{ident.name}' is already declared (line {first.line})",
                ident.span,
                f"give this {what} another name",
            )
        self.names[ident.name] = ident.span

    def _variables(self, decls: list[ast.VarDecl]) -> None:
        pending: list[ast.VarDecl] = []
        for d in decls:
            self.declare(d.name, "variable")
            try:
                role = Role(d.role.name)
            except ValueError:
                roles = ", ".join(r.value for r in Role)
                raise SpecError(
                    f"unknown role '{d.role.name}'",
                    d.role.span,
                    suggest(d.role.name, [r.value for r in Role]) or f"roles are: {roles}",
                ) from None
            if isinstance(d.domain, ast.DomainOver):
                pending.append(d)
                continue
            self.variables[d.name.name] = self._domain(d, role)
        for d in pending:
            other = d.domain.other
            if other.name not in self.variables:
                raise SpecError(
                    f"'{other.name}' is not a variable",
                    other.span,
                    suggest(other.name, self.variables) or f"variables: {', '.join(self.variables) or 'none yet'}",
                )
            base = self.variables[other.name]
            self.variables[d.name.name] = Variable(
                d.name.name, Role(d.role.name), base.labels, base.values, d.span, over=other.name
            )

    def _domain(self, d: ast.VarDecl, role: Role) -> Variable:
        dom = d.domain
        if isinstance(dom, ast.DomainSet):
            seen: dict[str, ast.Label] = {}
            for lab in dom.labels:
                if lab.text in seen:
                    raise SpecError(f"label '{lab.text}' appears twice in the domain of {d.name.name}", lab.span)
                seen[lab.text] = lab
            labels = tuple(lab.text for lab in dom.labels)
            values = (
                np.array([lab.value for lab in dom.labels], dtype=float)
                if all(lab.value is not None for lab in dom.labels)
                else None
            )
            if values is not None and len(np.unique(values)) != len(values):
                raise SpecError(f"two labels of {d.name.name} are the same number", dom.span)
        elif isinstance(dom, ast.DomainRange):
            if dom.hi < dom.lo:
                raise SpecError(f"range({dom.lo}, {dom.hi}) is empty", dom.span, "write range(lo, hi) with lo <= hi")
            if dom.hi - dom.lo >= 10_000_000:
                raise SpecError("this range has too many labels", dom.span)
            values = np.arange(dom.lo, dom.hi + 1, dtype=float)
            labels = tuple(str(v) for v in range(dom.lo, dom.hi + 1))
        else:
            assert isinstance(dom, ast.DomainFile)
            column = dom.column.name if dom.column is not None else d.name.name
            labels = distinct_labels(self.files, dom.path, dom.path_span, column)
            # numbers as the spec writes them (not 'nan', '1_0'); labels that are the same number
            # (01 and 1, 1 and 1.0: two labels of the file) are text, not numbers
            numbers = [parse_number(x) for x in labels]
            values = np.array(numbers, dtype=float) if all(x is not None for x in numbers) else None
            if values is not None and np.unique(values).size != values.size:
                values = None
        if not labels:
            raise SpecError(f"{d.name.name} has an empty domain", dom.span)
        return Variable(d.name.name, role, labels, values, d.span)

    def read_params(self, decls: list[ast.ParamDecl]) -> None:
        declared = {d.name.name for d in decls}
        unknown = [k for k in self.overrides if k not in declared]
        if unknown:
            name = unknown[0]
            close = suggest(str(name), declared)
            raise UsageError(
                f"{given_as(self.given_params, name)}: the spec has no param '{name}'"
                + (
                    f"; {close}"
                    if close
                    else f"; its params are: {', '.join(sorted(declared))}"
                    if declared
                    else "; it declares no params"
                )
            )
        for d in decls:
            self.declare(d.name, "param")
            self.param_decls[d.name.name] = d
            if d.name.name in self.overrides:
                value = parse_param(d.name.name, self.overrides[d.name.name], self.given_params)
            else:
                self.in_use = frozenset(ast.names_in(d.expr))
                value = self.scalar(d.expr)
            self.params[d.name.name] = value

    def scalar(self, e: ast.Expr) -> float:
        """Evaluate a numeric expression of numbers and params (used by params and built-ins)
        with the one evaluator (``ParamContext``). Every step is checked to stay a finite real
        number (``exp(1000)``, ``(-1)^0.5`` and ``1e308 * 10`` are located errors); flat sums and
        products are folded, not recursed."""
        return float(Evaluator(ParamContext(self)).value(e).b[0])

    # ------------------------------------------------------------------ known tables
    def vars_of(self, idents) -> list[Variable]:
        out = []
        for ident in idents:
            if ident.name not in self.variables:
                raise SpecError(f"unknown variable '{ident.name}'", ident.span, suggest(ident.name, self.variables))
            out.append(self.variables[ident.name])
        names = [v.name for v in out]
        for ident in idents:
            if names.count(ident.name) > 1:
                raise SpecError(f"'{ident.name}' appears twice in P(...)", ident.span)
        return out

    def _known(self, k: ast.KnownDecl) -> None:
        prob = k.prob
        target_vars = self.vars_of([t.var for t in prob.targets])
        given_vars = self.vars_of(prob.given)
        overlap = {v.name for v in target_vars} & {v.name for v in given_vars}
        if overlap:
            raise SpecError(f"'{overlap.pop()}' is both a target and a condition", prob.span)
        fixed: dict[str, int] = {}
        for t, v in zip(prob.targets, target_vars):
            if t.label is not None:
                idx = v.index_of(t.label.text, t.label.value)
                if idx is None:
                    raise SpecError(
                        f"label '{t.label.text}' is not in the domain of {v.name}",
                        t.label.span,
                        suggest(t.label.text, v.labels) or f"{v.name} takes {{{', '.join(v.labels)}}}",
                    )
                if v.size != 2:
                    raise SpecError(
                        f"the shorthand P({v.name} = {t.label.text} | ...) needs a two-valued variable; {v.name} has {v.size} values",
                        t.var.span.to(t.label.span),
                        f"give the whole table: P({v.name} | ...)",
                    )
                fixed[v.name] = idx
        free = [v for v in target_vars if v.name not in fixed]
        if free:
            col = free[-1]
            row_vars = given_vars + free[:-1]
        else:
            if not given_vars:
                raise SpecError("P(...) needs at least one variable without a fixed label", prob.span)
            col = given_vars[-1]
            row_vars = given_vars[:-1]

        if k.name is not None:
            self.declare(k.name, "table")
            name = k.name.name
        else:
            name = _prob_text(prob)
            if name in self.known:
                raise SpecError(f"{name} is already known", prob.span, "give it once")
        src = k.source
        if isinstance(src, ast.FileTable) and src.column is None:
            self._records(k, name, target_vars, given_vars, [v for v in target_vars if v.name in fixed])
            return
        layout_vars = row_vars + [col]
        counts = getattr(src, "counts", False)
        if isinstance(src, ast.InlineTable):
            raw = read_inline(self.source, src.body, src.body_span, row_vars, col)
            data, cell_spans = raw.data, raw.cell_spans
            where = src.body_span
        elif isinstance(src, ast.FileTable):
            data = read_long_table(
                self.files, src.path, src.path_span, layout_vars, src.column.name, 0.0 if counts else None
            )
            cell_spans, where = {}, src.path_span
        else:
            data = self._builtin(src, layout_vars, given_vars, free, fixed)
            cell_spans, where = {}, src.span
        # data axes: layout order -> canonical order given + free targets
        layout_names = [v.name for v in layout_vars]
        canon = [v.name for v in given_vars] + [v.name for v in free]
        data = np.transpose(data, [layout_names.index(a) for a in canon])
        spans = {tuple(idx[layout_names.index(a)] for a in canon): s for idx, s in cell_spans.items()}
        data = self._validate_table(data, canon, len(given_vars), counts, bool(fixed), spans, where, name)
        # complete the binary shorthand: add the fixed variable's axis with the complement
        for v in target_vars:
            if v.name in fixed:
                i = fixed[v.name]
                full = np.empty(data.shape + (2,))
                full[..., i] = data
                full[..., 1 - i] = 1.0 - data
                data = full
                canon.append(v.name)
        self.known[name] = Table(
            name=name,
            targets=tuple(v.name for v in target_vars),
            given=tuple(v.name for v in given_vars),
            axes=tuple(canon),
            data=data,
            span=k.span,
        )

    def _records(self, k: ast.KnownDecl, name: str, target_vars, given_vars, fixed_vars) -> None:
        """``known P(T... | C...) [= counts] from FILE`` without ``column``: FILE holds one row
        per record, and the table is the records' empirical distribution,

            P(t | c) = n(c, t) / n(c),   n(c, t) = #{records with labels (c, t)},  n(c) = sum_t n(c, t)

        (a joint: n(t) / N). ``P(risk = good | sex, ...)`` is the share of the combination's
        records labelled ``good`` in the outcome column. A condition ``c`` without any record
        (n(c) = 0) has no rate, and is listed in ``no_records`` (results say which cells and
        how): a constraint reading the table does not hold at its cells (``_cell``: they are
        free), and the table there holds the rate over all N records, ``n(t) / N``, only as the
        reference the released value is kept near. In a transparency report such a combination
        carries no population (checked against the prior in ``_check_no_records``), so neither
        changes any confidence nor the optimum (Chen et al. eq. 16: every term of a group's
        confidence is weighted by P(x))."""
        src = k.source
        free = [v for v in target_vars if v not in fixed_vars]
        axes = list(given_vars) + free + list(fixed_vars)  # the binary shorthand's variable last, as _known does
        n = count_records(self.files, src.path, src.path_span, axes)
        g = len(given_vars)
        per = n.sum(axis=tuple(range(g, n.ndim)), keepdims=True)  # n(c)
        total = float(n.sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            data = n / per
        empty = (per == 0).reshape(per.shape[:g])
        if g and empty.any():
            pooled = n.sum(axis=tuple(range(g))) / total  # n(t) / N
            data = np.where(per == 0, pooled, data)
            self.no_records[name] = NoRecords(
                table=name,
                path=src.path,
                given=tuple(v.name for v in given_vars),
                labels=tuple(v.labels for v in given_vars),
                index=np.argwhere(empty),
                records=int(total),
                span=src.path_span,
                text=_prob_text(k.prob),
                fill={
                    ", ".join(v.labels[i] for v, i in zip(axes[g:], idx)): float(pooled[idx])
                    for idx in np.ndindex(pooled.shape)
                },
            )
        self.known[name] = Table(
            name=name,
            targets=tuple(v.name for v in target_vars),
            given=tuple(v.name for v in given_vars),
            axes=tuple(v.name for v in axes),
            data=data,
            span=k.span,
        )

    def _check_no_records(self, objective: Objective | None) -> None:
        """A combination without records may go without a rate only where it carries no
        population: in a transparency report whose prior gives it probability 0. Elsewhere (a
        mechanism, or a prior with mass there) its rate would change the answer: an error at
        the table naming the combination."""
        for nr in self.no_records.values():
            prior = self.known.get(objective.measure.prior) if objective is not None else None
            where = f"{nr.text} has no record for ({nr.cell_text(0)}) in '{nr.path}'" + (
                f" ({nr.count} combinations have none)" if nr.count > 1 else ""
            )
            if prior is not None and prior.name == nr.table:  # a conditional prior: its rows must be distributions
                joint = ", ".join(prior.given + prior.targets)
                raise SpecError(
                    where + "; a conditional prior needs records in every condition",
                    nr.span,
                    f'read the joint prior from the records instead: known P({joint}) = counts from "{nr.path}" '
                    "(a combination without records then has no population)",
                )
            if prior is None or not set(nr.given) <= set(prior.axes):
                raise SpecError(
                    where + ", so its rate there is undefined",
                    nr.span,
                    "give the rates in a value column (from FILE column C), or use the table in a transparency report, where a combination without population needs none",
                )
            arr = prior.aligned(nr.given + tuple(a for a in prior.axes if a not in nr.given))
            mass = arr.reshape(arr.shape[: len(nr.given)] + (-1,)).sum(axis=-1)[tuple(nr.index.T)]
            with_mass = np.flatnonzero(mass > 0)
            if with_mass.size:  # the first combination with population
                j = int(with_mass[0])
                raise SpecError(
                    f"{nr.text} has no record for ({nr.cell_text(j)}) in '{nr.path}', but the prior {prior.name} "
                    f"gives it probability {mass[j]:.6g}, so its rate would change the answer",
                    nr.span,
                    "read the prior from the same records, or give the rates in a value column (from FILE column C)",
                )

    def _const(self, k: ast.ConstDecl) -> None:
        """``const d(X, Y) = { ... }``: a table of finite numbers; the last variable is the column."""
        self.declare(k.name, "table")
        axes = self.vars_of(k.axes)
        src = k.source
        if getattr(src, "counts", False):
            raise SpecError("'counts' normalizes a distribution; a const table is taken as written", src.span)
        if isinstance(src, ast.InlineTable):
            data = read_inline(self.source, src.body, src.body_span, axes[:-1], axes[-1]).data
        elif isinstance(src, ast.FileTable):
            if src.column is None:
                raise SpecError(
                    "a const table takes its numbers from a value column; counting records makes a distribution",
                    src.path_span,
                    f'write: const {k.name.name}(...) from "{src.path}" column C',
                )
            data = read_long_table(self.files, src.path, src.path_span, axes, src.column.name, None)
        else:
            raise SpecError("a const table is written inline or read from a file", src.span)
        if not np.all(np.isfinite(data)):
            raise SpecError(f"{k.name.name} has a cell that is not a finite number", src.span)
        names = tuple(v.name for v in axes)
        self.consts[k.name.name] = Table(k.name.name, names, (), names, data, k.span)

    def _builtin(self, src: ast.BuiltinTable, layout_vars, given_vars, free, fixed) -> np.ndarray:
        fname = src.func.name
        shape = tuple(v.size for v in layout_vars)
        if fname == "uniform":
            if src.args:
                raise SpecError("uniform takes no arguments", src.span)
            if fixed:
                raise SpecError("uniform cannot fill a shorthand P(x = v | ...)", src.span)
            free_sizes = int(np.prod([v.size for v in free]))
            return np.full(shape, 1.0 / free_sizes)
        if fname == "bsc":
            if len(src.args) != 1:
                raise SpecError("bsc takes one argument, the crossover probability: bsc(p)", src.span)
            self.domains.require(
                src.args[0],
                0,
                1,
                "the crossover probability of bsc(p)",
                "bsc(p) flips a bit with probability p",
                src.span,
            )
            p = self.scalar(src.args[0])
            if not 0 <= p <= 1:
                raise SpecError(f"bsc({p}): the crossover probability must lie in [0, 1]", src.span)
            if len(free) != 1 or len(given_vars) != 1 or free[0].size != 2 or given_vars[0].size != 2 or fixed:
                raise SpecError("bsc(p) is a channel P(Y | X) between two binary variables", src.span)
            return np.array([[1 - p, p], [p, 1 - p]])
        raise SpecError(
            f"unknown table '{fname}'",
            src.func.span,
            suggest(fname, ["uniform", "bsc"]) or "built-in tables are: uniform, bsc(p)",
        )

    def _validate_table(self, data, axes, n_given, counts, shorthand, spans, where, name) -> np.ndarray:
        def at(idx) -> Span:
            return spans.get(tuple(int(i) for i in idx), where)

        def labels(idx) -> str:
            return ", ".join(f"{a}={self.variables[a].labels[i]}" for a, i in zip(axes, idx))

        if counts:
            neg = np.argwhere(data < 0)
            if neg.size:
                raise SpecError(
                    f"negative count {data[tuple(neg[0])]:g} ({labels(neg[0])})", at(neg[0]), "counts are >= 0"
                )
            dist = normalize_counts(data, n_given)
            empty = np.isnan(dist.reshape(dist.shape[:n_given] + (-1,))[..., 0])  # a block of zeros
            if n_given == 0 and empty:  # (argwhere of a 0-d array is empty: test the scalar itself)
                raise SpecError(f"the counts of {name} are all zero", where, "give at least one positive count")
            zero = np.argwhere(empty) if n_given else np.empty((0, 0))
            if zero.size:
                cond = ", ".join(f"{a}={self.variables[a].labels[i]}" for a, i in zip(axes[:n_given], zero[0]))
                raise SpecError(f"the counts for ({cond}) are all zero, so P(... | {cond}) is undefined", where)
            return dist
        bad = np.argwhere((data < 0) | (data > 1))
        if bad.size:
            v = data[tuple(bad[0])]
            raise SpecError(
                f"probability {v:g} is outside [0, 1] ({labels(bad[0])})",
                at(bad[0]),
                "write 'counts' before the table to give counts",
            )
        if shorthand:
            return data
        if n_given == 0:
            total = float(data.sum())
            if abs(total - 1.0) > PROB_TOL:
                raise SpecError(
                    f"the probabilities of {name} sum to {total:.12g}, not 1",
                    where,
                    "fix the values, or write 'counts' to have them normalized",
                )
            return data
        sums = data.sum(axis=tuple(range(n_given, data.ndim)))
        off = np.argwhere(np.abs(sums - 1.0) > PROB_TOL)
        if off.size:
            cond = ", ".join(f"{a}={self.variables[a].labels[i]}" for a, i in zip(axes[:n_given], off[0]))
            s = sums[tuple(off[0])]
            row_span = where
            cells = [sp for idx, sp in spans.items() if tuple(idx[:n_given]) == tuple(off[0])]
            if cells:
                row_span = min(cells, key=lambda sp: sp.start).to(max(cells, key=lambda sp: sp.end))
            raise SpecError(
                f"the row for ({cond}) sums to {s:.12g}, not 1", row_span, "each conditional row is a distribution"
            )
        return data

    # ------------------------------------------------------------------ design
    def _design(self, d: ast.DesignDecl) -> Design:
        self.declare(d.name, "design")
        for t in d.prob.targets:
            if t.label is not None:
                raise SpecError("a design is a whole table; drop the '= label'", t.label.span)
        targets = self.vars_of([t.var for t in d.prob.targets])
        given = self.vars_of(d.prob.given)
        if not given:
            raise UnsupportedError("the design needs conditioning variables: P(outcome | inputs)", d.prob.span)
        overlap = {v.name for v in targets} & {v.name for v in given}
        if overlap:
            raise SpecError(f"'{overlap.pop()}' is both a target and a condition", d.prob.span)
        design = Design(d.name.name, tuple(v.name for v in targets), tuple(v.name for v in given), d.span)
        self.registry.add(design.name, "table", tuple(self.variables[a].size for a in design.axes), design.axes)
        return design

    # ------------------------------------------------------------------ constraints
    def _constraint(self, c: ast.ConstraintDecl) -> list[CellConstraint]:
        """Elementwise constraints on the design: every value is a ``LinTable`` over (a subset
        of) the design's axes whose decision vector is the design itself, so cell ``c`` depends
        on ``X[c]`` alone (``coef * X + const``)."""
        self.domains.constraint(c, self.is_probability)
        self.in_use = frozenset(ast.names_in(c.exprs))
        self.reads_no_records: set[str] = set()  # tables with combinations without records this constraint reads
        vals = [self.value(e) for e in c.exprs]
        out = []
        for lv, rv, op in zip(vals, vals[1:], c.ops):
            if op == ">=":
                lv, rv, op = rv, lv, "<="
            if isinstance(rv, AbsOf) or (op == "==" and isinstance(lv, AbsOf)):
                a = rv if isinstance(rv, AbsOf) else lv
                raise UnsupportedError(
                    "|...| may only stand on the smaller side of a bound (|e| <= c)",
                    a.span,
                    "a lower bound on |e| makes the feasible set nonconvex",
                )
            if isinstance(lv, AbsOf):
                inner = lv.inner
                out.append(self._cell(inner - rv, "<=", c))
                out.append(self._cell(-inner - rv, "<=", c))
            else:
                out.append(self._cell(lv - rv, op, c))
        return out

    def is_probability(self, e: ast.Expr) -> bool:
        """Whether ``e`` denotes a table of probabilities: the design, a known table, ``P(...)``."""
        if isinstance(e, ast.Prob):
            return True
        design = getattr(self, "design", None)
        return isinstance(e, ast.Name) and (e.name in self.known or (design is not None and e.name == design.name))

    def _cell(self, diff: LinTable, sense, c: ast.ConstraintDecl) -> CellConstraint:
        """``diff (<= | ==) 0`` cell by cell: its coefficients (the diagonal) and constants
        broadcast over the design's axes."""
        diff = diff.align(self.design.axes, self._design_shape())
        coef, const = diff.diagonal(), diff.array().copy()
        if self.reads_no_records:  # no rate there, so nothing to hold: the cell is free (0 <= 0)
            free = self._no_record_cells(self.reads_no_records)
            coef, const = np.where(free, 0.0, coef), np.where(free, 0.0, const)
        return CellConstraint(
            coef,
            const,
            sense,
            c.span,
            c.exprs[0].span.to(c.exprs[-1].span).text(),
        )

    def _no_record_cells(self, tables: set[str]) -> np.ndarray:
        """The design's cells whose conditioning labels are a combination without records in
        one of ``tables`` (boolean, over the design's axes)."""
        axes, shape = self.design.axes, self._design_shape()
        mask = np.zeros(shape, dtype=bool)
        for name in tables:
            nr = self.no_records[name]
            sub = np.zeros(tuple(self.variables[a].size for a in nr.given), dtype=bool)
            sub[tuple(nr.index.T)] = True
            present = [a for a in axes if a in nr.given]
            sub = np.transpose(sub, [nr.given.index(a) for a in present])
            mask |= sub.reshape([self.variables[a].size if a in nr.given else 1 for a in axes])
        return mask

    def _design_shape(self) -> tuple[int, ...]:
        return tuple(self.variables[a].size for a in self.design.axes)

    def lift(self, table: Table, span: Span) -> LinTable:
        """A known table as a constant ``LinTable`` over its axes, which must be the design's."""
        axes = self.design.axes
        extra = [a for a in table.axes if a not in axes]
        if extra:
            d = self.design
            missing = tuple(a for a in extra if a in self.variables and a not in d.targets)
            hint = f"tables in a constraint must be indexed by {d.name}'s variables ({', '.join(axes)})"
            if missing and self._builds_with(
                lambda s: (
                    dataclasses.replace(
                        s,
                        prob=dataclasses.replace(
                            s.prob, given=s.prob.given + tuple(ast.Ident(a, s.prob.span) for a in missing)
                        ),
                    )
                    if isinstance(s, ast.DesignDecl)
                    else s
                )
            ):
                hint = (
                    f"tables in a constraint are indexed by {d.name}'s variables ({', '.join(axes)}); condition "
                    f"the design on {', '.join(missing)}: design {d.name} = P({', '.join(d.targets)} | "
                    f"{', '.join(d.given + missing)})"
                )
            raise UnsupportedError(
                f"{table.name} has axis '{extra[0]}', which the design {d.name} does not have", span, hint
            )
        present = tuple(a for a in axes if a in table.axes)
        arr = table.aligned(present)
        if table.name in self.no_records:
            self.reads_no_records.add(table.name)
        return LinTable.const(present, arr.shape, arr, self.registry.n)

    def value(self, e: ast.Expr):
        """``e`` as a table over (a subset of) the design's axes (``ReportContext``)."""
        return Evaluator(ReportContext(self)).value(e)

    def known_table(self, targets: tuple[str, ...], given) -> Table | None:
        """The known table P(targets | given) (the condition in any order), or None."""
        for t in self.known.values():
            if t.targets == tuple(targets) and frozenset(t.given) == frozenset(given):
                return t
        return None

    def find_known(self, p: ast.Prob) -> Table:
        t = self.known_table(tuple(t.var.name for t in p.targets), [g.name for g in p.given])
        if t is not None:
            return t
        raise UnsupportedError(
            f"{_prob_text(p)} is not a known table",
            p.span,
            "declare it with 'known' (distributions induced by a design are not supported yet)",
        )

    # ------------------------------------------------------------------ objective
    def _objective(self, o: ast.ObjectiveDecl) -> Objective:
        e = o.expr
        if not (isinstance(e, ast.Call) and e.func.name in MEASURES):
            if isinstance(e, ast.Call):
                raise SpecError(
                    f"unknown measure '{e.func.name}'",
                    e.func.span,
                    suggest(e.func.name, MEASURES) or f"measures: {', '.join(MEASURES)}",
                )
            raise UnsupportedError(
                "this objective is not supported yet",
                e.span,
                "use minimize max_confidence(PUBLIC..., OUTCOME -> PRIVATE) or maximize min_uncertainty(...)",
            )
        kind = e.func.name
        wanted = "minimize" if kind == "max_confidence" else "maximize"
        if o.sense != wanted:
            raise UnsupportedError(
                f"{o.sense} {kind}(...) asks for the least privacy",
                o.span,
                f"privacy is {wanted} {kind}(...)",
            )
        return Objective(o.sense, kind, self._max_confidence(e), o.span)

    def _measure_var(self, arg: ast.Expr) -> tuple[Variable, Span]:
        if not isinstance(arg, ast.Name):
            raise SpecError("expected a variable name", arg.span)
        if arg.name not in self.variables:
            raise SpecError(f"unknown variable '{arg.name}'", arg.span, suggest(arg.name, self.variables))
        return self.variables[arg.name], arg.span

    def _measure_usage(self, e: ast.Call) -> str:
        """How to write this measure call: with its own variables sorted by role when they all
        are variables (``max_confidence(income -> gender, decision)`` -> ``write
        max_confidence(gender, decision -> income)``), else the general form."""
        d = self.design
        roles = {a: self.variables[a].role for a in (*d.targets, *d.given)}
        outcome = [t for t in d.targets if roles[t] is Role.OUTCOME]
        if len(d.targets) == len(outcome) == 1 and all(roles[a] in (Role.PUBLIC, Role.PRIVATE) for a in d.given):
            # the call this design takes, so a call missing its outcome is not echoed back
            public = [a for a in d.given if roles[a] is Role.PUBLIC]
            private = [a for a in d.given if roles[a] is Role.PRIVATE]
            if private:
                return f"write {e.func.name}({', '.join(public + outcome)} -> {', '.join(private)})"
        names = [a.name for a in (*e.args, *(e.arrow_args or ())) if isinstance(a, ast.Name)]
        vs = [self.variables[n] for n in names if n in self.variables]
        before = [v.name for v in vs if v.role is Role.PUBLIC] + [v.name for v in vs if v.role is Role.OUTCOME]
        after = [v.name for v in vs if v.role is Role.PRIVATE]
        if len(vs) == len(names) == len(e.args) + len(e.arrow_args or ()) and before and after:
            return f"write {e.func.name}({', '.join(before)} -> {', '.join(after)})"
        return f"write {e.func.name}(PUBLIC..., OUTCOME -> PRIVATE...)"

    def _max_confidence(self, e: ast.Call) -> MaxConfidence:
        fname = e.func.name
        usage = self._measure_usage(e)
        if e.arrow_args is None:
            raise SpecError(f"{fname} needs '->' before the private attribute(s)", e.span, usage)
        public, outcomes = [], []
        for arg in e.args:
            v, span = self._measure_var(arg)
            if v.role is Role.PUBLIC:
                public.append(v.name)
            elif v.role is Role.OUTCOME:
                outcomes.append((v.name, span))
            else:
                raise SpecError(
                    f"'{v.name}' is {v.role.value}; before '->' list public attributes and the outcome", span, usage
                )
        if len(outcomes) != 1:
            span = outcomes[1][1] if len(outcomes) > 1 else e.span
            raise SpecError(f"{fname} needs exactly one outcome variable before '->'", span, usage)
        private = []
        for arg in e.arrow_args:
            v, span = self._measure_var(arg)
            if v.role is not Role.PRIVATE:
                raise SpecError(f"'{v.name}' is {v.role.value}; after '->' list private attributes", span, usage)
            private.append(v.name)
        outcome = outcomes[0][0]
        d = self.design
        inputs = set(public) | set(private)
        if len(set(private)) != len(private) or len(set(public)) != len(public):
            raise SpecError(f"a variable appears twice in {fname}(...)", e.span)
        if d.targets != (outcome,) or set(d.given) != inputs:
            raise UnsupportedError(
                f"{fname}({', '.join(public + [outcome])} -> {', '.join(private)}) needs the design "
                f"P({outcome} | {', '.join(public + private)}); {d.name} is P({', '.join(d.targets)} | {', '.join(d.given)})",
                e.span,
                "list exactly the design's inputs as the public and private attributes",
            )
        priors = [t for t in self.known.values() if t.variables == inputs and set(private) <= set(t.targets)]
        if len(priors) > 1:
            raise SpecError(
                f"{fname} could take the adversary's prior from {priors[0].name} or {priors[1].name}",
                priors[1].span,
                "keep one table over the public and private attributes",
            )
        prior = priors[0].name if priors else None
        if prior is None:
            need = ", ".join(public + private)
            raise SpecError(
                f"{fname} needs the adversary's prior P({need})",
                e.span,
                f"add: known P({need}) = counts {{ ... }}  (or P({', '.join(private)} | {', '.join(public)}))",
            )
        refs = [t.name for t in self.known.values() if t.targets == (outcome,) and set(t.given) == set(d.given)]
        return MaxConfidence(tuple(public), outcome, tuple(private), prior, refs[0] if refs else None, e.span)


class ParamContext(Context):
    """Params and the arguments of built-in tables: numbers, params, + - * / ^ and the
    elementwise functions, nothing else (every other node is "expected a number")."""

    atoms = frozenset({"abs", "exp", "log", "sqrt"})

    def __init__(self, b: Builder):
        self.b = b

    def name(self, e: ast.Name) -> LinTable:
        b = self.b
        if e.name in b.params:
            return LinTable.scalar(b.params[e.name], 0)
        if e.name in b.names:
            raise SpecError(f"'{e.name}' is not a number here", e.span, "only params and numbers may appear in a param")
        hint = suggest(e.name, b.params, b.in_use) or "declare it first: param NAME = VALUE"
        raise SpecError(f"'{e.name}' is not defined", e.span, hint)

    def refuse(self, name: str, node):
        what = f"{name}(...)" if name.isidentifier() else f"'{name}'"
        raise SpecError(f"expected a number: {what} is not read in a param", node.span, PARAM_HINT)

    def unknown(self, e: ast.Call):
        name = e.func.name
        close = "did you mean 'log'? (log is the natural logarithm); " if name in ("ln", "log10", "log2") else ""
        raise SpecError(f"expected a number: '{name}' is not a function of a param", e.func.span, close + PARAM_HINT)

    def unexpected(self, e: ast.Expr):
        raise SpecError("expected a number", e.span, PARAM_HINT)


PARAM_HINT = "a param is a number: numbers, earlier params, + - * / ^, exp, log, sqrt and abs (or |e|)"


class ReportContext(Context):
    """Transparency reports (Chen et al.): the registry holds the design's cells ``Dt`` as one
    table block, and every value is a table over (a subset of) the design's axes whose cell
    ``c`` depends on ``Dt[c]`` alone; ``P(...)`` is a known table."""

    here = functions.REPORT
    atoms = frozenset({"P", "abs", "exp", "log", "sqrt"})

    def __init__(self, b: Builder):
        self.b = b

    @property
    def n(self) -> int:
        return self.b.registry.n

    def name(self, e: ast.Name) -> LinTable:
        b = self.b
        if e.name in b.params:
            return LinTable.scalar(b.params[e.name], self.n)
        if e.name == b.design.name:
            return b.registry.variable(b.design.name)
        if e.name in b.known:
            return b.lift(b.known[e.name], e.span)
        if e.name in b.variables:
            raise UnsupportedError(
                f"the variable '{e.name}' cannot stand alone in a constraint",
                e.span,
                "use a table, a param or a number",
            )
        options = list(b.params) + list(b.known) + [b.design.name]
        raise SpecError(f"'{e.name}' is not defined", e.span, undefined_hint(e.name, options, b.in_use))

    def prob(self, p: ast.Prob) -> LinTable:
        return self.b.lift(self.b.find_known(p), p.span)

    def refuse(self, name: str, node):
        if name in MEASURES and isinstance(node, ast.Call):
            raise UnsupportedError(
                f"{name}(...) as a constraint is not supported yet",
                node.span,
                f"make it the objective: minimize {name}(...)",
            )
        return super().refuse(name, node)


def normalize_counts(data: np.ndarray, n_given: int) -> np.ndarray:
    """Counts -> distributions over the last ``data.ndim - n_given`` axes, one per combination
    of the first ``n_given`` (the condition). Each block is divided by its largest entry before
    it is summed, so counts near 1.8e308 do not overflow the sum (Chen et al.'s Table 4 scaled
    by 1e307 still gives P(X) of Table 4). A block of zeros becomes NaN (the caller names it)."""
    axes = tuple(range(n_given, data.ndim))
    top = data.max(axis=axes, keepdims=True) if data.size else np.ones((1,) * data.ndim)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = data / np.where(top > 0, top, np.nan)
        return scaled / scaled.sum(axis=axes, keepdims=True)


_CONTINUOUS_WHAT = {
    ast.VarDecl: "a continuous variable (real[n] in [lo, hi])",
    ast.NoiseDecl: "'noise'",
    ast.LetDecl: "'let'",
    ast.MatrixDecl: "'const NAME = matrix'",
}


def _is_continuous(s: ast.Statement) -> bool:
    """Statements of a program over continuous variables and noise (builder/noise.py)."""
    if isinstance(s, ast.VarDecl):
        return isinstance(s.domain, ast.DomainReal)
    return isinstance(s, (ast.NoiseDecl, ast.LetDecl, ast.MatrixDecl))


def _is_atr_objective(o: ast.ObjectiveDecl) -> bool:
    """max_confidence / min_uncertainty objectives are Chen et al.'s problem; the rest are
    linear programs over the design (spec/mechanism.py)."""
    return isinstance(o.expr, ast.Call) and o.expr.func.name in MEASURES


def _prob_text(p: ast.Prob) -> str:
    targets = ", ".join(t.var.name + (f" = {t.label.text}" if t.label else "") for t in p.targets)
    given = ", ".join(g.name for g in p.given)
    return f"P({targets} | {given})" if given else f"P({targets})"


def build(spec: ast.SpecFile, params: dict[str, str | float] | None = None, allow_paths: bool = False) -> Problem:
    """Check a parsed spec and return its ``Problem``. Raises ``SpecError`` on any mistake."""
    return Builder(spec, params, allow_paths).build()
